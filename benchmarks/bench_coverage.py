"""Coverage and size of the clustered intervals and tests, by simulation (not a timed test; run:
.venv/bin/python benchmarks/bench_coverage.py [reps]).

Settings: 10, 20, 30, 50 and 100 clusters of 2–8 rows (uniform), ICC 0, 0.1, 0.25 and 0.5 (each cluster's chance of a
right answer drawn from a Beta with mean 0.8 and that intra-cluster correlation), balanced yes/no labels, so the true
accuracy and F1 are both 80%. Per setting it prints the coverage of `binary_report`'s 95% intervals for accuracy and F1
(clustered by the cluster column) and the size of `compare_conditions`' tests at 5% for two conditions with the same
truth (accuracy: the clustered McNemar test; F1: the cluster-robust t test). With 1,000 replications per setting the
Monte Carlo error of a coverage of 95% is ±1.4 points (95% interval, 1.96·√(0.95·0.05/1000)) and of a size of 5% ±1.4
points. Goal: coverage 93–97% and size ≤ 6% in every setting."""
import sys
import time

import numpy as np
import pandas as pd

from mmresearch.metrics import BINARY_METRICS, N_CODES, _cluster_intervals, binary_codes, cluster_diff, mcnemar, ratio_parts

CLUSTERS, ICCS, ACCURACY = (10, 20, 30, 50, 100), (0.0, 0.1, 0.25, 0.5), 0.8


def simulate(g: int, icc: float, rng: np.random.Generator) -> pd.DataFrame:
    "One dataset: g clusters of 2–8 rows, labels, and two conditions' predictions drawn from the same cluster accuracies."
    sizes = rng.integers(2, 9, g)
    if icc > 0: p = rng.beta(ACCURACY * (1 / icc - 1), (1 - ACCURACY) * (1 / icc - 1), g)
    else: p = np.full(g, ACCURACY)
    cluster = np.repeat(np.arange(g), sizes)
    label = rng.random(cluster.size) < 0.5
    right_a, right_b = (rng.random(cluster.size) < p[cluster] for _ in range(2))
    return pd.DataFrame({"cluster": cluster, "label": label, "pred": np.where(right_a, label, ~label),
                         "pred_b": np.where(right_b, label, ~label)})


def setting(g: int, icc: float, reps: int, seed: int) -> dict:
    "Coverage and size (%) in one setting. Calls the functions `binary_report` and `compare_conditions` use for clustered"
    "rows (`_cluster_intervals`, `mcnemar`, `cluster_diff`) directly: the tables' own pandas work would take the time."
    rng = np.random.default_rng(seed)
    hits = {"cover_accuracy": 0, "cover_f1": 0, "reject_accuracy": 0, "reject_f1": 0}
    at = {m: i for i, m in enumerate(BINARY_METRICS)}
    for _ in range(reps):
        d = simulate(g, icc, rng)
        ids = d.cluster.to_numpy()
        codes_a, codes_b = binary_codes(d.label, d.pred), binary_codes(d.label, d.pred_b)
        ivs = _cluster_intervals(codes_a, ids, 0.95)
        for m in ("accuracy", "f1"): hits[f"cover_{m}"] += ivs[at[m]][0] <= 100 * ACCURACY <= ivs[at[m]][1]
        right = lambda c: np.isin(c // 3, (0, 2))
        hits["reject_accuracy"] += mcnemar(right(codes_a), right(codes_b), cluster=ids)["p_value"] < 0.05
        per = lambda c: ratio_parts(np.bincount(ids * N_CODES + c, minlength=g * N_CODES).reshape(g, N_CODES))["f1"]
        hits["reject_f1"] += cluster_diff(per(codes_a), per(codes_b))["p_value"] < 0.05
    return {"clusters": g, "icc": icc, **{k: 100 * v / reps for k, v in hits.items()}}


def main(reps: int = 1000) -> None:
    t0, rows = time.perf_counter(), []
    for i, g in enumerate(CLUSTERS):
        for j, icc in enumerate(ICCS):
            rows.append(setting(g, icc, reps, seed=100 * i + j))
            print(pd.DataFrame(rows[-1:]).round(1).assign(icc=icc).to_string(index=False, header=len(rows) == 1), flush=True)
    t = pd.DataFrame(rows)
    cover, size = t[["cover_accuracy", "cover_f1"]], t[["reject_accuracy", "reject_f1"]]
    print(f"\n{reps:,} replications per setting (Monte Carlo error ±{196 * np.sqrt(0.95 * 0.05 / reps):.1f} points "
          f"for coverage, ±{196 * np.sqrt(0.05 * 0.95 / reps):.1f} for size); {time.perf_counter() - t0:.0f} s")
    print(f"coverage {cover.min().min():.1f}–{cover.max().max():.1f}% [goal 93–97]; "
          f"size {size.min().min():.1f}–{size.max().max():.1f}% [goal ≤ 6]")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
