"""The package's module layers, read from the generated modules with `ast`: every `import` counts, including the ones
inside functions (a lazy import is still a dependency). No cycles, no private names imported across modules, and
answer parsing does not depend on the response cache."""
import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent/"mmresearch"
MODULES = sorted(p.stem for p in PKG.glob("*.py") if p.stem not in ("__init__", "_modidx"))

# private names another module may import, with why; keep this short
PRIVATE_ALLOWED: dict[tuple[str, str, str], str] = {}


def imported(module: str) -> list[tuple[str, str]]:
    "(target module, imported name) for every import of a package module in `module`'s source; name '' for `import x`."
    out = []
    for node in ast.walk(ast.parse((PKG/f"{module}.py").read_text(), f"{module}.py")):
        if isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".")
            target = parts[0] if node.level == 1 else parts[1] if parts[0] == "mmresearch" and len(parts) > 1 else None
            if target in MODULES: out += [(target, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(a.name.split(".")[1], "") for a in node.names
                    if a.name.startswith("mmresearch.") and a.name.split(".")[1] in MODULES]
    return out


def graph() -> dict[str, set[str]]:
    return {m: {t for t, _ in imported(m)} for m in MODULES}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    "The strongly connected components with more than one module (or a module importing itself), by Tarjan's algorithm."
    index, low, stack, on, found = {}, {}, [], set(), []
    def visit(v):
        index[v] = low[v] = len(index); stack.append(v); on.add(v)
        for w in sorted(g[v]):
            if w not in index: visit(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1 or v in g[v]: found.append(sorted(comp))
    for v in sorted(g):
        if v not in index: visit(v)
    return found


def test_cycle_finder_finds_cycles():
    test = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert sorted(cycles(test)) == [["a", "b", "c"], ["e"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_graph_reads_lazy_imports():
    g = graph()
    assert "core" in g["models"] and "blindtext" in g["models"]   # the latter is imported inside `_blind`


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_no_private_imports_across_modules():
    private = [(m, t, n) for m in MODULES for t, n in imported(m) if n.startswith("_") and (m, t, n) not in PRIVATE_ALLOWED]
    assert private == []


def test_parsing_does_not_import_cache():
    assert "cache" not in graph()["parsing"]


@pytest.mark.parametrize("low", ["inputs", "core", "generation"])
def test_low_layers_import_no_backend(low):
    "The one door for inputs is the bottom layer; records and generation sit on it and import no backend."
    assert graph()[low] <= {"inputs", "core"} - {low} and graph()["inputs"] == set()


def test_training_module_stays_off_the_run_path():
    "tiny imports torch and transformers at top level (~4 s); only the training code may depend on it."
    g = graph()
    def reaches(m, seen):
        for d in g[m] - seen: seen.add(d); reaches(d, seen)
        return seen
    assert {m for m in MODULES if "tiny" in reaches(m, set())} <= {"hal_evaluator"}
