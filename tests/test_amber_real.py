"""AMBER on its own published files (excerpts in tests/fixtures/amber/, see its README section): the loaders read
them as published, and `mmresearch score amber` gives the hand-checked figures on a response file in AMBER's format —
by default the figures AMBER's own inference.py prints (cover_rule="amber"), with the distinct rule as the option."""
import json
from pathlib import Path

import pytest

from mmresearch.amber import load_amber_annotations, load_amber_queries, load_amber_responses, load_amber_vocab, score_amber
from mmresearch.cli import main
from mmresearch.datasets import DataFormatError

FIX = Path(__file__).resolve().parent/"fixtures"/"amber"


def test_published_files_load_as_they_are():
    ann = load_amber_annotations(FIX/"annotations.json")
    assert (len(ann), ann.stats.skipped) == (42, 0)
    assert ann.kinds().to_dict() == {"existence": 10, "state": 20, "generative": 2, "number": 4, "relation": 4, "action": 2}
    sizes = {p.stem: len(load_amber_queries(p, ann)) for p in sorted((FIX/"query").glob("*.json"))}
    assert sizes == {"query_all": 42, "query_discriminative": 40, "query_discriminative-attribute": 26,
                     "query_discriminative-existence": 10, "query_discriminative-relation": 4, "query_generative": 2}
    vocab = load_amber_vocab(FIX/"relation.json", FIX/"safe_words.txt")
    assert (len(vocab.association), len(vocab.words), len(vocab.safe_words)) == (340, 418, 9)
    assert len(load_amber_responses(FIX/"responses.json")) == 43


def test_bad_response_record_is_named(tmp_path):
    bad = tmp_path/"resp.json"
    bad.write_text(json.dumps([{"id": 1005, "response": "Yes"}, {"id": "1006", "response": "No"}]))
    with pytest.raises(DataFormatError, match=r"resp.json: record 1: 'id' must be a positive integer"):
        load_amber_responses(bad)


def test_cli_scores_a_response_file_with_the_hand_checked_figures(capsys):
    assert main(["score", "amber", "--input", str(FIX/"responses.json"), "--labels", str(FIX), "--seed", "0"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["unknown_ids"]["count"] == 1 and res["unanswered"] == 0
    assert res["as_printed"]["overall"] == {"Accuracy": 57.5, "Precision": 84.6, "Recall": 44.0, "F1": 57.9}
    assert res["as_printed"]["existence"] == {"Accuracy": 70.0, "Precision": 100.0, "Recall": 70.0, "F1": 82.3}
    assert res["as_printed"]["attribute"] == {"Accuracy": 53.8, "Precision": 74.9, "Recall": 23.1, "F1": 35.3}
    assert res["as_printed"]["generative"] == {"CHAIR": 31.2, "Cover": 58.8, "Hal": 100.0, "Cog": 40.0}   # AMBER's inference.py
    assert res["cover_rule"] == "amber" and res["generative"]["cover"] == pytest.approx(1000 / 17, abs=1e-5)
    assert res["discriminative"]["overall"]["f1"] == pytest.approx(2200 / 38, abs=1e-5)
    assert res["amber_score"] == pytest.approx((100 - 31.25 + 2200 / 38) / 2, abs=1e-5)


def test_distinct_cover_rule_is_the_documented_alternative():
    "AMBER_2's truth lists 'ship' twice: AMBER counts it twice in Cover (10/17), the distinct rule once (10/16)."
    res = score_amber(FIX/"responses.json", labels=FIX, n_boot=0, cover_rule="distinct")
    assert res["cover_rule"] == "distinct"
    assert res["as_printed"]["generative"] == {"CHAIR": 31.2, "Cover": 62.5, "Hal": 100.0, "Cog": 40.0}
    assert res["generative"]["cover"] == pytest.approx(62.5, abs=1e-9)
    with pytest.raises(ValueError, match="unknown cover_rule 'AMBER'"):
        score_amber(FIX/"responses.json", labels=FIX, n_boot=0, cover_rule="AMBER")


def test_cli_without_annotations_says_what_to_pass(capsys):
    assert main(["score", "amber", "--input", str(FIX/"responses.json")]) == 2
    assert "pass labels= (--labels)" in capsys.readouterr().err
