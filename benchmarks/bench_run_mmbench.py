"""MMBench from its TSV through a server: the study's own path (the TSV loaded through the domain registry, every pass
asked in VLMEvalKit's wording through the cache, the extraction chain and CircularEval, the VLMEvalKit-layout results
file) against the fake OpenAI-compatible server with a fixed latency and 64 requests in flight. Prints items/s against
the ideal (every wave of 64 requests takes exactly the latency; goal >= 0.9x), the harness's share of the wall time and
the time per 1,000 items; and, since a loaded machine stretches wall times, the harness's CPU seconds per item (this
process: loading, the HTTP client, the cache, scoring; and the server's apart), which do not depend on the load, with
the wall time they give on an idle machine (the serial stages at their CPU time, asking at the ideal or its CPU time,
whichever is longer). Asserts nothing about time.
Run: .venv/bin/python benchmarks/bench_run_mmbench.py [--items 500] [--latency 0.2] [--repeats 3]"""
import argparse
import base64
import io
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from mmresearch.cache import CachedModel, ResponseCache
from mmresearch.core import Request, user
from mmresearch.mmbench import score_passes
from mmresearch.mmbench_tsv import pass_request, study_passes, write_vlmevalkit_results
from mmresearch.models import OpenAIChatModel


def write_tsv(path: Path, n_items: int, side: int = 128) -> None:
    "An MMBench-layout TSV: n four-option items with a hint, each with its three circular copies (image by reference)."
    rng = np.random.default_rng(0)
    rows = []
    for i in range(n_items):
        buf = io.BytesIO(); Image.fromarray(rng.integers(0, 256, (side, side, 3), dtype=np.uint8)).save(buf, format="PNG")
        texts = [f"option {j} of item {i}" for j in range(4)]
        for k in range(4):
            rows.append({"index": i + k * 1_000_000, "question": f"Which option is right for item {i}?", "hint": f"Hint {i}.",
                         **{c: texts[(j + k) % 4] for j, c in enumerate("ABCD")}, "answer": "ABCD"[(i % 4 - k) % 4],
                         "category": f"cat{i % 5}", "l2-category": f"l2_{i % 2}",
                         "image": base64.b64encode(buf.getvalue()).decode() if k == 0 else str(i)})
    pd.DataFrame(rows).to_csv(path, sep="\t", index=False)


def process_cpu_s(pid: int) -> float:
    "User + system CPU seconds a process has used so far."
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(tsv: Path, base_url: str, server_pid: int, tmp: Path, run: int) -> dict:
    "Wall and CPU time of each stage of the study's path, one fresh cache."
    t0, c0 = time.perf_counter(), time.process_time()
    passes, entry = study_passes("mmbench_tsv", None, data=tsv)
    t1, c1, s1 = time.perf_counter(), time.process_time(), process_cpu_s(server_pid)
    model = CachedModel(OpenAIChatModel("fake", base_url=base_url, api_key_env=None, max_concurrency=64), ResponseCache(tmp/f"c{run}.sqlite"))
    responses = model.generate([pass_request(p, "vlmevalkit", 16) for p in passes])
    t2, c2, s2 = time.perf_counter(), time.process_time(), process_cpu_s(server_pid)
    assert all(r.ok for r in responses), [r.error for r in responses if not r.ok][:3]
    result = score_passes(passes, responses, n_boot=200)
    write_vlmevalkit_results(passes, responses, tmp/f"pred{run}.tsv")
    t3, c3 = time.perf_counter(), time.process_time()
    return {"items": entry["n_items"], "passes": len(passes), "load": t1 - t0, "ask": t2 - t1, "score_write": t3 - t2, "wall": t3 - t0,
            "cpu_load": c1 - c0, "cpu_ask": c2 - c1, "cpu_score_write": c3 - c2, "cpu_server": s2 - s1,
            "circular": result.metrics["circular"]["accuracy"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=500); ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    tsv = tmp/"MMBench_bench.tsv"; write_tsv(tsv, args.items)
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    proc = subprocess.Popen([sys.executable, "-m", "mmresearch.fakeserver", "--latency", str(args.latency)], stdout=subprocess.PIPE, text=True)
    base_url = proc.stdout.readline().strip()
    try:
        warm = OpenAIChatModel("fake", base_url=base_url, api_key_env=None)
        warm.generate([Request([user("warm-up")])])   # first use imports the openai package: not timed
        runs = [one_run(tsv, base_url, proc.pid, tmp, r) for r in range(args.repeats)]
    finally:
        proc.terminate(); proc.wait()
    load_after = Path("/proc/loadavg").read_text().split()[:3]
    items, passes = runs[0]["items"], runs[0]["passes"]
    ideal_s = math.ceil(passes / 64) * args.latency           # every wave of 64 requests takes exactly the latency
    wall = statistics.median(r["wall"] for r in runs)
    ask = statistics.median(r["ask"] for r in runs)
    walls = ", ".join(f"{r['wall']:.2f}" for r in runs)
    print(f"MMBench study path, {items} items ({passes} passes, {tsv.stat().st_size / 1e6:.1f} MB TSV), {args.latency * 1000:.0f} ms latency, "
          f"64 in flight, median of {len(runs)} runs (walls {walls} s)")
    print(f"  stages (median): load {statistics.median(r['load'] for r in runs):.2f} s, ask {ask:.2f} s, "
          f"score + results file {statistics.median(r['score_write'] for r in runs):.2f} s")
    print(f"  end to end: {items / wall:.1f} items/s against the ideal {items / ideal_s:.1f} items/s: {ideal_s / wall:.2f}x "
          f"(goal >= 0.9x); asking alone {ideal_s / ask:.2f}x")
    print(f"  harness share of the wall time: {1 - ideal_s / wall:.1%}; time per 1,000 items: {1000 * wall / items:.1f} s "
          f"(ideal {1000 * ideal_s / items:.1f} s)")
    med = {k: statistics.median(r[k] for r in runs) for k in ("cpu_load", "cpu_ask", "cpu_score_write", "cpu_server")}
    print(f"  harness CPU per item (median): load {1000 * med['cpu_load'] / items:.2f} ms, ask {1000 * med['cpu_ask'] / items:.2f} ms "
          f"(HTTP client, cache), score + results file {1000 * med['cpu_score_write'] / items:.2f} ms; total "
          f"{1000 * (med['cpu_load'] + med['cpu_ask'] + med['cpu_score_write']) / items:.2f} ms/item; the fake server "
          f"{1000 * med['cpu_server'] / items:.2f} ms/item in its own process")
    idle = med["cpu_load"] + max(ideal_s, med["cpu_ask"]) + med["cpu_score_write"]
    print(f"  on an idle machine (serial stages at their CPU time, asking at max(ideal, its CPU time)): about {idle:.2f} s, "
          f"{items / idle:.1f} items/s = {ideal_s / idle:.2f}x; asking alone {ideal_s / max(ideal_s, med['cpu_ask']):.2f}x")
    print(f"  /proc/loadavg before {' '.join(load_before)}, after {' '.join(load_after)} (2 cores)")


if __name__ == "__main__":
    main()
