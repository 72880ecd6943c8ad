"""Word 97-2003 .doc, PowerPoint .ppt and Excel .xls files, read by converting them with LibreOffice
(headless) to .docx, .pptx and .xlsx and reading those with readers.office.

No maintained Python library reads all three binary formats (antiword and catdoc are unmaintained
C tools that give flat text; olefile reads the container, not the documents). LibreOffice reads
them as Office does, with headings, lists, tables, slides and sheets intact, and is one Debian
package per format (libreoffice-writer-nogui, -impress-nogui, -calc-nogui).

Each conversion runs in a temporary folder with a LibreOffice profile of its own
(-env:UserInstallation), so parallel workers never share a profile's lock, under a timeout after
which its whole process group is killed. LibreOffice reads hostile files, so it is given little:
an environment of its own (PATH, locale, HOME and TMPDIR in its folder: none of Cairn's settings
or secrets), an address space of CAIRN_LIBREOFFICE_MEMORY_BYTES, and a profile written before it
starts that removes its network content providers (http, https, WebDAV, FTP, CMIS: a linked
picture, an external reference or WEBSERVICE() fetches nothing, from the intranet or loopback
either), blocks links from untrusted documents, never updates links or recalculates on load, and
disables macros. Before LibreOffice sees a file, its OLE2 directory is read (olefile) and a file
that is not the format its name claims, or that a password protects, is refused at once.
"""

from __future__ import annotations

import io
import os
import shutil
import struct
import tempfile
from pathlib import Path

from readers.office import OLE2_MAGIC, OfficeError, ole_encrypted, ole_kind, ole_streams
from readers.processes import limited, run_within

CONVERT_TIMEOUT_SECONDS = 60

# suffix: (what it is, the stream that says so, the format it is converted to, the package to install)
LEGACY = {
    ".doc": ("a Word 97-2003 document", ("WordDocument",), "docx", "libreoffice-writer-nogui"),
    ".ppt": ("a PowerPoint 97-2003 presentation", ("PowerPoint Document",), "pptx", "libreoffice-impress-nogui"),
    ".xls": ("an Excel 97-2003 workbook", ("Workbook", "Book"), "xlsx", "libreoffice-calc-nogui"),
}
_MACRO_STORAGES = ("Macros/", "_VBA_PROJECT_CUR/", "VBA/")

# The fresh profile's settings (registrymodifications.xcu): (group, property, value). Calc and
# Writer number their link update modes differently: "never" is 1 in Calc (ScLkUpdMode), 0 in Writer.
_PROFILE_SETTINGS = (
    ("org.openoffice.Office.Common/Security/Scripting", "DisableMacrosExecution", "true"),
    ("org.openoffice.Office.Common/Security/Scripting", "MacroSecurityLevel", "3"),
    ("org.openoffice.Office.Common/Security/Scripting", "BlockUntrustedRefererLinks", "true"),
    ("org.openoffice.Office.Calc/Formula/Load", "OOXMLRecalcMode", "1"),
    ("org.openoffice.Office.Calc/Formula/Load", "ODFRecalcMode", "1"),
    ("org.openoffice.Office.Calc/Content/Update", "Link", "1"),
    ("org.openoffice.Office.Writer/Content/Update", "Link", "0"),
)
# LibreOffice's content providers that reach the network (their names in its main.xcd): http and
# WebDAV, https and WebDAVs, FTP, CMIS. Without them a URL in a file opens nothing.
_NETWORK_PROVIDERS = ("Provider3", "Provider4", "Provider4a", "Provider12", "Provider12a", "Provider12b",
                      "Provider6", "Provider43")  # fmt: skip
_PROVIDERS = "/org.openoffice.ucb.Configuration/ContentProviders/Local/SecondaryKeys/Office/ProviderData"


def soffice() -> str | None:
    """The LibreOffice program, or None when it is not installed."""
    return shutil.which("soffice") or shutil.which("libreoffice")


def legacy_problem(suffix: str, data: bytes) -> str | None:
    """Why `data` is not a readable file of the legacy kind `suffix` names, or None. Reads the OLE2
    directory and the first bytes of the main stream only."""
    what, streams, _, _ = LEGACY[suffix]
    if not data.startswith(OLE2_MAGIC):
        from readers.signatures import binary_signature

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


def _write_profile(profile: Path) -> None:
    """Write the hardened settings into a fresh profile, where LibreOffice reads them as it starts."""
    items = [
        f'<item oor:path="/{group}"><prop oor:name="{name}" oor:op="fuse"><value>{value}</value></prop></item>'
        for group, name, value in _PROFILE_SETTINGS
    ]
    items += [
        f'<item oor:path="{_PROVIDERS}"><node oor:name="{name}" oor:op="remove"/></item>' for name in _NETWORK_PROVIDERS
    ]
    (profile / "user").mkdir(parents=True)
    (profile / "user" / "registrymodifications.xcu").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema">\n'
        + "\n".join(items)
        + "\n</oor:items>\n",
        encoding="utf-8",
    )


def _environment(folder: str) -> dict[str, str]:
    """LibreOffice's whole environment: nothing of this process's (its settings, its secrets)."""
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": folder,
        "TMPDIR": folder,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }


def convert(suffix: str, data: bytes, *, seconds: float | None = None) -> bytes:
    """The bytes of `data` (a legacy file of kind `suffix`, already checked) converted by LibreOffice
    to its Office Open XML format. OfficeError when LibreOffice is not installed, fails, or runs
    past CONVERT_TIMEOUT_SECONDS (or `seconds`, when fewer are left to its caller)."""
    from django.conf import settings

    what, _, target, package = LEGACY[suffix]
    program = soffice()
    if program is None:
        raise OfficeError(f"install LibreOffice ({package}) to read {suffix} files")
    timeout = CONVERT_TIMEOUT_SECONDS if seconds is None else max(0.0, min(seconds, CONVERT_TIMEOUT_SECONDS))
    with tempfile.TemporaryDirectory(prefix="cairn-soffice-") as folder:
        work = Path(folder)
        source = work / f"document{suffix}"
        source.write_bytes(data)
        out = work / "out"
        _write_profile(work / "profile")
        command = limited(
            [program, f"-env:UserInstallation={(work / 'profile').as_uri()}", "--headless", "--norestore",
             "--nolockcheck", "--convert-to", target, "--outdir", str(out), str(source)],
            settings.CAIRN_LIBREOFFICE_MEMORY_BYTES,
        )  # fmt: skip
        finished = run_within(command, timeout=timeout, env=_environment(folder), merge_errors=True)
        if finished is None:
            raise OfficeError(f"LibreOffice did not convert {what} within {timeout:g} s; it is refused")
        _, output, _ = finished
        converted = out / f"document.{target}"
        if not converted.is_file():
            said = " ".join(output.decode("utf-8", "replace").split())[-200:]
            raise OfficeError(f"LibreOffice could not read {what} (damaged?): {said or 'no output'}")
        return converted.read_bytes()
