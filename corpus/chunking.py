"""Sentence splitting and token-measured chunk windows. Pure functions: no model, no database.

Token counts come from a callable so the windows are measured in the embedder's own tokens
while tests can pass a deterministic counter.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

# Words that end in a period without ending a sentence.
_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "inc", "ltd", "co", "corp",
    "no", "fig", "eq", "al", "approx", "dept", "est", "gen", "gov", "sgt", "col", "lt", "mt",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    "e.g", "i.e", "cf", "ca", "u.s", "u.k", "ph.d",
}  # fmt: skip
# "at 4:05 p.m. UTC (9:05 a.m. PDT)": a time followed by its zone is no boundary; "at 5 p.m. The
# next day" still is.
_TIME_SUFFIXES = {"a.m", "p.m"}
_ZONE_NEXT = re.compile(r"[(\[]?[A-Z]{2,5}\b")
# A candidate boundary: terminal punctuation, optional closing quotes/brackets, whitespace, then
# something that can start a sentence.
_BOUNDARY = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*\s+(?=[\"'\u201c\u2018(\[]?[A-Z0-9])")
_BLOCK_LINE = re.compile(r"^\s*(#{1,6}\s|[-*+]\s|\d+[.)]\s|>\s?|\|)")
_WHOLE_LINE = re.compile(r"^\s*(#{1,6}\s|\|)")
_WORD_BEFORE = re.compile(r"(\S+)$")


def split_paragraphs(text: str) -> list[str]:
    """Split on blank lines; inside a paragraph, keep headings, list items and table rows apart."""
    paragraphs: list[str] = []
    for block in re.split(r"\n\s*\n", text.replace("\r\n", "\n").replace("\r", "\n")):
        current: list[str] = []
        for line in block.split("\n"):
            if not line.strip():
                continue
            if _BLOCK_LINE.match(line) and current:
                paragraphs.append(" ".join(current))
                current = []
            current.append(line.strip())
            if _WHOLE_LINE.match(line):  # a heading or table row takes no continuation lines
                paragraphs.append(" ".join(current))
                current = []
        if current:
            paragraphs.append(" ".join(current))
    return [re.sub(r"\s+", " ", p).strip() for p in paragraphs if p.strip()]


def split_sentences(text: str) -> list[str]:
    """Split text into sentences, keeping abbreviations and initials ("Dr.", "J. R. R.") intact."""
    sentences: list[str] = []
    for paragraph in split_paragraphs(text):
        start = 0
        for match in _BOUNDARY.finditer(paragraph):
            end = match.start() + len(match.group(0).rstrip())
            word = _WORD_BEFORE.search(paragraph[start : match.start()])
            token = (word.group(1) if word else "").lower().strip("\"'([")
            if paragraph[match.start()] == "." and (
                token in _ABBREVIATIONS
                or re.fullmatch(r"[a-z]", token)
                or (token in _TIME_SUFFIXES and _ZONE_NEXT.match(paragraph, match.end()))
            ):
                continue
            sentences.append(paragraph[start:end].strip())
            start = match.end()
        tail = paragraph[start:].strip()
        if tail:
            sentences.append(tail)
    return [s for s in sentences if s]


@dataclass(frozen=True)
class ChunkText:
    text: str
    token_count: int


def chunk_text(
    text: str,
    *,
    count_tokens: Callable[[list[str]], list[int]],
    split_tokens: Callable[[str, int], list[str]],
    max_tokens: int = 200,
    overlap_tokens: int = 40,
) -> list[ChunkText]:
    """Group whole sentences into windows of at most `max_tokens`, repeating up to `overlap_tokens`
    of trailing sentences at the start of the next window.

    A sentence is cut (at token boundaries) only when it alone exceeds `max_tokens`.
    """
    if overlap_tokens >= max_tokens:
        raise ValueError("overlap_tokens must be smaller than max_tokens")
    units: list[tuple[str, int]] = []
    sentences = split_sentences(text)
    for sentence, count in zip(sentences, count_tokens(sentences)):
        if count <= max_tokens:
            units.append((sentence, count))
        else:
            pieces = split_tokens(sentence, max_tokens)
            units.extend(zip(pieces, count_tokens(pieces)))

    chunks: list[ChunkText] = []
    window: list[tuple[str, int]] = []
    fresh = False  # whether the window holds a unit no earlier chunk has emitted
    for unit in units:
        if window and sum(c for _, c in window) + unit[1] > max_tokens:
            if fresh:
                chunks.append(_join(window))
            window = _overlap_tail(window, overlap_tokens)
            while window and sum(c for _, c in window) + unit[1] > max_tokens:
                window.pop(0)
        window.append(unit)
        fresh = True
    if window and fresh:
        chunks.append(_join(window))
    return chunks


def _overlap_tail(window: list[tuple[str, int]], overlap_tokens: int) -> list[tuple[str, int]]:
    tail: list[tuple[str, int]] = []
    total = 0
    for unit in reversed(window[1:]):  # never the whole window again: each chunk must add something
        if total + unit[1] > overlap_tokens:
            break
        tail.insert(0, unit)
        total += unit[1]
    return tail


def _join(window: list[tuple[str, int]]) -> ChunkText:
    return ChunkText(text=" ".join(s for s, _ in window), token_count=sum(c for _, c in window))
