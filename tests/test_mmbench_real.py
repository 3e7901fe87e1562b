"""MMBench scoring on real published files (LLaVA-1.5-13B on mmbench_dev_20230712) and the choice rules of issue 13."""
import json
from pathlib import Path

import pandas as pd
import pytest

from mmresearch.cache import CachedModel, ResponseCache
from mmresearch.cli import main, score_parser
from mmresearch.core import Response
from mmresearch.mmbench import (MCItem, MMBenchFormatError, circular_passes, extract_choices, item_results, rule_choice,
                                score_mmbench, score_predictions)
from mmresearch.models import ScriptedModel

FX = Path(__file__).parent/"fixtures"/"mmbench"
XLSX = FX/"llava-v1.5-13b_mmbench_dev_20230712.xlsx"
EXCERPT = FX/"llava-v1.5-13b_mmbench_dev_20230712_excerpt.tsv"
ANSWERS = FX/"llava-v1.5-13b_answers_excerpt.jsonl"
QUESTIONS = FX/"mmbench_dev_20230712_questions_excerpt.tsv"


# --- the official circular rule on the real dev set ---

def test_llava_xlsx_reproduces_published_circular_accuracy():
    m = score_mmbench(XLSX, n_boot=100)
    assert (m["n_items"], m["n_passes"]) == (1176, 4377)
    assert round(m["circular"]["accuracy"], 1) == 67.7          # LLaVA-1.5-13B, MMBench dev, as published
    assert m["circular"]["items_with_missing_passes"] == 53
    assert m["circular"]["unscored"] == 0


def test_cli_scores_the_xlsx(capsys):
    assert main(["score", "mmbench", "--input", str(XLSX), "--seed", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert round(out["circular"]["accuracy"], 1) == 67.7 and out["seed"] == 3


def test_vlmevalkit_layout_tsv_excerpt_per_item():
    _, passes = score_predictions(EXCERPT, n_boot=10)
    items = item_results(passes).set_index("index")
    assert items.circular.astype(bool).to_dict() == {1: True, 7: False, 34: True, 241: True, 244: True, 252: True, 295: False, 1009: False}
    assert items.n_missing[items.n_missing > 0].to_dict() == {34: 1, 1009: 1}     # four options, three passes


def test_llava_answers_joined_to_question_tsv(capsys):
    assert main(["score", "mmbench", "--input", str(ANSWERS), "--questions", str(QUESTIONS)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["n_items"], out["n_passes"], out["circular"]["accuracy"]) == (2, 4, 100.0)
    assert sorted(out["by_category"]) == ["identity_reasoning", "physical_property_reasoning"]
    assert out["questions_without_prediction"]["n"] == 0
    _, joined = score_predictions(ANSWERS, questions=QUESTIONS, n_boot=10)
    _, from_xlsx = score_predictions(EXCERPT, n_boot=10)
    same = from_xlsx.set_index("pass_id").loc[joined.pass_id]
    assert joined.choice.tolist() == same.choice.tolist() and joined.gold.tolist() == same.gold.tolist()


def test_llava_answers_without_questions_name_the_file():
    with pytest.raises(MMBenchFormatError, match=r"answers_excerpt.jsonl: line 1: missing field 'question'.*--questions"):
        score_predictions(ANSWERS)


def test_gold_disagreement_with_question_tsv_names_the_row(tmp_path):
    bad = pd.read_csv(EXCERPT, sep="\t", dtype=str, keep_default_na=False)
    bad = bad[bad["index"].isin(["241", "252", "1000241", "1000252"])].reset_index(drop=True)
    bad.loc[1, "answer"] = "A"
    bad.to_csv(tmp_path/"bad.tsv", sep="\t", index=False)
    with pytest.raises(MMBenchFormatError, match=r"bad.tsv: data row 2: gold answer 'A' differs from 'B'"):
        score_predictions(tmp_path/"bad.tsv", questions=QUESTIONS)


# --- choice rules against the official exact-matching stage ---

OPTS = {"A": "red", "B": "blue", "C": "green", "D": "white"}

@pytest.mark.parametrize("answer, options, want", [
    ("I cannot tell", OPTS, ("Z", "refusal")),
    ("Cannot determine the answer from this image.", OPTS, ("Z", "refusal")),
    ("the answer is b", OPTS, ("B", "answer_is")),
    ("Option A is correct.", OPTS, ("A", "option")),
    ("A or B", OPTS, None),
    ("It's either A or B", OPTS, None),
    ("C and A both seem possible", OPTS, None),
    ("dog", {"A": "hotdog", "B": "dog"}, ("B", "text")),
    ("It is a hotdog", {"A": "hotdog", "B": "dog"}, ("A", "text")),
    # the official can_infer reads C in both of these; the answers mean option A
    ("Vitamin C", {"A": "Vitamin C", "B": "Iron", "C": "Calcium"}, ("A", "text")),
    ("The answer is colleagues.", {"A": "colleagues", "B": "siblings", "C": "friends"}, ("A", "text")),
])
def test_choice_rules(answer, options, want):
    assert rule_choice(answer, options) == want


def _passes(n: int = 1) -> list[MCItem]:
    return [p for i in range(n) for p in circular_passes(MCItem(i + 1, "What colour is it?", OPTS, "A", "colour"))]


@pytest.mark.parametrize("answer", ["I cannot tell", "Cannot determine the answer", "Z", "z."])
def test_refusals_and_bare_none_letter_are_misses_not_random(answer):
    rows = extract_choices(_passes()[:1], [Response(answer)])
    assert rows.choice[0] == "Z" and not rows.correct[0] and rows.step[0] in ("exact", "rule")


def test_hedges_go_to_the_extractor_not_the_first_letter(tmp_path):
    ext = CachedModel(ScriptedModel(lambda r: "Z", name="none-extractor"), ResponseCache(tmp_path/"c.sqlite"))
    rows = extract_choices(_passes()[:1] * 3, [Response(t) for t in ["A or B", "It's either A or B", "C and A both seem possible"]], ext)
    assert rows.step.tolist() == ["llm"] * 3 and rows.choice.tolist() == ["Z"] * 3


def test_null_prediction_with_another_wrong_pass_makes_the_item_wrong():
    passes = _passes(2)     # item 1: a null pass and a wrong pass; item 2: a null pass, the rest right
    golds = [p.answer for p in passes]
    texts = [None, "D" if golds[1] != "D" else "C", golds[2], golds[3], None, golds[5], golds[6], golds[7]]
    resps = [Response.failed("model", "no prediction") if t is None else Response(t) for t in texts]
    items = item_results(extract_choices(passes, resps)).set_index("index")
    assert not pd.isna(items.circular[1]) and not items.circular[1]
    assert pd.isna(items.circular[2])


def test_seed_seeds_the_random_fallback(tmp_path):
    rows = [dict(index=i, question="Which?", A="one", B="two", C="three", D="four", answer="A", category="c",
                 prediction="I like the picture") for i in range(40)]
    path = tmp_path/"p.jsonl"; path.write_text("\n".join(json.dumps(r) for r in rows))
    runs = [score_predictions(path, seed=s, n_boot=10)[1].choice.tolist() for s in (0, 0, 1)]
    assert runs[0] == runs[1] != runs[2]
    score = score_parser("mmbench")
    seed = next(a for a in score._actions if "--seed" in a.option_strings)
    assert "random fallback" in seed.help and "bootstrap" in seed.help


# --- MMBench's two rules for passes without a usable answer (issue 21) ---

def _passes_frame(predictions: dict[int, object]) -> pd.DataFrame:
    "VLMEvalKit-layout rows of one four-option item (gold A at rotation 0) with the given prediction per rotation."
    texts = ["cat", "dog", "cow", "owl"]
    rows = []
    for k, pred in predictions.items():
        opts = {c: texts[(j + k) % 4] for j, c in enumerate("ABCD")}
        rows.append({"index": 7 + k * 1_000_000, "question": "Which animal?", **opts, "answer": "ABCD"[(0 - k) % 4],
                     "prediction": pred, "category": "animals"})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("blank", [None, "", "   "])
def test_an_empty_or_null_prediction_is_a_wrong_pass_and_counted(blank):
    right = {0: "A", 1: "D", 2: "C"}                                   # rotations 0-2 answered correctly
    m, passes = score_predictions(_passes_frame({**right, 3: blank}), n_boot=10)
    assert m["circular"]["accuracy"] == 0.0 and m["circular"]["unscored"] == 0   # was: the item left unscored
    assert m["empty_predictions"] == 1 and m["steps"]["empty"]["n"] == 1
    assert passes.set_index("rotation").correct[3] == False                    # noqa: E712  (pd.NA-aware)


def test_an_empty_prediction_is_never_rescued_by_the_random_fallback():
    # before: "" went through rules -> (no extractor) -> a seeded random letter, right for one seed in four
    hits = [score_predictions(_passes_frame({0: "", 1: "D", 2: "C", 3: "B"}), seed=s, n_boot=10)[0]["circular"]["accuracy"]
            for s in range(12)]
    assert hits == [0.0] * 12


def test_a_wrong_pass_makes_the_item_wrong_even_when_another_pass_is_unreadable():
    df = _passes_frame({0: "A", 1: "B", 2: "C", 3: "B"})               # rotation 1 wrong (gold D)
    df["error"] = [None, None, None, "timeout"]                        # rotation 3: a failed call, as our results files mark it
    m, passes = score_predictions(df, n_boot=10)
    assert m["circular"]["accuracy"] == 0.0 and m["circular"]["unscored"] == 0
    assert passes.set_index("rotation").step[3] == "error"
    only_failed = _passes_frame({0: "A", 1: "D", 2: "C", 3: "B"}).assign(error=[None, None, None, "timeout"])
    m2, _ = score_predictions(only_failed, n_boot=10)
    assert m2["circular"]["unscored"] == 1 and m2["empty_predictions"] == 0   # a failed call alone: counted, not scored
