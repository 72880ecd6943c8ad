"""Internal consistency of a chunk: can it be read on its own, as a whole, and is it content?

The verification gate's S_cons (VG-RAG). It depends on the chunk alone, so it is computed once
at ingestion and stored on the chunk, never at query time. A documented scoring, not a model:
start from 1 and subtract a penalty for each defect found, floor 0.

- Dangling reference (0.25): the chunk opens on a word that points outside it ("It", "This",
  "These", "He", "However", ...), or mentions "above", "below", "the following" as a reference.
- Truncated (0.25 each end): the first sentence starts in lower case (cut mid-sentence) or the
  last one ends without terminal punctuation.
- Boilerplate (0.4): navigation, cookie, copyright and "click here" phrases, or a chunk that is
  mostly non-letters (tables of numbers, markup debris).
- Too short to carry a claim (0.3): under six words.
"""

from __future__ import annotations

import re

from readers.blocks import PROSE, parse_blocks

PENALTY_DANGLING = 0.25
PENALTY_TRUNCATED = 0.25
PENALTY_BOILERPLATE = 0.4
PENALTY_SHORT = 0.3

_DANGLING_OPENERS = frozenset(
    [
        "it",
        "this",
        "that",
        "these",
        "those",
        "he",
        "she",
        "they",
        "him",
        "her",
        "them",
        "his",
        "its",
        "their",
        "such",
        "however",
        "therefore",
        "thus",
        "also",
        "moreover",
        "furthermore",
        "besides",
        "nevertheless",
        "hence",
        "likewise",
        "meanwhile",
    ]
)
_DANGLING_PHRASES = re.compile(
    r"\b(as (mentioned|noted|discussed|described|shown|stated) (above|earlier|before|previously)|see (above|below)|"
    r"the (following|above|aforementioned)|(listed|shown|described) below)\b",
    re.I,
)
_BOILERPLATE = re.compile(
    r"\b(all rights reserved|cookie(s)? (policy|settings)|we use cookies|click here|privacy policy|terms of (use|service)|"
    r"skip to (main )?content|back to top|sign (in|up)|log ?in|subscribe to our|share (this|on)|page \d+ of \d+|"
    r"copyright ©?|©)",
    re.I,
)
_TERMINAL = re.compile(r"[.!?:;\"'\u201d\u2019)\]]\s*$")


def consistency_score(text: str) -> float:
    """1.0 for a clean, self-contained passage; lower for each defect (see the module docstring).

    Read by blocks (readers.blocks.parse_blocks): headings and code are neither fragments nor
    debris, a term or a table row needs no full stop, and a code-only chunk is judged as it is."""
    blocks = [b for b in parse_blocks(text) if b.kind in PROSE]
    if not blocks:
        return _score(text.strip(), check_start=True, check_end=True)
    sentence_like = ("paragraph", "definition", "item")
    return _score(
        " ".join(b.text for b in blocks),
        check_start=blocks[0].kind in ("paragraph", "definition"),
        check_end=blocks[-1].kind in sentence_like,
    )


def _score(stripped: str, *, check_start: bool, check_end: bool) -> float:
    words = stripped.split()
    if not words:
        return 0.0
    score = 1.0
    first = words[0].strip("\"'([").lower().rstrip(",")
    if first in _DANGLING_OPENERS or _DANGLING_PHRASES.search(stripped):
        score -= PENALTY_DANGLING
    if check_start and stripped[0].islower():
        score -= PENALTY_TRUNCATED
    if check_end and not _TERMINAL.search(stripped) and not stripped.startswith("#"):
        score -= PENALTY_TRUNCATED
    letters = sum(ch.isalpha() for ch in stripped)
    if _BOILERPLATE.search(stripped) or letters < 0.5 * len(stripped.replace(" ", "")):
        score -= PENALTY_BOILERPLATE
    if len(words) < 6:
        score -= PENALTY_SHORT
    return round(max(0.0, score), 3)
