"""Read a PDF as a person sees it: headings, paragraphs, lists and tables in reading order, without
the running headers, footers and page numbers printed on every page; scanned pages read by OCR.

The text layer is read with pdfplumber (pdfminer.six): words with their boxes, font sizes and
fonts. Each page becomes block text (corpus.chunking.parse_blocks) after a location marker
(corpus.locations.page). The steps, for each page:

- tables: pdfplumber's table finder (ruled tables); each is written as a pipe table whose first row
  is its header, and its words are not read again as paragraphs;
- columns: a vertical gutter of whitespace through the middle of the words splits the page into a
  left and a right column, read one after the other; lines that cross the gutter (a title, a
  full-width paragraph) are read where they stand;
- lines: words grouped by their height on the page;
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
("low_confidence_pages"), for curators to check.

Hostile files: a password-protected PDF is refused (one whose user password is empty is read), a
damaged one is an ExtractionError, a file of more than CAIRN_PDF_MAX_PAGES pages or whose streams
inflate past MAX_INFLATED_BYTES is refused before its pages are read, and reading the text layer
has CAIRN_PDF_SECONDS in all: in the main thread (the ingest command, the worker) a timer stops a
page mid-parse; in another thread the budget is checked between pages.
"""

from __future__ import annotations

import datetime
import functools
import io
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import threading
import time
import unicodedata
import zlib
from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache

from corpus import locations
from corpus.reading import Reading

# (page number, page count, whether the page was read by OCR): called after each page.
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

_render_lock = threading.Lock()  # PDFium is not thread-safe


class PdfError(Exception):
    """A PDF that cannot be read; the message says why (extract.py makes it an ExtractionError)."""


class _OutOfTime(BaseException):
    """Raised by the budget's timer. A BaseException: pdfminer turns every Exception into its own."""


def read_pdf(data: bytes, *, on_page: PageHook | None = None) -> Reading:
    """A PDF's block text, with a location marker before each page, its title and its properties."""
    from django.conf import settings

    budget = _Budget(settings.CAIRN_PDF_SECONDS)
    if _inflated_size(data, MAX_INFLATED_BYTES) > MAX_INFLATED_BYTES:
        raise PdfError(f"its compressed streams inflate to more than {MAX_INFLATED_BYTES // 2**20} MB")
    try:
        with budget.running():
            pdf = _open(data)
        try:
            return _read(pdf, data, budget, on_page=on_page)
        finally:
            pdf.close()
    except _OutOfTime:
        raise PdfError(
            f"reading it took more than {settings.CAIRN_PDF_SECONDS:g} s (CAIRN_PDF_SECONDS): a pathological "
            "or very large PDF"
        ) from None


def _open(data: bytes):
    import pdfplumber
    from pdfminer.pdfdocument import PDFPasswordIncorrect
    from pdfplumber.utils.exceptions import PdfminerException

    try:
        return pdfplumber.open(io.BytesIO(data))
    except PdfminerException as exc:
        cause = exc.args[0] if exc.args else exc
        if isinstance(cause, PDFPasswordIncorrect):
            raise PdfError("password-protected PDF: remove the password (or print it to a new PDF) first") from None
        raise PdfError(f"cannot read PDF: {_reason(cause)}") from None
    except Exception as exc:  # noqa: BLE001 - hostile input: any parser failure is the file's
        raise PdfError(f"cannot read PDF: {_reason(exc)}") from None


def _reason(exc: BaseException) -> str:
    return (str(exc).strip() or type(exc).__name__)[:300]


def _read(pdf, data: bytes, budget: _Budget, *, on_page: PageHook | None) -> Reading:
    from django.conf import settings

    limit = settings.CAIRN_PDF_MAX_PAGES
    declared = _declared_pages(pdf)
    if declared > limit:
        raise PdfError(f"it has {declared} pages, more than CAIRN_PDF_MAX_PAGES ({limit})")
    try:
        with budget.running():
            pages = pdf.pages
    except _OutOfTime:
        raise
    except Exception as exc:  # noqa: BLE001
        raise PdfError(f"cannot read PDF: {_reason(exc)}") from None
    if len(pages) > limit:
        raise PdfError(f"it has {len(pages)} pages, more than CAIRN_PDF_MAX_PAGES ({limit})")
    if not pages:
        raise PdfError("cannot read PDF: it has no pages")

    ocr = _Ocr(data, settings.CAIRN_OCR_LANGUAGES, settings.CAIRN_TESSERACT)
    read: list[_Page] = []
    for number, page in enumerate(pages, start=1):
        page.process_object = functools.partial(_process_object, page)  # this page only: no library patched
        try:
            with budget.running():
                found = _text_page(page, number)
        except (_OutOfTime, PdfError):
            raise
        except Exception as exc:  # noqa: BLE001 - a page pdfminer cannot interpret is the file's fault
            raise PdfError(f"cannot read PDF: page {number}: {_reason(exc)}") from None
        finally:
            page.close()
        if found.scanned:
            found = ocr.read(number, len(pages))
        read.append(found)
        if on_page:
            on_page(number, len(pages), found.confidence is not None)
    if not any(page.lines for page in read):
        raise PdfError("the PDF has no text layer and no scanned page to read: nothing to index")

    text, first_heading = _write(read)
    metadata = _properties(pdf.metadata)
    scanned = [p.number for p in read if p.confidence is not None]
    if scanned:
        metadata["ocr_pages"] = scanned
        metadata["low_confidence_pages"] = [
            p.number for p in read if p.confidence is not None and p.confidence < settings.CAIRN_OCR_LOW_CONFIDENCE
        ]
    title = _plain(str(pdf.metadata.get("Title") or "")) or first_heading
    return Reading(text, title, metadata, located=True)


def _process_object(page, obj) -> dict:
    """pdfplumber's Page.process_object with a fast path for a character, which is most of what a
    page holds: its attributes are plain numbers, strings and tuples, so the recursive resolve_all
    pdfplumber runs on every one (half of a text page's reading time, 2026-11-26) finds nothing to
    resolve. The same dictionary, for the same attributes; anything else goes the library's way."""
    from pdfminer.layout import LTChar
    from pdfplumber.page import ALL_ATTRS, Page, fix_fontname_bytes
    from pdfplumber.utils import resolve_and_decode

    if type(obj) is not LTChar:
        return Page.process_object(page, obj)
    attr = {key: value for key, value in obj.__dict__.items() if key in ALL_ATTRS}
    attr["object_type"] = "char"
    attr["page_number"] = page.page_number
    attr["ncs"] = resolve_and_decode(obj.ncs.name)
    text = obj.get_text()
    attr["text"] = unicodedata.normalize(page.pdf.unicode_norm, text) if page.pdf.unicode_norm else text
    state = obj.graphicstate
    attr["stroking_color"] = state.scolor if isinstance(state.scolor, tuple) else (state.scolor,)
    attr["non_stroking_color"] = state.ncolor if isinstance(state.ncolor, tuple) else (state.ncolor,)
    if isinstance(attr["fontname"], bytes):
        attr["fontname"] = fix_fontname_bytes(attr["fontname"])
    left, top = page.mediabox[:2]
    attr["top"] = (page.height - attr["y1"]) + top
    attr["bottom"] = (page.height - attr["y0"]) + top
    attr["doctop"] = page.initial_doctop + attr["top"]
    if left != 0:
        attr["x0"], attr["x1"] = attr["x0"] + left, attr["x1"] + left
    return attr


def _declared_pages(pdf) -> int:
    """The page count the page tree declares (read before the tree is walked)."""
    from pdfminer.pdftypes import resolve1

    try:
        count = resolve1(resolve1(pdf.doc.catalog["Pages"]).get("Count"))
    except Exception:  # noqa: BLE001 - a damaged tree is found when the pages are read
        return 0
    return count if isinstance(count, int) else 0


# --- Budgets -----------------------------------------------------------------------------------


class _Budget:
    """Seconds the text layer of one file may take to read, OCR aside (Tesseract has its own limit
    per page). In the main thread a timer (SIGALRM) interrupts pdfminer wherever it is; in another
    thread (a web request) it is checked when each step ends."""

    def __init__(self, seconds: float):
        self.left = seconds

    @contextmanager
    def running(self):
        if self.left <= 0:
            raise _OutOfTime
        timer = _can_time()
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
    # Rung inside a garbage collector's callback (a weakref.finalize), the exception is printed and
    # swallowed, and reading goes on: ring again soon, until the budget's block has ended (it stops
    # the timer). Seen in the full test suite: a 0.5 s budget ran 14 s.
    signal.setitimer(signal.ITIMER_REAL, 0.05)
    raise _OutOfTime


_STREAM = re.compile(rb"stream\r?\n")


def _inflated_size(data: bytes, limit: int) -> int:
    """What the file's Flate streams inflate to together, counted up to `limit` (a few kilobytes of
    zeros inflate to gigabytes, and pdfminer inflates a stream whole). Streams that are not zlib data
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
    size: float = 0.0  # the font size most of its characters have; 0 for OCR text
    bold: bool = False
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


def _text_page(page, number: int) -> _Page:
    """The lines and tables of a page's text layer, in reading order."""
    chars = page.chars
    if sum(1 for c in chars if not c["text"].isspace()) < OCR_MIN_CHARS and _looks_scanned(page, chars):
        return _Page(number, scanned=True)
    page = _drawn_once(page, chars)
    tables = []
    for found in page.find_tables():
        rows = [[_plain(cell or "") for cell in row] for row in found.extract()]
        rows = [row for row in rows if any(row)]
        if len(rows) >= 2 and max(len(row) for row in rows) >= 2:
            tables.append((found.bbox, rows))
    words = [
        w
        for w in page.extract_words(extra_attrs=["size", "fontname"])
        if not any(_inside(w, bbox) for bbox, _ in tables)
    ]
    items = words + [{"x0": b[0], "top": b[1], "x1": b[2], "bottom": b[3], "rows": rows} for b, rows in tables]
    lines = []
    for region, members in enumerate(_regions(items, page.width)):
        for line in _group_lines(members):
            line.region = region
            lines.append(line)
    _mark_bands(lines, page.bbox[1], page.bbox[3])
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


def _drawn_once(page, chars):
    """The page with each character drawn twice in one place (text overprinted to look bold) read
    once. pdfplumber's dedupe_chars does this too, at 40% of the whole page's reading time."""
    seen, again = set(), set()
    for char in chars:
        key = (char["text"], round(char["x0"] * 2), round(char["top"] * 2))
        if key in seen:
            again.add(id(char))
        seen.add(key)
    return page.filter(lambda obj: id(obj) not in again) if again else page


def _looks_scanned(page, chars) -> bool:
    """No text layer (and something drawn), or almost none over an image that covers the page."""
    area = float(page.width * page.height) or 1.0
    images = page.images
    if not chars:
        return bool(images or page.rects or page.curves)
    return any(
        (min(i["x1"], page.bbox[2]) - max(i["x0"], page.bbox[0]))
        * (min(i["bottom"], page.bbox[3]) - max(i["top"], page.bbox[1]))
        >= OCR_IMAGE_SHARE * area
        for i in images
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
    )


# --- OCR ---------------------------------------------------------------------------------------


class _Ocr:
    """Scanned pages rendered by PDFium and read by Tesseract."""

    def __init__(self, data: bytes, languages: str, command: str):
        self.data, self.languages, self.command = data, languages, command
        self.document = None

    def read(self, number: int, count: int) -> _Page:
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
        image = self._render(number)
        pytesseract.pytesseract.tesseract_cmd = self.command
        # One thread: Tesseract's OpenMP threads spin against each other and the embedder's on a
        # small machine (a dense page took 13 s on 2 busy cores, 2.6 s single-threaded, 2026-11-26).
        # pytesseract runs it with its module's `environ`; this process's own stays as it is.
        pytesseract.pytesseract.environ = {**os.environ, "OMP_THREAD_LIMIT": "1"}
        try:
            found = pytesseract.image_to_data(
                image, lang=self.languages, output_type=pytesseract.Output.DICT, timeout=OCR_PAGE_SECONDS
            )
        except RuntimeError as exc:  # pytesseract's timeout
            raise PdfError(f"OCR of page {number} took more than {OCR_PAGE_SECONDS} s") from exc
        except pytesseract.TesseractError as exc:
            raise PdfError(f"OCR of page {number} failed: {_reason(exc)}") from exc
        return _ocr_page(number, found, image.height)

    def _render(self, number: int):
        import pypdfium2

        with _render_lock:
            try:
                if self.document is None:
                    self.document = pypdfium2.PdfDocument(self.data)
                page = self.document[number - 1]
                width, height = page.get_size()
                scale = min(OCR_DPI / 72, math.sqrt(OCR_MAX_PIXELS / max(width * height, 1.0)))
                return page.render(scale=scale, grayscale=True).to_pil()
            except pypdfium2.PdfiumError as exc:
                raise PdfError(f"cannot render page {number} for OCR: {_reason(exc)}") from exc


def _ocr_page(number: int, found: dict, image_height: int) -> _Page:
    """Tesseract's words (image_to_data) as lines, each in its paragraph; the mean confidence of its
    words (0-1; 0 when it read none)."""
    lines: dict[tuple, list[int]] = {}
    confidences = []
    for i, text in enumerate(found["text"]):
        confidence = float(found["conf"][i])
        if not text.strip() or confidence < 0:
            continue
        confidences.append(confidence / 100)
        if confidence < 60 and not any(c.isalnum() for c in text):
            continue  # specks read as punctuation
        key = (found["block_num"][i], found["par_num"][i], found["line_num"][i])
        lines.setdefault(key, []).append(i)
    page = _Page(number, confidence=round(statistics.fmean(confidences), 3) if confidences else 0.0)
    groups: dict[tuple, int] = {}
    for (block, paragraph, _), members in lines.items():
        top = min(found["top"][i] for i in members)
        bottom = max(found["top"][i] + found["height"][i] for i in members)
        page.lines.append(
            _Line(
                " ".join(found["text"][i].strip() for i in members),
                min(found["left"][i] for i in members),
                top,
                max(found["left"][i] + found["width"][i] for i in members),
                bottom,
                group=groups.setdefault((block, paragraph), len(groups)),
            )
        )
    _mark_bands(page.lines, 0, image_height)
    return page


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
    weights: Counter = Counter()  # characters by size, margins aside (a header's small print is no body)
    for page in pages:
        for line in page.lines:
            if line.size and not line.band:
                weights[line.size] += len(line.text)
    if not weights:
        for page in pages:
            for line in page.lines:
                if line.size:
                    weights[line.size] += len(line.text)
    body = weights.most_common(1)[0][0] if weights else 0.0
    larger = sorted((s for s in weights if s >= body + max(0.5, 0.08 * body)), reverse=True)
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
        from corpus.office import table_lines

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
        if level := self.levels.get(line.size):
            return level
        short = len(line.text) <= 80 and len(line.text.split()) <= 10 and line.text[-1:] not in ".,;:!?"
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
