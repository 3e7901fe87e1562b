"""Protocol replay (issue 22): the same POPE answers scored as each harness scores them. Expected values were computed
by RUNNING each harness's own code at the commit named in `protocols.POPE_PROTOCOLS` (VLMEvalKit's YOrN_Extraction and
POPE_rating with exact matching; lmms-eval's pope_process_results and aggregation functions; POPE's evaluate.py and
LLaVA's eval_pope.py as written) on the same answers, outside this repository; their code is not copied here."""
import json
import math
from pathlib import Path

import pytest

from mmresearch.pope import score_pope

FIX = Path(__file__).parent/"fixtures"
LLAVA = FIX/"pope_real"/"llava15"
HEAD = FIX/"pope_real"/"coco_pope_adversarial_head.jsonl"
MESSY = ["Yes", "No.", "Yes, there is a snowboard.", "There is no sandwich in the image.", "yes", "I don't think so.",
         "Yes, but it is not clear.", " no ", "Yes - no-brainer.", "No, there is not.", "Hmm.", "YES!"]


def table(result: dict) -> dict:
    return {(r["protocol"], r["category"], r["metric"]): r for r in result["protocols"]}


@pytest.fixture(scope="module")
def llava():
    return table(score_pope(LLAVA/"llava-v1.5-13b.jsonl.gz", questions=LLAVA/"llava_pope_test.jsonl.gz", labels=LLAVA/"coco",
                            protocols=True, n_boot=200))


def test_llava15_each_protocol_equals_its_harness(llava):
    "LLaVA-1.5-13B answers 'Yes'/'No' only, so every harness agrees with POPE's counts; each aggregate is its own."
    # VLMEvalKit POPE_rating 'Overall' (pooled): F1 85.932388, acc 86.969697, precision 94.484412, recall 78.8
    for m, v in {"f1": 85.932388, "accuracy": 86.969697, "precision": 94.484412, "recall": 78.8}.items():
        assert llava["vlmevalkit", "all", m]["value"] == pytest.approx(v, abs=1e-5)
        assert llava["lmms_eval", "all", m]["value"] == pytest.approx(v, abs=1e-5)     # lmms-eval's pope task, all splits
    # LLaVA's eval_pope per split, and the paper's figure: their mean
    f1 = {s: llava["llava_eval_pope", s, "f1"]["value"] for s in ("adversarial", "popular", "random")}
    assert [round(v, 3) for v in f1.values()] == [84.459, 86.246, 87.136]
    assert llava["llava_eval_pope", "all", "f1"]["value"] == pytest.approx(85.946881, abs=1e-5)
    assert llava["pope_official", "all", "f1"]["value"] is None                   # POPE's script reports splits only
    assert llava["pope_official", "random", "accuracy"]["value"] == pytest.approx(88.006873, abs=1e-5)
    assert llava["vlmevalkit", "all", "f1"]["diff"] == pytest.approx(0, abs=1e-9)   # ours (POPE's rule, pooled) = VLMEvalKit here
    assert llava["vlmevalkit", "all", "f1"]["n_clusters"] == 500


def test_messy_answers_separate_the_protocols():
    "Twelve answers in several styles: each harness's figures, as its own code computes them."
    rows = [json.loads(l) for l in HEAD.read_text().splitlines()]
    answers = [{"question_id": r["question_id"], "text": m, "label": r["label"], "image": r["image"], "category": "adversarial"}
               for r, m in zip(rows, MESSY)]
    t = table(score_pope(answers, protocols=True, n_boot=200))
    expected = {   # computed by running each harness's code on these answers
        "pope_official": {"accuracy": 75.0, "precision": 500 / 7, "recall": 500 / 6, "f1": 1000 / 13},  # evaluate.py: TP 5 FP 2 TN 4 FN 1
        "vlmevalkit": {"accuracy": 75.0, "precision": 500 / 6, "recall": 500 / 6, "f1": 500 / 6},       # 2 Unknown: 'no' for F1, wrong for acc
        "lmms_eval": {"accuracy": 25.0, "precision": 100.0, "recall": 100.0, "f1": 100.0},              # only 'yes', ' no ' and 'yes' match
    }
    for proto, figures in expected.items():
        for m, v in figures.items():
            assert t[proto, "adversarial", m]["value"] == pytest.approx(v, abs=1e-6), (proto, m)
    assert t["lmms_eval", "adversarial", "accuracy"]["diff"] == pytest.approx(25.0 - t["ours", "adversarial", "accuracy"]["value"])
    assert t["lmms_eval", "adversarial", "accuracy"]["diff_ci_high"] < 0      # paired interval: clearly below ours


def test_mmbench_llava15_each_protocol_equals_its_harness():
    """LLaVA-1.5-13B's MMBench-dev predictions (1,176 items): VLMEvalKit's eval_circular_group / eval_vanilla with no judge
    model give circular 67.687075 and vanilla 75.425170; lmms-eval's eval_result(eval_method="static") gives 67.687075
    (each run on this file). The letter readers equal those harnesses' can_infer / extract_mcq_answer on all 4,377
    predictions and on 150,000 random strings (checked outside the repository)."""
    from mmresearch.mmbench import score_mmbench
    res = score_mmbench(FIX/"mmbench"/"llava-v1.5-13b_mmbench_dev_20230712.xlsx", protocols=True, n_boot=200)
    t = {(r["protocol"], r["metric"]): r for r in res["protocols"]}
    assert t["vlmevalkit", "circular"]["value"] == pytest.approx(67.687075, abs=1e-5)
    assert t["vlmevalkit", "vanilla"]["value"] == pytest.approx(75.425170, abs=1e-5)
    assert t["lmms_eval", "circular"]["value"] == pytest.approx(67.687075, abs=1e-5)
    assert t["ours", "circular"]["value"] == pytest.approx(67.687075, abs=1e-5) and t["vlmevalkit", "circular"]["n"] == 1176
    assert math.isnan(t["lmms_eval", "vanilla"]["value"])


def five_option_rows() -> list[dict]:
    "Three five-option items with their circular copies (index + k*1,000,000, options rotated left by k): item 1 answers its"
    "letter, item 2 the gold option's text, item 3 'The answer is <gold text>.'"
    items = [(1, ["cat", "dog", "bird", "fish", "horse"], "horse", lambda letter, gold: letter),
             (2, ["cat", "dog", "bird", "fish", "horse"], "horse", lambda letter, gold: gold),
             (3, ["cow", "dog", "bird", "fish", "goat"], "dog", lambda letter, gold: f"The answer is {gold}.")]
    out = []
    for idx, opts, gold, say in items:
        for k in range(5):
            rot = opts[k:] + opts[:k]
            letter = "ABCDE"[rot.index(gold)]
            out.append({"index": idx + k * 1_000_000, "question": "Which animal is shown?", **dict(zip("ABCDE", rot)),
                        "answer": letter, "prediction": say(letter, gold), "category": "demo"})
    return out


def test_mmbench_five_options_scored_as_lmms_eval_scores_them(tmp_path):
    """lmms-eval's MMBench evaluator reads option texts only for A-D (`build_choices`, and the static extractor's
    choices come from it), while a lone letter may be any of A-E (`can_infer_option`). On these three five-option items
    lmms-eval@75571cf's MMBench_Evaluator().eval_result(rows, "static"), run outside this repository on the same rows,
    gives 0.3333: item 1 (letters) is right; items 2 and 3 fail on the pass whose gold text sits at E."""
    import pandas as pd
    from mmresearch.mmbench import score_mmbench
    path = tmp_path/"five.tsv"
    pd.DataFrame(five_option_rows()).to_csv(path, sep="\t", index=False)
    t = {(r["protocol"], r["metric"]): r for r in score_mmbench(path, protocols=True, n_boot=50)["protocols"]}
    assert t["lmms_eval", "circular"]["value"] == pytest.approx(100 / 3) and t["lmms_eval", "circular"]["n"] == 3


def test_zero_over_zero_is_reported_as_each_harness_reports_it():
    """A split where the model never says "yes": precision is 0/0. VLMEvalKit's POPE_rating (cal_f1_score) and lmms-eval's
    pope_aggregate_* report it as 0, and F1 as 0 (run by hand outside this repository on these four answers: lmms-eval
    accuracy 0.5, precision 0, recall 0.0, F1 0; VLMEvalKit F1 0, precision 0, recall 0.0). Our own protocol leaves it
    undefined (null), as POPE's evaluate.py cannot compute it either."""
    answers = [{"question_id": i, "text": "no", "label": label, "image": f"im{i}.jpg", "category": "adversarial"}
               for i, label in enumerate(["yes", "no", "yes", "no"])]
    t = table(score_pope(answers, protocols=True, n_boot=50))
    for proto in ("vlmevalkit", "lmms_eval"):
        for split in ("all", "adversarial"):
            got = {m: t[proto, split, m]["value"] for m in ("accuracy", "precision", "recall", "f1")}
            assert got == {"accuracy": 50.0, "precision": 0.0, "recall": 0.0, "f1": 0.0}, (proto, split, got)
    assert t["ours", "adversarial", "precision"]["value"] is None
