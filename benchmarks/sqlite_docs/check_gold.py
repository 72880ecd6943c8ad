"""Check the sqlite_docs QA set against SQLite's HTML documentation (Debian package sqlite3-doc).

Usage: check_gold.py [DOC_DIR]   (default: /usr/share/doc/sqlite3)

DOC_DIR is the whole manual as sqlite3-doc installs it; pages.txt names a subset of its pages,
relative to it. The checks are benchmarks/gold_check.py's: gold strings in their page's main text
(code blocks excluded), unanswerable key terms ("absent") nowhere in the whole manual (every HTML
page under DOC_DIR: release logs, syntax diagrams and all c3ref/ pages included), even
tune/held_out halves covering every group. A second pass checks that Cairn's extractor
(readers.extract.extract_file) reads every page in pages.txt, and that every gold string is also in
the text it makes of its page, and reports any page or string that fails; it runs where Django and Cairn's settings can be loaded and is skipped with a note
otherwise. Exits non-zero on any problem.
"""

import sys
from pathlib import Path

from bs4 import BeautifulSoup

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from gold_check import grouping_problems, run_checks, without_code  # noqa: E402

DEFAULT_DOCS = Path("/usr/share/doc/sqlite3")

# The site template around every page: the header (logo, the "Small. Fast. Reliable. Choose any
# three." tagline, the Home/About/Documentation/Download/License/Support/Purchase menus and the
# search form, all in the div.nosearch that holds img.logo), its scripts, and the footer paragraph
# "This page last modified on ... UTC". Inside the content: the collapsible "Table Of Contents"
# (div.fancy_toc), the syntax diagrams (inline SVG whose labels are not prose) with their
# hide/show buttons. On c3ref/ pages: the "SQLite C Interface" link above the title, and the
# closing "See also lists of Objects, Constants, and Functions." paragraph.
NAVIGATION = ("script", "div.fancy_toc", "svg", "button")

GROUPS = {
    "sql": [
        "lang_altertable", "lang_analyze", "lang_attach", "lang_comment", "lang_conflict", "lang_createindex",
        "lang_createtable", "lang_createtrigger", "lang_createview", "lang_createvtab", "lang_delete", "lang_detach",
        "lang_dropindex", "lang_droptable", "lang_droptrigger", "lang_dropview", "lang_explain", "lang_expr",
        "lang_indexedby", "lang_insert", "lang_keywords", "lang_naming", "lang_reindex", "lang_replace",
        "lang_returning", "lang_savepoint", "lang_select", "lang_transaction", "lang_update", "lang_upsert",
        "lang_vacuum", "lang_with",
    ],
    "functions": ["lang_corefunc", "lang_datefunc", "lang_aggfunc", "lang_mathfunc", "json1", "windowfunctions",
                  "printf"],
    "pragmas-limits": ["pragma", "limits", "compile", "uri"],
    "types-schema": [
        "datatype3", "stricttables", "withoutrowid", "rowidtable", "autoinc", "nulls", "quirks", "flextypegood",
        "gencol", "foreignkeys", "partialindex", "expridx", "rowvalue",
    ],
    "storage": [
        "wal", "isolation", "lockingv3", "tempfiles", "inmemorydb", "atomiccommit", "sharedcache", "threadsafe",
        "howtocorrupt", "fileformat2", "mmap", "backup",
    ],
    "tools": ["cli", "fts5", "rtree", "loadext", "csv", "series", "sqldiff", "dbstat", "zipfile"],
    "general": ["faq", "whentouse", "different", "serverless", "zeroconf", "selfcontained", "features"],
    "c-api": ["cintro"],
}  # fmt: skip
PAGE_GROUP = {f"{name}.html": g for g, names in GROUPS.items() for name in names}


def main_text(path: Path) -> str:
    """Visible text of the page body less the site's header, footer and navigation, without code
    blocks (pre, which includes every div.codeblock and the c3ref/ declarations)."""
    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    main = soup.body
    for div in main.select("div.nosearch"):
        if div.select_one("img.logo"):
            div.decompose()  # the site header
        else:
            for link in div.select("a[href='intro.html']"):
                link.decompose()  # c3ref/: "SQLite C Interface"
    for tag in main.select(", ".join(NAVIGATION)):
        tag.decompose()
    for p in main.find_all("p"):
        text = " ".join(p.get_text(" ").split())
        if text.startswith("This page last modified on") or text.startswith("See also lists of Objects"):
            p.decompose()
    return without_code(main)


def group(page: str) -> str:
    if page.startswith("c3ref/"):
        return "c-api"
    return PAGE_GROUP.get(page, "other")


def extra_checks(docs: Path) -> list[str]:
    """pages.txt sorted, every page in it and every answerable question's page in a group."""
    return grouping_problems(HERE, group)


if __name__ == "__main__":
    sys.exit(run_checks(HERE, default_docs=DEFAULT_DOCS, prefix="sq", main_text=main_text, group=group,
                        extra_checks=extra_checks))  # fmt: skip
