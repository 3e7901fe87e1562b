"""The OpenAI-compatible backend against a real local HTTP server: concurrency bound, ordering, retries, cache."""
import random

from PIL import Image

from mmresearch.cache import CachedModel, ResponseCache
from mmresearch.core import ImageRef, Request, user
from mmresearch.fakeserver import FakeChatServer, request_text
from mmresearch.models import OpenAIChatModel


def _requests(n: int, image: bool = True) -> list[Request]:
    img = ImageRef(Image.new("RGB", (8, 8), "blue"))
    return [Request([user(img, f"question {i}") if image else user(f"question {i}")], max_new_tokens=4) for i in range(n)]


def test_concurrency_is_bounded_and_order_kept():
    jitter = random.Random(0)
    def answer(body):  # answers arrive out of order: each waits a random time
        import time; time.sleep(jitter.uniform(0, 0.03))
        return request_text(body).split()[-1]
    with FakeChatServer(answer=answer) as srv:
        model = OpenAIChatModel("fake", base_url=srv.base_url, api_key_env=None, max_concurrency=8)
        out = model.generate(_requests(80))
    assert [o.text for o in out] == [str(i) for i in range(80)]
    assert 2 <= srv.max_in_flight <= 8, srv.max_in_flight
    assert srv.calls == 80


def test_retries_then_typed_errors_and_the_cache_never_serves_them(tmp_path):
    with FakeChatServer() as srv:
        model = OpenAIChatModel("fake", base_url=srv.base_url, api_key_env=None, max_retries=2, backoff_s=0.001)
        cached = CachedModel(model, ResponseCache(tmp_path/"c.sqlite"))
        reqs = [Request([user("fine")]), Request([user("busy [[status=429 times=5]]")]), Request([user("bad [[status=422]]")])]
        first = cached.generate(reqs)
        assert first[0].ok and first[1].error.kind == "rate_limit" and first[1].error.retryable
        assert first[2].error.kind == "bad_request" and first[2].error.status == 422
        assert srv.statuses[429] == 3 and srv.statuses[422] == 1
        calls = srv.calls
        second = cached.generate(reqs)       # the success is a hit; both errors are asked again
        # the 429 request's attempts 4 and 5 fail and attempt 6 succeeds; the 422 is asked once more
        assert srv.calls - calls == 3 + 1 and second[0] == first[0] and second[1].ok
        assert {e["kind"] for e in cached.cache.error_log()} == {"rate_limit", "bad_request"}


def test_second_pass_makes_no_server_calls(tmp_path):
    with FakeChatServer() as srv:
        cached = CachedModel(OpenAIChatModel("fake", base_url=srv.base_url, api_key_env=None), ResponseCache(tmp_path/"c.sqlite"))
        first = cached.generate(_requests(50))
        calls = srv.calls
        second = cached.generate(_requests(50))
    assert calls == 50 and srv.calls == 50 and first == second
    assert cached.stats.hits == 50


def _waits_for(prompt: str, **kw) -> tuple[list[float], object]:
    "The waits between attempts for one request (recorded, not slept), and its response."
    waits = []
    async def note(seconds: float) -> None: waits.append(seconds)
    with FakeChatServer() as srv:
        model = OpenAIChatModel("fake", base_url=srv.base_url, api_key_env=None, sleep=note, **kw)
        out = model.generate([Request([user(prompt)])])[0]
    return waits, out


def test_retry_after_seconds_and_dates_are_honoured_up_to_the_cap():
    kw = dict(max_retries=3, backoff_s=0.5, max_retry_after_s=10)
    waits, out = _waits_for("busy [[status=429 retry_after=3 times=1]]", **kw)
    assert out.ok and waits == [3.0]
    waits, out = _waits_for("down [[status=503 retry_after=@6 times=1]]", **kw)   # an HTTP date about 6 s ahead
    assert out.ok and len(waits) == 1 and 4.0 <= waits[0] <= 6.0, waits       # (the date has whole seconds)
    waits, out = _waits_for("busy [[status=429 retry_after=999 times=1]]", **kw)
    assert out.ok and waits == [10.0]                                         # capped at max_retry_after_s
    waits, out = _waits_for("down [[status=503 retry_after=@3600 times=1]]", **kw)
    assert out.ok and waits == [10.0]


def test_without_retry_after_the_backoff_is_exponential_with_jitter():
    kw = dict(max_retries=3, backoff_s=0.5, max_retry_after_s=10)
    waits, out = _waits_for("busy [[status=429 times=2]]", **kw)
    assert out.ok and len(waits) == 2 and 0.25 <= waits[0] <= 0.75 and 0.5 <= waits[1] <= 1.5, waits
    # a 500's Retry-After is not a rate-limit hint: plain backoff
    waits, out = _waits_for("broken [[status=500 retry_after=7 times=1]]", **kw)
    assert out.ok and len(waits) == 1 and 0.25 <= waits[0] <= 0.75, waits
    # the server's hint first, then backoff when the next refusal carries none
    waits, out = _waits_for("busy [[status=429 retry_after=2 times=1]] [[status=429 times=2]]", **kw)
    assert out.ok and waits[0] == 2.0 and 0.5 <= waits[1] <= 1.5, waits
    # retries run out: the last refusal is the typed error, after max_retries waits
    waits, out = _waits_for("always busy [[status=429 retry_after=1]]", **kw)
    assert out.error.kind == "rate_limit" and waits == [1.0, 1.0, 1.0]


def test_answers_that_queue_up_during_a_commit_are_committed_together(tmp_path):
    "While one commit runs (slowed here to 0.5 s), the wave's other answers queue up and go in together: a few transactions, not 64."
    import time
    commits = []
    class SlowCache(ResponseCache):
        def put_many(self, items, secrets=None):
            items = list(items); commits.append(len(items))
            if len(commits) == 1: time.sleep(0.5)
            return super().put_many(items, secrets)
    with FakeChatServer(latency_s=0.2) as srv:
        model = OpenAIChatModel("fake", base_url=srv.base_url, api_key_env=None, max_concurrency=64)
        out = CachedModel(model, SlowCache(tmp_path/"c.sqlite")).generate(_requests(64))
    assert all(o.ok for o in out) and sum(commits) == 64
    assert len(commits) <= 8, commits    # one commit per answer before: 64 of 1 (how the wave splits depends on the machine's load)
    assert len(ResponseCache(tmp_path/"c.sqlite")) == 64


def test_the_fake_servers_latency_counts_from_arrival():
    "A server that spends 0.15 s on an answer still answers 0.3 s after the request arrived, not 0.45 s."
    import time
    def slow(body):
        time.sleep(0.15); return "ok"
    with FakeChatServer(answer=slow, latency_s=0.3) as srv:
        model = OpenAIChatModel("fake", base_url=srv.base_url, api_key_env=None)
        out = model.generate(_requests(1))
    assert out[0].ok and 0.3 <= out[0].latency_s < 0.42, out[0].latency_s
