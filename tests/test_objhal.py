"""Object HalBench (issue 41): RLAIF-V's figures reproduced on a hand-made answer file, and the study run end to end from
its files as a sweep, through the fake server and through the tiny model.

How the expected values were obtained: RLAIF-V's evaluator (RLHF-V/RLAIF-V at 83d917b, eval/eval_gpt_obj_halbench.py,
its CHAIR class and loaders unchanged) was run outside this repository, without the GPT extraction (compute_chair with
gpt_process=False: NLTK's tokenizer and WordNet's lemmatiser on the answer text, with its synonyms_refine.txt), on
tests/fixtures/objhal/answers_handmade.jsonl and the fixture's COCO annotations (the train pair it also requires given
empty). WordNet came from Debian's wordnet-base 3.0; every answer is one sentence, so NLTK's word_tokenize was called
with preserve_line=True (no Punkt model here) with the same tokens. It gives CHAIRs 0.6667, CHAIRs_refine 0.8, CHAIRi
0.3077, obj_rec 0.9, sentence_num 6, coco_sentence_num 5, coco_word_count 9, gt_word_count 10, avg_word_len 8.5; its
summary therefore prints Response Hall 80.00 and Object Hall 30.77. These answers use only words on which WordNet and
the CHAIR tool's singulariser agree."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from mmresearch.fakeserver import FakeChatServer, request_text
from mmresearch.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT/"tests"/"fixtures"/"objhal"


def score(*args: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "mmresearch.cli", "score", "objhal", *args], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_rlaifv_figures_on_a_hand_made_answer_file():
    res = score("--input", str(FIX/"answers_handmade.jsonl"), "--coco", str(FIX/"coco"), "--n-boot", "200")
    m = {r["metric"]: r for r in res["metrics"]}
    assert m["response_hallucination"]["value"] == pytest.approx(80.0) and m["response_hallucination"]["n"] == 5   # CHAIRs_refine, coco_sentence_num
    assert m["chair_i"]["value"] == pytest.approx(100 * 0.3076923076923077)                                       # CHAIRi
    assert m["chair_s"]["value"] == pytest.approx(100 * 0.6666666666666666) and m["chair_s"]["n"] == 6            # CHAIRs, sentence_num
    assert m["object_recall"]["value"] == pytest.approx(90.0) and m["object_recall"]["n"] == 10                    # obj_rec, gt_word_count
    assert m["mean_length"]["value"] == pytest.approx(8.5)                                                        # avg_word_len
    assert res["official"][:2] == ["Response Hall   : 80.00", "Object Hall     : 30.77"]
    for k in ("response_hallucination", "chair_i", "chair_s", "object_recall"):
        assert m[k]["ci_low"] <= m[k]["value"] <= m[k]["ci_high"]


def objhal_folder(root: Path) -> Path:
    "The fixture's question file and COCO annotations as a user's folder, a distinct picture per question."
    shutil.copytree(FIX/"coco", root); shutil.copy(FIX/"questions.jsonl", root/"questions.jsonl")
    (root/"val2014").mkdir()
    for k, line in enumerate((FIX/"questions.jsonl").read_text().splitlines()):
        Image.new("RGB", (24, 24), (k * 37 % 256, k * 91 % 256, 128)).save(root/json.loads(line)["image_path"])
    return root


def describer(body: dict) -> str:
    "A fake model that sees a dog and a clock everywhere."
    return "A dog sits next to a clock on a table." if request_text(body) else ""


def test_sweep_from_the_files_through_the_fake_server_and_the_tiny_model(tmp_path):
    data = objhal_folder(tmp_path/"objhal")
    (tmp_path/"settings.ini").write_text("[DEFAULT]\n")
    p = tmp_path/"params"/"objhal_test.yaml"; p.parent.mkdir()
    with FakeChatServer(answer=describer) as server:
        p.write_text(json.dumps({"name": "objhal_test", "notebook": str(ROOT/"nbs/experiments/objhal.ipynb"), "headline": "response_hallucination",
                                 "fixed": {"data_dir": str(data), "base_url": server.base_url, "api_key_env": None, "n_samples": None,
                                           "n_boot": 50, "max_new_tokens": 16}, "grid": {"model": ["openai:fake", "tiny"]}}))
        res = run_sweep(p, workers=2, reports_dir=tmp_path/"reports", cache_path=tmp_path/"c.sqlite", progress=False)
        asked = list(server.answered)
    assert {r.status for r in res.runs} == {"ok"}, res.describe()
    prompts = [json.loads(l)["question"] for l in (FIX/"questions.jsonl").read_text().splitlines()]
    assert sorted(asked) == sorted(prompts)                               # each image asked its own prompt, as written
    for r in res.runs:
        out = res.sweep_dir/r.run
        mine = pd.read_csv(out/"metrics.csv").set_index("metric")
        back = {m["metric"]: m for m in score("--input", str(out/"answers.jsonl"), "--coco", str(data), "--n-boot", "50")["metrics"]}
        for k in ("response_hallucination", "chair_i", "chair_s", "object_recall", "mean_length"):
            assert (pd.isna(mine.value[k]) and back[k]["value"] is None) or mine.value[k] == pytest.approx(back[k]["value"]), (r.run, k)
        assert len(pd.read_parquet(out/"samples.parquet")) == 6
    fake = next(r for r in res.runs if r.grid["model"] == "openai:fake")
    m = pd.read_csv(res.sweep_dir/fake.run/"metrics.csv").set_index("metric").value
    # dog, clock, dining table in all six: hallucinated except the dog of 101 and the table of 103 -> 16 of 18 mentions
    assert m["chair_s"] == 100.0 and m["chair_i"] == pytest.approx(100 * 16 / 18)


def test_a_run_with_another_synonym_list_scores_as_score_objhal_does(tmp_path):
    "With a synonyms.txt that makes 'wall' a clock, image 105's caption gives it a clock: the run's truth must use that list too."
    from mmresearch.chair_tool import chair_synonyms_path
    data = objhal_folder(tmp_path/"objhal")
    lines = chair_synonyms_path().read_text().splitlines()
    vocab = tmp_path/"synonyms_wall.txt"
    vocab.write_text("\n".join(l + ", wall" if l.split(", ")[0] == "clock" else l for l in lines) + "\n")
    (tmp_path/"settings.ini").write_text("[DEFAULT]\n")
    p = tmp_path/"params"/"objhal_vocab.yaml"; p.parent.mkdir()
    with FakeChatServer(answer=describer) as server:
        p.write_text(json.dumps({"name": "objhal_vocab", "notebook": str(ROOT/"nbs/experiments/objhal.ipynb"), "headline": "chair_i",
                                 "fixed": {"data_dir": str(data), "base_url": server.base_url, "api_key_env": None, "n_samples": None,
                                           "n_boot": 50, "max_new_tokens": 16, "model": "openai:fake"},
                                 "grid": {"vocab": [str(vocab)]}}))
        res = run_sweep(p, workers=1, reports_dir=tmp_path/"reports", cache_path=tmp_path/"c.sqlite", progress=False)
    assert {r.status for r in res.runs} == {"ok"}, res.describe()
    out = res.sweep_dir/res.runs[0].run
    mine = pd.read_csv(out/"metrics.csv").set_index("metric").value
    back = {m["metric"]: m["value"] for m in score("--input", str(out/"answers.jsonl"), "--coco", str(data), "--vocab", str(vocab),
                                                     "--n-boot", "50")["metrics"]}
    assert mine["chair_i"] == pytest.approx(back["chair_i"]) and mine["chair_i"] == pytest.approx(100 * 15 / 18)   # before: 16 of 18
