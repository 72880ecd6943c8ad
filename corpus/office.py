"""Office documents (Word, PowerPoint, Excel) and delimited tables (CSV, TSV) as the block text the
chunker reads: headings as ``#`` lines, list items as ``- `` lines, tables as pipe tables whose
first row is the header (parse_blocks writes each row under it: "Owner: Dana; Room: 4.12").

The three Office formats are ZIP packages read by maintained libraries (python-docx, python-pptx,
openpyxl). An upload is untrusted: before a library opens one, zip_problem reads the ZIP's central
directory only and refuses a damaged archive, one that is not the package its name claims, and one
whose entries would unpack past MAX_ZIP_UNCOMPRESSED_BYTES or number over MAX_ZIP_ENTRIES (a zip
bomb). zipfile stops each entry at the size the directory declares, so the sum bounds what unpacks.
"""

from __future__ import annotations

import csv
import datetime
import io
import re
import zipfile
from collections.abc import Iterable, Iterator

from corpus import locations
from corpus.reading import Reading

MAX_ZIP_UNCOMPRESSED_BYTES = 200 * 1024 * 1024
MAX_ZIP_ENTRIES = 10_000
# A worksheet names its cells by address: one cell at row 1,048,576 or column XFD makes openpyxl
# yield every empty row before it and pad its row to 16,384 columns. A workbook is read up to this
# many cells (rows and padding counted) and refused beyond: a few bytes must not cost minutes.
MAX_WORKBOOK_CELLS = 2_000_000
_MAX_CONTENT_TYPES_BYTES = 1024 * 1024

# What each package is, and the word its [Content_Types].xml names its main part with.
PACKAGES = {
    ".docx": ("a Word document", "wordprocessingml"),
    ".pptx": ("a PowerPoint presentation", "presentationml"),
    ".xlsx": ("an Excel workbook", "spreadsheetml"),
}


class OfficeError(Exception):
    """The file cannot be read as the document its name claims; the message says why."""


def zip_problem(suffix: str, data: bytes) -> str | None:
    """Why `data` is not a safe package of the kind `suffix` names, or None. Reads no entry but the
    small [Content_Types].xml."""
    what, kind = PACKAGES[suffix]
    if not data.startswith(b"PK\x03\x04"):
        return f"not {what} ({suffix} is a ZIP package; this file is not a ZIP archive)"
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            entries = archive.infolist()
            if len(entries) > MAX_ZIP_ENTRIES:
                return f"the ZIP archive holds {len(entries)} entries; the limit is {MAX_ZIP_ENTRIES}"
            unpacked = sum(entry.file_size for entry in entries)
            if unpacked > MAX_ZIP_UNCOMPRESSED_BYTES:
                return (
                    f"the ZIP archive unpacks to {unpacked} bytes; the limit is {MAX_ZIP_UNCOMPRESSED_BYTES} "
                    "(a zip bomb?)"
                )
            try:
                types = archive.getinfo("[Content_Types].xml")
            except KeyError:
                return f"a ZIP archive but not {what} (no [Content_Types].xml)"
            if types.file_size > _MAX_CONTENT_TYPES_BYTES:
                return f"a ZIP archive but not {what} ([Content_Types].xml is {types.file_size} bytes)"
            if kind.encode() not in archive.read(types):
                return f"a ZIP archive but not {what} (it holds no {kind} part)"
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, OSError, ValueError) as exc:
        return f"not {what}: a damaged ZIP archive ({exc})"
    return None


# --- Block text ------------------------------------------------------------------------------

_STRUCTURE = re.compile(r"^(?:#{1,6}\s|\||:\s|```|~~~)")  # a heading, a table row, a definition, a fence


def _line(text: str) -> str:
    """Text on one line, read as a paragraph: runs of whitespace (a cell's line breaks) become one
    space, and leading marks the chunker would read as structure ("# ", "| ", a fence) go. A line
    that opens like a list item ("- ", "1. ") is read as one, as it was meant."""
    text = " ".join(str(text).split())
    while _STRUCTURE.match(text):
        text = text.lstrip("#|:`~ ")
    return text


def _cell(value) -> str:
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
        cells = [_cell(value) for value in row]
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


def _join(blocks: list[str]) -> str:
    return "\n\n".join(block for block in blocks if block.strip())


# --- Word ------------------------------------------------------------------------------------

_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)


def read_docx(data: bytes) -> Reading:
    """(title, text) of a Word document: headings from the Title and Heading n styles, list items,
    paragraphs and tables in body order. Headers, footers and comments are not read."""
    from docx import Document
    from docx.table import Table

    document = Document(io.BytesIO(data))
    title = (document.core_properties.title or "").strip()
    blocks: list[str] = []
    for part in document.iter_inner_content():
        if isinstance(part, Table):
            blocks.append("\n".join(table_lines([cell.text for cell in row.cells] for row in part.rows)))
            continue
        text = _line(part.text)
        if not text:
            continue
        style = (part.style.name if part.style is not None else "") or ""
        if style.casefold() == "title":
            title = title or text
            blocks.append(f"# {text}")
        elif level := _HEADING_STYLE.match(style):
            blocks.append(f"{'#' * min(max(int(level.group(1)), 1), 6)} {text}")
        elif style.casefold().startswith("list") or _numbered(part):
            blocks.append(f"- {text}")
        else:
            blocks.append(text)
    return Reading(_join(blocks), title, _properties(document.core_properties))


def _properties(properties) -> dict:
    """A package's core properties (docProps/core.xml) as document metadata: who wrote it and when it
    was created and last modified (the dispute preference for newer sources reads "modified")."""
    found = {
        "author": getattr(properties, "author", None) or getattr(properties, "creator", None),
        "last_modified_by": getattr(properties, "last_modified_by", None)
        or getattr(properties, "lastModifiedBy", None),
        "created": getattr(properties, "created", None),
        "modified": getattr(properties, "modified", None),
    }
    return {
        key: value.isoformat() if isinstance(value, datetime.datetime | datetime.date) else " ".join(str(value).split())
        for key, value in found.items()
        if value
    }


def _numbered(paragraph) -> bool:
    properties = paragraph._p.pPr
    return properties is not None and properties.numPr is not None


# --- PowerPoint ------------------------------------------------------------------------------


def read_pptx(data: bytes) -> Reading:
    """(title, text) of a presentation: each slide a section headed by its title ("Slide N" when it
    has none), then its text, its tables, and its speaker notes as "Notes: …"."""
    from pptx import Presentation

    presentation = Presentation(io.BytesIO(data))
    title = (presentation.core_properties.title or "").strip()
    blocks: list[str] = []
    for number, slide in enumerate(presentation.slides, start=1):
        title_shape = slide.shapes.title
        slide_title = _line(title_shape.text_frame.text) if title_shape is not None else ""
        blocks.append(f"{locations.slide(number)}\n# {slide_title or f'Slide {number}'}")
        title = title or slide_title
        for shape in slide.shapes:
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            blocks.extend(_shape_blocks(shape))
        notes_frame = slide.notes_slide.notes_text_frame if slide.has_notes_slide else None
        if notes_frame is not None and (notes := _line(notes_frame.text)):
            blocks.append(f"Notes: {notes}")
    return Reading(_join(blocks), title, _properties(presentation.core_properties), located=True)


def _shape_blocks(shape) -> list[str]:
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        return [block for inner in shape.shapes for block in _shape_blocks(inner)]
    if getattr(shape, "has_table", False) and shape.has_table:
        return ["\n".join(table_lines([cell.text for cell in row.cells] for row in shape.table.rows))]
    if not shape.has_text_frame:
        return []
    bulleted = shape.is_placeholder  # a body placeholder's paragraphs are the slide's bullets
    lines = [_line(paragraph.text) for paragraph in shape.text_frame.paragraphs]
    return [f"- {line}" if bulleted else line for line in lines if line]


# --- Excel -----------------------------------------------------------------------------------


def read_xlsx(data: bytes) -> Reading:
    """(title, text) of a workbook: each worksheet a section headed by its name, its first row with
    text the header of the rows below. Formulas read as the values Excel cached when it saved (a
    file no spreadsheet program saved has none: those cells are empty)."""
    from openpyxl import load_workbook

    workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        title = (workbook.properties.title or "").strip() if workbook.properties else ""
        blocks: list[str] = []
        budget = [MAX_WORKBOOK_CELLS]
        for sheet in workbook.worksheets:
            if not hasattr(sheet, "iter_rows"):  # a chart sheet
                continue
            sheet.reset_dimensions()  # the declared dimensions pad every row to them; the file's rows are enough
            rows = list(_bounded(sheet.iter_rows(values_only=True), budget))
            table = table_lines(rows)
            if table:
                blocks.append(f"{locations.sheet(sheet.title)}\n# {_line(sheet.title) or 'Sheet'}")
                blocks.append("\n".join(_rows_placed(sheet.title, rows, table)))
        metadata = _properties(workbook.properties) if workbook.properties else {}
    finally:
        workbook.close()
    return Reading(_join(blocks), title, metadata, located=True)


def _rows_placed(name: str, rows: list[tuple], table: list[str]) -> list[str]:
    """The sheet's table lines, each row's after a marker naming its row as the sheet numbers it
    (the rows are read from row 1): a chunk then says which rows it holds."""
    numbers = iter(n for n, row in enumerate(rows, start=1) if any(_cell(value) for value in row))
    placed = []
    for index, line in enumerate(table):
        if index != 1 or not line.startswith("|---"):  # the rule under the header is no row
            number = next(numbers)
            placed.append(locations.sheet(name, number, number))
        placed.append(line)
    return placed


def _bounded(rows: Iterable[tuple], budget: list[int]) -> Iterator[tuple]:
    for row in rows:
        budget[0] -= 1 + len(row)
        if budget[0] < 0:
            raise OfficeError(f"the workbook holds more than {MAX_WORKBOOK_CELLS} cells (empty ones counted)")
        yield row


# --- CSV and TSV -----------------------------------------------------------------------------


def read_delimited(raw: str, *, delimiter: str) -> str:
    """A CSV or TSV file's text (already decoded) as one table, its first row the header."""
    try:
        rows = list(csv.reader(io.StringIO(raw, newline=""), delimiter=delimiter))
    except csv.Error as exc:
        raise OfficeError(f"cannot read {'TSV' if delimiter == chr(9) else 'CSV'}: {exc}") from exc
    return "\n".join(table_lines(rows))
