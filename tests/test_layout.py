"""Which way imports point (docs/architecture.md): no module imports its way back to itself, the
judges are a leaf under the request path, reputation does not reach up into it, and settings load
without importing an app. Read from the source with `ast`, lazy imports inside functions included."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "common",
    "readers",
    "accounts",
    "config",
    "corpus",
    "reputation",
    "judges",
    "pipeline",
    "writeback",
    "sources",
    "integrations",
)
APPS = ("accounts", "corpus", "reputation", "judges", "pipeline", "writeback", "sources", "integrations")


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The project modules `path` imports, resolved to the longest name that is a module."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {f"{node.module}.{alias.name}" for alias in node.names} | {node.module}
    resolved = set()
    for name in names:
        parts = name.split(".")
        for end in range(len(parts), 0, -1):
            if (candidate := ".".join(parts[:end])) in known:
                resolved.add(candidate)
                break
    return resolved


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports_of(path, set(found)) - {name} for name, path in found.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_module_imports_its_way_back_to_itself():
    assert cycles(graph()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# Every package and what it may import (docs/architecture.md states the same table): the ground
# first, the top last. An arrow not listed fails, whichever way it points.
LAYERS = {
    "common": (),
    "readers": ("common",),
    "corpus": ("common", "readers"),
    "accounts": ("common", "readers", "corpus"),
    "sources": ("common", "readers", "corpus"),
    "judges": ("common", "readers", "corpus"),
    "writeback": ("common", "readers", "corpus", "judges"),
    "reputation": ("common", "readers", "corpus", "writeback"),
    "pipeline": ("common", "readers", "corpus", "judges", "writeback", "reputation", "accounts"),
    "integrations": ("common", "readers", "corpus", "judges", "writeback", "reputation", "accounts", "pipeline"),
    "config": ("common", "readers", "corpus", "accounts", "reputation", "sources", "judges", "writeback", "pipeline"),
}


def arrows_against(layers: dict[str, tuple[str, ...]], edges: dict[str, set[str]]) -> set[str]:
    return {
        f"{module} -> {target}"
        for module, targets in edges.items()
        for target in targets
        if (a := module.split(".")[0]) != (b := target.split(".")[0]) and b not in layers[a]
    }


def test_every_package_imports_only_what_the_layer_table_allows():
    assert set(LAYERS) == set(PACKAGES)
    assert arrows_against(LAYERS, graph()) == set()


def test_the_layer_check_finds_an_arrow_against_the_table():
    assert arrows_against(LAYERS, {"readers.pdf": {"corpus.models"}, "corpus.models": {"readers.pdf"}}) == {
        "readers.pdf -> corpus.models"
    }


def private_imports() -> list[str]:
    """`from module import _name` across files: a private name is its file's own to change."""
    found = modules()
    apps = {name.split(".")[0] for name in found}
    return sorted(
        f"{name} <- {node.module}.{alias.name}"
        for name, path in found.items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in apps
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    )


def test_no_private_name_is_imported_across_files():
    assert private_imports() == []


def test_settings_import_no_app():
    settings = imports_of(ROOT / "config" / "settings.py", set(modules()))
    assert sorted(s for s in settings if s.split(".")[0] in APPS) == []
