"""The project's prose is about the project. Its Markdown files and its Python comments and
docstrings say what Cairn does and why; how and where the work on it was carried out is not their
subject, and two phrasings of that kind fail this test wherever they appear."""

import ast
import io
import itertools
import os
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Not the project's prose: environments, the embedded database, caches, generated files.
SKIPPED = {".git", ".venv", "var", "__pycache__", ".pytest_cache", ".ruff_cache", "staticfiles", "cache", "checkpoint"}
FORBIDDEN = [re.compile(r"\bsession \d+", re.IGNORECASE), re.compile(r"\blent\b", re.IGNORECASE)]


def project_files(suffix: str) -> list[Path]:
    found = []
    for directory, subdirectories, names in os.walk(ROOT):
        subdirectories[:] = sorted(d for d in subdirectories if d not in SKIPPED)
        found += [Path(directory) / name for name in sorted(names) if name.endswith(suffix)]
    return found


def python_prose(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring in `source`."""
    prose = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            docstring = ast.get_docstring(node, clean=False)
            if docstring is not None:
                prose.append((node.body[0].lineno, docstring))
    return prose


def hits(path: Path, prose: list[tuple[int, str]]) -> list[str]:
    found = []
    for first_line, text in prose:
        for offset, line in enumerate(text.splitlines()):
            if any(pattern.search(line) for pattern in FORBIDDEN):
                found.append(f"{path.relative_to(ROOT)}:{first_line + offset}: {line.strip()}")
    return found


def test_the_checks_find_what_they_look_for_and_nothing_else():
    # The phrases are built, not written out, so that this file does not say what it looks for.
    numbered, borrowed = "Ses" + "sion 12", "Le" + "nt"
    source = f'"""Module."""\n# as of {numbered}\nx = "{numbered.lower()} in a string is data"\ndef f():\n    """{borrowed} by x."""\n'
    assert [line for line, _ in python_prose(source)] == [2, 1, 5]
    assert hits(ROOT / "x.py", python_prose(source)) == [f"x.py:2: # as of {numbered}", f"x.py:5: {borrowed} by x."]
    assert hits(ROOT / "x.md", [(1, "a sessions 12 list, the lentil soup, a relentless session")]) == []


def test_no_markdown_file_says_it():
    found = []
    for path in project_files(".md"):
        found += hits(path, list(enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)))
    assert found == [], "\n".join(found)


def test_no_python_comment_or_docstring_says_it():
    found = []
    for path in project_files(".py"):
        found += hits(path, python_prose(path.read_text(encoding="utf-8")))
    assert found == [], "\n".join(found)


def test_the_readme_is_short_and_no_table_cell_is_a_paragraph():
    # The README is for the people who run Cairn (the history lives in benchmarks/HISTORY.md), and a
    # table cell holds one figure or one fact, not a story.
    assert len((ROOT / "README.md").read_text().splitlines()) <= 300
    long_cells = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in project_files(".md")
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if line.startswith("|") and any(len(cell.strip()) > 300 for cell in line.strip("|").split("|"))
    ]
    assert long_cells == []


def test_every_figure_in_the_readme_names_its_command_date_and_commit():
    # A figure a reader cannot re-run, or cannot place in time and code, is not one to trust.
    lines = (ROOT / "README.md").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| figure | latest |"))
    rows = list(itertools.takewhile(lambda line: line.startswith("|"), lines[start + 2 :]))
    measured = re.compile(r"`[\w.]+\.py[^`]*` · \d{4}-\d{2}-\d{2} · [0-9a-f]{7}")
    unplaced = [row[:80] for row in rows if not measured.search(row.strip("|").split("|")[3])]
    assert rows and unplaced == []
