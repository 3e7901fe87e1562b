"""The generated modules must be exactly what `nbdev_export` makes from the notebooks."""
import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_modules_match_notebooks(tmp_path: Path):
    for name in ("settings.ini", "nbs"): shutil.copytree(ROOT/name, tmp_path/name) if (ROOT/name).is_dir() else shutil.copy(ROOT/name, tmp_path)
    (tmp_path/"mmresearch").mkdir()
    env = {k: v for k, v in os.environ.items() if k != "IN_TEST"}  # nbdev_export does nothing when IN_TEST is set
    subprocess.run([Path(sys.executable).parent/"nbdev_export"], cwd=tmp_path, env=env, check=True)
    generated = sorted(p.name for p in (tmp_path/"mmresearch").glob("*.py"))
    committed = sorted(p.name for p in (ROOT/"mmresearch").glob("*.py"))
    assert "core.py" in generated, "nbdev_export produced no modules"
    assert generated == committed, f"modules differ: notebooks give {generated}, the package has {committed}"
    stale = [n for n in generated if not filecmp.cmp(tmp_path/"mmresearch"/n, ROOT/"mmresearch"/n, shallow=False)]
    assert not stale, f"out of sync with their notebooks (run nbdev_export): {stale}"
