"""reStructuredText (.rst) as block text, parsed by docutils (the reference parser, which Sphinx
builds on): sections as ``#`` headings at their depth, paragraphs, list items, definition-list terms
with their definitions, field lists as "Name: value" lines, literal blocks and code as fenced code,
and tables as pipe tables under their header row. The document's title is its title.

An upload is untrusted: the parser's directives that read files or pass markup through
(``include``, ``raw``, ``csv-table``'s ``:file:``/``:url:``) are switched off, no configuration file
is read (a ``docutils.conf`` in the working folder, ``/etc`` or the home folder could switch them back
on), and its messages go nowhere (a malformed document is read as far as it parses, as docutils does). docutils is
quadratic on some inputs (8,000 lines of "=" nest 4,000 sections: 3 s; 16 KB of "|a|" lines:
1 s), and pure Python cannot be interrupted in a web request's thread, so it parses in a process
of its own (`read_rst`), killed past PARSE_TIMEOUT_SECONDS (or the seconds its caller has left)
and limited to PARSE_MEMORY_BYTES of address space, as LibreOffice is for legacy files.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from readers.blocks import joined_blocks, plain_line, table_lines
from readers.processes import limited, run_within
from readers.reading import ReadError, Reading

PARSE_TIMEOUT_SECONDS = 20.0
PARSE_MEMORY_BYTES = 2 * 1024**3

_SETTINGS = {
    "_disable_config": True,  # no docutils.conf (./, /etc, ~) may turn what follows back on
    "file_insertion_enabled": False,  # no `.. include::` or `:file:` reads from the server's disk
    "raw_enabled": False,
    "report_level": 5,  # no system messages in the text
    "halt_level": 5,  # a malformed document is read as far as it parses
    "warning_stream": False,
    "input_encoding": "unicode",
    "doctitle_xform": True,
}


def read_rst(raw: str, *, seconds: float | None = None) -> Reading:
    """`raw` read by docutils in a process of its own; ReadError when it fails or runs past its time."""
    timeout = PARSE_TIMEOUT_SECONDS if seconds is None else max(0.0, min(seconds, PARSE_TIMEOUT_SECONDS))
    command = limited([sys.executable, "-m", "readers.restructuredtext"], PARSE_MEMORY_BYTES)
    environment = {"PYTHONPATH": str(Path(__file__).resolve().parent.parent), "PYTHONIOENCODING": "utf-8",
                   "LANG": "C.UTF-8", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}  # fmt: skip
    finished = run_within(command, timeout=timeout, env=environment, data=raw.encode())
    if finished is None:
        raise ReadError(f"the reStructuredText parser did not finish within {timeout:g} s; it is refused")
    status, output, errors = finished
    if status != 0:
        said = " ".join(errors.decode("utf-8", "replace").split())[-200:]
        raise ReadError(f"cannot read a reStructuredText file: {said or f'the parser exited with {status}'}")
    found = json.loads(output)
    return Reading(found["text"], found["title"])


def parse_rst(raw: str) -> tuple[str, str]:
    """(title, block text) of a reStructuredText document: what the parser process computes."""
    from docutils import nodes
    from docutils.core import publish_doctree

    document = publish_doctree(raw, settings_overrides=_SETTINGS)
    blocks: list[str] = []

    def text_of(node) -> str:
        return plain_line(node.astext())

    def walk(node, depth: int) -> None:
        for child in node.children:
            if isinstance(child, nodes.section):
                title = child.next_node(nodes.title)
                if title is not None:
                    blocks.append(f"{'#' * min(depth + 1, 6)} {text_of(title)}")
                walk(child, depth + 1)
            elif isinstance(child, nodes.subtitle):  # a lone section under the title, promoted by docutils
                blocks.append(f"{'#' * min(depth + 1, 6)} {text_of(child)}")
            elif isinstance(child, nodes.docinfo):  # the fields right under the title: author, version…
                for field in child.children:
                    name = field.children[0].astext() if isinstance(field, nodes.field) else field.tagname.title()
                    value = field.children[1].astext() if isinstance(field, nodes.field) else field.astext()
                    if line := plain_line(f"{name}: {value}"):
                        blocks.append(line)
            elif isinstance(child, nodes.title | nodes.system_message | nodes.comment | nodes.substitution_definition):
                continue
            elif isinstance(child, nodes.paragraph):
                if line := text_of(child):
                    blocks.append(line)
            elif isinstance(child, nodes.bullet_list | nodes.enumerated_list):
                for item in child.children:
                    if line := text_of(item):
                        blocks.append(f"- {line}")
            elif isinstance(child, nodes.definition_list):
                for item in child.children:
                    term = item.next_node(nodes.term)
                    definition = item.next_node(nodes.definition)
                    if term is not None and definition is not None:
                        blocks.append(f"{text_of(term)}\n: {text_of(definition)}")
            elif isinstance(child, nodes.field_list):
                for field in child.children:
                    name, body = field.children[0], field.children[1]
                    if line := plain_line(f"{name.astext()}: {body.astext()}"):
                        blocks.append(line)
            elif isinstance(child, nodes.literal_block | nodes.doctest_block):
                if code := child.astext().strip("\n"):
                    blocks.append(f"```\n{code}\n```")
            elif isinstance(child, nodes.table):
                rows = [[entry.astext() for entry in row.children] for row in child.findall(nodes.row)]
                if lines := table_lines(rows):
                    blocks.append("\n".join(lines))
            elif isinstance(child, nodes.Element):
                walk(child, depth)  # admonitions, block quotes, topics: their contents

    title = plain_line(document.get("title", ""))
    if title:  # as a Markdown file's "# " line: the heading its first sections sit under
        blocks.append(f"# {title}")
    walk(document, 1 if title else 0)
    return title, joined_blocks(blocks)


if __name__ == "__main__":  # the parser process: reStructuredText on stdin, {"title", "text"} on stdout
    sys.setrecursionlimit(10_000)  # nested sections recurse in docutils; the address space bounds it
    title, text = parse_rst(sys.stdin.read())
    json.dump({"title": title, "text": text}, sys.stdout)
