"""Benchmark: kernels that die at start when several start at once. Each round starts `--parallel` papermill runs of a
one-cell notebook together (one process each), `--rounds` rounds, once with papermill's default kernel manager (TCP: jupyter
picks five free ports, then the kernel binds them, and a kernel starting beside it can be handed the same port) and
once with `report.socket_file_kernel_manager` (Unix socket files in a private folder), the one every report kernel uses.
Prints, per manager, how many kernels failed and the first error; asserts nothing. The race is rare, so the TCP count
varies from run to run; over socket files there is no port to race for.

    .venv/bin/python benchmarks/bench_kernel_start.py [--rounds 25] [--parallel 8]
"""
import argparse
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
import papermill as pm

from mmresearch.report import QUIET_KERNEL, socket_file_kernel_manager


def one_run(args: tuple[str, Path, int]) -> str | None:
    "Run the notebook once with the named manager and the report kernels' options; the error, or None."
    manager, notebook, i = args
    extra = {"kernel_manager_class": socket_file_kernel_manager()} if manager == "socket files" else {}
    try:
        pm.execute_notebook(str(notebook), str(notebook.with_name(f"out{i}.ipynb")), kernel_name="python3", progress_bar=False,
                            extra_arguments=QUIET_KERNEL, **extra)
        return None
    except Exception as e: return f"{type(e).__name__}: {str(e)[:150]}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=25)
    ap.add_argument("--parallel", type=int, default=8)
    a = ap.parse_args()
    notebook = Path(tempfile.mkdtemp())/"one_cell.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")],
                                            metadata={"kernelspec": {"name": "python3", "display_name": "python3", "language": "python"}}), notebook)
    with ProcessPoolExecutor(a.parallel) as pool:
        for manager in ("tcp (papermill default)", "socket files"):
            t0, errors = time.perf_counter(), []
            for r in range(a.rounds):
                errors += [e for e in pool.map(one_run, [(manager, notebook, r * a.parallel + k) for k in range(a.parallel)]) if e]
            print(f"{manager}: {len(errors)} of {a.rounds * a.parallel} kernels failed ({a.parallel} at a time, "
                  f"{time.perf_counter() - t0:.0f} s){'; first: ' + errors[0] if errors else ''}", flush=True)


if __name__ == "__main__":
    main()
