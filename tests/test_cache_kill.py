"""A run killed with SIGKILL loses only its in-flight requests; re-running asks nothing that was finished."""
import os
import signal
import subprocess
import sys
import textwrap
import time

from mmresearch.cache import CachedModel, ResponseCache
from mmresearch.core import Request, user
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
