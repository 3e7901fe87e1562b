"""CHAIR on published CHAIR output files: the tool-compatible matching (`mmresearch.chair_tool`) must give each file's own
`overall_metrics` exactly, and every caption's mentions (and tokens) as the file records them."""
import hashlib
import json
from pathlib import Path

import pytest

from mmresearch.chair_tool import ChairTool, chair_synonyms_path, read_chair_output, rescore_chair_output, singularize
from mmresearch.cli import main
from mmresearch.haleval import score_chair

FIX = Path(__file__).parent / "fixtures" / "chair"
FULL = FIX / "halc_minigpt4_greedy_12_chair_results.json"              # a whole output file, as published
EXCERPT = FIX / "halc_llava15_greedy_500_chair_results_excerpt.json"    # all 500 sentences, the fields CHAIR needs


def git_blob_sha1(path: Path) -> str:
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def test_shipped_synonyms_are_the_published_file():
    # blob of data/synonyms.txt in LisaAnne/Hallucination at 6e4d33c (and in HALC's copy of the tool)
    assert git_blob_sha1(chair_synonyms_path()) == "44c16d179683468892d9e85e26d2de7aca95a5e9"


@pytest.mark.parametrize("path, chair_s, chair_i, made_with", [(FULL, 0.3333333333333333, 0.13636363636363635, "pattern"),
                                                               (EXCERPT, 0.19, 0.06419973250111458, None)])
def test_tool_matching_reproduces_the_files_overall_metrics(path, chair_s, chair_i, made_with):
    r = rescore_chair_output(path)
    assert r["made_with"] == made_with   # the full file's `words` show pattern's singularisation; the excerpt has none
    assert r["published"] == {"CHAIRs": chair_s, "CHAIRi": chair_i}
    assert r["recomputed"] == r["published"]            # exactly, at the file's full float precision
    assert r["n_captions_differing"] == 0, r["captions_differing"]


def test_every_caption_matches_the_files_record():
    tool = ChairTool()
    for path in (FULL, EXCERPT):
        for s in json.loads(path.read_text())["sentences"]:
            words, found = tool.caption_words(s["caption"])
            assert [c for _, c in found] == s["mscoco_generated_words"], s["image_id"]
            gt = set(s["mscoco_gt_words"])
            assert [list(m) for m in found if m[1] not in gt] == s["mscoco_hallucinated_words"], s["image_id"]
            if "words" in s: assert words == s["words"], s["image_id"]   # tokens, singularised, joined


def test_singularize_on_the_real_vocabulary():
    tool = ChairTool()
    names = list(tool.synonyms)
    moved = {n: singularize(n) for n in names if singularize(n) != n}
    assert moved == {"bus": "bu", "minibus": "minibu", "airbus": "airbu", "wine glass": "wine glas",
                     "people": "person", "children": "child", "oxen": "ox", "skis": "ski"}
    # the regular plural of every one-word singular name singularises back to a name of its class, except these five,
    # which the tool therefore never counts in the plural
    singular = [n for n in names if " " not in n and n.isalpha() and n not in ("oxen", "skis", "scissors", "people", "children")]
    plural = {n: n + ("es" if n.endswith(("s", "x", "ch", "sh")) else "s") for n in singular}
    lost = {p: singularize(p) for n, p in plural.items() if tool.synonyms.get(singularize(p)) != tool.synonyms[n]}
    assert lost == {"canoes": "cano", "magpies": "magpy", "collies": "collies", "doggies": "doggies", "ties": "ty"}


def test_score_chair_on_a_chair_output_file_says_which_matching_ran():
    tool_run = score_chair(EXCERPT, matching="tool", n_boot=20)
    assert tool_run["matching"] == "tool"
    assert tool_run["overall_metrics"] == tool_run["published_overall_metrics"] == {"CHAIRs": 0.19, "CHAIRi": 0.06419973250111458}
    pct = {m["metric"]: m["value"] for m in tool_run["metrics"]}
    assert pct["chair_s"] == pytest.approx(19.0) and pct["chair_i"] == pytest.approx(6.419973250111458)
    ours = score_chair(EXCERPT, n_boot=20)
    assert ours["matching"] == "ours" and ours["overall_metrics"] != ours["published_overall_metrics"]


def test_cli_tool_matching_and_bad_vocab_files(tmp_path, capsys):
    assert main(["score", "chair", "--input", str(FULL), "--matching", "tool"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["matching"] == "tool" and out["overall_metrics"] == {"CHAIRs": 0.3333333333333333, "CHAIRi": 0.13636363636363635}
    bad = tmp_path / "vocab.json"
    bad.write_text("not json")
    for extra in ([], ["--matching", "tool"]):
        assert main(["score", "chair", "--input", str(FULL), "--vocab", str(bad), *extra]) == 2
        assert str(bad) in capsys.readouterr().err
    assert main(["score", "chair", "--input", str(FULL), "--vocab", str(tmp_path / "missing.txt"), "--matching", "tool"]) == 2
    assert "missing.txt" in capsys.readouterr().err


def test_read_chair_output_names_the_file_and_sentence(tmp_path):
    broken = tmp_path / "broken_chair.json"
    broken.write_text(json.dumps({"sentences": [{"image_id": 1, "caption": "a dog", "mscoco_gt_words": []}, {"image_id": 2}]}))
    with pytest.raises(ValueError, match=r"broken_chair\.json: sentence 1 has no \['caption', 'mscoco_gt_words'\]"):
        read_chair_output(broken)


def test_every_coco_category_is_a_class_of_the_tool():
    # the tool maps instance annotations through the synonym file by their COCO category names
    from mmresearch.datasets import COCO_CLASSES
    tool = ChairTool()
    assert sorted(COCO_CLASSES) == tool.classes
    assert all(tool.to_class(c) == c for c in COCO_CLASSES)


COCO_REAL = Path(__file__).parent / "fixtures" / "coco_real"   # the first 100 records of COCO val2014's two annotation files


def test_coco_annotation_excerpt_gives_the_chair_tools_truth(tmp_path):
    """COCO's own instances and captions records (the excerpt) laid out as a COCO folder: each image's truth is its segment
    categories plus the classes its captions name through the tool's synonyms (synonyms.txt: woman -> person, bike ->
    bicycle, husky -> dog), as CHAIR's `get_annotations` builds it; image 364010's is within the truth HALC's published
    CHAIR output records for it from the full files."""
    from mmresearch.benchmarks import coco_chair_truth, coco_files
    ann = tmp_path/"coco"/"annotations"; ann.mkdir(parents=True)
    (ann/"captions_val2014.json").write_bytes((COCO_REAL/"captions_val2014_excerpt.json").read_bytes())
    (ann/"instances_val2014.json").write_bytes((COCO_REAL/"instances_val2014_excerpt.json").read_bytes())
    caps, inst = coco_files(tmp_path/"coco")
    truth = coco_chair_truth(caps, inst, [382406, 346071, 203564, 364010])
    # 382406: a dog segment; "A woman is walking a dog in the city."   346071: a dog segment; "Two husky's hanging out
    # of the car windows."   203564: captions only, "A bicycle replica with a clock as the front wheel."   364010: a dog segment
    assert truth == {382406: {"person", "dog"}, 346071: {"dog", "car"}, 203564: {"bicycle", "clock"}, 364010: {"dog"}}
    halc = {s["image_id"]: set(s["mscoco_gt_words"]) for s in json.loads(EXCERPT.read_text())["sentences"]}
    assert truth[364010] <= halc[364010] == {"car", "chair", "dog"}
    assert len(json.loads(inst.read_text())["categories"]) == 80
