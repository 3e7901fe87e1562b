"""Issue 24, paired tests in every sweep, for the two studies declared last: an AMBER sweep compares its runs answer by
answer on the yes/no questions with AMBER's own metrics ("No" positive, an unreadable answer wrong, an image's questions
resampled together), a Hal-Eval generative sweep description by description on the headline judge's verdict
(`halgen.clean_verdicts`). Tiny real sweeps."""
from pathlib import Path

import pandas as pd

from mmresearch.metrics import compare_conditions
from mmresearch.report import paired_comparisons
from test_paired_sweep import study_sweep


def sweep(tmp_path: Path, study: str, fixed: str, grid: str):
    return study_sweep(tmp_path, study, study, fixed, grid, "accuracy")


def test_amber_sweep_compares_amber_s_own_metrics_with_no_as_the_positive_class(tmp_path):
    "AMBER's paired table: accuracy, precision, recall, F1 and no_ratio with 'No' positive (each side the run's own overall"
    "row), an unreadable answer counted wrong (scripted:echo repeats the question), the descriptions left out."
    res = sweep(tmp_path, "amber", "{n_samples: 2, n_hallu: 1, n_boot: 200}", "{model: ['scripted:yes', 'scripted:coin', 'scripted:echo']}")
    runs = {r.grid["model"]: r.run for r in res.runs}
    items = {m: pd.read_parquet(res.sweep_dir/run/"samples.parquet") for m, run in runs.items()}
    paired, why_not = paired_comparisons(res.sweep_dir)
    assert why_not == [] and set(paired.positive) == {"no"}
    for a, b in [("scripted:yes", "scripted:coin"), ("scripted:yes", "scripted:echo"), ("scripted:coin", "scripted:echo")]:
        key = ["sample_id", "id", "query"]
        both = items[a].merge(items[b], on=key, suffixes=("_a", "_b"))
        both = both[both.correct_a.notna() & both.correct_b.notna()]            # the yes/no answers; descriptions have no verdict
        both = both.assign(k=both.sample_id + "\x1f" + both.id.astype(str) + "\x1f" + both["query"]).sort_values("k")  # item order
        args = (both.truth_a, both.parsed_a.astype(object), both.parsed_b.astype(object), both.parse_ok_a.astype(object), both.parse_ok_b.astype(object))
        direct = compare_conditions(*args, cluster=both.sample_id.to_numpy(), unparsed="wrong", positive="no")
        as_yes = compare_conditions(*args, cluster=both.sample_id.to_numpy(), unparsed="wrong").set_index("metric")
        got = paired[paired.comparison == f"model: {a} → {b}"].reset_index(drop=True)
        assert list(got.metric) == ["accuracy", "precision", "recall", "f1", "no_ratio", "parse_failure_rate"]
        pd.testing.assert_frame_equal(got[direct.columns].drop(columns="n_unscored"), direct.drop(columns="n_unscored"), check_dtype=False)
        assert set(got.n) == {len(both)} and set(got.n_unscored) == {len(items[a]) - len(both)} and len(items[a]) > len(both)
        f1 = got.set_index("metric").loc["f1"]
        for model, side in ((a, "a"), (b, "b")):                                # each side is the run's own overall row ("No" positive)
            m = pd.read_csv(res.sweep_dir/runs[model]/"metrics.csv")
            m = m[(m.task == "discriminative") & (m.group == "overall")].set_index("metric").value
            for metric in ("accuracy", "precision", "recall", "f1", "no_ratio"):
                want, value = m[metric], got.set_index("metric").loc[metric, side]
                assert (pd.isna(want) and pd.isna(value)) or abs(want - value) < 1e-9, (model, metric, value, want)
        if a == "scripted:yes": assert f1.a == 0 and as_yes.loc["f1", "a"] > 0   # always "Yes": no "No" found, unlike the F1 of "yes"
        if b == "scripted:echo":                                               # every answer unreadable: scored, and wrong
            assert f1.b == 0 and got.set_index("metric").loc["parse_failure_rate", "b"] == 100
    page = (res.sweep_dir/"summary.html").read_text()
    assert "The positive class is" in page and "no_ratio" in page


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
