"""Cairn on one manual in the formats an organisation keeps its documents in.

The Rust book and Rust by Example (benchmarks/rust_docs, 168 pages of `rust-doc`) are read once
with Cairn's HTML reader; what it keeps of each page (headings, paragraphs, lists, tables, code)
is written back as a plain, chrome-free HTML page: the "HTML version", the content an author
would have written in a word processor. That page is then converted by the programs that make
such files in real life:
- docx and odt: LibreOffice (`soffice --headless --convert-to`, Writer's HTML import);
- pdf: Chromium's print to PDF, with its default running header (date, title) and footer (file
  URL, "n/m"), the page furniture a PDF printed from a browser carries;
- scan: each PDF page rasterised (pdftoppm, 150 dpi, greyscale) into an image-only PDF, for the
  pages the questions name (OCR is the slow part).
Each version is ingested into a collection of its own in the `cairn_bench` database and measured:
- fidelity: of the gold strings the HTML version's chunks hold, the share the version's chunks of
  the same page hold (whitespace and case ignored; ligatures unfolded);
- sections: for those gold strings, the share whose chunk has the same innermost section heading;
- furniture: chunks of the PDF versions holding a running header or footer (the file URL, the
  print date, an "n/m" page counter of that file);
- gold in answer: the 40 answerable questions asked through the API (fast mode, top_k 8) against
  each version's collection, as benchmarks/docs_qa.py asks them;
- throughput: ingestion end to end (reading included) against the raw embedding of the same chunk
  inputs; OCR pages per second.

    apt-get install rust-doc libreoffice-writer-nogui chromium poppler-utils tesseract-ocr
    .venv/bin/python benchmarks/formats.py [--formats html,docx,odt,pdf,scan] [--no-questions] [--fresh]

Conversions are cached under benchmarks/results/cache/formats/ (a re-run converts nothing again);
--fresh re-ingests the versions named from an empty collection (throughput is measured only
then); a format left out of --formats keeps its figures from the last run that measured it. Writes benchmarks/results/formats.json
and formats.png.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

from _common import RESULTS, ROOT, code_version, django_setup, has_gold, write_result

DOCS = Path(os.environ.get("CAIRN_RUST_DOCS", "/usr/share/doc/rust-doc/html"))
SET = ROOT / "benchmarks" / "rust_docs"
CACHE = RESULTS / "cache" / "formats"
FORMATS = ("html", "docx", "odt", "pdf", "scan")
FLOORS = {"docx": 0.98, "odt": 0.98, "pdf": 0.95, "scan": 0.90}
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]  # fmt: skip


def pages() -> list[str]:
    return [line.strip() for line in (SET / "pages.txt").read_text().splitlines() if line.strip()]


def questions() -> list[dict]:
    return [json.loads(line) for line in (SET / "questions.jsonl").read_text().splitlines() if line.strip()]


def stem(page: str) -> str:
    return page.removesuffix(".html").replace("/", "__")


# --- The HTML version: Cairn's reading of each page, written back as a plain page -------------


def page_html(title: str, text: str) -> str:
    """Block text (corpus.chunking's syntax) as HTML: the structure an author's document has."""
    out, lines, i = [], text.split("\n"), 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            body = []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            out.append(f"<pre><code>{html.escape(chr(10).join(body))}</code></pre>")
        elif match := re.match(r"^(#{1,6})\s+(.*)$", line):
            level = len(match.group(1))
            out.append(f"<h{level}>{html.escape(match.group(2))}</h{level}>")
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(lines[i])
                i += 1
            i -= 1
            cells = [[html.escape(c.strip()) for c in r.strip().strip("|").split("|")] for r in rows]
            head = len(rows) > 1 and re.fullmatch(r"[\s|:-]+", rows[1])
            body = cells[2:] if head else cells
            table = "".join(f"<th>{c}</th>" for c in cells[0]) if head else ""
            table = f"<thead><tr>{table}</tr></thead>" if head else ""
            table += "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in body)
            out.append(f"<table border='1'>{table}</table>")
        elif line.startswith("- "):
            items = []
            while i < len(lines) and (lines[i].startswith("- ") or (lines[i] == "" and i + 1 < len(lines)
                                                                     and lines[i + 1].startswith("- "))):  # fmt: skip
                if lines[i]:
                    items.append(f"<li>{html.escape(lines[i][2:])}</li>")
                i += 1
            i -= 1
            out.append(f"<ul>{''.join(items)}</ul>")
        elif line.startswith(": "):
            out.append(f"<p style='margin-left:2em'>{html.escape(line[2:])}</p>")
        elif line.strip():
            out.append(f"<p>{html.escape(line)}</p>")
        i += 1
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>"
        f"<body>{''.join(out)}</body></html>"
    )


def build_html(names: list[str]) -> Path:
    from readers.extract import ExtractedDocument, extract_file

    folder = CACHE / "html"
    folder.mkdir(parents=True, exist_ok=True)
    for page in names:
        target = folder / f"{stem(page)}.html"
        if target.exists():
            continue
        (document,) = [d for d in extract_file(DOCS / page, source=page) if isinstance(d, ExtractedDocument)]
        target.write_text(page_html(document.title, document.text))
    return folder


def convert_office(kind: str, names: list[str]) -> Path:
    """docx or odt through LibreOffice, many files per call (its start-up is the cost)."""
    source, folder = CACHE / "html", CACHE / kind
    folder.mkdir(parents=True, exist_ok=True)
    todo = [source / f"{stem(p)}.html" for p in names if not (folder / f"{stem(p)}.{kind}").exists()]
    target = {"docx": "docx:MS Word 2007 XML", "odt": "odt"}[kind]
    with tempfile.TemporaryDirectory() as profile:
        for start in range(0, len(todo), 20):
            subprocess.run(
                ["soffice", "--headless", f"-env:UserInstallation=file://{profile}", "--infilter=HTML (StarWriter)",
                 "--convert-to", target, "--outdir", str(folder), *map(str, todo[start : start + 20])],
                check=True, capture_output=True, timeout=600,
            )  # fmt: skip
            print(f"{kind}: {min(start + 20, len(todo))}/{len(todo)} converted", file=sys.stderr)
    return folder


def print_pdfs(names: list[str]) -> Path:
    source, folder = CACHE / "html", CACHE / "pdf"
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as profile:
        for n, page in enumerate(names, 1):
            target = folder / f"{stem(page)}.pdf"
            if target.exists():
                continue
            subprocess.run(
                ["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}", f"--print-to-pdf={target}",
                 (source / f"{stem(page)}.html").resolve().as_uri()],
                check=True, capture_output=True, timeout=120,
            )  # fmt: skip
            if n % 20 == 0:
                print(f"pdf: {n}/{len(names)} printed", file=sys.stderr)
    return folder


def scan_pdfs(names: list[str]) -> Path:
    """Each printed PDF as an image-only PDF: pages rasterised at 150 dpi in grey, as a scanner makes them."""
    from PIL import Image

    source, folder = CACHE / "pdf", CACHE / "scan"
    folder.mkdir(parents=True, exist_ok=True)
    for page in names:
        target = folder / f"{stem(page)}.pdf"
        if target.exists():
            continue
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["pdftoppm", "-r", "150", "-gray", "-png", str(source / f"{stem(page)}.pdf"), f"{tmp}/p"],
                           check=True, capture_output=True, timeout=300)  # fmt: skip
            images = [Image.open(p).convert("L") for p in sorted(Path(tmp).glob("p*.png"))]
            images[0].save(target, save_all=True, append_images=images[1:], resolution=150)
    return folder


# --- Measuring ----------------------------------------------------------------------------------


def normal(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).split()).lower()


def collection_slug(kind: str) -> str:
    return f"fmt-{kind}"


def ingest(kind: str, folder: Path, names: list[str], *, fresh: bool) -> dict:
    from tqdm import tqdm

    from corpus.embedder import get_embedder
    from corpus.models import Chunk, Document
    from corpus.services import collection_get_or_create, documents_ingest, embedding_input
    from readers.extract import ExtractedDocument, ExtractionError, extract_file

    suffix = {"html": "html", "scan": "pdf"}.get(kind, kind)
    collection, created = collection_get_or_create(slug=collection_slug(kind), group_names=["fmt-readers"])
    fresh = fresh or created
    if fresh:
        Document.objects.filter(collection=collection).delete()
    embedder = get_embedder()
    embedder.embed(["warm up the model"] * 8)
    refused: list[str] = []
    started = time.perf_counter()

    def documents():
        for page in names:
            try:
                path = folder / f"{stem(page)}.{suffix}"
                yield from (d for d in extract_file(path, source=page) if isinstance(d, ExtractedDocument))
            except ExtractionError as exc:
                refused.append(f"{page}: {exc}")

    with tqdm(total=len(names), desc=f"ingesting {kind}", unit="file") as bar:
        report = documents_ingest(collection=collection, documents=documents(), on_progress=lambda d, c: bar.update(d))
    seconds = time.perf_counter() - started
    result = {"documents": report.added + report.updated + report.unchanged, "refused": refused,
              "seconds": seconds, "chunks_written": report.chunks}  # fmt: skip
    inputs = [
        embedding_input(h, t)
        for h, t in Chunk.objects.filter(document__collection=collection).values_list("heading", "text")
    ]
    if kind == "scan":
        pages_read = sum(len(d.get("ocr_pages", [])) for d in Document.objects.filter(collection=collection)
                         .values_list("metadata", flat=True))  # fmt: skip
        result |= {"ocr_pages": pages_read, "ocr_pages_per_s": pages_read / seconds}
    elif fresh and report.chunks:
        raw_started = time.perf_counter()
        for i in range(0, len(inputs), 256):
            embedder.embed(inputs[i : i + 256])
        raw = len(inputs) / (time.perf_counter() - raw_started)
        result |= {"ingest_chunks_per_s": report.chunks / seconds, "raw_embed_chunks_per_s": raw,
                   "ingest_vs_raw": report.chunks / seconds / raw}  # fmt: skip
    return result


def chunks_by_page(kind: str) -> dict[str, list[tuple[str, str]]]:
    from corpus.models import Chunk

    found: dict[str, list[tuple[str, str]]] = {}
    rows = Chunk.objects.filter(document__collection__slug=collection_slug(kind), document__status="active")
    for source, heading, text in rows.values_list("document__source", "heading", "text"):
        found.setdefault(source, []).append((heading, normal(text)))
    return found


def innermost(heading: str) -> str:
    return normal(heading.split(" › ")[-1])


def fidelity(kind: str, reference: dict, asked: list[dict]) -> dict:
    """Of the gold strings the HTML version holds (per question, its page), how many this version
    holds in the same page's chunks, and under the same innermost heading."""
    mine = chunks_by_page(kind)
    held = same_section = total = 0
    missed = []
    for q in asked:
        for gold in q["gold"]:
            g = normal(gold)
            in_html = [h for h, t in reference.get(q["page"], []) if g in t]
            if not in_html:
                continue
            total += 1
            here = [h for h, t in mine.get(q["page"], []) if g in t]
            held += bool(here)
            same_section += bool(here) and innermost(here[0]) in {innermost(h) for h in in_html}
            if not here:
                missed.append({"id": q["id"], "gold": gold, "page": q["page"]})
    return {"gold_strings": total, "held": held, "share": held / max(1, total),
            "same_section_share": same_section / max(1, held), "missed": missed[:20]}  # fmt: skip


_COUNTER = re.compile(r"(?<![\d/])(\d{1,3})/(\d{1,3})(?![\d/])")
_PRINT_DATE = re.compile(r"\b\d{1,2}/\d{1,2}/\d{2}, \d{1,2}:\d{2} [AP]M\b")


def furniture(kind: str) -> dict:
    """Chunks holding what Chromium prints around every page: the file URL, the date and time it was
    printed, or a page counter "k/m" (k ≤ m) that is not in the HTML version's text of the page."""
    reference = chunks_by_page("html")
    mine = chunks_by_page(kind)
    flagged, total, examples = 0, 0, []
    for page, chunks in mine.items():
        html_text = " ".join(t for _, t in reference.get(page, []))
        for _, text in chunks:
            total += 1
            counters = [m.group(0) for m in _COUNTER.finditer(text)
                        if int(m.group(1)) <= int(m.group(2)) and m.group(0) not in html_text]  # fmt: skip
            # The file URL: a "file:///…" word the HTML version does not have (the book quotes
            # cargo's own "file:///projects/…" output).
            urls = [w for w in text.split() if "file:///" in w and w not in html_text]
            if urls or _PRINT_DATE.search(text.upper()) or counters:
                flagged += 1
                if len(examples) < 5:
                    examples.append(text[:200])
    return {"chunks": total, "with_furniture": flagged, "share": flagged / max(1, total), "examples": examples}


def ask_all(kind: str, asked: list[dict]) -> dict:
    from django.contrib.auth.models import User
    from django.test import Client

    from corpus.models import Collection

    user, _ = User.objects.get_or_create(username="fmt-reader")
    user.groups.add(*Collection.objects.get(slug=collection_slug(kind)).groups.all())
    client = Client()
    client.force_login(user)
    hits, rows = 0, []
    for q in asked:
        response = client.post(
            "/api/v1/query",
            {"question": q["question"], "mode": "fast", "top_k": 8, "collections": [collection_slug(kind)]},
            content_type="application/json",
        )
        body = response.json() if response.status_code < 500 else {}
        hit = bool(body.get("found")) and has_gold(body.get("answer", ""), q["gold"])
        hits += hit
        rows.append({"id": q["id"], "status": response.status_code, "hit": hit})
    return {"asked": len(asked), "gold_in_answer": hits, "share": hits / max(1, len(asked)), "rows": rows}


def plot(result: dict) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = [k for k in FORMATS if k in result["formats"]]
    fig, axes = plt.subplots(1, 4, figsize=(18, 4))
    shares = [result["formats"][k].get("fidelity", {}).get("share", 0) for k in kinds]
    axes[0].bar(kinds, shares, color="#4c72b0")
    for x, kind in enumerate(kinds):
        if kind in FLOORS:
            axes[0].hlines(FLOORS[kind], x - 0.4, x + 0.4, colors="black", linestyles="dashed")
    axes[0].set_ylim(0, 1.05)
    axes[0].set_title("HTML version's gold strings held (dashes: floors)")
    answered = [k for k in kinds if "answers" in result["formats"][k]]
    axes[1].bar(answered, [result["formats"][k]["answers"]["share"] for k in answered], color="#55a868")
    axes[1].set_ylim(0, 1)
    axes[1].set_title("gold string in the answer")
    pdfs = [k for k in ("pdf", "scan") if "furniture" in result["formats"].get(k, {})]
    axes[2].bar(pdfs, [result["formats"][k]["furniture"]["share"] for k in pdfs], color="#c44e52")
    axes[2].axhline(0.005, color="black", linestyle="dashed")
    axes[2].set_title("chunks holding page furniture (dash: 0.5%)")
    timed = [k for k in kinds if result["formats"][k].get("ingest", {}).get("ingest_vs_raw")]
    axes[3].bar(timed, [result["formats"][k]["ingest"]["ingest_vs_raw"] for k in timed], color="#8172b2")
    axes[3].axhline(0.75, color="black", linestyle="dashed")
    axes[3].set_ylim(0, 1.05)
    axes[3].set_title("ingestion / raw embedding (dash: 75%)")
    fig.suptitle(f"Rust docs in five formats, {time.strftime('%Y-%m-%d')}")
    fig.tight_layout()
    path = RESULTS / "formats.png"
    fig.savefig(path, dpi=110)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--no-questions", action="store_true", help="Measure the chunks only.")
    parser.add_argument("--fresh", action="store_true", help="Re-ingest every version from empty.")
    args = parser.parse_args()
    kinds = [k.strip() for k in args.formats.split(",") if k.strip()]
    if unknown := set(kinds) - set(FORMATS):
        sys.exit(f"--formats: unknown {sorted(unknown)}; choose from {', '.join(FORMATS)}")
    if not DOCS.is_dir():
        sys.exit(f"{DOCS}: no such folder; apt-get install rust-doc (or set CAIRN_RUST_DOCS)")
    for tool, package in (
        ("soffice", "libreoffice-writer-nogui"),
        ("chromium", "chromium"),
        ("pdftoppm", "poppler-utils"),
    ):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found: apt-get install {package}")
    os.environ.setdefault("CAIRN_THROTTLE_QUERY", "100000/minute")
    os.environ.setdefault("CAIRN_INGEST_BATCH_DOCUMENTS", "8")
    django_setup()

    names = pages()
    asked = [q for q in questions() if q["answerable"]]
    question_pages = sorted({q["page"] for q in asked})
    build_html(names)
    folders = {"html": CACHE / "html"}
    if "docx" in kinds or "odt" in kinds:
        folders |= {k: convert_office(k, names) for k in ("docx", "odt") if k in kinds}
    if "pdf" in kinds or "scan" in kinds:
        folders["pdf"] = print_pdfs(names)
    if "scan" in kinds:
        folders["scan"] = scan_pdfs(question_pages)

    result: dict = {"set": "rust", "pages": len(names), "questions": len(asked), "formats": {}}
    out = RESULTS / "formats.json"
    previous = json.loads(out.read_text()).get("formats", {}) if out.exists() else {}
    if "html" not in kinds:  # the reference, measured in an earlier run: only made sure of
        ingest("html", folders["html"], names, fresh=False)
    for kind in kinds:
        measured = {"ingest": ingest(kind, folders[kind], question_pages if kind == "scan" else names,
                                     fresh=args.fresh)}  # fmt: skip
        result["formats"][kind] = measured | {
            "measured_at": time.strftime("%Y-%m-%d %H:%M:%S"),
            "commit": code_version(),
        }
    reference = chunks_by_page("html")
    for kind in kinds:
        measured = result["formats"][kind]
        if kind != "html":
            measured["fidelity"] = fidelity(kind, reference, asked)
        if kind in ("pdf", "scan"):
            measured["furniture"] = furniture(kind)
        if not args.no_questions and kind != "scan":
            measured["answers"] = ask_all(kind, asked)
        elif "answers" in previous.get(kind, {}):
            measured["answers"] = previous[kind]["answers"] | {"from_an_earlier_run": True}
    # Formats not measured in this run keep their figures from the last run that measured them, with
    # that run's date and commit (the file's own are this run's) and a flag saying so.
    result["formats"] = {
        k: result["formats"].get(k) or previous[k] | {"from_an_earlier_run": True}
        for k in FORMATS
        if k in result["formats"] or k in previous
    }
    print(write_result("formats", result))
    summary = {k: {"fidelity": v.get("fidelity", {}).get("share"), "sections": v.get("fidelity", {}).get("same_section_share"),
                   "furniture": v.get("furniture", {}).get("share"), "gold_in_answer": v.get("answers", {}).get("share"),
                   "ingest_vs_raw": v["ingest"].get("ingest_vs_raw"), "ocr_pages_per_s": v["ingest"].get("ocr_pages_per_s")}
               for k, v in result["formats"].items()}  # fmt: skip
    print(json.dumps(summary, indent=1))
    print(plot(result))


if __name__ == "__main__":
    main()
