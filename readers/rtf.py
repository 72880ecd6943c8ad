"""RTF files as block text, read with striprtf (a small pure-Python reader of RTF's control words:
no converter process): each RTF paragraph a paragraph, bullet lines list items, table rows (cells
it ends with "|") a table. Character styles and heading styles are not kept."""

from __future__ import annotations

import re

from readers.blocks import joined_blocks, plain_line, table_lines
from readers.reading import ReadError, Reading

_BULLET = re.compile(r"^\s*[\uf0b7\u2022\u00b7\uf0a7\u25aa\u25cf\u2013-]\s+")
_CODEPAGE = re.compile(rb"\\ansicpg(\d{3,5})")


def rtf_problem(data: bytes) -> str | None:
    if not data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{\\rtf"):
        return "not an RTF document (no {\\rtf header)"
    return None


def read_rtf(data: bytes) -> Reading:
    """(title, text) of an RTF document: its paragraphs, bullet paragraphs as items, and consecutive
    table rows (striprtf ends each cell with "|") as a table under its first row."""
    import codecs

    from striprtf.striprtf import rtf_to_text

    codepage = _CODEPAGE.search(data[:4096])
    encoding = f"cp{codepage.group(1).decode()}" if codepage else "cp1252"
    try:
        codecs.lookup(encoding)
    except LookupError:
        encoding = "cp1252"
    try:
        text = rtf_to_text(data.decode("latin-1"), encoding=encoding, errors="replace")
    except Exception as exc:  # noqa: BLE001 - hostile input: a reader failure is the file's, a 400
        raise ReadError(f"cannot read RTF: {str(exc)[:200] or type(exc).__name__}") from exc
    blocks: list[str] = []
    rows: list[list[str]] = []
    for line in text.split("\n"):
        if line.rstrip().endswith("|") and "|" in line:
            rows.append([cell.strip() for cell in line.rstrip().rstrip("|").split("|")])
            continue
        if rows:
            blocks.append("\n".join(table_lines(rows)))
            rows = []
        if bullet := _BULLET.match(line):
            if item := plain_line(line[bullet.end() :]):
                blocks.append(f"- {item}")
        elif paragraph := plain_line(line):
            blocks.append(paragraph)
    if rows:
        blocks.append("\n".join(table_lines(rows)))
    return Reading(joined_blocks(blocks))
