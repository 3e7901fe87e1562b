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
