"""Issue 25, "never leaked": each test here failed before its fix.

A Hugging Face token pasted as `api_key_env`, a key in `base_url`'s query string, the value of any secret variable in
any parameter, and `notebook:` naming a file that is not a notebook: refused before a file is written, never echoed."""
import pytest

from mmresearch.sweep import load_params, run_sweep
from test_sweep import SMOKE, cli, write

ROOT_NB = SMOKE.parent   # the experiment notebooks

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
    plain = "correct-horse-battery-staple"            # a secret not shaped like a key: only its being a secret variable tells
    monkeypatch.setenv("HF_TOKEN", plain)              # set, but named by no *_env parameter
    _refused(tmp_path, f"notebook: SMOKE\nfixed: {{model: 'openai:m', base_url: 'http://127.0.0.1:9/{plain}/v1'}}\n",
             "contains the value of the environment variable named by 'the secret variable HF_TOKEN'", plain)
    _refused(tmp_path, f"notebook: SMOKE\nfixed: {{n_samples: '{HF}'}}\n", "looks like a key", HF)   # wrong type, not echoed


def test_notebook_that_is_not_a_notebook_is_refused_unread(tmp_path):
    secret = "OPENAI_API_KEY=sk-live-0123456789abcdefghijklmnop"
    (tmp_path/".env").write_text(secret + "\n")
    _refused(tmp_path, f"notebook: {tmp_path/'.env'}\n", "is not a Jupyter notebook", secret[15:])
    (tmp_path/"fake.ipynb").write_text(secret + "\n")                               # named like one, but is not
    _refused(tmp_path, f"notebook: {tmp_path/'fake.ipynb'}\n", "is not a valid Jupyter notebook", secret[15:])
    _refused(tmp_path, f"notebook: SMOKE\nsummary: {tmp_path/'.env'}\n", r"summary .*\.env is not a Jupyter notebook", secret[15:])


# Issue 39: one rule over every value (nested dicts and lists, every part of a URL, model specs), not one per parameter.
KEY = "sk-proj-" + "Zq7Xw2Ve9Rt4Yu1Io6Pa3Sd8Fg5"                # the shape of an OpenAI project key (made up)
T2I, GEN = "{nb}/t2i_judge.ipynb", "{nb}/haleval_gen.ipynb"


@pytest.mark.parametrize("notebook, fixed, needle", [
    (T2I, f"{{generator: 'openai-images:m', prompts_file: p.csv, generator_settings: {{size: 512x512, api_key: {KEY}}}}}",
     r"fixed.generator_settings.api_key is a field named like a secret"),
    (T2I, f"{{extra_judges: [{{judge: palette}}, {{judge: 'openai:{KEY}', mode: direct}}]}}",
     r"fixed.extra_judges\[1\].judge is a value that looks like a key or token"),
    (GEN, f"{{judge: 'openai:{KEY}'}}", r"fixed.judge is a value that looks like a key or token"),
    (GEN, f"{{model: 'openai:m', base_url: 'https://{KEY}@api.example.com/v1'}}", r"user info before the host"),
    (GEN, f"{{model: 'openai:m', base_url: 'https://someone:{KEY}@api.example.com/v1'}}", r"a password before the host"),
    (GEN, f"{{model: 'openai:m', base_url: 'https://api.example.com/{KEY}/v1'}}", r"a path segment shaped like a key"),
    (GEN, f"{{model: 'openai:m', base_url: 'https://api.example.com/v1?k={KEY}'}}", r"query parameter 'k', shaped like a key"),
])
def test_a_key_anywhere_in_any_value_is_refused(tmp_path, notebook, fixed, needle):
    _refused(tmp_path, f"notebook: {notebook.format(nb=ROOT_NB)}\nfixed: {fixed}\n", needle, KEY)


def test_a_key_in_the_description_or_a_grid_value_is_refused(tmp_path):
    _refused(tmp_path, f"notebook: SMOKE\ndescription: 'try with {KEY}'\n", "description is a value that looks like a key", KEY)
    _refused(tmp_path, f"notebook: {ROOT_NB}/haleval_gen.ipynb\ngrid: {{judge: [tiny, 'openai:{KEY}']}}\n",
             "grid.judge is a value that looks like a key", KEY)


def test_a_failed_runs_error_and_notebook_never_quote_a_key(tmp_path, monkeypatch):
    "A key held under a name that does not look secret (`api_key_env: LLM_SERVICE`) quoted by a failing cell: redacted in every file written."
    import nbformat
    secret = "svc-" + "7Gq2Lm9XrT4vWc8Ns1Yb"
    monkeypatch.setenv("LLM_SERVICE", secret)
    nb = tmp_path/"quotes_key.ipynb"
    params = nbformat.v4.new_code_cell("api_key_env = None\noutput_dir = None\ncache_path = None\nseed = 0")
    params.metadata["tags"] = ["parameters"]
    nbformat.write(nbformat.v4.new_notebook(cells=[params, nbformat.v4.new_code_cell(
        "import os\nraise RuntimeError('the server said: bad key ' + os.environ[api_key_env])")],
        metadata={"kernelspec": {"name": "python3", "display_name": "python3", "language": "python"}}), nb)
    p = write(tmp_path/"quotes.yaml", f"notebook: {nb}\nfixed: {{api_key_env: LLM_SERVICE}}\n")
    res = run_sweep(p, reports_dir=tmp_path/"reports", cache_path=tmp_path/"c.sqlite", progress=False)
    assert [r.status for r in res.runs] == ["failed"] and "[REDACTED:LLM_SERVICE]" in res.runs[0].error
    written = [f for f in (tmp_path/"reports").rglob("*") if f.is_file()]
    assert any(f.name == "run.ipynb" for f in written) and any(f.name == "manifest.json" for f in written)
    assert [f for f in written if secret.encode() in f.read_bytes()] == []      # before: manifest, sweep.json, run.ipynb, pages
