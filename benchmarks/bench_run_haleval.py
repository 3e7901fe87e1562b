"""Throughput of the benchmarks run from their own files: Hal-Eval discriminative and AMBER through the fake
OpenAI-compatible server (its own process) at a fixed latency with 64 requests in flight, the path a study takes
(`load_domain` on the benchmark's folder, the questions in the benchmark's words, `CachedModel` over the OpenAI
backend, parsing). Items/s against the ideal 64 / latency, and the harness's share of the wall time; the median of
several runs, each with a fresh cache. Since a loaded machine stretches wall times, also the harness's CPU ms per item
(this process: the HTTP client, the cache, parsing; the fake server's apart), which does not depend on the load, and
the rate on an idle machine it gives (asking at the ideal or at its CPU time, whichever is longer). Prints figures;
asserts nothing about time.
Run: .venv/bin/python benchmarks/bench_run_haleval.py [--runs 3] [--latency 0.2] [--records 400]"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from mmresearch.amber import run_amber
from mmresearch.cache import CachedModel, ResponseCache
from mmresearch.datasets import load_domain
from mmresearch.haleval import run_discriminative
from mmresearch.models import OpenAIChatModel

FIX = Path(__file__).resolve().parents[1]/"tests"/"fixtures"
IN_FLIGHT = 64


SIZE = [640, 480]   # COCO's usual size; --size changes it


def picture(i: int, path: Path) -> None:
    "A JPEG of SIZE that differs for every i, so no two requests share an image."
    y, x = np.mgrid[0:SIZE[1], 0:SIZE[0]]
    rgb = np.stack([(x + 7 * i) % 256, (y + 13 * i) % 256, (x + y + i) % 256], -1).astype(np.uint8)
    Image.fromarray(rgb).save(path, quality=90)


def haleval_folder(root: Path, n: int) -> Path:
    "Hal-Eval's in-domain file made of `n` records: the published excerpt's records in turn, each with its own image."
    recs = json.loads((FIX/"haleval_real/in_domain_excerpt.json").read_text())
    (root/"val2014").mkdir(parents=True)
    out = []
    for i in range(n):
        r = dict(recs[i % len(recs)], image=f"val2014/COCO_val2014_{i:012d}.jpg")
        picture(i, root/r["image"]); out.append(r)
    (root/"in_domain_evaluation.json").write_text(json.dumps(out))
    return root


def amber_folder(root: Path, n_images: int) -> Path:
    "AMBER's data/ with `n_images` images: the excerpt's queries and annotations for AMBER_1 and AMBER_2, copied to new ids and images."
    queries = json.loads((FIX/"amber/query/query_all.json").read_text())
    anns = {a["id"]: a for a in json.loads((FIX/"amber/annotations.json").read_text())}
    (root/"data/query").mkdir(parents=True); (root/"image").mkdir()
    for f in ("relation.json", "safe_words.txt"): (root/"data"/f).write_bytes((FIX/"amber"/f).read_bytes())
    q_out, a_out, next_id = [], [], 1
    for k in range(n_images):
        src = f"AMBER_{1 + k % 2}.jpg"
        picture(10_000 + k, root/"image"/f"AMBER_{k + 1}.jpg")
        for q in (q for q in queries if q["image"] == src):
            q_out.append({"id": next_id, "image": f"AMBER_{k + 1}.jpg", "query": q["query"]})
            a_out.append({**anns[q["id"]], "id": next_id}); next_id += 1
    (root/"data/query/query_all.json").write_text(json.dumps(q_out)); (root/"data/annotations.json").write_text(json.dumps(a_out))
    return root


def start_server(latency_s: float) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "mmresearch.fakeserver", "--latency", str(latency_s)], stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def process_cpu_s(pid: int) -> float:
    "User + system CPU seconds a process has used so far."
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(run, n_items: int, latency: float, server_pid: int) -> tuple[float, float, float, float]:
    "(items/s, harness share, harness CPU s, server CPU s) of one run: the share of the wall time beyond the ideal n · latency / 64."
    t0, c0, s0 = time.perf_counter(), time.process_time(), process_cpu_s(server_pid)
    run()
    wall, cpu, server = time.perf_counter() - t0, time.process_time() - c0, process_cpu_s(server_pid) - s0
    ideal = n_items * latency / IN_FLIGHT
    return n_items / wall, max(0.0, (wall - ideal) / wall), cpu, server


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3); ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--records", type=int, default=400, help="Hal-Eval records (5 captions each) and AMBER images (21 queries each) / 4")
    ap.add_argument("--size", type=int, nargs=2, default=SIZE, help="image width and height")
    a = ap.parse_args()
    SIZE[:] = a.size
    tmp = Path(tempfile.mkdtemp())
    hal, amb = haleval_folder(tmp/"haleval", a.records), amber_folder(tmp/"AMBER", a.records // 4)
    proc, base_url = start_server(a.latency)
    try:
        model = OpenAIChatModel("fake", base_url=base_url, api_key_env=None, max_concurrency=IN_FLIGHT)
        CachedModel(model, ResponseCache(tmp/"warm.sqlite")).generate([])   # nothing timed waits for first imports
        from mmresearch.core import Request, user
        model.generate([Request([user("warm-up")])])
        ideal = IN_FLIGHT / a.latency
        print(f"{a.latency * 1000:.0f} ms server latency, {IN_FLIGHT} requests in flight, {a.size[0]}x{a.size[1]} JPEG images "
              f"({(hal/'val2014'/'COCO_val2014_000000000000.jpg').stat().st_size / 1000:.0f} KB each)")
        for name, load, ask in (
            ("Hal-Eval disc (in-domain file, repo wording)", lambda: load_domain("haleval_in_domain", data_dir=hal),
             lambda samples, m: run_discriminative(samples, m, variant="repo")),
            ("AMBER (query_all: descriptions and yes/no)", lambda: load_domain("amber", data_dir=amb),
             lambda samples, m: run_amber(samples, m, max_new_tokens_gen=64)[0])):
            t0 = time.perf_counter(); samples = list(load()); t_load = time.perf_counter() - t0
            n_items = len(ask(samples, CachedModel(model, ResponseCache(tmp/f"count-{name[:5]}.sqlite"))))
            rates, shares, cpus, servers = [], [], [], []
            for k in range(a.runs):
                cached = CachedModel(model, ResponseCache(tmp/f"{name[:5]}-{k}.sqlite"))
                r, s, c, sv = timed(lambda: ask(samples, cached), n_items, a.latency, proc.pid)
                rates.append(r); shares.append(s); cpus.append(c); servers.append(sv)
            print(f"{name}: {n_items:,} items; median {statistics.median(rates):,.0f} items/s over {a.runs} runs "
                  f"({', '.join(f'{r:,.0f}' for r in rates)}) = {statistics.median(rates) / ideal:.2f} x the ideal {ideal:,.0f} "
                  f"(goal >= 0.9 x); harness share {statistics.median(shares):.1%}; loading the folder {t_load:.2f} s; "
                  f"{1000 / statistics.median(rates):.1f} s per 1,000 items")
            cpu = statistics.median(cpus)
            idle_rate = n_items / max(n_items / ideal, cpu)
            print(f"  harness CPU {1000 * cpu / n_items:.2f} ms/item (the fake server {1000 * statistics.median(servers) / n_items:.2f} "
                  f"ms/item in its own process); on an idle machine about {idle_rate:,.0f} items/s = {idle_rate / ideal:.2f} x")
    finally:
        proc.terminate(); proc.wait()
    print("loadavg:", Path("/proc/loadavg").read_text().strip(), "(2 cores)")


if __name__ == "__main__":
    main()
