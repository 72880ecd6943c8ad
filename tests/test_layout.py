"""Which way imports point (docs/architecture.md): no module imports its way back to itself, the
judges are a leaf under the request path, reputation does not reach up into it, and settings load
without importing an app. Read from the source with `ast`, lazy imports inside functions included."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("accounts", "config", "corpus", "readers", "reputation", "judges", "pipeline", "writeback", "sources")
APPS = ("accounts", "corpus", "reputation", "judges", "pipeline", "writeback", "sources")


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


def test_the_layers_below_import_nothing_above_them():
    # corpus and accounts hold the data and sign-in; reputation scores chunks; the judges read text.
    # None of them reaches up into what uses it. Sources feed the corpus and use nothing but it.
    above = {"corpus": ("judges", "pipeline", "reputation", "writeback", "sources"),
             "sources": ("judges", "pipeline", "reputation", "writeback"), "accounts": ("judges", "pipeline", "writeback"),
             "reputation": ("judges", "pipeline", "writeback"), "judges": ("pipeline", "reputation", "accounts", "writeback")}  # fmt: skip
    upward = {
        module: sorted(t for t in targets if t.split(".")[0] in above[module.split(".")[0]])
        for module, targets in graph().items()
        if module.split(".")[0] in above
    }
    assert {m: t for m, t in upward.items() if t} == {}


def test_the_readers_import_no_app():
    # readers/ turns files into block text: a library with no Cairn app under it, so that a format
    # is one module and one row of readers.formats, and the store (corpus) stands on it.
    found = graph()
    leaks = {
        m: sorted(t for t in targets if not t.startswith("readers"))
        for m, targets in found.items()
        if m.startswith("readers")
    }
    assert {m: t for m, t in leaks.items() if t} == {}
    assert any(t.startswith("readers") for m, targets in found.items() if m.startswith("corpus") for t in targets)


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
