"""Benchmark: generation speed of the embedded tiny LLaVA through `HFModel` (the suite's transformers backend), greedy,
on held-out test scenes. Prints completion tokens per second at batch 1 and at batch 8, and their ratio. Target: batch 8
gives at least 3x the throughput of batch 1. `--prompt detailed` (default) asks for a detailed description; `--prompt
cot` asks Hal-Eval's chain-of-thought question, whose answers are longer. Answers stop at the model's own end token.

Each batch size runs twice: with `HFModel`'s default continuous batching (a finished row's place goes to the next
request) and with transformers' `generate` on static batches (`continuous=False`, where a batch runs until its longest
answer). The ratio divides batch 8 with continuous batching by the faster of the two batch-1 figures.

    .venv/bin/python benchmarks/bench_tiny.py [--prompt detailed|cot] [--n 64] [--max-new-tokens 48] [--threads 2] [--model PATH]

The machine is shared: the figures are wall-clock under whatever else is running; run it twice if they look odd.
"""
import argparse
import time

import torch

from mmresearch.core import ImageRef, Request, user
from mmresearch.models import HFModel, tiny_model_path
from mmresearch.rendering import render
from mmresearch.scenes import generate_scene, scene_seed
from mmresearch.haleval import disc_question
from mmresearch.scene_samples import make_sample
from mmresearch.tiny import LONG_PROMPTS


def run(model: HFModel, requests: list) -> tuple[int, float]:
    "Completion tokens and wall seconds for answering all requests."
    t0 = time.perf_counter()
    out = model.generate(requests)
    wall = time.perf_counter() - t0
    if errors := [r.error for r in out if r.error]: raise RuntimeError(f"{len(errors)} failed calls, first: {errors[0]}")
    return sum(r.completion_tokens for r in out), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prompt", choices=("detailed", "cot"), default="detailed", help="what the model is asked")
    ap.add_argument("--n", type=int, default=64, help="requests per setting")
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    ap.add_argument("--model", default=str(tiny_model_path()), help="model folder")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    def prompt(i: int) -> str:
        return LONG_PROMPTS[0] if args.prompt == "detailed" else disc_question(make_sample("test", i).meta["caption"], cot=True)
    reqs = [Request((user(ImageRef(render(generate_scene(scene_seed("test", i))), name=f"test-{i}"), prompt(i)),),
                    max_new_tokens=args.max_new_tokens) for i in range(args.n)]
    HFModel(args.model, batch_size=1).load()  # warm the file cache; load time is not generation speed
    rates = {}
    for bs in (1, 8):
        for continuous in (False, True):
            model = HFModel(args.model, batch_size=bs, continuous=continuous)
            model.load()
            run(model, reqs[:bs])  # warm-up batch
            toks, wall = run(model, reqs)
            rates[bs, continuous] = toks / wall
            how = "continuous" if continuous else "static    "
            print(f"batch {bs} {how}: {args.n} requests, {toks} completion tokens in {wall:.2f} s -> {rates[bs, continuous]:.1f} tokens/s")
    print(f"batch 8 static / batch 1: {rates[8, False] / max(rates[1, False], rates[1, True]):.2f}x")
    ratio = rates[8, True] / max(rates[1, False], rates[1, True])
    print(f"batch 8 continuous / batch 1: {ratio:.2f}x (target >= 3x: {'met' if ratio >= 3 else 'MISSED'})")


if __name__ == "__main__":
    main()
