"""Markdown as its readers see it: the text a renderer shows, in the block form the chunker reads.

A wiki page, a README or a docs site's source holds markup no reader ever sees: YAML front matter,
HTML comments (Node.js's API pages keep a `<!-- YAML added: v10.0.0 changes: … -->` block under
every function; authors leave internal notes in them), link reference definitions (the same pages
end with hundreds of `[fs.open()]: #fsopenpath-flags-mode-callback` lines, which made whole
chunks of anchors), link targets and inline tags (`<a id="ERR_X"></a>` before each of 400 error
codes). Left in, they were chunked, embedded, matched by full-text search and quoted in answers.
Here they go: a link keeps its text, an image goes (there is nothing to quote of it), entities and
backslash escapes become the characters they show, an HTML block (a table) is read as corpus.html
reads a page, and setext headings ("Install" over "-------") become the `#` headings the chunker
knows. Fenced code and code spans are left exactly as written.
"""

from __future__ import annotations

import html
import re

from corpus.chunking import _FENCE, _ITEM, _QUOTE, _ROW, heading  # the block syntax the chunker reads

_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
_FRONT_TITLE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.M)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_LINK_DEFINITION = re.compile(r"^ {0,3}\[([^\]\n]+)\]:[ \t]*\S")
# Link text and code spans may wrap onto the next line (manuals wrap at 80 columns), never across a
# blank line.
_WRAP = r"(?:[^\]\n]|\n(?![ \t]*\n))"
_CODE_SPAN = re.compile(r"(`+)((?:[^\n]|\n(?![ \t]*\n))+?)\1")
_IMAGE = re.compile(rf"!\[{_WRAP}*\](?:\([^)\n]*\)|\[[^\]\n]*\])")
# [text](target "title"), the target allowed one level of parentheses (Wikipedia-style URLs)
_INLINE_LINK = re.compile(rf"\[({_WRAP}+)\]\((?:[^()\s]|\([^()\s]*\))*(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)")
_REFERENCE_LINK = re.compile(rf"\[({_WRAP}+)\]\[[^\]\n]*\]")
_SHORTCUT_LINK = re.compile(rf"\[({_WRAP}+)\](?![\[(:])")  # [label], a link only where [label]: is defined
_AUTOLINK = re.compile(r"<((?:https?|mailto|ftp):[^<>\s]+)>")
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")  # inline HTML: <a id="x"></a>, <br>, <kbd>
# **Default:** reads "Default:". Only the double asterisk: single * and _ are too often literal
# (globs, __init__), and strong emphasis is what manuals mark their labels with.
_STRONG = re.compile(r"\*\*(?=\S)((?:[^*\n]|\*(?!\*))+?)(?<=\S)\*\*")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")  # \[, \<, \* show the character itself
# CommonMark's HTML blocks that matter in documents: they run to the next blank line.
_HTML_BLOCK = re.compile(
    r"^ {0,3}</?(?:table|thead|tbody|tfoot|tr|td|th|caption|div|details|summary|dl|dt|dd|ul|ol|li|p|pre"
    r"|blockquote|section|figure|figcaption|h[1-6]|hr|center)(?:[\s/>]|$)",
    re.IGNORECASE,
)
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_THEMATIC_BREAK = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")


def read_markdown(raw: str) -> tuple[str, str]:
    """(title, text): the title is the first top-level heading, else front matter's `title:`."""
    text = raw.replace("\r\n", "\n").replace("\r", "\n")
    front_title = ""
    if front := _FRONT_MATTER.match(text):
        if found := _FRONT_TITLE.search(front.group(1)):
            front_title = found.group(1).strip("\"'")
        text = text[front.end() :]
    defined = {_label(m.group(1)) for line in text.split("\n") if (m := _LINK_DEFINITION.match(line))}
    lines: list[str] = []
    prose: list[str] = []  # the lines since the last fence, cleaned together: a comment spans lines
    title = ""

    def clean_prose() -> None:
        nonlocal title
        cleaned = _prose(prose, defined)
        title = title or next(
            (found[1] for line in cleaned if (found := heading(line)) and found[0] == 1 and found[1]), ""
        )
        lines.extend(cleaned)
        prose.clear()

    fence = ""
    for line in text.split("\n"):
        if fence:
            lines.append(line)
            fence = "" if line.strip().startswith(fence) else fence
        elif opened := _FENCE.match(line):
            clean_prose()
            fence = opened.group(1)
            lines.append(line)
        else:
            prose.append(line)
    clean_prose()
    return title or front_title, "\n".join(lines)


def _prose(lines: list[str], defined: set[str]) -> list[str]:
    """Lines outside code: comments, link definitions, link targets and images gone, setext headings
    and thematic breaks rewritten, HTML blocks read as HTML."""
    out: list[str] = []
    markdown: list[str] = []  # the Markdown lines since the last HTML block
    block: list[str] = []  # the HTML block being read: from its opening tag to a blank line
    for line in _COMMENT.sub("", "\n".join(lines)).split("\n"):
        if block or _HTML_BLOCK.match(line):
            if line.strip():
                block.append(line)
                continue
            out += _inline("\n".join(markdown), defined) + ["", *_html_block(block), ""]
            markdown, block = [], []
        elif _LINK_DEFINITION.match(line):
            continue
        elif _SETEXT.match(line) and markdown and markdown[-1].strip() and not _structural(markdown[-1]):
            markdown[-1] = ("# " if line.strip()[0] == "=" else "## ") + markdown[-1].strip()
        else:
            markdown.append("" if _THEMATIC_BREAK.match(line) else line)
    return out + _inline("\n".join(markdown), defined) + _html_block(block)


def _html_block(lines: list[str]) -> list[str]:
    """An HTML block (a table, a <details>) in the block form corpus.html gives a page."""
    if not lines:
        return []
    from corpus.html import NavigationPage, html_to_blocks

    markup = "\n".join(lines)
    try:
        return html_to_blocks(f"<html><body>{markup}</body></html>")[1].split("\n")
    except NavigationPage:  # a list of links: their text
        return [html.unescape(_TAG.sub(" ", " ".join(lines))).strip()]


def _structural(line: str) -> bool:
    """A line a setext underline cannot make a heading: already a heading, an item, a row, a quote."""
    return heading(line) is not None or any(syntax.match(line) for syntax in (_ITEM, _ROW, _QUOTE))


def _inline(text: str, defined: set[str]) -> list[str]:
    """`text`'s lines as rendered: each link as its text, images and inline tags gone, autolinks as
    their address, strong emphasis unmarked, entities and backslash escapes resolved; code spans
    exactly as written."""
    spans: list[str] = []

    def hold(match: re.Match) -> str:
        spans.append(match.group(0))
        return f"\x00{len(spans) - 1}\x00"

    held = _CODE_SPAN.sub(hold, text)
    held = _IMAGE.sub("", held)
    held = _INLINE_LINK.sub(r"\1", held)
    held = _REFERENCE_LINK.sub(r"\1", held)
    held = _SHORTCUT_LINK.sub(
        lambda m: m.group(1) if _label(_restored(m.group(1), spans)) in defined else m.group(0), held
    )
    held = _AUTOLINK.sub(r"\1", held)
    held = _STRONG.sub(r"\1", held)
    held = html.unescape(_TAG.sub("", held))
    held = _ESCAPE.sub(r"\1", held)
    return _restored(held, spans).split("\n")


def _label(text: str) -> str:
    """A link label as Markdown matches it: case and runs of whitespace aside."""
    return " ".join(text.split()).casefold()


def _restored(text: str, spans: list[str]) -> str:
    return re.sub(r"\x00(\d+)\x00", lambda m: spans[int(m.group(1))], text)
