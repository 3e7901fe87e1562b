"""Hal-Eval's published evaluation files, loaded as they are.

Excerpts (records copied unchanged, see tests/fixtures/README.md) of WisdomShell/hal-eval at 82dffba, Apache-2.0:
`out_of_domain_excerpt.json` holds records 0, 1, 2, 1733, 1739, 2231, 4625, 4630 and 4777 of
`evaluation_dataset/out_of_domain_evaluation.json` (both records of two repeated keys, both records with an empty
hallucinated caption); `in_domain_excerpt.json` the first three records of `in_domain_evaluation.json`."""
import json
import shutil
from pathlib import Path

import pytest

from mmresearch.datasets import DataFormatError, load_haleval
from mmresearch.haleval import disc_items

FIX = Path(__file__).parent/"fixtures"
OOD = FIX/"haleval_real"/"out_of_domain_excerpt.json"
IND = FIX/"haleval_real"/"in_domain_excerpt.json"


@pytest.fixture()
def ood_images(tmp_path):
    "A folder holding the excerpt's pictures under the file names its absolute paths end in."
    for rec in json.loads(OOD.read_text()): shutil.copy(FIX/"images"/"orange.png", tmp_path/Path(rec["image_path"]).name)
    return tmp_path


def test_out_of_domain_file_loads_as_published(ood_images):
    records = json.loads(OOD.read_text())
    ds = load_haleval(OOD, image_root=ood_images, domain="ood_web")
    assert len(ds) == len(records) == 9 and ds.stats.skipped == 0
    assert [s.image.source for s in ds] == [ood_images/Path(r["image_path"]).name for r in records]   # remapped
    # repeated keys: the regenerated hallucinations are kept as a second sample of the same image
    assert [(s.id, s.meta.get("repeat_of")) for s in ds if "#" in s.id] == [("000546736#2", "000546736"), ("007780157#2", "007780157")]
    assert ds[4].meta["hallucinations"]["object"]["caption"] == records[4]["hal_caption"][1]["caption"]
    assert len(ds.stats.notes) == 2 and "key '007780157' repeats item [6]" in ds.stats.notes[1]
    # the two empty attribute captions are dropped alone, named, and counted in the manifest
    assert [sorted(s.meta["hallucinations"]) for s in ds if s.id in ("002351766", "007347173")] == [["event", "object", "relation"]] * 2
    assert len(ds.stats.dropped) == 2 and all("(attribute) has no caption ('')" in d for d in ds.stats.dropped)
    assert ds.manifest()["dropped"] == 2
    # every valid caption of the file is kept, and each becomes one discriminative item
    valid = sum(1 + sum(bool(h["caption"].strip()) for h in r["hal_caption"]) for r in records)
    items = disc_items(ds.samples)
    assert valid == len(items) == 43
    assert set(items.caption) == {r["caption"] for r in records} | {h["caption"] for r in records for h in r["hal_caption"] if h["caption"]}


def test_absolute_paths_without_image_root():
    "The authors' absolute paths lie outside the file's folder: refused, naming the record and the path, with the way out."
    for verify in ("exists", "none"):
        with pytest.raises(DataFormatError, match=r"item \[0\]: /hdd2/jcy/data/CC_SBU/image/007675839.jpg, outside the data folder .*pass image_root"):
            load_haleval(OOD, verify=verify)


def test_in_domain_file_relative_paths(tmp_path):
    (tmp_path/"val2014").mkdir()
    records = json.loads(IND.read_text())
    for r in records: shutil.copy(FIX/"images"/"clock.png", tmp_path/r["image"])
    ds = load_haleval(IND, image_root=tmp_path, domain="in_domain")
    assert [s.id for s in ds] == [Path(r["image"]).stem for r in records]
    assert [s.image.source for s in ds] == [tmp_path/r["image"] for r in records]
    assert all(sorted(s.meta["hallucinations"]) == ["attribute", "event", "object", "relation"] for s in ds)
    assert (ds.stats.dropped, ds.stats.notes, ds.supports) == ([], [], ("object", "attribute", "relation", "event"))
