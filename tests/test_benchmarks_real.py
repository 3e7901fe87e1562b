"""The benchmarks run from their own files, end to end: Hal-Eval (discriminative and generative), AMBER and CHAIR on
COCO, each as a sweep through the fake OpenAI-compatible server and through a tiny Hugging Face model. The data are
the real excerpts in tests/fixtures/ (see its README: Hal-Eval at WisdomShell/hal-eval@82dffba, AMBER at
junyangwang0410/AMBER@534babf) laid out as a user's folder, with images made here for the paths they name.

The prompts the model receives must equal the benchmark's own wording. The expected strings are written out here from
the benchmarks' code, not imported from ours:
- Hal-Eval, the repository's script `evaluation/discriminative_evaluation/5k_code.py` at 82dffba, lines 99-100;
- AMBER, the `query` of each record of `data/query/query_all.json` (AMBER asks exactly the file's query text).
Each results file then goes through `mmresearch score` and gives the run's own figures back."""
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
FIX = ROOT/"tests"/"fixtures"

# WisdomShell/hal-eval@82dffba evaluation/discriminative_evaluation/5k_code.py, line 100 (direct) and line 99 (CoT)
HALEVAL_REPO_DIRECT = '```{}```. Does the caption delimited by triple backticks match the image exactly? If so, return "yes". If not, return "no".'
HALEVAL_REPO_COT = ('```{}```. Does the caption delimited by triple backticks match the image exactly? Let\u2019s work this out in a '
                    'step by step way to be sure we have the right answer. If so, return "yes". If not, return "no".')


def picture(path: Path) -> None:
    "A small image unlike every other one made here (identical requests would be asked once, through the cache)."
    picture.n = getattr(picture, "n", 0) + 1
    Image.new("RGB", (24, 24), (picture.n * 37 % 256, picture.n * 91 % 256, picture.n * 13 % 256)).save(path)


def haleval_folder(root: Path) -> Path:
    "Hal-Eval's two evaluation files (the excerpts) under evaluation_dataset/, COCO's val2014/ and out_of_domain_images/."
    (root/"evaluation_dataset").mkdir(parents=True)
    shutil.copy(FIX/"haleval_real/in_domain_excerpt.json", root/"evaluation_dataset/in_domain_evaluation.json")
    shutil.copy(FIX/"haleval_real/out_of_domain_excerpt.json", root/"evaluation_dataset/out_of_domain_evaluation.json")
    for r in json.loads((FIX/"haleval_real/in_domain_excerpt.json").read_text()):
        (root/r["image"]).parent.mkdir(parents=True, exist_ok=True); picture(root/r["image"])
    (root/"out_of_domain_images").mkdir()
    for r in json.loads((FIX/"haleval_real/out_of_domain_excerpt.json").read_text()):
        picture(root/"out_of_domain_images"/Path(r["image_path"]).name)
    return root


def amber_folder(root: Path) -> Path:
    "AMBER's repository layout (data/ with the excerpts) and image/ with a picture for each image its queries name."
    shutil.copytree(FIX/"amber", root/"data", ignore=shutil.ignore_patterns("*responses.json"))
    (root/"image").mkdir()
    for name in {q["image"] for q in json.loads((FIX/"amber/query/query_all.json").read_text())}:
        picture(root/"image"/name)
    return root


def coco_folder(root: Path) -> Path:
    "COCO's layout: annotations/{captions,instances}_val2014.json and val2014/."
    (root/"annotations").mkdir(parents=True); (root/"val2014").mkdir()
    shutil.copy(FIX/"coco/captions_val.json", root/"annotations/captions_val2014.json")
    shutil.copy(FIX/"coco/instances_val.json", root/"annotations/instances_val2014.json")
    for im in json.loads((FIX/"coco/captions_val.json").read_text())["images"]:
        picture(root/"val2014"/im["file_name"])
    return root


def sweep(tmp_path: Path, name: str, notebook: str, fixed: dict, grid: dict | None = None, headline: str = "f1"):
    (tmp_path/"settings.ini").write_text("[DEFAULT]\n")
    p = tmp_path/"params"/f"{name}.yaml"; p.parent.mkdir(exist_ok=True)
    spec = {"name": name, "notebook": str(ROOT/"nbs/experiments"/notebook), "fixed": fixed, "headline": headline}
    if grid: spec["grid"] = grid
    p.write_text(json.dumps(spec))   # JSON is YAML
    res = run_sweep(p, workers=2, reports_dir=tmp_path/"reports", cache_path=tmp_path/f"{name}.sqlite", progress=False)
    assert {r.status for r in res.runs} == {"ok"}, res.describe()
    return res


def score(kind: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "mmresearch.cli", "score", kind, *args], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def answer(body: dict) -> str:
    "Yes/no questions get a verdict, descriptions a sentence, the LLM judge a valid verdict."
    text = request_text(body)
    if text.startswith("You are checking a description"):
        return json.dumps({"hallucinated": True, "types": ["object"], "contents": [{"type": "object", "content": "a dog"}],
                           "corrected": "A street."}) if "dog" in text else json.dumps({"hallucinated": False, "types": [], "contents": [], "corrected": "x"})
    if text.startswith("Describe"): return "A dog and a clock on a table."
    return "No." if len(text) % 2 else "Yes."


def test_haleval_disc_sweep_asks_the_repository_wording_and_round_trips(tmp_path):
    data = haleval_folder(tmp_path/"haleval")
    with FakeChatServer(answer=answer) as server:
        res = sweep(tmp_path, "haleval_real_test", "haleval_disc.ipynb",
                    {"data_dir": str(data), "model": "openai:fake", "base_url": server.base_url, "api_key_env": None,
                     "n_samples": 5000, "prompt_variant": "repo", "n_boot": 50, "score_yes": False},
                    {"domain": ["haleval_in_domain", "haleval_out_of_domain"], "cot": [False, True]})
        asked = list(server.answered)
    recs = json.loads((FIX/"haleval_real/in_domain_excerpt.json").read_text()) + json.loads((FIX/"haleval_real/out_of_domain_excerpt.json").read_text())
    captions = {r["caption"] for r in recs} | {h["caption"] for r in recs for h in r["hal_caption"] if h["caption"].strip()}
    assert set(asked) == {t.format(c) for t in (HALEVAL_REPO_DIRECT, HALEVAL_REPO_COT) for c in captions}
    assert len(asked) == len(set(asked)) == 2 * len(captions)   # every caption once (a repeated item is served by the cache), direct and CoT
    for r in res.runs:
        out = res.sweep_dir/r.run
        mine = pd.read_csv(out/"metrics.csv")
        back = pd.DataFrame(score("haleval-disc", "--input", str(out/"predictions.jsonl"), "--n-boot", "50")["metrics"])
        key = ["domain", "pair_type", "metric"]
        both = mine.merge(back, on=key, suffixes=("", "_scored"))
        assert len(both) == len(mine) and (both.value.round(9).fillna(-1) == both.value_scored.round(9).fillna(-1)).all()
        study = json.loads((out/"manifest.json").read_text())["study"]
        read = {Path(f["path"]).name for f in study["inputs"]["files"]}
        assert study["dataset"]["params"]["items_skipped"] == 0 and {"in_domain_evaluation.json", "out_of_domain_evaluation.json"} & read


def test_haleval_gen_sweep_judged_by_an_openai_judge(tmp_path):
    data = haleval_folder(tmp_path/"haleval")
    with FakeChatServer(answer=answer) as server:
        res = sweep(tmp_path, "haleval_gen_test", "haleval_gen.ipynb",
                    {"data_dir": str(data), "domain": "haleval_out_of_domain", "model": "openai:fake", "judge": "openai:judge",
                     "judge_protocol": "json", "base_url": server.base_url, "api_key_env": None, "n_samples": 5000,
                     "length_prompt": "detailed", "n_boot": 50}, headline="accuracy")
        asked = list(server.answered)
    images = {Path(r["image_path"]).name for r in json.loads((FIX/"haleval_real/out_of_domain_excerpt.json").read_text())}
    assert asked.count("Describe the image in detail.") == len(images) == 7   # one per image (two keys repeat an image)
    assert sum(a.startswith("You are checking a description") for a in asked) == 7
    m = pd.read_csv(res.sweep_dir/res.runs[0].run/"metrics.csv")
    first = m[m.metric == "accuracy"].iloc[0]
    assert (first.judge, first.value, first.n) == ("llm", 0.0, 9)   # the judge finds the dog in every description
    assert m[(m.judge == "llm") & (m.metric == "ratio_object")].value.iloc[0] == 100.0


def test_amber_sweep_asks_amber_queries_and_round_trips(tmp_path):
    data = amber_folder(tmp_path/"AMBER")
    with FakeChatServer(answer=answer) as server:
        res = sweep(tmp_path, "amber_real_test", "amber.ipynb",
                    {"data_dir": str(data), "domain": "amber", "model": "openai:fake", "base_url": server.base_url,
                     "api_key_env": None, "n_samples": 1004, "n_boot": 50, "parser": "amber"})
        asked = list(server.answered)
    queries = json.loads((FIX/"amber/query/query_all.json").read_text())
    assert sorted(asked) == sorted(q["query"] for q in queries)   # AMBER's own words, each query once
    out = res.sweep_dir/res.runs[0].run
    scored = score("amber", "--input", str(out/"responses.json"), "--labels", str(data/"data"), "--n-boot", "50")
    m = pd.read_csv(out/"metrics.csv").set_index(["task", "group", "metric"]).value
    assert scored["discriminative"]["overall"]["f1"] == pytest.approx(m["discriminative", "overall", "f1"])
    assert scored["generative"]["chair"] == pytest.approx(m["generative", "descriptions", "chair"])
    assert scored["amber_score"] == pytest.approx(m["both", "overall", "amber_score"])


def test_chair_on_coco_sweep_round_trips(tmp_path):
    data = coco_folder(tmp_path/"coco")
    with FakeChatServer(answer=answer) as server:
        res = sweep(tmp_path, "chair_coco_test", "haleval_gen.ipynb",
                    {"data_dir": str(data), "domain": "coco", "model": "openai:fake", "base_url": server.base_url,
                     "api_key_env": None, "n_samples": 500, "chair_matching": "tool", "n_boot": 50}, headline="accuracy")
    out = res.sweep_dir/res.runs[0].run
    rows = pd.read_parquet(out/"samples.parquet")
    scored = score("chair", "--input", str(out/"chair_input.jsonl"), "--matching", "tool", "--n-boot", "50")
    assert scored["n"] == 3
    # "A dog and a clock on a table.": the dog and the table are hallucinated except where COCO's truth has them
    assert scored["overall_metrics"]["CHAIRs"] == pytest.approx(float((rows.chair_n > 0).mean())) == 1.0
    assert scored["overall_metrics"]["CHAIRi"] == pytest.approx(rows.chair_n.sum() / (rows.chair_n / rows.chair_i).sum())


@pytest.fixture(scope="module")
def llava(tmp_path_factory) -> Path:
    from make_tiny_families import make_tiny_family
    return make_tiny_family("llava_15", tmp_path_factory.mktemp("fam")/"llava_15")


def test_benchmarks_through_a_tiny_hf_family(tmp_path, llava):
    "The cache keeps only a hash of each request, so what was asked is read from the run's rows (the question or query"
    "column) and the family's chat template is checked to carry it unchanged into the prompt the model sees."
    from mmresearch.core import ImageRef, Request, user
    from mmresearch.models import HFModel
    hal, amb = haleval_folder(tmp_path/"haleval"), amber_folder(tmp_path/"AMBER")
    disc = sweep(tmp_path, "hf_haleval", "haleval_disc.ipynb",
                 {"data_dir": str(hal), "domain": "haleval_in_domain", "model": f"hf:{llava}", "n_samples": 5000,
                  "prompt_variant": "repo", "n_boot": 20, "score_yes": False})
    out = disc.sweep_dir/disc.runs[0].run
    rows = pd.read_parquet(out/"samples.parquet")
    recs = json.loads((FIX/"haleval_real/in_domain_excerpt.json").read_text())
    captions = [c for r in recs for c in [r["caption"], *(h["caption"] for h in r["hal_caption"])]]
    assert sorted(rows.question) == sorted(HALEVAL_REPO_DIRECT.format(c) for c in captions)
    rendered, _ = HFModel(llava, device="cpu")._prompt(Request([user(ImageRef(Image.new("RGB", (8, 8))), rows.question.iloc[0])]))
    assert rows.question.iloc[0] in rendered and "<image>" in rendered
    assert rows.error.isna().all()
    assert score("haleval-disc", "--input", str(out/"predictions.jsonl"), "--n-boot", "20")["n"] == 15
    amber = sweep(tmp_path, "hf_amber", "amber.ipynb", {"data_dir": str(amb), "domain": "amber", "model": f"hf:{llava}",
                                                         "n_samples": 1004, "n_boot": 20, "max_new_tokens_gen": 8})
    out = amber.sweep_dir/amber.runs[0].run
    asked = pd.read_parquet(out/"samples.parquet")
    queries = json.loads((FIX/"amber/query/query_all.json").read_text())
    assert sorted(zip(asked.id, asked["query"])) == sorted((q["id"], q["query"]) for q in queries) and asked.error.isna().all()
    scored = score("amber", "--input", str(out/"responses.json"), "--labels", str(amb/"data"), "--n-boot", "20")
    m = pd.read_csv(out/"metrics.csv").set_index(["task", "group", "metric"]).value
    assert scored["discriminative"]["overall"]["accuracy"] == pytest.approx(m["discriminative", "overall", "accuracy"])
