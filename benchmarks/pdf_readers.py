"""Cairn's PDF reader (readers/pdf.py) against poppler's pdftotext, on PDFs no choice was made on:
the manuals Debian ships as PDF (bash's from TeX and groff, libtasn1's from Texinfo,
shared-mime-info's from DocBook...) and, when the formats benchmark's cache holds them, Word files
exported to PDF by LibreOffice (bullets from its Symbol font, its own fonts and layout).

For each file, the words (lower case, runs of letters and digits) of Cairn's block text, location
markers aside, against pdftotext's, as multisets:
- recall: the share of pdftotext's words Cairn keeps. pdftotext is a reference, not the truth: it
  keeps the running headers, footers and page numbers Cairn drops on purpose, and it splits a word
  hyphenated across lines that Cairn joins, so recall sits a little under 100% on a clean read;
- extra: the share of Cairn's words pdftotext has not (words run together or split apart);
- seconds per page, reading only.

    apt-get install poppler-utils libreoffice-writer-nogui
    .venv/bin/python benchmarks/pdf_readers.py [FILE.pdf ...]

Writes benchmarks/results/pdf_readers.json and pdf_readers.png.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from _common import RESULTS, write_result

DEBIAN_PDFS = sorted(Path("/usr/share/doc").glob("**/*.pdf"))
OFFICE_FILES = RESULTS / "cache" / "formats" / "docx"  # written by benchmarks/formats.py
OFFICE_SAMPLE = 12


def words(text: str) -> Counter:
    return Counter(re.findall(r"\w+", text.lower()))


def pdftotext(path: Path) -> str:
    return subprocess.run(["pdftotext", "-enc", "UTF-8", str(path), "-"], capture_output=True, text=True,
                          check=True, timeout=300).stdout  # fmt: skip


def pages(path: Path) -> int:
    info = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True, check=True, timeout=60).stdout
    return int(re.search(r"^Pages:\s+(\d+)", info, re.MULTILINE).group(1))


def office_exports(folder: Path) -> list[Path]:
    """The first Word files of the formats benchmark's cache, exported to PDF by LibreOffice."""
    sample = sorted(OFFICE_FILES.glob("*.docx"))[:OFFICE_SAMPLE]
    if not sample or not shutil.which("soffice"):
        return []
    subprocess.run(["soffice", "--headless", "--convert-to", "pdf", "--outdir", str(folder), *map(str, sample)],
                   capture_output=True, check=True, timeout=600)  # fmt: skip
    return sorted(folder.glob("*.pdf"))


def measure(path: Path, read_pdf, without_markers) -> dict:
    data = path.read_bytes()
    started = time.perf_counter()
    try:
        text = without_markers(read_pdf(data).text)
    except Exception as exc:  # noqa: BLE001 - a refusal is a result here
        return {"file": str(path), "refused": str(exc)[:200]}
    seconds = time.perf_counter() - started
    ours, theirs = words(text), words(pdftotext(path))
    shared, count = sum((ours & theirs).values()), pages(path)
    return {
        "file": str(path),
        "pages": count,
        "words": sum(ours.values()),
        "pdftotext_words": sum(theirs.values()),
        "recall": round(shared / max(sum(theirs.values()), 1), 4),
        "extra": round(1 - shared / max(sum(ours.values()), 1), 4),
        "seconds_per_page": round(seconds / max(count, 1), 4),
    }


def plot(rows: list[dict]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    read = [r for r in rows if "recall" in r]
    names = [Path(r["file"]).stem[:28] for r in read]
    fig, ax = plt.subplots(figsize=(max(8, 0.55 * len(read)), 4.5))
    x = range(len(read))
    ax.bar([i - 0.2 for i in x], [r["recall"] for r in read], width=0.4, label="recall of pdftotext's words")
    ax.bar([i + 0.2 for i in x], [r["extra"] for r in read], width=0.4, label="extra words", color="#c44e52")
    ax.set_xticks(list(x), names, rotation=60, ha="right", fontsize=8)
    ax.set_ylim(0, 1.25)
    ax.legend(loc="upper center", ncol=2)
    ax.set_title(f"Cairn's PDF reader against pdftotext, {time.strftime('%Y-%m-%d')}")
    fig.tight_layout()
    path = RESULTS / "pdf_readers.png"
    fig.savefig(path, dpi=110)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", type=Path, help="PDFs to read (default: Debian's and Word exports)")
    args = parser.parse_args()
    if not shutil.which("pdftotext"):
        sys.exit("pdftotext: not found; apt-get install poppler-utils")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from tqdm import tqdm

    from readers.locations import without_markers
    from readers.pdf import read_pdf

    with tempfile.TemporaryDirectory() as folder:
        files = args.files or [*DEBIAN_PDFS, *office_exports(Path(folder))]
        unique = {hashlib.sha256(path.read_bytes()).hexdigest(): path for path in reversed(files)}
        files = [path for path in files if path in unique.values()]  # one of each (bash ships two copies)
        rows = [measure(path, read_pdf, without_markers) for path in tqdm(files, unit="file")]
    for row in rows:
        print(row)
    read = [r for r in rows if "recall" in r]
    summary = {
        "files": len(rows),
        "refused": [r for r in rows if "refused" in r],
        "pages": sum(r["pages"] for r in read),
        "words_recall": round(sum(r["recall"] * r["pdftotext_words"] for r in read)
                              / max(sum(r["pdftotext_words"] for r in read), 1), 4),  # fmt: skip
        "seconds_per_page": round(sum(r["seconds_per_page"] * r["pages"] for r in read) / max(sum(r["pages"] for r in read), 1), 4),
    }  # fmt: skip
    print(summary)
    write_result("pdf_readers", {"summary": summary, "files": rows})
    print(plot(rows))


if __name__ == "__main__":
    main()
