"""A server that echoes the API key in its 401 body: the key reaches no Response, no exception and no byte of the cache."""
import secrets
import traceback
from pathlib import Path

import pytest

from mmresearch.cache import CachedModel, ResponseCache
from mmresearch.core import Request, user
from mmresearch.fakeserver import FakeChatServer
from mmresearch.models import OpenAIChatModel

KEY = "sk-e2e-" + secrets.token_hex(16)
KEY_VAR = "MMRESEARCH_E2E_LLM"   # a name that does not look like a key: only `api_key_env` marks it secret


def _assert_nowhere(folder, text: str) -> None:
    "No file under `folder` (the database, its WAL and shared-memory files) holds `text`."
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert files, "nothing was written"
    for p in files: assert text.encode() not in p.read_bytes(), f"{text!r} found in {p}"


def test_key_echoed_in_401_is_redacted_everywhere(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_VAR, KEY)
    reqs = [Request([user("hello [[status=401]]")]), Request([user("refused twice [[status=403]]")]), Request([user("fine")])]
    with FakeChatServer() as srv:
        model = OpenAIChatModel("fake", base_url=srv.base_url, api_key_env=KEY_VAR, max_retries=0)
        direct = model.generate(reqs)
        cached = CachedModel(model, ResponseCache(tmp_path/"cache"/"responses.sqlite"))
        through_cache = cached.generate(reqs)
    assert srv.statuses[401] == 2 and srv.statuses[403] == 2        # the server did refuse, and echoed the key
    for out in (direct, through_cache):
        assert [o.error.kind if o.error else None for o in out] == ["auth", "auth", None]
        assert out[0].error.message == f"AuthenticationError: Incorrect API key provided: [REDACTED:{KEY_VAR}]"
        assert KEY not in repr(out)
    log = cached.cache.error_log()
    assert len(log) == 2 and all(f"[REDACTED:{KEY_VAR}]" in e["message"] and KEY not in repr(e) for e in log)
    cached.cache.close()
    _assert_nowhere(tmp_path/"cache", KEY)


def test_secret_named_variable_is_redacted_from_answers(tmp_path, monkeypatch):
    "A value of any variable whose name looks secret (here *_TOKEN) is redacted from answers, returned and stored."
    token = "hf_" + secrets.token_hex(12)
    monkeypatch.setenv("MMRESEARCH_E2E_TOKEN", token)
    with FakeChatServer(answer=lambda body: f"my token is {token}") as srv:
        cached = CachedModel(OpenAIChatModel("fake", base_url=srv.base_url, api_key_env=None),
                             ResponseCache(tmp_path/"cache"/"responses.sqlite"))
        first = cached.generate([Request([user("leak it")])])
        second = cached.generate([Request([user("leak it")])])
    assert first[0].text == second[0].text == "my token is [REDACTED:MMRESEARCH_E2E_TOKEN]"
    assert cached.stats.hits == 1
    cached.cache.close()
    _assert_nowhere(tmp_path/"cache", token)


def test_exception_from_the_client_is_redacted(monkeypatch):
    "A failure outside one call (here the client itself) that quotes the key is re-raised without it, and without its cause."
    monkeypatch.setenv(KEY_VAR, KEY)
    async def broken_client(self, requests, emit): raise ValueError(f"bad header: Authorization: Bearer {KEY}")
    monkeypatch.setattr(OpenAIChatModel, "_run", broken_client)
    model = OpenAIChatModel("fake", base_url="http://127.0.0.1:9/v1", api_key_env=KEY_VAR)
    with pytest.raises(RuntimeError, match=rf"ValueError: bad header: Authorization: Bearer \[REDACTED:{KEY_VAR}\]") as caught:
        model.generate([Request([user("x")])])
    assert KEY not in "".join(traceback.format_exception(caught.value))


def test_wrong_key_in_a_sweep_reaches_no_report_or_cache_file(tmp_path, monkeypatch):
    "The reported case: a sweep run with a wrong key against a server that echoes it in every 401 body."
    from mmresearch.sweep import run_sweep
    wrong = "sk-wrong-" + secrets.token_hex(16)
    monkeypatch.setenv(KEY_VAR, wrong)
    smoke = Path(__file__).resolve().parents[1]/"nbs"/"experiments"/"smoke.ipynb"
    with FakeChatServer(require_key="sk-right-" + secrets.token_hex(16)) as srv:
        params = tmp_path/"wrong_key.yaml"
        params.write_text(f"notebook: {smoke}\nfixed: {{model: 'openai:fake', base_url: '{srv.base_url}', "
                          f"api_key_env: {KEY_VAR}, n_samples: 2}}\n")
        res = run_sweep(params, workers=1, reports_dir=tmp_path/"reports", cache_path=tmp_path/"cache"/"c.sqlite", progress=False)
    assert srv.statuses[401] == 2 and srv.completed == 0, srv.statuses   # every call refused, the key echoed each time
    files = [p for d in (tmp_path/"reports", tmp_path/"cache") for p in d.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"run.ipynb", "run.html", "samples.parquet", "c.sqlite"} <= names, (names, res.describe())
    assert [str(p) for p in files if wrong.encode() in p.read_bytes()] == []
    log = ResponseCache(tmp_path/"cache"/"c.sqlite").error_log()
    assert len(log) == 2 and all(e["message"].endswith(f"Incorrect API key provided: [REDACTED:{KEY_VAR}]") for e in log)
