"""Issue 25, "never a stale result" and "never ok when a part failed": each test here failed before its fix.

A model folder overwritten in place, an edited file shipped inside the package, a summary that failed after its
fingerprint was recorded, and a judge whose every call failed while the model answered."""
import json
import shutil

import nbformat

from mmresearch.core import Request, Response, user
from mmresearch.models import ScriptedModel, tiny_model_path
from mmresearch.report import generic_summary_path, read_manifest, read_sweep
from mmresearch.study import open_run
from mmresearch.sweep import code_fingerprint, failed_calls_problem, run_sweep
from test_sweep import SMOKE, write


def test_model_folder_and_summary_are_never_stale(tmp_path):
    weights = tmp_path/"my-model"; shutil.copytree(tiny_model_path(), weights)
    summary = tmp_path/"summary.ipynb"; shutil.copy(generic_summary_path(), summary)
    p = write(tmp_path/"hf.yaml", f"notebook: SMOKE\nsummary: {summary}\nfixed: {{model: 'hf:{weights}', n_samples: 2, n_boot: 10}}\n")
    kw = dict(workers=1, reports_dir=tmp_path/"reports", cache_path=tmp_path/"c.sqlite", progress=False)
    first = run_sweep(p, **kw)
    assert [r.status for r in first.runs] == ["ok"] and first.ok, first.describe()
    sweep_dir = tmp_path/"reports"/"hf"
    fp1 = read_sweep(sweep_dir)["summary_fingerprint"]
    # 1. the weights' folder is overwritten in place (same path, same params): the run is run again, and the summary with it
    config = json.loads((weights/"config.json").read_text()); config["_edited"] = True
    (weights/"config.json").write_text(json.dumps(config))
    second = run_sweep(p, **kw)
    assert [r.status for r in second.runs] == ["ok"], second.describe()          # not "skipped" with the old answers
    run_dir = sweep_dir/second.runs[0].run
    assert str((weights/"config.json").resolve()) in {f["path"] for f in read_manifest(run_dir)["study"]["inputs"]["files"]}
    fp2 = read_sweep(sweep_dir)["summary_fingerprint"]
    assert fp2 not in (None, fp1)
    # 3. the summary fails: its fingerprint is not recorded, so the next sweep tries it again and fails again (exit 1)
    nb = nbformat.read(summary, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("raise RuntimeError('summary broke')")); nbformat.write(nb, summary)
    third = run_sweep(p, **kw)
    assert "summary broke" in (third.summary_error or ""), third.describe()
    assert read_sweep(sweep_dir)["summary_fingerprint"] is None
    fourth = run_sweep(p, **kw)
    assert [r.status for r in fourth.runs] == ["skipped"] and "summary broke" in (fourth.summary_error or ""), fourth.describe()
    assert not fourth.ok


def test_package_data_is_fingerprinted(tmp_path):
    pkg = tmp_path/"pkg"; pkg.mkdir()
    (pkg/"study.py").write_text("X = 1\n")
    for f in ("data/photos.json", "data/chair_synonyms.txt", "assets/tiny/config.json"):
        (pkg/f).parent.mkdir(parents=True, exist_ok=True); (pkg/f).write_text("{}\n")
    nb = tmp_path/"study.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("from mmresearch.study import X")]), nb)
    seen = {code_fingerprint(nb, pkg)[0]}
    for f in ("data/photos.json", "data/chair_synonyms.txt", "assets/tiny/config.json"):
        (pkg/f).write_text('{"edited": 1}\n')                                        # an annotation edited in place
        seen.add(code_fingerprint(nb, pkg)[0])
    assert len(seen) == 4


def test_a_judge_that_always_fails_fails_the_run(tmp_path):
    run = open_run("roles", tmp_path/"out", tmp_path/"cache.sqlite")
    reqs = [Request([user(f"question {i}")]) for i in range(4)]
    assert all(r.ok for r in run.model("scripted:yes").generate(reqs))
    class DownJudge:
        fingerprint = "down-judge"
        def generate(self, requests): return [Response.failed("server", "HTTP 500") for _ in requests]
    assert not any(r.ok for r in run.model("judge-spec", role="judge", backend=DownJudge()).generate(reqs))
    run.model(None, role="extractor")                                                # opened but unused: not a failure
    run.write_manifest()
    study = read_manifest(tmp_path/"out")["study"]
    assert study["cache"]["errors"] == 4 and study["cache"]["hits"] + study["cache"]["calls"] == 8   # half of all calls
    problem = failed_calls_problem(study, max_failed_share=0.5)
    assert problem is not None and problem.startswith("no answers: all 4 judge calls failed"), problem
    # an extractor with 3 of 4 calls failed, over a share of 0.5, fails the run too; 1 of 4 does not
    ok_run = open_run("roles", tmp_path/"out2", tmp_path/"cache.sqlite")
    ok_run.model("scripted:yes").generate(reqs)
    flaky = ScriptedModel(lambda r: (_ for _ in ()).throw(RuntimeError("x")) if r.messages[-1].text != "question 0" else "ok", name="flaky")
    ok_run.model("flaky", role="extractor", backend=flaky).generate(reqs)
    ok_run.write_manifest()
    assert "3 of 4 extractor calls failed" in failed_calls_problem(read_manifest(tmp_path/"out2")["study"], 0.5)
    assert failed_calls_problem(read_manifest(tmp_path/"out2")["study"], 0.8) is None


def test_a_benchmark_file_changed_in_place_is_never_served_a_stale_run(tmp_path):
    "Issue 21: the MMBench TSV a run read, one byte changed under the same path and params: the run is made again."
    from mmresearch.inputs import file_sha256
    from test_mmbench_official import TSV
    tsv = tmp_path/"data"/"MMBench_DEV_EN.tsv"; tsv.parent.mkdir(); shutil.copy(TSV, tsv)
    (tmp_path/"settings.ini").write_text("[DEFAULT]\n")
    p = write(tmp_path/"params"/"mmb.yaml", "name: mmb_stale\nnotebook: " + str(SMOKE.parent/"mmbench.ipynb") +   # the file
              "\nfixed: {domain: mmbench_tsv, data: data/MMBench_DEV_EN.tsv, n_items: 0, n_boot: 20, model: 'scripted:letter_a'}\n")  # by a path relative to the project
    kw = dict(workers=1, reports_dir=tmp_path/"reports", cache_path=tmp_path/"c.sqlite", progress=False)
    first = run_sweep(p, **kw)
    assert [r.status for r in first.runs] == ["ok"], first.describe()
    assert [r.status for r in run_sweep(p, **kw).runs] == ["skipped"]                 # nothing changed: reused
    text = tsv.read_bytes(); at = text.index(b"Which")
    tsv.write_bytes(text[:at] + b"whICH"[:1] + text[at + 1:])                       # 'Which' -> 'which' in one question
    third = run_sweep(p, **kw)
    assert [r.status for r in third.runs] == ["ok"], third.describe()                 # not "skipped" with the old results
    recorded = read_manifest(third.sweep_dir/third.runs[0].run)["study"]["inputs"]["files"]
    assert {(f["path"], f["sha256"]) for f in recorded} == {(str(tsv.resolve()), file_sha256(tsv))}
