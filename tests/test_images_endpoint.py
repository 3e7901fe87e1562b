"""The images endpoint generator is as sturdy as the chat client (issue 39) and asks many prompts at a time (issue 40),
against the fake OpenAI-compatible images server over a real socket: each attempt bounded as a whole, 429/5xx retried
honouring Retry-After, a pixel limit checked before decoding, a reply that is not an image named as such, a damaged PNG
in the image cache detected by its hash and made again, and up to `max_concurrency` requests in flight."""
import io

import pytest
from PIL import Image

from mmresearch.core import MAX_IMAGE_PIXELS
from mmresearch.fakeserver import FakeImagesServer, default_image
from mmresearch.t2i_generate import ImageStore, OpenAIImagesGenerator, generate_cached
from mmresearch.t2i_judge import T2IPrompt


def prompts(*texts: str) -> list[T2IPrompt]:
    return [T2IPrompt(f"p{i}", t, "color") for i, t in enumerate(texts)]


def recorder() -> tuple[list[float], object]:
    "Waits between attempts, recorded instead of slept."
    waits = []
    async def sleep(seconds: float) -> None: waits.append(seconds)
    return waits, sleep


def test_each_attempt_is_bounded_as_a_whole(tmp_path):
    # the reply's bytes arrive over 3 s in gaps of 0.15 s: a per-read timeout of 1 s never fires, a whole-attempt bound does
    with FakeImagesServer() as srv:
        gen = OpenAIImagesGenerator("fake", srv.base_url, timeout_s=1.0, max_retries=0)
        with pytest.raises(RuntimeError, match=r"timeout_s=1 s") as e:
            generate_cached(prompts("slow [[drip=3]]"), gen, ImageStore(tmp_path))
    assert "'p0'" in str(e.value)


def test_rate_limits_and_server_errors_are_retried_honouring_retry_after(tmp_path):
    waits, sleep = recorder()
    with FakeImagesServer() as srv:
        gen = OpenAIImagesGenerator("fake", srv.base_url, backoff_s=0.01, sleep=sleep)
        samples, counts = generate_cached(prompts("busy [[status=429 retry_after=7 times=1]]", "down [[status=503 times=2]]"),
                                          gen, ImageStore(tmp_path))
        assert counts == {"made": 2, "cached": 0}
        assert srv.statuses == {429: 1, 503: 2, 200: 2}
    assert 7.0 in waits and len(waits) == 3               # the server's 7 s; two backoffs for the 503s
    assert all(0.005 <= w <= 0.03 for w in sorted(waits)[:2]), waits   # no header: backoff_s (doubling) with jitter
    assert samples[0].image.load().size == (16, 16)


def test_a_reply_with_too_many_pixels_is_refused_before_decoding(tmp_path):
    store = ImageStore(tmp_path)
    with FakeImagesServer() as srv:
        gen = OpenAIImagesGenerator("fake", srv.base_url, backoff_s=0.01)
        with pytest.raises(RuntimeError) as e:
            generate_cached(prompts("huge [[pixels=9000x9000]]"), gen, store)
        assert srv.calls == 1                              # refused, not retried: the same request would get the same reply
    # the header is read, the data never decoded (it holds one row: decoding would fail with 'truncated', not this)
    assert "9000x9000" in str(e.value) and f"{MAX_IMAGE_PIXELS:,}" in str(e.value) and "'p0'" in str(e.value)
    assert not list(tmp_path.rglob("*.png"))                # nothing was cached


def test_a_reply_that_is_not_an_image_is_named_as_such(tmp_path):
    with FakeImagesServer() as srv:
        gen = OpenAIImagesGenerator("fake", srv.base_url, backoff_s=0.01)
        with pytest.raises(RuntimeError, match=r"is not an image") as e:
            generate_cached(prompts("a page [[not_image]]"), gen, ImageStore(tmp_path))
        assert srv.calls == 1 and srv.base_url in str(e.value)
    assert "<!DOCTYPE html>" in str(e.value) and "'p0'" in str(e.value)


@pytest.mark.parametrize("damage", ["truncated", "bytes changed"])
def test_a_damaged_png_in_the_image_cache_is_made_again(tmp_path, damage):
    store, ps = ImageStore(tmp_path), prompts("a red bench", "two boys")
    with FakeImagesServer() as srv:
        first, counts = generate_cached(ps, OpenAIImagesGenerator("fake", srv.base_url), store)
        assert counts == {"made": 2, "cached": 0}
        path = first[0].image.source
        data = path.read_bytes()
        # cut mid-stream (a full disk, a copy killed) or the same length with other pixel bytes (a bad sector)
        path.write_bytes(data[:len(data) // 2] if damage == "truncated" else data[:-20] + bytes(b ^ 0xFF for b in data[-20:-16]) + data[-16:])
        again, counts = generate_cached(ps, OpenAIImagesGenerator("fake", srv.base_url), store)
        assert counts == {"made": 1, "cached": 1} and len(srv.bodies) == 3
    assert path.read_bytes() == data and again[0].image.sha256 == first[0].image.sha256
    assert again[0].image.load().size == (16, 16)


def test_many_requests_in_flight_and_every_image_to_its_prompt(tmp_path):
    ps = prompts(*[f"prompt {i}" for i in range(24)])
    with FakeImagesServer(latency_s=0.3) as srv:
        gen = OpenAIImagesGenerator("fake", srv.base_url, max_concurrency=8)
        samples, counts = generate_cached(ps, gen, ImageStore(tmp_path))
        assert counts == {"made": 24, "cached": 0} and srv.calls == 24
        assert srv.max_in_flight == 8                    # one at a time before
    for p, s in zip(ps, samples):                         # each image is its own prompt's (the server's colour of it)
        assert s.id == p.id and s.image.load().tobytes() == Image.open(io.BytesIO(default_image({"prompt": p.text}))).convert("RGB").tobytes()


def test_failures_are_named_and_the_other_images_are_kept(tmp_path):
    store = ImageStore(tmp_path)
    with FakeImagesServer() as srv:
        ps = prompts("fine", "refused [[status=400]]", "also fine")
        with pytest.raises(RuntimeError, match=r"1 of 3 prompts") as e:
            generate_cached(ps, OpenAIImagesGenerator("fake", srv.base_url), store)
        assert "'p1'" in str(e.value) and "HTTP 400" in str(e.value)
        _, counts = generate_cached([ps[0], ps[2]], OpenAIImagesGenerator("fake", srv.base_url), store)
    assert counts == {"made": 0, "cached": 2}              # the two images made beside the failure were stored
