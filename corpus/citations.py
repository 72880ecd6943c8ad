"""The [n] citation markers an answer carries: one grammar for the generators, validation and the
write-back queue.

A marker is a run of bracketed numbers ("[1]", "[2][3]", "[2] [3]") that does not touch a word or
a closing bracket before it, so an answer quoting code keeps it: in `char dbname[1024];` or
`m[1][2]` the numbers are subscripts, not citations, and nothing renumbers, removes or reads them.
The price, decided: an LLM that glues a citation to a word ("Okafor[1]") cites nothing there, so
that sentence counts as uncited (the answer is shown, but not written back). Cairn's extractive
generator always writes " [n]", and the prompt asks for the same.
"""

from __future__ import annotations

import re

CITATION_RUN = re.compile(r"(?<![\w\]])\[\d+\](?:[ \t]*\[\d+\])*")
# A run with the space before it, captured: re.split keeps it (validation's answer_sentences). Tried
# only where a run of spaces starts, and possessive: from inside the run it was scanned again from
# every one of its characters (quadratic in a run of spaces or line breaks).
CITATION_MARKER = re.compile(r"((?<!\s)\s*+(?:" + CITATION_RUN.pattern + "))")
_NUMBER = re.compile(r"\d+")


def citation_numbers(text: str) -> list[int]:
    """Every citation number in `text`, in order, repeats kept."""
    return [int(n) for run in CITATION_RUN.findall(text) for n in _NUMBER.findall(run)]


def without_citations(text: str) -> str:
    """`text` with its citation markers (and the space before each) removed."""
    return CITATION_MARKER.sub("", text)


def keep_citations(text: str, allowed: set[int]) -> str:
    """`text` with citation numbers outside `allowed` removed; subscripts in quoted code untouched."""

    def kept(run: re.Match) -> str:
        return "".join(f"[{n}]" for n in map(int, _NUMBER.findall(run.group(0))) if n in allowed)

    return CITATION_RUN.sub(kept, text)
