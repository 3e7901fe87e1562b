"""HallusionBench (tianyi-lab/HallusionBench at 744007c, BSD-3) from its own files: the figures its evaluation.py
computes, reproduced; VLMEvalKit's HallusionBench rules on the repository's published result sample, reproduced; and
the study end to end from HallusionBench's folder layout (with pictures made here) as a sweep through the fake
OpenAI-compatible server and through the embedded tiny model.

How the expected values were obtained (fixtures in tests/fixtures/hallusionbench/, see its README):
- EVALUATION_PY: `tests/fixtures/hallusionbench/judged/` holds 52 answers written by hand for eight whole sets of
  HallusionBench.json and judged by hand as its GPT judge would (`gpt4v_output_gpt_check` "1"/"0"/"2", `same`), saved
  as evaluation.py saves its judged files. HallusionBench's own evaluation.py and utils.py (commit 744007c), unchanged,
  were run on them in a throwaway folder (`python evaluation.py`, with load_json=True so no GPT call is made); the
  values are what it printed (rounded to 4 places by evaluation.py, hence the tolerance), plus its per-category tables
  (tab1, tab2, tab3, which it builds but does not print) and utils.py's functions applied to each subcategory's
  records, as evaluation.py applies them to VD and VS.
- VLMEVALKIT: open-compass/VLMEvalKit at e8e78f0, vlmeval/dataset/utils/yorn.py (YOrN_Extraction, Hallusion_rating,
  and vlmeval/smp/misc.py's process_punctuation, unchanged) run by hand on the 211 records of
  HallusionBench_result_sample.json that have a figure, with gt_answer from HallusionBench.json, scored as
  ImageYORNDataset.evaluate scores (answer == extracted).
"""
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from mmresearch.fakeserver import FakeChatServer, count_images, request_text
from mmresearch.hallusionbench import LEADERBOARD, score_hallusionbench

from test_benchmarks_real import picture, sweep   # one small distinct image per path; a sweep that must finish ok
from test_one_door import audited, check   # kernels that log every file they open; each must be in the run's ledger

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT/"tests"/"fixtures"/"hallusionbench"

EVALUATION_PY = {
    "leaderboard": {"qAcc": 26.3158, "fAcc": 41.1765, "easy_aAcc": 73.6842, "hard_aAcc": 26.6667, "aAcc": 67.3077},
    "questions": {"VD": {"easy": 6, "hard": 8}, "VS": {"easy": 26, "hard": 12}, "total": 52},
    "figures": {"VD": 7, "VS": 10, "total": 17},
    "yes_no_bias": {"pct_diff": 0.21153846153846156, "fp_ratio": 0.8235294117647058},
    "consistency": {"correct": 41.1765, "inconsistent": 41.1765, "wrong": 17.6471},
    "failures": {"LH": 41.1765, "VI": 35.2941, "Mixed": 23.5294},
    # tab1 (per question), tab3 (per question pair: easy, hard, total), tab2 (per figure: correct, score)
    "VD": {"aAcc": 64.2857, "easy_aAcc": 83.3333, "hard_aAcc": 33.3333, "qAcc": 16.6667, "fAcc": 42.8571, "score": 0.619},
    "VS": {"aAcc": 68.4211, "easy_aAcc": 69.2308, "hard_aAcc": 22.2222, "qAcc": 30.7692, "fAcc": 40.0, "score": 0.6333},
    "overall_figure_score": 0.6275,
    "subcategories": {
        "VD_figure": {"aAcc": 66.66666666666667, "qAcc": 0.0, "easy_aAcc": 100.0, "hard_aAcc": 0.0, "fAcc": 33.333333333333336},
        "VD_illusion": {"aAcc": 62.5, "qAcc": 25.0, "easy_aAcc": 75.0, "hard_aAcc": 50.0, "fAcc": 50.0},
        "VS_chart": {"aAcc": 58.8235294117647, "qAcc": 28.571428571428573, "easy_aAcc": 57.142857142857146, "hard_aAcc": 0.0,
                     "fAcc": 33.333333333333336},
        "VS_map": {"aAcc": 66.66666666666667, "qAcc": 50.0, "easy_aAcc": 50.0, "hard_aAcc": 50.0, "fAcc": 50.0},
        "VS_ocr": {"aAcc": 66.66666666666667, "qAcc": 0.0, "easy_aAcc": 100.0, "hard_aAcc": 0.0, "fAcc": 50.0},
        "VS_table": {"aAcc": 83.33333333333333, "qAcc": 33.333333333333336, "easy_aAcc": 100.0, "hard_aAcc": 33.333333333333336,
                     "fAcc": 33.333333333333336}},
}

VLMEVALKIT = {   # split: (aAcc, fAcc, qAcc) as Hallusion_rating printed them
    "Overall": (54.502369668246, 20.289855072464, 35.042735042735), "VD": (49.375, 17.543859649123, 17.567567567568),
    "VD_figure": (50.0, 50.0, 0.0), "VD_illusion": (51.923076923077, 27.272727272727, 23.076923076923),
    "VD_math": (33.333333333333, 0.0, 11.111111111111), "VD_ocr": (50.0, 25.0, 25.0),
    "VD_video": (51.315789473684, 4.761904761905, 15.625), "VS": (70.588235294118, 33.333333333333, 65.116279069767),
    "VS_chart": (75.0, 33.333333333333, 71.428571428571), "VS_map": (57.142857142857, 25.0, 40.0),
    "VS_ocr": (100.0, 100.0, 100.0), "VS_table": (66.666666666667, 0.0, 66.666666666667)}


def judged_records() -> list[dict]:
    return [r for f in ("hallusion_output_vd_model.json", "hallusion_output_vs_model.json") for r in json.loads((FIX/"judged"/f).read_text())]


def check_evaluation_py(res: dict):
    "Every figure evaluation.py computed for the hand-judged file."
    tol = 5e-5   # evaluation.py prints round(x, 4)
    assert res["leaderboard"] == pytest.approx(EVALUATION_PY["leaderboard"], abs=tol)
    for cat in ("VD", "VS"):
        c = res["by_category"][cat]
        exp = EVALUATION_PY[cat]
        assert {m: c[m] for m in LEADERBOARD} == pytest.approx({m: exp[m] for m in LEADERBOARD}, abs=tol)
        assert c["figures"]["score"] == pytest.approx(exp["score"], abs=5e-4)   # printed as round(score, 4) of a 0-1 share
        assert (c["questions"]["easy"], c["questions"]["hard"]) == tuple(EVALUATION_PY["questions"][cat].values())
        assert c["figures"]["total"] == EVALUATION_PY["figures"][cat]
    assert (res["questions"]["total"], res["figures"]["total"]) == (52, 17)
    assert res["yes_no_bias"] == pytest.approx(EVALUATION_PY["yes_no_bias"], abs=1e-12)
    fig = res["figures"]
    shares = {k: 100 * fig[k] / fig["total"] for k in ("correct", "inconsistent", "wrong")}
    assert shares == pytest.approx(EVALUATION_PY["consistency"], abs=tol)
    assert fig["score"] == pytest.approx(EVALUATION_PY["overall_figure_score"], abs=5e-4)
    assert {k: res["failures"][k] for k in ("LH", "VI", "Mixed")} == pytest.approx(EVALUATION_PY["failures"], abs=tol)
    for sub, exp in EVALUATION_PY["subcategories"].items():
        assert {m: res["by_subcategory"][sub][m] for m in exp} == pytest.approx(exp, abs=1e-9), sub


def test_judged_file_gives_evaluation_py_figures():
    check_evaluation_py(score_hallusionbench(judged_records(), correctness="judged", n_boot=100))


def test_reading_the_answers_gives_the_judges_verdicts_and_figures():
    "Every answer in the file is a plain yes, no or 'cannot tell', so our reading gives the hand judge's verdicts."
    res = score_hallusionbench(FIX/"judged"/"HallusionBench_result.json", n_boot=100)
    check_evaluation_py(res)
    assert res["unread"] == 5 and res["missing_predictions"] == 0


def test_vlmevalkit_rules_on_the_published_result_sample():
    res = score_hallusionbench(FIX/"HallusionBench_result_sample.json.gz", questions=FIX/"HallusionBench_sample_questions.json.gz", n_boot=100)
    p = pd.DataFrame(res["protocols"])
    vlm = p[p.protocol == "vlmevalkit"].pivot(index="split", columns="metric", values="value")
    assert set(vlm.index) == set(VLMEVALKIT)
    for split, (a, f, q) in VLMEVALKIT.items():
        assert vlm.loc[split, ["aAcc", "fAcc", "qAcc"]].tolist() == pytest.approx([a, f, q], abs=1e-9), split
    assert p[(p.protocol == "vlmevalkit") & (p.split == "Overall") & (p.metric == "aAcc")].n.iloc[0] == 211
    assert res["n"] == 254 and res["missing_predictions"] == 0


def test_cli_reads_the_result_layout_and_names_a_missing_truth(tmp_path):
    out = subprocess.run([sys.executable, "-m", "mmresearch.cli", "score", "hallusionbench", "--input", str(FIX/"judged"/"HallusionBench_result.json"),
                          "--n-boot", "50"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["leaderboard"]["qAcc"] == pytest.approx(EVALUATION_PY["leaderboard"]["qAcc"], abs=5e-5)
    out = subprocess.run([sys.executable, "-m", "mmresearch.cli", "score", "hallusionbench", "--input", str(FIX/"HallusionBench_result_sample.json.gz")],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2 and "254 questions have no gt_answer (first: VD_illusion_0_0_0" in out.stderr and "give HallusionBench.json" in out.stderr


def hb_folder(root: Path) -> Path:
    "HallusionBench's layout: HallusionBench.json (the excerpt) and the unzipped figures under hallusion_bench/."
    root.mkdir(parents=True)
    (root/"HallusionBench.json").write_bytes((FIX/"HallusionBench_excerpt.json").read_bytes())
    for r in json.loads((FIX/"HallusionBench_excerpt.json").read_text()):
        if r["filename"] and not (path := root/"hallusion_bench"/r["filename"]).exists():
            path.parent.mkdir(parents=True, exist_ok=True); picture(path)
    return root


def recorder(asked: list, reply):
    "A fake server's answer function: records (prompt text, images sent) in `asked` and replies `reply(text)`."
    def answer(body: dict) -> str:
        text = request_text(body)
        asked.append((text, count_images(body)))
        return reply(text)
    return answer


def test_sweep_through_the_fake_server_asks_as_written_and_round_trips(tmp_path):
    data, asked = hb_folder(tmp_path/"HallusionBench"), []
    with FakeChatServer(answer=recorder(asked, lambda text: "Yes." if len(text) % 2 else "No, it is not.")) as server:
        res = sweep(tmp_path, "hb_fake", "hallusionbench.ipynb", {"data_dir": str(data), "domain": "hallusionbench", "model": "openai:fake",
                                                                  "base_url": server.base_url, "api_key_env": None, "n_boot": 50}, headline="qAcc")
    records = json.loads((FIX/"HallusionBench_excerpt.json").read_text())
    assert sorted(asked) == sorted((r["question"], int(r["visual_input"] != "0")) for r in records)   # as written; text alone without a figure
    out = res.sweep_dir/res.runs[0].run
    scored = subprocess.run([sys.executable, "-m", "mmresearch.cli", "score", "hallusionbench", "--input", str(out/"HallusionBench_result.json"),
                             "--n-boot", "50"], capture_output=True, text=True, cwd=ROOT)
    assert scored.returncode == 0, scored.stderr
    mine = pd.read_csv(out/"metrics.csv")
    back = pd.DataFrame(json.loads(scored.stdout)["metrics"])
    both = mine.merge(back, on=["category", "subcategory", "metric"], suffixes=("", "_scored"))
    assert len(both) == len(mine) and (both.value.round(9).fillna(-1) == both.value_scored.round(9).fillna(-1)).all()
    manifest = json.loads((out/"manifest.json").read_text())["study"]
    assert manifest["dataset"]["params"]["text_only"] == 13 and manifest["dataset"]["params"]["items_skipped"] == 0
    read = {Path(f["path"]).name for f in manifest["inputs"]["files"]}
    assert "HallusionBench.json" in read and "0_1.png" in read   # the question file and the figures, through the input door


def test_sweep_with_the_tiny_model_pairs_conditions_item_by_item(tmp_path):
    data = hb_folder(tmp_path/"HallusionBench")
    res = sweep(tmp_path, "hb_tiny", "hallusionbench.ipynb", {"data_dir": str(data), "domain": "hallusionbench", "model": "tiny",
                                                              "n_samples": 30, "n_boot": 50}, {"policy": ["exclude", "negative"]}, headline="qAcc")
    rows = [pd.read_parquet(res.sweep_dir/r.run/"samples.parquet") for r in res.runs]
    assert all(r.error.isna().all() for r in rows) and len(rows[0]) <= 30 and set(rows[0].set) == set(rows[1].set)
    page = (res.sweep_dir/"summary.html").read_text()
    assert "Paired tests" in page and "policy: exclude → negative" in page


def test_every_file_the_run_opens_is_in_its_ledger(audited, tmp_path):
    data = hb_folder(tmp_path/"HallusionBench")
    check(*audited("hb_door", "hallusionbench.ipynb", {"domain": "hallusionbench", "data_dir": str(data), "model": "scripted:yes",
                                                       "n_samples": 20, "n_boot": 20}, [data]))
