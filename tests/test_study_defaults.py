"""Issue 24: every study resamples `metrics.N_BOOT` times unless its params say otherwise (they passed n_boot=1000), and
the studies with metrics that are not rates declare their scale (a `unit` column in metrics.csv)."""
import json
from pathlib import Path

import papermill as pm

from mmresearch.metrics import N_BOOT
from mmresearch.report import run_report_notebook

EXP = Path(__file__).resolve().parents[1]/"nbs"/"experiments"


def test_every_study_defaults_to_the_project_n_boot():
    studies = [nb for nb in sorted(EXP.glob("*.ipynb")) if "n_boot" in pm.inspect_notebook(str(nb))]
    assert {nb.stem for nb in studies} >= {"pope", "haleval_disc", "haleval_gen", "mmbench", "t2i_judge", "amber", "smoke"}
    for nb in studies:
        p = pm.inspect_notebook(str(nb))["n_boot"]
        assert p["default"] == "None" and p["inferred_type_name"] == "Optional[int]", (nb.name, p)
        assert "n_boot = N_BOOT if n_boot is None else n_boot" in nb.read_text(), nb.name


def test_a_run_uses_n_boot_unless_its_params_override_it(tmp_path):
    for given, expected in ((None, N_BOOT), (50, 50)):
        out = tmp_path/f"run{given}"
        params = {"output_dir": str(out), "cache_path": str(tmp_path/"c.sqlite"), **({"n_boot": given} if given else {})}
        run_report_notebook(EXP/"smoke.ipynb", tmp_path/"out.ipynb", parameters=params)
        assert json.loads((out/"manifest.json").read_text())["study"]["n_boot"] == expected


def test_every_library_function_resamples_n_boot_times_by_default():
    """One place sets the default: every function of the package with an `n_boot` parameter defaults to
    `metrics.N_BOOT` (they said 1000 while the studies passed N_BOOT), written as the name, not a number."""
    import importlib
    import inspect
    import pkgutil
    import re
    import mmresearch
    found = {}
    for m in pkgutil.iter_modules(mmresearch.__path__):
        if m.name.startswith("_"): continue
        mod = importlib.import_module(f"mmresearch.{m.name}")
        assert not re.search(r"n_boot: int = \d", Path(mod.__file__).read_text()), f"{m.name}: a literal n_boot default"
        for name, fn in inspect.getmembers(mod, inspect.isfunction):
            if fn.__module__ == mod.__name__ and "n_boot" in (ps := inspect.signature(fn).parameters):
                found[f"{m.name}.{name}"] = ps["n_boot"].default
    assert len(found) > 40 and {"metrics.bootstrap_indices", "metrics.mean_ci", "pope.score_pope", "amber.score_amber"} <= set(found)
    # None is no count: eee.eee_result records how many resamples were behind an interval (None: not known)
    wrong = {k: v for k, v in found.items() if v not in (inspect.Parameter.empty, None) and v != N_BOOT}
    assert wrong == {}, wrong
