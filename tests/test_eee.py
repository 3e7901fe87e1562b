"""Every run's metrics as an Every Eval Ever (v0.3.0) record, validated against the schema the project publishes
(tests/fixtures/eee/eval.schema.json: evaleval/every_eval_ever at 9bce4136, every_eval_ever/schemas/eval.schema.json, MIT)."""
import json
from pathlib import Path

import jsonschema
import pandas as pd

from mmresearch.eee import EEE_FILE
from mmresearch.report import CI_FLAGS, run_report_notebook

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT/"tests"/"fixtures"/"eee"/"eval.schema.json").read_text())


def validate_run(run_dir: Path) -> dict:
    "The run's EEE record, checked against the schema and against its metrics.csv."
    rec = json.loads((run_dir/EEE_FILE).read_text())
    jsonschema.validate(rec, SCHEMA)
    assert rec["schema_version"] == SCHEMA["version"] == "0.3.0"
    m = pd.read_csv(run_dir/"metrics.csv")
    finite = m[pd.to_numeric(m.value, errors="coerce").notna()]
    assert len(rec["evaluation_results"]) == len(finite)
    for r, (_, row) in zip(rec["evaluation_results"], finite.iterrows()):
        assert r["metric_config"]["metric_id"] == row.metric and r["score_details"]["score"] == row.value
        assert not any(f"{c}=" in r["evaluation_result_id"] for c in CI_FLAGS), r["evaluation_result_id"]   # not breakdowns
        if pd.notna(row.get("ci_low")):
            ci = r["score_details"]["uncertainty"]["confidence_interval"]
            assert (ci["lower"], ci["upper"], ci["confidence_level"]) == (row.ci_low, row.ci_high, 0.95) and ci["method"]
    return rec


def test_the_smoke_study_writes_a_valid_record(tmp_path):
    out = tmp_path/"run"
    run_report_notebook(ROOT/"nbs/experiments/smoke.ipynb", tmp_path/"run.ipynb", cwd=ROOT,
                        parameters={"output_dir": str(out), "cache_path": str(tmp_path/"c.sqlite")})
    rec = validate_run(out)
    assert rec["model_info"]["name"] == "scripted:coin" and rec["eval_library"]["name"] == "mmresearch"
    assert any("confidence_interval" in r["score_details"].get("uncertainty", {}) for r in rec["evaluation_results"])
