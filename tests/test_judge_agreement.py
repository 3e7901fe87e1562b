"""Issue 22, judge agreement: a run with two or more judges puts a judge table on its page and in judge_agreement.csv
(each judge's headline with its fingerprint and prompt hash, kappa or alpha between the judges per type/category with
clustered intervals, the paired difference from the first judge); the default one-judge runs say so. Tiny real runs
of the two study notebooks through papermill."""
import json
from pathlib import Path

import nbformat
import pandas as pd

from mmresearch.report import run_report_notebook

ROOT = Path(__file__).resolve().parents[1]
EXP = ROOT/"nbs"/"experiments"


def run(tmp_path: Path, notebook: str, **params) -> tuple[pd.DataFrame, dict, str]:
    out = tmp_path/"run"
    run_report_notebook(EXP/notebook, tmp_path/"out.ipynb", parameters={"output_dir": str(out), "cache_path": str(tmp_path/"c.sqlite"), **params})
    page = json.dumps([o for c in nbformat.read(tmp_path/"out.ipynb", as_version=4).cells for o in c.get("outputs", [])])
    return pd.read_csv(out/"judge_agreement.csv"), json.loads((out/"manifest.json").read_text())["study"], page


def test_haleval_gen_two_judges_kappa_per_type(tmp_path):
    table, manifest, page = run(tmp_path, "haleval_gen.ipynb", model="tiny", judge="tiny:tiny-hal-evaluator",
                                judge_protocol="sft", n_samples=4, n_boot=100)
    agree = table[table.section == "agreement"].set_index("group")
    assert list(agree.index) == ["any", "object", "attribute", "relation", "event"]
    assert set(agree.statistic) == {"cohen_kappa"} and (agree.n == 4).all() and (agree.judge == "exact · llm").all()
    assert (table[table.section == "difference"].judge == "llm − exact").sum() == 5
    llm = table[(table.section == "headline") & (table.judge == "llm")]
    assert set(llm.fingerprint) == {manifest["judge_fingerprint"]} and set(llm.prompt_sha256) == {manifest["judge_prompt_sha256"]}
    assert manifest["judge_prompt_sha256"][:12] in page and "the exact and the LLM judge agree with Cohen" in page


def test_haleval_gen_one_judge_says_so(tmp_path):
    table, _, page = run(tmp_path, "haleval_gen.ipynb", n_samples=3, n_boot=50)
    assert set(table[table.section == "agreement"].statistic) == {"not computed: one judge"}
    assert "one judge" in page and set(table.judge) == {"exact"}


def test_t2i_three_judges_alpha_and_auroc_difference(tmp_path):
    table, manifest, page = run(tmp_path, "t2i_judge.ipynb", judge="palette", mode="direct", categories="color,spatial",
                                n_per_category=2, n_boot=100,
                                extra_judges=["scripted:yes", {"judge": "palette", "mode": "cot"}])
    labels = ["palette (direct)", "scripted:yes (direct)", "palette (cot)"]
    agree = table[table.section == "agreement"].set_index("group")
    assert list(agree.index) == ["all", "color", "spatial"] and set(agree.statistic) == {"krippendorff_alpha_interval"}
    assert (agree.judge == " · ".join(labels)).all()
    diffs = table[table.section == "difference"]
    assert set(diffs.statistic) == {"fractional_score difference", "auroc difference"}
    assert set(diffs.judge) == {f"{j} − {labels[0]}" for j in labels[1:]}
    heads = table[(table.section == "headline") & (table.group == "all")]
    assert set(heads.statistic) == {"fractional_score", "auroc"} and heads.fingerprint.notna().all()
    assert manifest["judge_2"] == "scripted:yes" and manifest["judge_3"] == "palette"
    fp = heads.set_index(["judge", "statistic"]).fingerprint
    assert fp["scripted:yes (direct)", "auroc"] == manifest["judge_2_fingerprint"]
    assert [e["label"] for e in manifest["extra_judges"]] == labels[1:] and "judges agree on the per-image fractional score" in page
