"""Check the apache_docs QA set against the Apache HTTP Server 2.4 manual HTML.

Usage: check_gold.py [MANUAL_DIR]   (default: /usr/share/doc/apache2-doc/manual)

MANUAL_DIR is the whole manual tree (all languages); the pages in pages.txt are read from its en/
folder, and must be every page there. The checks are benchmarks/gold_check.py's: gold strings in
their page's main text (code blocks excluded), unanswerable key terms ("absent") nowhere in the
whole manual (every language), even tune/held_out halves covering every group. Exits non-zero on
any problem.
"""

import sys
from pathlib import Path

from bs4 import BeautifulSoup

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from gold_check import check_set, page_group, without_code  # noqa: E402

DEFAULT_MANUAL = Path("/usr/share/doc/apache2-doc/manual")
# Inside div#page-content: the "Available Languages" bars, the per-page table of contents
# (div#quickview), the "top" arrows and the language-toggle button are navigation, not content.
NAVIGATION = ("div#quickview", "div.toplang", "div.bottomlang", "div.top", "button", "script")
# The two pages without div#page-content (mod/directives.html, mod/quickreference.html):
# drop the page furniture around the content instead.
PAGE_FURNITURE = ("div#page-header", "div.up", "div#path", "div#footer")


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
    return without_code(main)


def group(page: str) -> str:
    return page_group(page, top="top")


if __name__ == "__main__":
    manual = (Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_MANUAL).resolve()
    sys.exit(
        check_set(HERE, docs=manual / "en", everything=manual, prefix="ap", main_text=main_text, group=group,
                  every_page=True)
    )  # fmt: skip
