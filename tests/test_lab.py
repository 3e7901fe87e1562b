"""`make lab` in a container and notebooks saved from JupyterLab (issue 24): JupyterLab refuses to run as root without
--allow-root, and a notebook run in Lab must be saved as `nbdev_clean` leaves it in git, so `git status` stays clean."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import nbformat
from jupyter_server.services.contents.filemanager import FileContentsManager
from traitlets.config.loader import PyFileConfigLoader

ROOT = Path(__file__).resolve().parents[1]


def test_make_lab_allows_root_when_run_as_root():
    out = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    line = next(l for l in out.splitlines() if "jupyter lab" in l)
    assert ("--allow-root" in line) == (os.getuid() == 0), line
    assert "--config jupyter_server_config.py" in line


def test_a_notebook_run_and_saved_in_lab_is_written_as_git_holds_it(tmp_path):
    tracked = ROOT / "nbs" / "00a_registry.ipynb"
    shutil.copy(ROOT / "settings.ini", tmp_path / "settings.ini")
    cfg = PyFileConfigLoader("jupyter_server_config.py", path=str(ROOT)).load_config()
    cm = FileContentsManager(root_dir=str(tmp_path), config=cfg)
    nb = nbformat.read(tracked, as_version=4)
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):          # as after "Run All" in Lab
        cell.execution_count = i + 1
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran\n")]
        cell.metadata["execution"] = {"iopub.status.busy": "2026-11-25T00:00:00Z"}
    cm.save({"type": "notebook", "format": "json", "content": json.loads(nbformat.writes(nb))}, "00a_registry.ipynb")
    saved = json.loads((tmp_path / "00a_registry.ipynb").read_text())
    assert saved == json.loads(tracked.read_text())
    assert (tmp_path / "00a_registry.ipynb").read_bytes() == tracked.read_bytes()          # byte for byte: git sees no change
