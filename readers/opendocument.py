"""OpenDocument text, spreadsheets and presentations (.odt, .ods, .odp) as block text: the same
sections, lists, tables, slides and sheets the Office readers write (readers.office).

Read from the package's content.xml and meta.xml with defusedxml's ElementTree, not with odfpy,
which builds an object for every element of every part (styles, settings, each picture read into
memory) and still leaves its tree to be walked by hand (the two compared: benchmarks/HISTORY.md).
defusedxml refuses entity declarations (a "billion laughs" part) and
external entities. zip_problem (readers.office) has checked the package's directory, its mimetype
entry and its manifest (a password-protected package is refused) before anything here runs.

A spreadsheet repeats rows and cells by count (table:number-rows-repeated="1048571" for the empty
rest of a sheet): empty repeats only advance the row number, and the cells read are bounded by
MAX_WORKBOOK_CELLS as a workbook's are; text repeated into more cells than the file's size
accounts for is refused (_sheet_rows).
"""

from __future__ import annotations

import datetime
import io
import re
import zipfile

from readers import locations
from readers.blocks import joined_blocks, plain_line, table_lines
from readers.office import MAX_WORKBOOK_CELLS, OfficeError, sheet_blocks
from readers.reading import Reading

_NS = {
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "draw": "urn:oasis:names:tc:opendocument:xmlns:drawing:1.0",
    "presentation": "urn:oasis:names:tc:opendocument:xmlns:presentation:1.0",
    "meta": "urn:oasis:names:tc:opendocument:xmlns:meta:1.0",
    "dc": "http://purl.org/dc/elements/1.1/",
    "svg": "urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0",
}


def _q(name: str) -> str:
    """ "text:p" -> "{urn:...:text:1.0}p", as ElementTree names tags and attributes."""
    prefix, local = name.split(":")
    return f"{{{_NS[prefix]}}}{local}"


P, H, SPAN, A, S, TAB, LINE_BREAK = (
    _q(n) for n in ("text:p", "text:h", "text:span", "text:a", "text:s", "text:tab", "text:line-break")
)
LIST, LIST_ITEM, LIST_HEADER, SECTION = (
    _q(n) for n in ("text:list", "text:list-item", "text:list-header", "text:section")
)
NOTE, NOTE_CITATION, NOTE_BODY = _q("text:note"), _q("text:note-citation"), _q("text:note-body")
TABLE, TABLE_ROW, TABLE_CELL, COVERED_CELL = (
    _q(n) for n in ("table:table", "table:table-row", "table:table-cell", "table:covered-table-cell")
)
FRAME, TEXT_BOX, GROUP, PAGE, NOTES = (
    _q(n) for n in ("draw:frame", "draw:text-box", "draw:g", "draw:page", "presentation:notes")
)
# Not the document's own text: generated indexes (they repeat headings), the record of tracked
# changes (deleted text: a document reads as its changes accepted), comments, and shapes' titles.
_SKIPPED = {
    _q(n)
    for n in (
        "text:tracked-changes", "text:table-of-content", "text:alphabetical-index", "text:illustration-index",
        "text:object-index", "text:user-index", "text:bibliography", "text:table-index", "office:annotation",
        "office:annotation-end", "text:sequence-decls", "office:forms", "svg:title", "svg:desc",
    )
}  # fmt: skip
_REPEATED_ROWS, _REPEATED_COLUMNS = _q("table:number-rows-repeated"), _q("table:number-columns-repeated")
_MAX_XML_BYTES = 100 * 1024 * 1024  # content.xml is parsed whole: a larger one is refused


def _parts(data: bytes) -> tuple:
    """The parsed content.xml and meta.xml (None when the package has none) of a package."""
    import defusedxml.ElementTree as ElementTree

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo("content.xml")
        if info.file_size > _MAX_XML_BYTES:
            raise OfficeError(f"content.xml unpacks to {info.file_size} bytes; the limit is {_MAX_XML_BYTES}")
        content = ElementTree.fromstring(archive.read(info))
        meta = None
        if "meta.xml" in archive.namelist() and archive.getinfo("meta.xml").file_size < 1024 * 1024:
            meta = ElementTree.fromstring(archive.read("meta.xml"))
    return content, meta


def _document(data: bytes, kind: str) -> tuple:
    """(the office:`kind` body of content.xml, title, metadata) of a package: "text",
    "presentation" or "spreadsheet"; OfficeError when content.xml holds no such body."""
    content, meta = _parts(data)
    title, metadata = _properties(meta)
    body = content.find(f"{_q('office:body')}/{_q(f'office:{kind}')}")
    if body is None:
        raise OfficeError(f"not an OpenDocument {kind}: content.xml has no office:{kind} body")
    return body, title, metadata


def _properties(meta) -> tuple[str, dict]:
    """(title, metadata) from meta.xml, as readers.office._properties reads an Office package's core
    properties: "author" (the initial creator, else the creator), "last_modified_by" (dc:creator,
    who saved it last), "created" and "modified" (ISO 8601)."""
    if meta is None:
        return "", {}

    def found(name: str) -> str:
        element = meta.find(f".//{_q(name)}")
        return " ".join((element.text or "").split()) if element is not None else ""

    metadata = {
        "author": found("meta:initial-creator") or found("dc:creator"),
        "last_modified_by": found("dc:creator"),
        "created": _iso(found("meta:creation-date")),
        "modified": _iso(found("dc:date")),
    }
    return found("dc:title"), {key: value for key, value in metadata.items() if value}


def _iso(value: str) -> str:
    """An ODF date-time ("2026-11-26T11:08:43.123456789") as ISO 8601 from datetime.isoformat; the
    value as written when it does not parse."""
    if not value:
        return ""
    trimmed = re.sub(r"(\.\d{6})\d+", r"\1", value).replace("Z", "+00:00")
    try:
        return datetime.datetime.fromisoformat(trimmed).isoformat()
    except ValueError:
        return value


class _Notes:
    """Footnotes and endnotes met inside a paragraph: the mark stays as "[n]" and the note follows
    the block that cites it ("Footnote 1: ...")."""

    def __init__(self) -> None:
        self.pending: list[str] = []
        self.counts = {"footnote": 0, "endnote": 0}

    def cite(self, note) -> str:
        kind = note.get(_q("text:note-class"), "footnote")
        kind = kind if kind in self.counts else "footnote"
        self.counts[kind] += 1
        citation = note.find(NOTE_CITATION)
        mark = (citation.text or "").strip() if citation is not None else ""
        mark = mark or str(self.counts[kind])
        body = note.find(NOTE_BODY)
        text = plain_line(" ".join(_inline(p, self) for p in _paragraphs(body))) if body is not None else ""
        if text:
            self.pending.append(f"{kind.capitalize()} {mark}: {text}")
        return f"[{mark}]"

    def cited(self) -> list[str]:
        pending, self.pending = self.pending, []
        return pending


def _paragraphs(element):
    """The paragraphs and headings under `element` that no other one holds: _inline reads those
    nested in them (a frame's, a note's) itself, so reading every descendant would read a nested
    note again at each level above it, exponential in the depth."""
    for child in element:
        if child.tag in (P, H):
            yield child
        elif child.tag not in _SKIPPED:
            yield from _paragraphs(child)


def _inline(element, notes: _Notes | None = None) -> str:
    """The text of a paragraph or heading: spans and links read, text:s as its count of spaces,
    tabs and line breaks as spaces, notes handed to `notes`, a frame's text box read inline."""
    out = [element.text or ""]
    for child in element:
        tag = child.tag
        if tag in _SKIPPED:
            pass
        elif tag == S:
            out.append(" " * min(int(child.get(_q("text:c"), "1") or 1), 100))
        elif tag in (TAB, LINE_BREAK):
            out.append(" ")
        elif tag == NOTE:
            out.append(notes.cite(child) if notes is not None else "")
        elif tag in (P, H):
            out.append(" " + _inline(child, notes) + " ")
        else:
            out.append(_inline(child, notes))
        out.append(child.tail or "")
    return "".join(out)


def _cell_text(cell, notes: _Notes | None = None) -> str:
    return " ".join(_inline(p, notes) for p in cell.iter() if p.tag in (P, H))


_TABLE_REPEATS = 100  # cells a text or slide table may add by repeats: a crafted one adds a million


def _table(table, notes: _Notes | None = None) -> str:
    """A text or slide table as a pipe table under its first row. Repeats are not expected in one
    (a spreadsheet's padding is), so they add at most _TABLE_REPEATS cells a table, each repeat
    read once past them; trailing empty cells and empty rows, which table_lines drops, are not
    expanded at all."""
    spare = _TABLE_REPEATS
    rows = []
    for row in table.iter(TABLE_ROW):
        cells: list[str] = []
        gap = 0  # empty cells since the last with text: written only when text follows them
        for cell in row:
            if cell.tag not in (TABLE_CELL, COVERED_CELL):
                continue
            count = max(int(cell.get(_REPEATED_COLUMNS, "1") or 1), 1)
            text = _cell_text(cell, notes)
            if not text.strip():
                gap += count
                continue
            extra = min(gap + count - 1, spare)
            spare -= extra
            cells.extend([""] * min(gap, extra) + [text] * (1 + extra - min(gap, extra)))
            gap = 0
        if not cells:
            continue
        repeat = max(int(row.get(_REPEATED_ROWS, "1") or 1), 1)
        copies = min(repeat - 1, spare // len(cells))
        spare -= copies * len(cells)
        rows.extend([cells] * (1 + copies))
    return "\n".join(table_lines(rows))


# --- Text documents ---------------------------------------------------------------------------


def read_odt(data: bytes) -> Reading:
    """(title, text) of an OpenDocument text: headings at their outline level (a "Title" paragraph
    a top heading), lists as items, tables under their first row, notes after the paragraph that
    cites them. Tracked changes read as accepted; headers, footers and comments are not read."""
    body, title, metadata = _document(data, "text")
    notes = _Notes()
    blocks: list[str] = []
    first_title = ""

    def walk(node, in_list: bool = False) -> None:
        nonlocal first_title
        for child in node:
            tag = child.tag
            if tag in _SKIPPED:
                continue
            if tag == H:
                text = plain_line(_inline(child, notes))
                level = int(child.get(_q("text:outline-level"), "1") or 1)
                if text:
                    blocks.append(f"{'#' * min(max(level, 1), 6)} {text}")
            elif tag == P:
                text = plain_line(_inline(child, notes))
                if not text:
                    continue
                style = (child.get(_q("text:style-name")) or "").casefold()
                if style == "title":
                    first_title = first_title or text
                    blocks.append(f"# {text}")
                else:
                    blocks.append(f"- {text}" if in_list else text)
            elif tag == LIST:
                walk(child, in_list=True)
            elif tag in (LIST_ITEM, LIST_HEADER):
                walk(child, in_list=in_list)
            elif tag == TABLE:
                blocks.append(_table(child, notes))
            else:  # text:section, frames and anything else holding paragraphs
                walk(child, in_list=in_list)
            blocks.extend(notes.cited())

    walk(body)
    return Reading(joined_blocks(blocks), title or first_title, metadata)


# --- Presentations ----------------------------------------------------------------------------


def read_odp(data: bytes) -> Reading:
    """(title, text) of an OpenDocument presentation: each slide (draw:page) a section with a slide
    marker, headed by its title frame ("Slide N" without one), its outline's paragraphs as items,
    its other text and tables, then its speaker notes as "Notes: ..."."""
    presentation, title, metadata = _document(data, "presentation")
    blocks: list[str] = []
    for number, slide in enumerate(presentation.iter(PAGE), start=1):
        slide_title, shapes = "", []
        for shape in slide:
            if shape.tag == NOTES:
                continue
            if shape.get(_q("presentation:class")) == "title" and not slide_title:
                slide_title = plain_line(_cell_text(shape))
            else:
                shapes.append(shape)
        blocks.append(f"{locations.slide(number)}\n# {slide_title or f'Slide {number}'}")
        title = title or slide_title
        for shape in shapes:
            blocks.extend(_shape_blocks(shape))
        notes = slide.find(NOTES)
        if notes is not None:
            said = [
                plain_line(_cell_text(frame))
                for frame in notes.iter(FRAME)
                if frame.get(_q("presentation:class")) in ("notes", None)
            ]
            if said := " ".join(text for text in said if text):
                blocks.append(f"Notes: {said}")
    return Reading(joined_blocks(blocks), title, metadata, located=True)


_NOT_CONTENT = ("page-number", "date-time", "footer", "header", "page")


def _shape_blocks(shape) -> list[str]:
    """A slide shape's blocks: a group's shapes in turn, a table, or its paragraphs (items when it
    is the slide's outline or a list)."""
    if shape.tag in _SKIPPED or shape.get(_q("presentation:class")) in _NOT_CONTENT:
        return []
    if shape.tag == GROUP:
        return [block for inner in shape for block in _shape_blocks(inner)]
    table = shape.find(TABLE)
    if table is not None:
        return [_table(table)]
    bulleted = shape.get(_q("presentation:class")) in ("outline", "subtitle")
    blocks = []
    listed = {id(p) for lst in shape.iter(LIST) for p in lst.iter(P)}
    for paragraph in shape.iter(P):
        text = plain_line(_inline(paragraph))
        if text:
            blocks.append(f"- {text}" if bulleted or id(paragraph) in listed else text)
    return blocks


# --- Spreadsheets -----------------------------------------------------------------------------


def read_ods(data: bytes) -> Reading:
    """(title, text) of an OpenDocument spreadsheet: each sheet a section with sheet markers, its
    header row over its rows, each placed by its row number (readers.office.sheet_blocks). A cell reads as the sheet
    shows it (its text, formatted), a formula as its saved result."""
    spreadsheet, title, metadata = _document(data, "spreadsheet")
    blocks: list[str] = []
    budget = [MAX_WORKBOOK_CELLS]
    repeats = [max(_MIN_REPEATS, len(data) // _BYTES_PER_REPEAT)]
    for table in spreadsheet.iter(TABLE):
        name = table.get(_q("table:name")) or "Sheet"
        blocks.extend(sheet_blocks(name, _sheet_rows(table, budget, repeats)))
    return Reading(joined_blocks(blocks), title, metadata, located=True)


# Text repeated by count: LibreOffice writes a run of identical cells or rows once, so a column
# filled down with one value takes a few bytes for any number of rows. Each repeated row is
# still a row of the reading (its marker and line, about 30 µs), so the rows and cells repeats
# add are bounded by the file's size: a sheet repeating text further than a real one would is
# refused, not read for seconds.
_MIN_REPEATS = 2_000
_BYTES_PER_REPEAT = 4


def _sheet_rows(table, budget: list[int], repeats: list[int]):
    """(row number, cells) of a sheet's rows with text, numbered as the sheet shows them. Empty rows
    and cells repeated by count cost nothing; repeated cells with text count against `budget`, and
    the cells their repeats add against `repeats` too."""
    number = 0
    for row in table.iter(TABLE_ROW):
        repeat = int(row.get(_REPEATED_ROWS, "1") or 1)
        cells: list[str] = []
        gap = 0  # empty cells seen since the last with text: written only when text follows them
        for cell in row:
            if cell.tag not in (TABLE_CELL, COVERED_CELL):
                continue
            count = int(cell.get(_REPEATED_COLUMNS, "1") or 1)
            text = " ".join(_cell_text(cell).split())
            if not text:
                gap += count
                continue
            budget[0] -= gap + count
            if budget[0] < 0:
                raise OfficeError(f"the spreadsheet holds more than {MAX_WORKBOOK_CELLS} cells (empty ones counted)")
            _repeated(repeats, count - 1)
            cells.extend([""] * gap + [text] * count)
            gap = 0
        if not cells:
            number += repeat
            continue
        budget[0] -= len(cells) * (repeat - 1)
        if budget[0] < 0:
            raise OfficeError(f"the spreadsheet holds more than {MAX_WORKBOOK_CELLS} cells (empty ones counted)")
        _repeated(repeats, (len(cells) + 1) * (repeat - 1))
        for _ in range(repeat):
            number += 1
            yield number, cells


def _repeated(repeats: list[int], added: int) -> None:
    repeats[0] -= max(added, 0)
    if repeats[0] < 0:
        raise OfficeError(
            "the spreadsheet repeats cells with text (table:number-rows-repeated, table:number-columns-repeated) "
            f"into more cells than its size allows: one for every {_BYTES_PER_REPEAT} bytes of the file, "
            f"{_MIN_REPEATS} in a smaller one"
        )
