"""Extraction coverage: the share of the words a reader of a page sees, navigation aside, that Cairn keeps.

    .venv/bin/python benchmarks/extraction_coverage.py MANUAL=FOLDER [MANUAL=FOLDER ...] [--lowest 3]

For every HTML and Markdown file under each folder, the words a browser shows are counted, less
navigation, and compared with the words of the text Cairn stores for it (readers.extract, as an upload
or `ingest` reads it) and of its chunks (corpus.chunking, with one token per word: which words a
chunk keeps does not depend on the model's tokenizer). A word is a run of letters and digits, case
aside; a page's share is the words of its visible text found in the stored text, each as many times
as it is shown at most. Headings, code, tables and boxes (tips, notes, sidebars) count; table rows
repeat their headers in the stored text, which counts for nothing extra.

What a browser shows is read here on its own terms, not with readers.html's rules: the page's main
content (<main> or role=main, else its one <article>, else the body: outside it is the site's
frame), less what is hidden (<head>, scripts, styles, hidden and aria-hidden elements, comments),
widgets (forms, buttons), navigation by name (nav, header without a page title, footer, the ARIA
landmarks navigation/banner/contentinfo/search/menu, class words such as nav*, menu, breadcrumb,
toc, pagination, related, footer) and link-dense blocks (at least half the words in links, with two
links or more). An <aside> or a "sidebar" is navigation here only when it is link-dense. Markdown is
rendered as CommonMark (markdown-it-py) and read the same way. A page Cairn refuses as navigation
(an A-Z index, a table of contents) is listed apart and left out of the share, and so is a page
over --max-bytes (SQLite's 1 MB cross-reference indexes, Node.js's all.html that repeats every
other page): this reading of a page takes time in its size times its depth.

Floor: every manual keeps at least 99% of its words. Writes benchmarks/results/extraction_coverage.json.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

from tqdm import tqdm

from _common import ROOT, write_result

FLOOR = 0.99
_WORD = re.compile(r"\w+")
_HIDDEN = {
    "head", "script", "style", "noscript", "template", "svg", "title", "iframe", "object", "embed", "canvas",
    "map", "form", "button", "input", "select", "textarea", "nav", "footer",
}  # fmt: skip
_NAV_ROLES = {"navigation", "banner", "contentinfo", "search", "menu", "menubar", "toolbar"}
_NAV_WORDS = {
    "menu", "breadcrumb", "breadcrumbs", "toc", "pagination", "pager", "footer", "header", "related", "skip",
    "headerlink", "prevnext", "banner", "masthead",
}  # fmt: skip
_BLOCKS = {
    "p", "div", "section", "article", "aside", "main", "blockquote", "figure", "figcaption", "details",
    "summary", "ul", "ol", "li", "dl", "dt", "dd", "table", "thead", "tbody", "tr", "td", "th", "caption",
    "pre", "hr", "br", "center", "address", "fieldset", "body", "header", "h1", "h2", "h3", "h4", "h5", "h6",
}  # fmt: skip
_DENSE = {"div", "section", "aside", "ul", "ol", "dl", "table", "p", "td", "li", "details"}


_LINE_BROKEN = re.compile(r"([a-z])[-\u2010]\n[ \t]*([a-z])")


def words(text: str) -> Counter:
    return Counter(w.lower() for w in _WORD.findall(text))


def kept_share(visible: Counter, stored: Counter) -> tuple[int, int]:
    """(words kept, words shown): each shown word counts as many times as the stored text holds it, at most."""
    return sum(min(n, stored[w]) for w, n in visible.items()), sum(visible.values())


def _is_navigation(tag) -> bool:
    if tag.name in _HIDDEN or tag.get("role") in _NAV_ROLES:
        return True
    if tag.get("aria-hidden") == "true" or tag.has_attr("hidden"):
        return True
    if "display:none" in str(tag.get("style", "")).replace(" ", ""):
        return True
    if tag.name == "header" and not tag.find(["h1", "h2"]):
        return True
    if tag.name not in _BLOCKS or tag.find(["h1", "h2"]) is not None:
        return False
    names = [str(tag.get("id", ""))] + list(tag.get("class") or [])
    tokens = {t for name in names for t in re.split(r"[-_\s]+", name.lower()) if t}
    return bool(_NAV_WORDS & tokens) or any(t.startswith("nav") for t in tokens)


def _link_dense(tag) -> bool:
    if tag.name not in _DENSE:
        return False
    links = tag.find_all("a")
    if len(links) < 2:
        return False
    shown = sum(words(tag.get_text(" ")).values())
    linked = sum(sum(words(a.get_text(" ")).values()) for a in links)
    return shown > 0 and linked * 2 >= shown


def _shown(tag, parts: list[str]) -> None:
    """The text as a browser lays it out: inline elements run together, blocks set apart."""
    from bs4 import NavigableString, Tag

    for child in tag.children:
        if isinstance(child, NavigableString):
            parts.append(str(child))
        elif isinstance(child, Tag):
            block = child.name in _BLOCKS
            parts.append(" " if block else "")
            _shown(child, parts)
            parts.append(" " if block else "")


def visible_words(html: str) -> Counter:
    """The words a browser shows of the page's main content, navigation aside."""
    from bs4 import BeautifulSoup, Comment

    soup = BeautifulSoup(html, "html.parser")
    for comment in soup.find_all(string=lambda s: isinstance(s, Comment)):
        comment.extract()
    for tag in soup.find_all(_is_navigation):
        tag.decompose()
    root = soup.find("main") or soup.find(attrs={"role": "main"})
    if root is None:
        articles = soup.find_all("article")
        root = articles[0] if len(articles) == 1 else (soup.body or soup)
    for tag in root.find_all(_link_dense):
        tag.decompose()
    parts: list[str] = []
    _shown(root, parts)
    # A word a typesetter broke across lines ("mea-" / "sure" in a troff manual page set in <pre>)
    # is one word to its reader.
    return words(_LINE_BROKEN.sub(r"\1\2", "".join(parts)))


def rendered_markdown(raw: str) -> str:
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True}).enable("table").render(raw)


def page_coverage(path: Path) -> dict:
    """One page's words shown, kept in its stored text and in its chunks; refused says why Cairn refused it."""
    from corpus.chunking import chunk_text
    from readers.extract import ExtractedDocument, ExtractionError, extract_file

    raw = path.read_text(encoding="utf-8", errors="replace")
    visible = visible_words(rendered_markdown(raw) if path.suffix.lower() in (".md", ".markdown") else raw)
    try:
        (document,) = list(extract_file(path, source=str(path)))
    except ExtractionError as refused:
        return {"page": str(path), "shown": sum(visible.values()), "refused": str(refused)}
    assert isinstance(document, ExtractedDocument)
    chunks = chunk_text(
        document.text,
        count_tokens=lambda texts: [len(t.split()) for t in texts],
        split_tokens=lambda text, n: [" ".join(text.split()[i : i + n]) for i in range(0, len(text.split()), n)],
    )
    kept, shown = kept_share(visible, words(document.text))
    in_chunks, _ = kept_share(visible, words("\n".join(c.text for c in chunks)))
    return {"page": str(path), "shown": shown, "kept": kept, "kept_in_chunks": in_chunks}


def manual_coverage(name: str, folder: Path, lowest: int, max_bytes: int) -> dict:
    found = sorted(
        p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in (".html", ".htm", ".md", ".markdown")
    )
    pages = [p for p in found if p.stat().st_size <= max_bytes]
    rows = [page_coverage(p) for p in tqdm(pages, desc=name, unit="page")]
    read = [r for r in rows if "refused" not in r and r["shown"]]
    shown = sum(r["shown"] for r in read)
    share = sum(r["kept"] for r in read) / shown if shown else 1.0
    share_chunks = sum(r["kept_in_chunks"] for r in read) / shown if shown else 1.0
    for r in read:
        r["share"] = round(r["kept"] / r["shown"], 4)
    worst = sorted(read, key=lambda r: (r["share"], -r["shown"]))[:lowest]
    return {
        "folder": str(folder),
        "pages": len(rows),
        "skipped_over_max_bytes": [str(p) for p in found if p.stat().st_size > max_bytes],
        "refused": [{"page": r["page"], "shown": r["shown"], "why": r["refused"]} for r in rows if "refused" in r],
        "words_shown": shown,
        "kept": round(share, 4),
        "kept_in_chunks": round(share_chunks, 4),
        "floor_met": share >= FLOOR,
        "lowest": [{k: r[k] for k in ("page", "share", "shown", "kept")} for r in worst],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("manuals", nargs="+", help="NAME=FOLDER: a manual's name and the folder of its pages")
    parser.add_argument("--lowest", type=int, default=3, help="how many of each manual's lowest pages to report")
    parser.add_argument("--max-bytes", type=int, default=400_000, help="pages larger than this are skipped")
    parser.add_argument("--result", default="extraction_coverage", help="name of the results file")
    args = parser.parse_args()
    import sys

    sys.path.insert(0, str(ROOT))
    manuals = {}
    for spec in args.manuals:
        name, _, folder = spec.partition("=")
        if not folder:
            name, folder = Path(spec).name, spec
        manuals[name] = manual_coverage(name, Path(folder), args.lowest, args.max_bytes)
    for name, m in manuals.items():
        low = m["lowest"][0] if m["lowest"] else {"page": "-", "share": 1.0}
        print(
            f"{name}: {m['kept']:.2%} of {m['words_shown']:,} words kept ({m['kept_in_chunks']:.2%} in chunks), "
            f"{m['pages']} pages ({len(m['skipped_over_max_bytes'])} more skipped), {len(m['refused'])} refused as "
            f"navigation; lowest {low['share']:.2%} {low['page']}"
        )
    path = write_result(args.result, {"floor": FLOOR, "manuals": manuals})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
