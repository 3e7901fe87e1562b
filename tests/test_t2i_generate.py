"""Evaluating a text-to-image model (issue 21): a tiny random diffusers pipeline (tests/make_tiny_diffusers.py, built
offline) and the fake OpenAI-compatible images endpoint draw T2I-CompBench's own prompts (excerpts in
tests/fixtures/t2i_compbench), images are seeded and cached, and a two-generator sweep ranks the generators per category."""
import json
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("diffusers")
from make_tiny_diffusers import make_tiny_pipeline
from mmresearch.fakeserver import FakeImagesServer
from mmresearch.sweep import run_sweep
from mmresearch.t2i_generate import DiffusersGenerator, ImageStore, OpenAIImagesGenerator, generate_cached, prompt_seed
from mmresearch.t2i_judge import load_prompts

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT/"tests"/"fixtures"/"t2i_compbench"
SETTINGS = {"num_inference_steps": 2, "height": 32, "width": 32}


@pytest.fixture(scope="module")
def tiny_pipeline(tmp_path_factory) -> Path:
    return make_tiny_pipeline(tmp_path_factory.mktemp("pipe")/"tiny-sd")


def compbench_prompts():
    "Two prompts each of a file with Windows line ends (color) and one without (numeracy)."
    return load_prompts(FIX/"color_val.txt")[:2] + load_prompts(FIX/"numeracy_val.txt")[:2]


def file_lines(name: str, n: int) -> list[str]:
    "The first `n` prompts of a fixture file, read independently of `load_prompts`."
    return (FIX/name).read_bytes().decode().replace("\r\n", "\n").split("\n")[:n]


def test_tiny_pipeline_seeded_cached_and_verbatim(tiny_pipeline, tmp_path):
    prompts = compbench_prompts()
    gen = DiffusersGenerator(tiny_pipeline)
    first, counts = generate_cached(prompts, gen, ImageStore(tmp_path/"a"), seed=0, settings=SETTINGS)
    assert counts == {"made": 4, "cached": 0}
    assert gen.calls == file_lines("color_val.txt", 2) + file_lines("numeracy_val.txt", 2)   # T2I-CompBench's words, verbatim
    assert [s.meta["category"] for s in first] == ["color", "color", "numeracy", "numeracy"]
    hashes = [s.image.sha256 for s in first]
    assert len(set(hashes)) == 4 and first[0].image.load().size == (32, 32)
    # deterministic per seed: a fresh pipeline and an empty store make the same pixels; another seed makes others
    again, _ = generate_cached(prompts, DiffusersGenerator(tiny_pipeline), ImageStore(tmp_path/"b"), seed=0, settings=SETTINGS)
    assert [s.image.sha256 for s in again] == hashes
    other, _ = generate_cached(prompts, DiffusersGenerator(tiny_pipeline), ImageStore(tmp_path/"c"), seed=1, settings=SETTINGS)
    assert not set(s.image.sha256 for s in other) & set(hashes)
    # the second run on the same store: no pipeline call, not even a load
    cached_gen = DiffusersGenerator(tiny_pipeline)
    served, counts = generate_cached(prompts, cached_gen, ImageStore(tmp_path/"a"), seed=0, settings=SETTINGS)
    assert counts == {"made": 0, "cached": 4} and cached_gen.calls == [] and cached_gen._pipeline is None
    assert [s.image.sha256 for s in served] == hashes
    # the settings are part of the key
    assert generate_cached(prompts[:1], cached_gen, ImageStore(tmp_path/"a"), seed=0, settings={**SETTINGS, "num_inference_steps": 3})[1]["made"] == 1


def test_openai_images_endpoint(tmp_path, monkeypatch):
    monkeypatch.setenv("MMR_TEST_IMAGES_KEY", "sk-images-test")
    prompts = compbench_prompts()
    with FakeImagesServer(require_key="sk-images-test") as srv:
        gen = OpenAIImagesGenerator("fake-sd", srv.base_url, api_key_env="MMR_TEST_IMAGES_KEY")
        samples, counts = generate_cached(prompts, gen, ImageStore(tmp_path), seed=0, settings={"size": "16x16"})
        assert counts["made"] == 4 and sorted(b["prompt"] for b in srv.bodies) == sorted(p.text for p in prompts)   # asked at once: any order
        assert all(b["response_format"] == "b64_json" and b["size"] == "16x16" and b["model"] == "fake-sd" for b in srv.bodies)
        assert samples[0].image.load().size == (16, 16)
        again, counts = generate_cached(prompts, OpenAIImagesGenerator("fake-sd", srv.base_url, api_key_env="MMR_TEST_IMAGES_KEY"),
                                        ImageStore(tmp_path), seed=0, settings={"size": "16x16"})
        assert counts == {"made": 0, "cached": 4} and len(srv.bodies) == 4
        seeded = OpenAIImagesGenerator("fake-sd", srv.base_url, api_key_env="MMR_TEST_IMAGES_KEY", send_seed=True)
        generate_cached(prompts[:2], seeded, ImageStore(tmp_path/"seeded"), seed=0)
        assert {b["prompt"]: b.get("seed") for b in srv.bodies[4:]} == {p.text: prompt_seed(0, p) for p in prompts[:2]}
        monkeypatch.setenv("MMR_TEST_IMAGES_KEY", "sk-wrong-key")
        with pytest.raises(RuntimeError, match=r"HTTP 401") as e:
            generate_cached(prompts[:1], OpenAIImagesGenerator("other", srv.base_url, api_key_env="MMR_TEST_IMAGES_KEY"), ImageStore(tmp_path))
        assert "sk-wrong-key" not in str(e.value) and "color_val-1" in str(e.value)   # the key is redacted, the prompt named


def test_two_generator_sweep_ranks_per_category(tiny_pipeline, tmp_path):
    (tmp_path/"settings.ini").write_text("[DEFAULT]\n")
    params = tmp_path/"params"/"gens.yaml"; params.parent.mkdir()
    files = [str(FIX/f) for f in ("color_val.txt", "numeracy_val.txt", "spatial_val.txt")]
    with FakeImagesServer() as srv:
        params.write_text(
            f"name: gens_test\nnotebook: {ROOT/'nbs/experiments/t2i_judge.ipynb'}\n"
            f"summary: {ROOT/'nbs/experiments/t2i_generators_summary.ipynb'}\n"
            f"fixed: {{judge: palette, mode: direct, protocol: json, n_boot: 200, prompts_per_file: 3, prompts_file: {files}}}\n"
            "cells:\n"
            f"  - {{generator: 'diffusers:{tiny_pipeline}', generator_settings: {SETTINGS}}}\n"
            f"  - {{generator: 'openai-images:fake-sd', generator_base_url: '{srv.base_url}'}}\n"
            "headline: fractional_score\n")
        res = run_sweep(params, workers=1, reports_dir=tmp_path/"reports", cache_path=tmp_path/"c.sqlite", progress=False)
        assert [r.status for r in res.runs] == ["ok", "ok"], res.describe()
        assert sorted(b["prompt"] for b in srv.bodies) == sorted(l for f in files for l in Path(f).read_text().splitlines()[:3])
        # the same sweep into a fresh reports folder with the same cache: every image comes from the image cache
        again = run_sweep(params, workers=1, reports_dir=tmp_path/"again", cache_path=tmp_path/"c.sqlite", progress=False)
        assert [r.status for r in again.runs] == ["ok", "ok"] and len(srv.bodies) == 9, again.describe()
        for r in again.runs:
            source = json.loads((again.sweep_dir/r.run/"manifest.json").read_text())["study"]["dataset"]["source"]
            assert (source["images_made"], source["images_cached"]) == (0, 9)
    ranked = pd.read_csv(res.sweep_dir/"generator_ranking.csv")
    assert set(ranked.category) == {"color", "numeracy", "spatial", "all"}
    for cat, g in ranked.groupby("category"):
        assert sorted(g["rank"]) == [1, 2] and g.n_prompts.tolist() == [3 if cat != "all" else 9] * 2
        assert g.generator.str.startswith("diffusers:").sum() == 1 and g.generator.str.startswith("openai-images:").sum() == 1
        runner = g[g["rank"] == 2].iloc[0]
        assert runner.diff_vs_best <= 0 and runner.diff_ci_low <= runner.diff_vs_best <= runner.diff_ci_high
    page = (res.sweep_dir/"summary.html").read_text()
    assert "ranked per category" in page and "Best per category" in page
