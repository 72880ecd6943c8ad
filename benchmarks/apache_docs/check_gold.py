"""Check the apache_docs QA set against the Apache HTTP Server 2.4 manual HTML.

Usage: check_gold.py [MANUAL_DIR]   (default: /usr/share/doc/apache2-doc/manual)

MANUAL_DIR is the whole manual tree (all languages); the pages in pages.txt are
read from its en/ folder. Checks that every page in pages.txt exists, that every
answerable question's gold strings occur in its page's main text (code blocks
excluded), that every unanswerable question's key terms ("absent") occur nowhere
in the whole manual (every language), and that the tune/held_out parts are even
halves covering every group. Exits non-zero on any problem.
"""

import html
import json
import re
import sys
from collections import Counter
from pathlib import Path

from bs4 import BeautifulSoup

HERE = Path(__file__).resolve().parent
DEFAULT_MANUAL = Path("/usr/share/doc/apache2-doc/manual")
PARTS = ("tune", "held_out")
PREFIX = "ap"

# Inside div#page-content: the "Available Languages" bars, the per-page table of contents
# (div#quickview), the "top" arrows and the language-toggle button are navigation, not content.
NAVIGATION = ("div#quickview", "div.toplang", "div.bottomlang", "div.top", "button", "script")
# The two pages without div#page-content (mod/directives.html, mod/quickreference.html):
# drop the page furniture around the content instead.
PAGE_FURNITURE = ("div#page-header", "div.up", "div#path", "div#footer")


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def main_text(path: Path) -> str:
    """Visible text of the page's main content (div#page-content), without code blocks."""
    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    main = soup.select_one("div#page-content")
    if main is None:
        main = soup.body
        for tag in main.select(", ".join(PAGE_FURNITURE)):
            tag.decompose()
    for tag in main.select(", ".join(NAVIGATION)):
        tag.decompose()
    for pre in main.find_all("pre"):
        pre.decompose()
    return norm(main.get_text(" "))


def all_docs_text(manual: Path) -> str:
    """Tag-stripped text of every HTML page in the manual, every language."""
    parts = []
    for path in sorted(manual.rglob("*.html")):
        raw = re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8", errors="replace"))
        parts.append(norm(html.unescape(raw)))
    return "\n".join(parts)


def group(page: str) -> str:
    if "/" in page:
        return page.split("/")[0]
    return "glossary" if page == "glossary.html" else "top"


def main() -> int:
    manual = (Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_MANUAL).resolve()
    docs = manual / "en"
    problems: list[str] = []
    pages = (HERE / "pages.txt").read_text().split()
    problems += [f"duplicate page {p}" for p, n in Counter(pages).items() if n > 1]
    problems += [f"missing page {p}" for p in pages if not (docs / p).is_file()]
    on_disk = sorted(str(p.relative_to(docs)) for p in docs.rglob("*.html"))
    if sorted(pages) != on_disk:
        problems.append(f"pages.txt is not every English page ({len(pages)} listed, {len(on_disk)} on disk)")

    questions = [json.loads(line) for line in (HERE / "questions.jsonl").read_text().splitlines() if line.strip()]
    ids = [q["id"] for q in questions]
    if ids != [f"{PREFIX}-{n:03d}" for n in range(1, len(questions) + 1)]:
        problems.append(f"ids are not exactly {PREFIX}-001..{PREFIX}-NNN in order")

    texts: dict[str, str] = {}
    everything = all_docs_text(manual)
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
                texts[page] = main_text(docs / page)
            problems += [f"{qid}: gold {g!r} not in {page}" for g in q["gold"] if norm(g) not in texts[page]]
        else:
            tally[("unanswerable", part)] += 1
            if q["gold"] or q["page"] is not None or not q.get("absent"):
                problems.append(f"{qid}: unanswerable needs gold [], page null and absent terms")
            problems += [
                f"{qid}: key term {t!r} occurs in the manual" for t in q.get("absent", []) if norm(t) in everything
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


if __name__ == "__main__":
    sys.exit(main())
