"""Read a PDF as a person sees it: headings, paragraphs, lists and tables in reading order, without
the running headers, footers and page numbers printed on every page; scanned pages read by OCR.

The text layer is read with PDFium (pypdfium2): each character with its box, font and size from
its text page, joined into words, and the straight strokes the page draws. PDFium reads a page in C,
in a fifth of pdfminer's time with the same words (benchmarks/HISTORY.md). Each page
becomes block text (readers.blocks.parse_blocks) after a location marker (readers.locations.page).
The steps, for each page:

- tables: pdfplumber's table finder (its geometry: ruled tables) on the page's strokes; each is
  written as a pipe table whose first row is its header, and its words are not read again as
  paragraphs;
- columns: a vertical gutter of whitespace through the middle of the words splits the page into a
  left and a right column, read one after the other; lines that cross the gutter (a title, a
  full-width paragraph) are read where they stand;
- lines: words grouped by their height on the page;
- a table continued from the foot of the previous page takes that part's header row;
- running furniture: a line in the top or bottom margin band that repeats, digits aside, on a large
  share of the pages ("Tidewater manual  26/11/2026", "https://…  3/12"), and a lone page number
  there ("3", "Page 3 of 10", "3/10", "- 3 -", "iv"), are dropped;
- headings: sizes larger than the body's (the document's most common size), by rank, become
  ``#``, ``##``, ``###``; a bold line at body size, short, unpunctuated and alone, one level below;
- paragraphs: a larger gap than the page's line pitch, a first-line indent, a short line that ends
  a sentence; list items by their bullet or number; words hyphenated across lines joined.

A page without a text layer (or with almost no text over a full-page image) is rendered with
pypdfium2 at 300 dpi and read by Tesseract (pytesseract), in the languages CAIRN_OCR_LANGUAGES
names; its marker carries the mean word confidence (``{"page": 3, "ocr": 0.91}``) and the
document's metadata names the pages read so ("ocr_pages") and those below CAIRN_OCR_LOW_CONFIDENCE
("low_confidence_pages"), for curators to check. Every text layer is read before any page is
OCR'd, so that a file with more scanned pages than CAIRN_OCR_MAX_PAGES is refused at once.

Hostile files: a password-protected PDF is refused (one whose user password is empty is read), a
damaged one is an ExtractionError, a file of more than CAIRN_PDF_MAX_PAGES pages or whose streams
inflate past MAX_INFLATED_BYTES is refused before its pages are read, one of more scanned pages
than CAIRN_OCR_MAX_PAGES before any is OCR'd (a few kilobytes can draw one image on every page),
and reading it, OCR included, has CAIRN_PDF_SECONDS in all: in the main thread (the ingest
command, the worker) a timer stops a page mid-read, between two calls into PDFium; in another
thread the budget is checked between pages; Tesseract runs with what is left as its timeout.
PDFium is not thread-safe: every call into it holds one lock.
"""

from __future__ import annotations

import _weakrefset
import ctypes
import datetime
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import threading
import time
import weakref
import zlib
from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache

from readers import locations
from readers.reading import ReadError, Reading

# (page number, page count, whether the page was read by OCR): called after each page, the pages
# with a text layer first (read as they come), then the scanned ones (read by OCR once all are known).
PageHook = Callable[[int, int, bool], None]

MARGIN_BAND = 0.08  # the top and bottom share of a page where running headers and footers sit
MARGIN_LINES = 3  # and among the first or last lines of the page
FURNITURE_SHARE = 0.3  # a band line repeated on this share of the pages (two at least) is furniture
OCR_DPI = 300
OCR_MAX_PIXELS = 40_000_000  # a page is rendered at most this large (a poster-sized page at less dpi)
OCR_PAGE_SECONDS = 120  # Tesseract's limit on one page
OCR_MIN_CHARS = 10  # a page with fewer characters in its text layer and a page-sized image is a scan
OCR_IMAGE_SHARE = 0.5  # of the page's area, for an image to be the page
MAX_INFLATED_BYTES = 512 * 1024 * 1024  # what a file's compressed streams may inflate to, together

_pdfium = threading.Lock()  # PDFium is not thread-safe: one call into it at a time in a process


class PdfError(ReadError):
    """A PDF that cannot be read; the message says why (extract.py makes it an ExtractionError)."""


class _OutOfTime(BaseException):
    """Raised by the budget's timer. A BaseException: no library's `except Exception` swallows it."""


def read_pdf(data: bytes, *, on_page: PageHook | None = None, seconds: float | None = None) -> Reading:
    """A PDF's block text, with a location marker before each page, its title and its properties.
    It has CAIRN_PDF_SECONDS, or `seconds` when fewer are left to its caller (an e-mail's attachment)."""
    from django.conf import settings

    limit = settings.CAIRN_PDF_SECONDS if seconds is None else min(seconds, settings.CAIRN_PDF_SECONDS)
    budget = _Budget(limit)
    if _inflated_size(data, MAX_INFLATED_BYTES) > MAX_INFLATED_BYTES:
        raise PdfError(f"its compressed streams inflate to more than {MAX_INFLATED_BYTES // 2**20} MB")
    try:
        with _pdfium:
            document = _open(data)
        try:
            return _read(document, budget, on_page=on_page)
        finally:
            with _pdfium:
                document.close()
    except _OutOfTime:
        allowed = (
            f"{limit:g} s (CAIRN_PDF_SECONDS)" if limit == settings.CAIRN_PDF_SECONDS else f"the {limit:.1f} s left"
        )
        raise PdfError(f"reading it took more than {allowed}: a pathological or very large PDF") from None


def _open(data: bytes):
    import pypdfium2
    from pypdfium2 import raw

    try:
        return pypdfium2.PdfDocument(data)
    except pypdfium2.PdfiumError as exc:
        if exc.err_code == raw.FPDF_ERR_PASSWORD:
            raise PdfError("password-protected PDF: remove the password (or print it to a new PDF) first") from None
        raise PdfError(f"cannot read PDF: {_reason(exc)}") from None


def _reason(exc: BaseException) -> str:
    return (str(exc).strip() or type(exc).__name__)[:300]


def _read(document, budget: _Budget, *, on_page: PageHook | None) -> Reading:
    from django.conf import settings

    limit = settings.CAIRN_PDF_MAX_PAGES
    count = len(document)  # the page tree's own count: no page is loaded yet
    if count > limit:
        raise PdfError(f"it has {count} pages, more than CAIRN_PDF_MAX_PAGES ({limit})")
    if not count:
        raise PdfError("cannot read PDF: it has no pages")

    read: list[_Page] = []
    for number in range(1, count + 1):
        try:
            with budget.running(), _pdfium:
                found = _text_page(document, number)
        except (_OutOfTime, PdfError):
            raise
        except Exception as exc:  # noqa: BLE001 - a page PDFium cannot load is the file's fault
            raise PdfError(f"cannot read PDF: page {number}: {_reason(exc)}") from None
        read.append(found)
        if on_page and not found.scanned:
            on_page(number, count, False)
    scanned = [page.number for page in read if page.scanned]
    if len(scanned) > settings.CAIRN_OCR_MAX_PAGES:
        raise PdfError(
            f"it has {len(scanned)} scanned pages to read by OCR, more than CAIRN_OCR_MAX_PAGES "
            f"({settings.CAIRN_OCR_MAX_PAGES}): split it into smaller files"
        )
    ocr = _Ocr(document, settings.CAIRN_OCR_LANGUAGES, settings.CAIRN_TESSERACT)
    for number in scanned:
        read[number - 1] = ocr.read(number, budget)
        if on_page:
            on_page(number, count, True)
    if not any(page.lines for page in read):
        raise PdfError("the PDF has no text layer and no scanned page to read: nothing to index")

    text, first_heading = _write(read)
    with _pdfium:
        info = document.get_metadata_dict(skip_empty=True)
    metadata = _properties(info)
    if scanned:
        metadata["ocr_pages"] = scanned
        metadata["low_confidence_pages"] = [
            p.number for p in read if p.confidence is not None and p.confidence < settings.CAIRN_OCR_LOW_CONFIDENCE
        ]
    title = _plain(info.get("Title") or "") or first_heading
    return Reading(text, title, metadata, located=True)


# --- Budgets -----------------------------------------------------------------------------------


class _Budget:
    """Seconds one file may take to read, OCR included. In the main thread a timer (SIGALRM)
    interrupts the reading wherever it is; in another thread (a web request) it is checked when
    each step ends. A step that `waits` on a process of its own (Tesseract, under a timeout of what
    is left) is only counted: a signal would leave the process running."""

    def __init__(self, seconds: float):
        self.left = seconds

    @contextmanager
    def running(self, *, waits: bool = False):
        if self.left <= 0:
            raise _OutOfTime
        timer = not waits and _can_time()
        if timer:
            previous = signal.signal(signal.SIGALRM, _ring)
            signal.setitimer(signal.ITIMER_REAL, self.left)
        start = time.monotonic()
        try:
            yield
        finally:
            if timer:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
            self.left -= time.monotonic() - start
        if self.left <= 0:
            raise _OutOfTime


def _can_time() -> bool:
    """Whether this thread may set the process's interval timer: the main thread only, and only
    when no one else's timer is running."""
    return (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    )


def _ring(signum, frame):
    # Raised inside a garbage collector's callback (a weakref.finalize, a __del__), the exception is
    # printed and swallowed, reading goes on, and what the callback was closing (a PDFium page) stays
    # open. So the timer rings again soon, until the budget's block has ended (it stops the timer),
    # and rings past such a callback without raising. Seen in the full test suite: a 0.5 s budget
    # ran 14 s.
    signal.setitimer(signal.ITIMER_REAL, 0.05)
    if not _in_finalizer(frame):
        raise _OutOfTime


_WEAKREF_FILES = (weakref.__file__, _weakrefset.__file__)  # finalize, WeakSet's and WeakValueDictionary's callbacks


def _in_finalizer(frame) -> bool:
    while frame is not None:
        if frame.f_code.co_filename in _WEAKREF_FILES or frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


_STREAM = re.compile(rb"stream\r?\n")


def _inflated_size(data: bytes, limit: int) -> int:
    """What the file's Flate streams inflate to together, counted up to `limit` (a few kilobytes of
    zeros inflate to gigabytes, and a parser inflates a stream whole). Streams that are not zlib data
    (encrypted, other filters) count as nothing."""
    view = memoryview(data)
    total = 0
    for match in _STREAM.finditer(data):
        inflater = zlib.decompressobj()
        try:
            total += len(inflater.decompress(view[match.end() :], limit - total + 1))
        except zlib.error:
            continue
        if total > limit:
            break
    return total


# --- A page's lines ------------------------------------------------------------------------------


@dataclass
class _Line:
    text: str
    x0: float
    top: float
    x1: float
    bottom: float
    size: float = 0.0  # the font size most of its characters have; for OCR text, Tesseract's estimate
    bold: bool = False
    mono: bool = False  # set in a monospaced font: code, never the body's size
    region: int = 0  # a column or a full-width band: paragraphs never run across regions
    group: int = -1  # Tesseract's paragraph, for OCR text
    rows: list[list[str]] | None = None  # a table, in place of text
    band: bool = False  # in the top or bottom margin band


@dataclass
class _Page:
    number: int
    lines: list[_Line] = field(default_factory=list)
    confidence: float | None = None  # mean OCR word confidence, 0-1, when read by OCR
    scanned: bool = False  # no text layer to speak of: OCR reads it


_BOLD = re.compile(r"bold|black|heavy|semibold|demi", re.IGNORECASE)
_MONO = re.compile(r"mono|courier|consol|menlo|typewriter|code", re.IGNORECASE)


def _text_page(document, number: int) -> _Page:
    """The lines and tables of a page's text layer, in reading order (the PDFium lock held).
    Coordinates are pdfplumber's: points from the page's left edge and down from its top."""
    page = document[number - 1]
    try:
        left, bottom, right, top = page.get_mediabox()
        words = _words(page, left, top)
        edges, images, drawn = _drawing(page, left, top)
    finally:
        page.close()
    width, height = right - left, top - bottom
    if sum(len(w["text"]) for w in words) < OCR_MIN_CHARS and _looks_scanned(words, images, drawn, width, height):
        return _Page(number, scanned=True)
    tables = _tables(edges, words)
    words = [w for w in words if not any(_inside(w, bbox) for bbox, _ in tables)]
    items = words + [{"x0": b[0], "top": b[1], "x1": b[2], "bottom": b[3], "rows": rows} for b, rows in tables]
    lines = []
    for region, members in enumerate(_regions(items, width)):
        for line in _group_lines(members):
            line.region = region
            lines.append(line)
    _mark_bands(lines, 0, height)
    return _Page(number, lines)


def _mark_bands(lines: list[_Line], top: float, bottom: float) -> None:
    """Mark the lines in the top or bottom margin band that are among the page's first or last
    few lines: where running headers, footers and page numbers are printed."""
    band = MARGIN_BAND * (bottom - top)
    by_height = sorted((line for line in lines if line.rows is None), key=lambda line: line.top)
    for line in by_height[:MARGIN_LINES]:
        line.band = line.band or line.top < top + band
    for line in by_height[-MARGIN_LINES:]:
        line.band = line.band or line.bottom > bottom - band


WORD_GAP = 3.0  # points between two characters that split a word (pdfplumber's x_tolerance)
# Characters read as another: PDFium marks a hyphen that ends a line as U+0002, and a bullet drawn
# from Word's Symbol or Wingdings font comes as a private-use character (U+F0B7 and kin), which
# would be dropped as unprintable and its list item read as a paragraph.
_READ_AS = {"\x02": "-"} | dict.fromkeys("\uf0b7\uf0a7\uf0a8\uf0d8\uf076\uf0fc\uf06e\uf0e8", "•")


def _words(page, left: float, top: float) -> list[dict]:
    """The page's words from PDFium's text page: characters joined while they stand close on one
    line in one font and size, split at spaces and line ends, with pdfplumber's keys (text, x0, x1,
    top, bottom, size, fontname). Three C calls a character.
    PDFium's text page already reads text drawn twice in one place (overprinted to look bold) once,
    and splits a ligature into its letters, each with the ligature's box: no character here is
    dropped for standing where another stands."""
    from pypdfium2 import raw

    textpage = raw.FPDFText_LoadPage(page.raw)
    if not textpage:
        raise PdfError("PDFium cannot read its text")
    try:
        count = raw.FPDFText_CountChars(textpage)
        text = _page_text(textpage, count)
        box = raw.FS_RECTF()
        fonts: dict[int, tuple[float, str]] = {}
        words: list[dict] = []
        word: dict | None = None
        for i, char in enumerate(text):
            char = _READ_AS.get(char, char)
            if not char:  # the second half of the character before
                continue
            if char.isspace() or not char.isprintable():
                word = None
                continue
            text_object = raw.FPDFText_GetTextObject(textpage, i)
            key = ctypes.cast(text_object, ctypes.c_void_p).value or 0
            font = fonts.get(key) or fonts.setdefault(key, _font(text_object))
            raw.FPDFText_GetLooseCharBox(textpage, i, box)
            x0, x1, char_top, char_bottom = box.left - left, box.right - left, top - box.top, top - box.bottom
            if word is not None and (
                x0 - word["x1"] > WORD_GAP or x0 < word["x0"] - 1 or abs(char_top - word["top"]) > 3
                or font != word["font"]
            ):  # fmt: skip
                word = None
            if word is None:
                word = {"text": char, "x0": x0, "x1": x1, "top": char_top, "bottom": char_bottom,
                        "size": font[0], "fontname": font[1], "font": font}  # fmt: skip
                words.append(word)
            else:
                word["text"] += char
                word["x1"] = max(word["x1"], x1)
                word["top"], word["bottom"] = min(word["top"], char_top), max(word["bottom"], char_bottom)
        return words
    finally:
        raw.FPDFText_ClosePage(textpage)


def _page_text(textpage, count: int) -> list[str]:
    """The text page's characters, one for each index. Read one by one: FPDFText_GetText leaves out
    characters it has no UTF-16 for, and its text then runs ahead of the boxes. PDFium gives a
    character outside the Basic Multilingual Plane two indices, its two UTF-16 halves: it is read
    at the first, and the second is empty."""
    from pypdfium2 import raw

    points = [raw.FPDFText_GetUnicode(textpage, i) for i in range(count)]
    chars = [chr(point) if 0 < point < 0x110000 else "\x00" for point in points]
    for i in range(count - 1):
        if 0xD800 <= points[i] < 0xDC00 and 0xDC00 <= points[i + 1] < 0xE000:
            chars[i] = chr(0x10000 + ((points[i] - 0xD800) << 10) + (points[i + 1] - 0xDC00))
            chars[i + 1] = ""
    return chars


def _font(text_object) -> tuple[float, str]:
    """A text object's font size as drawn (its matrix's vertical scale applied) and its font name."""
    from pypdfium2 import raw

    size = ctypes.c_float()
    raw.FPDFTextObj_GetFontSize(text_object, ctypes.byref(size))
    matrix = raw.FS_MATRIX()
    raw.FPDFPageObj_GetMatrix(text_object, ctypes.byref(matrix))
    font = raw.FPDFTextObj_GetFont(text_object)
    length = raw.FPDFFont_GetBaseFontName(font, None, 0) if font else 0
    name = ctypes.create_string_buffer(max(length, 1))
    if length:
        raw.FPDFFont_GetBaseFontName(font, name, length)
    return round(size.value * math.hypot(matrix.c, matrix.d), 3), name.value.decode("utf-8", "replace")


def _drawing(page, left: float, top: float) -> tuple[list[dict], list[tuple], bool]:
    """What a page draws besides text: the horizontal and vertical straight strokes of its paths
    (pdfplumber's table edges: a rectangle gives its four sides), the boxes of its images, and
    whether it draws any visible path. Form XObjects are walked into."""
    from pypdfium2 import raw

    edges: list[dict] = []
    images: list[tuple] = []
    drawn = False
    fill, stroke = ctypes.c_int(), ctypes.c_int()

    def place(matrix, x: float, y: float) -> tuple[float, float]:
        a, b, c, d, e, f = matrix
        return a * x + c * y + e - left, top - (b * x + d * y + f)

    def walk(objects, matrix) -> None:
        nonlocal drawn
        for obj in objects:
            kind = raw.FPDFPageObj_GetType(obj)
            if kind == raw.FPDF_PAGEOBJ_FORM:
                count = raw.FPDFFormObj_CountObjects(obj)
                walk([raw.FPDFFormObj_GetObject(obj, i) for i in range(count)], _times(_matrix(obj), matrix))
            elif kind == raw.FPDF_PAGEOBJ_IMAGE:
                x0, y0, x1, y1 = (ctypes.c_float() for _ in range(4))
                if raw.FPDFPageObj_GetBounds(obj, *(ctypes.byref(v) for v in (x0, y0, x1, y1))):
                    corners = [place(matrix, x.value, y.value) for x in (x0, x1) for y in (y0, y1)]
                    xs, ys = [p[0] for p in corners], [p[1] for p in corners]
                    images.append((min(xs), min(ys), max(xs), max(ys)))
            elif kind == raw.FPDF_PAGEOBJ_PATH:
                raw.FPDFPath_GetDrawMode(obj, ctypes.byref(fill), ctypes.byref(stroke))
                if fill.value or stroke.value:
                    drawn = True
                    points = _path_points(obj, _times(_matrix(obj), matrix), place)
                    edges.extend(edge for p, q in points if (edge := _edge(p, q)))

    count = raw.FPDFPage_CountObjects(page.raw)
    walk([raw.FPDFPage_GetObject(page.raw, i) for i in range(count)], (1.0, 0.0, 0.0, 1.0, 0.0, 0.0))
    return edges, images, drawn


def _matrix(obj) -> tuple[float, ...]:
    from pypdfium2 import raw

    m = raw.FS_MATRIX()
    raw.FPDFPageObj_GetMatrix(obj, ctypes.byref(m))
    return (m.a, m.b, m.c, m.d, m.e, m.f)


def _times(inner: tuple[float, ...], outer: tuple[float, ...]) -> tuple[float, ...]:
    """The matrix that applies `inner`, then `outer` (PDF's row-vector convention)."""
    a, b, c, d, e, f = inner
    A, B, C, D, E, F = outer
    return (a * A + b * C, a * B + b * D, c * A + d * C, c * B + d * D, e * A + f * C + E, e * B + f * D + F)


def _path_points(obj, matrix, place) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """A path's straight segments, as pairs of points on the page (curves are no table rules)."""
    from pypdfium2 import raw

    segments = []
    start = current = None
    x, y = ctypes.c_float(), ctypes.c_float()
    for i in range(raw.FPDFPath_CountSegments(obj)):
        segment = raw.FPDFPath_GetPathSegment(obj, i)
        raw.FPDFPathSegment_GetPoint(segment, ctypes.byref(x), ctypes.byref(y))
        point = place(matrix, x.value, y.value)
        kind = raw.FPDFPathSegment_GetType(segment)
        if kind == raw.FPDF_SEGMENT_MOVETO:
            start = point
        elif kind == raw.FPDF_SEGMENT_LINETO and current is not None:
            segments.append((current, point))
        current = point
        if raw.FPDFPathSegment_GetClose(segment) and start is not None:
            segments.append((current, start))
            current = start
    return segments


def _edge(p: tuple[float, float], q: tuple[float, float]) -> dict | None:
    """A straight segment as a pdfplumber edge: horizontal or vertical, at least a point long."""
    (x0, y0), (x1, y1) = sorted([p, q])
    if abs(y1 - y0) < 1 and x1 - x0 >= 1:
        top = (y0 + y1) / 2
        return {"x0": x0, "x1": x1, "top": top, "bottom": top, "doctop": top, "width": x1 - x0, "height": 0.0,
                "orientation": "h"}  # fmt: skip
    top, bottom = min(y0, y1), max(y0, y1)
    if abs(x1 - x0) < 1 and bottom - top >= 1:
        x = (x0 + x1) / 2
        return {"x0": x, "x1": x, "top": top, "bottom": bottom, "doctop": top, "width": 0.0, "height": bottom - top,
                "orientation": "v"}  # fmt: skip
    return None


def _tables(edges: list[dict], words: list[dict]) -> list[tuple[tuple, list[list[str]]]]:
    """Ruled tables: pdfplumber's table finder ("lines" strategy, its default tolerances) on the
    page's edges, each cell holding the words whose middle lies in it; a table needs two rows with
    text and two columns."""
    if len(edges) < 4:
        return []
    from pdfplumber.table import cells_to_tables, edges_to_intersections, intersections_to_cells, merge_edges

    edges = merge_edges(edges, snap_x_tolerance=3, snap_y_tolerance=3, join_x_tolerance=3, join_y_tolerance=3)
    edges = [e for e in edges if e["width" if e["orientation"] == "h" else "height"] >= 3]
    found = []
    for cells in cells_to_tables(intersections_to_cells(edges_to_intersections(edges, 3, 3))):
        rows = [[_plain(_cell_text(cell, words)) if cell else "" for cell in row] for row in _cell_rows(cells)]
        rows = [row for row in rows if any(row)]
        if len(rows) >= 2 and max(len(row) for row in rows) >= 2:
            bbox = (min(c[0] for c in cells), min(c[1] for c in cells), max(c[2] for c in cells),
                    max(c[3] for c in cells))  # fmt: skip
            found.append((bbox, rows))
    return found


def _cell_rows(cells: list[tuple]) -> list[list[tuple | None]]:
    """A table's cells as rows, each with a place for every column (None where a cell spans it),
    as pdfplumber's Table.rows has them."""
    columns = sorted({cell[0] for cell in cells})
    rows: dict[float, dict[float, tuple]] = {}
    for cell in sorted(cells, key=lambda c: (c[1], c[0])):
        rows.setdefault(cell[1], {})[cell[0]] = cell
    return [[row.get(x) for x in columns] for row in rows.values()]


def _cell_text(cell: tuple, words: list[dict]) -> str:
    x0, top, x1, bottom = cell
    inside = [w for w in words if x0 <= (w["x0"] + w["x1"]) / 2 < x1 and top <= (w["top"] + w["bottom"]) / 2 < bottom]
    return " ".join(w["text"] for w in sorted(inside, key=lambda w: (round(w["top"]), w["x0"])))


def _looks_scanned(words: list[dict], images: list[tuple], drawn: bool, width: float, height: float) -> bool:
    """No text layer (and something drawn), or almost none over an image that covers the page."""
    if not words:
        return bool(images or drawn)
    area = float(width * height) or 1.0
    return any(
        (min(x1, width) - max(x0, 0.0)) * (min(bottom, height) - max(top, 0.0)) >= OCR_IMAGE_SHARE * area
        for x0, top, x1, bottom in images
    )


def _inside(word: dict, bbox) -> bool:
    x, y = (word["x0"] + word["x1"]) / 2, (word["top"] + word["bottom"]) / 2
    return bbox[0] <= x <= bbox[2] and bbox[1] <= y <= bbox[3]


def _regions(items: list[dict], page_width: float) -> list[list[dict]]:
    """The page's words (and tables) in reading order, as regions: on a two-column page each band
    of rows between full-width lines is its left column, then its right; else the page is one."""
    gutter = _gutter([i for i in items if "rows" not in i], page_width)
    if gutter is None:
        return [items]

    def crosses(i: dict) -> bool:
        return i["x0"] < gutter - 1 and i["x1"] > gutter + 1

    spans: list[list[float]] = []  # the heights taken by what crosses the gutter, merged
    for i in sorted((i for i in items if crosses(i)), key=lambda i: i["top"]):
        if spans and i["top"] <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], i["bottom"])
        else:
            spans.append([i["top"], i["bottom"]])
    regions: list[list[dict]] = []
    above = -math.inf
    for low, high in [*spans, [math.inf, math.inf]]:
        between = [i for i in items if not crosses(i) and above <= _middle(i) < low]
        regions.append([i for i in between if i["x1"] <= gutter + 1])
        regions.append([i for i in between if i["x1"] > gutter + 1])
        regions.append([i for i in items if low <= _middle(i) <= high])
        above = high
    return [r for r in regions if r]


def _middle(item: dict) -> float:
    return (item["top"] + item["bottom"]) / 2


def _gutter(words: list[dict], page_width: float) -> float | None:
    """The x of a vertical band of whitespace between two columns of prose, or None. It lies in the
    middle 40% of the text's width, few words cross it, both sides hold several rows of words that
    fill their column, and it is narrower than an inch and a half (a form's labels and values have
    a wider gap, and are not columns)."""
    if len(words) < 20:
        return None
    left, right = min(w["x0"] for w in words), max(w["x1"] for w in words)
    width = int(right - left)
    if width < 100:
        return None
    cover = [0] * (width + 2)  # how many words cover each point across the text
    for w in words:
        cover[max(int(w["x0"] - left), 0)] += 1
        cover[min(int(math.ceil(w["x1"] - left)), width + 1)] -= 1
    running = 0
    for x in range(width + 2):
        running += cover[x]
        cover[x] = running
    low, high = int(0.3 * width), int(0.7 * width)
    least = min(cover[low : high + 1])
    best = None  # the widest run of least-covered points that touches the middle
    x = low
    while x <= high:
        if cover[x] == least:
            start = x
            while start > 0 and cover[start - 1] <= least:
                start -= 1
            end = x
            while end < width and cover[end + 1] <= least:
                end += 1
            if best is None or end - start > best[1] - best[0]:
                best = (start, end)
            x = end + 1
        else:
            x += 1
    if best is None or not 8 <= best[1] - best[0] <= 108:
        return None
    gutter = left + (best[0] + best[1]) / 2
    crossing = sum(1 for w in words if w["x0"] < gutter < w["x1"])
    sides = (
        [w for w in words if w["x1"] <= gutter],
        [w for w in words if w["x0"] >= gutter],
    )
    if crossing > 0.4 * len(words) or any(len(side) < 0.15 * len(words) for side in sides):
        return None
    for side in sides:
        rows = _group_lines(side)
        if len(rows) < 3:
            return None
        column = max(r.x1 for r in rows) - min(r.x0 for r in rows)
        if statistics.median(r.x1 - r.x0 for r in rows) < 0.5 * column or column < 0.25 * (right - left):
            return None
    return gutter


def _group_lines(items: list[dict]) -> list[_Line]:
    """Words on the same height are a line, read left to right; a table is a line of its own."""
    lines: list[list[dict]] = []
    bottom = 0.0  # the lowest bottom of the line being gathered
    for item in sorted(items, key=lambda i: (i["top"], i["x0"])):
        current = lines[-1] if lines else None
        if (
            current
            and "rows" not in item
            and "rows" not in current[0]
            and current[0]["top"] - 1 <= _middle(item) <= bottom + 1
        ):
            current.append(item)
            bottom = max(bottom, item["bottom"])
        else:
            lines.append([item])
            bottom = item["bottom"]
    return [_line(sorted(words, key=lambda w: w["x0"])) for words in lines]


def _line(words: list[dict]) -> _Line:
    box = (
        min(w["x0"] for w in words),
        min(w["top"] for w in words),
        max(w["x1"] for w in words),
        max(w["bottom"] for w in words),
    )
    if "rows" in words[0]:
        return _Line("", *box, rows=words[0]["rows"])
    sizes: Counter = Counter()
    for w in words:
        sizes[round(float(w.get("size") or 0) * 2) / 2] += len(w["text"])
    return _Line(
        " ".join(w["text"] for w in words).translate(_LIGATURES),
        *box,
        size=sizes.most_common(1)[0][0],
        bold=all(_BOLD.search(str(w.get("fontname") or "")) for w in words),
        mono=all(_MONO.search(str(w.get("fontname") or "")) for w in words),
    )


# --- OCR ---------------------------------------------------------------------------------------


class _Ocr:
    """Scanned pages rendered by PDFium and read by Tesseract."""

    def __init__(self, document, languages: str, command: str):
        self.document, self.languages, self.command = document, languages, command

    def read(self, number: int, budget: _Budget) -> _Page:
        """Page `number` rendered and read, in the time `budget` has left."""
        import pytesseract

        if not tesseract_path(self.command):
            raise PdfError(
                f"page {number} is a scanned image and Tesseract ({self.command}) is not installed: "
                "install tesseract-ocr to read scanned pages"
            )
        if missing := missing_languages(self.command, self.languages):
            raise PdfError(
                f"page {number} is a scanned image and Tesseract has no {', '.join(missing)} language data: "
                f"install tesseract-ocr-{missing[0]} or change CAIRN_OCR_LANGUAGES"
            )
        with budget.running():
            image, scale = self._render(number)
        pytesseract.pytesseract.tesseract_cmd = self.command
        # One thread: Tesseract's OpenMP threads spin against each other and the embedder's on a
        # small machine (a dense page five times slower on two busy cores: benchmarks/HISTORY.md).
        # pytesseract runs it with its module's `environ`: only what Tesseract needs, nothing of
        # this process's settings or secrets (it reads hostile images).
        pytesseract.pytesseract.environ = {
            "PATH": os.environ.get("PATH", os.defpath),
            "OMP_THREAD_LIMIT": "1",
            **{name: os.environ[name] for name in ("TESSDATA_PREFIX", "TMPDIR") if name in os.environ},
        }
        timeout = min(OCR_PAGE_SECONDS, budget.left)
        try:  # hOCR: each line's words with their confidence, and the line's text size (x_size)
            with budget.running(waits=True):
                found = pytesseract.image_to_pdf_or_hocr(image, lang=self.languages, extension="hocr", timeout=timeout)
        except RuntimeError as exc:  # pytesseract's timeout
            if timeout < OCR_PAGE_SECONDS:
                raise _OutOfTime from None
            raise PdfError(f"OCR of page {number} took more than {OCR_PAGE_SECONDS} s") from exc
        except pytesseract.TesseractError as exc:
            raise PdfError(f"OCR of page {number} failed: {_reason(exc)}") from exc
        return _ocr_page(number, found, image.height, scale)

    def _render(self, number: int):
        import pypdfium2

        with _pdfium:
            try:
                page = self.document[number - 1]
            except pypdfium2.PdfiumError as exc:
                raise PdfError(f"cannot render page {number} for OCR: {_reason(exc)}") from exc
            try:
                width, height = page.get_size()
                scale = min(OCR_DPI / 72, math.sqrt(OCR_MAX_PIXELS / max(width * height, 1.0)))
                return page.render(scale=scale, grayscale=True).to_pil(), scale
            except pypdfium2.PdfiumError as exc:
                raise PdfError(f"cannot render page {number} for OCR: {_reason(exc)}") from exc
            finally:
                page.close()


_HOCR = "{http://www.w3.org/1999/xhtml}"


def _ocr_page(number: int, hocr: bytes, image_height: int, scale: float) -> _Page:
    """Tesseract's hOCR as lines, each in its paragraph, its size Tesseract's estimate of its text
    size (x_size) in points (the page rendered at `scale` pixels a point); the page's confidence
    is the mean of its words' (0-1; 0 when it read none)."""
    from defusedxml import ElementTree

    page = _Page(number)
    confidences = []
    paragraphs = (e for e in ElementTree.fromstring(hocr).iter(f"{_HOCR}p") if e.get("class") == "ocr_par")
    for group, paragraph in enumerate(paragraphs):
        for line in paragraph:
            words = []
            for word in line.iter(f"{_HOCR}span"):
                text, title = "".join(word.itertext()).strip(), _hocr_title(word)
                confidence = float(title.get("x_wconf", ["-1"])[0])
                if word.get("class") != "ocrx_word" or not text or confidence < 0:
                    continue
                confidences.append(confidence / 100)
                if confidence < 60 and not any(c.isalnum() for c in text):
                    continue  # specks read as punctuation
                words.append((text, [float(v) for v in title["bbox"]]))
            if not words:
                continue
            size = float(_hocr_title(line).get("x_size", ["0"])[0]) / scale
            box = (min(w[1][0] for w in words), min(w[1][1] for w in words),
                   max(w[1][2] for w in words), max(w[1][3] for w in words))  # fmt: skip
            page.lines.append(_Line(" ".join(text for text, _ in words), *box, size=size, group=group))
    page.confidence = round(statistics.fmean(confidences), 3) if confidences else 0.0
    _mark_bands(page.lines, 0, image_height)
    return page


def _hocr_title(element) -> dict[str, list[str]]:
    """An hOCR element's properties ("bbox 10 20 30 40; x_wconf 96") by name."""
    found = {}
    for item in (element.get("title") or "").split(";"):
        name, *values = item.split()
        if name:
            found[name] = values
    return found


HEADING_SCALE = 1.10  # an OCR line this much larger than the body text may be a heading
OCR_SIZE_STEP = 1.08  # OCR heading sizes within this ratio of each other are one size


def _ocr_sizes(pages: list[_Page]) -> None:
    """The sizes of OCR lines, made like a text layer's font sizes for _write to rank. Tesseract's
    estimate of a line's size varies by a few percent from line to line (and a lone bracket reads
    large), so every OCR line takes the body's size, but a short line of words that stands clearly
    larger than the OCR body (a heading), whose sizes are grouped into a few steps. In a document
    that also has a text layer, the OCR body is set to the text layer's body size."""
    lines = [line for page in pages if page.confidence is not None for line in page.lines]
    if not lines:
        return
    by_chars = sorted((line.size, len(line.text)) for line in lines)
    half, seen = sum(n for _, n in by_chars) / 2, 0
    ocr_body = next(size for size, n in by_chars if (seen := seen + n) >= half)
    text_layer = [line for page in pages if page.confidence is None for line in page.lines]
    body = _body_size(text_layer) or round(ocr_body * 2) / 2
    steps: list[float] = []  # the ratios to the OCR body that heading sizes are grouped at
    for line in sorted(lines, key=lambda line: -line.size):
        ratio = line.size / ocr_body if ocr_body else 0.0
        words = line.text.split()
        if ratio < HEADING_SCALE or len(words) > 12 or sum(c.isalpha() for c in line.text) < 3:
            line.size = body
            continue
        if not steps or steps[-1] / ratio > OCR_SIZE_STEP:
            steps.append(ratio)
        line.size = round(body * steps[-1] * 2) / 2


def tesseract_path(command: str) -> str | None:
    return shutil.which(command)


@lru_cache(maxsize=8)
def tesseract_languages(command: str) -> frozenset[str]:
    """The languages Tesseract has data for (``tesseract --list-langs``); empty when it cannot run."""
    try:
        listed = subprocess.run([command, "--list-langs"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(line.strip() for line in listed.stdout.splitlines()[1:] if line.strip())


def missing_languages(command: str, languages: str) -> list[str]:
    """The languages in a Tesseract ``-l`` string ("eng+deu") it has no data for."""
    have = tesseract_languages(command)
    return [language for language in languages.split("+") if language and language not in have]


# --- Furniture, headings and blocks ----------------------------------------------------------------

_PAGE_NUMBER = re.compile(
    r"^(?:(?:page|p\.|seite|pagina|página)\s*)?[-–—(\[]?\s*"
    r"(?:\d{1,5}|(?=[ivxlc])(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3}))"
    r"\s*(?:(?:/|of|von|de|sur)\s*\d{1,5})?\s*[-–—)\]]?$",
    re.IGNORECASE,
)


def _furniture_key(text: str) -> str:
    return " ".join(re.sub(r"\d+", "#", text.casefold()).split())


def _furniture(pages: list[_Page]) -> set[str]:
    """Band lines that repeat, digits aside, on a large share of the pages: running headers and
    footers. None in a one-page document (its header is text like any other)."""
    if len(pages) < 2:
        return set()
    seen: Counter = Counter()
    for page in pages:
        seen.update({_furniture_key(line.text) for line in page.lines if line.band and line.text})
    need = max(2, math.ceil(FURNITURE_SHARE * len(pages)))
    return {key for key, count in seen.items() if count >= need}


# What a browser prints around every page, a one-page document's too (where nothing repeats): the
# date and time it was printed opening the header ("11/26/26, 11:41 AM  Getting Started"), the
# page's own counter closing the footer ("file:///srv/guide.html  1/1"), and the page's address on a
# margin line of its own (OCR reads the address and the counter as two lines).
_ADDRESS = re.compile(r"^(?:https?|file)://\S+$", re.IGNORECASE)
_PRINTED_AT = re.compile(
    r"^\d{1,4}[/.-]\d{1,2}[/.-]\d{1,4},?\s+\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]\.?m\.?)?\b", re.IGNORECASE
)


def _own_counter(text: str, number: int, count: int) -> bool:
    """Whether `text` ends with this page's counter: "3/12", "3 of 12", "Page 3 of 12"."""
    found = re.search(r"(\d{1,5})\s*(?:/|of)\s*(\d{1,5})\s*$", text, re.IGNORECASE)
    return found is not None and (int(found.group(1)), int(found.group(2))) == (number, count)


def _is_furniture(line: _Line, repeated: set[str], number: int, count: int) -> bool:
    text = line.text.strip()
    return line.band and (
        _PAGE_NUMBER.match(text) is not None
        or _furniture_key(line.text) in repeated
        or _own_counter(text, number, count)
        or _PRINTED_AT.match(text) is not None
        or _ADDRESS.match(text) is not None
    )


def _write(pages: list[_Page]) -> tuple[str, str]:
    """The document's block text, a marker before each page, and its first top-level heading."""
    repeated = _furniture(pages)
    for page in pages:
        page.lines = [line for line in page.lines if not _is_furniture(line, repeated, page.number, len(pages))]
    _ocr_sizes(pages)
    for before, page in zip(pages, pages[1:], strict=False):
        _continue_table(before, page)
    body = _body_size([line for page in pages for line in page.lines])
    # Heading sizes from every line the furniture rules kept: a title at the very top of a page
    # (a scan's, whose print stamp went as furniture) sits in the margin band.
    sizes = {line.size for page in pages for line in page.lines if line.size}
    larger = sorted((s for s in sizes if s >= body + max(0.5, 0.08 * body)), reverse=True)
    levels = {size: min(rank, 3) for rank, size in enumerate(larger, start=1)}
    bold_level = min(len(levels), 3) + 1
    out, first_heading = [], ""
    for page in pages:
        location = {"page": page.number}
        if page.confidence is not None:
            location["ocr"] = page.confidence
        blocks = _Blocks(levels, bold_level).read(page.lines)
        if not first_heading:
            first_heading = next((b[2:] for b in blocks if b.startswith("# ")), "")
        out.append("\n\n".join([locations.marker(location), *blocks]))
    return "\n\n".join(out), first_heading


def _body_size(lines: list[_Line]) -> float:
    """The size most characters have, margins aside (a header's small print is no body) and code
    aside (a page of listings would make its code font the body, and every line of prose a
    heading); 0 when no line has a size."""
    weights: Counter = Counter()
    for line in lines:
        if line.size and not line.band and not line.mono:
            weights[line.size] += len(line.text)
    if not weights:
        for line in lines:
            if line.size:
                weights[line.size] += len(line.text)
    return weights.most_common(1)[0][0] if weights else 0.0


def _continue_table(before: _Page, page: _Page) -> None:
    """A table that runs on from the foot of one page to the head of the next: its part there has
    no header row of its own, so it takes the first part's (one that repeats it is left alone)."""
    if not (before.lines and page.lines and before.lines[-1].rows and page.lines[0].rows):
        return
    header, rows = before.lines[-1].rows[0], page.lines[0].rows
    if len(header) == max(len(row) for row in rows) and rows[0] != header:
        page.lines[0].rows = [header, *rows]


_SENTENCE_END = re.compile(r"[.!?:;][\"'\u201d\u2019)\]]*$")


def _ends_sentence(text: str) -> bool:
    """Whether `text` ends a sentence; only its end is read (a page-long line is searched once, not
    once for each line after it)."""
    return bool(_SENTENCE_END.search(text[-16:]))


_BULLET = re.compile(r"^(?:[•◦▪▫●○■□‣⁃∙·*–-]|\d{1,3}[.)]|[a-z][.)])\s+(?=\S)")
_STRUCTURE = re.compile(r"^(?:#{1,6}\s|\||:\s|```|~~~|>)")


# Typeset ligatures a PDF's fonts map to one character ("ﬁle" for "file", the "ﬂ" of "workﬂow"):
# unfolded, or a search for "file" or "workflow" misses the page. Only these: NFKC would also
# rewrite "²", "½" and full-width text.
_LIGATURES = str.maketrans({"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"})


def _plain(text: str) -> str:
    """One line of text, with no leading marks the chunker would read as structure."""
    text = " ".join(str(text).translate(_LIGATURES).split())
    while _STRUCTURE.match(text):
        text = text.lstrip("#|:`~> ")
    return text


class _Blocks:
    """A page's lines as blocks: headings, paragraphs, list items, tables."""

    def __init__(self, levels: dict[float, int], bold_level: int):
        self.levels, self.bold_level = levels, bold_level

    def read(self, lines: list[_Line]) -> list[str]:
        from readers.blocks import table_lines

        self.blocks: list[str] = []
        self.run: list[_Line] = []  # the lines of the paragraph, item or heading being read
        self.kind = ""
        text_lines = [line for line in lines if line.rows is None]
        self.widths = _typical(text_lines, lambda line: line.x1 - line.x0)
        self.pitch = _pitch(text_lines)
        for i, line in enumerate(lines):
            if line.rows is not None:
                self._flush()
                self.blocks.append("\n".join(table_lines(line.rows)))
                continue
            level = self._level(line, lines[i - 1] if i else None, lines[i + 1] if i + 1 < len(lines) else None)
            if level:
                if not (self.kind == f"h{level}" and self._continues(line)):
                    self._flush()
                    self.kind = f"h{level}"
                self.run.append(line)
                continue
            if bullet := _BULLET.match(line.text):
                self._flush()
                self.kind = "item"
                line = _Line(line.text[bullet.end() :], **{k: v for k, v in vars(line).items() if k != "text"})
                self.run.append(line)
                continue
            alone = self._stands_alone(line, lines[i + 1 :])
            if self.kind.startswith("h") or (self.run and (alone or self._breaks(line))):
                self._flush()
            if not self.run:
                self.kind = "paragraph"
            self.run.append(line)
            if alone:
                self._flush()
        self._flush()
        return self.blocks

    def _level(self, line: _Line, before: _Line | None, after: _Line | None) -> int:
        if not line.size or not re.search(r"[^\W\d_]", line.text):
            return 0
        words = len(line.text.split())
        if (level := self.levels.get(line.size)) and words <= 16 and line.text[-1:] not in ".,;":
            return level  # a long line, or one that ends a sentence, is prose in a larger font
        short = len(line.text) <= 80 and words <= 10 and line.text[-1:] not in ".,;:!?"
        alone = not (before and before.bold and before.region == line.region) and not (
            after and after.bold and after.region == line.region and after.size == line.size
        )
        return self.bold_level if line.bold and short and alone else 0

    def _continues(self, line: _Line) -> bool:
        """Whether a heading line goes on the heading above it (a heading wrapped onto two lines)."""
        last = self.run[-1]
        return line.region == last.region and line.top - last.bottom < 0.8 * (last.bottom - last.top)

    def _breaks(self, line: _Line) -> bool:
        """Whether `line` starts a new paragraph rather than going on with the run above it."""
        last = self.run[-1]
        if line.region != last.region or line.group != last.group or line.size != last.size:
            return True
        if line.top - last.top > 1.3 * self.pitch.get(line.region, math.inf) or line.top < last.top:
            return True
        height = max(last.bottom - last.top, 1.0)
        if self.kind == "paragraph" and line.x0 > last.x0 + height and last.x0 <= self._left(line) + 1:
            return True  # a first-line indent
        width = self.widths.get(line.region, 0.0)
        return last.x1 - last.x0 < 0.8 * width and _ends_sentence(last.text)

    def _left(self, line: _Line) -> float:
        return min((r.x0 for r in self.run if r.region == line.region), default=line.x0)

    def _stands_alone(self, line: _Line, after: list[_Line]) -> bool:
        """A short unpunctuated line after a finished sentence and before a capitalised line: a
        paragraph of its own (a heading the fonts do not mark: "3.2 Backups")."""
        following = next((a for a in after if a.rows is None), None)
        width = self.widths.get(line.region, 0.0)
        before = self.run[-1].text if self.run else self.blocks[-1] if self.blocks else ""
        return (
            following is not None
            and following.region == line.region
            and line.x1 - line.x0 < 0.6 * width
            and len(line.text.split()) <= 8
            and not _ends_sentence(line.text)
            and following.text[:1].isupper()
            and (not before or before.startswith(("#", "|")) or _ends_sentence(before))
        )

    def _flush(self) -> None:
        if not self.run:
            return
        text = _plain(_joined(line.text for line in self.run))
        if text:
            if self.kind.startswith("h"):
                self.blocks.append(f"{'#' * int(self.kind[1:])} {text}")
            elif self.kind == "item":
                self.blocks.append(f"- {text}")
            else:
                self.blocks.append(text)
        self.run, self.kind = [], ""


def _typical(lines: list[_Line], measure) -> dict[int, float]:
    """Per region, the width a full line has there: the median line width."""
    by_region: dict[int, list[float]] = {}
    for line in lines:
        by_region.setdefault(line.region, []).append(measure(line))
    return {region: statistics.median(values) for region, values in by_region.items()}


def _pitch(lines: list[_Line]) -> dict[int, float]:
    """Per region, the usual distance from one line's top to the next one's (its leading)."""
    steps: dict[int, list[float]] = {}
    for last, line in zip(lines, lines[1:], strict=False):
        if line.region == last.region and line.size == last.size and line.top > last.top:
            steps.setdefault(line.region, []).append(line.top - last.top)
    return {region: statistics.median(values) for region, values in steps.items()}


def _joined(lines) -> str:
    """Lines of one paragraph as one text: "con-" + "figured" is "configured"; a hyphen before a
    capital or a digit ("Jean-" + "Paul", "COVID-" + "19") is a real one and stays."""
    pieces: list[str] = []
    for line in lines:
        line = line.strip()
        if not line:
            continue
        last = pieces[-1] if pieces else ""
        if not pieces:
            pieces.append(line)
        elif last.endswith("\u00ad"):  # a soft hyphen
            pieces[-1] = last[:-1]
            pieces.append(line)
        elif len(last) >= 2 and last[-1] == "-" and last[-2].isalpha() and line[0].isalnum():
            if line[0].islower():
                pieces[-1] = last[:-1]
            pieces.append(line)
        else:
            pieces.append(" " + line)
    return "".join(pieces)


# --- Properties --------------------------------------------------------------------------------

_PDF_DATE = re.compile(
    r"^(?:D:)?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?\s*(?:([Zz])|([+-])(\d{2})'?(\d{2})?'?)?"
)


def _properties(info: dict) -> dict:
    """The document information dictionary as document metadata, as Office files give it: who wrote
    it ("author") and when it was created and last modified ("created", "modified", ISO 8601)."""
    found = {
        "author": _plain(str(info.get("Author") or "")),
        "created": _pdf_date(info.get("CreationDate")),
        "modified": _pdf_date(info.get("ModDate")),
    }
    return {key: value for key, value in found.items() if value}


def _pdf_date(value) -> str:
    """A PDF date string ("D:20261126093000+01'00'") in ISO 8601; "" when it is not one."""
    if isinstance(value, bytes):
        value = value.decode("latin-1", "replace")
    match = _PDF_DATE.match(str(value or "").strip())
    if not match:
        return ""
    year, month, day, hour, minute, second, zulu, sign, tz_hours, tz_minutes = match.groups()
    zone = None
    if zulu:
        zone = datetime.UTC
    elif sign:
        offset = datetime.timedelta(hours=int(tz_hours), minutes=int(tz_minutes or 0))
        zone = datetime.timezone(-offset if sign == "-" else offset)
    try:
        moment = datetime.datetime(
            int(year), int(month or 1), int(day or 1), int(hour or 0), int(minute or 0), int(second or 0), tzinfo=zone
        )
    except (ValueError, OverflowError):
        return ""
    return moment.isoformat()
