"""MMHal-Bench (issue 41): the official figures reproduced on a review file, the judge asked in the official prompt
through an OpenAI-compatible server, and the study run end to end from the benchmark's folder as a sweep, through the
fake server and through the tiny model.

Expected values were obtained by running the analysis part of MMHal-Bench's own evaluator (llava-rlhf/LLaVA-RLHF at
830a083, Eval/eval_gpt_mmhal.py, from "# analyze responses" to the end) on tests/fixtures/mmhal/reviews_handmade.json,
outside this repository: it prints "Average score: 2.97", "Hallucination rate: 0.42" and "Average score for each
question type: 3.25,3.0,2.58,3.08,3.42,2.42,2.75,3.25"; the ratings it read sum to 285 with 40 below 3 (so 285/96 and
40/96 exactly), per type 39, 36, 31, 37, 41, 29, 33, 39 of 12 questions each."""
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from PIL import Image

from mmresearch.fakeserver import FakeChatServer, request_text
from mmresearch.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT/"tests"/"fixtures"/"mmhal"
TYPES = ["attribute", "adversarial", "comparison", "counting", "relation", "environment", "holistic", "other"]


def score(*args: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "mmresearch.cli", "score", "mmhal", *args], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_official_figures_on_a_review_file():
    res = score("--input", str(FIX/"reviews_handmade.json"), "--n-boot", "200")
    assert res["official"] == ["Average score: 2.97", "Hallucination rate: 0.42",
                               "Average score for each question type: 3.25,3.0,2.58,3.08,3.42,2.42,2.75,3.25"]
    m = {(r["question_type"], r["metric"]): r for r in res["metrics"]}
    assert m["overall", "average_score"]["value"] == pytest.approx(285 / 96)
    assert m["overall", "hallucination_rate"]["value"] == pytest.approx(100 * 40 / 96)
    for t, total in zip(TYPES, [39, 36, 31, 37, 41, 29, 33, 39]):
        assert m[t, "average_score"]["value"] == pytest.approx(total / 12) and m[t, "average_score"]["n"] == 12
        assert m[t, "average_score"]["ci_low"] <= total / 12 <= m[t, "average_score"]["ci_high"]
    assert res["unreadable"] == 2 and res["call_errors"] == 0


def rating_judge(body: dict) -> str:
    "A judge that rates 6 when the answer contains the human answer's last word, else 2; descriptions get a sentence."
    text = request_text(body)
    if not text.startswith("Please act as an impartial and objective judge"): return "I see a red fire hydrant."
    gt = text.split("### Standard Human-Generated Answer\n")[1].split("\n")[0]
    answer = text.split("### LMM Response to Evaluate\n")[1].strip()
    last = gt.rstrip(".").split()[-1].lower()
    return f"The response is checked.\nRating: {6 if last in answer.lower() else 2}, as judged"


def test_the_judge_is_asked_in_the_official_prompt(tmp_path):
    """`--judge` asks any OpenAI-compatible judge, every call cached: the prompt is the official template filled as the
    script fills it (image contents joined with ', '); a second run asks nothing."""
    recs = json.loads((FIX/"response_template.json").read_text())[:16]
    answers = [{**r, "model_answer": r["gt_answer"] if k % 4 == 0 else "I cannot tell."} for k, r in enumerate(recs)]
    (tmp_path/"answers.json").write_text(json.dumps(answers))
    template = json.loads((ROOT/"mmresearch"/"data"/"mmhal_judge_prompt.json").read_text())["template"]
    with FakeChatServer(answer=rating_judge) as server:
        args = ["--input", str(tmp_path/"answers.json"), "--judge", "openai:judge", "--base-url", server.base_url,
                "--cache", str(tmp_path/"c.sqlite"), "--n-boot", "50"]
        res = score(*args)
        asked = list(server.answered)
        again = score(*args)
    expected = [template.format(", ".join(r["image_content"]), r["question"], r["gt_answer"], a["model_answer"]) for r, a in zip(recs, answers)]
    assert sorted(asked) == sorted(expected)                     # every question asked once, in the official prompt (in any order: calls run at once)
    assert len(asked) == 16 and len(server.answered) == 16        # the second scoring was served from the cache
    m = {(r["question_type"], r["metric"]): r["value"] for r in res["metrics"]}
    # answers 0, 4, 8, 12 repeat the human answer (rated 6 unless its last word is missing: none is), the 12 others 2
    assert m["overall", "average_score"] == pytest.approx((4 * 6 + 12 * 2) / 16) and m["overall", "hallucination_rate"] == 75.0
    assert again["metrics"] == res["metrics"]


def mmhal_folder(root: Path) -> Path:
    "MMHal-Bench's folder: the published template and a placeholder picture per question, named by its image_src."
    (root/"images").mkdir(parents=True)
    (root/"response_template.json").write_bytes((FIX/"response_template.json").read_bytes())
    for k, r in enumerate(json.loads((FIX/"response_template.json").read_text())):
        Image.new("RGB", (24, 24), (k * 37 % 256, k * 91 % 256, k * 13 % 256)).save(root/"images"/Path(r["image_src"]).name)
    return root


def sweep(tmp_path: Path, name: str, fixed: dict, grid: dict | None = None):
    (tmp_path/"settings.ini").write_text("[DEFAULT]\n")
    p = tmp_path/"params"/f"{name}.yaml"; p.parent.mkdir(exist_ok=True)
    spec = {"name": name, "notebook": str(ROOT/"nbs/experiments/mmhal.ipynb"), "fixed": fixed, "headline": "average_score"}
    if grid: spec["grid"] = grid
    p.write_text(json.dumps(spec))
    res = run_sweep(p, workers=2, reports_dir=tmp_path/"reports", cache_path=tmp_path/f"{name}.sqlite", progress=False)
    assert {r.status for r in res.runs} == {"ok"}, res.describe()
    return res


def test_sweep_from_the_benchmark_folder_through_the_fake_server_and_the_tiny_model(tmp_path):
    """Two runs, the model behind the fake server and the tiny LLaVA, judged by the fake server: every question asked as
    written, every answer judged in the official prompt, and each run's responses.json scored again by
    `mmresearch score mmhal` gives the run's own figures."""
    data = mmhal_folder(tmp_path/"MMHal-Bench")
    with FakeChatServer(answer=rating_judge) as server:
        res = sweep(tmp_path, "mmhal_test", {"data_dir": str(data), "base_url": server.base_url, "api_key_env": None,
                                            "judge": "openai:judge", "n_samples": 16, "n_boot": 50, "max_new_tokens": 8},
                    {"model": ["openai:fake", "tiny"]})
        asked = list(server.answered)
    questions = {r["question"] for r in json.loads((FIX/"response_template.json").read_text())}
    assert sum(a in questions for a in asked) == 16                        # the fake model was asked each question as written
    assert sum(a.startswith("Please act as an impartial") for a in asked) == 32   # both runs' answers judged
    for r in res.runs:
        out = res.sweep_dir/r.run
        mine = pd.read_csv(out/"metrics.csv")
        back = pd.DataFrame(score("--input", str(out/"responses.json"), "--n-boot", "50")["metrics"])
        both = mine.merge(back, on=["question_type", "metric"], suffixes=("", "_scored"))
        assert len(both) == len(mine) and (both.value.round(9) == both.value_scored.round(9)).all(), r.run
        assert set(mine.unit[mine.metric == "average_score"]) == {"score"}
        rows = pd.read_parquet(out/"samples.parquet")
        assert len(rows) == 16 and rows.error.isna().all() and rows.score.notna().all()
