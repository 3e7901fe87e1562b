"""Issue 24, paired tests in every sweep: a sweep of two conditions over the same items gets, in its generic summary,
the paired table `metrics.compare_conditions` gives on those items (from the columns the study declares with
`registry.paired_items`); conditions over different items get none, and the page says why. Tiny real POPE sweeps."""
import json
from pathlib import Path

import nbformat
import pandas as pd

from mmresearch.metrics import compare_conditions
from mmresearch.report import paired_comparisons
from mmresearch.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]


def study_sweep(tmp_path: Path, study: str, name: str, fixed: str, grid: str, headline: str):
    "A small real sweep of one experiment notebook into tmp_path/reports; every run and the summary must succeed."
    (tmp_path/"settings.ini").write_text("[DEFAULT]\n")
    params = tmp_path/"params"/f"{name}.yaml"; params.parent.mkdir(exist_ok=True)
    params.write_text(f"name: {name}\nnotebook: {ROOT/'nbs'/'experiments'/f'{study}.ipynb'}\nfixed: {fixed}\ngrid: {grid}\nheadline: {headline}\n")
    res = run_sweep(params, workers=2, reports_dir=tmp_path/"reports", cache_path=tmp_path/"c.sqlite", progress=False)
    assert all(r.status == "ok" for r in res.runs) and res.summary_error is None, res.describe()
    return res


def pope_sweep(tmp_path: Path, name: str, grid: str, fixed: str = "{n_samples: 4, k: 2, n_boot: 200, score_yes: false}"):
    return study_sweep(tmp_path, "pope", name, fixed, grid, "f1")


def summary_outputs(sweep_dir: Path) -> str:
    nb = nbformat.read(sweep_dir/"summary.ipynb", as_version=4)
    return json.dumps([o for c in nb.cells for o in c.get("outputs", [])])


def test_same_items_get_the_paired_table_of_compare_conditions(tmp_path):
    res = pope_sweep(tmp_path, "pairs", "{model: ['scripted:yes', 'scripted:coin']}")
    a, b = (pd.read_parquet(res.sweep_dir/r.run/"samples.parquet") for r in res.runs)   # grid order: yes, then coin
    key = ["domain", "split", "question_id", "question"]
    both = a.merge(b, on=key, suffixes=("_a", "_b")).sort_values(key)
    assert len(both) == len(a) == len(b) > 0
    cluster = both.domain + "\x1f" + both.sample_id_a
    direct = compare_conditions(both.label_a, both.parsed_a, both.parsed_b, both.parse_ok_a, both.parse_ok_b, cluster=cluster.to_numpy())
    paired, why_not = paired_comparisons(res.sweep_dir)
    assert why_not == [] and list(paired.comparison.unique()) == ["model: scripted:yes → scripted:coin"]
    pd.testing.assert_frame_equal(paired[direct.columns].reset_index(drop=True), direct, check_dtype=False)
    acc = paired.set_index("metric").loc["accuracy"]
    assert acc.test.startswith("mcnemar_") and acc.n_clusters == 4
    page = (res.sweep_dir/"summary.html").read_text()
    assert "Paired tests" in page and "model: scripted:yes → scripted:coin" in page
    assert f"accuracy changes by {acc['diff']:+.1f} points" in page and f"p = {acc.p_value:.3g}" in page


def test_different_items_get_no_paired_table_and_the_page_says_why(tmp_path):
    res = pope_sweep(tmp_path, "nopairs", "{domain: [in_domain, easyvqa]}", "{model: 'scripted:yes', n_samples: 3, k: 2, n_boot: 200, score_yes: false}")
    paired, why_not = paired_comparisons(res.sweep_dir)
    assert paired.empty and why_not == ["domain: in_domain → easyvqa: the two runs share no item (they asked different questions), "
                                        "so there is no paired test."]
    text = summary_outputs(res.sweep_dir)
    assert "the two runs share no item" in text and "accuracy changes by" not in text
