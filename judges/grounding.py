"""Does the evidence support what an answer says? One judgment, shared by the output gate, which
checks an LLM's sentences before anyone reads them (pipeline/output_gate.py), and by validation,
which decides whether an answer may become a corpus addition (writeback/validation.py).

A sentence is judged as the claim it makes about its question: "Delhi." alone is entailed by
nothing, "Delhi is the capital of India." can be (nli_data.claim_from, the same form the NLI
model was trained and the grounding threshold calibrated on).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from django.conf import settings

from corpus.chunking import split_sentences
from corpus.citations import CITATION_MARKER, citation_numbers
from corpus.models import Document
from judges.nli_data import claim_from
from judges.verifiers import get_answer_judge, get_entailment_model

SHORT_ANSWER_WORDS = 4  # a sentence this short is an answer fragment: judge the claim it makes


@dataclass(frozen=True)
class SentenceCheck:
    sentence: str
    claim: str
    cited: list[int]
    entailment: float  # the best over all corpus evidence
    best_n: int | None
    source_entailment: float  # the best over evidence from SOURCE documents (the loop guard)
    verbatim: bool = False  # copied from its evidence: grounded by construction, not by the NLI model
    scores: dict[int, float] = field(default_factory=dict)  # entailment by evidence number, where scored

    def record(self) -> dict:
        return {"sentence": self.sentence, "claim": self.claim, "cited": self.cited, "entailment": self.entailment,
                "best_n": self.best_n, "verbatim": self.verbatim, "scores": {str(n): p for n, p in self.scores.items()}}  # fmt: skip


def answer_sentences(answer: str) -> list[tuple[str, list[int]]]:
    """Each sentence of a cited answer with the citation numbers it carries, citations removed.

    Citations close what precedes them: "A. [1] B [2]." and "A [1]. B [2]." both give
    [("A.", [1]), ("B.", [2])], and so do citations after closing quotes, ellipses or
    abbreviations ('... "Signs." [1]'), where splitting sentences first would hand the citation
    to the next sentence. Text before a citation but in an earlier sentence is uncited."""
    parts = CITATION_MARKER.split(answer)  # text, citations, text, citations, ..., text
    sentences: list[tuple[str, list[int]]] = []
    for i in range(0, len(parts), 2):
        text, citations = parts[i], parts[i + 1] if i + 1 < len(parts) else ""
        if sentences and (stop := re.match(r"\s*([.!?]+)", text)):  # "A [1]." : the stop closes A
            sentences[-1] = (sentences[-1][0].rstrip() + stop.group(1), sentences[-1][1])
            text = text[stop.end() :]
        pieces = [" ".join(p.split()) for p in split_sentences(text) if re.search(r"\w", p)]
        numbers = citation_numbers(citations)
        if not pieces:
            if numbers and sentences:
                sentences[-1][1].extend(numbers)
            continue
        sentences += [(piece, []) for piece in pieces[:-1]]
        sentences.append((pieces[-1], numbers))
    return sentences


def claim_for(question: str, sentence: str, *, alone: bool) -> str:
    """The claim an answer sentence makes. A one-sentence answer is judged as claim_from(question,
    answer): the form the NLI model was trained and the grounding threshold calibrated on. In a
    longer answer each sentence answers part of the question ("Who leads X and what is its
    budget?"), so it is judged as it stands, unless it is a fragment ("Delhi.")."""
    if alone or len(sentence.split()) <= SHORT_ANSWER_WORDS:
        return claim_from(question, sentence)
    return sentence


def answer_relevance(question: str, sentences: list[tuple[str, list[int]]]) -> float | None:
    """The answer judge's best score over the answer's sentences that stand alone: one sentence that
    states the answer is enough, the others may give its context. An answer citing several sources
    is also judged whole: it may answer a compound question part by part ("Who leads X and what is
    its budget?": 0.09 and 0.82 by sentence, 0.98 whole). A quote from one source is not: judged
    whole, a passage's neighbouring sentences gave wrong NQ answers the judge's confidence (wrong
    share of the accepted 17% against 12%). None when the answer is only fragments ("Delhi."):
    their claim restates the question, so no judge can tell them from another question's answer
    (the relevance evaluator: ROC-AUC 0.52 on HaluEval's held-out rows, right answer vs another
    row's right answer); grounding judges them."""
    standalone = [s for s, _ in sentences if len(s.split()) > SHORT_ANSWER_WORDS]
    if not standalone:
        return None
    sources = {n for _, cited in sentences for n in cited}
    texts = standalone + [" ".join(standalone)] if len(sources) > 1 and len(standalone) > 1 else standalone
    return round(float(max(get_answer_judge().score(question, texts))), 4)


def _plain(text: str) -> str:
    """Text as compared word for word: whitespace collapsed, lower case."""
    return " ".join(text.split()).lower()


def verbatim_in(sentence: str, evidence: list[dict]) -> list[int]:
    """Indices of the evidence that contains `sentence` word for word (whitespace, case and the final
    stop aside). Only a sentence that stands alone counts: a fragment ("Delhi.") occurs in plenty of
    text that does not say what the answer claims."""
    if len(sentence.split()) <= SHORT_ANSWER_WORDS:
        return []
    needle = _plain(sentence).rstrip(".!?;:")  # the quote may end where the evidence's sentence goes on
    return [j for j, e in enumerate(evidence) if needle in _plain(e["text"])]


def states_answer(question: str, sentence: str) -> bool:
    """Does the answer judge accept `sentence` as stating an answer to `question`?"""
    return float(get_answer_judge().score(question, [sentence])[0]) >= settings.CAIRN_ANSWER_THRESHOLD


def check_grounding(
    question: str,
    sentences: list[tuple[str, list[int]]],
    evidence: list[dict],
    *,
    alone: bool | None = None,
    known: list[dict[int, float]] | None = None,
) -> list[SentenceCheck]:
    """The best entailment of each sentence's claim. A sentence copied from its evidence (`verbatim`)
    and judged as it stands is grounded by construction (1.0): the NLI model, whose entailment tops
    out near 0.99, would otherwise let a quote miss the threshold by a thousandth. The rest, cited
    evidence first: a sentence its own
    citations already support at the threshold is not searched further (the usual case: 5 NLI
    pairs for a 5-sentence answer instead of 5 x 8); the others are scored against all evidence,
    and SOURCE evidence is scored for every sentence only when no sentence has shown source
    support yet (the loop guard). Each round is one batched call; a skipped pair can only make
    a sentence's score lower than the full maximum, never let an answer pass.

    `alone`: judge each sentence as a whole answer (default: when there is one sentence); the
    output gate, checking a sentence while the model writes on, knows better. `known`: entailment
    already scored, by evidence number, for each sentence (the output gate's): not scored again."""
    alone = len(sentences) == 1 if alone is None else alone
    claims = [claim_for(question, s, alone=alone) for s, _ in sentences]
    threshold = settings.CAIRN_GROUNDING_THRESHOLD
    index_of = {e["n"]: j for j, e in enumerate(evidence)}
    source = [j for j, e in enumerate(evidence) if e.get("origin") == Document.Origin.SOURCE]
    scores: list[dict[int, float]] = [
        {index_of[n]: p for n, p in (known[i] if known else {}).items() if n in index_of} for i in range(len(claims))
    ]

    def score(pairs: list[tuple[int, int]]) -> None:
        todo = sorted({(i, j) for i, j in pairs if j not in scores[i]})
        if todo:
            entail = get_entailment_model().predict([(evidence[j]["text"], claims[i]) for i, j in todo])[:, 0]
            for (i, j), p in zip(todo, entail.tolist(), strict=True):
                scores[i][j] = p

    def best(i: int, among=None) -> float:
        return max((p for j, p in scores[i].items() if among is None or j in among), default=0.0)

    copied = [verbatim_in(sentence, evidence) for sentence, _ in sentences]
    for i, found in enumerate(copied):
        # A quote judged as it stands is grounded. A one-sentence answer is judged as its claim about
        # the question ("Who leads X? <sentence>"), which a quote of another fact does not support:
        # the answer judge decides whether the quote states the answer; if not, the NLI model judges.
        if found and (claims[i] == sentences[i][0] or states_answer(question, sentences[i][0])):
            scores[i].update(dict.fromkeys(found, 1.0))
    score([(i, index_of[n]) for i, (_, cited) in enumerate(sentences) for n in cited if n in index_of])
    score([(i, j) for i in range(len(claims)) if best(i) < threshold for j in range(len(evidence))])
    if not any(best(i, source) >= threshold for i in range(len(claims))):
        score([(i, j) for i in range(len(claims)) for j in source])
    checks = []
    for i, ((sentence, cited), claim) in enumerate(zip(sentences, claims, strict=True)):
        top = max(scores[i], key=scores[i].get, default=None)
        checks.append(
            SentenceCheck(
                sentence=sentence, claim=claim, cited=cited,
                entailment=round(scores[i][top], 4) if top is not None else 0.0,
                best_n=evidence[top]["n"] if top is not None else None,
                source_entailment=round(best(i, source), 4), verbatim=bool(copied[i]),
                scores={evidence[j]["n"]: round(p, 4) for j, p in scores[i].items()},
            )
        )  # fmt: skip
    return checks
