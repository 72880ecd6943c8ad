"""Word 97-2003 .doc, PowerPoint .ppt and Excel .xls files, read by converting them with LibreOffice
(headless) to .docx, .pptx and .xlsx and reading those with corpus.office.

No maintained Python library reads all three binary formats (antiword and catdoc are unmaintained
C tools that give flat text; olefile reads the container, not the documents). LibreOffice reads
them as Office does, with headings, lists, tables, slides and sheets intact, and is one Debian
package per format (libreoffice-writer-nogui, -impress-nogui, -calc-nogui).

Each conversion runs in a temporary folder with a LibreOffice profile of its own
(-env:UserInstallation), so parallel workers never share a profile's lock, under a timeout after
which its whole process group is killed. Macros are never run: LibreOffice's default macro
security runs no unsigned macro, and a conversion runs none at all. Before LibreOffice sees a
file, its OLE2 directory is read (olefile) and a file that is not the format its name claims, or
that a password protects, is refused at once.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import struct
import subprocess
import tempfile
from pathlib import Path

from corpus.office import OLE2_MAGIC, OfficeError, ole_encrypted, ole_kind, ole_streams

CONVERT_TIMEOUT_SECONDS = 60

# suffix: (what it is, the stream that says so, the format it is converted to, the package to install)
LEGACY = {
    ".doc": ("a Word 97-2003 document", ("WordDocument",), "docx", "libreoffice-writer-nogui"),
    ".ppt": ("a PowerPoint 97-2003 presentation", ("PowerPoint Document",), "pptx", "libreoffice-impress-nogui"),
    ".xls": ("an Excel 97-2003 workbook", ("Workbook", "Book"), "xlsx", "libreoffice-calc-nogui"),
}
_MACRO_STORAGES = ("Macros/", "_VBA_PROJECT_CUR/", "VBA/")


def soffice() -> str | None:
    """The LibreOffice program, or None when it is not installed."""
    return shutil.which("soffice") or shutil.which("libreoffice")


def legacy_problem(suffix: str, data: bytes) -> str | None:
    """Why `data` is not a readable file of the legacy kind `suffix` names, or None. Reads the OLE2
    directory and the first bytes of the main stream only."""
    what, streams, _, _ = LEGACY[suffix]
    if not data.startswith(OLE2_MAGIC):
        from corpus.signatures import binary_signature

        found = binary_signature(data)
        if data.startswith(b"PK\x03\x04"):
            found = "a ZIP package (a newer Office file: upload it as .docx, .pptx or .xlsx)"
        detail = f": the content is {found}" if found else f" ({suffix} is an OLE2 compound file; this file is not)"
        return f"not {what}{detail}"
    try:
        names = ole_streams(data)
    except OfficeError as exc:
        return f"not {what}: {exc}"
    if ole_encrypted(names):
        return f"password-protected Office document: remove the password and upload it again (as {suffix})"
    main = next((stream for stream in streams if stream in names), None)
    if main is None:
        other = ole_kind(names)
        named = f": it is {other[0]}, upload it as {other[1]}" if other else ""
        return f"an OLE2 compound file but not {what} (no {streams[0]} stream){named}"
    try:
        encrypted = _encrypted(suffix, data, names)
    except Exception as exc:  # noqa: BLE001 - hostile input: a stream olefile cannot read is the file's
        return f"not {what}: a damaged OLE2 compound file ({str(exc)[:200] or type(exc).__name__})"
    if encrypted:
        return f"password-protected {what.split(' ', 1)[1]}: remove the password and upload it again"
    return None


def _encrypted(suffix: str, data: bytes, names: list[str]) -> bool:
    """Whether a legacy file says a password encrypts it: a Word file's FIB flag fEncrypted, an
    Excel workbook's FILEPASS record among its first, a presentation's EncryptedSummary stream."""
    import olefile

    if suffix == ".ppt":
        return "EncryptedSummary" in names
    with olefile.OleFileIO(io.BytesIO(data)) as ole:
        if suffix == ".doc":
            head = ole.openstream("WordDocument").read(12)
            return len(head) == 12 and bool(struct.unpack_from("<H", head, 10)[0] & 0x0100)
        stream = "Workbook" if "Workbook" in names else "Book"
        records = ole.openstream(stream).read(4096)
    offset = 0
    for _ in range(50):  # FILEPASS follows BOF within the workbook globals' first records
        if offset + 4 > len(records):
            break
        kind, size = struct.unpack_from("<HH", records, offset)
        if kind == 0x002F:
            return True
        offset += 4 + size
    return False


def has_macros(data: bytes) -> bool:
    """Whether a legacy file carries a VBA project (never run here: metadata says so)."""
    try:
        return any(name.startswith(_MACRO_STORAGES) for name in ole_streams(data))
    except OfficeError:
        return False


def convert(suffix: str, data: bytes) -> bytes:
    """The bytes of `data` (a legacy file of kind `suffix`, already checked) converted by LibreOffice
    to its Office Open XML format. OfficeError when LibreOffice is not installed, fails, or runs
    past CONVERT_TIMEOUT_SECONDS."""
    what, _, target, package = LEGACY[suffix]
    program = soffice()
    if program is None:
        raise OfficeError(f"install LibreOffice ({package}) to read {suffix} files")
    with tempfile.TemporaryDirectory(prefix="cairn-soffice-") as folder:
        work = Path(folder)
        source = work / f"document{suffix}"
        source.write_bytes(data)
        out = work / "out"
        command = [
            program,
            f"-env:UserInstallation={(work / 'profile').as_uri()}",
            "--headless",
            "--norestore",
            "--nolockcheck",
            "--convert-to",
            target,
            "--outdir",
            str(out),
            str(source),
        ]
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: a timeout kills LibreOffice's children too
            env={**os.environ, "HOME": folder},
        )
        try:
            output, _ = process.communicate(timeout=CONVERT_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise OfficeError(
                f"LibreOffice did not convert {what} within {CONVERT_TIMEOUT_SECONDS} s; it is refused"
            ) from None
        finally:
            if process.poll() is None:  # an exception of our own while it ran
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        converted = out / f"document.{target}"
        if not converted.is_file():
            said = " ".join(output.decode("utf-8", "replace").split())[-200:]
            raise OfficeError(f"LibreOffice could not read {what} (damaged?): {said or 'no output'}")
        return converted.read_bytes()
