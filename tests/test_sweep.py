"""Sweeps end to end: grid expansion and validation, skip/resume, a failing cell among good ones, the process pool,
the Dask executor on a LocalCluster, the CLI, and secrets that must never reach a file.

Each papermill run starts a kernel (a few seconds), so the cells are tiny and runs are reused where a test only reads."""
import json
import subprocess
import sys
import uuid
from pathlib import Path

import pandas as pd
import pytest

from mmresearch.cache import ResponseCache
from mmresearch.fakeserver import FakeChatServer
from mmresearch.report import external_resources, read_manifest, read_sweep
from mmresearch.sweep import expand_grid, load_params, run_sweep, select_cells

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT/"nbs"/"experiments"/"smoke.ipynb"
RUN_FILES = {"run.ipynb", "run.html", "samples.parquet", "metrics.csv", "manifest.json"}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.replace("SMOKE", str(SMOKE)))
    return path


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mmresearch.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    "A tiny project (settings.ini + params/smoke.yaml, two cells) swept once with a pool of two processes."
    proj = tmp_path_factory.mktemp("proj")
    (proj/"settings.ini").write_text("[DEFAULT]\n")
    params = write(proj/"params"/"smoke.yaml", "name: smoke\nnotebook: SMOKE\nfixed: {n_samples: 4}\n"
                                               "grid: {cot: [false, true]}\nheadline: accuracy\n")
    return proj, params, run_sweep(params, workers=2, reports_dir=proj/"reports", progress=False)


def test_expansion_and_validation(tmp_path):
    p = write(tmp_path/"g.yaml", "notebook: SMOKE\nfixed: {seed: 2}\ngrid: {model: ['scripted:yes', 'scripted:no'], cot: [false, true]}\n"
                                 "cells: [{model: 'scripted:coin', n_samples: 2}, {model: 'scripted:yes', cot: false}]\n")
    cells = expand_grid(load_params(p))
    assert [c.overrides for c in cells] == [{"model": "scripted:yes", "cot": False}, {"model": "scripted:yes", "cot": True},
                                           {"model": "scripted:no", "cot": False}, {"model": "scripted:no", "cot": True},
                                           {"model": "scripted:coin", "n_samples": 2}]   # the repeated explicit cell is dropped
    assert all(c.params["seed"] == 2 for c in cells)
    assert cells[0].run_id.startswith("model=scripted-yes_cot=False-")
    assert [c.run_id for c in expand_grid(load_params(p))] == [c.run_id for c in cells]
    assert [c.overrides["model"] for c in select_cells(cells, {"cot": "true"})] == ["scripted:yes", "scripted:no"]
    for text, key in [("notebook: SMOKE\nmodels: [a]", "'models'"), ("notebook: SMOKE\ngrid: {seed: 3}", "grid.seed"),
                      ("notebook: SMOKE\ngrid: {sede: [1]}", "grid.sede"), ("notebook: SMOKE\nfixed: {cache_path: x}", "fixed.cache_path"),
                      ("notebook: nope.ipynb", "nope.ipynb"), ("notebook: SMOKE\ncells: [{token: abc}]", "cells[0].token")]:
        with pytest.raises(ValueError, match=key.replace("[", r"\[").replace("]", r"\]")):
            load_params(write(tmp_path/"bad.yaml", text))


def test_first_run_writes_every_output(project):
    proj, _, res = project
    assert [r.status for r in res.runs] == ["ok", "ok"], res.describe()
    for r in res.runs:
        d = res.sweep_dir/r.run
        assert RUN_FILES <= {f.name for f in d.iterdir()}
        m = read_manifest(d)
        assert m["status"] == "ok" and m["wall_time_s"] > 0 and m["params"] == {"n_samples": 4, "cot": r.grid["cot"]}
        assert set(m["fingerprint"]) == {"params", "code", "data", "extra_roots"} and m["packages"]["papermill"]
        assert (m["git"]["commit"] is None or len(m["git"]["commit"]) == 40) and m["executor"] == "local"
        assert len(m["study"]["dataset"]["sha256"]) == 64 and m["study"]["unparseable_policy"] == "negative"
        assert m["study"]["cache"]["calls"] + m["study"]["cache"]["hits"] == 4
        metrics = pd.read_csv(d/"metrics.csv").set_index("metric")
        assert 0 <= metrics.loc["accuracy", "ci_low"] <= metrics.loc["accuracy", "value"] <= metrics.loc["accuracy", "ci_high"] <= 100
        samples = pd.read_parquet(d/"samples.parquet")
        assert len(samples) == 4 and abs(100 * samples["correct"].astype(float).mean() - metrics.loc["accuracy", "value"]) < 1e-6
        page = (d/"run.html").read_text()
        assert "Run manifest" in page and "import matplotlib" not in page and external_resources(page) == []
    assert len(ResponseCache(proj/".cache"/"responses.sqlite")) == 8          # both runs wrote to the project's one cache
    index = (proj/"reports"/"index.html").read_text()
    assert all(f'href="smoke/{r.run}/run.html"' in index for r in res.runs) and 'href="smoke/summary.html"' in index
    assert "Sweep manifest" in (res.sweep_dir/"summary.html").read_text()


def test_second_run_skips_every_cell(project):
    _, params, res = project
    before = {f: f.stat().st_mtime_ns for f in [res.sweep_dir/"summary.html", *(res.sweep_dir/r.run/"run.ipynb" for r in res.runs)]}
    again = run_sweep(params, workers=2, reports_dir=res.sweep_dir.parent, progress=False)
    assert [r.status for r in again.runs] == ["skipped", "skipped"]
    assert {f: f.stat().st_mtime_ns for f in before} == before           # no run and no summary was redone


def test_cli_main_resumes_the_default_suite(project):
    proj, _, res = project
    write(proj/"params"/"default.yaml", "description: the main job\nsuite: [params/smoke.yaml]\n")
    out = cli("main", "--no-progress", cwd=proj)
    assert out.returncode == 0, out.stderr
    assert "2 skipped" in out.stdout and f"Open the reports: {proj/'reports'/'index.html'}" in out.stdout


def test_changed_parameter_reruns_only_the_selected_cell(project):
    proj, params, res = project
    write(params, params.read_text().replace("n_samples: 4", "n_samples: 6"))
    again = run_sweep(params, workers=2, only={"cot": "true"}, reports_dir=proj/"reports", progress=False)
    assert [r.status for r in again.runs] == ["not run", "ok"]
    assert read_manifest(again.sweep_dir/again.runs[1].run)["params"]["n_samples"] == 6
    assert [r["status"] for r in read_sweep(again.sweep_dir)["runs"]] == ["not run", "ok"]


def test_a_failing_cell_is_reported_and_the_others_go_on(project, tmp_path):
    proj, _, _ = project
    params = write(tmp_path/"broken.yaml", "notebook: SMOKE\ngrid: {n_samples: [3, 4]}\n")   # 3 is odd: the notebook raises
    out = cli("sweep", str(params), "--workers", "1", "--reports", str(tmp_path/"reports"),
              "--cache", str(proj/".cache"/"responses.sqlite"), "--no-progress", cwd=tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    info = read_sweep(tmp_path/"reports"/"broken")
    status = {r["grid"]["n_samples"]: r for r in info["runs"]}
    assert status[4]["status"] == "ok" and status[3]["status"] == "failed"
    assert "n_samples must be an even number" in status[3]["error"]
    assert f"notebook: {status[3]['notebook']}" in out.stdout and Path(status[3]["notebook"]).exists()
    assert "n_samples must be an even number" in Path(status[3]["notebook"]).read_text()
    failed_page = (Path(status[3]["notebook"]).parent/"run.html").read_text()
    assert "This run failed" in failed_page and "ValueError" in failed_page
    ok_manifest = read_manifest(tmp_path/"reports"/"broken"/status[4]["run"])
    assert ok_manifest["study"]["cache"]["hits"] == 4                        # served from the shared cache of the first sweep
    assert "failed" in (tmp_path/"reports"/"index.html").read_text()
    first = next((proj/"reports"/"smoke").glob("cot=False-*"))/"metrics.csv"    # the same cell, run fresh by the fixture
    assert (tmp_path/"reports"/"broken"/status[4]["run"]/"metrics.csv").read_bytes() == first.read_bytes()


def test_dask_executor_on_a_local_cluster_with_a_study_summary(tmp_path):
    import nbformat
    params_cell = nbformat.v4.new_code_cell('sweep_dir = "."'); params_cell.metadata["tags"] = ["parameters"]
    nbformat.write(nbformat.v4.new_notebook(cells=[params_cell, nbformat.v4.new_code_cell(
        "from mmresearch.report import load_sweep\nruns, metrics = load_sweep(sweep_dir)\n"
        "print('study summary of', len(runs), 'runs; mean yes ratio', metrics[metrics.metric == 'yes_ratio'].value.mean())")],
        metadata={"kernelspec": {"name": "python3", "display_name": "python3", "language": "python"}}), tmp_path/"summary.ipynb")
    params = write(tmp_path/"dask.yaml", "notebook: SMOKE\nsummary: summary.ipynb\nfixed: {n_samples: 2}\n"
                                         "grid: {model: ['scripted:yes', 'scripted:no']}\n")
    res = run_sweep(params, workers=1, executor="dask", reports_dir=tmp_path/"reports", cache_path=tmp_path/"c.sqlite", progress=False)
    assert [r.status for r in res.runs] == ["ok", "ok"], res.describe()
    acc = {r.grid["model"]: pd.read_csv(res.sweep_dir/r.run/"metrics.csv").set_index("metric").loc["yes_ratio", "value"] for r in res.runs}
    assert acc == {"scripted:yes": 100.0, "scripted:no": 0.0}
    for r in res.runs:
        m = read_manifest(res.sweep_dir/r.run)
        assert m["executor"] == "dask" and m["scheduler"].startswith("tcp://127.0.0.1:") and m["worker"].startswith("tcp://127.0.0.1:")
    assert "study summary of 2 runs; mean yes ratio 50.0" in (res.sweep_dir/"summary.html").read_text()


def test_secrets_never_reach_a_file(tmp_path, monkeypatch):
    sentinel = f"sk-sentinel-{uuid.uuid4().hex}"
    monkeypatch.setenv("MMR_SENTINEL_KEY", sentinel)
    with FakeChatServer() as srv:
        params = write(tmp_path/"secret.yaml", f"notebook: SMOKE\nfixed: {{model: 'openai:fake', base_url: '{srv.base_url}', "
                                                "api_key_env: MMR_SENTINEL_KEY, n_samples: 2}\n")
        res = run_sweep(params, workers=1, reports_dir=tmp_path/"reports", cache_path=tmp_path/"cache"/"c.sqlite", progress=False)
        assert [r.status for r in res.runs] == ["ok"], res.describe()
        assert srv.completed == 2, (srv.calls, srv.statuses)                 # the key was read and the server answered
    files = [p for d in (tmp_path/"reports", tmp_path/"cache") for p in d.rglob("*") if p.is_file()]
    assert any(p.suffix == ".sqlite" for p in files) and any(p.name == "run.ipynb" for p in files)
    leaks = [str(p) for p in files if sentinel.encode() in p.read_bytes()]
    assert leaks == []
    # and a params file that puts the key itself in a parameter is refused, without repeating the key
    bad = write(tmp_path/"leak.yaml", f"notebook: SMOKE\nfixed: {{api_key_env: MMR_SENTINEL_KEY, model: '{sentinel}'}}\n")
    with pytest.raises(ValueError, match="contains the value of the environment variable|looks like a key") as e:
        run_sweep(bad, reports_dir=tmp_path/"reports2", progress=False)
    assert sentinel not in str(e.value) and not (tmp_path/"reports2").exists()


def test_cli_score_prints_json_and_table(tmp_path):
    rows = [{"sample_id": "a", "caption_type": "true", "answer": "Yes."}, {"sample_id": "a", "caption_type": "object", "answer": "Yes"},
            {"sample_id": "b", "caption_type": "true", "answer": "?"}, {"sample_id": "b", "caption_type": "object", "answer": "No"}]
    (tmp_path/"p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = cli("score", "haleval-disc", "--input", str(tmp_path/"p.jsonl"), "--policy", "exclude", "--table", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout[:out.stdout.index("\n}\n") + 2])
    acc = {(m["pair_type"], m["metric"]): m["value"] for m in result["metrics"]}
    assert acc["object", "accuracy"] == pytest.approx(100 * 2 / 3) and acc["object", "parse_failure_rate"] == 25.0
    assert result["policy"] == "exclude"
    assert "policy" in out.stdout.split("\n}\n", 1)[1]                          # the table follows the JSON
    bad = cli("score", "haleval-disc", "--input", str(tmp_path/"p.jsonl"), "--policy", "maybe", cwd=tmp_path)
    assert bad.returncode == 2 and "maybe" in bad.stderr
