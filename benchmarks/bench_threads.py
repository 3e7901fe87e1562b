"""Benchmark: CPU oversubscription when a sweep runs two kernels at once. Each of `--procs` concurrent processes loads
the embedded tiny LLaVA (`load_model("tiny")`) and runs the T2I judge workload of `nbs/experiments/t2i_judge.ipynb`
(`T2IJudge`, chain of thought, protocol score, `--n` rendered prompts per category, each drawn faithful and deviated)
through a fresh response cache, so every call reaches the model. Two thread settings are compared:

- `default`: no OMP_NUM_THREADS / MKL_NUM_THREADS, so each process's torch takes as many threads as there are cores;
- `budget`: the variables `mmresearch.sweep.thread_budget` gives a kernel when `procs` runs share the machine.

The processes load the model and warm up (one category, its own cache), then start the timed judging together. The
settings alternate round by round (`--rounds`; the order flips each round) so other load on the machine falls on
both. A solo run (one process, default threads) is printed first for reference. Prints each process's judging wall
time and the slowest per round; asserts nothing about time.

    .venv/bin/python benchmarks/bench_threads.py [--procs 2] [--rounds 3] [--n 2]

The machine is shared: the figures are wall-clock under whatever else is running; run it twice if they look odd.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mmresearch.sweep import THREAD_VARS, thread_budget


def child(n: int) -> None:
    "One process: load and warm up, say `ready`, wait for `go` on stdin, judge, print the timings as JSON."
    import torch
    from mmresearch.cache import CachedModel, ResponseCache
    from mmresearch.models import load_model
    from mmresearch.t2i_judge import T2I_CATEGORIES, T2IJudge, prompt_set, render_prompts

    tmp = Path(tempfile.mkdtemp())
    model = load_model("tiny")
    warm = T2IJudge(CachedModel(model, ResponseCache(tmp/"warm.sqlite")), mode="cot", protocol="score")
    warm(render_prompts(prompt_set(1, T2I_CATEGORIES[:1], seed=1), seed=1))  # loads the weights, spaCy, kernels
    samples = render_prompts(prompt_set(n, T2I_CATEGORIES, seed=0), seed=0)
    judge = T2IJudge(CachedModel(model, ResponseCache(tmp/"timed.sqlite")), mode="cot", protocol="score")
    print("ready", flush=True)
    sys.stdin.readline()
    t0 = time.perf_counter()
    rows = judge(samples)
    wall = time.perf_counter() - t0
    print(json.dumps({"wall_s": round(wall, 2), "torch_threads": torch.get_num_threads(), "questions": len(rows),
                      "failed_calls": int((rows.failure == "call").sum())}), flush=True)


def together(procs: int, budget: dict | None, n: int) -> list[dict]:
    "Start `procs` children with the thread variables `budget` (None: torch's default), release them together, collect their timings."
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS} | (budget or {})
    kids = [subprocess.Popen([sys.executable, __file__, "--child", "--n", str(n)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=env) for _ in range(procs)]
    for k in kids:
        if k.stdout.readline().strip() != "ready": raise RuntimeError(f"a child failed before its timed part (exit {k.wait()})")
    for k in kids: k.stdin.write("go\n"); k.stdin.flush()
    out = [json.loads(k.stdout.readline()) for k in kids]
    for k in kids: k.wait()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--procs", type=int, default=2, help="concurrent processes (the sweep's workers)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of each setting, interleaved")
    ap.add_argument("--n", type=int, default=2, help="prompts per T2I category (each drawn twice)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child: return child(args.n)
    cores = os.cpu_count() or 1
    budget = thread_budget(args.procs, cores=cores)
    print(f"{cores} cores, {args.procs} concurrent processes; the sweep's budget: {budget['per_run']} thread(s) each")
    solo = together(1, None, args.n)[0]
    print(f"solo, default threads ({solo['torch_threads']}): {solo['questions']} questions in {solo['wall_s']:.2f} s")
    slowest = {"default": [], "budget": []}
    for r in range(args.rounds):
        for name in (("default", "budget") if r % 2 == 0 else ("budget", "default")):
            res = together(args.procs, None if name == "default" else budget["env"], args.n)
            slowest[name].append(max(x["wall_s"] for x in res))
            walls = ", ".join(f"{x['wall_s']:.2f} s" for x in res)
            fails = sum(x["failed_calls"] for x in res)
            print(f"round {r + 1} {name:7s} ({res[0]['torch_threads']} torch threads each): {walls}; slowest {slowest[name][-1]:.2f} s"
                  + (f"; {fails} failed calls" if fails else ""), flush=True)
    d, b = statistics.median(slowest["default"]), statistics.median(slowest["budget"])
    print(f"median slowest of {args.procs}: default {d:.2f} s, budget {b:.2f} s -> default / budget = {d / b:.2f}x "
          f"(solo {solo['wall_s']:.2f} s)")


if __name__ == "__main__":
    main()
