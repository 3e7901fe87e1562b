"""Issue 15 (reliability and security) for sweeps, reports and the CLI: each test here failed before its fix.

Stale code fingerprints through relative imports, runs whose every model call failed, keys pasted as `api_key_env`,
wrong parameter types, unreadable params files, NaN in scorer JSON, broken report JSON, NaN headline metrics, two
params files with one name, and two sweeps of the same file at once. Runs use the smoke notebook with n_samples=2."""
import json
import subprocess
import sys
import threading
from pathlib import Path

import nbformat
import pytest

from mmresearch.cli import main
from mmresearch.fakeserver import FakeChatServer
from mmresearch.report import read_manifest, read_sweep
from mmresearch.sweep import code_fingerprint, load_params, module_closure, run_sweep
from test_sweep import ROOT, SMOKE, cli, write  # the sweep tests' params-file and CLI helpers

# 1. the code fingerprint follows nbdev's relative imports
def test_fingerprint_follows_relative_imports(tmp_path):
    assert {"parsing", "core"} <= set(module_closure("from mmresearch.pope import score_pope"))
    assert {"metrics", "datasets", "scenes"} <= set(module_closure("from mmresearch.mmbench import circular_eval\n"
                                                                    "from mmresearch.mcitems import mc_items"))
    pkg = tmp_path/"pkg"; pkg.mkdir()
    (pkg/"study.py").write_text("from .parsing import parse\n")
    (pkg/"parsing.py").write_text("from . import core\ndef parse(t):\n    return t.startswith('yes')\n")
    (pkg/"core.py").write_text("X = 1\n"); (pkg/"other.py").write_text("Y = 1\n")
    nb = tmp_path/"study.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("from mmresearch.study import parse")]), nb)
    before, mods = code_fingerprint(nb, pkg)
    assert mods == ["core", "parsing", "study"]
    (pkg/"parsing.py").write_text("from . import core\ndef parse(t):\n    return t.startswith('no')\n")   # yes/no swapped
    assert code_fingerprint(nb, pkg)[0] != before
    changed = code_fingerprint(nb, pkg)[0]
    (pkg/"core.py").write_text("X = 2\n")                              # reached only through `from . import core`
    assert code_fingerprint(nb, pkg)[0] != changed
    again = code_fingerprint(nb, pkg)[0]
    (pkg/"other.py").write_text("Y = 2\n")                             # not reached: runs stay current
    assert code_fingerprint(nb, pkg)[0] == again


# 4 and 10: bad parameter values are refused before anything is written, naming file, key and type
@pytest.mark.parametrize("fixed, needle", [("{cot: 'no'}", "fixed.cot is 'no' (str), but smoke.ipynb expects bool"),
                                          ("{n_samples: four}", "fixed.n_samples is 'four' (str), but smoke.ipynb expects int"),
                                          ("{n_boot: 10.5}", "fixed.n_boot is 10.5 (float), but smoke.ipynb expects None or int")])
def test_wrong_types_are_refused(tmp_path, fixed, needle):
    p = write(tmp_path/"types.yaml", f"notebook: SMOKE\nfixed: {fixed}\n")
    with pytest.raises(ValueError) as e: run_sweep(p, reports_dir=tmp_path/"reports", progress=False)
    assert str(p) in str(e.value) and needle in str(e.value)
    assert not (tmp_path/"reports").exists()


def test_a_key_as_api_key_env_is_refused_without_echo(tmp_path):
    key = "sk-proj-0123456789abcdefXYZ"
    for where in (f"fixed: {{api_key_env: {key}}}", f"grid: {{api_key_env: [OPENAI_API_KEY, '{key}']}}",
                  f"cells: [{{api_key_env: 'Bearer {key}'}}]"):
        p = write(tmp_path/"key.yaml", f"notebook: SMOKE\n{where}\n")
        with pytest.raises(ValueError, match="must be the NAME of an environment variable") as e:
            run_sweep(p, reports_dir=tmp_path/"reports", progress=False)
        assert key not in str(e.value) and str(p) in str(e.value)
        out = cli("sweep", str(p), "--reports", str(tmp_path/"reports"), cwd=tmp_path)
        assert out.returncode == 2 and key not in out.stderr + out.stdout
    assert not (tmp_path/"reports").exists()
    assert load_params(write(tmp_path/"ok.yaml", "notebook: SMOKE\nfixed: {api_key_env: MY_KEY_2}\n")).fixed["api_key_env"] == "MY_KEY_2"


# 11: invalid YAML or a folder: a one-line error and exit code 2
def test_bad_params_file_is_exit_2_without_traceback(tmp_path):
    broken = write(tmp_path/"broken.yaml", "notebook: SMOKE\ngrid: {cot: [false, true\n")
    for target, needle in [(broken, "not valid YAML"), (tmp_path, "is a folder, not a params file")]:
        out = cli("sweep", str(target), cwd=tmp_path)
        assert out.returncode == 2, out.stderr
        assert "Traceback" not in out.stderr and needle in out.stderr and str(target) in out.stderr


# 12: every scorer's output is strict JSON
def test_score_writes_null_not_nan(tmp_path):
    rows = [{"sample_id": "a", "caption_type": "true", "answer": "Hmm."}, {"sample_id": "a", "caption_type": "object", "answer": "Perhaps"}]
    (tmp_path/"p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = cli("score", "haleval-disc", "--input", str(tmp_path/"p.jsonl"), "--policy", "exclude", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout, parse_constant=lambda c: pytest.fail(f"{c} is not JSON"))
    assert [m["value"] for m in result["metrics"] if m["metric"] == "accuracy"] == [None, None]


# 2 and 9 and 13 (same name): a run whose every call failed is failed everywhere; broken JSON of another sweep blocks nothing
def test_every_call_failed_is_a_failed_run(tmp_path, monkeypatch):
    monkeypatch.setenv("MMR_TEST_KEY", "not-a-real-key")
    reports = tmp_path/"reports"
    write(reports/"other"/"sweep.json", '{"name": "other", "runs": [{"run": "x", "st')          # truncated by another sweep
    with FakeChatServer(require_key="the-right-key") as srv:          # every call: 401, as with a wrong key
        p = write(tmp_path/"nokey.yaml", f"notebook: SMOKE\nfixed: {{model: 'openai:fake', base_url: '{srv.base_url}', "
                                         "api_key_env: MMR_TEST_KEY, n_samples: 2}\nheadline: accuracy\n")
        code = main(["sweep", str(p), "--workers", "1", "--reports", str(reports), "--cache", str(tmp_path/"c.sqlite"), "--no-progress"])
        assert srv.calls == 2
    assert code == 1
    run = read_sweep(reports/"nokey")["runs"][0]
    assert run["status"] == "failed" and run["error"].startswith("no answers: all 2 model calls failed"), run
    m = read_manifest(reports/"nokey"/run["run"])
    assert m["status"] == "failed" and m["study"]["cache"]["errors"] == 2
    index = (reports/"index.html").read_text()
    assert "no answers: all 2 model calls failed" in index and 'class="failed"' in index
    assert str(reports/"other"/"sweep.json") in index                      # the broken file is named, not fatal
    assert "This run failed" in (reports/"nokey"/run["run"]/"run.html").read_text()
    # a second params file with the same name must not overwrite these reports
    twin = write(tmp_path/"elsewhere"/"twin.yaml", "name: nokey\nnotebook: SMOKE\nfixed: {n_samples: 2}\n")
    with pytest.raises(ValueError, match="'nokey' is already used by") as e:
        run_sweep(twin, reports_dir=reports, progress=False)
    assert str(twin) in str(e.value)
    # and a truncated sweep.json of this sweep is replaced, with a warning naming it
    (reports/"nokey"/"sweep.json").write_text('{"name": "nokey", "ru')
    again = run_sweep(p, workers=1, reports_dir=reports, cache_path=tmp_path/"c.sqlite", progress=False)
    assert [r.status for r in again.runs] == ["failed"] and read_sweep(reports/"nokey")["name"] == "nokey"


def test_max_failed_share_is_a_params_setting(tmp_path):
    p = write(tmp_path/"share.yaml", "notebook: SMOKE\nmax_failed_share: 0.1\n")
    assert load_params(p).max_failed_share == 0.1
    with pytest.raises(ValueError, match="max_failed_share must be a number from 0 to 1"):
        load_params(write(tmp_path/"bad.yaml", "notebook: SMOKE\nmax_failed_share: half\n"))


# 13: duplicate names in one suite are refused before anything runs
def test_suite_with_two_sweeps_of_one_name_is_refused(tmp_path):
    (tmp_path/"settings.ini").write_text("[DEFAULT]\n")
    write(tmp_path/"params"/"a.yaml", "name: same\nnotebook: SMOKE\n")
    write(tmp_path/"params"/"b.yaml", "name: same\nnotebook: SMOKE\nfixed: {cot: true}\n")
    suite = write(tmp_path/"params"/"suite.yaml", "suite: [params/a.yaml, params/b.yaml]\n")
    out = cli("sweep", str(suite), "--reports", str(tmp_path/"reports"), cwd=tmp_path)
    assert out.returncode == 2 and "are both named 'same'" in out.stderr, out.stderr
    assert not (tmp_path/"reports").exists()


# 13: a headline metric that is NaN in every run still gives a summary, and exit 0
def test_nan_headline_still_writes_the_summary(tmp_path):
    p = write(tmp_path/"nan.yaml", "notebook: SMOKE\nfixed: {model: 'scripted:no', n_samples: 2}\nheadline: precision\n")
    out = cli("sweep", str(p), "--workers", "1", "--reports", str(tmp_path/"reports"), "--cache", str(tmp_path/"c.sqlite"),
              "--no-progress", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "summary failed" not in out.stdout
    page = (tmp_path/"reports"/"nan"/"summary.html").read_text()
    assert "No run has a value of precision" in page


def test_a_failed_summary_is_exit_1(tmp_path):
    bad = tmp_path/"bad_summary.ipynb"
    cell = nbformat.v4.new_code_cell('sweep_dir = "."'); cell.metadata["tags"] = ["parameters"]
    nbformat.write(nbformat.v4.new_notebook(cells=[cell, nbformat.v4.new_code_cell("raise RuntimeError('summary broke')")],
                                            metadata={"kernelspec": {"name": "python3", "display_name": "python3", "language": "python"}}), bad)
    p = write(tmp_path/"badsum.yaml", f"notebook: SMOKE\nsummary: {bad}\nfixed: {{model: 'scripted:yes', n_samples: 2}}\n")
    out = cli("sweep", str(p), "--workers", "1", "--reports", str(tmp_path/"reports"), "--cache", str(tmp_path/"c.sqlite"),
              "--no-progress", cwd=tmp_path)
    assert out.returncode == 1 and "summary failed" in out.stdout and "summary broke" in out.stdout, out.stdout + out.stderr


# 7: the same sweep twice at once: the second waits on the run's lock, then skips; nothing is deleted or paid twice
def test_two_sweeps_at_once_share_the_work(tmp_path):
    first_call, release = threading.Event(), threading.Event()
    def answer(body):
        first_call.set()
        release.wait(300)
        return "Yes"
    with FakeChatServer(answer=answer) as srv:
        p = write(tmp_path/"twice.yaml", f"notebook: SMOKE\nfixed: {{model: 'openai:fake', base_url: '{srv.base_url}', n_samples: 2}}\n")
        args = [sys.executable, "-m", "mmresearch.cli", "sweep", str(p), "--workers", "1", "--reports", str(tmp_path/"reports"),
                "--cache", str(tmp_path/"c.sqlite"), "--no-progress"]
        a = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert first_call.wait(300), "the first sweep never called the model"   # A holds the run's lock, mid-call
            b = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            waiting, err_b = threading.Event(), []
            def read_stderr():
                for line in b.stderr:
                    err_b.append(line)
                    if "another process is writing run default; waiting for it" in line: waiting.set()
            reader = threading.Thread(target=read_stderr, daemon=True); reader.start()
            assert waiting.wait(120), f"the second sweep did not wait for the lock: {''.join(err_b)}"   # B is at the lock
        finally:
            release.set()                                                             # now A may finish
        out_a, err_a = a.communicate(timeout=600)
        b.wait(timeout=600); reader.join(60)
        out_b, err_b = b.stdout.read(), "".join(err_b)
        assert a.returncode == 0, out_a + err_a
        assert b.returncode == 0, out_b + err_b
        assert srv.calls == 2                                   # two questions, asked once: B never called the model
    assert "1 ok" in out_a and "1 skipped" in out_b, (out_a, out_b)
    run_dir = tmp_path/"reports"/"twice"/"default"
    m = read_manifest(run_dir)
    assert m["status"] == "ok" and m["study"]["cache"]["calls"] == 2
    assert all((run_dir/f).exists() for f in ("run.ipynb", "run.html", "samples.parquet", "metrics.csv"))
    sweep = read_sweep(tmp_path/"reports"/"twice")   # whichever sweep took the summary lock last wrote it: A (ok) or B (skipped)
    assert sweep["runs"][0]["status"] in ("ok", "skipped") and sweep["summary_fingerprint"] is not None, sweep
