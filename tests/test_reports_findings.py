"""Issue 16, reports: every sweep summary opens with its finding (the study's figure, two sentences computed from the
numbers, the table), the index has one line per sweep with that figure small, a sweep that varies the model gets a
comparison page, rates are shown in %, the overall row is named, report kernels print no widget warning, and every
manifest records model time against wall time. Tiny real sweeps of the study notebooks, each a few seconds."""
import importlib.util
import json
import re
from pathlib import Path

import nbformat
import pytest

from mmresearch.cli import performance_line, performance_summary
from mmresearch.report import QUIET_KERNEL, finding, run_report_notebook
from mmresearch.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[1]
EXP = ROOT/"nbs"/"experiments"


def sweep(tmp_path: Path, name: str, notebook: str, fixed: str, grid: str, headline: str, summary: str = ""):
    (tmp_path/"settings.ini").write_text("[DEFAULT]\n")
    params = tmp_path/"params"/f"{name}.yaml"; params.parent.mkdir(exist_ok=True)
    params.write_text(f"name: {name}\nnotebook: {EXP/notebook}\n" + (f"summary: {EXP/summary}\n" if summary else "")
                      + f"fixed: {fixed}\ngrid: {grid}\nheadline: {headline}\n")
    res = run_sweep(params, workers=2, reports_dir=tmp_path/"reports", cache_path=tmp_path/"c.sqlite", progress=False)
    assert all(r.status == "ok" for r in res.runs) and res.summary_error is None, res.describe()
    return res


def outputs_text(nb_path: Path) -> str:
    nb = nbformat.read(nb_path, as_version=4)
    return json.dumps([o for c in nb.cells for o in c.get("outputs", [])])


@pytest.mark.skipif(importlib.util.find_spec("ipywidgets") is not None, reason="with ipywidgets tqdm has no warning to give")
def test_report_kernels_print_no_widget_warning(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("from tqdm.auto import tqdm\nprint(tqdm.__module__)")])
    nb.metadata["kernelspec"] = {"display_name": "python3", "language": "python", "name": "python3"}
    nbformat.write(nb, tmp_path/"in.ipynb")
    for args, warned in ((QUIET_KERNEL[:1], True), (QUIET_KERNEL, False)):   # the old kernel arguments warn: the test can fail
        run_report_notebook(tmp_path/"in.ipynb", tmp_path/"out.ipynb", extra_arguments=args)
        assert ("IProgress not found" in outputs_text(tmp_path/"out.ipynb")) == warned, args


def test_pope_sweep_compares_models_times_itself_and_prints_no_warning(tmp_path):
    res = sweep(tmp_path, "popetest", "pope.ipynb", "{n_samples: 4, k: 2, n_boot: 100}", "{model: [tiny, 'scripted:yes']}", "f1")
    for r in res.runs:                                                       # no warning on any page
        page = (res.sweep_dir/r.run/"run.html").read_text()
        assert "IProgress" not in page and "Warning" not in page, r.run
        perf = json.loads((res.sweep_dir/r.run/"manifest.json").read_text())["performance"]
        assert perf["wall_time_s"] > 0 and 0 <= perf["model_time_s"] < perf["wall_time_s"], perf
        assert perf["harness_share"] == pytest.approx(1 - perf["model_time_s"] / perf["wall_time_s"], abs=1e-3)
    tiny = next(r for r in res.runs if r.grid["model"] == "tiny")
    assert json.loads((res.sweep_dir/tiny.run/"manifest.json").read_text())["performance"]["model_time_s"] > 0  # the tiny LLaVA ran
    perf = performance_summary([res])
    assert perf["runs"] == 2 and performance_line(perf).startswith("Performance: models ")

    page = (res.sweep_dir/"summary.html").read_text()
    assert "IProgress" not in page and "Warning" not in page
    assert page.index('<img alt="Point-range chart of f1 per split') < page.index("Metrics by condition")   # the finding first
    index = (tmp_path/"reports"/"index.html").read_text()
    assert 'src="popetest/finding.png"' in index and "f1 averaged over the split values is" in index
    assert 'href="popetest/compare.html"' in index
    compare = (res.sweep_dir/"compare.html").read_text()
    rows = re.findall(r"<th>(tiny|scripted:yes)</th>\s*<td>(\d+\.\d) \[", compare)
    assert [m for m, _ in rows] == ["tiny", "scripted:yes"], compare
    assert "f1 (%)" in compare and "yes_ratio (%)" in compare


def test_disc_summary_leads_with_f1_per_type(tmp_path):
    res = sweep(tmp_path, "disc", "haleval_disc.ipynb", "{model: 'scripted:coin', n_samples: 6, n_boot: 100}", "{domain: [in_domain, easyvqa]}",
                "f1", summary="haleval_disc_summary.ipynb")
    page = (res.sweep_dir/"summary.html").read_text()
    first_img = page.index('<img alt="Point-range chart of F1 per hallucination type')
    assert first_img < page.index("Per type and condition") < page.index("Paired tests")    # the finding comes first
    assert page.count("<img ") == 1                                                          # shown once
    found = finding(res.sweep_dir)
    best = found.table.loc["all"].map(lambda c: float(c.split()[0])).idxmax()
    assert found.sentences[0].startswith(f"F1 over all pairs is highest for {best} (") or "in every condition" in found.sentences[0]
    assert found.sentences[0] in page.replace("&quot;", '"')


def test_length_finding_plots_measured_length(tmp_path):
    res = sweep(tmp_path, "length", "haleval_gen.ipynb", "{model: tiny, n_samples: 4, n_boot: 100, length_prompt: detailed}",
                "{max_new_tokens: [4, 24]}", "accuracy")
    found = finding(res.sweep_dir)
    assert list(found.table.columns[:2]) == ["mean tokens", "mean words"]
    tokens = found.table["mean tokens"].map(lambda c: float(c.split()[0]))     # "mean [95% CI]" of the measured lengths
    assert tokens.max() <= 24 and tokens.min() <= 4 and found.table["mean tokens"].str.contains(r"\[").all()
    assert found.sentences[0].startswith("Measured length runs from") and "Event hallucinations are" in found.sentences[1]
    page = (res.sweep_dir/"summary.html").read_text()
    assert page.index("hallucination rate and event share against measured tokens and words") < page.index("Metrics by condition")
    assert "Warning" not in page and "IProgress" not in page


def test_mmbench_categories_in_percent_with_named_overall(tmp_path):
    res = sweep(tmp_path, "mcq", "mmbench.ipynb", "{n_items: 10, n_boot: 100}", "{model: ['scripted:letter_a', 'oracle:1']}",
                "circular_accuracy")
    found = finding(res.sweep_dir)
    cats = list(found.table.index.get_level_values("category"))
    assert cats[0] == "overall" and "nan" not in cats and len(set(cats)) > 2
    assert found.table.loc[("model=oracle:1", "overall"), "circular"].startswith("100.0 [")    # percent, not 1.000
    page = (res.sweep_dir/"summary.html").read_text()
    assert ">nan<" not in page and page.index("Point-range chart of vanilla (hollow) and circular (filled)") < page.index("The sweep")
    index = (tmp_path/"reports"/"index.html").read_text()
    assert re.search(r"<td>100\.0% \[100\.0, 100\.0\]</td>", index) and "<td>1.000" not in index
