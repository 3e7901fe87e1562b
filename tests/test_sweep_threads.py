"""The sweep's thread budget reaches the papermill kernels: with `workers` runs at once on a machine with N cores, each
kernel sees OMP_NUM_THREADS = max(1, N // workers) and its torch uses that many threads; a user's OMP_NUM_THREADS wins;
the manifest records the budget under `performance.threads`.

A tiny notebook stands in for a study: it writes what its kernel sees into samples.parquet."""
import os
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from mmresearch.report import read_manifest
from mmresearch.sweep import THREAD_VARS, run_sweep

PARAMS = 'output_dir = None\ncache_path = None\ntag = "a"'
BODY = '''import os
from pathlib import Path
import pandas as pd
import torch
out = Path(output_dir)
pd.DataFrame([{"tag": tag, "omp": os.environ.get("OMP_NUM_THREADS"), "mkl": os.environ.get("MKL_NUM_THREADS"),
               "torch_threads": torch.get_num_threads()}]).to_parquet(out/"samples.parquet")
pd.DataFrame([{"metric": "n", "value": 1}]).to_csv(out/"metrics.csv", index=False)'''


@pytest.fixture
def project(tmp_path, monkeypatch):
    "A project whose notebook reports its kernel's thread settings; no thread variable set by the caller."
    for k in THREAD_VARS: monkeypatch.delenv(k, raising=False)
    (tmp_path/"settings.ini").write_text("[DEFAULT]\n")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PARAMS, metadata={"tags": ["parameters"]}),
                                         nbformat.v4.new_code_cell(BODY)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path/"threads.ipynb")
    (tmp_path/"threads.yaml").write_text("notebook: threads.ipynb\ngrid: {tag: [a, b]}\n")
    return tmp_path


def seen(res) -> list[dict]:
    "What each run's kernel saw, with the budget its manifest records."
    assert not res.failed and res.by_status("ok"), res.describe()   # (the generic summary of this toy study is not checked)
    return [{**pd.read_parquet(res.sweep_dir/r.run/"samples.parquet").iloc[0].to_dict(),
             "manifest": read_manifest(res.sweep_dir/r.run)["performance"]["threads"]} for r in res.by_status("ok")]


def test_two_workers_split_the_cores(project):
    budget = max(1, (os.cpu_count() or 1) // 2)
    res = run_sweep(project/"threads.yaml", workers=2, reports_dir=project/"reports", cache_path=project/"c.sqlite", progress=False)
    runs = seen(res)
    assert sorted(r["tag"] for r in runs) == ["a", "b"]
    for r in runs:
        assert (r["omp"], r["mkl"], r["torch_threads"]) == (str(budget), str(budget), budget), r
        m = r["manifest"]
        assert (m["per_run"], m["set_by"], m["cores"], m["concurrent_runs"]) == (budget, "sweep", os.cpu_count(), 2), m
    assert not any(k in os.environ for k in THREAD_VARS)      # the sweep's own environment is left as it was


def test_users_setting_wins(project, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")   # below the sweep's own budget for a lone run (all cores; torch caps at the cores)
    res = run_sweep(project/"threads.yaml", workers=1, only={"tag": "a"}, reports_dir=project/"reports",
                    cache_path=project/"c.sqlite", progress=False)   # one run, in this process
    [r] = seen(res)
    assert (r["omp"], r["mkl"], r["torch_threads"]) == ("1", None, 1), r
    assert (r["manifest"]["per_run"], r["manifest"]["set_by"], r["manifest"]["concurrent_runs"]) == (1, "user", 1)
    assert os.environ["OMP_NUM_THREADS"] == "1" and "MKL_NUM_THREADS" not in os.environ
