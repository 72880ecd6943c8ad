"""The extractive answer: the lead passage's sentences that state the answer, each cited.

The lead passage is the first VERIFIED one, the best-ranked by retrieval, reputation and the gate
(on held-out NQ it is the gold passage 88% of the time; the passage holding the single best-judged
sentence among all VERIFIED ones is, less often). The answer judge
(pipeline/verifiers.get_answer_judge) scores its sentences against the question, and
`answer_selection` keeps the smallest set it supports: the best sentence, then the others, best
first, while the judge accepts them (CAIRN_ANSWER_THRESHOLD) or rates them within the relative
margin of the best (score >= CAIRN_ANSWER_MARGIN x best). An answer often spans two sentences of one
passage ("...was stolen in 1911. It was recovered in 1913."), and the judge rates the second low
because it does not name its subject.

Other passages never join. Letting another passage's sentence in when the judge accepted it at
least as highly as the lead's best was measured on the calibration part of held-out NQ: +0.6 points
of answers holding the gold string, +0.7 points of answers citing a passage other than the gold one
(report part: +0.5 and +2.1). A second source adds citations, not answers.

Known limit: the judge (and the relevance evaluator) rate a sentence of the same kind about another
entity high ("The 2016 Stanley Cup was won by..." for "who won the 2016 Champions League final?":
0.92, and 0.94), so inside the lead passage such a sentence can still join.

When the best sentence is below CAIRN_ANSWER_STATED_FLOOR (calibrated: 95% of held-out answer
sentences score above it) no passage states the answer: the generator says so and offers the chosen
sentences as related, not as the answer.
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
    position: int  # order within the lead passage
    text: str
    score: float  # the answer judge's P(this sentence states an answer to the question)


def answer_selection(
    judged: list[tuple[str, float]], *, accept: float, margin: float, max_sentences: int
) -> list[Sentence]:
    """The lead passage's sentences (with their answer-judge scores) that make the answer, in reading
    order: the best, then those accepted or within `margin` x its score, at most `max_sentences`
    sentences in all (a strip that joined a fragment to its neighbour counts as two). Empty when
    the passage has no sentences."""
    from corpus.chunking import split_sentences

    sentences = [Sentence(position, text, score) for position, (text, score) in enumerate(judged)]
    ranked = sorted(sentences, key=lambda s: (-s.score, s.position))
    if not ranked:
        return []
    best = ranked[0]
    chosen, seen = [best], {_key(best.text)}
    size = len(split_sentences(best.text))
    for s in ranked[1:]:
        if size >= max_sentences or (s.score < accept and s.score < margin * best.score):
            break
        count = len(split_sentences(s.text))
        if _key(s.text) not in seen and size + count <= max_sentences:  # a passage may repeat a sentence
            seen.add(_key(s.text))
            chosen.append(s)
            size += count
    return sorted(chosen, key=lambda s: s.position)


def _key(text: str) -> str:
    return " ".join(text.lower().split())
