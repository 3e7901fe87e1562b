"""Benchmark: text-to-image generation through `t2i_generate.generate_cached`. Prints seconds per image (median, min,
max over several runs) of the tests' tiny random Stable Diffusion pipeline (tests/make_tiny_diffusers.py: 2 steps,
32x32, CPU), the time of a fully cached run (no pipeline call, the folder hash included), the throughput of the fake
OpenAI-compatible images endpoint at 200 ms latency with 64 requests in flight against the ideal 64 / 0.2 s = 320
images/s (the server runs in its own process, as in bench_harness.py), and the load average before and after.

    .venv/bin/python benchmarks/bench_t2i_generate.py [--runs 7] [--endpoint-prompts 2048] [--skip-pipeline]

The pipeline figures need the optional extra `t2i` (diffusers). The machine is shared: the figures are wall-clock
under whatever else runs.
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]/"tests"))
from mmresearch.t2i_generate import DiffusersGenerator, ImageStore, OpenAIImagesGenerator, generate_cached
from mmresearch.t2i_judge import T2IPrompt, load_prompts

FIXTURE = Path(__file__).resolve().parents[1]/"tests"/"fixtures"/"t2i_compbench"/"color_val.txt"
SETTINGS = {"num_inference_steps": 2, "height": 32, "width": 32}
LATENCY_S, IN_FLIGHT = 0.2, 64


def per_image(gen, prompts, settings: dict, runs: int) -> list[float]:
    "Seconds per image of `runs` runs, each into an empty store with its own seed (so nothing is cached)."
    out = []
    for r in range(runs):
        t = time.perf_counter()
        generate_cached(prompts, gen, ImageStore(tempfile.mkdtemp()), seed=r, settings=settings)
        out.append((time.perf_counter() - t) / len(prompts))
    return out


def show(name: str, xs: list[float]) -> None:
    print(f"{name}: median {statistics.median(xs):.4f} s/image (min {min(xs):.4f}, max {max(xs):.4f}, {len(xs)} runs)")


def pipeline_figures(runs: int) -> None:
    "The tiny diffusers pipeline: per image, and a fully cached run."
    from make_tiny_diffusers import make_tiny_pipeline
    prompts = load_prompts(FIXTURE)
    folder = make_tiny_pipeline(Path(tempfile.mkdtemp())/"tiny-sd")
    gen = DiffusersGenerator(folder); gen.pipeline()                 # loaded once, outside the timing
    show(f"tiny pipeline, {len(prompts)} T2I-CompBench prompts", per_image(gen, prompts, SETTINGS, runs))
    store = ImageStore(tempfile.mkdtemp()); generate_cached(prompts, gen, store, settings=SETTINGS)
    cached = []
    for _ in range(runs):
        t = time.perf_counter(); generate_cached(prompts, DiffusersGenerator(folder), store, settings=SETTINGS)
        cached.append(time.perf_counter() - t)
    print(f"fully cached run of {len(prompts)} prompts (folder hash included): median {statistics.median(cached):.4f} s")


def endpoint_figures(n: int, runs: int) -> None:
    "Images per second through the fake endpoint (its own process) at LATENCY_S, IN_FLIGHT requests at once, against the ideal."
    proc = subprocess.Popen([sys.executable, "-m", "mmresearch.fakeserver", "--images", "--latency", str(LATENCY_S)],
                            stdout=subprocess.PIPE, text=True)
    try:
        base_url = proc.stdout.readline().strip()
        gen = OpenAIImagesGenerator("fake", base_url, max_concurrency=IN_FLIGHT)
        generate_cached([T2IPrompt("warm", "warm-up", "color")], gen, ImageStore(tempfile.mkdtemp()))   # imports: not timed
        many = [T2IPrompt(f"p{i}", f"prompt {i}", "color") for i in range(n)]
        rates = []
        for r in range(runs):
            t = time.perf_counter()
            _, counts = generate_cached(many, gen, ImageStore(tempfile.mkdtemp()), seed=r)
            rates.append(counts["made"] / (time.perf_counter() - t))
        ideal = IN_FLIGHT / LATENCY_S
        med = statistics.median(rates)
        print(f"fake images endpoint, {n} prompts, {LATENCY_S * 1000:.0f} ms latency, {IN_FLIGHT} in flight: median "
              f"{med:,.0f} images/s (min {min(rates):,.0f}, max {max(rates):,.0f}, {runs} runs) = {med / ideal:.2f} x the "
              f"ideal {ideal:.0f}; target >= 0.9 x = {0.9 * ideal:.0f}")
    finally:
        proc.terminate(); proc.wait()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--endpoint-prompts", type=int, default=2048)
    p.add_argument("--skip-pipeline", action="store_true", help="only the endpoint figure (no diffusers needed)")
    a = p.parse_args()
    print("loadavg before:", " ".join(open("/proc/loadavg").read().split()[:3]))
    if not a.skip_pipeline: pipeline_figures(a.runs)
    endpoint_figures(a.endpoint_prompts, a.runs)
    print("loadavg after:", " ".join(open("/proc/loadavg").read().split()[:3]))


if __name__ == "__main__":
    main()
