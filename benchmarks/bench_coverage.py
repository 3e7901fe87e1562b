"""Coverage and size of the few-cluster intervals and tests, by simulation (not a timed test; run:
nice -n 10 .venv/bin/python benchmarks/bench_coverage.py [reps] [--plans-only | --candidates | --paired-coverage]).

Designs (issue 42): 10, 12, 15, 20, 30, 50 and 100 clusters whose sizes are 2–8 rows or 1–20 rows, and 10, 15, 30 and
50 clusters of 1–20 rows one of which holds 90% of all rows ("dominant"); intra-cluster correlation 0, 0.1, 0.25 and 0.5. Yes/no rows: each
cluster's chance of a right answer is drawn from a Beta with mean 0.8 and that ICC, labels are balanced, so the true
accuracy and F1 are both 80%. AUROC rows: a positive scores Δ_g + e and a negative c_g + e, with cluster effects Δ_g ~
N(Δ, τ²) and c_g ~ N(0, τ²) (ICC τ²/(1 + τ²) within each class; a pair's two effects are independent, so pairs within
and across clusters share one AUROC, Φ(Δ / √(2 + 2τ²)) = 0.8). Per setting it prints the coverage of the 95% intervals
`binary_report` gives on clusters (accuracy, F1: `cluster_ratio_ci`) and `auroc` (`cluster_auroc_ci`), the size at 5% of
`compare_conditions`' tests for two conditions with the same truth (accuracy: `mcnemar` at 0, inverted for the interval;
F1: the CR2 t), how often a row is flagged `few_clusters`, and how often a comparison's interval and p-value disagree
(never, by construction). The functions the tables call for clustered rows are called directly: the tables' own pandas
work would take the time. With R replications per setting the Monte Carlo error (95%) of a coverage of 95% and of a size
of 5% is ±1.96·√(0.95·0.05/R) points (±0.96 at R = 2,000). Goal: coverage 93–97% and size ≤ 6% in every setting from 10
clusters; the dominant-cluster rows are flagged instead.

`--candidates` prints the comparison that chose the intervals: in the settings that decided it, the coverage of the
interval before issue 42 (Wilson at the capped effective n, the normal quantile at the cap; AUROC's percentile cluster
bootstrap), of Wilson at the CR2 sandwich's design effect alone, at the one-way ANOVA's alone, at their mean, at the
larger of the two (each with the t on `cluster_df`), at the ANOVA's raised half-way to the sandwich's when that is larger
(issue 42's first version: "no floor"), the same floored at 1 with the t ("floor, t"), and floored with the quantile
easing to the normal's as D nears 1 (shipped); for accuracy, also the coverage among the data sets whose estimated
design effect is below 1.

`--paired-coverage` prints the coverage of the accuracy difference's interval when B is truly better (each cluster's
chance of a right answer 5 points higher, capped at 1): the sign flip is exact only where there is no difference.

Then `paired_sample_size`'s clustered plans are checked: each plan's number of clusters, simulated afresh (other seeds,
10,000 studies) with the test that runs, against the normal theory's rows × design effect (the plan before issue 42)."""
import math
import sys
import time

import numpy as np
import pandas as pd
from scipy import stats

from mmresearch.metrics import (FEW_CLUSTERS, _accuracy_test, _cluster_auc_boot, cluster_auroc_ci, cluster_balances, cluster_diff,
                                cluster_power, cluster_ratio_ci, effective_clusters, paired_sample_size, percentile_ci,
                                ratio_variance_parts, wilson_ci)

DESIGNS, CLUSTERS, ICCS, TRUTH, LEVEL = ("2–8", "1–20", "dominant"), (10, 12, 15, 20, 30, 50, 100), (0.0, 0.1, 0.25, 0.5), 0.8, 0.95
DOMINANT_CLUSTERS = (10, 15, 30, 50)   # its data sets hold up to 10,000 rows; the table stops at 50 clusters there


def cluster_sizes(design: str, g: int, rng: np.random.Generator) -> np.ndarray:
    "Rows per cluster: uniform 2–8, uniform 1–20, or 1–20 with the first cluster holding 90% of all rows."
    if design == "2–8": return rng.integers(2, 9, g)
    m = rng.integers(1, 21, g)
    if design == "dominant": m[0] = 9 * m[1:].sum()
    return m


def yes_no_counts(m: np.ndarray, icc: float, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    "Per cluster: positives, and the true positives and true negatives of two conditions drawn from the same cluster accuracies."
    p = rng.beta(TRUTH * (1 / icc - 1), (1 - TRUTH) * (1 / icc - 1), len(m)) if icc > 0 else np.full(len(m), TRUTH)
    pos = rng.binomial(m, 0.5)
    return pos, *(rng.binomial(n, p) for _ in range(2) for n in (pos, m - pos))


def auroc_rows(m: np.ndarray, icc: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    "Labels, scores and cluster ids of one AUROC data set (see the module's text)."
    tau = math.sqrt(icc / (1 - icc)); delta = stats.norm.ppf(TRUTH) * math.sqrt(2 + 2 * tau * tau)
    ids = np.repeat(np.arange(len(m)), m)
    y = rng.random(ids.size) < 0.5
    shift = np.where(y, rng.normal(delta, tau, len(m))[ids], rng.normal(0, tau, len(m))[ids])
    return y, shift + rng.normal(size=ids.size), ids


def setting(design: str, g: int, icc: float, reps: int, seed: int) -> dict:
    "Coverage, size, flags and disagreements (%) in one setting."
    rng = np.random.default_rng(seed)
    hits = dict.fromkeys(["cover_accuracy", "cover_f1", "cover_auroc", "size_accuracy", "size_f1", "flagged", "disagree"], 0)
    for _ in range(reps):
        m = cluster_sizes(design, g, rng)
        pos, tp_a, tn_a, tp_b, tn_b = yes_no_counts(m, icc, rng)
        acc = lambda tp, tn: (tp + tn, m)
        f1 = lambda tp, tn: (2 * tp, 2 * tp + (m - pos - tn) + (pos - tp))
        for name, parts in (("accuracy", acc(tp_a, tn_a)), ("f1", f1(tp_a, tn_a))):
            _, lo, hi = cluster_ratio_ci(*parts, LEVEL, unit=2 if name == "f1" else 1)
            hits[f"cover_{name}"] += lo <= TRUTH <= hi
        hits["flagged"] += effective_clusters(m) < FEW_CLUSTERS
        a = _accuracy_test(tp_a + tn_a, tp_b + tn_b, m.astype(float), True, LEVEL)
        t = cluster_diff(f1(tp_a, tn_a), f1(tp_b, tn_b), LEVEL)
        for name, p, lo, hi in (("accuracy", a["p_value"], a["ci_low"], a["ci_high"]), ("f1", t["p_value"], t["ci_low"], t["ci_high"])):
            hits[f"size_{name}"] += p < 1 - LEVEL
            hits["disagree"] += (p < 1 - LEVEL) != (lo > 0 or hi < 0)
        y, s, ids = auroc_rows(m, icc, rng)
        if y.all() or not y.any(): lo = hi = math.nan
        else: lo, hi = cluster_auroc_ci(y, s, ids, LEVEL)
        hits["cover_auroc"] += lo <= TRUTH <= hi
    return {"design": design, "clusters": g, "icc": icc, **{k: 100 * v / reps for k, v in hits.items()}}


def ratio_candidates(num: np.ndarray, den: np.ndarray, unit: float) -> tuple[dict, float]:
    "The one-sample intervals compared when choosing (0–1), and the estimated design effect max(A, (A + S)/2) before any floor."
    p = ratio_variance_parts(num, den, unit)
    r, shipped = p["value"], cluster_ratio_ci(num, den, LEVEL, unit)[1:]
    names = ["before", "sandwich", "anova", "mean", "larger", "no floor", "floor, t", "shipped"]
    if not 0 < r < 1 or p["sandwich"] == 0: return dict.fromkeys(names, shipped), math.nan
    z, t = stats.norm.ppf(0.975), stats.t.ppf(0.975, p["df"])
    at = lambda deff, q: wilson_ci(r, r * (1 - r) * p["total"] ** 2 / (deff * p["rows"]), q)
    n_eff = p["total"] / (p["sandwich"] * p["rows"] / (r * (1 - r) * p["total"]))   # before: Wilson at min(n_eff, n), t(G − 1), z at the cap
    before = wilson_ci(r, p["total"], z) if n_eff >= p["total"] else wilson_ci(r, n_eff, stats.t.ppf(0.975, p["g"] - 1))
    a, sw = p["anova"], p["sandwich"]
    deff = max(a, (a + sw) / 2)
    return {"before": before, "sandwich": at(sw, t), "anova": at(max(a, 1e-9), t), "mean": at((sw + a) / 2, t), "larger": at(max(sw, a), t),
            "no floor": at(deff, t), "floor, t": at(max(1.0, deff), t), "shipped": shipped}, deff


def candidates(reps: int = 2000) -> pd.DataFrame:
    "Coverage (%) of the candidate intervals in the settings that decided the choice: accuracy, F1 and AUROC; accuracy's also where D̂ < 1."
    rows = []
    for design, g, icc in [("1–20", 10, 0.0), ("1–20", 10, 0.5), ("1–20", 15, 0.5), ("2–8", 10, 0.0), ("2–8", 30, 0.0), ("dominant", 30, 0.25)]:
        rng, hits, below = np.random.default_rng(7 + g), {}, 0
        for _ in range(reps):
            m = cluster_sizes(design, g, rng)
            pos, tp, tn, *_ = yes_no_counts(m, icc, rng)
            for metric, num, den, unit in (("accuracy", tp + tn, m, 1), ("f1", 2 * tp, 2 * tp + (m - pos - tn) + (pos - tp), 2)):
                intervals, deff = ratio_candidates(num.astype(float), den.astype(float), unit)
                for name, (lo, hi) in intervals.items():
                    hits[f"{metric}: {name}"] = hits.get(f"{metric}: {name}", 0) + (lo <= TRUTH <= hi)
                if metric == "accuracy" and deff < 1:
                    below += 1
                    for name in ("no floor", "shipped"):
                        hits[f"accuracy, D̂ < 1: {name}"] = hits.get(f"accuracy, D̂ < 1: {name}", 0) + (intervals[name][0] <= TRUTH <= intervals[name][1])
            y, s, ids = auroc_rows(m, icc, rng)
            if y.all() or not y.any(): continue
            boot = percentile_ci(_cluster_auc_boot(y, s, ids, 1000, 0), LEVEL)        # before: percentile cluster bootstrap
            for name, (lo, hi) in (("auroc: before", boot), ("auroc: shipped", cluster_auroc_ci(y, s, ids, LEVEL))):
                hits[name] = hits.get(name, 0) + (lo <= TRUTH <= hi)
        rows.append({"design": design, "clusters": g, "icc": icc, "accuracy: % with D̂ < 1": 100 * below / reps,
                     **{k: 100 * v / (below if "D̂ < 1" in k else reps) for k, v in hits.items()}})
    return pd.DataFrame(rows).set_index(["design", "clusters", "icc"]).T


def paired_coverage(reps: int = 2000, shift: float = 0.05) -> pd.DataFrame:
    "Coverage (%) of the accuracy difference's interval when B is truly better: each cluster's chance of a right answer +5 points (capped at 1)."
    rows = []
    for design, g, icc in [("1–20", 10, 0.0), ("1–20", 10, 0.5), ("1–20", 15, 0.5), ("1–20", 30, 0.25), ("2–8", 15, 0.5), ("2–8", 50, 0.0),
                           ("rows", 40, 0.0), ("rows", 100, 0.0)]:
        rng = np.random.default_rng(5 + g)
        draw = lambda k: rng.beta(TRUTH * (1 / icc - 1), (1 - TRUTH) * (1 / icc - 1), k) if icc > 0 else np.full(k, TRUTH)
        p = draw(2_000_000); truth = float(np.mean(np.minimum(p + shift, 1) - p))   # the true difference, capped clusters included
        hits = 0
        for _ in range(reps):
            m = np.ones(g, int) if design == "rows" else cluster_sizes(design, g, rng)
            p = draw(g)
            a = _accuracy_test(rng.binomial(m, p).astype(float), rng.binomial(m, np.minimum(p + shift, 1)).astype(float), m.astype(float), design != "rows", LEVEL)
            hits += a["ci_low"] <= truth <= a["ci_high"]
        rows.append({"design": design, "clusters (rows)": g, "icc": icc, "true difference": 100 * truth, "coverage": 100 * hits / reps})
    return pd.DataFrame(rows)


def power_plans(reps: int = 10_000) -> pd.DataFrame:
    "Clustered plans of `paired_sample_size` and the normal theory's, each simulated afresh with the test that runs."
    rows = []
    for effect, disc, deff, m in [(10, 30, 1.5, 30), (10, 20, 2, 40), (5, 10, 1.5, 40), (10, 30, 2, 20), (20, 40, 4, 12),
                                  (30, 50, 3, 8), (8, 12, 2, 30), (10, 30, 2, 4)]:
        plan = paired_sample_size(effect, disc, design_effect=deff, cluster_size=m)
        rows_plan = paired_sample_size(effect, disc)["n"]         # the rows' plan: exact power of the test on rows
        normal = math.ceil(round(deff * rows_plan / m, 6))          # the plan before issue 42: rows × design effect
        power = {g: cluster_power(cluster_balances(g, m, disc, effect, deff, reps, seed=1000 + g)) for g in {plan["n_clusters"], normal}}
        rows.append({"effect": effect, "discordance": disc, "design_effect": deff, "cluster_size": m,
                     "clusters": plan["n_clusters"], "power": 100 * power[plan["n_clusters"]],
                     "normal_theory_clusters": normal, "its_power": 100 * power[normal]})
    return pd.DataFrame(rows)


def main(reps: int = 2000) -> None:
    t0, rows = time.perf_counter(), []
    for i, design in enumerate(DESIGNS):
        for j, g in enumerate(DOMINANT_CLUSTERS if design == "dominant" else CLUSTERS):
            for k, icc in enumerate(ICCS):
                rows.append(setting(design, g, icc, reps, seed=1000 * i + 10 * j + k))
                print(pd.DataFrame(rows[-1:]).round(1).assign(icc=icc).to_string(index=False, header=len(rows) == 1), flush=True)
    t = pd.DataFrame(rows)
    mc = 196 * math.sqrt(0.95 * 0.05 / reps)
    print(f"\n{reps:,} replications per setting (Monte Carlo error ±{mc:.2f} points for a coverage of 95% and for a size "
          f"of 5%); {time.perf_counter() - t0:.0f} s")
    cover, size = ["cover_accuracy", "cover_f1", "cover_auroc"], ["size_accuracy", "size_f1"]
    for name, part in (("not dominant", t[t.design != "dominant"]), ("dominant (flagged)", t[t.design == "dominant"])):
        print(f"{name}: coverage {part[cover].min().min():.1f}–{part[cover].max().max():.1f}% [goal 93–97]; "
              f"size {part[size].min().min():.1f}–{part[size].max().max():.1f}% [goal ≤ 6]; flagged {part.flagged.min():.0f}–"
              f"{part.flagged.max():.0f}%; interval and p-value disagree {part.disagree.max():.0f}%")
    summary = t.groupby(["design", "clusters"], sort=False).agg(
        **{f"{c.split('_')[1]} coverage": (c, lambda v: f"{v.min():.1f}–{v.max():.1f}") for c in cover},
        **{f"{c.split('_')[1]} size": (c, lambda v: f"{v.max():.1f}") for c in size}, **{"% flagged": ("flagged", "mean")})
    print("\nPer design and number of clusters, over the four ICCs (coverage min–max, size max, % flagged):")
    print(summary.round(0).reset_index().to_markdown(index=False))
    plans = power_plans()
    print("\npaired_sample_size's clustered plans, simulated afresh (10,000 studies; ±0.8 points):")
    print(plans.round(1).to_markdown(index=False))


if __name__ == "__main__":
    if "--plans-only" in sys.argv: print(power_plans().round(1).to_markdown(index=False))
    elif "--candidates" in sys.argv: print(candidates().round(1).to_markdown())
    elif "--paired-coverage" in sys.argv: print(paired_coverage().round({"true difference": 1, "coverage": 1}).to_markdown(index=False))
    else: main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
