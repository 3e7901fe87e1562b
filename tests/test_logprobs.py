"""Log-probability scoring (issue 14): a request's `score_options` come back as first-token probabilities from an
OpenAI-compatible server (the fake server's `logprobs`) and from Hugging Face models (the tiny families of
tests/make_tiny_families.py and the embedded tiny model), agree with the greedy answer, are cached under their own key,
and are a typed error, never a number, when the backend cannot give them."""
import math

import pytest
import torch
from PIL import Image

from make_tiny_families import make_tiny_family
from mmresearch.cache import CachedModel, ResponseCache
from mmresearch.core import ImageRef, Request, user
from mmresearch.fakeserver import FakeChatServer
from mmresearch.generation import yes_probabilities
from mmresearch.models import HFModel, OpenAIChatModel, ScriptedModel, load_model, tiny_model_path

YES_NO = ("yes", "no")


def picture(colour: str, size: int = 48) -> ImageRef:
    return ImageRef(Image.new("RGB", (size, size), colour))


def question(colour: str, n: int = 1, **kw) -> Request:
    return Request([user(picture(colour), f"is there a {colour} circle ?")], max_new_tokens=n, **kw)


# --- OpenAI-compatible server --------------------------------------------------------------------------------------

def first_token(body: dict) -> dict[str, float]:
    "Alternatives of the fake server's first token: 'red' questions lean yes, others no; case and space variants split the mass."
    red = "red" in str(body["messages"])
    return {"Yes": 0.5 if red else 0.1, " yes": 0.2 if red else 0.05, "No": 0.1 if red else 0.6, "no": 0.05 if red else 0.2,
            "The": 0.15 if red else 0.05}


def test_server_logprobs_merge_variants_and_are_cached(tmp_path):
    with FakeChatServer(answer=lambda b: "Yes", logprobs=first_token) as srv:
        cached = CachedModel(OpenAIChatModel("fake", base_url=srv.base_url, api_key_env=None), ResponseCache(tmp_path/"c.sqlite"))
        reqs = [question("red", score_options=YES_NO), question("blue", score_options=YES_NO)]
        first = cached.generate(reqs)
        assert [{o: round(p, 9) for o, p in r.option_probs.items()} for r in first] == [{"yes": 0.7, "no": 0.15},
                                                                                         {"yes": 0.15, "no": 0.8}]
        calls = srv.calls
        second = cached.generate(reqs)
        assert srv.calls == calls and cached.stats.hits == 2          # the second call is served from the cache
        assert second == first
        plain = cached.generate([question("red")])[0]                 # the same question without scoring: its own key
        assert srv.calls == calls + 1 and plain.option_probs is None
        p, why = yes_probabilities(cached, [question("red"), question("blue")])
        assert [round(x, 9) for x in p] == [round(0.7 / 0.85, 9), round(0.15 / 0.95, 9)] and why == [None, None]


def test_server_without_logprobs_is_a_typed_error(tmp_path):
    with FakeChatServer(answer=lambda b: "Yes") as srv:
        cached = CachedModel(OpenAIChatModel("fake", base_url=srv.base_url, api_key_env=None, max_retries=3),
                             ResponseCache(tmp_path/"c.sqlite"))
        r = cached.generate([question("red", score_options=YES_NO)])[0]
        assert not r.ok and r.error.kind == "unsupported" and srv.calls == 1    # not retried, no number made up
        p, why = yes_probabilities(cached, [question("red")])
        assert math.isnan(p[0]) and why[0].startswith("unsupported:")
        cached.generate([question("red", score_options=YES_NO)])
        assert srv.calls == 3                                                     # failures are not cached: asked each time


def test_option_outside_top_k_is_none_and_counts_zero():
    with FakeChatServer(answer=lambda b: "Yes", logprobs=first_token) as srv:
        m = OpenAIChatModel("fake", base_url=srv.base_url, api_key_env=None, top_logprobs=2)
        r = m.generate([question("red", score_options=YES_NO)])[0]
    assert r.option_probs == {"yes": pytest.approx(0.7), "no": None}     # top 2: "Yes" 0.5, " yes" 0.2
    assert "top2" in m.fingerprint


def test_scripted_model_cannot_score():
    r = ScriptedModel("yes").generate([question("red", score_options=YES_NO)])[0]
    assert r.error.kind == "unsupported"


# --- Hugging Face: the tiny families -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def llava(tmp_path_factory):
    return make_tiny_family("llava_15", tmp_path_factory.mktemp("fam")/"llava_15")


@pytest.fixture(scope="module")
def qwen(tmp_path_factory):
    return make_tiny_family("qwen2_vl", tmp_path_factory.mktemp("fam")/"qwen2_vl")


def reference_first_step(model: HFModel, r: Request) -> torch.Tensor:
    "Next-token probabilities after the prompt from transformers' own `generate`, outside mmresearch's decoding loops."
    proc, net = model.load()
    _, prompt, images = (0, *model._prompt(r))
    enc = model._encode([(0, prompt, images)])
    with torch.inference_mode():
        out = net.generate(**enc, max_new_tokens=1, do_sample=False, output_logits=True, return_dict_in_generate=True,
                           pad_token_id=proc.tokenizer.pad_token_id)
    return out.logits[0][0].float().softmax(-1)


@pytest.mark.parametrize("family", ["llava", "qwen"])
def test_hf_option_probs_match_transformers_and_greedy(family, request):
    folder = request.getfixturevalue(family)
    colours = ["red", "blue", "green"]
    for continuous in (True, False):   # llava_15 decodes continuously; qwen2_vl always statically
        m = HFModel(folder, device="cpu", batch_size=3, continuous=continuous)
        got = m.generate([question(c, 3, score_options=YES_NO) for c in colours])
        tok = m.load()[0].tokenizer
        for c, r in zip(colours, got):
            assert r.ok, r.error
            ref = reference_first_step(m, question(c, 3))
            ids = {o: {tok.encode(v, add_special_tokens=False)[0] for v in (o, o.capitalize(), o.upper())} for o in YES_NO}
            for o in YES_NO:   # the byte-level tokenizer starts "yes" with y/Y, "no" with n/N
                assert r.option_probs[o] == pytest.approx(float(ref[list(ids[o])].sum()), abs=1e-5)
            assert 0 < sum(r.option_probs.values()) <= 1
            top = int(ref.argmax())                       # the greedy answer starts with the most probable token
            first = tok.decode([top]).strip()
            if first and "\ufffd" not in first: assert r.text.startswith(first), (r.text, first)   # (a lone byte may not decode)
            if first.lower() in ("y", "n"):              # then its option holds at least that token's probability
                assert r.option_probs["yes" if first.lower() == "y" else "no"] >= float(ref[top]) - 1e-6


def test_hf_scores_cached_and_answers_unchanged(llava, tmp_path):
    cached = CachedModel(HFModel(llava, device="cpu"), ResponseCache(tmp_path/"c.sqlite"))
    reqs = [question(c, 4) for c in ("red", "blue")]
    plain = cached.generate(reqs)
    scored = cached.generate([Request(r.messages, max_new_tokens=4, score_options=YES_NO) for r in reqs])
    assert [s.text for s in scored] == [p.text for p in plain]
    assert cached.stats.calls == 4
    p1, _ = yes_probabilities(cached, reqs)
    p2, _ = yes_probabilities(cached, reqs)
    assert p1 == p2 and cached.stats.calls == 6 and cached.stats.hits == 2


def test_hf_option_outside_vocabulary_is_unsupported():
    m = load_model("tiny")   # the embedded word-level model: no token for "zebra"
    r = m.generate([question("red", score_options=("yes", "zebra"))])[0]
    assert r.error.kind == "unsupported" and "'zebra'" in r.error.message


# --- the embedded tiny model ---------------------------------------------------------------------------------------

def test_tiny_model_p_yes_agrees_with_its_pope_answers():
    "Word-level vocabulary: 'yes' and 'no' are single tokens, so a greedy yes/no answer is the option with more probability."
    from mmresearch.datasets import load_domain
    from mmresearch.pope import pope_items
    if not (tiny_model_path()/"config.json").exists(): pytest.skip("the embedded tiny model is not built")
    samples = list(load_domain("in_domain", n=4, seed=0))
    items = pope_items(samples, k=2, splits=("random",), seed=0)
    by_id = {s.id: s for s in samples}
    reqs = [Request([user(by_id[s].image, q)], max_new_tokens=1, score_options=YES_NO) for s, q in zip(items.sample_id, items.question)]
    out = load_model("tiny").generate(reqs)
    answered = [r for r in out if r.text.strip().lower() in YES_NO]
    assert len(answered) >= len(out) // 2, [r.text for r in out]
    for r in answered:
        word = r.text.strip().lower()
        assert r.option_probs[word] > r.option_probs["no" if word == "yes" else "yes"], r


# --- reasoning models: never the probability of a reasoning token (issue 22) ----------------------------------------

def test_hf_reasoning_template_is_unsupported(tmp_path):
    "A chat template that opens a think block for the answer (as Qwen3's thinking mode does) makes first-token scoring a typed error; answers still come."
    folder = make_tiny_family("qwen2_vl", tmp_path/"qwen2_vl")
    template = (folder/"chat_template.jinja").read_text()
    assert template.endswith("<|im_start|>assistant\n{% endif %}")
    (folder/"chat_template.jinja").write_text(template.replace("<|im_start|>assistant\n{% endif %}", "<|im_start|>assistant\n<think>\n{% endif %}"))
    model = HFModel(str(folder))
    p, why = yes_probabilities(model, [question("red")])
    assert math.isnan(p[0]) and why[0].startswith("unsupported:") and "reasoning" in why[0]
    assert model.generate([question("red", n=3)])[0].ok


@pytest.mark.parametrize("message", [{"content": "<think>", "reasoning_content": None},
                                     {"content": "Yes", "reasoning_content": "The image shows a red circle, so"},
                                     {"content": "Yes", "reasoning": "red circle present"}],
                         ids=["think-tag", "reasoning_content", "reasoning"])
def test_server_reasoning_is_unsupported(tmp_path, message):
    "A server whose reply reasons first (a think tag in the content, or vLLM/DeepSeek-style reasoning fields) gives no option probabilities."
    def body(b: dict) -> dict:
        return {"choices": [{"message": {"role": "assistant", **message}, "finish_reason": "length",
                             "logprobs": {"content": [{"token": "Yes", "logprob": -0.1, "top_logprobs": []}]}}]}
    from mmresearch.models import _parse_completion
    r = _parse_completion(body({}), 0.0, YES_NO)
    assert not r.ok and r.error.kind == "unsupported" and "reasoned" in r.error.message
    assert _parse_completion(body({}), 0.0).ok            # a plain answer (no score options) is still an answer
