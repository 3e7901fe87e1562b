"""Issue 25, "bounded and clear": each test here failed before its fix.

A server that drips bytes is cut off at timeout_s; a key given twice and YAML alias bombs are refused; `None` is
accepted where a parameters cell documents it; two params files of one name started together: one is refused; an
unusable cache or reports folder is one line naming it (a read-only cache still serves its answers); `mmresearch
score` with a folder, a cut .gz, Latin-1 or UTF-16 text is one line naming the file (and line)."""
import contextlib
import gzip
import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from mmresearch.core import Request, user
from mmresearch.models import OpenAIChatModel
from mmresearch.report import read_manifest, read_sweep
from mmresearch.sweep import folder_lock, load_params
from test_sweep import ROOT, cli, write


@contextlib.contextmanager
def dripping_server(stop: threading.Event):
    "An HTTP server on 127.0.0.1 that answers 200 with a 10,000-byte body, then sends one byte every 0.2 s until `stop` (at most 30 s)."
    srv = socket.create_server(("127.0.0.1", 0)); srv.settimeout(0.1)
    def serve():
        while not stop.is_set():
            try: conn, _ = srv.accept()
            except OSError: continue
            with conn:
                conn.settimeout(5); conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n{")
                for _ in range(150):
                    if stop.wait(0.2): break
                    try: conn.sendall(b" ")
                    except OSError: break
    t = threading.Thread(target=serve, daemon=True); t.start()
    try: yield f"http://127.0.0.1:{srv.getsockname()[1]}/v1"
    finally:
        stop.set(); t.join(10); srv.close()


def test_timeout_bounds_the_whole_attempt():
    stop = threading.Event()
    with dripping_server(stop) as url:
        m = OpenAIChatModel("m", base_url=url, api_key_env=None, timeout_s=1.0, max_retries=0)
        t0 = time.perf_counter()
        r = m.generate([Request([user("hi")])])[0]
        took = time.perf_counter() - t0
        stop.set()
    assert not r.ok and r.error.kind == "timeout" and "timeout_s=1" in r.error.message, r
    assert took < 10, took            # each byte arrives within the per-read timeout: before, the attempt never ended


def test_params_duplicates_aliases_and_documented_none(tmp_path):
    dup = write(tmp_path/"dup.yaml", "notebook: SMOKE\nfixed: {n_samples: 4}\ngrid: {cot: [true]}\nfixed: {seed: 3}\n")
    out = cli("sweep", str(dup), "--reports", str(tmp_path/"reports"), cwd=tmp_path)
    assert out.returncode == 2 and f"{dup}: line 4: key 'fixed' is given twice (first on line 2)" in out.stderr, out.stderr
    levels = "".join(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 6))
    bomb = write(tmp_path/"bomb.yaml", "notebook: SMOKE\nl0: &l0 [x, x, x, x, x, x, x, x, x, x]\n" + levels)  # 10^6 values
    out = cli("sweep", str(bomb), "--reports", str(tmp_path/"reports"), cwd=tmp_path)
    assert out.returncode == 2 and "aliases expand to more than 100,000 values" in out.stderr and str(bomb) in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not (tmp_path/"reports").exists()
    pope = ROOT/"nbs"/"experiments"/"pope.ipynb"                 # n_samples: "None: all of them"
    assert load_params(write(tmp_path/"all.yaml", f"notebook: {pope}\nfixed: {{n_samples: null}}\n")).fixed["n_samples"] is None
    with pytest.raises(ValueError, match="fixed.n_samples is None"):   # the smoke study documents no None
        load_params(write(tmp_path/"none.yaml", "notebook: SMOKE\nfixed: {n_samples: null}\n"))


def test_two_files_of_one_name_started_together(tmp_path):
    reports = tmp_path/"reports"
    files = [write(tmp_path/f"{x}.yaml", f"name: same\nnotebook: SMOKE\nfixed: {{model: 'scripted:yes', n_samples: 2, seed: {i}}}\n")
             for i, x in enumerate("ab")]
    (reports/"same").mkdir(parents=True)
    procs, waiting = [], [threading.Event(), threading.Event()]
    err = [[], []]
    def read(i, p):
        for line in p.stderr:
            err[i].append(line)
            if "waiting for it" in line: waiting[i].set()
    with folder_lock(reports/"same"):                                      # both start while the folder is busy
        for i, f in enumerate(files):
            p = subprocess.Popen([sys.executable, "-m", "mmresearch.cli", "sweep", str(f), "--workers", "1", "--reports", str(reports),
                                  "--cache", str(tmp_path/"c.sqlite"), "--no-progress"], cwd=tmp_path, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            threading.Thread(target=read, args=(i, p), daemon=True).start(); procs.append(p)
        for i in range(2): assert waiting[i].wait(300), "".join(err[i])
    codes = sorted(p.wait(timeout=600) for p in procs)
    assert codes == [0, 2], (codes, err)                                    # one owns the name, the other is refused
    refused = "".join(err[[p.returncode for p in procs].index(2)])
    assert "'same' is already used by" in refused
    owner = [f for f, p in zip(files, procs) if p.returncode == 0][0]
    assert read_sweep(reports/"same")["params_file"] == owner.name


def _make_read_only(path: Path) -> Callable:
    "Make `path` unwritable for this process (chmod, or chattr +i for root); returns the undo; skips when neither works."
    if os.geteuid() != 0:
        mode = path.stat().st_mode; path.chmod(0o555 if path.is_dir() else 0o444)
        return lambda: path.chmod(mode)
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0: pytest.skip("cannot make a file read-only here")
    return lambda: subprocess.run(["chattr", "-i", str(path)], check=True)


def test_cache_and_reports_folder_problems_are_one_line(tmp_path):
    p = write(tmp_path/"c.yaml", "notebook: SMOKE\nfixed: {model: 'scripted:yes', n_samples: 2, n_boot: 10}\n")
    def sweep(cache, reports="reports"):
        return cli("sweep", str(p), "--workers", "1", "--reports", str(tmp_path/reports), "--cache", str(cache), "--no-progress", cwd=tmp_path)
    (tmp_path/"notes.sqlite").write_text("these are my notes, not a cache\n" * 100)
    (tmp_path/"folder.sqlite").mkdir()
    cache_dir = tmp_path/"cache"; cache_dir.mkdir()
    first = sweep(cache_dir/"c.sqlite")
    assert first.returncode == 0, first.stdout + first.stderr
    data = (cache_dir/"c.sqlite").read_bytes(); (tmp_path/"cut.sqlite").write_bytes(data[:len(data) // 2 + 100])
    for bad, needle in [("notes.sqlite", "is not a readable SQLite database"), ("cut.sqlite", "is not a readable SQLite database"),
                        ("folder.sqlite", "is a folder, not a file")]:
        out = sweep(tmp_path/bad, reports=f"reports-{bad}")
        assert out.returncode == 2, out.stdout + out.stderr
        assert out.stderr.count("\n") == 1 and f"response cache {tmp_path/bad} {needle}" in out.stderr, out.stderr
    # a read-only cache (file and folder) still serves every answer it holds
    undo = [_make_read_only(cache_dir/"c.sqlite"), _make_read_only(cache_dir)]
    try:
        out = sweep(cache_dir/"c.sqlite", reports="reports-ro-cache")
        assert out.returncode == 0, out.stdout + out.stderr
        run = read_sweep(tmp_path/"reports-ro-cache"/"c")["runs"][0]["run"]
        cache = read_manifest(tmp_path/"reports-ro-cache"/"c"/run)["study"]["cache"]
        assert (cache["hits"], cache["calls"]) == (2, 0), cache
    finally:
        for u in reversed(undo): u()
    # a read-only reports folder: one line naming it
    (tmp_path/"ro-reports").mkdir(); undo = _make_read_only(tmp_path/"ro-reports")
    try: out = sweep(cache_dir/"c.sqlite", reports="ro-reports")
    finally: undo()
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert f"reports folder {tmp_path/'ro-reports'/'c'} is not writable" in out.stderr, out.stderr


def test_score_input_problems_are_one_line(tmp_path):
    rows = [{"sample_id": f"s{i}", "caption_type": "true", "answer": "Yes"} for i in range(40)]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    (tmp_path/"latin1.jsonl").write_bytes((text + '{"sample_id": "s99", "caption_type": "true", "answer": "Oui, très"}\n').encode("latin-1"))
    (tmp_path/"utf16.jsonl").write_bytes(text.encode("utf-16"))
    gz = gzip.compress(text.encode() * 20); (tmp_path/"cut.jsonl.gz").write_bytes(gz[:len(gz) // 2])
    for target, needle in [(tmp_path, f"predictions file {tmp_path} is a folder"),
                           (tmp_path/"cut.jsonl.gz", f"{tmp_path/'cut.jsonl.gz'}: not a complete gzip file"),
                           (tmp_path/"latin1.jsonl", f"{tmp_path/'latin1.jsonl'}:41: not UTF-8 (byte 0xe8"),
                           (tmp_path/"utf16.jsonl", f"{tmp_path/'utf16.jsonl'}:1: UTF-16")]:
        out = cli("score", "haleval-disc", "--input", str(target), cwd=tmp_path)
        assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
        assert needle in out.stderr and "must be UTF-8" in out.stderr or "gzip" in needle or "folder" in needle, out.stderr
