"""Block text: the one plain-text form every reader writes and the chunker reads. A heading is a
``#`` line, a list item a ``- `` line, a definition a ``: `` line under its term, a table a pipe
table whose first row is its header, code a fenced block, and a location marker line
(readers.locations) says where the blocks after it sit in the original file. `parse_blocks` reads
it; `plain_line`, `table_lines` and `joined_blocks` write it."""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from readers import locations

FENCE = re.compile(r"^\s*(```+|~~~+)")
# A heading's opening; its end is found by string methods (heading). As one pattern,
# "^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$" tried every split of a line's trailing spaces at every
# character of its text: "# a", 2,000 spaces, "b" took 6 s of CPU, holding the GIL.
HEADING_OPENS = re.compile(r"\s{0,3}(#{1,6})\s")
ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(.*)$")
DEFINITION = re.compile(r"^\s*:\s+(.*)$")
ROW = re.compile(r"^\s*\|(.*)$")
RULE_ROW = re.compile(r"^[\s|:-]*$")  # a Markdown table's |---|:--:| line
QUOTE = re.compile(r"^\s*>\s?(.*)$")
# Blocks whose text is made of sentences; headings and code are context and content, never sentences.
PROSE = frozenset({"paragraph", "item", "term", "definition", "row"})
BLOCK_PREFIX = {"item": "- ", "definition": ": ", "row": "| "}


@dataclass(frozen=True)
class Block:
    """One block of a document's text, as readers.html writes it and Markdown authors do: a heading,
    a paragraph, a list item, a definition-list term or definition, a table row, or a code block."""

    kind: str
    text: str  # without its markup; a code block verbatim
    level: int = 0  # a heading's level
    term: str = ""  # the term a definition defines
    location: str = ""  # where it sits in the original file, as readers.locations writes it (JSON)


def parse_blocks(text: str) -> list[Block]:
    """Read the block structure: blank lines end paragraphs, ``#`` lines are headings, ``-``/``1.``
    lines start items (later lines continue them), ``|`` lines are table rows, a line followed by
    ``: `` lines is a term and its definitions, fenced code is kept verbatim. Plain text is paragraphs.
    A location marker line (readers.locations) ends the block before it and places the blocks after it."""
    blocks: list[Block] = []
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    kind, run = "paragraph", []
    term = ""  # the current definition list's term: set by a paragraph followed by ": ", ended by a heading
    where = ""  # the location the last marker named

    def add(block: Block) -> None:
        blocks.append(replace(block, location=where) if where else block)

    def flush() -> None:
        nonlocal run
        if not run:  # nothing to end (a blank line after a blank line)
            return
        joined = re.sub(r"\s+", " ", " ".join(run)).strip()
        if joined:
            add(Block(kind, joined, term=term if kind == "definition" else ""))
        run = []

    header: list[str] = []  # the current Markdown table's header cells
    row_cells: list[str] = []  # the cells of the row just read
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip():  # first: a page (or a question) may be mostly blank lines
            header, row_cells = [], []
            flush()
            kind = "paragraph"
            continue
        if line.startswith(locations.MARK):
            # Not text: a table goes on under its header across it (a workbook's row groups).
            flush()
            kind = "paragraph"
            if (found := locations.parse(line)) is not None:
                where = json.dumps(found, sort_keys=True)
            continue
        if not ROW.match(line):
            header, row_cells = [], []
        if fence := FENCE.match(line):
            flush()
            body = []
            while i < len(lines) and not lines[i].strip().startswith(fence.group(1)):
                body.append(lines[i])
                i += 1
            i += 1  # the closing fence (or the end of the text)
            if any(b.strip() for b in body):
                add(Block("code", "\n".join(body).strip("\n")))
            continue
        if found := heading(line):
            flush()
            add(Block("heading", found[1], level=found[0]))
            kind, term = "paragraph", ""
        elif definition := DEFINITION.match(line):
            flush()
            if blocks and blocks[-1].kind == "paragraph" and not run:
                term = blocks[-1].text  # the paragraph before the first definition is its term
                blocks[-1] = replace(blocks[-1], kind="term")
            kind, run = "definition", [definition.group(1)]
        elif item := ITEM.match(line):
            flush()
            kind, run = "item", [item.group(1)]
        elif row := ROW.match(line):
            flush()
            cells = [c.strip() for c in row.group(1).rstrip().rstrip("|").split("|")]
            if RULE_ROW.match(line):  # a Markdown table's |---| line: the row above was its header
                if blocks and blocks[-1].kind == "row" and row_cells:
                    header, row_cells = row_cells, []
                    blocks.pop()
            else:
                text = row_text(header, cells, separator=" | ")
                if text:
                    add(Block("row", text))
                row_cells = cells
            kind = "paragraph"
        else:  # a paragraph's line, or the continuation of an item or definition
            quote = QUOTE.match(line)
            run.append(quote.group(1) if quote else line)
    flush()
    return blocks


def heading(line: str) -> tuple[int, str] | None:
    """(level, text) of a ``#`` heading line ("## Install ##" -> (2, "Install")), else None. The
    text goes without the closing hashes and the spaces around it, as Markdown reads it."""
    opened = HEADING_OPENS.match(line)
    if opened is None:
        return None
    return len(opened.group(1)), line[opened.end() :].strip().rstrip("#").rstrip()


def row_text(header: list[str], cells: list[str], *, separator: str) -> str:
    """A table row as one line: each cell under its column header when the header fits the row
    ("Item: identifier length; Upper limit: 63 bytes"), else the cells joined by `separator`.
    Empty cells are left out. readers.html writes HTML tables' rows with it too."""
    if header and len(header) == len(cells):
        return "; ".join(f"{h}: {c}" if h else c for h, c in zip(header, cells, strict=True) if c)
    return separator.join(c for c in cells if c)


# --- Writing block text ---------------------------------------------------------------------

_STRUCTURE = re.compile(r"^(?:#{1,6}\s|\||:\s|```|~~~)")  # a heading, a table row, a definition, a fence


def plain_line(text: str) -> str:
    """Text on one line, read as a paragraph: runs of whitespace (a cell's line breaks) become one
    space, and leading marks the chunker would read as structure ("# ", "| ", a fence) go. A line
    that opens like a list item ("- ", "1. ") is read as one, as it was meant."""
    text = " ".join(str(text).split())
    while _STRUCTURE.match(text):
        text = text.lstrip("#|:`~ ")
    return text


def cell_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ", timespec="minutes" if value.second == 0 else "seconds").removesuffix(" 00:00")
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return " ".join(str(value).replace("|", "/").split())


def table_lines(rows: Iterable[Iterable]) -> list[str]:
    """A pipe table: the first row with any text is the header, every later row padded to its width.
    Empty rows and trailing empty columns go. The chunker writes each row under the header."""
    cleaned = []
    for row in rows:
        cells = [cell_text(value) for value in row]
        while cells and not cells[-1]:
            cells.pop()
        if cells:
            cleaned.append(cells)
    if not cleaned:
        return []
    width = max(len(cells) for cells in cleaned)
    cleaned = [cells + [""] * (width - len(cells)) for cells in cleaned]
    header, body = cleaned[0], cleaned[1:]
    if not body:  # a header alone is one row of text
        return ["| " + " | ".join(header) + " |"]
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * width,
        *("| " + " | ".join(cells) + " |" for cells in body),
    ]


def joined_blocks(blocks: list[str]) -> str:
    return "\n\n".join(block for block in blocks if block.strip())
