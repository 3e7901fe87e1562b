"""Issue 21: the generative study's LLM judge on its own OpenAI-compatible server. Two fake servers on 127.0.0.1: the
model's descriptions are asked of one, the judge's verdicts of the other with the key its variable names, and the
judge's calls are stored in the run's cache under the judge server's fingerprint."""
import json
import sqlite3
from pathlib import Path

from mmresearch.fakeserver import FakeChatServer, request_text
from mmresearch.report import read_manifest
from mmresearch.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]
VERDICT = json.dumps({"hallucinated": False, "types": [], "contents": [], "corrected": "as written"})


def test_the_judge_asks_its_own_server(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_TEST_KEY", "judge-key-for-the-test")
    with FakeChatServer(answer=lambda body: "A red cube beside a blue ball.") as vlm, \
         FakeChatServer(answer=lambda body: VERDICT, require_key="judge-key-for-the-test") as judge:
        (tmp_path/"settings.ini").write_text("[DEFAULT]\n")
        p = tmp_path/"params"/"gen.yaml"; p.parent.mkdir()
        p.write_text(f"name: judge_server\nnotebook: {ROOT/'nbs/experiments/haleval_gen.ipynb'}\n"
                     f"fixed: {{domain: in_domain, n_samples: 3, n_boot: 20, model: 'openai:fake-vlm', base_url: '{vlm.base_url}', "
                     f"api_key_env: null, judge: 'openai:fake-judge', judge_protocol: json, judge_base_url: '{judge.base_url}', "
                     f"judge_api_key_env: JUDGE_TEST_KEY}}\n")
        res = run_sweep(p, workers=1, reports_dir=tmp_path/"reports", cache_path=tmp_path/"c.sqlite", progress=False)
        assert [r.status for r in res.runs] == ["ok"], res.describe()
        assert vlm.completed == 3 and judge.completed == 3 and judge.statuses[401] == 0
        assert not any("checking a description" in t for t in vlm.answered)              # no judge prompt reached the model's server
        assert all("checking a description" in t and "A red cube beside a blue ball." in t for t in judge.answered)
        judge_url = judge.base_url
    study = read_manifest(res.sweep_dir/res.runs[0].run)["study"]
    assert study["judge_fingerprint"] == f"openai:fake-judge@{judge_url}:" + study["judge_fingerprint"].rsplit(":", 1)[1]
    with sqlite3.connect(tmp_path/"c.sqlite") as db:                                      # cached like the model's calls
        stored = dict(db.execute("SELECT model, COUNT(*) FROM responses GROUP BY model").fetchall())
    assert stored == {study["model_fingerprint"]: 3, study["judge_fingerprint"]: 3}, stored
