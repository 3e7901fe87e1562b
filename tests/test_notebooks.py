"""Every notebook's inline tests, one pytest case per notebook (cells flagged with settings.ini's tst_flags are skipped).

Experiment notebooks run with their tiny defaults; a study's summary notebook needs a finished sweep, so it is tested
by tests/test_studies.py instead."""
from pathlib import Path

import pytest
from nbdev.config import get_config
from nbdev.test import test_nb as run_notebook_tests

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT/"nbs").glob("*.ipynb")) + sorted(p for p in (ROOT/"nbs"/"experiments").glob("*.ipynb")
                                                          if not p.stem.endswith("_summary"))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT/"nbs")))
def test_notebook(notebook: Path):
    skip_flags = get_config(path=ROOT).get("tst_flags", "").split()
    ok, _ = run_notebook_tests(notebook, skip_flags=skip_flags, showerr=True)
    assert ok, f"{notebook.name} failed; its traceback is in the captured stderr above"
