"""HTML to Cairn's block text: the page's main content, its structure kept as light Markdown.

Documentation sites wrap every page in navigation (menus, breadcrumbs, "Prev Up Home Next", a
table of contents, a sidebar); stored as content it becomes 1 chunk in 5 and reaches answers. This
reader keeps what the author wrote and how it was laid out, in the block syntax that
readers.blocks.parse_blocks reads back:

- ``#``-headings for h1-h6 (they give each chunk its section path);
- paragraphs separated by blank lines; list items as ``- item``;
- definition lists as ``term`` followed by ``: definition`` lines (Pandoc's syntax), so a setting's
  "The default is replica." stays under ``wal_level``;
- table rows as ``| Header: cell; Header: cell`` (cells never glued, each with its header);
- ``pre`` blocks fenced with ``````` and kept verbatim (a transcript's typed commands with their prompts);
- boxes set in the text (tips, notes, warnings, sidebars, asides, "> **Note**" blockquotes) under
  their own title: "Note:" before the box's text when the title only names its kind, the title as
  the term of the box's paragraphs when it names a subject ("TIP: Incremental updates").

Boilerplate is detected, not configured per site: semantic elements and ARIA roles (nav, header,
footer; navigation, banner, contentinfo, search), class/id words used for navigation (menu,
breadcrumb, related, toc...), and link-dense blocks (mostly link text). An <aside> or a "sidebar"
is a manual's box as often as a site's column of links: it is navigation only when it holds no
prose (holds_prose). A page that is mostly links (an A-Z index, a table of contents) is refused as
a navigation page. benchmarks/extraction_coverage.py measures what is kept against what a browser
shows.

Built on BeautifulSoup rather than a news-article extractor (trafilatura, readability): those score
paragraphs of prose and drop the definition lists, tables and code that manuals are made of.
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup, Comment, NavigableString, Tag

from readers.blocks import row_text
from readers.manpage import is_manpage, manpage_blocks

_DROP_TAGS = (
    "head", "script", "style", "noscript", "template", "svg", "title", "nav", "footer",
    "form", "button", "input", "select", "textarea", "iframe", "object", "embed", "canvas", "map",
)  # fmt: skip
_DROP_ROLES = {"navigation", "banner", "contentinfo", "search", "menu", "menubar", "toolbar"}
# Whole class/id tokens (split on - and _) that name navigation, and substrings that only navigation uses.
_NAV_TOKENS = {
    "nav", "navbar", "navigation", "menu", "breadcrumb", "breadcrumbs", "related", "toc",
    "pagination", "pager", "skip", "cookie", "cookies", "banner", "masthead", "share", "social",
    "footer", "header", "topbar", "headerlink", "prevnext", "searchbox", "switcher", "placeholder",
}  # fmt: skip
_WORD_BREAK = re.compile(r"[-_\s]+")  # between the words of a class name ("admonition-title")
_NAV_SUBSTRINGS = ("navbar", "breadcrumb", "navigation", "footer", "menu-wrapper", "switcher")
# A box set beside the text: a manual's tip or note (DocBook's <div class="sidebar">, Sphinx's
# <aside class="sidebar">) as often as a site's column of links. Its class does not say which: its
# text does (holds_prose).
_BESIDE = "sidebar"
# Class words of the boxes a manual sets inside its text: DocBook's and Sphinx's admonitions, GitHub's
# "markdown-alert", callouts. A title that is only one of these names the box's kind, not its subject.
_BOX_KINDS = {
    "note", "tip", "hint", "warning", "caution", "important", "attention", "danger", "error", "seealso",
    "admonition", "callout", "alert", "sidebar", "topic",
}  # fmt: skip
_KIND_TITLES = _BOX_KINDS | {"see also", "example", "remark", "info", "todo"}
PROSE_WORDS = 8  # a box holds prose when it has at least this many words outside its links, and a sentence
_CODE_TAGS = {"code", "tt", "kbd", "samp"}
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_BLOCKS = {
    "p", "div", "section", "article", "aside", "main", "blockquote", "figure", "figcaption", "details", "summary",
    "ul", "ol", "li", "dl", "dt", "dd", "table", "pre", "hr", "br", "center", "address", "fieldset", "body",
    *_HEADINGS,
}  # fmt: skip
# Anchor glyphs that themes put beside headings ("¶", "#", "§", "🔗").
_ANCHOR_GLYPH = re.compile(r"^\s*[¶#§\U0001f517]\s*$")
LINK_DENSE = 0.6  # a block whose text is at least this share of link text is navigation...
LINK_DENSE_MIN_LINKS = 3  # ...when it holds at least this many links
SHORT_LINK_BAR_WORDS = 6  # at most this many words besides the links, and no sentence: a link bar
INDEX_PAGE = 0.5  # a page whose main text is at least this share of link text is an index


# Elements inside elements. Documentation pages go about 25 deep (Node.js's API pages: 23); the passes
# below read each block's subtree, so their time is the page's size times its depth ("<p>" x 6,700,
# 20 KB: 14 s before the reader's recursion gave out).
MAX_DEPTH = 100


class NavigationPage(ValueError):
    """The page is an index or table of contents: links, not content."""


class TooDeep(ValueError):
    """The page nests elements deeper than MAX_DEPTH: no document does."""


def unfinished_markup_as_text(raw: str) -> str:
    """`raw` with every "<" after its last ">" written as "&lt;". No tag can open there, and
    html.parser reads each such "<" as text at the end of the input anyway, but in Pythons without
    the fix for python/cpython#135462 only after looking for a ">" to the end of the input from
    each one: "<a " x 6,700 (20 KB) took 2.2 s, quadratic. Same blocks for Node.js's 65 and npm's
    93 HTML pages."""
    last = raw.rfind(">")
    return raw[: last + 1] + raw[last + 1 :].replace("<", "&lt;")


# HTML leaves some end tags optional: a browser ends an open <p> where the next <p> opens, an <li>
# at the next <li>, and so on, where html.parser nests the next one inside it. Opening tag: (the open
# elements it ends, the elements whose insides it cannot reach out of).
_PARAGRAPH_SCOPE = {
    "html", "body", "table", "caption", "td", "th", "button", "object", "template", "div", "li", "dd", "dt",
    "blockquote", "section", "article", "aside", "header", "footer", "nav", "main", "figure", "details", "form",
}  # fmt: skip
_LIST_SCOPE = {"ul", "ol", "menu", "dl", "table", "html", "body"}
_IMPLIED_END = {
    "p": ({"p"}, _PARAGRAPH_SCOPE),
    "li": ({"li"}, _LIST_SCOPE),
    "dt": ({"dt", "dd"}, _LIST_SCOPE),
    "dd": ({"dt", "dd"}, _LIST_SCOPE),
    "tr": ({"tr"}, {"table", "thead", "tbody", "tfoot", "html", "body"}),
    "td": ({"td", "th"}, {"tr", "table", "html", "body"}),
    "th": ({"td", "th"}, {"tr", "table", "html", "body"}),
}


class _Soup(BeautifulSoup):
    """html.parser's tree with a browser's implied end tags (_IMPLIED_END). SQLite's result-code page,
    148 paragraphs never closed, was 150 elements deep and refused, its release notes (lists of <li>
    never closed) too; a page of them is as deep as it is long."""

    def handle_starttag(self, name, *args, **kwargs):
        if implied := _IMPLIED_END.get(name):
            ends, scope = implied
            tag = self.currentTag
            while tag is not None and tag.name not in scope:
                if tag.name in ends:
                    self.handle_endtag(tag.name)
                    break
                tag = tag.parent
        return super().handle_starttag(name, *args, **kwargs)


def html_to_blocks(raw: str) -> tuple[str, str]:
    """(title, block text) of an HTML page. Raises NavigationPage for a page that is mostly links,
    TooDeep for one nested deeper than MAX_DEPTH."""
    soup = _Soup(unfinished_markup_as_text(raw), "html.parser")
    if _deeper_than(soup, MAX_DEPTH):
        raise TooDeep(f"its elements are nested more than {MAX_DEPTH} deep")
    page_title = _squash(soup.title.get_text(" ")) if soup.title else ""  # DocBook's "4.&nbsp;Memcheck" too
    for comment in soup.find_all(string=lambda s: isinstance(s, Comment)):
        comment.extract()
    for tag in soup.find_all(_DROP_TAGS):
        tag.decompose()
    for tag in soup.find_all(_is_boilerplate):
        tag.decompose()
    root = _main_root(soup)
    text_length = len(_squash(root.get_text(" ")))
    link_length = sum(len(_squash(a.get_text(" "))) for a in root.find_all("a"))
    if text_length and link_length / text_length >= INDEX_PAGE and len(root.find_all("a")) >= 10:
        raise NavigationPage(f"a navigation or index page ({link_length / text_length:.0%} of its text is links)")
    for tag in root.find_all(_is_link_dense):
        tag.decompose()
    # The <title> less its site suffix ("json — JSON encoder — Python 3.11 documentation" reads as
    # its first heading "json — JSON encoder", "What is Ownership? - The Rust Programming Language"
    # as "What Is Ownership?"); the first heading when there is no <title>.
    heading = root.find(list(_HEADINGS))
    first = _squash(_text(heading)) if heading is not None else ""
    if first and re.match(rf"{re.escape(first)}\s*[—–|:·-]", page_title, re.IGNORECASE):
        page_title = first
    title = page_title or first
    blocks: list[str] = []
    _emit(root, blocks)
    if link_length and all(block.startswith("#") for block in blocks):  # headings over link lists
        raise NavigationPage("a navigation or index page (nothing but links once its link lists are set aside)")
    return title, "\n\n".join(blocks)


def _deeper_than(root: Tag, limit: int) -> bool:
    """Do elements nest more than `limit` deep under `root`? Counted without recursion."""
    stack = [(root, 0)]
    while stack:
        tag, depth = stack.pop()
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in tag.children if isinstance(child, Tag))
    return False


def _classes(tag: Tag, *, with_id: bool = True) -> list[str]:
    names = tag.get("class") or []
    names = names.split() if isinstance(names, str) else list(names)
    if with_id and tag.get("id"):
        names.append(str(tag["id"]))
    return [n.lower() for n in names]


def _class_words(tag: Tag, *, with_id: bool = True) -> set[str]:
    """The words of a tag's class names (and id): "admonition-title" is admonition and title."""
    return {word for name in _classes(tag, with_id=with_id) for word in _WORD_BREAK.split(name)}


def _is_boilerplate(tag: Tag) -> bool:
    if tag.name == "body" or tag.attrs is None:
        return False
    if tag.get("role") in _DROP_ROLES or tag.get("aria-hidden") == "true" or tag.has_attr("hidden"):
        return True
    if tag.name == "aside" or tag.get("role") == "complementary":
        return not holds_prose(tag)
    if tag.name == "header" and not tag.find(["h1", "h2"]):
        return True  # a page header (logo, menu); an article's header holds its title
    if tag.name == "a" and _ANCHOR_GLYPH.match(tag.get_text()):
        return True
    if tag.name not in _BLOCKS and tag.name != "header":
        return False  # an inline element's class says how it looks ("toc-backref" on a heading's link)
    if tag.find(["h1", "h2"]) is not None:
        return False  # a "card-header" or "section-header" holding a page or section title is content
    beside = False
    # A section's id is made from its title ("s-session-cookie-age", "select-related"): read as a
    # class name, "cookie" and "related" dropped Django's session-cookie settings and its
    # select_related() entry. Only the id of an element that heads no section of its own is
    # read for navigation words ("site-footer", "main-nav").
    for name in _classes(tag, with_id=tag.has_attr("id") and tag.find(list(_HEADINGS), recursive=False) is None):
        tokens = _WORD_BREAK.split(name)
        if "title" in tokens:
            return False  # a box's title ("sidebar-title", "topic-title"): the box is judged, not its title
        if any(s in name for s in _NAV_SUBSTRINGS) or _NAV_TOKENS & set(tokens):
            return True
        if any(t.startswith("nav") for t in tokens):  # navheader, navfooter, nav-links
            return True
        beside = beside or _BESIDE in name
    label = " ".join(str(tag.get(a, "")) for a in ("summary", "aria-label")).lower()
    if any(word in label for word in ("navigation", "breadcrumb", "table of contents", "pagination")):
        return True
    return beside and not holds_prose(tag)


def holds_prose(tag: Tag) -> bool:
    """Does a box hold sentences of its own (a tip, a note), not links or a widget (a site's sidebar,
    a table of contents)? At least PROSE_WORDS words outside its links, more than inside them, and
    one sentence's end."""
    text = _squash(tag.get_text(" "))
    linked = sum(_words(_squash(a.get_text(" "))) for a in tag.find_all("a"))
    unlinked = _words(text) - linked
    # A sentence's end: its last word, maybe a closing bracket or quote, then the stop ("RFC 2822 ."
    # is how a link before the period reads here).
    return (
        unlinked >= PROSE_WORDS and unlinked > linked and re.search(r"\w[\s)\]\"'’”]*[.!?](?:\s|$)", text) is not None
    )


def _main_root(soup: BeautifulSoup) -> Tag:
    """The main content: <main> or role=main, else the one <article>, else the body."""
    for found in (soup.find("main"), soup.find(attrs={"role": "main"})):
        if found is not None:
            return found
    articles = soup.find_all("article")
    if len(articles) == 1:
        return articles[0]
    return soup.body or soup


def _is_link_dense(tag: Tag) -> bool:
    """Mostly links (a menu, a table of contents), or a few links with a few words and no sentence
    ("Prev Up Next", "Home / Guide / Install"): navigation, not content."""
    if tag.name not in ("div", "ul", "ol", "table", "section", "p", "dl", "td", "li"):
        return False
    links = tag.find_all("a")
    if len(links) < 2:
        return False
    text = _squash(tag.get_text(" "))
    link_texts = [_squash(a.get_text(" ")) for a in links]
    if len(links) >= LINK_DENSE_MIN_LINKS and text and sum(map(len, link_texts)) / len(text) >= LINK_DENSE:
        return True
    if tag.name in ("td", "li", "ul", "ol", "dl"):
        # A cell or item of real content may be a pair of links, and a short list a few: Node.js's
        # "`buffer` <string> | <Buffer> | <TypedArray> The bytes to decode." / "Returns: <string>"
        # read as a link bar and went. A list that is a menu is mostly links (the test above).
        return False
    unlinked = _words(text) - sum(map(_words, link_texts))  # "|", "»" and "/" between links are no words
    return unlinked <= SHORT_LINK_BAR_WORDS and not re.search(r"[.!?:;,]$", text)


def _words(text: str) -> int:
    return sum(1 for token in text.split() if re.search(r"\w", token))


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _text(tag: Tag) -> str:
    """An element's text on one line: inline children run together as written (a signature's
    ``json.``/``dumps`` spans read "json.dumps"), block children are set apart by a space."""
    parts: list[str] = []
    for child in tag.children:
        if isinstance(child, NavigableString):
            parts.append(str(child))
        elif isinstance(child, Tag):
            inner = _text(child)
            parts.append(f" {inner} " if child.name in _BLOCKS else inner)
    return "".join(parts)


def _emit(element: Tag, blocks: list[str]) -> None:
    """Append `element`'s blocks. Inline runs between block children become paragraphs."""
    run: list[str] = []

    def flush() -> None:
        text = _squash("".join(run))
        if text:
            blocks.append(text)
        run.clear()

    for child in element.children:
        if isinstance(child, NavigableString):
            run.append(str(child))
            continue
        if not isinstance(child, Tag):
            continue
        name = child.name
        if name not in _BLOCKS:
            run.append(_text(child))
            continue
        flush()
        if _is_box(child):
            _emit_box(child, blocks)
        elif name in _HEADINGS:
            if not (text := _squash(_text(child))):
                continue
            if _titles_a_box(child):
                blocks.append(text if text.endswith(":") else f"{text}:")  # "Note:", the box's first words
            else:
                blocks.append(f"{'#' * _HEADINGS[name]} {text}")
        elif name == "pre" and is_manpage(manual := child.get_text()):
            blocks.extend(manpage_blocks(manual))  # a manual page laid out by troff: not one code block
        elif name == "pre":
            # One <pre> may hold the same example in several <code> flavours (Node.js: ES module
            # and CommonJS): each keeps its own lines, not the last of one glued to the next's first.
            # Only when the <pre> is nothing but its <code>s: a transcript's typed commands sit between
            # its output's <code>s (DocBook: <code class="computeroutput">$ </code><strong
            # class="userinput"><code>sudo apt-get …</code></strong>), and read as flavours, every
            # command was lost and "$ " kept.
            codes = child.find_all("code", recursive=False)
            only_codes = all(isinstance(c, Tag) and c.name == "code" for c in child.children if _has_text(c))
            flavours = [c.get_text() for c in codes] if len(codes) > 1 and only_codes else [child.get_text()]
            _emit_code("\n\n".join(f.strip("\n") for f in flavours if f.strip()), blocks)
        elif (lines := _code_lines(child)) is not None:
            _emit_code(lines, blocks)
        elif name in ("ul", "ol"):
            _emit_list(child, blocks)
        elif name == "dl":
            _emit_definitions(child, blocks)
        elif name == "table":
            _emit_table(child, blocks)
        elif name in ("hr", "br"):
            continue
        else:
            _emit(child, blocks)
    flush()


def _is_box(element: Tag) -> bool:
    """A note, tip, warning or sidebar set in the text: an admonition's class word, an <aside> (one
    of links went with the navigation), or a blockquote that opens with a bold label ("> **Note**")."""
    if element.name == "aside":
        return True
    if element.name == "blockquote":
        first = next((c for c in element.children if _has_text(c)), None)
        return isinstance(first, Tag) and first.name == "p" and _bold_label(first) is not None
    if element.name not in ("div", "section"):
        return False
    return bool(_BOX_KINDS & _class_words(element, with_id=False))


def _bold_label(paragraph: Tag) -> Tag | None:
    """The <strong> or <b> that is all of a paragraph's text (a rendered "**Note**"), else None."""
    kids = [c for c in paragraph.children if _has_text(c)]
    if len(kids) == 1 and isinstance(kids[0], Tag) and kids[0].name in ("strong", "b"):
        return kids[0]
    return None


def _box_title(box: Tag) -> Tag | None:
    """The element that titles a box: the one its text opens with, when it is a heading, has a
    "title" class word (DocBook's p.title, Sphinx's p.admonition-title) or is a bold label."""
    first = next((s for s in box.descendants if isinstance(s, NavigableString) and s.strip()), None)
    if first is None:
        return None
    for parent in first.parents:
        if parent is box:
            return None
        if parent.name in _HEADINGS or "title" in _class_words(parent) or (parent.name == "p" and _bold_label(parent)):
            return parent
    return None


def _title_text(title: Tag) -> str:
    """A box's title on one line; a kind set in capitals before it is its label ("TIP: Incremental
    updates", DocBook's <em>TIP</em> Incremental updates)."""
    node = title
    while len(kids := [c for c in node.children if _has_text(c)]) == 1 and isinstance(kids[0], Tag):
        node = kids[0]
    if len(kids) > 1 and isinstance(kids[0], Tag):
        label = _squash(_text(kids[0]))
        rest = _squash("".join(_text(k) if isinstance(k, Tag) else str(k) for k in kids[1:]))
        if rest and label.isupper() and not label.endswith((":", ".")):
            return f"{label}: {rest}"
    return _squash(_text(title))


def _emit_box(box: Tag, blocks: list[str]) -> None:
    """A box's blocks under its title. A title that only names the box's kind ("Note", "Warning")
    opens its text as "Note:", and the section's heading stays the label of the box's sentences; a
    title that names its subject ("TIP: Incremental updates") is their label, as a term is of its
    definitions ("TIP: Incremental updates" / ": The apt command downloads…")."""
    title_tag = _box_title(box)
    title = _title_text(title_tag) if title_tag is not None else ""
    if title_tag is not None:
        title_tag.extract()
    inner: list[str] = []
    _emit(box, inner)
    if not title or not inner:
        blocks.extend(inner)  # a title over nothing (a table of contents whose links went) says nothing
        return
    kinds = _class_words(box) | _KIND_TITLES
    bare = title.rstrip(":").strip()
    if bare.lower() in kinds or not _is_paragraph(inner[0]):
        blocks.append(f"{bare}:")
        blocks.extend(inner)
        return
    blocks.append(bare)
    blocks.extend(f": {block}" if _is_paragraph(block) else block for block in inner)


BOX_WORDS = 200  # a note or example box is short; a section followed by stray text is not


def _titles_a_box(heading: Tag) -> bool:
    """Does `heading` title a box set inside a section (DocBook's and Apache httpd's "Note",
    "Warning", "Example" boxes: <div class="note"><h3>Note</h3><p>…</p></div>) rather than open a
    section of its own? It does when its div holds a body after it and the section goes on after
    the div with text that no heading opens. Read as a heading, "Note" named every later sentence
    of the section it sat in, and the section path of the chunks after it."""
    box = heading.parent
    if _HEADINGS[heading.name] < 3 or box is None or box.name != "div" or box.get("role") == "main":
        return False  # a page's or a chapter's title (h1, h2) is always one
    if any(_has_text(e) for e in heading.find_previous_siblings()):
        return False  # not the box's title: the div holds text before it
    if not any(_has_text(e) for e in heading.find_next_siblings()) or _words(box.get_text(" ")) > BOX_WORDS:
        return False
    after = next((e for e in box.next_siblings if _has_text(e)), None)
    if after is None:
        return False
    if isinstance(after, Tag):
        first = next((e for e in after.descendants if isinstance(e, NavigableString) and e.strip()), None)
        return first is not None and first.find_parent(list(_HEADINGS)) is None
    return True


def _has_text(element) -> bool:
    return bool(element.get_text().strip() if isinstance(element, Tag) else str(element).strip())


def _emit_code(code: str, blocks: list[str]) -> None:
    if code.strip():
        blocks.append(f"```\n{code.replace('```', '` ` `')}\n```")


def _code_lines(element: Tag) -> str | None:
    """The lines of an example set as a paragraph that is one <code> of several words or lines
    (Apache httpd's manual: "# Unsupported HTTP version<br>GET /", "httpd.exe -k install"), which
    is code, not prose: read as a paragraph, its "# comment" became a heading that named every
    later section of the page, and a one-line command was glued to the next sentence as its
    opening fragment."""
    if element.name not in ("p", "div"):
        return None
    children = [c for c in element.children if not (isinstance(c, NavigableString) and not c.strip())]
    if len(children) != 1 or not isinstance(children[0], Tag) or children[0].name not in _CODE_TAGS:
        return None
    code = children[0]
    if code.find("br") is None and len(code.get_text().split()) < 2:
        return None  # a lone name or value ("unsigned_char", "'B'") is a paragraph of its own, not an example
    for br in code.find_all("br"):
        br.replace_with("\x00")  # the line breaks; the source's own newlines are only wrapping
    return "\n".join(_squash(line) for line in code.get_text().split("\x00")).strip("\n")


def _emit_list(element: Tag, blocks: list[str]) -> None:
    for item in element.find_all("li", recursive=False):
        nested = [c for c in item.children if isinstance(c, Tag) and c.name in _BLOCKS - {"br"}]
        if not nested:
            if text := _squash(_text(item)):
                blocks.append(f"- {text}")
            continue
        inner: list[str] = []
        _emit(item, inner)
        for i, block in enumerate(inner):
            # The item's first paragraph carries the bullet; nested lists and code keep their own syntax.
            blocks.append(f"- {block}" if i == 0 and _is_paragraph(block) else block)


def _emit_definitions(element: Tag, blocks: list[str]) -> None:
    """term / ": definition" pairs; a definition with several paragraphs gives several ": " lines,
    a definition's list, table or code keeps its own syntax under the term."""
    for child in element.find_all(["dt", "dd"], recursive=False):
        if child.name == "dt":
            if term := _squash(_text(child)):
                blocks.append(term)
            continue
        inner: list[str] = []
        _emit(child, inner)
        for block in inner:
            blocks.append(f": {block}" if _is_paragraph(block) else block)


def _is_paragraph(block: str) -> bool:
    """A block _emit wrote as a plain paragraph (or term): no heading, item, definition, row or
    code syntax, which always starts the block (code alone spans lines)."""
    return not block.startswith(("#", "- ", "```", "|", ": ")) and "\n" not in block


def _emit_table(element: Tag, blocks: list[str]) -> None:
    rows = element.find_all("tr")
    header: list[str] = []
    for row in rows:
        cells = row.find_all(["th", "td"], recursive=False)
        texts = [_squash(_text(c)) for c in cells]
        if not any(texts):
            continue
        if not header and all(c.name == "th" for c in cells):
            header = texts
            continue
        if len(header) != len(cells) and cells[0].name == "th" and texts[0] and len(cells) > 1:
            # A row header (a key-value table: "Default: | KeepAliveTimeout 5") names its cells.
            key, values = texts[0].rstrip(":").rstrip(), [t for t in texts[1:] if t]
            blocks.append(f"| {key}: {'; '.join(values)}" if values else f"| {texts[0]}")
            continue
        blocks.append("| " + row_text(header, texts, separator="; "))
