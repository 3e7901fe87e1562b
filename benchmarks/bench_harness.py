"""Harness throughput: the scripted model through the cache, the OpenAI backend against a slow local server, and a
second pass served from cache. Prints figures; asserts nothing about time (run: .venv/bin/python benchmarks/bench_harness.py)."""
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PIL import Image

from mmresearch.cache import CachedModel, ResponseCache
from mmresearch.core import ImageRef, Request, user
from mmresearch.models import OpenAIChatModel, ScriptedModel


def scripted_through_cache(n: int, db: Path) -> float:
    "Requests per second, end to end (request building, fingerprints, cache look-up and writes) with a scripted model."
    t0 = time.perf_counter()
    reqs = [Request([user(f"Is there a red circle number {i}? Answer yes or no.")], max_new_tokens=4) for i in range(n)]
    out = CachedModel(ScriptedModel("coin", batch_size=1024), ResponseCache(db)).generate(reqs)
    assert all(o.ok for o in out)
    return n / (time.perf_counter() - t0)


def start_server(latency_s: float) -> tuple[subprocess.Popen, str]:
    "The fake server in its own process, so its threads do not compete with the client for the interpreter."
    proc = subprocess.Popen([sys.executable, "-m", "mmresearch.fakeserver", "--latency", str(latency_s)], stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def main() -> None:
    tmp = Path(tempfile.mkdtemp())
    n = 20_000
    rate = scripted_through_cache(n, tmp/"scripted.sqlite")
    print(f"scripted model through the cache, fresh: {rate:,.0f} requests/s ({n:,} requests)  [target >= 2,000]")
    print(f"scripted model, second pass (all hits): {scripted_through_cache(n, tmp/'scripted.sqlite'):,.0f} requests/s")

    proc, base_url = start_server(0.2)
    try:
        img = ImageRef(Image.new("RGB", (64, 64), "red"))
        reqs = [Request([user(img, f"describe image {i}")], max_new_tokens=16) for i in range(4096)]
        model = OpenAIChatModel("fake", base_url=base_url, api_key_env=None, max_concurrency=64)
        model.generate([Request([user(img, "warm-up")])])  # first use imports the openai package (seconds): not timed
        cached = CachedModel(model, ResponseCache(tmp/"server.sqlite"))
        t0 = time.perf_counter(); out = cached.generate(reqs); dt = time.perf_counter() - t0
        assert all(o.ok for o in out), [o.error for o in out if not o.ok][:3]
        ideal = 64 / 0.2
        print(f"OpenAI backend, 200 ms server latency, 64 in flight: {len(reqs) / dt:,.0f} requests/s "
              f"({len(reqs) / dt / ideal:.2f} x the ideal {ideal:.0f}; target >= 0.9 x = {0.9 * ideal:.0f})")
        again = CachedModel(model, ResponseCache(tmp/"server.sqlite"))
        t0 = time.perf_counter(); again.generate(reqs); dt = time.perf_counter() - t0
        print(f"second pass: {again.stats.hits} hits, {again.stats.calls} server calls, {len(reqs) / dt:,.0f} requests/s")
    finally:
        proc.terminate(); proc.wait()


if __name__ == "__main__":
    main()
