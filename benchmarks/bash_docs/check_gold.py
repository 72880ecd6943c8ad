"""Check the bash_docs QA set against the GNU Bash Reference Manual (bash-doc's HTML).

Usage: check_gold.py [DOC_DIR]   (default: /usr/share/doc/bash)

The manual is one HTML page, bashref.html, so its groups are its chapters: each answerable question
names the texinfo node its answer is in ("section": the id of that node's <div>), and the node's
chapter (or appendix) is its group. The shared checks are benchmarks/gold_check.py's: gold strings
in the page's main text (code blocks excluded), unanswerable key terms ("absent") in no HTML file
under DOC_DIR (bashref.html, the bash.html man page, examples/INDEX.html), even tune/held_out
halves. This script adds that each gold string is in its node's main text, that every chapter with
questions is in both parts, and that each gold string survives Cairn's extractor
(readers.extract.extract_file) on the page. Exits non-zero on any problem.
"""

import json
import sys
from collections import Counter
from pathlib import Path

from bs4 import BeautifulSoup

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from gold_check import PARTS, check_set, gold_outside_extracted_text, norm, without_code  # noqa: E402

DEFAULT_DOCS = Path("/usr/share/doc/bash")
# Texinfo's page furniture, not content: the "Next: … Previous: … Up: … [Contents][Index]" bar
# above every node, the table of contents, each chapter's menu of its sections, and the index
# appendix (A-Z tables of links).
NAVIGATION = ("div.header", "div#SEC_Contents", "div.contents", "ul.section-toc", "table.menu", "div#Indexes")
CHAPTERS = ("chapter", "appendix", "unnumbered")


def content(path: Path) -> BeautifulSoup:
    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    for tag in soup.body.select(", ".join(NAVIGATION)):
        tag.decompose()
    for pre in soup.body.find_all("pre"):
        pre.decompose()
    return soup


def main_text(path: Path) -> str:
    """Visible text of the page's body less the texinfo navigation, without code blocks."""
    return without_code(content(path).body)


def node(soup: BeautifulSoup, section: str):
    """The <div> of a texinfo node (with its subsections), or None."""
    return soup.find("div", id=section)


def chapter_of(div) -> str | None:
    for d in [div, *div.find_parents("div")]:
        if set(d.get("class", [])) & set(CHAPTERS):
            return d["id"]
    return None


def check_sections(docs: Path, questions: list[dict]) -> tuple[list[str], Counter]:
    problems: list[str] = []
    tally: Counter = Counter()
    soups: dict[str, BeautifulSoup] = {}
    for q in questions:
        if not q["answerable"]:
            continue
        page, section = q["page"], q.get("section")
        if page not in soups:
            soups[page] = content(docs / page)
        div = node(soups[page], section) if section else None
        if div is None:
            problems.append(f"{q['id']}: no node {section!r} in {page}")
            continue
        chapter = chapter_of(div)
        tally[(chapter, q["part"])] += 1
        text = norm(div.get_text(" "))
        problems += [f"{q['id']}: gold {g!r} not in node {section}" for g in q["gold"] if norm(g) not in text]
    chapters = sorted({c for c, _ in tally})
    problems += [f"chapter {c} missing from {p}" for c in chapters for p in PARTS if not tally[(c, p)]]
    return problems, tally


if __name__ == "__main__":
    docs = (Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DOCS).resolve()
    status = check_set(HERE, docs=docs, everything=docs, prefix="bs", main_text=main_text,
                       group=lambda page: page.removesuffix(".html"))  # fmt: skip
    questions = [json.loads(line) for line in (HERE / "questions.jsonl").read_text().splitlines() if line.strip()]
    problems, tally = check_sections(docs, questions)
    print(f"\n{'chapter':<32}{'tune':>6}{'held_out':>10}")
    for c in sorted({c for c, _ in tally}):
        print(f"{c:<32}{tally[(c, 'tune')]:>6}{tally[(c, 'held_out')]:>10}")
    problems += gold_outside_extracted_text(docs, questions)
    for problem in problems:
        print("PROBLEM:", problem)
    print("sections and extraction:", "OK" if not problems else f"{len(problems)} problem(s)")
    sys.exit(status or (1 if problems else 0))
