"""Turn files into plain-text documents. Each supported format has one small reader."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class ExtractedDocument:
    title: str
    text: str
    source: str
    mime_type: str
    metadata: dict = field(default_factory=dict)


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


def extract_file(path: Path, *, source: str | None = None) -> Iterator[ExtractedDocument | ExtractionFailure]:
    """Yield the documents in one file (several for .jsonl). Raise ExtractionError if it is unreadable."""
    suffix = path.suffix.lower()
    source = source or source_name(path)
    if suffix not in MIME_TYPES:
        raise ExtractionError(f"unsupported file type {suffix!r}")
    if suffix == ".jsonl":
        yield from _read_jsonl(path, source)
        return
    if suffix == ".pdf":
        title, text = _read_pdf(path)
    else:
        raw = _read_text(path)
        title, text = _read_html(raw) if suffix in (".html", ".htm") else (_markdown_title(raw), raw)
    text = text.strip()
    if not text:
        raise ExtractionError("no extractable text")
    yield ExtractedDocument(
        title=(title or _title_from_name(path))[:500], text=text, source=source, mime_type=MIME_TYPES[suffix]
    )


def extract_bytes(name: str, data: bytes, *, source: str) -> list[ExtractedDocument | ExtractionFailure]:
    """Extract an uploaded file by way of a temporary copy (pypdf and the readers want a path)."""
    import tempfile

    suffix = Path(name).suffix.lower()
    if suffix not in MIME_TYPES:
        raise ExtractionError(f"unsupported file type {suffix!r}; supported: {', '.join(sorted(MIME_TYPES))}")
    fd, tmp = tempfile.mkstemp(suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        items = list(extract_file(Path(tmp), source=source))
    finally:
        os.unlink(tmp)
    for item in items:
        if isinstance(item, ExtractedDocument) and item.title == _title_from_name(Path(tmp)):
            item.title = _title_from_name(Path(name))
    return items


def _read_text(path: Path) -> str:
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def _title_from_name(path: Path) -> str:
    return re.sub(r"[_-]+", " ", path.stem).strip() or path.name


def _markdown_title(text: str) -> str:
    match = re.search(r"^#\s+(.+)$", text, flags=re.MULTILINE)
    return match.group(1).strip() if match else ""


def _read_html(raw: str) -> tuple[str, str]:
    from corpus.html import NavigationPage, html_to_blocks

    try:
        return html_to_blocks(raw)
    except NavigationPage as exc:
        raise ExtractionError(str(exc)) from exc


def _read_pdf(path: Path) -> tuple[str, str]:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(path)
        pages = [page.extract_text() or "" for page in reader.pages]
        title = (reader.metadata.title if reader.metadata else None) or ""
    except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
        raise ExtractionError(f"cannot read PDF: {exc}") from exc
    return str(title).strip(), "\n\n".join(pdf_paragraphs(page) for page in pages)


_LINE_END = re.compile(r"[.!?:;][\"'\u201d\u2019)\]]*$")


def pdf_paragraphs(page: str) -> str:
    """A PDF page's text layer, one line per printed line, as paragraphs set apart by blank lines
    (the block model the chunker reads). A line that is short for the page and ends a sentence
    ends its paragraph; a short unpunctuated line after a finished sentence and before a
    capitalised line is a paragraph of its own (a heading: "3.2 Backups"). Words hyphenated
    across lines are joined."""
    lines = [line.strip() for line in page.splitlines()]
    lengths = sorted(len(line) for line in lines if line)
    if not lengths:
        return ""
    typical = lengths[len(lengths) // 2]
    paragraphs: list[list[str]] = [[]]
    for i, line in enumerate(lines):
        current = paragraphs[-1]
        if not line:
            if current:
                paragraphs.append([])
            continue
        if current and current[-1].endswith("-") and line[:1].islower():
            current[-1] = current[-1][:-1] + line  # "con-" + "figured"
            continue
        following = next((n for n in lines[i + 1 :] if n), "")
        heading = (
            len(line) < 0.6 * typical
            and len(line.split()) <= 8
            and not _LINE_END.search(line)
            and following[:1].isupper()
            and (not current or _LINE_END.search(current[-1]))
        )
        if heading and current:
            paragraphs.append([])
        paragraphs[-1].append(line)
        if heading or (len(line) < 0.8 * typical and _LINE_END.search(line)):
            paragraphs.append([])
    return "\n\n".join(" ".join(p) for p in paragraphs if p)


def _read_jsonl(path: Path, source: str) -> Iterator[ExtractedDocument | ExtractionFailure]:
    seen: dict[str, int] = {}
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
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
