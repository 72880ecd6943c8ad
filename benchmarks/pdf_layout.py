"""PDF reading (readers/pdf.py): running furniture in chunks, and OCR speed.

    .venv/bin/python benchmarks/pdf_layout.py [--pages 12] [--ocr-pages 4]

1. A manual printed to PDF as a browser prints it (tests/documents.py writes it): on every page
   the date and the title on top, the address and "n/N" below, a heading and about thirty lines of
   prose between. It is chunked (the bundled embedder's tokens, CAIRN_CHUNK_TOKENS) as read by the
   reader before readers/pdf.py (pypdf's text layer, one paragraph guess per page: kept below as it
   was) and by readers/pdf.py; a chunk "holds furniture" when its text has the date, the address or
   a page count ("3/12").
2. The same kind of pages drawn as 300 dpi page images (a scan, Pillow), read by Tesseract through
   readers/pdf.py: pages per second, wall clock, on whatever cores the machine has.

No database. Writes benchmarks/results/pdf_layout.json.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, write_result

sys.path.insert(0, str(ROOT))

SENTENCES = [
    "Tidewater takes a snapshot of every volume each night at two in the morning.",
    "A snapshot is kept for fourteen days unless a retention policy says otherwise.",
    "Restoring a snapshot writes it to a new volume of the same size or larger.",
    "The verify command reads every block of the new volume and compares its checksum.",
    "Operators stop the writers before they restore, so that no write is lost.",
    "Weekly snapshots are kept for eight weeks and monthly ones for a year.",
    "A volume that is deleted takes its snapshots with it after a grace period of seven days.",
    "The restore log names the snapshot, the operator and the time the restore finished.",
]
DATE, TITLE, ADDRESS = (
    "26/11/2026, 14:03",
    "Tidewater manual - Restore guide",
    "https://docs.example.org/tidewater/restore.html",
)
FURNITURE = re.compile(rf"{re.escape(DATE)}|{re.escape(ADDRESS)}|\b\d+/\d+\b")


def prose_lines(page: int, count: int = 30, width: int = 88) -> list[str]:
    words = " ".join(SENTENCES[(page + i) % len(SENTENCES)] for i in range(count * 2)).split()
    lines, line = [], ""
    for word in words:
        if len(line) + len(word) + 1 > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
        if len(lines) == count:
            break
    return lines


def browser_printed(path: Path, pages: int) -> Path:
    from tests.documents import Text, write_pdf_pages

    drawn = []
    for n in range(1, pages + 1):
        body = [Text(72, 60, f"Step {n}: restoring a volume", 14)]
        for i, line in enumerate(prose_lines(n)):
            top = 90 + i * 14 + (i // 6) * 8  # a paragraph every six lines
            body.append(Text(72, top, line, 10))
        drawn.append(
            [Text(20, 12, DATE, 8), Text(250, 12, TITLE, 8), *body,
             Text(20, 770, ADDRESS, 8), Text(560, 770, f"{n}/{pages}", 8)]
        )  # fmt: skip
    return write_pdf_pages(path, drawn, info={"Title": TITLE})


def old_reader(data: bytes) -> str:
    """The reader before corpus/pdf.py (corpus/extract.py at a609122): pypdf's text layer a page
    at a time, its lines guessed into paragraphs."""
    from pypdf import PdfReader

    from readers import locations

    pages = [page.extract_text() or "" for page in PdfReader(io.BytesIO(data)).pages]
    return "\n\n".join(f"{locations.page(n)}\n\n{_old_paragraphs(page)}" for n, page in enumerate(pages, 1))


_LINE_END = re.compile(r"[.!?:;][\"'\u201d\u2019)\]]*$")


def _old_paragraphs(page: str) -> str:
    lines = [line.strip() for line in page.splitlines()]
    lengths = sorted(len(line) for line in lines if line)
    if not lengths:
        return ""
    typical = lengths[len(lengths) // 2]
    upcoming, after = [""] * len(lines), ""
    for i in range(len(lines) - 1, -1, -1):
        upcoming[i], after = after, lines[i] or after
    paragraphs: list[list[str]] = [[]]
    for i, line in enumerate(lines):
        current = paragraphs[-1]
        if not line:
            if current:
                paragraphs.append([])
            continue
        if current and current[-1].endswith("-") and line[:1].islower():
            current[-1] = current[-1][:-1] + line
            continue
        following = upcoming[i]
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


def furniture_share(text: str) -> tuple[int, int]:
    from django.conf import settings

    from corpus.chunking import chunk_text
    from corpus.embedder import get_embedder

    embedder = get_embedder()
    chunks = chunk_text(
        text,
        count_tokens=embedder.count_tokens,
        split_tokens=embedder.split_tokens,
        max_tokens=settings.CAIRN_CHUNK_TOKENS,
        overlap_tokens=settings.CAIRN_CHUNK_OVERLAP_TOKENS,
    )
    return sum(1 for c in chunks if FURNITURE.search(c.text)), len(chunks)


def scanned(path: Path, pages: int) -> Path:
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default(size=42)  # 10 pt at 300 dpi
    images = []
    for n in range(1, pages + 1):
        image = Image.new("L", (2550, 3300), 255)
        draw = ImageDraw.Draw(image)
        draw.text((300, 250), f"Step {n}: restoring a volume", fill=0, font=ImageFont.load_default(size=58))
        for i, line in enumerate(prose_lines(n, count=40, width=70)):
            draw.text((300, 400 + i * 63 + (i // 6) * 30), line, fill=0, font=font)
        images.append(image)
    images[0].save(path, "PDF", resolution=300, save_all=True, append_images=images[1:])
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=12)
    parser.add_argument("--ocr-pages", type=int, default=4)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from readers.pdf import read_pdf

    with tempfile.TemporaryDirectory() as folder:
        data = browser_printed(Path(folder) / "printed.pdf", args.pages).read_bytes()
        before = furniture_share(old_reader(data))
        started = time.perf_counter()
        after_text = read_pdf(data).text
        layout_seconds = time.perf_counter() - started
        after = furniture_share(after_text)
        scan = scanned(Path(folder) / "scan.pdf", args.ocr_pages).read_bytes()
        started = time.perf_counter()
        reading = read_pdf(scan)
        ocr_seconds = time.perf_counter() - started
    result = {
        "date": "2026-11-26",
        "browser_printed_pages": args.pages,
        "furniture_chunks_before": {"chunks": before[1], "with_furniture": before[0], "share": round(before[0] / before[1], 3)},
        "furniture_chunks_after": {"chunks": after[1], "with_furniture": after[0], "share": round(after[0] / after[1], 3)},
        "layout_seconds_per_page": round(layout_seconds / args.pages, 3),
        "ocr_pages": args.ocr_pages,
        "ocr_seconds": round(ocr_seconds, 2),
        "ocr_pages_per_second": round(args.ocr_pages / ocr_seconds, 3),
        "ocr_confidence": [float(c) for c in re.findall(r'"ocr":([0-9.]+)', reading.text)],
    }  # fmt: skip
    print(result)
    write_result("pdf_layout", result)


if __name__ == "__main__":
    main()
