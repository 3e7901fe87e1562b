"""Benchmark: text-to-image generation through `t2i_generate.generate_cached`. Prints seconds per image (median, min,
max over several runs) of the tests' tiny random Stable Diffusion pipeline (tests/make_tiny_diffusers.py: 2 steps,
32x32, CPU) and of the fake OpenAI-compatible images endpoint (one request at a time), the time of a fully cached run
(no pipeline call, the folder hash included), and the load average before and after.

    .venv/bin/python benchmarks/bench_t2i_generate.py [--runs 7] [--endpoint-prompts 50]

Needs the optional extra `t2i` (diffusers). The machine is shared: the figures are wall-clock under whatever else runs.
"""
import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]/"tests"))
from make_tiny_diffusers import make_tiny_pipeline
from mmresearch.fakeserver import FakeImagesServer
from mmresearch.t2i_generate import DiffusersGenerator, ImageStore, OpenAIImagesGenerator, generate_cached
from mmresearch.t2i_judge import T2IPrompt, load_prompts

FIXTURE = Path(__file__).resolve().parents[1]/"tests"/"fixtures"/"t2i_compbench"/"color_val.txt"
SETTINGS = {"num_inference_steps": 2, "height": 32, "width": 32}


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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--endpoint-prompts", type=int, default=50)
    a = p.parse_args()
    print("loadavg before:", " ".join(open("/proc/loadavg").read().split()[:3]))
    prompts = load_prompts(FIXTURE)
    folder = make_tiny_pipeline(Path(tempfile.mkdtemp())/"tiny-sd")
    gen = DiffusersGenerator(folder); gen.pipeline()                 # loaded once, outside the timing
    show(f"tiny pipeline, {len(prompts)} T2I-CompBench prompts", per_image(gen, prompts, SETTINGS, a.runs))
    store = ImageStore(tempfile.mkdtemp()); generate_cached(prompts, gen, store, settings=SETTINGS)
    cached = []
    for _ in range(a.runs):
        t = time.perf_counter(); generate_cached(prompts, DiffusersGenerator(folder), store, settings=SETTINGS)
        cached.append(time.perf_counter() - t)
    print(f"fully cached run of {len(prompts)} prompts (folder hash included): median {statistics.median(cached):.4f} s")
    many = [T2IPrompt(f"p{i}", f"prompt {i}", "color") for i in range(a.endpoint_prompts)]
    with FakeImagesServer() as srv:
        show(f"fake images endpoint, {len(many)} prompts", per_image(OpenAIImagesGenerator("fake", srv.base_url), many, {}, a.runs))
    print("loadavg after:", " ".join(open("/proc/loadavg").read().split()[:3]))


if __name__ == "__main__":
    main()
