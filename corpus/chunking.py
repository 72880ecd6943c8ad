"""Sentence splitting and token-measured chunk windows. Pure functions: no model, no database.

Token counts come from a callable so the windows are measured in the embedder's own tokens
while tests can pass a deterministic counter.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from readers import locations
from readers.blocks import BLOCK_PREFIX, PROSE, Block, parse_blocks

# Words that end in a period without ending a sentence.
_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "inc", "ltd", "co", "corp",
    "no", "fig", "eq", "al", "approx", "dept", "est", "gen", "gov", "sgt", "col", "lt", "mt",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    "e.g", "i.e", "eg", "ie", "viz", "resp", "cf", "ca", "u.s", "u.k", "ph.d", "a.k.a", "aka",
}  # fmt: skip
# "at 4:05 p.m. UTC (9:05 a.m. PDT)": a time followed by its zone is no boundary; "at 5 p.m. The
# next day" still is.
_TIME_SUFFIXES = {"a.m", "p.m"}
_ZONE_NEXT = re.compile(r"[(\[]?[A-Z]{2,5}\b")
# A candidate boundary: terminal punctuation, optional closing quotes/brackets, whitespace, then
# something that can start a sentence. Possessive, and never tried from inside a run of stops: from
# every "." of a run the pattern rescanned the run to its end (quadratic in a run of dots).
_BOUNDARY = re.compile(r"(?<![.!?])[.!?]++[\"'\u201d\u2019)\]]*+\s++(?=[\"'\u201c\u2018(\[]?[A-Z0-9])")


_WHOLE = frozenset({"term", "row"})  # a term or a table row is one sentence however it is punctuated


def block_sentences(block: Block) -> list[str]:
    """A prose block's sentences (a term or table row is one); none for a heading or code."""
    if block.kind not in PROSE:
        return []
    if block.kind in _WHOLE:
        return [block.text]
    return _sentences(block.text)


def split_sentences(text: str) -> list[str]:
    """The sentences of a text's prose blocks, keeping abbreviations and initials ("Dr.", "J. R. R.")
    intact. Headings and code blocks are not sentences."""
    return [s for block in parse_blocks(text) for s in block_sentences(block)]


# A sentence that opens with one of these leans on the one before it ("It must be shorter than 8000 bytes.").
_LEANS_BACK = re.compile(
    r"^(it|its|this|these|that|those|they|them|their|he|she|his|her|such|both|either|neither|here|there|"
    r"otherwise|however|instead|also)\b",
    re.IGNORECASE,
)


def leans_back(sentence: str) -> bool:
    """Whether `sentence` opens with a word that leans on the sentence before it."""
    return bool(_LEANS_BACK.match(sentence))


class InContext(NamedTuple):
    sentence: str
    label: str  # the innermost heading above it, or the term it defines ("" when not needed)
    antecedent: str  # the sentence a pronoun or connective leans on ("" when none)
    term: str  # the term it defines, when its label is one
    block: int = 0  # which block of the text it belongs to (a paragraph, list item, definition)
    row: bool = False  # a table row: a record of its own, however short ("Default: KeepAliveTimeout 5")
    subject: str = ""  # a key-value table's row: what its first row says the entry is (key_value_subject)
    referent: str = ""  # the heading its opening "This module" names (heading_referent)
    shows: str = ""  # the short code block it introduces ("…add these two directives:"), shown_code
    item: bool = False  # a list item: a point of its own, however short ("`options` {Object}")
    keyed: bool = False  # a key-value table's row ("Default: KeepAliveTimeout 5"): part of its section, no record


def sentences_in_context(text: str, section: tuple[str, ...] = ()) -> list[InContext]:
    """Each prose sentence with what it needs to be judged alone: the innermost heading above it
    (or the term it defines), and, in a sectioned text, the sentence before it when it opens with
    a pronoun or a connective. A definition's term (and another name of the entry on the line
    above it) is the label of its sentences, never a sentence itself. `section` is where the text
    starts (a chunk's section path, title excluded)."""
    heading = section[-1] if section else ""
    headings = list(section)  # every heading above, the innermost last
    triples: list[InContext] = []
    previous = ""
    blocks = parse_blocks(text)
    first_row = ""  # the first row of the table being read
    for index, block in enumerate(blocks):
        if block.kind == "row" and (index == 0 or blocks[index - 1].kind != "row"):
            first_row = block.text
        if block.kind == "heading":
            heading, previous = block.text, ""
            headings.append(block.text)
            continue
        if block.kind == "term" or _names_next_term(blocks, index):
            # A label, not a sentence: its definitions carry it. Read as one, it was glued to the
            # sentence before ("Corresponds to errno ESRCH. exception TimeoutError") or after ("re.S
            # Make the '.' special character match...", the entry's other name above its term).
            continue
        if _captions_next(blocks, index):
            # The title of the listing or table below it, not a sentence: "Example 10.1. A static
            # configuration" was glued to the paragraph after the listing and stated with it.
            continue
        label = block.term if block.kind == "definition" and block.term else heading
        sentences = block_sentences(block)
        for sentence in sentences:
            # Only under a heading or term: in a Wikipedia-style passage the antecedent cost NQ a
            # point of answers (0.850 -> 0.845 gold in answer, the relevance evaluator reading it).
            antecedent = previous if label and previous and leans_back(sentence) else ""
            term = block.term if block.kind == "definition" else ""
            row = block.kind == "row"
            subject = key_value_subject(first_row, sentence) if row else ""
            keyed = row and bool(_KEY_VALUE.match(first_row) and _KEY_VALUE.match(sentence))
            referent = "" if previous or term else heading_referent(sentence, headings)
            shows = shown_code(sentence, blocks[index + 1 : index + 2]) if sentence is sentences[-1] else ""
            triples.append(
                InContext(
                    sentence,
                    label if label != sentence else "",
                    antecedent,
                    term,
                    index,
                    row,
                    subject,
                    referent,
                    shows,
                    block.kind == "item",
                    keyed,
                )
            )
            previous = sentence
    return triples


SHOWN_CODE_LINES = 6  # a longer listing is an example to read in its source, not part of an answer


def shown_code(sentence: str, following: Sequence[Block]) -> str:
    """The code block a sentence introduces, when it ends with a colon and the block right after it
    is code of at most SHOWN_CODE_LINES lines: "…the addition of these two directives:" says which
    only in the configuration lines below it (Apache's OCSP stapling how-to)."""
    if not sentence.rstrip().endswith(":") or not following or following[0].kind != "code":
        return ""
    code = following[0].text.strip("\n")
    return code if code and len(code.splitlines()) <= SHOWN_CODE_LINES else ""


# "This section…", "This example…" point at the text itself, not at what a heading names.
_THE_TEXT_ITSELF = {"section", "page", "document", "chapter", "example", "table", "figure", "list", "note", "tutorial"}
_THIS_NOUN = re.compile(r"^(?:this|these)\s+(\w+)", re.IGNORECASE)


def heading_referent(sentence: str, headings: Sequence[str]) -> str:
    """The heading that a section's opening "This module…" or "These directives…" points to: the
    innermost one holding that noun ("Apache Module mod_proxy_hcheck" above "Summary" for "This
    module provides for dynamic health checking…"), else "". Quoted alone, the sentence never says
    which module it describes; a page names it only in its headings."""
    match = _THIS_NOUN.match(sentence)
    noun = match.group(1).lower().removesuffix("s") if match else ""
    if not noun or noun in _THE_TEXT_ITSELF:
        return ""
    forms = {noun, f"{noun}s"}
    for heading in reversed(headings):
        if forms & {w.lower() for w in re.findall(r"\w+", heading)} and heading.lower() not in sentence.lower():
            return heading
    return ""


# "Default: KeepAliveTimeout 5", one key, one value. The value opens after the spaces (or is the last
# of them): as "\s+([^;]+)$" the spaces were shared out between the two ways, quadratic in their run.
_KEY_VALUE = re.compile(r"^([^:;|]{1,40}):\s+([^;\s][^;]*|\s)$")


def key_value_subject(first_row: str, row: str) -> str:
    """What a key-value table's first row says its entry is, for another row of the table: Apache
    httpd's directive tables open with "Description: Amount of time the server will wait…", and
    "Default: KeepAliveTimeout 5" alone does not say what 5 is (the answer judge rated it 0.66 for
    "how long does httpd wait…", 0.82 read with the description). A column-header table's rows
    ("Item: identifier length; Upper limit: 63 bytes") have no such row."""
    first, this = _KEY_VALUE.match(first_row), _KEY_VALUE.match(row)
    return first.group(2) if first and this and row != first_row else ""


def _names_next_term(blocks: list[Block], index: int) -> bool:
    """Is blocks[index] another name of the entry whose term follows: a short line that ends no
    sentence ("re.S" above "re.DOTALL", Sphinx's signatures of one entry), not prose?"""
    block = blocks[index]
    return (
        index + 1 < len(blocks) and blocks[index + 1].kind == "term" and block.kind == "paragraph"
        and len(block.text.split()) <= 8 and not re.search(r"[.!?:;]$", block.text)
    )  # fmt: skip


# A numbered caption's opening: "Example 10.1.", "Table 3-2", "Figure 4".
_NUMBERED_CAPTION = re.compile(r"(?:example|figure|table|listing)\s+\d+(?:[.-]\d+)*\b", re.IGNORECASE)


def _captions_next(blocks: list[Block], index: int) -> bool:
    """Is blocks[index] the caption of the code or table right after it: a short line that ends no
    sentence ("A static configuration") or opens with a number ("Example 10.1. …"), not prose? One
    that ends with a colon introduces the code ("Add these two directives:"): a sentence."""
    block = blocks[index]
    if block.kind != "paragraph" or index + 1 == len(blocks) or blocks[index + 1].kind not in ("code", "row"):
        return False
    if len(block.text.split()) > 12 or block.text.endswith(":"):
        return False
    return not block.text.endswith((".", "!", "?", ";")) or bool(_NUMBERED_CAPTION.match(block.text[:40]))


def _sentences(paragraph: str) -> list[str]:
    """A paragraph's sentences (its whitespace collapsed, as parse_blocks gives it). Linear: the text
    between two boundaries is read once, however many of them end no sentence ("Dr. A Dr. A …")."""
    sentences: list[str] = []
    start = 0
    after = 0  # where the last candidate boundary ended (with a space): the word before a stop is after it
    opened, counted = 0, 0  # "(" less ")" from `start` up to `counted`
    for match in _BOUNDARY.finditer(paragraph):
        stop, word, after = match.start(), after, match.end()
        if paragraph[stop] == ".":
            before = paragraph[word:stop]
            token = ("" if not before or before[-1].isspace() else before.rsplit(None, 1)[-1]).lower().strip("\"'([")
            if (
                token in _ABBREVIATIONS
                or (len(token) == 1 and "a" <= token <= "z")  # an initial
                or (token in _TIME_SUFFIXES and _ZONE_NEXT.match(paragraph, after))
            ):
                continue
        # Inside a parenthesis the sentence has not ended: "(for example. 20 to 30 times)".
        opened += paragraph.count("(", counted, stop) - paragraph.count(")", counted, stop)
        counted = stop
        if opened > 0 and ")" not in match.group(0):
            continue
        sentences.append(paragraph[start : stop + len(match.group(0).rstrip())].strip())
        start = after
        opened, counted = 0, start
    tail = paragraph[start:].strip()
    if tail:
        sentences.append(tail)
    return [s for s in sentences if s]


@dataclass(frozen=True)
class ChunkText:
    text: str
    token_count: int
    section: tuple[str, ...] = ()  # the headings (and definition term) it sits under, outermost first
    location: dict = field(default_factory=dict)  # where it sits in the original file (readers.locations.span)


@dataclass(frozen=True)
class _Unit:
    text: str
    tokens: int
    block: int  # index of its block: units of one block are rendered together
    kind: str
    section: tuple[str, ...]
    level: int = 0
    name: bool = False  # another name of the entry whose term follows ("re.S" above "re.DOTALL")
    location: str = ""  # its block's (JSON, as parse_blocks keeps it)

    @property
    def opens_entry(self) -> bool:
        """A definition's term or a name above it: like a heading, it goes with what follows it."""
        return self.kind == "term" or self.name


def chunk_text(
    text: str,
    *,
    count_tokens: Callable[[list[str]], list[int]],
    split_tokens: Callable[[str, int], list[str]],
    max_tokens: int = 200,
    overlap_tokens: int = 40,
) -> list[ChunkText]:
    """Group whole sentences into windows of at most `max_tokens`, repeating up to `overlap_tokens`
    of trailing sentences (of the same section) at the start of the next window.

    Blocks stay blocks: a chunk keeps its paragraphs, items, rows and code apart, and is rendered
    in the syntax parse_blocks reads back. A heading starts a new chunk once the current one holds
    a quarter of the budget (small sections share one), and never ends one. Code is never cut into
    sentences, only between lines when a block alone exceeds the budget. A sentence is cut (at token
    boundaries) only when it alone exceeds `max_tokens`.
    """
    if overlap_tokens >= max_tokens:
        raise ValueError("overlap_tokens must be smaller than max_tokens")
    units = _units(parse_blocks(text), count_tokens, split_tokens, max_tokens)
    chunks: list[ChunkText] = []
    emitted: list[_Unit] = []  # the units of chunks[-1]
    window: list[_Unit] = []
    fresh = False  # whether the window holds a unit no earlier chunk has emitted

    def emit(units: list[_Unit]) -> None:
        nonlocal emitted
        chunks.append(_render(units))
        emitted = units

    for unit in units:
        size = sum(u.tokens for u in window)
        # What goes with the unit that follows it: headings, an entry's term and other names.
        leading = list(itertools.takewhile(lambda u: u.kind == "heading" or u.opens_entry, reversed(window)))[::-1]
        if unit.kind == "heading" and window and size >= max_tokens // 4:
            if fresh:
                emit(window)
            window = []
        elif (
            unit.kind == "heading" and window and fresh and emitted and window[0].kind == "heading"
            and unit.level < min(u.level for u in window if u.kind == "heading")
            and sum(u.tokens for u in emitted) + size <= max_tokens
        ):  # fmt: skip
            # The small last subsection of a section ("See also" under a directive) ends that
            # section's chunk: opening the next section's, it named that chunk after the wrong one.
            chunks.pop()
            emit(emitted + window)
            window = []
        elif unit.kind == "term" and window and size - sum(u.tokens for u in leading) >= max_tokens // 4:
            # A definition list (a glossary, a list of settings) breaks between entries as a page
            # breaks between sections (small ones share a chunk), each chunk headed by its first
            # entry's term: a chunk of eight glossary entries was headed by none of them, the first
            # one's term left dangling at the end of the chunk before. Its other names come along.
            body = window[: len(window) - len(leading)]
            if fresh:
                emit(body)
            window = leading
        elif window and size + unit.tokens > max_tokens:
            body = window[: len(window) - len(leading)]
            if fresh and body:
                emit(body)
            window = leading or _overlap_tail(body, overlap_tokens, unit.section)
            while window and sum(u.tokens for u in window) + unit.tokens > max_tokens:
                window.pop(0)
        window.append(unit)
        fresh = True
    while window and window[-1].kind == "heading":
        window.pop()
    if window and fresh:
        emit(window)
    return chunks


def _units(blocks: list[Block], count_tokens, split_tokens, max_tokens: int) -> list[_Unit]:
    """Each block as the pieces a window may hold: a heading, a sentence, a code block (or its lines
    in runs that fit), each with the section path it sits under."""
    pieces: list[tuple[str, int, Block]] = []
    path: list[tuple[int, str]] = []  # (level, heading)
    for index, block in enumerate(blocks):
        if block.kind == "heading":
            path = [(lvl, h) for lvl, h in path if lvl < block.level] + [(block.level, block.text)]
        section = tuple(h for _, h in path)
        if block.kind == "definition" and block.term:
            section = (*section, block.term)
        texts = [block.text] if block.kind in ("code", "heading") else block_sentences(block)
        name = _names_next_term(blocks, index)
        pieces += [(t, index, block, section, name) for t in texts]
    counts = count_tokens([p[0] for p in pieces]) if pieces else []
    units: list[_Unit] = []
    for (piece, index, block, section, name), count in zip(pieces, counts, strict=True):
        if count <= max_tokens:
            parts = [(piece, count)]
        elif block.kind == "code":
            parts = _code_runs(piece, count_tokens, split_tokens, max_tokens)
        else:
            cut = split_tokens(piece, max_tokens)
            parts = list(zip(cut, count_tokens(cut), strict=True))
        units += [_Unit(t, c, index, block.kind, section, block.level, name, block.location) for t, c in parts]
    return units


def _code_runs(code: str, count_tokens, split_tokens, max_tokens: int) -> list[tuple[str, int]]:
    """A long code block as runs of whole lines that fit the budget (a line alone too long is cut)."""
    lines = code.split("\n")
    runs: list[tuple[str, int]] = []
    current: list[str] = []
    size = 0
    for line, count in zip(lines, count_tokens(lines), strict=True):
        if count > max_tokens:
            cut = split_tokens(line, max_tokens)
            parts = list(zip(cut, count_tokens(cut), strict=True))
        else:
            parts = [(line, count)]
        for part, tokens in parts:
            if current and size + tokens + 1 > max_tokens:
                runs.append(("\n".join(current), size))
                current, size = [], 0
            current.append(part)
            size += tokens + 1  # the line break
    if current:
        runs.append(("\n".join(current), size))
    return runs


def _overlap_tail(window: list[_Unit], overlap_tokens: int, section: tuple[str, ...]) -> list[_Unit]:
    """Trailing sentences of the same section to repeat: never the whole window again (each chunk
    must add something), never a heading or code, never opening with a sentence that leans back."""
    tail: list[_Unit] = []
    total = 0
    for unit in reversed(window[1:]):
        shared = min(len(unit.section), len(section))
        if unit.kind not in PROSE or unit.section[:shared] != section[:shared]:
            break
        if total + unit.tokens > overlap_tokens:
            break
        tail.insert(0, unit)
        total += unit.tokens
    while tail and leans_back(tail[0].text):
        # Never open a chunk with a sentence that leans on one left behind ("This lets you name
        # individual directives…" without "…use the AllowOverrideList directive."): the whole
        # pair stays in the chunk before, the next opens after it.
        tail.pop(0)
    return tail


def _render(window: list[_Unit]) -> ChunkText:
    """The window in block syntax: units of one block joined (sentences by a space, code lines by a
    line break), blocks set apart by a blank line."""
    blocks: list[str] = []
    for _, group in itertools.groupby(window, key=lambda u: u.block):
        units = list(group)
        first = units[0]
        if first.kind == "heading":
            blocks.append(f"{'#' * first.level} {first.text}")
        elif first.kind == "code":
            blocks.append("```\n" + "\n".join(u.text for u in units) + "\n```")
        else:
            blocks.append(BLOCK_PREFIX.get(first.kind, "") + " ".join(u.text for u in units))
    # Where it sits: under its first entry's term when it opens with one (the term's own unit
    # carries only the headings above it).
    section = next((u.section for u in window if u.kind != "heading" and not u.opens_entry), window[0].section)
    where = locations.span([json.loads(u.location) for u in window if u.location])
    return ChunkText(
        text="\n\n".join(blocks), token_count=sum(u.tokens for u in window), section=section, location=where
    )
