"""The checks every documentation QA set (benchmarks/*_docs/) passes, whatever its manual: its
pages exist, each answerable question's gold strings occur in its page's main text (code blocks
excluded), each unanswerable question's key terms ("absent") occur nowhere in the whole manual,
and the tune/held_out parts are even halves covering every page group. A set's own check_gold.py
says where its manual is, what a page's main content is and how pages group.
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

PARTS = ("tune", "held_out")


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def page_group(page: str, *, top: str) -> str:
    """A page's group: its folder, the glossary, or `top` for the other top-level pages."""
    if "/" in page:
        return page.split("/")[0]
    return "glossary" if page == "glossary.html" else top


def without_code(main) -> str:
    """The visible text of a page's main element (a BeautifulSoup tag), its code blocks removed: a
    gold string must be said in prose, not only shown in an example."""
    for pre in main.find_all("pre"):
        pre.decompose()
    return main.get_text(" ")


def questions_of(here: Path) -> list[dict]:
    """The set's questions (its questions.jsonl)."""
    return [json.loads(line) for line in (here / "questions.jsonl").read_text().splitlines() if line.strip()]


def grouping_problems(here: Path, group: Callable[[str], str], *, per_page: int | None = None) -> list[str]:
    """pages.txt sorted, every page of it and every answerable question's page in a group (`group`
    gives "other" for none); with `per_page`, at most that many answerable questions on one page."""
    pages = (here / "pages.txt").read_text().split()
    problems = ["pages.txt is not sorted"] if pages != sorted(pages) else []
    problems += [f"page {p} has no group" for p in pages if group(p) == "other"]
    answerable = [q for q in questions_of(here) if q["answerable"]]
    problems += [f"{q['id']}: page {q['page']} has no group" for q in answerable if group(q["page"]) == "other"]
    if per_page is not None:
        used = Counter(q["page"] for q in answerable)
        problems += [f"{n} questions on {page} (at most {per_page})" for page, n in used.items() if n > per_page]
    return problems


def all_docs_text(root: Path) -> str:
    """Tag-stripped text of every HTML page under `root`."""
    parts = []
    for path in sorted(root.rglob("*.html")):
        raw = re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8", errors="replace"))
        parts.append(norm(html.unescape(raw)))
    return "\n".join(parts)


def check_set(
    here: Path, *, docs: Path, everything: Path, prefix: str, main_text: Callable[[Path], str],
    group: Callable[[str], str], every_page: bool = False,
) -> int:  # fmt: skip
    """Check the set in `here` against the pages under `docs` (unanswerable terms against all pages
    under `everything`); with `every_page`, pages.txt must list every page under `docs`. Prints the
    questions per group and part and each problem; returns the exit status."""
    problems: list[str] = []
    pages = (here / "pages.txt").read_text().split()
    problems += [f"duplicate page {p}" for p, n in Counter(pages).items() if n > 1]
    problems += [f"missing page {p}" for p in pages if not (docs / p).is_file()]
    if every_page:
        on_disk = sorted(str(p.relative_to(docs)) for p in docs.rglob("*.html"))
        if sorted(pages) != on_disk:
            problems.append(f"pages.txt is not every page ({len(pages)} listed, {len(on_disk)} on disk)")

    questions = questions_of(here)
    if [q["id"] for q in questions] != [f"{prefix}-{n:03d}" for n in range(1, len(questions) + 1)]:
        problems.append(f"ids are not exactly {prefix}-001..{prefix}-NNN in order")

    texts: dict[str, str] = {}
    absent_from = all_docs_text(everything)
    tally: Counter = Counter()
    for q in questions:
        qid, part = q["id"], q["part"]
        if part not in PARTS:
            problems.append(f"{qid}: bad part {part!r}")
        if q["answerable"]:
            page = q["page"]
            tally[(group(page), part)] += 1
            if page not in pages:
                problems.append(f"{qid}: page {page} not in pages.txt")
                continue
            if not 1 <= len(q["gold"]) <= 3:
                problems.append(f"{qid}: needs 1-3 gold strings")
            if "absent" in q:
                problems.append(f"{qid}: answerable question has absent terms")
            if page not in texts:
                texts[page] = norm(main_text(docs / page))
            problems += [f"{qid}: gold {g!r} not in {page}" for g in q["gold"] if norm(g) not in texts[page]]
        else:
            tally[("unanswerable", part)] += 1
            if q["gold"] or q["page"] is not None or not q.get("absent"):
                problems.append(f"{qid}: unanswerable needs gold [], page null and absent terms")
            problems += [
                f"{qid}: key term {t!r} occurs in the docs" for t in q.get("absent", []) if norm(t) in absent_from
            ]

    for answerable in (True, False):
        counts = Counter(q["part"] for q in questions if q["answerable"] is answerable)
        if counts["tune"] != counts["held_out"]:
            problems.append(f"answerable={answerable}: parts uneven {dict(counts)}")
    groups = sorted({g for g, _ in tally})
    problems += [f"group {g} missing from {p}" for g in groups for p in PARTS if not tally[(g, p)]]

    print(f"{len(pages)} pages, {len(questions)} questions")
    print(f"{'group':<14}{'tune':>6}{'held_out':>10}")
    for g in groups:
        print(f"{g:<14}{tally[(g, 'tune')]:>6}{tally[(g, 'held_out')]:>10}")
    answerable = sum(q["answerable"] for q in questions)
    print(f"answerable {answerable}, unanswerable {len(questions) - answerable}")
    for problem in problems:
        print("PROBLEM:", problem)
    print("OK" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


def gold_outside_extracted_text(docs: Path, questions: list[dict]) -> list[str]:
    """Each answerable question's gold strings in the text Cairn's extractor makes of its page
    (whitespace collapsed, lower-cased), so that a miss cannot be put down to extraction: the
    problems, a page the extractor refuses among them."""
    import os
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from readers.extract import ExtractedDocument, ExtractionError, extract_file

    problems: list[str] = []
    texts: dict[str, str] = {}
    for q in questions:
        if not q["answerable"]:
            continue
        page = q["page"]
        if page not in texts:
            try:
                extracted = [d for d in extract_file(docs / page, source=page) if isinstance(d, ExtractedDocument)]
            except ExtractionError as exc:
                problems.append(f"{q['id']}: Cairn's extractor refuses {page}: {exc}")
                extracted = []
            texts[page] = norm(" ".join(d.text for d in extracted))
        problems += [f"{q['id']}: gold {g!r} not in Cairn's extracted text of {page}"
                     for g in q["gold"] if norm(g) not in texts[page]]  # fmt: skip
    return problems


def extraction_problems(here: Path, docs: Path, questions: list[dict]) -> list[str]:
    """Cairn's extractor reads every page of the set's pages.txt, and every gold string is in the
    text it makes of its page (gold_outside_extracted_text)."""
    problems = gold_outside_extracted_text(docs, questions)  # sets Cairn up, so its extractor imports
    from readers.extract import extract_file

    for page in (here / "pages.txt").read_text().split():
        try:
            if not any(getattr(d, "text", "") for d in extract_file(docs / page, source=page)):
                problems.append(f"extractor gave no text for {page}")
        except Exception as exc:  # noqa: BLE001 - ExtractionError and the like: report it
            problems.append(f"extractor failed on {page} ({type(exc).__name__}: {exc})")
    return problems


def run_checks(here: Path, *, default_docs: Path, prefix: str, main_text: Callable[[Path], str],
               group: Callable[[str], str], extra_checks: Callable[[Path], list[str]]) -> int:  # fmt: skip
    """A set's whole check, as its check_gold.py runs it: check_set, the set's own extra checks,
    then the extractor pass (extraction_problems; skipped with --no-extract). The manual's folder
    is the first argument, else `default_docs`. Prints every problem; returns the exit status."""
    import sys

    args = [a for a in sys.argv[1:] if a != "--no-extract"]
    docs = (Path(args[0]) if args else default_docs).resolve()
    status = check_set(here, docs=docs, everything=docs, prefix=prefix, main_text=main_text, group=group)
    problems = extra_checks(docs)
    if "--no-extract" not in sys.argv[1:]:
        extracted = extraction_problems(here, docs, questions_of(here))
        if not extracted:
            print("extractor pass: every page extracted; every gold string is in Cairn's extracted text of its page")
        problems += extracted
    for problem in problems:
        print("PROBLEM:", problem)
    print(f"{len(problems)} more problem(s) (the set's own checks, extracted text)" if problems else "more checks OK")
    return 1 if status or problems else 0
