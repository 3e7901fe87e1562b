"""Issue 25, "never unreadable": each test here failed before its fix.

Reports follow the umask (not mkstemp's 0600), damaged files of other sweeps in the reports folder are shown as broken
in the index without failing this sweep, matplotlib labels are literal text (a `$` in a model name is not mathtext),
and every experiment notebook writes metrics.csv atomically."""
import json
import os

import nbformat

from mmresearch.cli import main
from mmresearch.fakeserver import FakeChatServer
from mmresearch.report import read_sweep
from test_sweep import ROOT, write


def test_reports_readable_damaged_siblings_and_dollar_labels(tmp_path, capsys):
    reports = tmp_path/"reports"
    damaged = {"shape": ("sweep.json", '{"name": "shape", "runs": "oops"}'), "cut": ("r/metrics.csv", "metric,value\n\"f1"),
               "empty": ("r/metrics.csv", ""), "nokey": ("finding.json", '{"title": "t", "sentences": []}'),
               "list": ("sweep.json", "[1, 2]")}
    for name, (f, text) in damaged.items():               # another user's sweeps, damaged in five ways
        (reports/name/"r").mkdir(parents=True)
        (reports/name/"sweep.json").write_text(json.dumps({"name": name, "runs": [{"run": "r", "status": "ok", "grid": {}}]}))
        (reports/name/f).write_text(text)
    old_mask = os.umask(0o022)
    try:
        with FakeChatServer() as srv:
            p = write(tmp_path/"dollar.yaml", f"notebook: SMOKE\nheadline: accuracy\nfixed: {{base_url: '{srv.base_url}', n_samples: 2, n_boot: 10}}\n"
                                              "grid: {model: ['openai:a$\\undefinedmacro$', 'openai:b$\\frac{$']}\n")
            code = main(["sweep", str(p), "--workers", "1", "--reports", str(reports), "--cache", str(tmp_path/"c.sqlite"), "--no-progress"])
    finally: os.umask(old_mask)
    out = capsys.readouterr()
    assert code == 0, out.out + out.err                                      # the damaged siblings do not fail this sweep
    info = read_sweep(reports/"dollar")
    assert [r["status"] for r in info["runs"]] == ["ok", "ok"], info["runs"]   # `$...$` in the model name: the plot is drawn
    sweep_dir = reports/"dollar"; run_dir = sweep_dir/info["runs"][0]["run"]
    assert (sweep_dir/"summary.html").exists() and (sweep_dir/"finding.png").exists()
    for f in (reports/"index.html", sweep_dir/"summary.html", sweep_dir/"sweep.json", sweep_dir/"finding.json",
              run_dir/"run.html", run_dir/"manifest.json", run_dir/"metrics.csv"):
        assert f.stat().st_mode & 0o777 == 0o644, (f, oct(f.stat().st_mode))  # umask 022: readable by the web server
    index = (reports/"index.html").read_text()
    for name, (f, _) in damaged.items():
        assert f"{reports/name/f} is damaged" in index, name                  # shown broken, naming the file
    assert 'href="dollar/summary.html"' in index


def test_experiments_write_metrics_atomically():
    for p in sorted((ROOT/"nbs"/"experiments").glob("*.ipynb")):
        src = "\n".join(c.source for c in nbformat.read(p, as_version=4).cells if c.cell_type == "code")
        if "metrics.csv" not in src: continue
        assert 'write_csv(' in src and '.to_csv(out/"metrics.csv"' not in src, p.name
