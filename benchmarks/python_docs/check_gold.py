"""Check the python_docs QA set against the Python 3.11 documentation HTML.

Usage: check_gold.py [DOCS_DIR]   (default: /usr/share/doc/python3-doc/html)

The checks are benchmarks/gold_check.py's: every page in pages.txt exists, every answerable
question's gold strings occur in its page's main text (code blocks excluded), every unanswerable
question's key terms ("absent") occur nowhere in the whole documentation, and the tune/held_out
parts are even halves covering every group. Exits non-zero on any problem.
"""

import sys
from pathlib import Path

from bs4 import BeautifulSoup

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from gold_check import check_set, page_group, without_code  # noqa: E402

DEFAULT_DOCS = Path("/usr/share/doc/python3-doc/html")


def main_text(path: Path) -> str:
    """Visible text of the page's main content, without code blocks."""
    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    main = soup.select_one("div[role=main]") or soup.select_one("div.body")
    return without_code(main)


def group(page: str) -> str:
    return page_group(page, top="index")


if __name__ == "__main__":
    docs = (Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DOCS).resolve()
    sys.exit(check_set(HERE, docs=docs, everything=docs, prefix="py", main_text=main_text, group=group))
