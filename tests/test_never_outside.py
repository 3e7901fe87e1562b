"""Issue 39, "never outside its data": a record whose image path leaves its data folder (`../`, an absolute path
elsewhere, a symlink that leads out) is refused, naming the file, the record and the path, before the image is read;
end to end, a private photo outside the folder reaches neither the model server nor the run page. A folder the params
file names under `extra_roots:` lets the same record in. Each case failed before the one door (`mmresearch.inputs`)."""
import base64
import json
import shutil
from pathlib import Path

import pytest
from PIL import Image

from mmresearch.benchmarks import load_amber_benchmark, load_coco_benchmark
from mmresearch.datasets import DataFormatError, load_haleval, load_image_folder, load_pope
from mmresearch.fakeserver import FakeChatServer, request_text
from mmresearch.sweep import run_sweep
from mmresearch.t2i_judge import folder_samples
from test_benchmarks_real import amber_folder, coco_folder, haleval_folder

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT/"tests"/"fixtures"


@pytest.fixture
def private(tmp_path) -> Path:
    "A photo outside every data folder, with bytes no other image here has."
    folder = tmp_path/"private"; folder.mkdir()
    Image.new("RGB", (16, 16), (250, 7, 99)).save(folder/"me.png")
    return folder/"me.png"


def leaky_haleval(root: Path, image: str, second: str | None = None) -> Path:
    "Hal-Eval's in-domain excerpt laid out as a user's folder, its first record's image replaced by `image` (and the second's by `second`)."
    data = haleval_folder(root)
    f = data/"evaluation_dataset"/"in_domain_evaluation.json"
    recs = json.loads(f.read_text()); recs[0]["image"] = image
    if second: recs[1]["image"] = second
    f.write_text(json.dumps(recs))
    return data


@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlink"])
def test_haleval_record_outside_its_folder_is_refused(tmp_path, private, how):
    root = tmp_path/"haleval"
    if how == "symlink":
        data = leaky_haleval(root, "val2014/link.png"); (data/"val2014"/"link.png").symlink_to(private)
    elif how == "dotdot": data = leaky_haleval(root, "../private/me.png")
    else: data = leaky_haleval(root, "/hdd2/data/img/../../../../private/me.png", "/hdd2/data/img/x.jpg")   # moved by their common folder
    with pytest.raises(DataFormatError, match=r"in_domain_evaluation.json: item \[0\]: .* outside the data folder") as e:
        load_haleval(data/"evaluation_dataset"/"in_domain_evaluation.json", image_root=data)
    assert len(str(e.value).splitlines()) == 1


def test_pope_coco_amber_image_folder_and_t2i_records_are_confined(tmp_path, private):
    q = tmp_path/"pope"; q.mkdir()
    (q/"coco_pope_random.json").write_text(json.dumps({"question_id": 1, "image": "../private/me.png", "text": "Is there a dog in the image?", "label": "yes"}) + "\n")
    with pytest.raises(DataFormatError, match=r"coco_pope_random.json: line 1: \.\./private/me.png resolves to .* outside the data folder"):
        load_pope(q/"coco_pope_random.json")
    coco = coco_folder(tmp_path/"coco")
    caps = json.loads((coco/"annotations/captions_val2014.json").read_text()); caps["images"][0]["file_name"] = "../../private/me.png"
    (coco/"annotations/captions_val2014.json").write_text(json.dumps(caps))
    with pytest.raises(DataFormatError, match=r"captions_val2014.json: image \d+: .*outside the data folder"):
        load_coco_benchmark(data_dir=coco)
    amber = amber_folder(tmp_path/"AMBER")
    qfile = amber/"data/query/query_all.json"; qs = json.loads(qfile.read_text()); qs[0]["image"] = "../../private/me.png"
    qfile.write_text(json.dumps(qs))
    with pytest.raises(DataFormatError, match=r"query_all.json: query 1: .*outside the data folder"):
        load_amber_benchmark(data_dir=amber)
    folder = tmp_path/"folder"; folder.mkdir()
    (folder/"captions.csv").write_text(f"file_name,caption\n{private},a face\n")
    with pytest.raises(DataFormatError, match=r"captions.csv: line 2: .*me.png, outside the data folder"):
        load_image_folder(folder)
    t2i = tmp_path/"t2i"; t2i.mkdir()
    (t2i/"prompts.csv").write_text("id,prompt,category,image\np1,a face,color,../private/me.png\n")
    with pytest.raises(DataFormatError, match=r"prompt 'p1': field 'image': \.\./private/me.png resolves to"):
        folder_samples(t2i/"prompts.csv")


def test_a_private_photo_reaches_neither_the_server_nor_the_page(tmp_path, private):
    "End to end: the record is refused, no request carries the photo, no page holds it; `extra_roots` lets it in."
    data = leaky_haleval(tmp_path/"haleval", "../private/me.png")
    photo = base64.b64encode(private.read_bytes()).decode()
    seen: list[str] = []
    def answer(body: dict) -> str:
        seen.extend(p["image_url"]["url"] for m in body["messages"] if isinstance(m["content"], list)
                    for p in m["content"] if p.get("type") == "image_url")
        return "Yes." if "caption" in request_text(body) else "No."
    (tmp_path/"settings.ini").write_text("[DEFAULT]\n")
    params = tmp_path/"params"/"leak.yaml"; params.parent.mkdir()
    with FakeChatServer(answer=answer) as server:
        spec = {"name": "leak", "notebook": str(ROOT/"nbs/experiments/haleval_disc.ipynb"),
                "fixed": {"domain": "haleval_in_domain", "data_dir": str(data), "model": "openai:fake", "base_url": server.base_url,
                          "n_samples": 5000, "n_boot": 20, "score_yes": False}}
        params.write_text(json.dumps(spec))
        kw = dict(workers=1, reports_dir=tmp_path/"reports", cache_path=tmp_path/"c.sqlite", progress=False)
        res = run_sweep(params, **kw)
        assert [r.status for r in res.runs] == ["failed"] and "outside the data folder" in res.runs[0].error, res.describe()
        assert not any(photo in u for u in seen)
        for page in (tmp_path/"reports").rglob("*.html"): assert photo not in page.read_text()
        params.write_text(json.dumps({**spec, "extra_roots": [str(private.parent)]}))   # named explicitly: allowed
        res = run_sweep(params, **kw)
        assert [r.status for r in res.runs] == ["ok"], res.describe()
        assert any(photo in u for u in seen)
