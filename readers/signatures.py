"""What a file is, by its first bytes: the formats Cairn never reads as text (readers.extract) and
names when a file under a document's name turns out to be one of them (readers.office, .legacy)."""

from __future__ import annotations

# Formats we never read as text, by their first bytes (offset, magic, what it is). Formats whose
# magic could begin a sentence ("MZ", "GIF8") are told apart by what follows or by a NUL byte.
BINARY_SIGNATURES: list[tuple[int, bytes, str]] = [
    (0, b"\x7fELF", "an ELF executable"),
    (0, b"\xfe\xed\xfa\xce", "a Mach-O executable"),
    (0, b"\xfe\xed\xfa\xcf", "a Mach-O executable"),
    (0, b"\xce\xfa\xed\xfe", "a Mach-O executable"),
    (0, b"\xcf\xfa\xed\xfe", "a Mach-O executable"),
    (0, b"\xca\xfe\xba\xbe", "a Java class file or universal Mach-O executable"),
    (0, b"\x00asm", "a WebAssembly module"),
    (0, b"PK\x03\x04", "a ZIP archive (a Word, PowerPoint or Excel file is read as .docx, .pptx, .xlsx)"),
    (0, b"PK\x05\x06", "a ZIP archive"),
    (0, b"\x1f\x8b", "gzip-compressed data"),
    (0, b"\xfd7zXZ\x00", "xz-compressed data"),
    (0, b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (0, b"\x28\xb5\x2f\xfd", "zstd-compressed data"),
    (257, b"ustar", "a tar archive"),
    (
        0,
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
        "an OLE2 file (a Word, Excel or PowerPoint 97-2003 file is read as .doc, .xls, .ppt)",
    ),
    (0, b"SQLite format 3\x00", "an SQLite database"),
    (0, b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (0, b"\xff\xd8\xff", "a JPEG image"),
    (0, b"GIF87a", "a GIF image"),
    (0, b"GIF89a", "a GIF image"),
    (0, b"%PDF-", "a PDF document (upload it as .pdf)"),
]
_MZ_HEADER_BYTES = 64  # a DOS/PE header holds NUL bytes here; text starting "MZ" does not


def binary_signature(data: bytes) -> str | None:
    for offset, magic, what in BINARY_SIGNATURES:
        if data[offset : offset + len(magic)] == magic:
            return what
    if data[:2] == b"MZ" and b"\x00" in data[:_MZ_HEADER_BYTES]:
        return "a Windows executable (PE/MZ)"
    return None
