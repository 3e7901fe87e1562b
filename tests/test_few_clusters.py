"""Issue 42: intervals that hold where benchmarks are small. One test per defect the issue lists, each failing on the
metrics before it (a design effect below 1 switching to the rows' Wilson interval, and later narrowing the interval
below it; a flag that counts clusters, not effective clusters; AUROC with no few-clusters flag and zero-width one-cluster
intervals; a comparison row that mixes two tests; G − 1 degrees of freedom whatever the cluster sizes; plans for a test
that does not run; DeprecationWarnings from scipy; endpoints that move with row order; random sign flips where the exact
McNemar test is cheap; zero-width intervals where every cluster moves the difference alike). Coverage and size at
length: `benchmarks/bench_coverage.py`."""
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mmresearch.metrics import (auroc, binary_report, calibration, cluster_diff, cluster_ratio_ci, compare_conditions, correlation,
                                mcnemar, mean_ci, paired_sample_size, wilson_ci)


def wilson(value: float, n: float, q: float) -> tuple[float, float]:
    "Wilson's score interval written out (0–1)."
    centre = (value + q * q / (2 * n)) / (1 + q * q / n)
    half = q * math.sqrt(value * (1 - value) / n + q * q / (4 * n * n)) / (1 + q * q / n)
    return centre - half, centre + half


def test_a_design_effect_below_one_never_narrows_the_interval_below_the_rows():
    "Four clusters of four rows, 2, 2, 2 and 3 right: the clusters agree more than rows would, the estimated design effect is below 1."
    value, lo, hi = cluster_ratio_ci([2, 2, 2, 3], [4, 4, 4, 4])
    r = 9 / 16                                                  # by hand:
    resid = np.array([2, 2, 2, 3]) - 4 * r                     # −0.25, −0.25, −0.25, 0.75
    sandwich = (resid ** 2 / 0.75).sum() / 16 / (r * (1 - r))   # CR2 (leverage 1/4) over the binomial variance: 0.254
    between, within = 4 * ((resid / 4) ** 2).sum() / 3, (3 * (2 - 1) + (3 - 9 / 4)) / 12   # ANOVA mean squares: 1/16, 5/16
    anova = 1 + 3 * (between - within) / (between + 3 * within)   # Kish with n0 = 4: 0.25
    assert max(anova, (anova + sandwich) / 2) < 1
    assert value == r and (lo, hi) == pytest.approx(wilson(r, 16, stats.norm.ppf(0.975)), abs=1e-12)   # the 16 rows' own interval
    narrow = wilson(r, 16 / max(anova, (anova + sandwich) / 2), stats.t.ppf(0.975, 3))   # before: Wilson at 16 / 0.25 rows, 0.28 wide
    assert hi - lo > narrow[1] - narrow[0] + 0.05


def test_no_cluster_interval_is_narrower_than_the_rows_wilson():
    "At 10 clusters of 1–20 rows with no correlation, about a third of the intervals were narrower than the rows' Wilson interval."
    rng, narrower = np.random.default_rng(11), 0
    for _ in range(300):
        m = rng.integers(1, 21, 10); right = rng.binomial(m, 0.8)
        _, lo, hi = cluster_ratio_ci(right, m)
        rlo, rhi = wilson_ci(right.sum() / m.sum(), m.sum())
        narrower += hi - lo < rhi - rlo - 1e-12
    assert narrower == 0                                        # before: 97 of 300


def test_unclustered_mcnemar_below_25_discordant_rows_is_exact():
    "1,000 rows, 12 discordant for A and 8 for B: the exact binomial p 0.5034 whatever the seed (before: random flips, 0.496–0.503)."
    yes, a = ["yes"] * 1000, ["yes"] * 12 + ["no"] * 8 + ["yes"] * 980
    b = ["no"] * 12 + ["yes"] * 8 + ["yes"] * 980
    for seed in (0, 1, 2):
        r = compare_conditions(yes, a, b, seed=seed).set_index("metric").loc["accuracy"]
        assert r["test"] == "mcnemar_exact" and r["p_value"] == pytest.approx(stats.binomtest(8, 20).pvalue, abs=1e-12)
        assert r["p_value"] == pytest.approx(mcnemar(np.array(a) == "yes", np.array(b) == "yes")["p_value"], abs=1e-12)


def test_random_sign_flips_keep_the_cluster_label():
    "24 clusters of 1–24 rows, each one row apart: too many patterns to enumerate; the test is still named as clustered."
    ids = np.repeat(np.arange(24), np.arange(1, 25))
    a = np.ones(ids.size, bool); b = np.ones(ids.size, bool)
    first = np.r_[0, np.cumsum(np.arange(1, 24))]              # each cluster's first row: A wrong in even clusters, B in odd
    a[first[::2]] = False; b[first[1::2]] = False
    t = compare_conditions(["yes"] * ids.size, np.where(a, "yes", "no"), np.where(b, "yes", "no"), cluster=ids, n_boot=2000)
    assert t.set_index("metric").loc["accuracy", "test"] == "mcnemar_cluster_sign_flip"   # before: mcnemar_sign_flip


def test_clusters_that_move_the_difference_alike_give_no_interval():
    "Ten clusters each favouring B by one of two rows, or two conditions that agree everywhere: NaN with a note, not [50, 50] or [0, 0]."
    ids = np.repeat(np.arange(10), 2)
    alike = compare_conditions(["yes", "no"] * 10, ["yes", "yes"] * 10, ["yes", "no"] * 10, cluster=ids).set_index("metric")
    assert alike.loc["accuracy", "p_value"] == pytest.approx(2 / 2 ** 10, abs=1e-12)
    assert alike.loc["accuracy", ["ci_low", "ci_high"]].isna().all()
    assert alike.loc["accuracy", "ci_note"].startswith("every cluster moves the difference alike: no interval")
    same = compare_conditions(["yes", "no"] * 10, ["yes", "yes"] * 10, ["yes", "yes"] * 10).set_index("metric")
    for m in ("accuracy", "f1"):
        assert same.loc[m, "p_value"] == 1.0 and same.loc[m, ["ci_low", "ci_high"]].isna().all()
        assert same.loc[m, "ci_note"] == "the conditions agree on every row: no interval"
    r = cluster_diff(([2, 4, 6], [4, 8, 12]), ([3, 6, 9], [4, 8, 12]))   # every cluster +25 points: no spread to measure
    assert r["diff"] == 25 and math.isnan(r["ci_low"]) and r["ci_note"].startswith("every cluster moves the difference alike")


def test_one_cluster_with_most_rows_is_flagged():
    "50 clusters, one holding 90% of the rows: the flag counts effective clusters (Carter et al.'s G*, about 1), not clusters."
    ids = np.r_[np.zeros(450, int), np.arange(1, 50)]
    rng = np.random.default_rng(42)
    y = rng.random(ids.size) < 0.5
    t = binary_report(pd.DataFrame({"label": y, "pred": np.where(rng.random(ids.size) < 0.8, y, ~y), "image": ids}),
                      cluster="image").set_index("metric")
    assert t.loc["accuracy", "n_clusters"] == 50 and t.loc["accuracy", "few_clusters"]       # before: 50 ≥ 30, not flagged
    assert t.loc["accuracy", "ci_note"].startswith("one cluster holds 90% of the rows")


def test_clustered_auroc_is_flagged_and_one_cluster_gives_no_interval():
    rng = np.random.default_rng(7)
    ids = np.repeat(np.arange(12), 6)
    y = np.tile([True, False], 36); s = y + rng.normal(size=72)
    a = auroc(y, s, cluster=ids)
    assert a["few_clusters"] and a["ci_note"] == "few clusters (12, effective 12.0 < 30)" and a["ci_low"] < a["value"] < a["ci_high"]
    one = np.zeros(72, int)                                    # before: [v, v] and no note for all three
    for r in (auroc(y, s, cluster=one, n_boot=200), mean_ci(s, n_boot=200, cluster=one)):
        assert math.isnan(r["ci_low"]) and math.isnan(r["ci_high"]) and r["ci_note"] == "one cluster: no interval"
    c = calibration(y, stats.norm.cdf(s), n_boot=200, cluster=one)
    assert math.isnan(c["ece_low"]) and math.isnan(c["ece_high"]) and c["ci_note"] == "one cluster: no interval"


def small_studies(n: int = 200, seed: int = 42):
    "Small clustered paired studies (8–20 clusters of 1–12 rows, cluster accuracies from a Beta with ICC 1/3, B 5 points better)."
    rng = np.random.default_rng(seed)
    for _ in range(n):
        g = int(rng.integers(8, 21)); ids = np.repeat(np.arange(g), rng.integers(1, 13, g))
        p = rng.beta(1.5, 0.5, g)
        y = rng.random(ids.size) < 0.5
        yield y, *(np.where(rng.random(ids.size) < np.clip(p + shift, 0, 1)[ids], y, ~y) for shift in (0, 0.05)), ids


def test_the_interval_shown_is_the_inversion_of_the_test_shown():
    "Every row of every comparison: p < 5% exactly when the 95% interval leaves out 0 (before: 9 of 200 accuracy rows disagreed)."
    disagree = []
    for k, (y, a, b, ids) in enumerate(small_studies()):
        t = compare_conditions(y, a, b, cluster=ids, n_boot=2000)
        sig = t.p_value < 0.05
        excludes = (t.ci_low > 0) | (t.ci_high < 0)
        disagree += [(k, m) for m, s, e in zip(t.metric, sig, excludes) if s != e]
    assert disagree == []


def test_the_f1_test_uses_bell_mccaffrey_degrees_of_freedom():
    "Six clusters of 1–12 rows: the t's degrees of freedom are Satterthwaite's from the matrices, not G − 1 = 5."
    sizes = np.array([1, 2, 4, 6, 9, 12]); n = sizes.sum(); rows = np.repeat(np.arange(6), sizes)
    resid = np.eye(n) - 1 / n                                   # the mean's residuals, e = (I − H)y
    quad = sum(np.outer(rows == g, rows == g) / (1 - sizes[g] / n) for g in range(6))   # CR2's Σ_g (cluster total)² / (1 − h_g)
    df = np.trace(quad @ resid) ** 2 / np.trace(quad @ resid @ quad @ resid)
    num_a, num_b = np.array([1, 1, 3, 4, 7, 9]), np.array([1, 2, 4, 5, 8, 11])     # "right" rows of two conditions
    r = cluster_diff((num_a, sizes), (num_b, sizes))
    u = (num_b - num_b.sum() / n * sizes - (num_a - num_a.sum() / n * sizes)) / n  # each cluster's share of the difference
    se = 100 * math.sqrt((u ** 2 / (1 - sizes / n)).sum())
    assert r["p_value"] == pytest.approx(2 * stats.t.sf(abs(r["diff"]) / se, df), rel=1e-9)   # before: on 5 df
    assert r["df"] == pytest.approx(df, rel=1e-9) and df < 5     # the terms' spread allows more here


def test_a_clustered_plan_reaches_its_power_with_the_test_that_runs():
    "The plan for 10 points at 30% discordance, design effect 1.5, clusters of 30: 15 clusters; the normal theory's 13 fall short."
    plan = paired_sample_size(10, 30, design_effect=1.5, cluster_size=30)
    rng = np.random.default_rng(3)
    def power(g: int, reps: int = 600) -> float:               # rows drawn one at a time, `mcnemar` itself (exact below 25 clusters)
        hits = 0
        for _ in range(reps):
            share = rng.dirichlet((1 / (0.5 / 29) - 1) * np.array([0.2, 0.1, 0.7]), g)   # ICC (deff − 1)/(m − 1)
            kind = np.concatenate([rng.choice(3, 30, p=p) for p in share])
            hits += mcnemar(kind == 1, kind == 0, cluster=np.repeat(np.arange(g), 30))["p_value"] < 0.05
        return hits / reps
    assert plan["n_clusters"] == 15 and power(plan["n_clusters"]) >= 0.78        # before: 13 clusters
    assert power(13) < 0.78


def test_compare_conditions_raises_no_deprecation_warning():
    y, a, b, ids = next(small_studies(1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)     # before: about 2,000 from scipy's bdtr with a non-integer n
        compare_conditions(y, a, b, n_boot=200)
        compare_conditions(y, a, b, cluster=ids, n_boot=200)
        paired_sample_size(10, 30)


def test_unclustered_endpoints_do_not_move_with_row_order():
    rng = np.random.default_rng(5)
    y = rng.random(300) < 0.4; s = np.round(y + rng.normal(size=300), 1)   # rounded: ties, as real scores have
    p = stats.norm.cdf(s - 0.5)
    order = rng.permutation(300)
    for f in (lambda i: auroc(y[i], s[i], n_boot=500), lambda i: calibration(y[i], p[i], n_boot=500),
              lambda i: mean_ci(s[i], n_boot=500), lambda i: correlation(s[i], p[i] + y[i], "spearman", ci="bootstrap", n_boot=500)):
        assert f(np.arange(300)) == f(order)                    # before: up to 4% of the width apart
