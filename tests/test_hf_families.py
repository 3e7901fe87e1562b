"""Real VLM families through the Hugging Face backend: tiny random models of each (tests/make_tiny_families.py, built
offline into a temporary folder) load through `load_model`, get a well-formed prompt, and answer the same in a batch
as alone, with static and continuous batching and mixed token limits."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from make_tiny_families import FAMILIES, make_tiny_family
from mmresearch.core import ImageRef, Request, user
from mmresearch.models import HFModel, load_model, torchvision_usable

VIDEO_FAMILIES = {"qwen2_vl", "qwen2_5_vl", "llava_onevision", "internvl", "smolvlm2"}  # their processors hold a video processor
CONTINUOUS = {"llava_15", "llava_next", "llava_onevision", "internvl", "idefics3", "smolvlm2"}  # greedy by continuous batching
BOS_IN_TEMPLATE = {"gemma3", "mllama", "idefics3", "smolvlm2"}  # the chat template writes BOS itself


def hf(folder, **kw) -> HFModel:
    "The model in `folder` on the CPU: on a GPU, kernels may differ with the batch shape, which is another question."
    return HFModel(folder, device="cpu", **kw)


@pytest.fixture(scope="module")
def families(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("families")
    return {name: make_tiny_family(name, root/name) for name in FAMILIES}


def requests(limits=(3, 6, 6, 2, 6, 1)) -> list[Request]:
    "Questions about pictures of different sizes and colours, with different token limits."
    colours = ["red", "blue", "green", "red", "yellow", "white"]
    return [Request([user(ImageRef(Image.new("RGB", (40 + 9 * i, 36 + 5 * i), c)), f"is there a {c} circle ?")], max_new_tokens=n)
            for i, (c, n) in enumerate(zip(colours, limits))]


def answers(model: HFModel, reqs: list[Request]) -> list[tuple]:
    out = model.generate(reqs)
    assert all(r.ok for r in out), [r.error for r in out if not r.ok]
    return [(r.text, r.completion_tokens, r.finish_reason) for r in out]


@pytest.mark.parametrize("name", list(FAMILIES))
def test_prompt_has_image_tokens_and_one_bos(families, name):
    m = load_model({"kind": "hf", "model_id": str(families[name]), "device": "cpu"})
    proc = m.load()[0]
    out = [None]
    group = m._prompts(requests()[:1], out)
    assert out == [None] and len(group) == 1
    ids = m._encode(group)["input_ids"][0].tolist()
    assert ids.count(proc.image_token_id) >= 1, proc.tokenizer.decode(ids)
    bos = proc.tokenizer.bos_token_id
    if name.startswith("qwen") or name in ("llava_onevision", "internvl"):
        assert bos is None   # Qwen2 tokenizers have no BOS
    else:
        assert ids.count(bos) == 1, proc.tokenizer.convert_ids_to_tokens(ids)
        if name != "paligemma": assert ids[0] == bos   # PaliGemma puts the image tokens before BOS
    if name in BOS_IN_TEMPLATE: assert group[0][1].startswith(proc.tokenizer.bos_token)


@pytest.mark.parametrize("continuous", [True, False])
@pytest.mark.parametrize("name", list(FAMILIES))
def test_batched_greedy_equals_one_at_a_time(families, name, continuous):
    reqs = requests()
    model = hf(families[name], batch_size=4, continuous=continuous)
    assert model._continuous_ok() == (continuous and name in CONTINUOUS)
    batched = answers(model, reqs)
    alone = [answers(hf(families[name], batch_size=1, continuous=False), [r])[0] for r in reqs]
    assert batched == alone
    assert [n for _, n, _ in batched][-1] == 1 and sum(n for _, n, _ in batched) > 6   # limits obeyed, answers not empty
    assert len({text[:2] for text, _, _ in batched}) >= 3, batched   # answers depend on the question and picture


def test_video_families_load_without_torchvision(families):
    if torchvision_usable(): pytest.skip("torchvision works here: processors load through AutoProcessor as published")
    for name in VIDEO_FAMILIES:
        proc = hf(families[name]).load()[0]
        assert proc.get_attributes() == ["image_processor", "tokenizer"], (name, proc.get_attributes())
        assert type(proc).__name__ == json.loads((families[name]/"processor_config.json").read_text())["processor_class"]


def test_paligemma_without_chat_template_uses_its_own_format(families):
    folder = families["paligemma"]
    assert not list(folder.glob("chat_template*"))
    m = hf(folder)
    proc = m.load()[0]
    ids = m._encode(m._prompts(requests()[:1], [None]))["input_ids"][0].tolist()
    n = proc.image_seq_length
    assert ids[:n] == [proc.image_token_id] * n and ids[n] == proc.tokenizer.bos_token_id
    assert proc.tokenizer.decode(ids[n + 1:]) == "is there a red circle ?\n"


def test_template_error_is_a_failed_response_not_an_exception(families, tmp_path):
    folder = shutil.copytree(families["gemma3"], tmp_path/"gemma3")
    (folder/"chat_template.jinja").write_text("{{ raise_exception('System role not supported') }}")
    out = hf(folder).generate(requests()[:2])
    assert [r.error.kind for r in out] == ["model", "model"]
    assert "System role not supported" in out[0].error.message


def test_fingerprint_follows_chat_template_json(families, tmp_path):
    "The older hub layout keeps the template in chat_template.json; editing it must change the cache key."
    folder = shutil.copytree(families["llava_15"], tmp_path/"llava")
    template = (folder/"chat_template.jinja").read_text()
    (folder/"chat_template.jinja").unlink()
    (folder/"chat_template.json").write_text(json.dumps({"chat_template": template}))
    before = hf(folder).fingerprint
    (folder/"chat_template.json").write_text(json.dumps({"chat_template": template.replace("ASSISTANT:", "ASSISTANT: ")}))
    after = hf(folder).fingerprint
    assert before != after
    (folder/"chat_template.json").unlink()
    (folder/"chat_template.jinja").write_text(template)
    assert hf(folder).fingerprint not in (before, after)


@pytest.mark.parametrize("name", [n for n in FAMILIES if n != "paligemma"])   # PaliGemma's processor requires an image
def test_text_only_request_beside_image_requests(families, name):
    reqs = requests()[:2] + [Request([user("say hello")], max_new_tokens=3)]
    batched = answers(hf(families[name], batch_size=4), reqs)
    assert batched == [answers(hf(families[name], batch_size=1), [r])[0] for r in reqs]


def test_broken_torchvision_is_a_clear_error(families, tmp_path):
    "A torchvision built for another torch (as the registry's CUDA wheels beside a CPU torch) fails with the fix named."
    broken = tmp_path/"site"
    (broken/"torchvision").mkdir(parents=True)
    (broken/"torchvision"/"__init__.py").write_text('raise RuntimeError("operator torchvision::nms does not exist")\n')
    (broken/"torchvision-0.28.0.dist-info").mkdir()
    (broken/"torchvision-0.28.0.dist-info"/"METADATA").write_text("Metadata-Version: 2.1\nName: torchvision\nVersion: 0.28.0\n")
    code = f"from mmresearch.models import HFModel; HFModel({str(families['qwen2_vl'])!r}).load()"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(broken)})
    assert run.returncode != 0
    assert "torchvision is installed but does not import (RuntimeError: operator torchvision::nms" in run.stderr, run.stderr[-2000:]
    assert "pip uninstall torchvision" in run.stderr


def older_layout(folder: Path, dest: Path) -> Path:
    "A copy of `folder` in the layout most published checkpoints have: preprocessor_config.json, chat_template.json."
    dest = shutil.copytree(folder, dest)
    settings = json.loads((dest/"processor_config.json").read_text())
    image = {**settings.pop("image_processor"), "processor_class": settings["processor_class"]}
    (dest/"preprocessor_config.json").write_text(json.dumps(image, indent=2))
    (dest/"processor_config.json").write_text(json.dumps(settings, indent=2))
    if (dest/"chat_template.jinja").exists():
        template = (dest/"chat_template.jinja").read_text()
        (dest/"chat_template.jinja").unlink()
        (dest/"chat_template.json").write_text(json.dumps({"chat_template": template}))
    return dest


@pytest.mark.parametrize("name", list(FAMILIES))
def test_older_hub_layout_gives_the_same_answers(families, name, tmp_path):
    old = hf(older_layout(families[name], tmp_path/name))
    assert old.fingerprint != hf(families[name]).fingerprint
    reqs = requests()[:3]
    assert answers(old, reqs) == answers(hf(families[name]), reqs)


def test_the_batching_check_can_fail(families):
    "Forced onto Qwen2-VL, whose rotary positions are 3-D, continuous batching's 1-D positions change the answers."
    forced = hf(families["qwen2_vl"], batch_size=4)
    forced._continuous_ok = lambda: True
    reqs = requests()
    assert answers(forced, reqs) != [answers(hf(families["qwen2_vl"], batch_size=1), [r])[0] for r in reqs]


def test_template_kept_in_tokenizer_config(families, tmp_path):
    "Some checkpoints keep the chat template only in tokenizer_config.json; it is used, not the plain-text fallback."
    folder = shutil.copytree(families["mllama"], tmp_path/"mllama")
    settings = json.loads((folder/"tokenizer_config.json").read_text())
    settings["chat_template"] = (folder/"chat_template.jinja").read_text()
    (folder/"tokenizer_config.json").write_text(json.dumps(settings))
    (folder/"chat_template.jinja").unlink()
    moved, reqs = hf(folder), requests()[:3]
    assert moved._prompts(reqs, [None] * 3) == hf(families["mllama"])._prompts(reqs, [None] * 3)
    assert answers(moved, reqs) == answers(hf(families["mllama"]), reqs)
