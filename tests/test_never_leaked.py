"""Issue 25, "never leaked": each test here failed before its fix.

A Hugging Face token pasted as `api_key_env`, a key in `base_url`'s query string, the value of any secret variable in
any parameter, and `notebook:` naming a file that is not a notebook: refused before a file is written, never echoed."""
import pytest

from mmresearch.sweep import load_params, run_sweep
from test_sweep import cli, write

HF = "hf_" + "Q8zR2LmX0pT7vWc3Ns5Ye1UbKd4Fj6Hg9A"   # the shape of a Hugging Face token (made up)
URL_KEY = "AIzaFakeKey0123456789abcdefghijklmnopq"


def _refused(tmp_path, text: str, needle: str, secret: str) -> None:
    "Through the API and the CLI: refused (exit 2) naming the params file, the secret in no message and no file."
    p = write(tmp_path/"leak.yaml", text)
    with pytest.raises(ValueError, match=needle) as e: run_sweep(p, reports_dir=tmp_path/"reports", progress=False)
    assert secret not in str(e.value) and str(p) in str(e.value)
    out = cli("sweep", str(p), "--reports", str(tmp_path/"reports"), "--cache", str(tmp_path/"c.sqlite"), "--no-progress",
              cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    assert secret not in out.stdout + out.stderr and secret[:8] not in out.stdout + out.stderr
    assert not (tmp_path/"reports").exists()


def test_hf_token_as_api_key_env_is_refused(tmp_path):
    for where in (f"fixed: {{api_key_env: {HF}}}", f"grid: {{api_key_env: [HF_TOKEN, {HF}]}}"):
        _refused(tmp_path, f"notebook: SMOKE\n{where}\n", "looks like a key or token", HF)


def test_key_in_base_url_is_refused(tmp_path):
    for url in (f"https://my.azure.example.com/openai/v1?api-version=2024-06-01&api_key={URL_KEY}",
                f"https://generativelanguage.example.com/v1beta/openai?key={URL_KEY}"):
        _refused(tmp_path, f"notebook: SMOKE\nfixed: {{model: 'openai:m', base_url: '{url}'}}\n", "is a URL with a credential", URL_KEY)
    spec = load_params(write(tmp_path/"ok.yaml", "notebook: SMOKE\nfixed: {base_url: 'https://h/v1?api-version=2024-06-01'}\n"))
    assert spec.fixed["base_url"].endswith("api-version=2024-06-01")                 # a URL without a key is fine


def test_any_secret_variable_in_any_parameter_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", HF)                 # set, but named by no *_env parameter
    _refused(tmp_path, f"notebook: SMOKE\nfixed: {{model: 'openai:m', base_url: 'http://127.0.0.1:9/{HF}/v1'}}\n",
             "contains the value of the environment variable named by 'the secret variable HF_TOKEN'", HF)
    _refused(tmp_path, f"notebook: SMOKE\nfixed: {{n_samples: '{HF}'}}\n", "looks like a key", HF)   # wrong type, not echoed


def test_notebook_that_is_not_a_notebook_is_refused_unread(tmp_path):
    secret = "OPENAI_API_KEY=sk-live-0123456789abcdefghijklmnop"
    (tmp_path/".env").write_text(secret + "\n")
    _refused(tmp_path, f"notebook: {tmp_path/'.env'}\n", "is not a Jupyter notebook", secret[15:])
    (tmp_path/"fake.ipynb").write_text(secret + "\n")                               # named like one, but is not
    _refused(tmp_path, f"notebook: {tmp_path/'fake.ipynb'}\n", "is not a valid Jupyter notebook", secret[15:])
    _refused(tmp_path, f"notebook: SMOKE\nsummary: {tmp_path/'.env'}\n", r"summary .*\.env is not a Jupyter notebook", secret[15:])
