"""MME's hallucination subset (BradyFU/Awesome-Multimodal-Large-Language-Models, branch Evaluation, tools/eval_tool.zip
at 1c1d69e): LaVIN's published results scored here give MME's own figures, and the study runs end to end from MME's
released folder layout (with pictures made here) as a sweep through the fake OpenAI-compatible server and through
the embedded tiny model.

How the expected values were obtained: eval_tool's calculation.py, unchanged, run by hand in a throwaway folder on its
own example results `eval_tool/LaVIN/` (`python calculation.py`, printing each category's score), and once more with
one line added that prints each category's `metric_dict` (its TP/FN/TN/FP, other_num, acc and acc_plus) — the values
below. The scores are also those MME's leaderboard (the Evaluation branch's README) lists for LaVIN-13B: existence
185.00, count 88.33, position 63.33, color 75.00."""
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from mmresearch.fakeserver import FakeChatServer
from mmresearch.mme import HALLUCINATION, score_mme

from test_benchmarks_real import picture, sweep   # one small distinct image per path; a sweep that must finish ok
from test_hallusionbench_real import recorder   # a fake-server answer that records what was asked
from test_one_door import audited, check   # kernels that log every file they open; each must be in the run's ledger

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT/"tests"/"fixtures"/"mme"

CALCULATION_PY = {   # category: TP, FN, TN, FP, other_num, acc, acc_plus, score
    "existence": (29, 1, 28, 2, 0, 0.95, 0.9, 185.0),
    "count": (25, 5, 12, 18, 0, 0.6166666666666667, 0.26666666666666666, 88.33333333333334),
    "position": (29, 1, 3, 27, 0, 0.5333333333333333, 0.1, 63.333333333333336),
    "color": (24, 6, 11, 19, 0, 0.5833333333333334, 0.16666666666666666, 75.0),
    "commonsense_reasoning": (56, 10, 26, 37, 11, 0.5857142857142857, 0.2857142857142857, 87.14285714285714),
}


def test_lavin_results_give_calculation_py_figures():
    res = score_mme(FIX/"LaVIN", n_boot=200)
    assert set(res["categories"]) == set(CALCULATION_PY) and res["pairs_with_two_images"] == 0
    for cat, (tp, fn, tn, fp, other, acc, plus, score) in CALCULATION_PY.items():
        c = res["categories"][cat]
        assert (c["TP"], c["FN"], c["TN"], c["FP"], c["other_num"]) == (tp, fn, tn, fp, other), cat
        assert (c["acc"], c["acc_plus"], c["score"]) == pytest.approx((100 * acc, 100 * plus, score), abs=1e-9), cat
    assert res["totals"]["hallucination"] == pytest.approx(185.0 + 88.33333333333334 + 63.333333333333336 + 75.0)
    assert res["totals"]["perception"] is None   # calculation.py's total needs all ten perception categories
    m = pd.DataFrame(res["metrics"]).set_index(["category", "metric"])
    assert m.loc[("hallucination", "total_score"), "value"] == pytest.approx(411.6666666666667)
    assert m.loc[("existence", "score"), "ci_low"] < 185.0 <= m.loc[("existence", "score"), "ci_high"]


def test_cli_reads_the_results_folder_and_one_file():
    run = lambda path: subprocess.run([sys.executable, "-m", "mmresearch.cli", "score", "mme", "--input", str(path), "--n-boot", "50"],
                                      capture_output=True, text=True, cwd=ROOT)
    folder, one = run(FIX/"LaVIN"), run(FIX/"LaVIN"/"count.txt")
    assert folder.returncode == 0 and one.returncode == 0, folder.stderr + one.stderr
    assert json.loads(folder.stdout)["categories"]["position"]["score"] == pytest.approx(63.333333333333336)
    assert list(json.loads(one.stdout)["categories"]) == ["count"]


def mme_folder(root: Path) -> Path:
    "MME's released layout from the questions in LaVIN's result files: flat folders, and `color` with images/ and questions_answers_YN/."
    for c in HALLUCINATION:
        lines = [l.split("\t") for l in (FIX/"LaVIN"/f"{c}.txt").read_text().splitlines()]
        qdir, idir = (root/c/"questions_answers_YN", root/c/"images") if c == "color" else (root/c, root/c)
        qdir.mkdir(parents=True, exist_ok=True); idir.mkdir(parents=True, exist_ok=True)
        for img in dict.fromkeys(l[0] for l in lines):
            (qdir/img).with_suffix(".txt").write_text("".join(f"{q}\t{a}\n" for i, q, a, _ in lines if i == img))
            picture(idir/img)
    return root


def test_sweep_through_the_fake_server_asks_as_written_and_round_trips(tmp_path):
    data, asked = mme_folder(tmp_path/"MME_Benchmark_release_version"), []
    with FakeChatServer(answer=recorder(asked, lambda text: "Yes, there is." if len(text) % 3 else "No.")) as server:
        res = sweep(tmp_path, "mme_fake", "mme.ipynb", {"data_dir": str(data), "domain": "mme", "model": "openai:fake", "base_url": server.base_url,
                                                        "api_key_env": None, "n_samples": None, "n_boot": 50}, headline="total_score")
    questions = [l.split("\t")[1] for c in HALLUCINATION for l in (FIX/"LaVIN"/f"{c}.txt").read_text().splitlines()]
    assert sorted(asked) == sorted((q, 1) for q in questions)   # every question as MME writes it, with its image
    out = res.sweep_dir/res.runs[0].run
    scored = subprocess.run([sys.executable, "-m", "mmresearch.cli", "score", "mme", "--input", str(out/"mme_results"), "--n-boot", "50"],
                            capture_output=True, text=True, cwd=ROOT)
    assert scored.returncode == 0, scored.stderr
    back = pd.DataFrame(json.loads(scored.stdout)["metrics"]).set_index(["category", "metric"]).value
    mine = pd.read_csv(out/"metrics.csv").set_index(["category", "metric"]).value
    assert back.sort_index().round(9).equals(mine.sort_index().round(9))
    manifest = json.loads((out/"manifest.json").read_text())["study"]
    read = [Path(f["path"]) for f in manifest["inputs"]["files"]]
    assert manifest["dataset"]["params"]["items_skipped"] == 0 and len(manifest["dataset"]["files"]) == 120
    assert sum(p.suffix == ".txt" for p in read) == 120 and sum(p.suffix == ".jpg" for p in read) == 120   # every question file and image, in the ledger
    assert {p.parent.name for p in read} >= {"existence", "images", "questions_answers_YN"}


def test_sweep_with_the_tiny_model_pairs_conditions_item_by_item(tmp_path):
    data = mme_folder(tmp_path/"MME_Benchmark_release_version")
    res = sweep(tmp_path, "mme_tiny", "mme.ipynb", {"data_dir": str(data), "domain": "mme", "model": "tiny", "n_samples": 40, "n_boot": 50},
                {"parser": ["mme", "final"]}, headline="total_score")
    rows = [pd.read_parquet(res.sweep_dir/r.run/"samples.parquet") for r in res.runs]
    assert all(r.error.isna().all() for r in rows) and len(rows[0]) <= 40 and (rows[0].groupby("pair").size() == 2).all()
    page = (res.sweep_dir/"summary.html").read_text()
    assert "Paired tests" in page and "parser: mme → final" in page


def test_every_file_the_run_opens_is_in_its_ledger(audited, tmp_path):
    data = mme_folder(tmp_path/"MME_Benchmark_release_version")
    check(*audited("mme_door", "mme.ipynb", {"domain": "mme", "data_dir": str(data), "model": "scripted:yes", "n_samples": 20,
                                             "n_boot": 20}, [data]))
