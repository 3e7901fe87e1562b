"""Batch invariance as a measurement: `CachedModel(..., batch_check=k)` re-asks a seeded sample of its greedy requests at
batch size 1 and reports the agreement. A model whose answers depend on the batch size gives the exact expected rate; a
real Hugging Face model (a tiny LLaVA-1.5 from tests/make_tiny_families.py) on the CPU gives 1.0; a sweep with the option
on writes the counts to each run's manifest and a "Batch invariance" section to the run pages and the summary."""
from pathlib import Path

import pytest
from PIL import Image

from make_tiny_families import make_tiny_family
from mmresearch.batchcheck import BatchCheck
from mmresearch.cache import CachedModel, ResponseCache
from mmresearch.core import ImageRef, Request, Response, user
from mmresearch.models import HFModel
from mmresearch.report import read_json, read_manifest
from mmresearch.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT/"nbs"/"experiments"/"smoke.ipynb"


class BatchSensitive:
    "Answers 'n is k'; in a batch of more than one, the answer to a multiple of 5 gains a trailing space (a batching bug)."
    fingerprint, batch_size = "batch-sensitive-v1", 16
    def __init__(self): self.sizes = []
    def generate(self, requests):
        self.sizes.append(len(requests))
        ns = [int(r.messages[-1].text) for r in requests]
        return [Response(f"n is {n}" + (" " if len(requests) > 1 and n % 5 == 0 else "")) for n in ns]


def test_fake_model_agreement_is_measured_exactly(tmp_path):
    model = BatchSensitive()
    reqs = [Request([user(str(n))], max_new_tokens=4) for n in range(500)]
    cached = CachedModel(model, ResponseCache(tmp_path/"c.sqlite"), batch_check=60, batch_check_seed=3)
    out = cached.generate(reqs)
    assert [o.text.rstrip() for o in out] == [f"n is {n}" for n in range(500)]
    s = cached.batch_invariance()
    picked = sorted(reqs, key=BatchCheck(60, seed=3).rank)[:60]            # the seeded sample, by construction
    flipped = sum(int(r.messages[-1].text) % 5 == 0 for r in picked)
    assert 0 < flipped < 60
    assert (s["checked"], s["agreed"]) == (60, 60 - flipped)
    assert s["agreement"] == pytest.approx((60 - flipped) / 60)
    assert s["ci_low"] < s["agreement"] < s["ci_high"] and s["ci"] == "Wilson 95%"
    assert model.sizes[:32] == [16] * 31 + [4] and model.sizes[32:] == [1] * 60   # 60 re-asks, one at a time
    assert len(s["disagreements"]) == 5 and all(d["alone"] + " " == d["batched"] and d["answered_in"] == 16
                                                for d in s["disagreements"])
    assert len(cached.cache) == 500 and cached.stats.calls == 500          # re-asks neither stored nor counted as calls
    sampled = CachedModel(model, ResponseCache(tmp_path/"c.sqlite"), batch_check=0.5)
    sampled.generate([Request([user(str(n))], temperature=0.8, seed=n) for n in range(10)])
    assert (sampled.batch_invariance()["checked"], sampled.batch_invariance()["skipped_sampling"]) == (0, 10)


def test_check_off_changes_nothing(tmp_path):
    model = BatchSensitive()
    cached = CachedModel(model, ResponseCache(tmp_path/"c.sqlite"))
    cached.generate([Request([user(str(n))]) for n in range(40)])
    assert model.sizes == [16, 16, 8] and cached.batch_invariance() is None


@pytest.fixture(scope="module")
def llava(tmp_path_factory) -> Path:
    return make_tiny_family("llava_15", tmp_path_factory.mktemp("tiny")/"llava_15")


def picture_questions(n: int) -> list[Request]:
    colours = ["red", "blue", "green", "yellow", "white", "black"]
    return [Request([user(ImageRef(Image.new("RGB", (40 + 7 * i, 36 + 3 * i), colours[i % 6])), f"is there a {colours[i % 6]} circle ?")],
                    max_new_tokens=2 + i % 5) for i in range(n)]


@pytest.mark.parametrize("continuous", [True, False])
def test_real_hf_model_is_batch_invariant_on_cpu(tmp_path, llava, continuous):
    cached = CachedModel(HFModel(llava, device="cpu", batch_size=4, continuous=continuous), ResponseCache(tmp_path/"c.sqlite"),
                         batch_check=6)
    out = cached.generate(picture_questions(10))
    assert all(o.ok for o in out)
    s = cached.batch_invariance()
    assert (s["checked"], s["agreed"], s["agreement"], s["disagreements"]) == (6, 6, 1.0, [])
    assert s["ci_high"] == 1.0 and s["ci_low"] == pytest.approx(0.6097, abs=1e-4)


def test_sweep_with_batch_check(tmp_path, llava):
    proj = tmp_path/"proj"; proj.mkdir()
    (proj/"settings.ini").write_text("[DEFAULT]\n")
    params = proj/"bc.yaml"
    params.write_text(f"name: bc\nnotebook: {SMOKE}\nfixed: {{n_samples: 6, batch_check: 3}}\n"
                      f"grid: {{model: ['scripted:coin', 'hf:{llava}']}}\nheadline: accuracy\n")
    res = run_sweep(params, workers=1, reports_dir=proj/"reports", progress=False)
    assert res.ok, res.describe()
    sweep_dir = proj/"reports"/"bc"
    for r in read_json(sweep_dir/"sweep.json")["runs"]:
        s = read_manifest(sweep_dir/r["run"])["study"]["batch_invariance"]
        assert (s["checked"], s["agreed"], s["size"]) == (3, 3, 3), s
        page = (sweep_dir/r["run"]/"run.html").read_text()
        assert "<h2>Batch invariance</h2>" in page and "3 of this run's greedy requests" in page
    summary = (sweep_dir/"summary.html").read_text()
    assert "<h2>Batch invariance</h2>" in summary and summary.count("<td>100.0%</td>") == 2
