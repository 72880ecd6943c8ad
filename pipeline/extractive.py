"""The extractive answer: the evidence's own sentences that state the answer, each cited.

The answer judge (pipeline/verifiers.get_answer_judge) scores every sentence of the VERIFIED
evidence against the question; the answer is the smallest set it supports, chosen by
`answer_selection`:

- the lead passage is the first VERIFIED one, the best-ranked by retrieval, reputation and the
  gate (on held-out NQ it is the gold passage 88% of the time; the passage holding the single
  best-judged sentence is, less often). Its best sentence opens the answer;
- its other sentences join, best first, while they are accepted by the judge
  (CAIRN_ANSWER_THRESHOLD) or within the relative margin of its best (score >= CAIRN_ANSWER_MARGIN
  x best): an answer often spans two sentences of one passage ("…was stolen in 1911. It was
  recovered in 1913…"), and the judge rates the second low because it does not name its subject;
- another passage's sentence joins only when the judge accepts it and rates it at least as high as
  the lead's best: a second source stating the answer, never a neighbour padding it.

When the best sentence is below CAIRN_ANSWER_STATED_FLOOR (calibrated: 95% of held-out answer
sentences score above it) no passage states the answer, and the generator says so and offers the
chosen sentences as related, not as the answer. The margin and the lead rule were chosen on the
calibration part of held-out NQ (benchmarks/forward_path.py reports the report part).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "their",
        "there",
        "these",
        "this",
        "those",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "you",
        "your",
        "he",
        "she",
        "they",
        "we",
        "his",
        "her",
        "them",
        "than",
        "then",
        "also",
        "into",
        "about",
        "after",
        "before",
        "during",
        "over",
        "under",
        "between",
        "most",
        "many",
        "much",
        "name",
        "named",
        "called",
    ]
)
_WORD = re.compile(r"[a-z0-9]+")


def content_terms(text: str) -> set[str]:
    """Lower-cased words minus stopwords, with a crude plural fold (kings -> king)."""
    terms = set()
    for word in _WORD.findall(text.lower()):
        if word in STOPWORDS:
            continue
        terms.add(word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word)
    return terms


@dataclass(frozen=True)
class Sentence:
    evidence_number: int  # 1-based position of the evidence it came from: its citation number
    position: int  # order within that evidence
    text: str
    score: float  # the answer judge's P(this sentence states an answer to the question)


def answer_selection(
    judged: list[list[tuple[str, float]]], *, accept: float, margin: float, max_sentences: int
) -> list[Sentence]:
    """The sentences of an extractive answer, in reading order (lead passage first).

    `judged[i]` is evidence number i + 1's sentences with their answer-judge scores, evidence in
    the gate's order (the first is the lead). Empty when the evidence has no sentences."""
    sentences = [
        Sentence(number, position, text, score)
        for number, passage in enumerate(judged, start=1)
        for position, (text, score) in enumerate(passage)
    ]
    lead = [s for s in sentences if s.evidence_number == 1] or sentences
    if not lead:
        return []
    best = max(lead, key=lambda s: s.score)

    def joins(s: Sentence) -> bool:
        if s.evidence_number == best.evidence_number:
            return s.score >= accept or s.score >= margin * best.score
        return s.score >= accept and s.score >= best.score

    chosen, seen = [best], {_key(best.text)}
    for s in sorted(sentences, key=lambda s: (-s.score, s.evidence_number, s.position)):
        if len(chosen) == max_sentences:
            break
        if s is best or _key(s.text) in seen or not joins(s):  # overlapping chunks repeat sentences
            continue
        seen.add(_key(s.text))
        chosen.append(s)
    return sorted(chosen, key=lambda s: (s.evidence_number, s.position))


def _key(text: str) -> str:
    return " ".join(text.lower().split())
