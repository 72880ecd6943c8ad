"""Cairn's Office readers on the real-world files the Office libraries test themselves with.

The source distributions of python-docx and python-pptx (the versions requirements.txt pins) ship
the .docx and .pptx files their own tests read: files saved by many versions of Word and
PowerPoint, LibreOffice and other tools, some deliberately odd. (openpyxl's source distribution
ships none.) Each file is read by `readers.extract.extract_bytes`, as an upload is, and sorted:
- read: a document came out; its text is checked for garbage (XML markup, control characters,
  replacement characters);
- refused: an ExtractionError (the upload would be a 400 naming the reason);
- crashed: any other exception (it would be a 500): there must be none.
Reports the counts, the slowest file and every refusal with its reason.

    .venv/bin/python benchmarks/library_documents.py     # fetches the two sdists with pip once

Writes benchmarks/results/library_documents.json.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from _common import RESULTS, django_setup, write_result

PACKAGES = ("python-docx==1.2.0", "python-pptx==1.0.2")
SUFFIXES = (".docx", ".docm", ".pptx", ".pptm", ".xlsx", ".xlsm")
CACHE = RESULTS / "cache" / "library_documents"
_GARBAGE = re.compile(r"<\/?[a-z]+:[a-z]+|xmlns|[\x00-\x08\x0b\x0e-\x19\ufffd]")


def sdists() -> list[Path]:
    CACHE.mkdir(parents=True, exist_ok=True)
    found = sorted(CACHE.glob("*.tar.gz"))
    if len(found) < len(PACKAGES):
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:", "--no-deps", "-d", str(CACHE),
             *PACKAGES],
            check=True,
        )  # fmt: skip
        found = sorted(CACHE.glob("*.tar.gz"))
    return found


def main() -> None:
    django_setup()
    from readers.extract import ExtractedDocument, ExtractionError, extract_bytes

    rows = []
    for sdist in sdists():
        with tarfile.open(sdist) as archive:
            for member in archive.getmembers():
                if not member.isfile() or not member.name.lower().endswith(SUFFIXES):
                    continue
                data = archive.extractfile(member).read()
                name = member.name.split("/", 1)[1]
                started = time.perf_counter()
                try:
                    documents = [d for d in extract_bytes(Path(name).name, data, source=name)
                                 if isinstance(d, ExtractedDocument)]  # fmt: skip
                    text = " ".join(d.text for d in documents)
                    garbage = _GARBAGE.findall(text)
                    row = {"outcome": "read", "chars": len(text), "garbage": garbage[:5]}
                except ExtractionError as exc:
                    row = {"outcome": "refused", "reason": str(exc)[:200]}
                except Exception as exc:  # noqa: BLE001 - what is counted here
                    row = {"outcome": "crashed", "reason": f"{type(exc).__name__}: {exc}"[:200]}
                row |= {"file": name, "package": sdist.name, "ms": round((time.perf_counter() - started) * 1000, 1)}
                rows.append(row)
    counts = {outcome: sum(r["outcome"] == outcome for r in rows) for outcome in ("read", "refused", "crashed")}
    result = {
        "files": len(rows),
        **counts,
        "read_with_garbage": sum(bool(r.get("garbage")) for r in rows),
        "slowest_ms": max((r["ms"] for r in rows), default=0),
        "refusals": [r for r in rows if r["outcome"] != "read"],
        "rows": rows,
    }
    print(write_result("library_documents", result))
    print({k: v for k, v in result.items() if k != "rows"})


if __name__ == "__main__":
    main()
