"""Office documents (Word, PowerPoint, Excel) as the block text the
chunker reads: headings as ``#`` lines, list items as ``- `` lines, tables as pipe tables whose
first row is the header (parse_blocks writes each row under it: "Owner: Dana; Room: 4.12").

The three Office formats are ZIP packages read by maintained libraries (python-docx, python-pptx,
openpyxl). An upload is untrusted: before a library opens one, zip_problem reads the ZIP's central
directory only and refuses a damaged archive, one that is not the package its name claims, and one
whose entries would unpack past MAX_ZIP_UNCOMPRESSED_BYTES or number over MAX_ZIP_ENTRIES (a zip
bomb). zipfile stops each entry at the size the directory declares, so the sum bounds what unpacks.
"""

from __future__ import annotations

import datetime
import io
import re
import zipfile
from collections.abc import Iterable, Iterator

from readers import locations
from readers.blocks import cell_text, joined_blocks, plain_line, table_lines
from readers.reading import ReadError, Reading

MAX_ZIP_UNCOMPRESSED_BYTES = 200 * 1024 * 1024
MAX_ZIP_ENTRIES = 10_000
# One entry that unpacks past MAX_ZIP_RATIO times its packed size is refused once it is over
# _ZIP_RATIO_FLOOR_BYTES unpacked: real document XML packs 5-20:1, a bomb's zeros 1000:1.
MAX_ZIP_RATIO = 100
_ZIP_RATIO_FLOOR_BYTES = 10 * 1024 * 1024
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
    # Macro-enabled: the same packages with a VBA project beside them, which nothing here runs.
    ".docm": ("a macro-enabled Word document", "wordprocessingml"),
    ".pptm": ("a macro-enabled PowerPoint presentation", "presentationml"),
    ".xlsm": ("a macro-enabled Excel workbook", "spreadsheetml"),
}
MACRO_ENABLED = (".docm", ".pptm", ".xlsm")
# OpenDocument packages name their kind in a first, stored entry called "mimetype".
ODF_PACKAGES = {
    ".odt": ("an OpenDocument text", "application/vnd.oasis.opendocument.text"),
    ".ods": ("an OpenDocument spreadsheet", "application/vnd.oasis.opendocument.spreadsheet"),
    ".odp": ("an OpenDocument presentation", "application/vnd.oasis.opendocument.presentation"),
}
_OOXML_SUFFIX = {"wordprocessingml": ".docx", "presentationml": ".pptx", "spreadsheetml": ".xlsx"}
# The content types of each kind's main part, plain and macro-enabled: a package that embeds another
# kind (a chart's workbook in a presentation) names that kind too, but not as its main part.
_MAIN_PARTS = [
    ((b"wordprocessingml.document.main", b"ms-word.document.macroEnabled.main"), "wordprocessingml"),
    ((b"presentationml.presentation.main", b"ms-powerpoint.presentation.macroEnabled.main"), "presentationml"),
    ((b"spreadsheetml.sheet.main", b"ms-excel.sheet.macroEnabled.main"), "spreadsheetml"),
]
OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


class OfficeError(ReadError):
    """The file cannot be read as the document its name claims; the message says why."""


def _bare(what: str) -> str:
    """ "a Word document" -> "Word document"."""
    return what.split(" ", 1)[1]


def zip_problem(suffix: str, data: bytes) -> str | None:
    """Why `data` is not a safe package of the kind `suffix` names (an Office Open XML or an
    OpenDocument package), or None. Reads the ZIP's directory and small entries only: none of its
    parts is unpacked but [Content_Types].xml, an OpenDocument "mimetype" and its manifest."""
    what = (PACKAGES.get(suffix) or ODF_PACKAGES[suffix])[0]
    if data.startswith(OLE2_MAGIC):
        return ole_package_problem(suffix, what, data)
    if not data.startswith(b"PK\x03\x04"):
        from readers.signatures import binary_signature

        if found := binary_signature(data):
            return f"not {what}: the content is {found}"
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
            for entry in entries:
                if entry.file_size > _ZIP_RATIO_FLOOR_BYTES and entry.file_size > MAX_ZIP_RATIO * max(
                    entry.compress_size, 1
                ):
                    return (
                        f"the ZIP entry {entry.filename[:100]!r} unpacks {entry.compress_size} bytes to "
                        f"{entry.file_size}, more than {MAX_ZIP_RATIO}:1 (a zip bomb?)"
                    )
            found = _package_kind(archive)
            if suffix in ODF_PACKAGES:
                return _odf_problem(suffix, what, archive, found)
            _, kind = PACKAGES[suffix]
            if found is None and "[Content_Types].xml" not in archive.namelist():
                return f"a ZIP archive but not {what} (no [Content_Types].xml)"
            if found is None or found[1] != kind:
                named = f": it is {found[0]}, upload it as {found[2]}" if found else ""
                return f"a ZIP archive but not {what} (it holds no {kind} part){named}"
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, OSError, ValueError) as exc:
        return f"not {what}: a damaged ZIP archive, cut short or corrupted ({exc})"
    return None


def _package_kind(archive: zipfile.ZipFile) -> tuple[str, str, str] | None:
    """(what, kind, suffix) of the package a ZIP archive holds, judged by its [Content_Types].xml
    or its OpenDocument "mimetype" entry; None when it is neither. Reads those small entries only."""
    names = set(archive.namelist())
    if "mimetype" in names and archive.getinfo("mimetype").file_size <= 200:
        declared = archive.read("mimetype").decode("ascii", "replace").strip()
        for odf_suffix, (what, mimetype) in ODF_PACKAGES.items():
            if declared == mimetype:
                return what, mimetype, odf_suffix
    if "[Content_Types].xml" in names:
        types = archive.getinfo("[Content_Types].xml")
        if types.file_size > _MAX_CONTENT_TYPES_BYTES:
            raise ValueError(f"[Content_Types].xml is {types.file_size} bytes")
        content = archive.read(types)
        for marks, kind in _MAIN_PARTS:
            if any(mark in content for mark in marks):
                return PACKAGES[_OOXML_SUFFIX[kind]][0], kind, _OOXML_SUFFIX[kind]
        for kind, ooxml_suffix in _OOXML_SUFFIX.items():  # no main part named: any part of the kind
            if kind.encode() in content:
                return PACKAGES[ooxml_suffix][0], kind, ooxml_suffix
    return None


def _odf_problem(suffix: str, what: str, archive: zipfile.ZipFile, found) -> str | None:
    _, mimetype = ODF_PACKAGES[suffix]
    if found is None or found[1] != mimetype:
        named = f": it is {found[0]}, upload it as {found[2]}" if found else ""
        return f"a ZIP archive but not {what} (no {mimetype} mimetype entry){named}"
    names = set(archive.namelist())
    manifest = "META-INF/manifest.xml"
    if (
        manifest in names
        and archive.getinfo(manifest).file_size <= _MAX_CONTENT_TYPES_BYTES
        and b"encryption-data" in archive.read(manifest)
    ):
        return f"password-protected {_bare(what)}: remove the password and upload it again"
    if "content.xml" not in names:
        return f"not {what}: the package has no content.xml"
    return None


# OLE2 compound files: what a stream name says the file is.
_OLE_KINDS = {
    "WordDocument": ("a Word 97-2003 document", ".doc"),
    "Workbook": ("an Excel 97-2003 workbook", ".xls"),
    "Book": ("an Excel 5.0/95 workbook", ".xls"),
    "PowerPoint Document": ("a PowerPoint 97-2003 presentation", ".ppt"),
}


def ole_kind(streams: list[str]) -> tuple[str, str] | None:
    """(what it is, its suffix) of the legacy Office file an OLE2 file's streams say it is, or None."""
    return next((kind for stream, kind in _OLE_KINDS.items() if stream in streams), None)


def ole_encrypted(streams: list[str]) -> bool:
    """Whether an OLE2 file is an Office package encrypted with a password (the package sits in an
    "EncryptedPackage" stream, described by "EncryptionInfo")."""
    return "EncryptionInfo" in streams and "EncryptedPackage" in streams


def ole_streams(data: bytes) -> list[str]:
    """The stream paths of an OLE2 compound file ("WordDocument", "Macros/VBA/dir"); OfficeError
    when the file is damaged. olefile reads the directory only."""
    import olefile

    try:
        with olefile.OleFileIO(io.BytesIO(data)) as ole:
            return ["/".join(path) for path in ole.listdir(streams=True, storages=False)]
    except Exception as exc:  # noqa: BLE001 - hostile input: any parser failure is the file's
        raise OfficeError(f"a damaged OLE2 compound file ({str(exc)[:200] or type(exc).__name__})") from exc


def ole_package_problem(suffix: str, what: str, data: bytes) -> str:
    """Why an OLE2 file named like a ZIP package cannot be read: an Office file encrypted with a
    password (its package sits in an "EncryptedPackage" stream), or a legacy file under a new name."""
    try:
        streams = ole_streams(data)
    except OfficeError as exc:
        return f"not {what}: {exc}"
    if ole_encrypted(streams):
        return f"password-protected {_bare(what)}: remove the password and upload it again"
    if kind := ole_kind(streams):
        return f"not {what}: the content is {kind[0]} (upload it as {kind[1]})"
    return f"not {what}: the content is an OLE2 compound file, not a ZIP package"


# --- Word ------------------------------------------------------------------------------------

_HEADING_STYLE = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
# Not text: tracked deletions (and text moved away), field codes, run and paragraph properties.
_SKIPPED = {f"{_W}{name}" for name in ("del", "moveFrom", "delText", "instrText", "delInstrText", "rPr", "pPr")}
_NOTE_REFERENCES = {f"{_W}footnoteReference": "Footnote", f"{_W}endnoteReference": "Endnote"}
_DOCM_MAIN = "application/vnd.ms-word.document.macroEnabled.main+xml"
_FOOTNOTES = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/footnotes"
_ENDNOTES = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/endnotes"


def read_docx(data: bytes) -> Reading:
    """(title, text) of a Word document: headings from the Title and Heading n styles (and from an
    outline level a paragraph or its style sets), list items, paragraphs and tables in body order.
    Tracked changes read as accepted: inserted text is kept, deleted text is not. A footnote or an
    endnote follows the paragraph that cites it ("Footnote 1: ..."), its mark left as "[1]".
    Headers, footers and comments are not read. A macro-enabled .docm is read the same way: its
    VBA project is never opened."""
    from docx.opc.part import PartFactory
    from docx.package import Package
    from docx.parts.document import DocumentPart
    from docx.table import Table

    # Not docx.Document(): it refuses a .docm's main part by its content type, which is all that
    # differs; python-docx is told that content type is a document part like the .docx one.
    PartFactory.part_type_for.setdefault(_DOCM_MAIN, DocumentPart)
    document = Package.open(io.BytesIO(data)).main_document_part.document
    title = (document.core_properties.title or "").strip()
    notes = _Notes(document)
    styles = _Styles(document)
    blocks: list[str] = []
    for part in document.iter_inner_content():
        if isinstance(part, Table):
            blocks.append("\n".join(table_lines(_table_rows(part._tbl, notes))))
            blocks.extend(notes.cited())
            continue
        text = plain_line(_text(part._p, notes))
        if not text:
            continue
        style = styles.name(part)
        if style.casefold() == "title":
            title = title or text
            blocks.append(f"# {text}")
        elif level := _HEADING_STYLE.match(style):
            blocks.append(f"{'#' * min(max(int(level.group(1)), 1), 6)} {text}")
        elif (outline := _outline_level(part, styles)) is not None:
            blocks.append(f"{'#' * min(outline + 1, 6)} {text}")
        elif style.casefold().startswith("list") or _numbered(part):
            blocks.append(f"- {text}")
        else:
            blocks.append(text)
        blocks.extend(notes.cited())
    return Reading(joined_blocks(blocks), title, _properties(document.core_properties))


def _text(element, notes: _Notes | None = None, *, paragraphs: bool = False) -> str:
    """The text of a Word element (a paragraph, a table cell, a note) as Word shows it with tracked
    changes accepted: runs inside w:ins are kept, w:del and w:moveFrom are dropped. Of an
    mc:AlternateContent only the first choice is read (its fallback repeats it). A note's reference
    becomes "[n]" and is handed to `notes`. With `paragraphs`, paragraphs are joined by spaces."""
    out: list[str] = []

    def walk(node) -> None:
        for child in node:
            tag = child.tag
            if not isinstance(tag, str) or tag in _SKIPPED:
                continue
            if tag == f"{_W}t":
                out.append(child.text or "")
            elif tag in (f"{_W}tab", f"{_W}br", f"{_W}cr"):
                out.append(" ")
            elif tag == f"{_W}noBreakHyphen":
                out.append("-")
            elif tag in _NOTE_REFERENCES:
                if notes is not None:
                    out.append(notes.cite(_NOTE_REFERENCES[tag], child.get(f"{_W}id", "")))
            elif tag == f"{_MC}AlternateContent":
                choices = [c for c in child if c.tag == f"{_MC}Choice"] or [
                    c for c in child if c.tag == f"{_MC}Fallback"
                ]
                if choices:
                    walk(choices[0])
            else:
                walk(child)
            if paragraphs and tag == f"{_W}p":
                out.append(" ")

    walk(element)
    return "".join(out)


_MOST_COLUMNS = 63  # the widest table Word makes


def _table_rows(table, notes: _Notes) -> list[list[str]]:
    """The text of a Word table's cells (w:tbl), row by row, as python-docx's row.cells gives it: a
    cell once for each grid column it spans (w:gridSpan), a vertically merged cell (w:vMerge) as the
    cell it continues. Read in one pass, each cell's text once: python-docx walks up the rows above
    each merged cell to find where it starts (quadratic), and repeats a cell for every column its
    span claims, however many (a million from a few bytes). A span stops at the table's width: its
    grid (w:tblGrid) or the most cells a row has, whichever is wider, and at most Word's widest."""
    width = max(
        (sum(1 for _ in tr.iterchildren(f"{_W}tc")) for tr in table.iterchildren(f"{_W}tr")),
        default=0,
    )
    width = max(width, len(table.findall(f"{_W}tblGrid/{_W}gridCol")))
    width = min(width, _MOST_COLUMNS)
    texts: dict = {}
    rows: list[list[str]] = []
    above: dict[int, tuple] = {}  # grid offset -> (the cell a merge starting there continues, its span)
    for tr in table.iterchildren(f"{_W}tr"):
        offset = _decimal(tr.find(f"{_W}trPr/{_W}gridBefore"), 0)
        cells: list[str] = []
        starts: dict[int, tuple] = {}
        for tc in tr.iterchildren(f"{_W}tc"):
            span = _decimal(tc.find(f"{_W}tcPr/{_W}gridSpan"), 1)
            merge = tc.find(f"{_W}tcPr/{_W}vMerge")
            origin = (tc, span)
            if merge is not None and merge.get(f"{_W}val", "continue") == "continue":
                origin = above.get(offset, origin)  # python-docx refuses a merge with no cell above it
            starts[offset] = origin
            if origin[0] not in texts:
                texts[origin[0]] = _text(origin[0], notes, paragraphs=True)
            cells.extend([texts[origin[0]]] * min(origin[1], max(width - offset, 1)))
            offset += span
        above = starts
        rows.append(cells)
    return rows


def _decimal(element, default: int) -> int:
    """The w:val of a Word property element as a number, `default` when absent or unreadable."""
    try:
        return int(element.get(f"{_W}val")) if element is not None else default
    except (TypeError, ValueError):
        return default


class _Notes:
    """A Word document's footnotes and endnotes (their parts parsed with defusedxml), numbered in
    the order the body cites them, handed out after the block that cites them."""

    def __init__(self, document) -> None:
        import defusedxml.ElementTree as ElementTree

        self._texts: dict[tuple[str, str], str] = {}
        for rel in document.part.rels.values():
            kind = {_FOOTNOTES: "Footnote", _ENDNOTES: "Endnote"}.get(rel.reltype)
            if kind is None or rel.is_external:
                continue
            root = ElementTree.fromstring(rel.target_part.blob)
            for note in root:
                if note.get(f"{_W}type") in (None, "normal"):
                    self._texts[(kind, note.get(f"{_W}id", ""))] = plain_line(_text(note, paragraphs=True))
        self._numbers: dict[tuple[str, str], int] = {}
        self._pending: list[str] = []

    def cite(self, kind: str, note_id: str) -> str:
        key = (kind, note_id)
        if key not in self._texts:
            return ""
        if key not in self._numbers:
            self._numbers[key] = sum(1 for k in self._numbers if k[0] == kind) + 1
            if self._texts[key]:
                self._pending.append(f"{kind} {self._numbers[key]}: {self._texts[key]}")
        return f"[{self._numbers[key]}]"

    def cited(self) -> list[str]:
        pending, self._pending = self._pending, []
        return pending


class _Styles:
    """A Word document's styles by id, indexed once. python-docx finds a paragraph's style, and each
    style it is based on, by scanning all the styles: quadratic in a document of many styles. The
    answers are python-docx's: an unknown id, or one of a style that is not a paragraph style,
    reads as the default paragraph style; a package without styles has python-docx's defaults."""

    def __init__(self, document) -> None:
        self._element = document.part.styles.element
        self._by_id: dict = {}
        for style in self._element.iterchildren(f"{_W}style"):
            self._by_id.setdefault(style.get(f"{_W}styleId"), style)  # the first of an id, as python-docx
        self._default: list = []  # found when first needed: python-docx only looks then
        self._names: dict = {}
        self._outlines: dict = {}

    def of(self, paragraph):
        from docx.enum.style import WD_STYLE_TYPE

        style_id = paragraph._p.style
        style = self._by_id.get(style_id) if style_id else None
        if style is None or style.type != WD_STYLE_TYPE.PARAGRAPH:
            if not self._default:
                self._default.append(self._element.default_for(WD_STYLE_TYPE.PARAGRAPH))
            style = self._default[0]
        return style

    def name(self, paragraph) -> str:
        from docx.styles import BabelFish

        style = self.of(paragraph)
        if style is None:
            return ""
        if style not in self._names:
            name = style.name_val
            self._names[style] = (BabelFish.internal2ui(name) if name is not None else "") or ""
        return self._names[style]

    def outline(self, style) -> list:
        """The w:outlineLvl values a style or the first 20 of its based-on chain set (a loop ends
        too), worked out once a style."""
        if style not in self._outlines:
            found, at, seen = [], style, 0
            while not found and at is not None and seen < 20:
                found = at.xpath("./w:pPr/w:outlineLvl/@w:val")
                based_on = at.basedOn_val
                at, seen = (self._by_id.get(based_on) if based_on is not None else None), seen + 1
            self._outlines[style] = found
        return self._outlines[style]


def _outline_level(paragraph, styles: _Styles) -> int | None:
    """The outline level (0 for a top heading) a paragraph or its style chain sets with
    w:outlineLvl, None for body text (level 9, or none set)."""
    found = paragraph._p.xpath("./w:pPr/w:outlineLvl/@w:val")
    if not found and (style := styles.of(paragraph)) is not None:
        found = styles.outline(style)
    try:
        level = int(found[0]) if found else 9
    except ValueError:
        return None
    return level if 0 <= level < 9 else None


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
        slide_title = plain_line(title_shape.text_frame.text) if title_shape is not None else ""
        blocks.append(f"{locations.slide(number)}\n# {slide_title or f'Slide {number}'}")
        title = title or slide_title
        for shape in slide.shapes:
            if title_shape is not None and shape.shape_id == title_shape.shape_id:
                continue
            blocks.extend(_shape_blocks(shape))
        notes_frame = slide.notes_slide.notes_text_frame if slide.has_notes_slide else None
        if notes_frame is not None and (notes := plain_line(notes_frame.text)):
            blocks.append(f"Notes: {notes}")
    return Reading(joined_blocks(blocks), title, _properties(presentation.core_properties), located=True)


def _shape_blocks(shape) -> list[str]:
    from pptx.enum.shapes import MSO_SHAPE_TYPE

    if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        return [block for inner in shape.shapes for block in _shape_blocks(inner)]
    if getattr(shape, "has_table", False) and shape.has_table:
        return ["\n".join(table_lines([cell.text for cell in row.cells] for row in shape.table.rows))]
    if not shape.has_text_frame:
        return []
    bulleted = shape.is_placeholder  # a body placeholder's paragraphs are the slide's bullets
    lines = [plain_line(paragraph.text) for paragraph in shape.text_frame.paragraphs]
    return [f"- {line}" if bulleted else line for line in lines if line]


# --- Excel -----------------------------------------------------------------------------------


def read_xlsx(data: bytes) -> Reading:
    """(title, text) of a workbook: each worksheet a section headed by its name, its header row
    (header_row) over the rows below, each placed by the sheet's own row number. Formulas read as the values Excel cached when it saved (a file no spreadsheet
    program saved has none: those cells are empty). A macro-enabled .xlsm is read the same way."""
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
            # Read-only rows come from row 1 on, an empty tuple for each row the file skips.
            rows = enumerate(_bounded(sheet.iter_rows(values_only=True), budget), start=1)
            blocks.extend(sheet_blocks(sheet.title, rows))
        metadata = _properties(workbook.properties) if workbook.properties else {}
    finally:
        workbook.close()
    return Reading(joined_blocks(blocks), title, metadata, located=True)


def _bounded(rows: Iterable[tuple], budget: list[int]) -> Iterator[tuple]:
    for row in rows:
        budget[0] -= 1 + len(row)
        if budget[0] < 0:
            raise OfficeError(f"the workbook holds more than {MAX_WORKBOOK_CELLS} cells (empty ones counted)")
        yield row


_NUMBER = re.compile(r"^[-+(]?[$€£¥]?\s?\d[\d.,\s']*%?\)?$")
_HEADER_SEARCH_ROWS = 30  # the header is looked for among a sheet's first rows with text
_MAX_PADDING = 16  # empty cells a row is always padded with; a longer row, up to its own length


def sheet_blocks(name: str, rows: Iterable[tuple[int, Iterable]], *, section: bool = True) -> list[str]:
    """A sheet's blocks from its (row number, cell values) rows: a section headed by its `name`
    (unless not `section`: a CSV file is one sheet); lines above the header row (header_row) as a
    heading (the first) and paragraphs; then one table block, each row (the header's too) after a
    marker giving its sheet and row number. A chunk then names exactly the rows it holds ("sheet Prices, rows 4–9"),
    and the original opens with those rows marked. The markers sit inside the table, so
    parse_blocks keeps writing each row under the header across them; the chunker cuts a long
    table between rows, so a large sheet comes in row groups under its header."""
    cleaned: list[tuple[int, list[str]]] = []
    for number, row in rows:
        cells = [cell_text(value) for value in row]
        while cells and not cells[-1]:
            cells.pop()
        if cells:
            cleaned.append((number, cells))
    blocks = [f"{locations.sheet(name)}\n# {plain_line(name) or 'Sheet'}"] if section else []
    if not cleaned:
        return []
    start = header_row([cells for _, cells in cleaned[:_HEADER_SEARCH_ROWS]])
    for index, (_, cells) in enumerate(cleaned[:start]):
        line = plain_line(" ".join(cell for cell in cells if cell))
        blocks.append(f"## {line}" if index == 0 else line)
    table = cleaned[start:]
    width = max(len(cells) for _, cells in table)
    header_number, header = table[0]
    lines = [locations.sheet(name, header_number), "| " + " | ".join(header + [""] * (width - len(header))) + " |"]
    body = table[1:]
    if not body:
        return [*blocks, "\n".join(lines)]
    lines.append("|" + "---|" * width)
    for number, cells in body:
        # A row padded to the table's width reads each cell under its column's header (row_text).
        # Padding a row many times its own length (one cell under a header of thousands) would
        # cost rows times columns: such a row is written as it is, its cells joined without labels.
        missing = width - len(cells)
        padding = [""] * missing if missing <= max(len(cells), _MAX_PADDING) else []
        lines += [locations.sheet(name, number), "| " + " | ".join(cells + padding) + " |"]
    return [*blocks, "\n".join(lines)]


def header_row(rows: list[list[str]]) -> int:
    """The index of a table's header among its first rows with text: the first row with text in
    more than half the table's columns that is not all numbers. A title line above the table (a
    merged "Price list 2026" cell) fills one column, so it is not the header. 0 when none is."""
    filled = [sum(1 for cell in cells if cell) for cells in rows]
    width = max(filled, default=0)
    for index, cells in enumerate(rows):
        texts = [cell for cell in cells if cell]
        if filled[index] * 2 > width and not all(_NUMBER.match(cell) for cell in texts):
            return index
    return 0
