"""What the one door for inputs costs (`mmresearch.inputs`).

1. The sweep's skip check of a 10,000-image run, warm: a fresh process reads the run's manifest and checks its input
   ledger (`inputs.ledger_changes`: a stat per file, nothing hashed when size and times are unchanged). Median of
   several fresh processes; then the same with one image replaced in place (that one file is hashed again).
2. Hashing while reading: a Hal-Eval discriminative run from its files through the fake OpenAI-compatible server (its
   own process, 64 requests in flight), loading included, with the run's ledger recording every image, against the
   same run with the door's bookkeeping taken out (each image read and hashed once, as an `ImageRef` must anyway, but
   no stat and no record). Median wall time of several runs of each, interleaved, with fresh caches.
Prints figures; asserts nothing about time.
Run: .venv/bin/python benchmarks/bench_inputs.py [--images 10000] [--runs 5] [--records 400] [--latency 0.2]"""
import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).parent))
from bench_run_haleval import IN_FLIGHT, haleval_folder, start_server   # noqa: E402

import mmresearch.core as core   # noqa: E402
from mmresearch.cache import CachedModel, ResponseCache   # noqa: E402
from mmresearch.datasets import load_domain   # noqa: E402
from mmresearch.haleval import run_discriminative   # noqa: E402
from mmresearch.inputs import close_ledger, open_ledger, read_input   # noqa: E402
from mmresearch.models import OpenAIChatModel   # noqa: E402

CHECK = ("import json, sys, time; t0 = time.perf_counter(); from mmresearch.inputs import ledger_changes; "
         "t1 = time.perf_counter(); changed = ledger_changes(json.load(open(sys.argv[1]))['study']['inputs']); "
         "print(time.perf_counter() - t1, len(changed))")


def skip_check(n: int, runs: int, tmp: Path) -> None:
    "Record `n` images in a ledger as a run does, then time the warm check in fresh processes."
    folder = tmp/"images"; folder.mkdir()
    rng = np.random.default_rng(0)
    for i in range(n): Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(folder/f"{i:05d}.png")
    ledger = open_ledger([])
    t0 = time.perf_counter()
    for p in sorted(folder.iterdir()): read_input(p, folder)
    record_s = time.perf_counter() - t0
    manifest = tmp/"manifest.json"; manifest.write_text(json.dumps({"study": {"inputs": ledger.manifest()}})); close_ledger()
    def check() -> tuple[float, int]:
        out = subprocess.run([sys.executable, "-c", CHECK, str(manifest)], capture_output=True, text=True, check=True).stdout.split()
        return float(out[0]), int(out[1])
    warm = [check() for _ in range(runs)]
    assert all(c == 0 for _, c in warm)
    first = folder/"00000.png"
    Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(first)   # replaced in place
    changed = [check() for _ in range(runs)]
    assert all(c == 1 for _, c in changed)
    print(f"skip check of a {n:,}-image run (manifest {manifest.stat().st_size / 1e6:.1f} MB): median "
          f"{statistics.median(t for t, _ in warm):.3f} s warm over {runs} fresh processes "
          f"({', '.join(f'{t:.3f}' for t, _ in warm)}; goal <= 2 s), one image replaced: "
          f"{statistics.median(t for t, _ in changed):.3f} s; recording the {n:,} reads in the run: {record_s:.2f} s")


def plain_read(path, root=None, what=""):
    "The read an ImageRef needs anyway (bytes and their SHA-256), without the door's stat and record."
    data = Path(path).read_bytes()
    return data, hashlib.sha256(data).hexdigest()


def run_overhead(records: int, runs: int, latency: float, tmp: Path) -> None:
    "Wall time of a Hal-Eval run through the fake server with and without the ledger's bookkeeping."
    hal = haleval_folder(tmp/"haleval", records)
    proc, base_url = start_server(latency)
    door = core.read_input_hashed
    try:
        model = OpenAIChatModel("fake", base_url=base_url, api_key_env=None, max_concurrency=IN_FLIGHT)
        times: dict[str, list[float]] = {"ledger": [], "no ledger": []}
        for k in range(runs):
            for mode in times:
                core.read_input_hashed = door if mode == "ledger" else plain_read
                ledger = open_ledger([]) if mode == "ledger" else close_ledger()
                t0 = time.perf_counter()
                samples = list(load_domain("haleval_in_domain", data_dir=hal))
                rows = run_discriminative(samples, CachedModel(model, ResponseCache(tmp/f"{mode}-{k}.sqlite")), variant="repo")
                times[mode].append(time.perf_counter() - t0)
                if ledger is not None: assert len(ledger.files) >= records
        core.read_input_hashed = door
        with_, without = statistics.median(times["ledger"]), statistics.median(times["no ledger"])
        print(f"Hal-Eval disc, {records} records ({len(rows):,} questions) through the fake server at {latency * 1000:.0f} ms, "
              f"{IN_FLIGHT} in flight, loading included: median {with_:.2f} s with the ledger, {without:.2f} s without "
              f"({(with_ / without - 1):+.1%}; goal <= +5%) over {runs} runs each "
              f"(with: {', '.join(f'{t:.2f}' for t in times['ledger'])}; without: {', '.join(f'{t:.2f}' for t in times['no ledger'])})")
    finally:
        core.read_input_hashed = door
        proc.terminate(); proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=10_000); ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--records", type=int, default=400); ap.add_argument("--latency", type=float, default=0.2)
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    skip_check(a.images, a.runs, tmp)
    run_overhead(a.records, a.runs, a.latency, tmp)
    print("loadavg:", Path("/proc/loadavg").read_text().strip(), "(2 cores)")


if __name__ == "__main__":
    main()
