"""Markdown as its readers see it: the text a renderer shows, in the block form the chunker reads.

A wiki page, a README or a docs site's source holds markup no reader ever sees: YAML front matter,
HTML comments (Node.js's API pages keep a `<!-- YAML added: v10.0.0 changes: … -->` block under
every function; authors leave internal notes in them), link reference definitions (the same pages
end with hundreds of `[fs.open()]: #fsopenpath-flags-mode-callback` lines, which made whole
chunks of anchors), link targets and inline tags (`<a id="ERR_X"></a>` before each of 400 error
codes). Left in, they were chunked, embedded, matched by full-text search and quoted in answers.
Here they go: a link keeps its text, an image goes (there is nothing to quote of it), entities and
backslash escapes become the characters they show, an HTML block (a table) is read as readers.html
reads a page, and setext headings ("Install" over "-------") become the `#` headings the chunker
knows. Fenced code and code spans are left exactly as written.

Every part is read in time linear in the text: an upload is untrusted, and Python's re holds the
GIL, so one pattern that backtracks (an unclosed "<!--" rescanned to the end of the file from each
of 40,000 of them took 16.5 s) stalls the whole worker. Comments, code spans and links are found
by scans that read each character a bounded number of times; the patterns left are possessive or
anchored where they could backtrack. A maintained parser (markdown-it-py) was weighed and not
taken: it renders CommonMark, and this reader's output, the Markdown that stays text in the
chunker's block syntax, is what retrieval and the Node.js docs benchmark were tuned on; the scans
give exactly the output the patterns gave, checked over those 64 pages and randomised text.
"""

from __future__ import annotations

import bisect
import html
import re
from collections.abc import Callable

from readers.blocks import FENCE, ITEM, QUOTE, ROW, heading

_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
_LINK_DEFINITION = re.compile(r"^ {0,3}\[([^\]\n]+)\]:[ \t]*\S")
# Link text and code spans may wrap onto the next line (manuals wrap at 80 columns), never across a
# blank line: a line break that a blank line follows ends them.
_BLANK = re.compile(r"\n(?=[ \t]*\n)")
_BACKTICKS = re.compile(r"`+")
# An inline link's target, after "](": characters but parentheses and spaces, or one level of
# parentheses (Wikipedia-style URLs); then an optional "title" and the closing parenthesis.
_TARGET = re.compile(r"(?:[^()\s]|\([^()\s]*\))*+")
_TARGET_END = re.compile(r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)")
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
        front_title = _front_title(front.group(1)).strip("\"'")
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
        elif opened := FENCE.match(line):
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
    for line in _without_comments("\n".join(lines)).split("\n"):
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
    """An HTML block (a table, a <details>) in the block form readers.html gives a page."""
    if not lines:
        return []
    from bs4.exceptions import ParserRejectedMarkup

    from readers.html import NavigationPage, TooDeep, html_to_blocks

    markup = "\n".join(lines)
    try:
        return html_to_blocks(f"<html><body>{markup}</body></html>")[1].split("\n")
    except (NavigationPage, TooDeep, ParserRejectedMarkup):  # a list of links, or markup no page holds: its text
        return [html.unescape(_TAG.sub(" ", " ".join(lines))).strip()]


def _structural(line: str) -> bool:
    """A line a setext underline cannot make a heading: already a heading, an item, a row, a quote."""
    return heading(line) is not None or any(syntax.match(line) for syntax in (ITEM, ROW, QUOTE))


def _inline(text: str, defined: set[str]) -> list[str]:
    """`text`'s lines as rendered: each link as its text, images and inline tags gone, autolinks as
    their address, strong emphasis unmarked, entities and backslash escapes resolved; code spans
    exactly as written."""
    spans: list[str] = []
    pieces, done = [], 0
    for start, end in _code_spans(text):
        spans.append(text[start:end])
        pieces += [text[done:start], f"\x00{len(spans) - 1}\x00"]
        done = end
    held = "".join(pieces) + text[done:]
    held = _links(held, "![", _image_end, lambda whole, label: "", empty=True)
    held = _links(held, "[", _inline_link_end, lambda whole, label: label)
    held = _links(held, "[", _reference_end, lambda whole, label: label)
    held = _links(
        held,
        "[",
        lambda text, at, _: at if at == len(text) or text[at] not in "[(:" else None,
        lambda whole, label: label if _label(_restored(label, spans)) in defined else whole,
    )  # [label], a link only where [label]: is defined
    held = _AUTOLINK.sub(r"\1", held)
    held = _STRONG.sub(r"\1", held)
    held = html.unescape(_TAG.sub("", held))
    held = _ESCAPE.sub(r"\1", held)
    return _restored(held, spans).split("\n")


def _front_title(front: str) -> str:
    """Front matter's `title:` (its first such line with a value), spaces around it dropped."""
    for line in re.finditer(r"^title:(.*)$", front, re.M):
        value = line.group(1)
        if value.strip(" \t"):
            return value.strip(" \t")
        if value:  # only spaces: what the pattern this replaces kept of them
            return value[-1]
    return ""


def _without_comments(text: str) -> str:
    """`text` without its <!-- comments -->. A "<!--" that nothing closes stays, and so does the
    rest of the text: no later one is closed either."""
    kept, at = [], 0
    while (opened := text.find("<!--", at)) != -1 and (closed := text.find("-->", opened + 4)) != -1:
        kept.append(text[at:opened])
        at = closed + 3
    return "".join(kept) + text[at:]


class _Next:
    """Where `pattern` next matches at or after a position. Asked at positions that only grow (a
    scan left to right), it searches each part of the text once however often it is asked."""

    def __init__(self, text: str, pattern: str | re.Pattern) -> None:
        self.text, self.pattern = text, re.compile(re.escape(pattern)) if isinstance(pattern, str) else pattern
        self.asked, self.found = 0, -1

    def __call__(self, at: int) -> int:
        """The start of the first match at or after `at`, else len(text)."""
        if not self.asked <= at <= self.found:
            match = self.pattern.search(self.text, at)
            self.asked, self.found = at, match.start() if match else len(self.text)
        return self.found


def _code_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each code span, as "(`+)((?:[^\\n]|\\n(?!blank))+?)\\1" finds them left to right:
    a run of backticks (from where the last span ended, the run's longest first) closed by the first
    run at least as long after it in its paragraph, else by backticks inside the run itself ("```"
    is a span of one). In one pass over the runs: the pattern, from each backtick of a long run,
    tried every shorter opening against the rest of the paragraph (cubic)."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text)]
    blanks = [m.start() for m in _BLANK.finditer(text)]
    paragraph = [bisect.bisect(blanks, start) for start, _ in runs]
    longest_after = [0] * len(runs)  # the longest run after each in its paragraph
    for i in range(len(runs) - 2, -1, -1):
        if paragraph[i + 1] == paragraph[i]:
            longest_after[i] = max(runs[i + 1][1] - runs[i + 1][0], longest_after[i + 1])
    spans: list[tuple[int, int]] = []
    i, at = 0, 0  # `at`: where a span may open (the run may be partly used by the span before)
    while i < len(runs):
        start = max(at, runs[i][0])
        length = runs[i][1] - start
        if length <= 0:
            i += 1
            continue
        inside = (length - 1) // 2  # the longest opening closed inside the run: "`" + "`" + "`"
        opening = min(length, longest_after[i])
        if opening > inside:
            j = next(j for j in range(i + 1, len(runs)) if runs[j][1] - runs[j][0] >= opening)
            spans.append((start, runs[j][0] + opening))
            i, at = j, runs[j][0] + opening
        elif inside:
            spans.append((start, start + 2 * inside + 1))
            at = start + 2 * inside + 1
        else:  # one or two backticks that nothing closes: the next may open a span
            at = start + 1
    return spans


def _links(
    text: str,
    opener: str,
    end_of: Callable[[str, int, Callable[[str, int], int]], int | None],
    replacement: Callable[[str, str], str],
    *,
    empty: bool = False,
) -> str:
    """`text` with each `opener` + label + "]" + what `end_of` accepts after it replaced by
    `replacement(whole, label)`, as re.sub replaced the pattern: leftmost first, a label running to
    the first "]" (never across a blank line; `empty`: it may be empty). A link that does not close
    lets no opener inside its label close either (they end at the same "]"): the scan goes on after
    that "]", so each label is read once, where the pattern read it again from every "[" inside it
    ("[" x 10,000: 4 s)."""
    nexts: dict[str, _Next] = {}

    def next_of(needle: str, at: int) -> int:
        if needle not in nexts:
            nexts[needle] = _Next(text, _BLANK if needle == "blank" else needle)
        return nexts[needle](at)

    kept, done, at = [], 0, 0
    while (start := text.find(opener, at)) != -1:
        label = start + len(opener)
        close = min(next_of("]", label), next_of("blank", label))
        if close == len(text):
            break  # no "]" before a blank line: no later opener closes either
        if text[close] == "]" and (empty or close > label) and (end := end_of(text, close + 1, next_of)) is not None:
            kept += [text[done:start], replacement(text[start:end], text[label:close])]
            done = at = end
        else:
            at = close
    return "".join(kept) + text[done:]


def _closed_by(text: str, at: int, next_of, opening: str, closing: str) -> int | None:
    """The end of `opening` + anything but `closing` or a line break + `closing`, at `at`."""
    if not text.startswith(opening, at):
        return None
    end = min(next_of(closing, at + 1), next_of("\n", at + 1))
    return end + 1 if end < len(text) and text[end] == closing else None


def _image_end(text: str, at: int, next_of) -> int | None:
    """After an image's "]": "(target)" or "[reference]"."""
    return _closed_by(text, at, next_of, "(", ")") or _closed_by(text, at, next_of, "[", "]")


def _inline_link_end(text: str, at: int, _next_of) -> int | None:
    """After an inline link's "]": (target "title")."""
    if not text.startswith("(", at):
        return None
    close = _TARGET_END.match(text, _TARGET.match(text, at + 1).end())
    return close.end() if close else None


def _reference_end(text: str, at: int, next_of) -> int | None:
    """After a reference link's "]": [reference]."""
    return _closed_by(text, at, next_of, "[", "]")


def _label(text: str) -> str:
    """A link label as Markdown matches it: case and runs of whitespace aside."""
    return " ".join(text.split()).casefold()


def _restored(text: str, spans: list[str]) -> str:
    return re.sub(r"\x00(\d+)\x00", lambda m: spans[int(m.group(1))], text)
