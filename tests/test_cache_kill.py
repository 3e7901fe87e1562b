"""A run killed with SIGKILL loses only its in-flight requests; re-running asks nothing that was finished. Processes that
create one cache file at once all succeed."""
import os
import signal
import subprocess
import sys
import textwrap
import time

from mmresearch.cache import CachedModel, ResponseCache
from mmresearch.core import Request, Response, user
from mmresearch.fakeserver import FakeChatServer
from mmresearch.models import OpenAIChatModel

N, CONCURRENCY = 300, 4
RUN = textwrap.dedent("""
    import sys
    from mmresearch.cache import CachedModel, ResponseCache
    from mmresearch.core import Request, user
    from mmresearch.models import OpenAIChatModel
    base_url, db, n, conc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    model = OpenAIChatModel("fake", base_url=base_url, api_key_env=None, max_concurrency=conc)
    CachedModel(model, ResponseCache(db)).generate([Request([user(f"q{i}")]) for i in range(n)])
""")


def _wait_for(predicate, what: str, timeout_s: float = 60.0) -> None:
    "Poll until `predicate()` holds; the deadline only guards against a hung test."
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline: raise TimeoutError(f"waited {timeout_s}s for {what}")
        time.sleep(0.01)


def test_sigkill_then_resume(tmp_path):
    db = tmp_path/"cache.sqlite"
    with FakeChatServer(latency_s=0.02) as srv:
        proc = subprocess.Popen([sys.executable, "-c", RUN, srv.base_url, str(db), str(N), str(CONCURRENCY)])
        try:
            _wait_for(lambda: db.exists() and len(ResponseCache(db)) >= 60, "60 cached answers")
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.wait()
        assert proc.returncode == -signal.SIGKILL
        _wait_for(lambda: srv.in_flight == 0, "the killed client's last requests to drain")
        cache = ResponseCache(db)
        finished = len(cache)
        answered_before = list(srv.answered)
        assert 60 <= finished < N, finished
        # what the server answered but the cache lacks is what was in flight at the kill
        assert len(answered_before) - finished <= CONCURRENCY, (len(answered_before), finished)

        model = OpenAIChatModel("fake", base_url=srv.base_url, api_key_env=None, max_concurrency=CONCURRENCY)
        resumed = CachedModel(model, cache)
        out = resumed.generate([Request([user(f"q{i}")]) for i in range(N)])
    asked_again = srv.answered[len(answered_before):]
    assert all(o.ok for o in out) and [o.text for o in out] == [f"echo[0 images]: q{i}" for i in range(N)]
    assert resumed.stats.hits == finished and resumed.stats.calls == N - finished
    assert len(asked_again) == N - finished                      # zero repeated calls for finished requests
    assert len(ResponseCache(db)) == N


def _open_and_write(path: str, lo: int, hi: int) -> str:
    "Open the cache at `path` (maybe being created by another process this instant) and write keys lo..hi-1."
    try:
        cache = ResponseCache(path)
        for i in range(lo, hi, 5): cache.put_many((f"k{j}", "m", f"r{j}", Response(f"v{j}")) for j in range(i, min(i + 5, hi)))
        return "ok"
    except Exception as e: return f"{type(e).__name__}: {e}"


def test_processes_creating_one_cache_at_once_all_succeed(tmp_path):
    "Four processes open a new file together, 200 times: the switch to WAL used to fail some of them with 'database is locked'."
    import multiprocessing as mp
    failures = []
    with mp.get_context("fork").Pool(4) as pool:
        for n in range(200):
            db = str(tmp_path/f"c{n}.sqlite")
            failures += [r for r in pool.starmap(_open_and_write, [(db, 0, 30), (db, 20, 50), (db, 40, 70), (db, 60, 90)]) if r != "ok"]
            assert len(ResponseCache(db)) == 90 or failures
    assert failures == []
