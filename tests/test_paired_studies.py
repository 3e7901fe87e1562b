"""Issue 24, paired tests in every sweep, for the two studies declared last: an AMBER sweep compares its runs answer by
answer on the yes/no questions (`amber.answer_correct`, an image's questions resampled together), a Hal-Eval generative
sweep description by description on the headline judge's verdict (`halgen.clean_verdicts`). Tiny real sweeps."""
from pathlib import Path

import pandas as pd

from mmresearch.metrics import compare_conditions
from mmresearch.report import paired_comparisons
from test_paired_sweep import study_sweep


def sweep(tmp_path: Path, study: str, fixed: str, grid: str):
    return study_sweep(tmp_path, study, study, fixed, grid, "accuracy")


def as_answers(correct: pd.Series) -> pd.Series:
    "Right/wrong as an answer to a 'yes' question (what `compare_conditions` reads); None: no verdict."
    return correct.astype("boolean").map({True: "yes", False: "no"}).astype(object).where(correct.notna(), None)


def test_amber_sweep_compares_the_yes_no_answers_item_by_item(tmp_path):
    res = sweep(tmp_path, "amber", "{n_samples: 2, n_hallu: 1, n_boot: 200}", "{model: ['scripted:yes', 'scripted:coin']}")
    a, b = (pd.read_parquet(res.sweep_dir/r.run/"samples.parquet") for r in res.runs)   # grid order: yes, then coin
    key = ["sample_id", "id", "query"]
    both = a.merge(b, on=key, suffixes=("_a", "_b")).sort_values(key)
    assert len(both) == len(a) == len(b) and both.correct_a.notna().sum() > both.correct_a.isna().sum() > 0   # descriptions: no verdict
    direct = compare_conditions(["yes"] * len(both), as_answers(both.correct_a), as_answers(both.correct_b),
                                cluster=both.sample_id.to_numpy())
    paired, why_not = paired_comparisons(res.sweep_dir)
    assert why_not == [] and list(paired.comparison) == ["model: scripted:yes → scripted:coin"] and list(paired.metric) == ["accuracy"]
    acc = paired.iloc[0]
    want = direct.set_index("metric").loc["accuracy"]
    for col in ("a", "b", "diff", "ci_low", "ci_high", "p_value", "n", "n_clusters"): assert acc[col] == want[col], col
    assert acc.n == both.correct_a.notna().sum() and acc.n_clusters == 2 and acc.test.startswith("mcnemar_")
    for r, value in zip(res.runs, (acc.a, acc.b)):   # each side is the run's own overall accuracy in metrics.csv
        m = pd.read_csv(res.sweep_dir/r.run/"metrics.csv")
        assert abs(m[(m.group == "overall") & (m.metric == "accuracy")].value.iloc[0] - value) < 1e-9


def test_haleval_gen_sweep_compares_the_descriptions_item_by_item(tmp_path):
    res = sweep(tmp_path, "haleval_gen", "{model: 'scripted:echo', n_samples: 3, n_boot: 200}", "{length_prompt: [short, detailed]}")
    paired, why_not = paired_comparisons(res.sweep_dir)
    assert why_not == [] and list(paired.comparison) == ["length_prompt: short → detailed"] and list(paired.metric) == ["accuracy"]
    acc = paired.iloc[0]
    assert acc.n == 3 and acc.only_a == acc.only_b == 0
    for r, value in zip(res.runs, (acc.a, acc.b)):   # each side is the run's headline accuracy (the exact judge's)
        m = pd.read_csv(res.sweep_dir/r.run/"metrics.csv")
        assert m[(m.judge == "exact") & (m.metric == "accuracy")].value.iloc[0] == value
        s = pd.read_parquet(res.sweep_dir/r.run/"samples.parquet")
        assert set(s.clean_judge) == {"exact"} and s.clean.notna().all()
