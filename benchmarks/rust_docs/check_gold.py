"""Check the rust_docs QA set against Rust's HTML documentation (Debian package rust-doc).

Usage: check_gold.py [DOC_DIR]   (default: /usr/share/doc/rust-doc/html)

DOC_DIR is the whole of what rust-doc installs as HTML: The Rust Programming Language (book/),
Rust by Example (rust-by-example/), the Reference, the Rustonomicon, the Edition Guide, the rustc,
rustdoc and unstable books, the Embedded book and the standard library's API reference (std/,
core/, alloc/, ...). pages.txt names a subset of its pages, relative to it: the book's chapters and
appendices and a part of Rust by Example (see README.md). The checks are benchmarks/gold_check.py's:
gold strings in their page's main text (code blocks excluded), unanswerable key terms ("absent")
nowhere in the whole manual (every HTML page under DOC_DIR, the API reference and the other books
included, not only the subset), even tune/held_out halves covering every group. A second pass
checks that Cairn's extractor (readers.extract.extract_file) reads every page in pages.txt, and that
every gold string is also in the text it makes of its page, and reports any page or string that
fails. Exits non-zero on any problem.
"""

import sys
from pathlib import Path

from bs4 import BeautifulSoup

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from gold_check import grouping_problems, run_checks, without_code  # noqa: E402

DEFAULT_DOCS = Path("/usr/share/doc/rust-doc/html")

# Both books are mdBook output with the same template. Around the content: the sidebar
# (nav#sidebar: the whole table of contents, "1. Getting Started", "1.1. Installation", ...), the
# menu bar (the Toggle Table of Contents / Change theme / Search buttons, the theme list "Light
# (default)", "Rust", "Coal", "Navy", "Ayu", the book's title "The Rust Programming Language" or
# "Rust By Example" in h1.menu-title, the print and Git repository links), the hidden search form
# ("Search this book ..."), the previous/next chapter arrows (nav.nav-wrapper, nav.nav-wide-wrapper)
# and scripts. The content is the page's <main> element; all of that lies outside it. Inside it, the
# only thing left out is a script, should there be one; code blocks (<pre>) go too (without_code).
NAVIGATION = ("script",)

# By the book's chapters (chNN-MM-*.html) and appendices, and one group for Rust by Example.
GROUPS = {
    "basics": ["ch00", "ch01", "ch02", "ch03"],  # introduction, installation, Cargo, guessing game, concepts
    "ownership": ["ch04", "ch05", "ch06", "ch08"],  # ownership, structs, enums and match, collections
    "modules-errors": ["ch07", "ch09", "ch10"],  # packages and modules, error handling, generics and traits
    "testing-io": ["ch11", "ch12", "ch13"],  # tests, the command-line project, closures and iterators
    "cargo-tools": ["ch14", "appendix-04", "appendix-05", "appendix-07"],  # Cargo and crates.io, tools, editions
    "memory-threads": ["ch15", "ch16", "ch20"],  # smart pointers, concurrency, the web server project
    "advanced": ["ch17", "ch18", "ch19", "appendix-01", "appendix-02", "appendix-03"],  # OOP, patterns, unsafe
    "by-example": ["rust-by-example/"],  # the Rust by Example pages in pages.txt
}  # fmt: skip


def main_text(path: Path) -> str:
    """Visible text of the page's <main> element (mdBook's content area, without the sidebar, menu
    bar, search form and chapter arrows around it), without code blocks (pre)."""
    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    main = soup.find("main")
    for tag in main.select(", ".join(NAVIGATION)):
        tag.decompose()
    return without_code(main)


def group(page: str) -> str:
    if page.startswith("rust-by-example/"):
        return "by-example"
    if page.startswith("book/"):
        name = page.removeprefix("book/")
        key = name[:11] if name.startswith("appendix-") else name[:4]
        for g, keys in GROUPS.items():
            if key in keys:
                return g
    return "other"


def extra_checks(docs: Path) -> list[str]:
    """pages.txt is sorted, every page in it has a group, and every answerable question's page
    too; no answerable question shares its page with more than one other."""
    return grouping_problems(HERE, group, per_page=2)


if __name__ == "__main__":
    sys.exit(run_checks(HERE, default_docs=DEFAULT_DOCS, prefix="rs", main_text=main_text, group=group,
                        extra_checks=extra_checks))  # fmt: skip
