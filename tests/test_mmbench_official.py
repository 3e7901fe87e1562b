"""MMBench run from its own TSV, end to end through a sweep: the prompts the model receives are VLMEvalKit's, and the
VLMEvalKit-layout results file the run writes scores the same through `mmresearch score mmbench` (issue 21).

Fixture: tests/fixtures/mmbench/mmbench_dev_en_e2e.tsv (real MMBench_DEV_EN rows 241, 252 and their copies; items 1, 2,
7 and 244 of LLaVA's published MMBench-dev xlsx with generated pictures; see tests/fixtures/README.md)."""
import json
from pathlib import Path

import pandas as pd
import pytest

from mmresearch.cli import main
from mmresearch.fakeserver import FakeChatServer, request_text
from mmresearch.mmbench import score_mmbench
from mmresearch.mmbench_tsv import pass_request, study_passes
from mmresearch.sweep import run_sweep
from test_eee import validate_run

ROOT = Path(__file__).resolve().parents[1]
TSV = ROOT/"tests"/"fixtures"/"mmbench"/"mmbench_dev_en_e2e.tsv"


def vlmevalkit_prompts(tsv: Path) -> list[str]:
    """What VLMEvalKit asks for every row of an MMBench TSV, built here from the file as VLMEvalKit reads it
    (`pd.read_csv(f, sep='\\t')`, a NaN hint or option left out). The strings are those of ImageMCQDataset.build_prompt,
    open-compass/VLMEvalKit@e8e78f05f3080fe28154f2130321f17951c3be94, vlmeval/dataset/image_mcq.py:
    'Hint: {hint}\\n', 'Question: {question}\\n', 'Options:\\n', '{key}. {item}\\n' per option, and
    'Please select the correct answer from the options above. \\n'."""
    out = []
    for _, line in pd.read_csv(tsv, sep="\t").iterrows():
        options = {c: line[c] for c in "ABCDEFGHIJ" if c in line and not pd.isna(line[c])}
        prompt = f"Hint: {line['hint']}\n" if not pd.isna(line["hint"]) else ""
        prompt += f"Question: {line['question']}\n" + "Options:\n" + "".join(f"{k}. {v}\n" for k, v in options.items())
        out.append(prompt + "Please select the correct answer from the options above. \n")
    return out


def test_expected_prompts_anchor():
    "One prompt written out in full: row 1000252 (a copy, its options rotated), as VLMEvalKit would send it."
    p = vlmevalkit_prompts(TSV)[3]
    assert p.startswith("Hint: People can use the engineering-design process to develop solutions to problems.")
    assert p.endswith("\nQuestion: Which of the following could Laura and Isabella's test show?\nOptions:\n"
                      "A. if a new batch of concrete was firm enough to use\n"
                      "B. if the concrete from each batch took the same amount of time to dry\n"
                      "Please select the correct answer from the options above. \n")


def _sweep(tmp_path: Path, model: str, extra: str = "") -> Path:
    (tmp_path/"settings.ini").write_text("[DEFAULT]\n")
    params = tmp_path/"params"/"mmb.yaml"; params.parent.mkdir()
    params.write_text(f"name: mmb_e2e\nnotebook: {ROOT/'nbs/experiments/mmbench.ipynb'}\n"
                      f"fixed: {{domain: mmbench_tsv, data: '{TSV}', prompt_variant: vlmevalkit, n_items: 0, n_boot: 200, {extra}}}\n"
                      f"cells:\n  - {{model: '{model}'}}\nheadline: circular_accuracy\n")
    res = run_sweep(params, workers=1, reports_dir=tmp_path/"reports", cache_path=tmp_path/"c.sqlite", progress=False)
    assert [r.status for r in res.runs] == ["ok"], res.describe()
    return res.sweep_dir/res.runs[0].run


def _round_trip(run_dir: Path) -> dict:
    "The results file scored by `mmresearch score mmbench` equals the run's own metrics."
    xlsx = run_dir/"vlmevalkit_predictions.tsv"
    got = score_mmbench(xlsx, n_boot=200)
    m = pd.read_csv(run_dir/"metrics.csv")
    overall = m[m.category.isna() & m.l2_category.isna()].set_index("metric").value
    assert got["circular"]["accuracy"] == pytest.approx(100 * overall["circular_accuracy"], abs=1e-3)
    assert got["vanilla"]["accuracy"] == pytest.approx(100 * overall["vanilla_accuracy"], abs=1e-3)
    assert got["empty_predictions"] == overall["empty_predictions"]
    per_cat = m[(m.metric == "circular_accuracy") & m.category.notna()].set_index("category").value
    assert {c: v["circular"]["accuracy"] for c, v in got["by_category"].items()} == pytest.approx((100 * per_cat).to_dict(), abs=1e-3)
    cols = pd.read_csv(xlsx, sep="\t").columns.tolist()
    assert cols[:4] == ["index", "question", "hint", "A"] and {"answer", "category", "l2-category", "prediction"} <= set(cols)
    return got


def test_fake_server_sweep_asks_vlmevalkit_prompts_and_round_trips(tmp_path, capsys):
    replies = ["A", "The answer is B.", "", "I would pick C"]
    with FakeChatServer(answer=lambda body: replies[len(request_text(body)) % 4]) as server:
        run_dir = _sweep(tmp_path, "openai:fake-vlm", f"base_url: '{server.base_url}', api_key_env: null")
        assert sorted(server.answered) == sorted(vlmevalkit_prompts(TSV))       # every row asked once, in VLMEvalKit's words
    got = _round_trip(run_dir)
    assert got["n_passes"] == 19 and got["n_items"] == 6 and got["empty_predictions"] >= 1
    assert main(["score", "mmbench", "--input", str(run_dir/"vlmevalkit_predictions.tsv")]) == 0
    assert json.loads(capsys.readouterr().out)["circular"]["accuracy"] == got["circular"]["accuracy"]
    manifest = json.loads((run_dir/"manifest.json").read_text())["study"]
    assert manifest["dataset"]["sha256"] and manifest["dataset"]["params"]["items_found"] == 6 and manifest["dataset"]["skipped"] == 0
    validate_run(run_dir)


def test_tiny_hf_family_sweep_asks_vlmevalkit_prompts_and_round_trips(tmp_path):
    from make_tiny_families import make_tiny_family
    from mmresearch.models import HFModel
    folder = make_tiny_family("llava_15", tmp_path/"llava_15")
    run_dir = _sweep(tmp_path, f"hf:{folder}", "max_new_tokens: 6")
    samples = pd.read_parquet(run_dir/"samples.parquet").sort_values("pass_id")
    expected = dict(zip(pd.read_csv(TSV, sep="\t")["index"], vlmevalkit_prompts(TSV)))
    assert samples.prompt.tolist() == [expected[i] for i in samples.pass_id]
    passes, _ = study_passes("mmbench_tsv", None, data=TSV)              # the requests the study sent, rebuilt
    model = HFModel(folder, device="cpu")
    out = [None] * len(passes)
    templated = [text for _, text, _ in model._prompts([pass_request(p, "vlmevalkit") for p in passes], out)]
    assert out == [None] * len(passes) and len(templated) == len(passes)
    assert all(expected[p.index] in t for p, t in zip(passes, templated))   # inside the family's chat template, unchanged
    _round_trip(run_dir)
    validate_run(run_dir)


# VLMEvalKit's own evaluator on the results file below, run outside the repository (2026-11-26):
# open-compass/VLMEvalKit@e8e78f05f3080fe28154f2130321f17951c3be94, vlmeval/dataset/utils/multiple_choice.py
# mcq_circular_eval (no judge model: exact matching) and report_acc, in the order of vlmeval/dataset/image_mcq.py
# ImageMCQDataset.evaluate_heuristic. Its acc.csv: Overall 0.483333, l2_0 0.5, l2_1 0.466667, cat0 0.416667,
# cat1 0.333333, cat2 0.416667, cat3 0.666667, cat4 0.583333 (items: 60 overall, 30 per l2-category, 12 per category).
OFFICIAL_EXACT_MATCHING = {"Overall": 29 / 60, "l2_0": 15 / 30, "l2_1": 14 / 30, "cat0": 5 / 12, "cat1": 4 / 12,
                           "cat2": 5 / 12, "cat3": 8 / 12, "cat4": 7 / 12}


def test_our_vlmevalkit_protocol_equals_the_official_evaluator_per_category():
    "Our reading of VLMEvalKit's exact matching gives the official evaluator's figures, overall and per (l2-)category."
    from mmresearch.mmbench import _item_hits, _pass_from_row, _prediction_rows, score_predictions
    f = ROOT/"tests"/"fixtures"/"mmbench"/"vlmevalkit_official_check.tsv"
    metrics, answers = score_predictions(f, n_boot=50, protocols=True)
    row = next(r for r in metrics["protocols"] if r["protocol"] == "vlmevalkit" and r["metric"] == "circular")
    assert row["value"] == pytest.approx(100 * OFFICIAL_EXACT_MATCHING["Overall"]) and row["n"] == 60
    passes = [_pass_from_row(r)[0] for r in _prediction_rows(f, None)[1]]
    hits = _item_hits({p.index: p for p in passes}, answers, "vlmevalkit")["circular"].astype(float)
    base = {p.base_index: p for p in passes if p.rotation == 0}
    got = {}
    for key in ("l2_category", "category"):
        groups = pd.Series([getattr(base[i], key) for i in hits.index], index=hits.index)
        got.update(hits.groupby(groups).mean().to_dict())
    assert got == pytest.approx({k: v for k, v in OFFICIAL_EXACT_MATCHING.items() if k != "Overall"})
