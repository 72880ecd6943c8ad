"""The files documents are read from: kept so that a reader can go back from a cited passage to the
original, opened at its page, slide or rows.

An original is stored once, by the SHA-256 of its bytes (``ab/cd/<sha256><suffix>`` in the
"originals" storage of settings.STORAGES), however many documents were read from it. Ingesting a
file keeps it: a changed file's document points at the new one and the old one goes once no
document points at it; an unchanged file stores nothing. Text posted as JSON and a .jsonl's lines
have no original.

The way back (original_url) is built here only: a PDF opens in the browser's own viewer at
``#page=12``; a browser opens a deck or a workbook at no slide or row, so those open in Cairn's view
of the stored file read again by the Office reader (original_slide, original_sheet). What the reader
made of it is kept beside the original (``ab/cd/<sha256>.view.json.gz``, its slides or sheets,
compressed), so that only the first view reads the file: reading a large workbook takes seconds,
and each page of the view is a GET anyone who may read the document can repeat. It is kept in
the originals' storage rather than Django's cache (none is configured: each process would keep
its own copy in memory, tens of megabytes for a large workbook), shared by every process, and goes
with its original.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from urllib.parse import urlencode

from django.core.files.base import ContentFile
from django.db import transaction
from django.urls import reverse

from corpus.models import Chunk, Collection, Document, Original, originals_storage
from readers import locations
from readers.blocks import parse_blocks
from readers.formats import FORMATS

PDF, PPTX, XLSX = (FORMATS[suffix].mime_type for suffix in (".pdf", ".pptx", ".xlsx"))


@dataclass(frozen=True)
class OriginalFile:
    """A file to keep as its document's original: its name (the suffix says the format) and its
    bytes, or the path to read them from when they are kept (an ingest of a folder does not hold
    every file in memory)."""

    name: str
    data: bytes | None = None
    path: Path | None = None

    def read(self) -> bytes:
        return self.data if self.data is not None else self.path.read_bytes()


def originals_for(name: str, sources: list[str], *, data: bytes | None = None, path: Path | None = None):
    """The originals of the documents (`sources`) read from the file `name`: the file itself for each;
    none for a .jsonl, whose lines are documents of their own with no file behind them."""
    if PurePosixPath(name).suffix.lower() == ".jsonl":
        return {}
    return {source: OriginalFile(name, data, path) for source in sources}


def storage_name(sha256: str, suffix: str) -> str:
    return f"{sha256[:2]}/{sha256[2:4]}/{sha256}{suffix}"


# --- Keeping them ------------------------------------------------------------------------------


def originals_keep(*, collection: Collection, files: Mapping[str, OriginalFile]) -> int:
    """Point each active document of `collection` named by a source in `files` at its file, storing
    the bytes where no original holds them yet. A document whose original already has these bytes
    is left alone; one whose file changed lets its old original go (originals_release). Retracted
    documents keep theirs (ingesting a source does not touch a retracted document). Returns how many
    documents were pointed at a new original."""
    documents = Document.objects.filter(
        collection=collection, source__in=list(files), status=Document.Status.ACTIVE
    ).select_related("original")
    stored: list[tuple[Document, str, str, int, str]] = []
    for document in documents:
        file = files[document.source]
        data = file.read()
        sha256 = hashlib.sha256(data).hexdigest()
        if document.original is not None and document.original.sha256 == sha256:
            _file_store(document.original.file.name, data)  # nothing, unless its file was lost (a restore)
            continue
        suffix = PurePosixPath(file.name).suffix.lower()
        # Written before the transaction (a storage is not transactional); content-addressed, so a
        # file left by a rolled-back run is the same file the next run would write.
        stored.append((document, sha256, _file_store(storage_name(sha256, suffix), data), len(data), suffix))
    if not stored:
        return 0
    with transaction.atomic():
        replaced = [document.original_id for document, *_ in stored if document.original_id]
        for document, sha256, name, size, suffix in stored:
            mime_type = FORMATS[suffix].mime_type if suffix in FORMATS else "application/octet-stream"
            document.original, _ = Original.objects.get_or_create(
                sha256=sha256, defaults={"file": name, "size": size, "mime_type": mime_type}
            )
        Document.objects.bulk_update([document for document, *_ in stored], ["original"])
        originals_release(replaced)
    return len(stored)


def _file_store(name: str, data: bytes) -> str:
    """Store `data` under `name` unless it is there already (whole: a write cut short is redone)."""
    storage = originals_storage()
    if storage.exists(name):
        if storage.size(name) == len(data):
            return name
        storage.delete(name)
    return storage.save(name, ContentFile(data))


def originals_release(ids: list[int]) -> None:
    """Remove the originals among `ids` that no document points at any more: their rows now, their
    files once the transaction has committed (and only if no original has taken the name since)."""
    unused = Original.objects.filter(id__in=ids, documents__isnull=True)
    names = list(unused.values_list("file", "sha256"))
    if not names:
        return
    unused.delete()

    def delete_files() -> None:
        storage = originals_storage()
        for name, sha256 in names:
            if not Original.objects.filter(file=name).exists():
                storage.delete(name)
                storage.delete(view_name(sha256))

    transaction.on_commit(delete_files)


# --- The way back ------------------------------------------------------------------------------


def original_url(document_id: int, mime_type: str | None, location: dict | None = None) -> str | None:
    """Where a reader opens the original of document `document_id` (whose kept file is of
    `mime_type`; None when none is kept) at `location`: a PDF's page in the browser's viewer, a
    slide or a sheet's rows in Cairn's view of the file, else the file itself."""
    if not mime_type:
        return None
    location = location or {}
    if mime_type in (PPTX, XLSX):
        query: dict = {}
        if mime_type == PPTX and "slide" in location:
            query = {"slide": location["slide"]}
        elif mime_type == XLSX and "sheet" in location:
            query = {"sheet": location["sheet"]}
            if rows := location.get("rows"):
                query["row"] = rows[0]
                if rows[1] != rows[0]:
                    query["to"] = rows[1]
        view = reverse("document-original-view", args=[document_id])
        anchor = f"#row-{query['row']}" if "row" in query else ""
        return f"{view}?{urlencode(query)}{anchor}" if query else view
    url = download_url(document_id)
    if mime_type == PDF and "page" in location:
        return f"{url}#page={location['page']}"  # PDF viewers (Chromium's, Firefox's pdf.js) honour it
    return url


def download_url(document_id: int) -> str:
    """The original itself (what original_url opens at a place)."""
    return reverse("document-original", args=[document_id])


def place(chunk: Chunk | None) -> dict:
    """Where a chunk sits and the way to it, as the API and the pages give it: its location, the
    label a reader is shown ("page 12") and original_url (None without a kept original or chunk).
    The chunk's document and its original are read (select_related them)."""
    if chunk is None:
        return {"location": {}, "location_label": "", "original_url": None}
    document = chunk.document
    return {
        "location": chunk.location,
        "location_label": locations.label(chunk.location),
        "original_url": document_original_url(document, chunk.location),
    }


def document_original_url(document: Document, location: dict | None = None) -> str | None:
    """original_url for a document, None when it keeps no original or is retracted (its pages are
    "not found" then, the original too)."""
    if document.original_id is None or not document.is_active:
        return None
    return original_url(document.id, document.original.mime_type, location)


def original_filename(document: Document) -> str:
    """The name a downloaded original is saved under: the file's own name where its source says it
    (a path, "upload:report.pdf"), else the document's title, with the original's suffix."""
    suffix = PurePosixPath(document.original.file.name).suffix
    named = PurePosixPath(document.source.replace("\\", "/").rsplit(":", 1)[-1]).name
    stem = named[: -len(suffix)] if suffix and named.lower().endswith(suffix.lower()) else document.title
    stem = re.sub(r"[\x00-\x1f\x7f/\\\"]+", " ", stem).strip(" .") or "original"
    return f"{stem[:150]}{suffix}"


# --- Cairn's view of a deck or a workbook -------------------------------------------------------


@dataclass(frozen=True)
class Slide:
    number: int
    count: int  # slides in the deck
    title: str
    blocks: list[tuple[str, str]]  # (kind, text) as parse_blocks reads them: item, paragraph, row
    notes: str


@dataclass(frozen=True)
class SheetRow:
    number: int  # as the sheet numbers it
    cells: list[str]
    header: bool = False
    cited: bool = False


@dataclass(frozen=True)
class Sheet:
    name: str
    names: list[str]  # every sheet with text, in order
    rows: list[SheetRow]
    total: int  # rows with text in the sheet (rows shows at most MAX_SHEET_ROWS of them)
    cited: tuple[int, int] | None = None
    notes: list[str] = field(default_factory=list)


MAX_SHEET_ROWS = 500  # shown around the cited rows; the file itself has them all
_RULE = re.compile(r"^\|(?:\s*:?-+:?\s*\|)+\s*$")


class NotInOriginal(LookupError):
    """The place asked for is not in the file (a slide past the last, a sheet it does not have)."""


def view_name(sha256: str) -> str:
    """Where the view of an original is kept, beside it."""
    return storage_name(sha256, ".view.json.gz")


def _read_located(original: Original, suffix: str) -> str:
    from readers import office

    with original.file.open("rb") as handle:
        data = handle.read()
    reader = {".pptx": office.read_pptx, ".xlsx": office.read_xlsx}[suffix]
    return reader(data).text


def _viewed(original: Original, suffix: str, kind: str) -> list[tuple[dict, list[str]]]:
    """The original's slides or sheets (_sections): kept from an earlier view, else read from the
    file and kept. A kept copy that cannot be read (a write cut short) is read again and replaced."""
    storage, name = originals_storage(), view_name(original.sha256)
    if storage.exists(name):
        try:
            with storage.open(name, "rb") as handle:
                return [(found, lines) for found, lines in json.loads(gzip.decompress(handle.read()))]
        except (OSError, EOFError, ValueError, zlib.error):
            storage.delete(name)
    sections = _sections(_read_located(original, suffix), kind)
    saved = storage.save(name, ContentFile(gzip.compress(json.dumps(sections).encode(), compresslevel=6)))
    if saved != name:  # another request kept it first: this copy goes
        storage.delete(saved)
    return sections


def _sections(text: str, kind: str) -> list[tuple[dict, list[str]]]:
    """The text's lines grouped under each marker of `kind` ("slide", "sheet"), in order; the row
    markers within a sheet stay among its lines."""
    sections: list[tuple[dict, list[str]]] = []
    for line in text.split("\n"):
        found = locations.parse(line)
        if found is not None and kind in found and not (kind == "sheet" and "rows" in found):
            sections.append((found, []))
        elif sections:
            sections[-1][1].append(line)
    return sections


def original_slide(original: Original, number: int) -> Slide:
    """Slide `number` of a stored deck, as the PowerPoint reader reads it: its title, its text and
    tables, its speaker notes."""
    slides = _viewed(original, ".pptx", "slide")
    if not 1 <= number <= len(slides):
        raise NotInOriginal(f"the presentation has {len(slides)} slides")
    blocks = parse_blocks("\n".join(slides[number - 1][1]))
    title = next((b.text for b in blocks if b.kind == "heading"), f"Slide {number}")
    notes = " ".join(b.text.removeprefix("Notes: ") for b in blocks if b.text.startswith("Notes: "))
    body = [(b.kind, b.text) for b in blocks if b.kind != "heading" and not b.text.startswith("Notes: ")]
    return Slide(number=number, count=len(slides), title=title, blocks=body, notes=notes)


def original_sheet(original: Original, name: str | None, cited: tuple[int, int] | None = None) -> Sheet:
    """Sheet `name` (the first when None) of a stored workbook as the Excel reader reads it: its rows
    with text, numbered as the sheet numbers them, `cited` (first, last) marked; at most
    MAX_SHEET_ROWS, around the cited ones."""
    sheets = _viewed(original, ".xlsx", "sheet")
    names = [found["sheet"] for found, _ in sheets]
    if name is None and names:
        name = names[0]
    if name not in names:
        raise NotInOriginal(f"the workbook has no sheet {name!r}")
    rows: list[SheetRow] = []
    number = None
    for line in sheets[names.index(name)][1]:
        if (found := locations.parse(line)) is not None:
            number = found["rows"][0] if found.get("rows") else None
        elif line.startswith("|") and not _RULE.match(line) and number is not None:
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            within = cited is not None and cited[0] <= number <= cited[1]
            rows.append(SheetRow(number, cells, header=not rows, cited=within))
    total, notes = len(rows), []
    if total > MAX_SHEET_ROWS:
        centre = next((i for i, row in enumerate(rows) if row.cited), 0)
        start = max(1, min(centre - MAX_SHEET_ROWS // 2, total - MAX_SHEET_ROWS + 1))
        rows = [rows[0], *rows[start : start + MAX_SHEET_ROWS - 1]]  # the header row stays on top
        notes.append(f"Rows {rows[1].number}–{rows[-1].number} of the sheet's {total} rows with text are shown.")
    return Sheet(name=name, names=names, rows=rows, total=total, cited=cited, notes=notes)
