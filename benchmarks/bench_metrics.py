"""Scoring speed: 100,000 discriminative rows with 1,000-resample bootstrap CIs for accuracy, precision, recall, F1,
yes-ratio and parse-failure rate; then the same rows split by hallucination type x domain, and a paired comparison of
two conditions, each also with whole clusters of 5 rows resampled (20,000 clusters, as a sample's captions or an image's
questions). Prints figures; asserts only that the numbers are sane (run: .venv/bin/python benchmarks/bench_metrics.py)."""
import time

import numpy as np
import pandas as pd

from mmresearch.metrics import binary_report, compare_conditions, metrics_by


def make_rows(n: int, seed: int = 0) -> pd.DataFrame:
    "Balanced yes/no rows as a study writes them: strings, ~3% unparseable answers of which a third are excluded."
    rng = np.random.default_rng(seed)
    label = np.where(np.arange(n) % 2 == 0, "yes", "no")
    pred = np.where(rng.random(n) < 0.8, label, np.where(label == "yes", "no", "yes")).astype(object)
    parse_ok = rng.random(n) >= 0.03
    pred[~parse_ok & (rng.random(n) < 1 / 3)] = None
    return pd.DataFrame({"label": label, "pred": pred, "parse_ok": parse_ok,
                         "type": rng.choice(["object", "attribute", "relation", "event"], n),
                         "domain": rng.choice(["in_domain", "out_of_domain"], n), "cluster": np.arange(n) // 5})


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter(); out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def main() -> None:
    n, n_boot = 100_000, 1000
    rows = make_rows(n)
    rep, dt = timed(binary_report, rows, n_boot=n_boot, seed=0)
    r = rep.set_index("metric")
    assert (r.ci_low <= r.value).all() and (r.value <= r.ci_high).all() and 79 < r.loc["accuracy", "value"] < 81
    print(rep.round(3).to_string(index=False))
    print(f"binary_report: {n:,} rows, {n_boot:,} resamples: {dt:.2f} s  [target < 10 s]")

    tab, dt = timed(metrics_by, rows, ["type", "domain"], n_boot=n_boot, seed=0)
    print(f"metrics_by type x domain ({tab[['type', 'domain']].drop_duplicates().shape[0]} groups), {n:,} rows, "
          f"{n_boot:,} resamples: {dt:.2f} s")

    other = make_rows(n, seed=1)
    cmp, dt = timed(compare_conditions, rows.label, rows.pred, other.pred, rows.parse_ok, other.parse_ok, n_boot=n_boot)
    print(f"compare_conditions (paired bootstrap + McNemar), {n:,} paired rows, {n_boot:,} resamples: {dt:.2f} s")

    crep, dt = timed(binary_report, rows, n_boot=n_boot, seed=0, cluster="cluster")
    c = crep.set_index("metric")
    assert (c.value == r.value).all() and c.n_clusters.iloc[0] == n // 5
    print(f"binary_report, clustered ({n // 5:,} clusters of 5 rows): {dt:.2f} s; accuracy CI width "
          f"{c.loc['accuracy', 'ci_high'] - c.loc['accuracy', 'ci_low']:.3f} vs {r.loc['accuracy', 'ci_high'] - r.loc['accuracy', 'ci_low']:.3f} by rows")
    _, dt = timed(compare_conditions, rows.label, rows.pred, other.pred, rows.parse_ok, other.parse_ok, n_boot=n_boot,
                  cluster=rows.cluster)
    print(f"compare_conditions, clustered ({n // 5:,} clusters): {dt:.2f} s")


if __name__ == "__main__":
    main()
