"""Studies end to end through the sweep: a CoT-vs-direct Hal-Eval sweep with its own summary (paired tests), and the
shipped params files all validate against their notebooks."""
from pathlib import Path

import pandas as pd

from mmresearch.cli import suite_members
from mmresearch.sweep import expand_grid, load_params, run_sweep

ROOT = Path(__file__).resolve().parents[1]


def test_shipped_params_files_validate():
    members = suite_members(ROOT/"params"/"default.yaml")
    assert {p.name for p in members} >= {"cot_vs_nocot.yaml", "length_sweep.yaml", "domain_shift.yaml"}
    for p in sorted((ROOT/"params").glob("*.yaml")):
        if p.name == "default.yaml": continue
        assert expand_grid(load_params(p)), p


def test_cot_sweep_summary_has_paired_tests(tmp_path):
    (tmp_path/"settings.ini").write_text("[DEFAULT]\n")
    params = tmp_path/"params"/"cot.yaml"; params.parent.mkdir()
    params.write_text(f"name: cot_test\nnotebook: {ROOT/'nbs/experiments/haleval_disc.ipynb'}\n"
                      f"summary: {ROOT/'nbs/experiments/haleval_disc_summary.ipynb'}\n"
                      "fixed: {model: 'scripted:coin', n_samples: 6, n_boot: 200}\ngrid: {cot: [false, true]}\nheadline: f1\n")
    res = run_sweep(params, workers=2, reports_dir=tmp_path/"reports", cache_path=tmp_path/"c.sqlite", progress=False)
    assert [r.status for r in res.runs] == ["ok", "ok"], res.describe()
    for r in res.runs:
        m = pd.read_csv(res.sweep_dir/r.run/"metrics.csv")
        assert {"all", "object", "attribute", "relation", "event"} == set(m.pair_type)
        rec = m[(m.metric == "recall") & (m.pair_type != "all")]
        assert rec[rec.n == rec.n.max()].value.nunique() == 1                   # shared positives: one recall for the types every sample has
    page = (res.sweep_dir/"summary.html").read_text()
    assert "Paired tests" in page and "cot: False → True" in page and "McNemar p =" in page
    assert "detectable at 80% power" in page and "mde" in page                  # issue 16: the minimum detectable effect
    assert set(m.cluster) == {"sample_id"}                                       # the table names what it resamples
