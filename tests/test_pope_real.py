"""POPE on its real published files: POPE's question files (JSON lines and JSON arrays), POPE's documented answer
format matched by line order, and LLaVA-1.5's evaluation layout, reproducing LLaVA-1.5-13B's reported POPE F1 (85.9).

Sources (see tests/fixtures/README.md): AoiDragon/POPE at e3e3926 (the COCO files LLaVA evaluates on) and 08d957b,
MIT; LLaVA's llava_pope_test.jsonl and its llava-v1.5-13b answers as committed in the haotian-liu/LLaVA network at
32cebc3, Apache-2.0."""
import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from mmresearch.cache import CachedModel, ResponseCache
from mmresearch.datasets import load_pope
from mmresearch.models import ScriptedModel
from mmresearch.pope import SPLITS, run_pope, score_pope

REAL = Path(__file__).parent/"fixtures"/"pope_real"
LLAVA = REAL/"llava15"

# What the official scripts print on these files (LLaVA's llava/eval/eval_pope.py on its answers; POPE's evaluate.py on
# the same answers written in POPE's answer format gives the same counts): TP, FP, TN, FN per split.
OFFICIAL_COUNTS = {"adversarial": (1182, 117, 1383, 318), "popular": (1182, 59, 1441, 318), "random": (1182, 31, 1379, 318)}
OFFICIAL_F1 = {"adversarial": 0.8445873526259379, "popular": 0.8624589565851879, "random": 0.8713601179506082}
LLAVA_REPORTED_F1 = 85.9   # LLaVA-1.5-13B, POPE column of LLaVA's MODEL_ZOO.md / the LLaVA-1.5 paper


def _lines(path: Path) -> list[dict]:
    return [json.loads(l) for l in gzip.decompress(path.read_bytes()).decode().splitlines() if l.strip()]


def _first_sentence_verdict(answer: str) -> str:
    "POPE's rule, written here independently of mmresearch.parsing: 'no' iff the first sentence has No/no/not."
    words = answer.split(".")[0].replace(",", "").split(" ")
    return "no" if {"No", "no", "not"} & set(words) else "yes"


@pytest.fixture(scope="module")
def llava_result():
    return score_pope(LLAVA/"llava-v1.5-13b.jsonl.gz", questions=LLAVA/"llava_pope_test.jsonl.gz", labels=LLAVA/"coco", n_boot=0)


def test_llava15_layout_reproduces_the_published_f1(llava_result):
    r = llava_result
    assert (r["matched_by"], r["unanswered"], r["overall"]["n"]) == ("question file", 0, 8910)
    assert {c: (g["tp"], g["fp"], g["tn"], g["fn"]) for c, g in r["by_category"].items()} == OFFICIAL_COUNTS
    for c, f1 in OFFICIAL_F1.items(): assert r["by_category"][c]["f1"] == pytest.approx(100 * f1, abs=1e-5)
    assert round(r["category_mean"]["f1"], 1) == LLAVA_REPORTED_F1
    assert r["category_mean"]["f1"] == pytest.approx(100 * sum(OFFICIAL_F1.values()) / 3, abs=1e-5)


def test_llava15_counts_agree_with_an_independent_count():
    questions = {q["question_id"]: q for q in _lines(LLAVA/"llava_pope_test.jsonl.gz")}
    answers = _lines(LLAVA/"llava-v1.5-13b.jsonl.gz")
    counts = {}
    for split in SPLITS:
        labels = [json.loads(l)["label"] for l in gzip.decompress((LLAVA/"coco"/f"coco_pope_{split}.json.gz").read_bytes()).decode().splitlines()]
        mine = [a for a in answers if questions[a["question_id"]]["category"] == split]
        pairs = [(_first_sentence_verdict(a["text"]), l) for a, l in zip(mine, labels)]
        counts[split] = tuple(sum(p == v and l == w for p, l in pairs) for v, w in (("yes", "yes"), ("yes", "no"), ("no", "no"), ("no", "yes")))
    assert counts == OFFICIAL_COUNTS


def test_pope_answer_format_matched_by_line_order(tmp_path):
    "LLaVA's published answers rewritten in POPE's documented format ({question, answer}, question-file order)."
    questions = {q["question_id"]: q for q in _lines(LLAVA/"llava_pope_test.jsonl.gz")}
    answers = _lines(LLAVA/"llava-v1.5-13b.jsonl.gz")
    for split in SPLITS:
        rows = [{"question": questions[a["question_id"]]["text"].split("\n")[0], "answer": a["text"]}
                for a in answers if questions[a["question_id"]]["category"] == split]
        path = tmp_path/f"{split}_answers.json"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        r = score_pope(path, labels=LLAVA/"coco"/f"coco_pope_{split}.json.gz", n_boot=0)
        g = r["by_category"][split]
        assert r["matched_by"] == "line order"
        assert (g["tp"], g["fp"], g["tn"], g["fn"]) == OFFICIAL_COUNTS[split]
        assert g["f1"] == pytest.approx(100 * OFFICIAL_F1[split], abs=1e-5)
    last = LLAVA/"coco"/f"coco_pope_{split}.json.gz"   # the adversarial file, whose answers `rows` hold
    with pytest.raises(ValueError, match="must be in the question file's order"):
        score_pope(rows[:2][::-1] + rows[2:], labels=last)
    with pytest.raises(ValueError, match="2999 answers but 3000 questions"):
        score_pope(rows[:-1], labels=last)


def test_pope_documented_example_answer_line():
    r = score_pope(REAL/"example_answer.json", labels=[{"text": "Is there a bird in the image?", "label": "yes"}], n_boot=0)
    assert (r["matched_by"], r["overall"]["tp"], r["overall"]["n"]) == ("line order", 1, 1)


def test_load_pope_reads_every_published_question_file():
    for split, n in (("adversarial", 3000), ("popular", 3000), ("random", 2910)):
        ds = load_pope(LLAVA/"coco"/f"coco_pope_{split}.json.gz", verify="none")
        qs = [q for s in ds for q in s.meta["questions"]]
        assert (len(qs), ds.stats.skipped, ds.stats.dropped, ds.params["category"]) == (n, 0, [], split)
        assert all(q["object"] for q in qs) and {q["category"] for q in qs} == {split}
    typos = sum("imange" in q["question"] for split in SPLITS
                for s in load_pope(LLAVA/"coco"/f"coco_pope_{split}.json.gz", verify="none") for q in s.meta["questions"])
    assert typos == 246   # 58 + 44 + 144 at e3e3926, every one read
    for name in ("aokvqa_pope_seem_random_head.json", "gqa_pope_seem_adversarial_head.json"):   # JSON arrays
        ds = load_pope(REAL/name, verify="none")
        assert (sum(len(s.meta["questions"]) for s in ds), ds.stats.dropped) == (6, [])


def test_run_pope_asks_the_official_questions_as_they_are(tmp_path):
    rows = [json.loads(l) for l in (REAL/"coco_pope_adversarial_head.jsonl").read_text().splitlines()]
    for i, name in enumerate(sorted({r["image"] for r in rows})): Image.new("RGB", (8, 8), (40 * i, 90, 0)).save(tmp_path/name)
    (tmp_path/"coco_pope_adversarial.json").write_text((REAL/"coco_pope_adversarial_head.jsonl").read_text())
    ds = load_pope(tmp_path/"coco_pope_adversarial.json", verify="decode")
    asked = []
    def model(r):
        asked.append(r.messages[-1].text)
        return "Yes"
    out = run_pope(ds.samples, CachedModel(ScriptedModel(model, name="says-yes"), ResponseCache(tmp_path/"c.sqlite")), from_file=True)
    assert asked == [r["text"] for r in rows] and out.question_id.tolist() == [r["question_id"] for r in rows]
    assert set(out.split) == {"adversarial"} and out.label.tolist() == [r["label"] for r in rows]


def test_cli_scores_llava_layout():
    out = subprocess.run([sys.executable, "-m", "mmresearch.cli", "score", "pope", "--input", str(LLAVA/"llava-v1.5-13b.jsonl.gz"),
                          "--questions", str(LLAVA/"llava_pope_test.jsonl.gz"), "--labels", str(LLAVA/"coco")],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert round(json.loads(out.stdout)["category_mean"]["f1"], 1) == LLAVA_REPORTED_F1


def test_experiment_notebook_asks_an_official_file(tmp_path):
    import pandas as pd
    from mmresearch.report import run_report_notebook
    rows = [json.loads(l) for l in (REAL/"coco_pope_adversarial_head.jsonl").read_text().splitlines()]
    for i, name in enumerate(sorted({r["image"] for r in rows})): Image.new("RGB", (8, 8), (40 * i, 90, 0)).save(tmp_path/name)
    (tmp_path/"coco_pope_adversarial.json").write_text((REAL/"coco_pope_adversarial_head.jsonl").read_text())
    out = tmp_path/"run"
    run_report_notebook(Path(__file__).parents[1]/"nbs"/"experiments"/"pope.ipynb", tmp_path/"run.ipynb",
                        parameters=dict(model="scripted:yes", questions_file=str(tmp_path/"coco_pope_adversarial.json"), n_samples=None,
                                        n_boot=20, output_dir=str(out), cache_path=str(tmp_path/"c.sqlite")))
    asked = pd.read_parquet(out/"samples.parquet")
    assert asked.question.tolist() == [r["text"] for r in rows] and set(asked.split) == {"adversarial"}
    assert json.loads((out/"manifest.json").read_text())["study"]["questions_file"].endswith("coco_pope_adversarial.json")


def test_llava15_intervals_resample_images():
    """Issue 16: POPE asks each of the 500 COCO images about the same present objects in all three splits, so the
    pooled (overall) interval must resample images; resampling the 8,910 questions alone makes it ~1.6x too narrow."""
    answers = _lines(LLAVA/"llava-v1.5-13b.jsonl.gz")
    kw = dict(questions=LLAVA/"llava_pope_test.jsonl.gz", labels=LLAVA/"coco", n_boot=1000)
    by_image = score_pope(answers, **kw)
    by_question = score_pope([dict(a, image=None) for a in answers], **kw)     # no image known: questions resampled
    o, q = by_image["overall"], by_question["overall"]
    assert (o["cluster"], o["n_clusters"], q["cluster"], q["n_clusters"]) == ("image", 500, "question", 8910)
    assert {c: g["n_clusters"] for c, g in by_image["by_category"].items()} == {s: 500 for s in SPLITS}
    assert o["f1"] == q["f1"]                                                  # the estimate itself does not change
    width = lambda r, m: r[f"{m}_ci"][1] - r[f"{m}_ci"][0]
    assert 1.4 < width(o, "f1") / width(q, "f1") < 1.9 and 1.4 < width(o, "accuracy") / width(q, "accuracy") < 1.9


@pytest.mark.parametrize("name, n_images", [("aokvqa_pope_seem_random_head.json", 1), ("gqa_pope_seem_adversarial_head.json", 1),
                                            ("coco_pope_adversarial_head.jsonl", 2)])
def test_published_label_files_cluster_by_image(name, n_images):
    """Every record of POPE's question files, SEEM ones included, names its image in `image` (checked at every commit
    of AoiDragon/POPE up to 08d957b: "imange" is only ever a typo in question text, e.g. line 11 of the COCO head), so
    intervals resample images whether answers join by question_id or, in POPE's documented format, by line order."""
    path = REAL/name
    qs = [json.loads(l) for l in path.read_text().splitlines()] if name.endswith(".jsonl") else json.loads(path.read_text())
    assert all(isinstance(q.get("image"), str) and "imange" not in q for q in qs)
    by_id = score_pope([{"question_id": q["question_id"], "text": "Yes"} for q in qs], labels=path, n_boot=50)
    by_line = score_pope([{"question": q["text"], "answer": "No"} for q in qs], labels=path, n_boot=50)
    assert (by_id["matched_by"], by_line["matched_by"]) == ("question_id", "line order")
    for res in (by_id, by_line):
        groups = [res["overall"], *res["by_category"].values()]
        assert [(g["n"], g["cluster"], g["n_clusters"]) for g in groups] == [(len(qs), "image", n_images)] * 2
