"""Turn files into plain-text documents: each file is checked and read as its row of the format
table says (readers.formats), an e-mail with the documents attached to it, a JSON Lines file as
many documents."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from readers import locations
from readers.formats import FORMATS, File, PageHook
from readers.reading import ReadError, Reading


@dataclass
class ExtractedDocument:
    title: str
    text: str
    source: str
    mime_type: str
    metadata: dict = field(default_factory=dict)
    # Whether `text` holds location markers its reader wrote (readers.locations); in any other text the
    # marker character is a line break, so typed text cannot claim a page.
    located: bool = False


@dataclass
class ExtractionFailure:
    name: str  # the file (and line) that failed
    reason: str


class ExtractionError(Exception):
    """A file that cannot be read as a document; the message says why."""


def is_supported(path: Path) -> bool:
    return path.suffix.lower() in FORMATS


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
    if path.suffix.lower() not in FORMATS:
        raise ExtractionError(f"unsupported file type {path.suffix.lower()!r}")
    yield from _extract(str(path), path.read_bytes(), source=source or source_name(path), charset=None, on_page=on_page)


def extract_bytes(
    name: str, data: bytes, *, source: str, charset: str | None = None, on_page: PageHook | None = None
) -> list[ExtractedDocument | ExtractionFailure]:
    """Extract an uploaded file named `name` (what its failures are named after). `charset` is the
    encoding its sender declared, if any. Raise ExtractionError as extract_file does."""
    suffix = Path(name).suffix.lower()
    if suffix not in FORMATS:
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
    form = FORMATS[suffix]
    try:
        raw = form.check(suffix, data, charset)
    except ReadError as exc:
        raise ExtractionError(str(exc)) from exc
    if form.read is None:
        yield from _read_jsonl(raw, name, source)
        return
    if suffix == ".eml" and attached:
        from django.conf import settings

        deadline = time.monotonic() + settings.CAIRN_EMAIL_SECONDS
    left = None if deadline is None else max(0.0, deadline - time.monotonic())
    try:
        reading = form.read(File(name, data, raw, seconds=left, on_page=on_page))
    except ReadError as exc:
        raise ExtractionError(str(exc)) from exc
    if suffix == ".eml" and attached:
        reading = _with_attachments(reading, data, source, deadline)
    text = reading.text.strip()
    if not (locations.without_markers(text) if reading.located else text).strip():
        raise ExtractionError("no extractable text")
    yield ExtractedDocument(
        title=(reading.title or _title_from_name(Path(name)))[:500],
        text=text,
        source=source,
        mime_type=FORMATS[suffix].mime_type,
        metadata=reading.metadata,
        located=reading.located,
    )


# --- Content checks: the bytes must be what the name claims, whatever the extension says ------


def content_problem(name: str, data: bytes, *, charset: str | None = None) -> str | None:
    """Why the bytes of the file `name` are not text in the format its extension claims, or None.
    A PDF's text layer is checked when it is read (it takes parsing)."""
    suffix = Path(name).suffix.lower()
    if suffix not in FORMATS:
        return _unsupported(suffix)
    try:
        FORMATS[suffix].check(suffix, data, charset)
    except ReadError as exc:
        return str(exc)
    return None


def _unsupported(suffix: str) -> str:
    return f"unsupported file type {suffix!r}; supported: {', '.join(sorted(FORMATS))}"


def _title_from_name(path: Path) -> str:
    return re.sub(r"[_-]+", " ", path.stem).strip() or path.name


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

    from readers.mail import attachments

    most, seconds = settings.CAIRN_EMAIL_MAX_ATTACHMENTS, settings.CAIRN_EMAIL_SECONDS
    sections, read, unread, tried = [reading.text], [], {}, 0
    for name, payload in attachments(data):
        form = FORMATS.get(Path(name).suffix.lower())
        if form is None or form.read is None:  # not a format read, or a batch of documents (JSON Lines)
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
