"""Every format Cairn reads, in one table: FORMATS maps a file's suffix to what the format is called,
its MIME type, the check its bytes must pass before any reader opens them, and its reader. Upload,
ingestion, an e-mail's attachments and the sources' connectors consult this table alone, so a new
format is a reader module and one row here (readers/restructuredtext.py is one).

A check gets (suffix, bytes, the charset the sender declared) and returns the decoded text of a
text format, "" for a binary one (its library reads the bytes); it raises ReadError when the bytes
are not what the suffix claims, whatever the extension says. Every path into the corpus from a file
passes one: an Office package's ZIP directory is checked (zip bombs too) before any library opens
it; a PDF's text layer is checked when it is read (that takes parsing). A reader gets a File and
returns a Reading, raising ReadError when it cannot read it.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from dataclasses import dataclass

from readers import delimited, legacy, mail, office, opendocument, rtf
from readers.reading import ReadError, Reading
from readers.signatures import binary_signature

PageHook = Callable[[int, int, bool], None]  # (page number, page count, read by OCR), after each PDF page


@dataclass(frozen=True)
class File:
    """What a reader is handed: the file's name and bytes, the text its check decoded ("" for a
    binary format), what is left of the time it may take (None: its format's own limit) and who
    hears of each PDF page read."""

    name: str
    data: bytes
    text: str = ""
    seconds: float | None = None
    on_page: PageHook | None = None


@dataclass(frozen=True)
class Format:
    what: str  # "a Word document": how messages name it
    mime_type: str
    check: Callable[[str, bytes, str | None], str]
    read: Callable[[File], Reading] | None  # None: a batch of documents (JSON Lines), split by readers.extract


# --- Checks ----------------------------------------------------------------------------------

# Text is refused when more than this share of its characters are control characters (other than
# tab, newline, carriage return, form feed, vertical tab) or U+FFFD (text already garbled by a
# wrong decoding). Real prose, code, logs with colour escapes stay far below it; bytes decoded
# from noise (a declared single-byte charset accepts any byte) land near 25%.
MAX_UNPRINTABLE_RATIO = 0.05
_UNPRINTABLE = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f\ufffd]")

_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def text_check(suffix: str, data: bytes, charset: str | None) -> str:
    """Text, strictly decoded, that is not a binary file under a text name."""
    if binary := binary_signature(data):
        raise ReadError(f"the content is {binary}, not text")
    text = decoded(data, charset)
    if "\x00" in text:
        raise ReadError("the content holds NUL bytes: a binary file, not text")
    if text and len(_UNPRINTABLE.findall(text)) > MAX_UNPRINTABLE_RATIO * len(text):
        raise ReadError(
            f"more than {MAX_UNPRINTABLE_RATIO:.0%} of its characters are control characters: binary data, not text"
        )
    return text


def decoded(data: bytes, charset: str | None) -> str:
    """Decode strictly: as the declared `charset`; undeclared, as UTF-8 (a BOM allowed) or as UTF-16
    when a UTF-16 BOM says so. Never a guess: a wrong guess (cp1252) stores mojibake for good."""
    if charset:
        try:
            codec = codecs.lookup(charset).name
        except LookupError:
            raise ReadError(f"unknown charset {charset!r}") from None
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
        raise ReadError(
            f"not valid {label}: byte 0x{data[exc.start]:02x} at offset {exc.start}; "
            "save it as UTF-8 or declare its charset"
        ) from None
    except LookupError:  # a codec that is not a text encoding ("base64", "rot13")
        raise ReadError(f"charset {charset!r} is not a text encoding") from None


def _pdf_check(suffix: str, data: bytes, charset: str | None) -> str:
    if b"%PDF-" not in data[:1024]:  # the header may follow a little junk (readers accept it)
        raise ReadError("not a PDF (no %PDF- header)")
    return ""


def _package_check(suffix: str, data: bytes, charset: str | None) -> str:
    if problem := office.zip_problem(suffix, data):
        raise ReadError(problem)
    return ""


def _legacy_check(suffix: str, data: bytes, charset: str | None) -> str:
    """OLE2 files: accepted under their own names only."""
    if problem := legacy.legacy_problem(suffix, data):
        raise ReadError(problem)
    return ""


def _bytes_check(what: str, problem: Callable[[bytes], str | None]):
    """A text format its reader decodes itself (an e-mail's parts, RTF's code page): not a binary
    file, no NUL bytes, and what `problem` finds wrong with its start."""

    def check(suffix: str, data: bytes, charset: str | None) -> str:
        if binary := binary_signature(data):
            raise ReadError(f"the content is {binary}, not {what}")
        if b"\x00" in data:
            raise ReadError("the content holds NUL bytes: a binary file, not text")
        if found := problem(data):
            raise ReadError(found)
        return ""

    return check


# --- Readers ---------------------------------------------------------------------------------


def _plain(file: File) -> Reading:
    from readers.manpage import is_manpage, manpage_blocks

    if is_manpage(file.text):  # `man ls | col -b` saved as text: sections, paragraphs and options, not one run
        return Reading("\n\n".join(manpage_blocks(file.text)))
    match = re.search(r"^#\s+(.+)$", file.text, flags=re.MULTILINE)
    return Reading(file.text, match.group(1).strip() if match else "")


def _markdown(file: File) -> Reading:
    from readers.markdown import read_markdown

    title, text = read_markdown(file.text)
    return Reading(text, title)


def _html(file: File) -> Reading:
    from bs4.exceptions import ParserRejectedMarkup

    from readers.html import NavigationPage, TooDeep, html_to_blocks

    try:
        title, text = html_to_blocks(file.text)
    except NavigationPage as exc:
        raise ReadError(str(exc)) from exc
    except TooDeep as exc:
        raise ReadError(f"cannot read HTML: {exc}") from exc
    except ParserRejectedMarkup as exc:  # markup html.parser gives up on ("<![" and no name): a 400, not a 500
        raise ReadError("cannot read HTML: the parser rejected the markup") from exc
    return Reading(text, title)


def _pdf(file: File) -> Reading:
    """A PDF as its pages show it (readers/pdf.py): layout read, scanned pages OCR'd."""
    from readers.pdf import read_pdf

    return read_pdf(file.data, on_page=file.on_page, seconds=file.seconds)


def _delimited(delimiter: str):
    def read(file: File) -> Reading:
        from pathlib import Path

        return delimited.read_delimited(file.text, delimiter=delimiter, name=Path(file.name).stem)

    return read


def _document(what: str, reader: Callable[[File], Reading], *, macros: bool = False):
    """A reader of an untrusted binary document through its library: any failure of the library is
    the file's (a 400 naming it), never a 500. A macro-enabled file is read as a document; its VBA
    project is never opened."""

    def read(file: File) -> Reading:
        try:
            reading = reader(file)
        except ReadError:
            raise
        except Exception as exc:  # noqa: BLE001 - hostile input: any parser failure is the file's, a 400
            raise ReadError(f"cannot read {what}: {_failure(exc)}") from exc
        if macros:
            reading.metadata["macros"] = "not run"
        return reading

    return read


def _failure(exc: Exception) -> str:
    detail = str(exc).strip() or type(exc).__name__
    if type(exc).__module__.startswith("defusedxml") or "amplification" in detail:
        # defusedxml refuses any entity declaration; lxml (python-docx, -pptx) stops expanding one
        detail = f"its XML declares entities, refused (an entity-expansion attack?): {detail[:200]}"
    return detail[:300]


_PACKAGE_READERS = {"docx": office.read_docx, "pptx": office.read_pptx, "xlsx": office.read_xlsx}


def _legacy(suffix: str):
    """A Word, PowerPoint or Excel 97-2003 file, converted by LibreOffice (readers/legacy.py) to its
    package and read as one, within the time left when that is less than the conversion's own."""
    what, _, target, _ = legacy.LEGACY[suffix]

    def read(file: File) -> Reading:
        reading = _PACKAGE_READERS[target](legacy.convert(suffix, file.data, seconds=file.seconds))
        reading.metadata["converted_by"] = "LibreOffice"
        if legacy.has_macros(file.data):
            reading.metadata["macros"] = "not run"
        return reading

    return _document(what, read)


def _rst(file: File) -> Reading:
    from readers.restructuredtext import read_rst

    return read_rst(file.text, seconds=file.seconds)


def _of_bytes(reader: Callable[[bytes], Reading]) -> Callable[[File], Reading]:
    return lambda file: reader(file.data)


def _package(suffix: str, reader: Callable[[bytes], Reading]) -> Format:
    what = (office.PACKAGES.get(suffix) or office.ODF_PACKAGES[suffix])[0]
    read = _document(what, _of_bytes(reader), macros=suffix in office.MACRO_ENABLED)
    return Format(what, MIME[suffix], _package_check, read)


MIME = {
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".docm": "application/vnd.ms-word.document.macroEnabled.12",
    ".pptm": "application/vnd.ms-powerpoint.presentation.macroEnabled.12",
    ".xlsm": "application/vnd.ms-excel.sheet.macroEnabled.12",
    **{suffix: mimetype for suffix, (_, mimetype) in office.ODF_PACKAGES.items()},
}

FORMATS: dict[str, Format] = {
    ".txt": Format("a text file", "text/plain", text_check, _plain),
    ".md": Format("a Markdown file", "text/markdown", text_check, _markdown),
    ".markdown": Format("a Markdown file", "text/markdown", text_check, _markdown),
    ".rst": Format("a reStructuredText file", "text/x-rst", text_check, _rst),
    ".html": Format("an HTML page", "text/html", text_check, _html),
    ".htm": Format("an HTML page", "text/html", text_check, _html),
    ".pdf": Format("a PDF", "application/pdf", _pdf_check, _pdf),
    ".jsonl": Format("a JSON Lines file", "application/jsonl", text_check, None),
    ".csv": Format("a CSV file", "text/csv", text_check, _delimited(",")),
    ".tsv": Format("a TSV file", "text/tab-separated-values", text_check, _delimited("\t")),
    ".docx": _package(".docx", office.read_docx),
    ".docm": _package(".docm", office.read_docx),
    ".pptx": _package(".pptx", office.read_pptx),
    ".pptm": _package(".pptm", office.read_pptx),
    ".xlsx": _package(".xlsx", office.read_xlsx),
    ".xlsm": _package(".xlsm", office.read_xlsx),
    ".odt": _package(".odt", opendocument.read_odt),
    ".ods": _package(".ods", opendocument.read_ods),
    ".odp": _package(".odp", opendocument.read_odp),
    ".doc": Format(legacy.LEGACY[".doc"][0], "application/msword", _legacy_check, _legacy(".doc")),
    ".ppt": Format(legacy.LEGACY[".ppt"][0], "application/vnd.ms-powerpoint", _legacy_check, _legacy(".ppt")),
    ".xls": Format(legacy.LEGACY[".xls"][0], "application/vnd.ms-excel", _legacy_check, _legacy(".xls")),
    ".rtf": Format(
        "an RTF document",
        "application/rtf",
        _bytes_check("RTF", rtf.rtf_problem),
        _document("an RTF document", _of_bytes(rtf.read_rtf)),
    ),  # fmt: skip
    ".eml": Format(
        "an e-mail message",
        "message/rfc822",
        _bytes_check("an e-mail message", mail.email_problem),
        _document("an e-mail message", _of_bytes(mail.read_eml)),
    ),  # fmt: skip
}
