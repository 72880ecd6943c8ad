"""Turn files into plain-text documents. Each supported format has one small reader."""

from __future__ import annotations

import codecs
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from corpus import locations
from corpus.reading import Reading
from corpus.signatures import binary_signature

PageHook = Callable[[int, int, bool], None]  # (page number, page count, read by OCR), after each PDF page


@dataclass
class ExtractedDocument:
    title: str
    text: str
    source: str
    mime_type: str
    metadata: dict = field(default_factory=dict)
    # Whether `text` holds location markers its reader wrote (corpus.locations); in any other text the
    # marker character is a line break, so typed text cannot claim a page.
    located: bool = False


@dataclass
class ExtractionFailure:
    name: str  # the file (and line) that failed
    reason: str


class ExtractionError(Exception):
    """A file that cannot be read as a document; the message says why."""


MIME_TYPES = {
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
    ".jsonl": "application/jsonl",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".csv": "text/csv",
    ".tsv": "text/tab-separated-values",
    ".docm": "application/vnd.ms-word.document.macroEnabled.12",
    ".pptm": "application/vnd.ms-powerpoint.presentation.macroEnabled.12",
    ".xlsm": "application/vnd.ms-excel.sheet.macroEnabled.12",
    ".odt": "application/vnd.oasis.opendocument.text",
    ".ods": "application/vnd.oasis.opendocument.spreadsheet",
    ".odp": "application/vnd.oasis.opendocument.presentation",
    ".doc": "application/msword",
    ".ppt": "application/vnd.ms-powerpoint",
    ".xls": "application/vnd.ms-excel",
    ".rtf": "application/rtf",
    ".eml": "message/rfc822",
}


def is_supported(path: Path) -> bool:
    return path.suffix.lower() in MIME_TYPES


def discover_files(paths: list[Path]) -> tuple[list[Path], list[ExtractionFailure]]:
    """Expand folders recursively; report missing paths and unsupported files by name."""
    files: list[Path] = []
    failures: list[ExtractionFailure] = []
    for path in paths:
        if path.is_dir():
            for candidate in sorted(p for p in path.rglob("*") if p.is_file()):
                if candidate.name.startswith("."):
                    continue
                if is_supported(candidate):
                    files.append(candidate)
                else:
                    failures.append(ExtractionFailure(str(candidate), f"unsupported file type {candidate.suffix!r}"))
        elif path.is_file():
            if is_supported(path):
                files.append(path)
            else:
                failures.append(ExtractionFailure(str(path), f"unsupported file type {path.suffix!r}"))
        else:
            failures.append(ExtractionFailure(str(path), "no such file or folder"))
    return files, failures


def source_name(path: Path) -> str:
    """Name a file by its path relative to the working directory when inside it, else absolutely,
    so that re-running the same command recognises the same documents."""
    resolved = path.resolve()
    try:
        return str(resolved.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(resolved)


def extract_file(
    path: Path, *, source: str | None = None, on_page: PageHook | None = None
) -> Iterator[ExtractedDocument | ExtractionFailure]:
    """Yield the documents in one file (several for .jsonl). Raise ExtractionError if it is unreadable
    or its bytes are not text in the format its name claims (content_problem). `on_page(number,
    count, ocr)` hears of each PDF page read (OCR takes seconds a page)."""
    if path.suffix.lower() not in MIME_TYPES:
        raise ExtractionError(f"unsupported file type {path.suffix.lower()!r}")
    yield from _extract(str(path), path.read_bytes(), source=source or source_name(path), charset=None, on_page=on_page)


def extract_bytes(
    name: str, data: bytes, *, source: str, charset: str | None = None, on_page: PageHook | None = None
) -> list[ExtractedDocument | ExtractionFailure]:
    """Extract an uploaded file named `name` (what its failures are named after). `charset` is the
    encoding its sender declared, if any. Raise ExtractionError as extract_file does."""
    suffix = Path(name).suffix.lower()
    if suffix not in MIME_TYPES:
        raise ExtractionError(_unsupported(suffix))
    return list(_extract(name, data, source=source, charset=charset, on_page=on_page))


def _extract(
    name: str,
    data: bytes,
    *,
    source: str,
    charset: str | None,
    on_page: PageHook | None = None,
    attached: bool = True,
    deadline: float | None = None,
) -> Iterator[ExtractedDocument | ExtractionFailure]:
    """The documents in a file; `attached` reads an e-mail's attachments into it, and `deadline`
    (time.monotonic) is when the e-mail a file is attached to must be read by."""
    suffix = Path(name).suffix.lower()
    raw = _checked_content(suffix, data, charset=charset)
    if suffix == ".jsonl":
        yield from _read_jsonl(raw, name, source)
        return
    if suffix == ".eml" and attached:
        from django.conf import settings

        deadline = time.monotonic() + settings.CAIRN_EMAIL_SECONDS
    left = None if deadline is None else max(0.0, deadline - time.monotonic())
    if suffix == ".pdf":
        reading = _read_pdf(data, on_page, left)
    elif suffix in OFFICE_SUFFIXES:
        reading = _read_office(suffix, data, left)
        if suffix == ".eml" and attached:
            reading = _with_attachments(reading, data, source, deadline)
    elif suffix in (".csv", ".tsv"):
        reading = _read_delimited(suffix, raw, Path(name).stem)
    else:
        title, text = _read_text(suffix, raw)
        reading = Reading(text, title)
    text = reading.text.strip()
    if not (locations.without_markers(text) if reading.located else text).strip():
        raise ExtractionError("no extractable text")
    yield ExtractedDocument(
        title=(reading.title or _title_from_name(Path(name)))[:500],
        text=text,
        source=source,
        mime_type=MIME_TYPES[suffix],
        metadata=reading.metadata,
        located=reading.located,
    )


# --- Content checks: the bytes must be what the name claims, whatever the extension says ------

# Text is refused when more than this share of its characters are control characters (other than
# tab, newline, carriage return, form feed, vertical tab) or U+FFFD (text already garbled by a
# wrong decoding). Real prose, code, logs with colour escapes stay far below it; bytes decoded
# from noise (a declared single-byte charset accepts any byte) land near 25%.
MAX_UNPRINTABLE_RATIO = 0.05
_UNPRINTABLE = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f\ufffd]")

_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def content_problem(name: str, data: bytes, *, charset: str | None = None) -> str | None:
    """Why the bytes of the file `name` are not text in the format its extension claims, or None.
    A PDF's text layer is checked when it is read (it takes parsing)."""
    suffix = Path(name).suffix.lower()
    if suffix not in MIME_TYPES:
        return _unsupported(suffix)
    try:
        _checked_content(suffix, data, charset=charset)
    except ExtractionError as exc:
        return str(exc)
    return None


def _unsupported(suffix: str) -> str:
    return f"unsupported file type {suffix!r}; supported: {', '.join(sorted(MIME_TYPES))}"


def _checked_content(suffix: str, data: bytes, *, charset: str | None) -> str:
    """The decoded text of a text format ("" for a PDF or an Office package, read by their libraries);
    ExtractionError if the bytes are not what `suffix` claims. Every path into the corpus from a
    file passes here: an Office package's ZIP directory is checked (zip bombs too) before any read."""
    if suffix == ".pdf":
        if b"%PDF-" not in data[:1024]:  # the header may follow a little junk (readers accept it)
            raise ExtractionError("not a PDF (no %PDF- header)")
        return ""
    if suffix in PACKAGE_SUFFIXES:
        from corpus.office import zip_problem

        if problem := zip_problem(suffix, data):
            raise ExtractionError(problem)
        return ""
    if suffix in LEGACY_SUFFIXES:  # OLE2 files: accepted under their own names only
        from corpus.legacy import legacy_problem

        if problem := legacy_problem(suffix, data):
            raise ExtractionError(problem)
        return ""
    if suffix in (".eml", ".rtf"):
        from corpus.mail import email_problem, rtf_problem

        if binary := binary_signature(data):
            raise ExtractionError(f"the content is {binary}, not {'an e-mail message' if suffix == '.eml' else 'RTF'}")
        if b"\x00" in data:
            raise ExtractionError("the content holds NUL bytes: a binary file, not text")
        if problem := (email_problem(data) if suffix == ".eml" else rtf_problem(data)):
            raise ExtractionError(problem)
        return ""
    if binary := binary_signature(data):
        raise ExtractionError(f"the content is {binary}, not text")
    text = _decode(data, charset)
    if "\x00" in text:
        raise ExtractionError("the content holds NUL bytes: a binary file, not text")
    if text and len(_UNPRINTABLE.findall(text)) > MAX_UNPRINTABLE_RATIO * len(text):
        raise ExtractionError(
            f"more than {MAX_UNPRINTABLE_RATIO:.0%} of its characters are control characters: binary data, not text"
        )
    return text


def _decode(data: bytes, charset: str | None) -> str:
    """Decode strictly: as the declared `charset`; undeclared, as UTF-8 (a BOM allowed) or as UTF-16
    when a UTF-16 BOM says so. Never a guess: a wrong guess (cp1252) stores mojibake for good."""
    if charset:
        try:
            codec = codecs.lookup(charset).name
        except LookupError:
            raise ExtractionError(f"unknown charset {charset!r}") from None
        if codec == "utf-8":
            codec = "utf-8-sig"
        label = f"declared charset {charset!r}"
    elif data.startswith(_UTF16_BOMS):
        codec, label = "utf-16", "UTF-16 (by its byte order mark)"
    else:
        codec, label = "utf-8-sig", "UTF-8"
    try:
        return data.decode(codec)
    except UnicodeDecodeError as exc:
        raise ExtractionError(
            f"not valid {label}: byte 0x{data[exc.start]:02x} at offset {exc.start}; "
            "save it as UTF-8 or declare its charset"
        ) from None
    except LookupError:  # a codec that is not a text encoding ("base64", "rot13")
        raise ExtractionError(f"charset {charset!r} is not a text encoding") from None


def _title_from_name(path: Path) -> str:
    return re.sub(r"[_-]+", " ", path.stem).strip() or path.name


def _read_text(suffix: str, raw: str) -> tuple[str, str]:
    if suffix in (".html", ".htm"):
        return _read_html(raw)
    if suffix in (".md", ".markdown"):
        from corpus.markdown import read_markdown

        return read_markdown(raw)
    from corpus.manpage import is_manpage, manpage_blocks

    if is_manpage(raw):  # `man ls | col -b` saved as text: sections, paragraphs and options, not one run
        return "", "\n\n".join(manpage_blocks(raw))
    return _markdown_title(raw), raw


def _markdown_title(text: str) -> str:
    match = re.search(r"^#\s+(.+)$", text, flags=re.MULTILINE)
    return match.group(1).strip() if match else ""


def _read_html(raw: str) -> tuple[str, str]:
    from bs4.exceptions import ParserRejectedMarkup

    from corpus.html import NavigationPage, TooDeep, html_to_blocks

    try:
        return html_to_blocks(raw)
    except NavigationPage as exc:
        raise ExtractionError(str(exc)) from exc
    except TooDeep as exc:
        raise ExtractionError(f"cannot read HTML: {exc}") from exc
    except ParserRejectedMarkup as exc:  # markup html.parser gives up on ("<![" and no name): a 400, not a 500
        raise ExtractionError("cannot read HTML: the parser rejected the markup") from exc


# ZIP packages (their directory checked by corpus.office.zip_problem) and OLE2 files (converted
# by LibreOffice, corpus.legacy); e-mail and RTF are read from their bytes.
PACKAGE_SUFFIXES = (".docx", ".pptx", ".xlsx", ".docm", ".pptm", ".xlsm", ".odt", ".ods", ".odp")
LEGACY_SUFFIXES = (".doc", ".ppt", ".xls")
OFFICE_SUFFIXES = (*PACKAGE_SUFFIXES, *LEGACY_SUFFIXES, ".eml", ".rtf")


def _read_office(suffix: str, data: bytes, seconds: float | None = None) -> Reading:
    """A Word, PowerPoint, Excel, OpenDocument, legacy Office, e-mail or RTF file (its bytes
    already checked by _checked_content) as block text; a legacy file's conversion within `seconds`
    when fewer than its own limit are left."""
    from corpus import legacy, mail, office, opendocument

    named = {**office.PACKAGES, **office.ODF_PACKAGES, **legacy.LEGACY}
    what = named[suffix][0] if suffix in named else {".eml": "an e-mail message", ".rtf": "an RTF document"}[suffix]
    readers = {
        ".docx": office.read_docx,
        ".docm": office.read_docx,
        ".pptx": office.read_pptx,
        ".pptm": office.read_pptx,
        ".xlsx": office.read_xlsx,
        ".xlsm": office.read_xlsx,
        ".odt": opendocument.read_odt,
        ".ods": opendocument.read_ods,
        ".odp": opendocument.read_odp,
        ".eml": mail.read_eml,
        ".rtf": mail.read_rtf,
    }
    try:
        if suffix in LEGACY_SUFFIXES:
            converted = "." + legacy.LEGACY[suffix][2]
            reading = readers[converted](legacy.convert(suffix, data, seconds=seconds))
            reading.metadata["converted_by"] = "LibreOffice"
            if legacy.has_macros(data):
                reading.metadata["macros"] = "not run"
        else:
            reading = readers[suffix](data)
    except office.OfficeError as exc:
        raise ExtractionError(str(exc)) from exc
    except Exception as exc:  # noqa: BLE001 - hostile input: any parser failure is the file's, a 400
        detail = str(exc).strip() or type(exc).__name__
        if type(exc).__module__.startswith("defusedxml") or "amplification" in detail:
            # defusedxml refuses any entity declaration; lxml (python-docx, -pptx) stops expanding one
            detail = f"its XML declares entities, refused (an entity-expansion attack?): {detail[:200]}"
        raise ExtractionError(f"cannot read {what}: {detail[:300]}") from exc
    if suffix in office.MACRO_ENABLED:
        reading.metadata["macros"] = "not run"  # read as a document; its VBA project is never opened
    return reading


def _with_attachments(reading: Reading, data: bytes, source: str, deadline: float) -> Reading:
    """An e-mail with the documents attached to it: each one Cairn reads (a PDF, a Word file, a
    workbook, a forwarded message without its own attachments) follows the message's text as a
    section "Attachment: NAME", its headings one level down, its pages' places left out (the
    original is the message). One that cannot be read is named with the reason in metadata
    "attachments_unread", and the message is still read; other files (images, archives) are only
    named, in "attachments". A message may carry thousands: the first CAIRN_EMAIL_MAX_ATTACHMENTS
    are read, by `deadline` (the message's CAIRN_EMAIL_SECONDS, which each reader is given what is
    left of), and the others are named unread with the reason."""
    from django.conf import settings

    from corpus.mail import attachments

    most, seconds = settings.CAIRN_EMAIL_MAX_ATTACHMENTS, settings.CAIRN_EMAIL_SECONDS
    sections, read, unread, tried = [reading.text], [], {}, 0
    for name, payload in attachments(data):
        if Path(name).suffix.lower() not in MIME_TYPES or name.lower().endswith(".jsonl"):
            continue
        if tried == most:
            unread[name] = f"not read: only the first {most} documents attached are read (CAIRN_EMAIL_MAX_ATTACHMENTS)"
            continue
        if time.monotonic() >= deadline:
            unread[name] = f"not read: the message and its attachments had {seconds:g} s (CAIRN_EMAIL_SECONDS)"
            continue
        tried += 1
        try:
            found = [d for d in _extract(name, payload, source=source, charset=None, attached=False, deadline=deadline)
                     if isinstance(d, ExtractedDocument)]  # fmt: skip
        except ExtractionError as exc:
            unread[name] = str(exc)[:300]
            continue
        for document in found:
            text = locations.without_markers(document.text) if document.located else document.text
            sections.append(f"# Attachment: {name}\n\n{_demoted(text.strip())}")
        read.append(name)
    if read:
        reading.metadata["attachments_read"] = read
    if unread:
        reading.metadata["attachments_unread"] = unread
    return Reading("\n\n".join(s for s in sections if s.strip()), reading.title, reading.metadata)


def _demoted(text: str) -> str:
    """Block text with its headings one level down ("# " stays out of fenced code)."""
    lines, fenced = [], False
    for line in text.split("\n"):
        if line.startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,5} ", line):
            line = "#" + line
        lines.append(line)
    return "\n".join(lines)


def _read_delimited(suffix: str, raw: str, name: str) -> Reading:
    from corpus.office import OfficeError, read_delimited

    try:
        return read_delimited(raw, delimiter="\t" if suffix == ".tsv" else ",", name=name)
    except OfficeError as exc:
        raise ExtractionError(str(exc)) from exc


def _read_pdf(data: bytes, on_page: PageHook | None, seconds: float | None = None) -> Reading:
    """A PDF as its pages show it (corpus/pdf.py): layout read, scanned pages OCR'd, within `seconds`
    when fewer than CAIRN_PDF_SECONDS are left."""
    from corpus.pdf import PdfError, read_pdf

    try:
        return read_pdf(data, on_page=on_page, seconds=seconds)
    except PdfError as exc:
        raise ExtractionError(str(exc)) from exc


def _read_jsonl(raw: str, name: str, source: str) -> Iterator[ExtractedDocument | ExtractionFailure]:
    seen: dict[str, int] = {}
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{name}:{number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            yield ExtractionFailure(where, f"invalid JSON: {exc.msg}")
            continue
        if not isinstance(item, dict):
            yield ExtractionFailure(where, "each line must be a JSON object with 'title' and 'text'")
            continue
        title, text = item.get("title"), item.get("text")
        missing = [k for k, v in (("title", title), ("text", text)) if not isinstance(v, str) or not v.strip()]
        if missing:
            yield ExtractionFailure(where, f"missing or empty {' and '.join(repr(m) for m in missing)}")
            continue
        # A line names itself by `source`, else `id`, else its title (numbered when repeated).
        key = str(item.get("source") or item.get("id") or title)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            key = f"{key} ({seen[key]})"
        metadata = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
        yield ExtractedDocument(
            title=title.strip()[:500],
            text=text.strip(),
            source=item["source"] if isinstance(item.get("source"), str) else f"{source}#{key}",
            mime_type="text/plain",
            metadata=metadata,
        )
