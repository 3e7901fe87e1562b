# Jupyter configuration for `make lab` (loaded with --config): notebooks are saved clean, as `nbdev_clean` leaves them
# in git (no outputs, execution counts or stray metadata), so looking at a notebook in JupyterLab leaves `git status`
# clean. The outputs stay on screen until the notebook is reloaded. nbdev's own hook (`jupyter_hooks`) keeps outputs.
from pathlib import Path


def clean_on_save(model, path, **kwargs):
    "Before Jupyter writes a notebook: nbdev's clean with every output cleared, under this repository's settings.ini."
    if model.get("type") != "notebook" or model.get("content", {}).get("nbformat") != 4: return
    from nbdev.clean import clean_nb
    from nbdev.config import get_config as nbdev_config
    cfg = nbdev_config(path=Path(__file__).parent)
    clean_nb(model["content"], True, cfg.get("allowed_metadata_keys").split(), cfg.get("allowed_cell_metadata_keys").split(),
             cfg.clean_ids)


c.FileContentsManager.pre_save_hook = clean_on_save  # noqa: F821 (`c` is the config object Jupyter provides)
