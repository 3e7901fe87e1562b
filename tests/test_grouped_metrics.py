"""One grouped yes/no table (issue 17), checked on real published files: `metrics.metrics_by`'s `unparsed="wrong"` is
the rule that reproduces AMBER's figures on AMBER's own annotations, and `n_clusters` counts the clusters of exactly
the rows in `n` on LLaVA-1.5-13B's POPE answers (fixtures and sources: tests/fixtures/README.md)."""
import gzip
import json
from pathlib import Path

import pytest

from mmresearch.amber import discriminative_metrics, judge_answers, load_amber_annotations, load_amber_responses
from mmresearch.metrics import metrics_by
from mmresearch.pope import SPLITS, score_pope

FIX = Path(__file__).resolve().parent/"fixtures"
LLAVA = FIX/"pope_real"/"llava15"


def _lines(path: Path) -> list[dict]:
    return [json.loads(l) for l in gzip.decompress(path.read_bytes()).decode().splitlines() if l.strip()]


def test_unparsed_wrong_is_amber_rule_on_amber_files():
    "AMBER's hand-checked answers: 2 of 40 are not exactly 'Yes'/'No'. Counted wrong they give AMBER's 57.5 / 57.9."
    rows = judge_answers(load_amber_responses(FIX/"amber"/"disc_responses.json"), load_amber_annotations(FIX/"amber"/"annotations.json"))
    args = dict(positive="no", label="truth", pred="parsed", n_boot=0)
    amber = metrics_by(rows.assign(all="overall"), "all", unparsed="wrong", **args).set_index("metric").value
    assert amber["accuracy"] == pytest.approx(57.5, abs=1e-9) and amber["f1"] == pytest.approx(2200 / 38, abs=1e-9)
    assert amber["precision"] == pytest.approx(1100 / 13, abs=1e-9) and amber["recall"] == pytest.approx(44, abs=1e-9)
    excluded = metrics_by(rows.assign(all="overall"), "all", **args).set_index(["metric"])
    assert excluded.loc["accuracy", "n"] == 38 and excluded.loc["accuracy", "value"] == pytest.approx(2300 / 38, abs=1e-9)
    table = discriminative_metrics(rows, n_boot=0).set_index(["group", "metric"]).value
    assert table["overall"].to_dict() == amber.drop("parse_failure_rate").to_dict()


def test_n_clusters_counts_the_images_of_the_scored_answers():
    "LLaVA-1.5-13B's answers about 6 images made unreadable and excluded: those images leave n and n_clusters alike."
    questions = _lines(LLAVA/"llava_pope_test.jsonl.gz")
    blank = {q["image"] for q in questions[:36]}                      # the first six images of the adversarial split
    image = {q["question_id"]: q["image"] for q in questions}
    answers = [dict(a, text="I cannot tell.") if image[a["question_id"]] in blank else a for a in _lines(LLAVA/"llava-v1.5-13b.jsonl.gz")]
    res = score_pope(answers, questions=LLAVA/"llava_pope_test.jsonl.gz", labels=LLAVA/"coco", parser="final", policy="exclude", n_boot=0)
    assert res["policy"] == "exclude" and len(blank) == 6
    for split in SPLITS:
        g = res["by_category"][split]
        scored = {image[q["question_id"]] for q in questions if q["category"] == split and image[q["question_id"]] not in blank}
        assert (g["cluster"], g["n_clusters"]) == ("image", len(scored))
    adv = res["by_category"]["adversarial"]
    assert (adv["n"], adv["n_scored"], adv["n_clusters"]) == (3000, 2964, 494)
