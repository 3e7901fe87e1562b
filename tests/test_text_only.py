"""A question asked without a picture (HallusionBench's visual_input 0) is a sample without an image and a request of
text alone: the scripted model, the embedded tiny model and an OpenAI-compatible server (the fake server) each answer
it, no image is sent, and the cache keeps it apart from the same question asked with a picture."""
from PIL import Image

from mmresearch.cache import CachedModel, ResponseCache
from mmresearch.core import ImageRef, Request, Sample, user
from mmresearch.fakeserver import FakeChatServer, count_images, default_answer
from mmresearch.models import OpenAIChatModel, ScriptedModel, load_model

QUESTION = "Is Switzerland the leading importing country of gold, silverware, and jewelry in 2018?"
TEXT_ONLY = Sample("VS_chart_0_0_1", None, "hallusionbench", {"question": QUESTION})
WITH_FIGURE = Sample("VS_chart_0_1_1", ImageRef(Image.new("RGB", (16, 16), "white")), "hallusionbench", {"question": QUESTION})


def ask(s: Sample) -> Request:
    return Request([user(s.image, s.meta["question"])], max_new_tokens=4)


def test_a_sample_without_an_image_is_a_text_only_request():
    req = ask(TEXT_ONLY)
    assert req.images == [] and req.messages[0].content == (QUESTION,)
    assert req.fingerprint != ask(WITH_FIGURE).fingerprint


def test_scripted_model_and_cache(tmp_path):
    cached = CachedModel(ScriptedModel("echo"), ResponseCache(tmp_path/"c.sqlite"))
    first = cached.generate([ask(TEXT_ONLY), ask(WITH_FIGURE)])
    assert [r.text for r in first] == [QUESTION, QUESTION] and cached.stats.calls == 2   # two keys: with and without the picture
    again = cached.generate([ask(TEXT_ONLY)])
    assert again[0].text == QUESTION and cached.stats.hits == 1


def test_tiny_model_answers_text_alone_and_beside_a_picture():
    tiny = load_model("tiny")
    out = tiny.generate([ask(TEXT_ONLY), ask(WITH_FIGURE)])   # one batch, one request without an image
    assert all(r.ok and r.text.strip() for r in out), out
    assert out[0].prompt_tokens < out[1].prompt_tokens   # no image tokens in the text-only prompt


def test_fake_openai_server_gets_no_image_part():
    bodies = []
    def answer(body: dict) -> str:
        bodies.append(body)
        return default_answer(body)
    with FakeChatServer(answer=answer) as server:
        out = OpenAIChatModel("fake", base_url=server.base_url, api_key_env=None).generate([ask(TEXT_ONLY), ask(WITH_FIGURE)])
    assert sorted(r.text for r in out) == sorted([f"echo[0 images]: {QUESTION}", f"echo[1 images]: {QUESTION}"])
    text_body = next(b for b in bodies if count_images(b) == 0)
    assert text_body["messages"] == [{"role": "user", "content": QUESTION}]   # plain text content, no image part
