"""The README's tables of studies, scorers, domains and recognised files are generated from the registry (issue 41): they
must equal what `mmresearch list` generates, so a study added without regenerating them (`mmresearch list --readme
README.md`) fails here instead of going missing from the README."""
from pathlib import Path

from mmresearch.cli import LIST_END, LIST_START, readme_with_tables, registry_markdown

ROOT = Path(__file__).resolve().parents[1]


def test_readme_tables_are_what_the_registry_generates():
    text = (ROOT/"README.md").read_text(encoding="utf-8")
    tables = registry_markdown(ROOT)
    assert all(LIST_START.format(name) in text for name in tables), "a generated section is missing from the README"
    assert readme_with_tables(text, tables) == text, "README tables differ from the registry: run `mmresearch list --readme README.md`"


def test_every_experiment_notebook_and_scorer_is_listed():
    tables = registry_markdown(ROOT)
    for nb in (ROOT/"nbs"/"experiments").glob("*.ipynb"):
        if not nb.stem.endswith("_summary"): assert f"`{nb.stem}`" in tables["studies"], nb.stem
    for kind in ("amber", "chair", "haleval-disc", "mmbench", "mmhal", "objhal", "pope"):
        assert f"`{kind}`" in tables["scorers"]
