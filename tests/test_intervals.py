"""Issue 24: intervals and tests that hold at every size. Each test fails on the metrics before the issue (cluster
bootstrap below 30 clusters, first-appearance cluster numbers, Connor's sample size, per-condition rows in
`compare_conditions`, degenerate boundary intervals); `benchmarks/bench_coverage.py` measures coverage at length."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from mmresearch.metrics import binary_report, compare_conditions, mcnemar, paired_mde, paired_sample_size


def clustered_rows(rng, g: int, icc: float = 0.25, accuracy: float = 0.8, conditions: int = 1) -> pd.DataFrame:
    "g clusters of 2–8 yes/no rows whose chance of a right answer is Beta(mean accuracy, ICC icc) per cluster."
    sizes, p = rng.integers(2, 9, g), rng.beta(accuracy * (1 / icc - 1), (1 - accuracy) * (1 / icc - 1), g)
    ids = np.repeat(np.arange(g), sizes)
    y = rng.random(ids.size) < 0.5
    preds = {f"pred{'' if k == 0 else k}": np.where(rng.random(ids.size) < p[ids], y, ~y) for k in range(conditions)}
    return pd.DataFrame({"cluster": ids, "label": y, **preds})


def test_ten_clusters_keep_coverage():
    rng, hits = np.random.default_rng(24), 0
    for _ in range(300):
        t = binary_report(clustered_rows(rng, 10), cluster="cluster").set_index("metric")
        hits += t.loc["accuracy", "ci_low"] <= 80 <= t.loc["accuracy", "ci_high"]
    assert 0.91 <= hits / 300 <= 0.99, hits                   # the cluster bootstrap: 0.88


def test_ten_clusters_keep_the_f1_test_size():
    rng, rejects = np.random.default_rng(10), 0
    for _ in range(400):
        d = clustered_rows(rng, 10, conditions=2)
        rejects += compare_conditions(d.label, d.pred, d.pred1, cluster=d.cluster).set_index("metric").loc["f1", "p_value"] < 0.05
    assert rejects / 400 <= 0.065, rejects


def test_few_clusters_are_flagged_and_one_cluster_gets_a_reason():
    t = binary_report(clustered_rows(np.random.default_rng(1), 12), cluster="cluster").set_index("metric")
    assert t.loc["accuracy", "few_clusters"] and t.loc["accuracy", "ci_note"].startswith("few clusters (12, effective ")
    one = binary_report(pd.DataFrame({"label": ["yes"] * 5, "pred": ["yes"] * 4 + ["no"], "image": "a"}), cluster="image")
    acc = one.set_index("metric").loc["accuracy"]
    assert acc["value"] == 80 and math.isnan(acc["ci_low"]) and math.isnan(acc["ci_high"])     # was [80, 80]
    assert acc["ci_note"] == "one cluster: no interval"


def test_row_order_cannot_move_an_interval():
    d = clustered_rows(np.random.default_rng(2), 60)
    d["cluster"] = d.cluster.map(lambda c: f"img{(c * 7919) % 60:02d}")      # ids whose first appearance is not sorted
    shuffled = d.sample(frac=1, random_state=5)
    pd.testing.assert_frame_equal(binary_report(shuffled, cluster="cluster", n_boot=500),
                                  binary_report(d, cluster="cluster", n_boot=500))


def test_one_set_of_rows_per_comparison():
    t = compare_conditions(["yes"] * 100, ["yes"] * 80 + [None] * 20, ["yes"] * 80 + ["no"] * 20).set_index("metric")
    assert t.loc["accuracy", ["diff", "p_value", "n"]].tolist() == [0.0, 1.0, 80]             # was −20 [−28, −12], p = 1
    w = compare_conditions(["yes"] * 100, ["yes"] * 80 + [None] * 20, ["yes"] * 80 + ["no"] * 20, unparsed="wrong")
    assert w.set_index("metric").loc["accuracy", ["a", "b", "n"]].tolist() == [80.0, 80.0, 100]


def mcnemar_power_by_enumeration(n: int, p_b: float, p_c: float) -> float:
    "P(reject at 5%) of McNemar as run (exact binomial below 25 discordant pairs, else chi-square without correction), over every (b, c)."
    b, c = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij"); ok = b + c <= n
    b, c = b[ok], c[ok]
    log_pmf = (special.gammaln(n + 1) - special.gammaln(b + 1) - special.gammaln(c + 1) - special.gammaln(n - b - c + 1)
               + b * np.log(p_b) + c * np.log(p_c) + (n - b - c) * np.log(1 - p_b - p_c))
    k = b + c
    chi2 = np.where(k > 0, (b - c) ** 2 / np.maximum(k, 1), 0.0) > stats.chi2.ppf(0.95, 1)
    exact = np.array([stats.binomtest(int(x), int(m)).pvalue < 0.05 if 0 < m < 25 else False for x, m in zip(b, k)])
    return float(np.exp(log_pmf)[np.where(k < 25, exact, chi2)].sum())


def test_power_is_the_power_of_the_test_we_run():
    "10 points at 30% discordance: the plan is the smallest n whose power, by enumerating every outcome, reaches 80%."
    n = paired_sample_size(10, 30)["n"]                 # Connor's normal formula says 234; with continuity correction, 250
    assert mcnemar_power_by_enumeration(n, 0.2, 0.1) >= 0.8 > mcnemar_power_by_enumeration(n - 1, 0.2, 0.1)
    rng = np.random.default_rng(4)
    u = rng.random(8000)                                                        # independent rows, a true difference
    assert paired_mde(u < 0.1, (u >= 0.1) & (u < 0.35), cluster=np.arange(8000) // 4)["design_effect"] == pytest.approx(1, abs=0.06)


def test_edges():
    all_right = binary_report(pd.DataFrame({"label": ["yes", "no"] * 25, "pred": ["yes", "no"] * 25})).set_index("metric")
    assert all_right.loc["accuracy", "ci_high"] == 100 and all_right.loc["accuracy", "ci_low"] < 95         # not [100, 100]
    one_yes = pd.DataFrame({"label": ["yes"] * 10 + ["no"] * 10, "pred": ["yes"] + ["no"] * 19})
    assert binary_report(one_yes).set_index("metric").loc["precision", "boot_undefined"] > 0
    assert mcnemar([True, False], [False, True], cluster=[0, 0], exact_below=0)["p_value"] == 1.0
    with pytest.raises(ValueError, match="level must be a fraction"): binary_report(one_yes, level=95)
    with pytest.raises(ValueError, match="percentage points"): paired_sample_size(0.1, 0.3)


def test_default_resamples_keep_the_endpoints_monte_carlo_error_under_one_percent_of_the_width():
    rng = np.random.default_rng(0)
    y = rng.random(2000) < 0.5
    d = pd.DataFrame({"label": y, "pred": np.where(rng.random(2000) < 0.8, y, ~y)})
    reps = pd.concat([binary_report(d, seed=s).set_index("metric").loc["accuracy", ["ci_low", "ci_high"]] for s in range(40)], axis=1)
    width = (reps.loc["ci_high"] - reps.loc["ci_low"]).mean()
    assert (reps.std(axis=1) / width).max() < 0.012                             # n_boot 1000: about 0.02
