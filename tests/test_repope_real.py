"""RePOPE's corrected labels on LLaVA-1.5-13B's published POPE answers (tests/fixtures/README.md: sources and commits)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mmresearch.pope import score_pope

FIX = Path(__file__).parent/"fixtures"
LLAVA = FIX/"pope_real"/"llava15"


@pytest.fixture(scope="module")
def both():
    return score_pope(LLAVA/"llava-v1.5-13b.jsonl.gz", questions=LLAVA/"llava_pope_test.jsonl.gz", labels=LLAVA/"coco",
                      repope=FIX/"repope", n_boot=300)


def test_pope_figures_unchanged(both):
    "Asking for RePOPE leaves POPE's own figures as they were (LLaVA's eval_pope: 84.459 / 86.246 / 87.136)."
    assert [round(both["by_category"][s]["f1"], 3) for s in ("adversarial", "popular", "random")] == [84.459, 86.246, 87.136]


def test_what_repope_changed(both):
    "Every asked question is found in RePOPE's files (by image and object, across POPE's versions); counts per split."
    got = both["repope"]["relabelled"]
    assert got["all"] == {"same": 7604, "yes_to_no": 417, "no_to_yes": 77, "dropped": 812, "not_in_repope": 0}
    assert [got[s]["dropped"] for s in ("adversarial", "popular", "random")] == [316, 273, 223]
    assert both["repope"]["overall"]["n"] == 8910 - 812


def test_repope_difference(both):
    "On RePOPE LLaVA-1.5-13B's recall and F1 rise and its precision falls; the paired image-clustered CI excludes 0."
    d = both["repope"]["difference"]
    for split in ("all", "adversarial", "popular", "random"):
        f1 = d[split]["f1"]
        assert f1["difference"] == pytest.approx(f1["repope"] - f1["pope"], abs=1e-5)
        assert 0 < f1["ci"][0] <= f1["difference"] <= f1["ci"][1]
        assert d[split]["recall"]["difference"] > 5
    assert d["all"]["f1"]["pope"] == pytest.approx(85.932, abs=1e-3)        # pooled over the three splits
    assert d["all"]["f1"]["repope"] == pytest.approx(both["repope"]["overall"]["f1"], abs=1e-5)
    assert d["random"]["precision"]["ci"][1] < 0


def test_cli_repope(tmp_path):
    "`mmresearch score pope --repope FOLDER` prints the same block."
    out = subprocess.run([sys.executable, "-m", "mmresearch.cli", "score", "pope", "--input", str(LLAVA/"llava-v1.5-13b.jsonl.gz"),
                          "--questions", str(LLAVA/"llava_pope_test.jsonl.gz"), "--labels", str(LLAVA/"coco"),
                          "--repope", str(FIX/"repope"), "--n-boot", "50"], capture_output=True, text=True, check=True)
    res = json.loads(out.stdout)
    assert res["repope"]["relabelled"]["all"]["yes_to_no"] == 417
    bad = subprocess.run([sys.executable, "-m", "mmresearch.cli", "score", "pope", "--input", str(LLAVA/"llava-v1.5-13b.jsonl.gz"),
                          "--questions", str(LLAVA/"llava_pope_test.jsonl.gz"), "--labels", str(LLAVA/"coco"),
                          "--repope", str(tmp_path)], capture_output=True, text=True)
    assert bad.returncode != 0 and "no coco_repope_<split>.json" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_pope_study_with_repope(tmp_path):
    "The POPE study asks an official file and, given `repope`, scores the same answers against RePOPE (repope.csv)."
    import gzip
    import pandas as pd
    from PIL import Image

    from mmresearch.report import run_report_notebook
    head = FIX/"pope_real"/"coco_pope_adversarial_head.jsonl"
    rows = [json.loads(l) for l in head.read_text().splitlines()]
    for i, name in enumerate(sorted({r["image"] for r in rows})): Image.new("RGB", (8, 8), (40 * i, 90, 0)).save(tmp_path/name)
    (tmp_path/"coco_pope_adversarial.json").write_text(head.read_text())
    out = tmp_path/"run"
    run_report_notebook(Path(__file__).parents[1]/"nbs"/"experiments"/"pope.ipynb", tmp_path/"run.ipynb",
                        parameters=dict(model="scripted:yes", questions_file=str(tmp_path/"coco_pope_adversarial.json"), n_samples=None,
                                        repope=str(FIX/"repope"), n_boot=20, output_dir=str(out), cache_path=str(tmp_path/"c.sqlite")))
    # RePOPE's labels for these questions, read straight from the authors' file (image + question text, typo fixed)
    new = {(r["image"], r["text"]): r["label"] for r in map(json.loads, gzip.open(FIX/"repope"/"coco_repope_adversarial.json.gz", "rt"))}
    truth = [new.get((r["image"], r["text"].replace("imange", "image"))) for r in rows]
    table = pd.read_csv(out/"repope.csv").set_index(["split", "metric"])
    kept = [t for t in truth if t is not None]
    assert table.loc[("adversarial", "accuracy"), "n_repope"] == len(kept)
    # an always-"yes" model: accuracy is the share of "yes" labels under each label set
    assert table.loc[("adversarial", "accuracy"), "repope"] == pytest.approx(100 * kept.count("yes") / len(kept))
    assert table.loc[("adversarial", "accuracy"), "pope"] == pytest.approx(100 * [r["label"] for r in rows].count("yes") / len(rows))
    assert json.loads((out/"manifest.json").read_text())["study"]["repope"] == str(FIX/"repope")
