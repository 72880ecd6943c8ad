"""The output gate: what an LLM writes is checked sentence by sentence before anyone reads it.

Only VERIFIED evidence reaches a generator, but a model still writes what its evidence does not
say: a famous name for the one in the passage, a date from its own memory, the prompt's quoting
markers. Each sentence, once complete, is judged as the claim it makes about the question
(judges/grounding.py, the judgment validation uses): its citations must point at evidence that
entails it, at CAIRN_GROUNDING_THRESHOLD (calibrated by calibrate_gate); an uncited sentence, or
one whose citations do not support it, is checked against all the evidence and shown citing the
passage that entails it. The NLI model judges a claim against a whole passage and passes fluent
claims on its topic, so a passage can support a sentence only where one of its sentences states
all the sentence's names and figures, it holds most of the sentence's words (WORDS_FOUND), and
every word of the question the sentence repeats (could_support); an answer of a few words must
come word for word from a passage sentence that the answer judge accepts (fragment_sources).
What no evidence supports is left out, and the reader is told so. When
the sentences shown do not address the question (the answer judge, as validation asks it, below
the floor at which the extractive answer states a sentence: CAIRN_ANSWER_STATED_FLOOR, also from
calibrate_gate) or nothing passes, the answer is withheld and the pipeline answers extractively
instead.

Streaming stays: a sentence is released as soon as the next one begins and it has passed.
"""

from __future__ import annotations

import re
import time
from collections.abc import Generator as Stream

from django.conf import settings

from corpus.chunking import split_sentences
from judges.grounding import (
    SHORT_ANSWER_WORDS,
    SentenceCheck,
    answer_relevance,
    answer_sentences,
    check_grounding,
    claim_for,
)
from judges.verifiers import get_answer_judge
from pipeline.extractive import content_terms
from pipeline.generators import NOT_FOUND_MARK, EvidenceText, Generation

SHOWN, UNSUPPORTED = "shown", "unsupported"

# The prompt's own markup (generators.quoted): its quoting markers with the evidence labels between
# them, the same markers half-echoed ("Justice of the Peace>> The job…"), role prefixes, and a
# line opened as a Markdown quote ("> The middle cranial fossa…").
_QUOTES = re.compile(r"(?:<<<|‹‹‹)[^\n]*?(?:>>>|›››)")
_MARKERS = re.compile(r"[<>‹›]{2,}")
_LINE_OPENERS = re.compile(r"^\s*(?:>\s*)+|^\s*(?:Evidence|Question|Answer)\s*:\s*", re.IGNORECASE | re.MULTILINE)


class Withheld(Exception):
    """Nothing the model wrote may be shown: the pipeline answers extractively and says why."""

    def __init__(self, reason: str, sentences: list[dict]):
        super().__init__(reason)
        self.reason, self.sentences = reason, sentences


def unmarked(text: str, evidence: list[EvidenceText]) -> str:
    """`text` without the prompt's markup: quoting markers, evidence labels ("[1] Title"), role
    prefixes. Citations stay."""
    text = _QUOTES.sub(" ", text)
    for e in evidence:
        if e.title:
            title = rf"{re.escape(e.title)}(?:\s*\(external\))?"
            text = re.sub(rf"(?:\[{e.n}\]\s*)?{title}\s*[>›]{{2,}}", " ", text, flags=re.I)  # echoed with its marker
            text = re.sub(rf"\[{e.n}\]\s*{title}", f"[{e.n}]", text, flags=re.I)
    return _LINE_OPENERS.sub("", _MARKERS.sub(" ", text))


def cited_text(sentence: str, cited: list[int]) -> str:
    """The sentence with its citations before its closing stop, as the prompt asks models to write."""
    body, stop = re.match(r"(.*?)([.!?…]*[\"'”’)]*)$", sentence, re.DOTALL).groups()
    return body + "".join(f" [{n}]" for n in cited) + stop


# The share of a claim's words its passage must hold: a copied or condensed sentence holds all of
# them, an invented one that the NLI model passes far fewer (how it was chosen: benchmarks/HISTORY.md).
WORDS_FOUND = 0.75

# Capitalised words and figures: the names, dates and amounts a sentence states.
_SPECIFIC = re.compile(r"\b(?:[A-ZÀ-Þ][\w'’-]*|\w*\d[\w,.:/-]*\w|\d)")


def specifics(sentence: str, question: str) -> set[str]:
    """The names and figures `sentence` states that its question does not (its first word aside:
    capitalised only because it comes first)."""
    asked = question.lower()
    words = _SPECIFIC.findall(sentence)
    first = sentence.split(maxsplit=1)[0] if sentence.split() else ""
    return {w.lower() for w in words if w.lower() not in asked and not first.startswith(w)}


def stated_together(names: set[str], evidence_sentences: list[str]) -> bool:
    """Does one sentence of the evidence state all these names and figures? The NLI model judges a
    claim against a whole passage and lets one name stand for another it mentions ("awarded to John
    Bardeen, who received 150,782 SEK" against a passage where Röntgen received the money and
    Bardeen appears two sentences later: 0.98): a claim's specifics must come from one sentence."""
    return not names or any(all(n in s.lower() for n in names) for s in evidence_sentences)


def words_found(sentence: str, question: str, passage: str) -> float:
    """The share of the sentence's content words beyond its question's that the passage holds. The
    NLI model rates a fluent claim on the passage's topic as entailed though its key words come from
    nowhere ("…contains the auditory system and the nasal cavity" of a passage on neither: 0.98)."""
    new = content_terms(sentence) - content_terms(question)
    return len(new & content_terms(passage)) / len(new) if new else 1.0


def asked_words_missing(sentence: str, question: str, passage: str) -> set[str]:
    """The question's words the sentence repeats that the passage does not hold. A model grafts the
    question's frame onto whatever fact the passage states ("The number one ranked golfer in the world
    right now is Rafael Nadal." from "The current world number one is Rafael Nadal.", a tennis
    passage: NLI 0.97), and the grafted words are what the passage lacks."""
    return (content_terms(sentence) & content_terms(question)) - content_terms(passage)


def could_support(sentence: str, question: str, passage: str, passage_sentences: list[str]) -> bool:
    """May this passage support the sentence at all, before the NLI model is asked?"""
    return (
        words_found(sentence, question, passage) >= WORDS_FOUND
        and not asked_words_missing(sentence, question, passage)
        and stated_together(specifics(sentence, question), passage_sentences)
    )


def fragment_sources(question: str, fragment: str, sentences_of: dict[int, list[str]]) -> set[int]:
    """The passages that state `fragment` (an answer of a few words: "Rahman.") in a sentence the
    answer judge accepts as answering the question. The NLI model judges a fragment as the claim it
    makes about the question and accepts a name the passage merely mentions ("El Pollo Loco, Inc."
    for its founder, where the passage names the chain's owner: 0.98); a fragment is only as good as
    the sentence it comes from."""
    needle = " ".join(fragment.lower().split()).rstrip(".!?;:")
    holding = [
        (n, s) for n, sentences in sentences_of.items() for s in sentences if needle in " ".join(s.lower().split())
    ]
    if not needle or not holding:
        return set()
    scores = get_answer_judge().score(question, [s for _, s in holding])
    return {
        n for (n, _), score in zip(holding, scores.tolist(), strict=True) if score >= settings.CAIRN_ANSWER_THRESHOLD
    }


def verdict(check: SentenceCheck) -> tuple[str, list[int]]:
    """(verdict, the citations the shown sentence carries): those of its own that entail it, else
    the passage that best does; unsupported when none does."""
    threshold = settings.CAIRN_GROUNDING_THRESHOLD
    supports = [n for n, p in sorted(check.scores.items(), key=lambda item: -item[1]) if p >= threshold]
    if own := [n for n in dict.fromkeys(check.cited) if n in supports]:
        return SHOWN, own
    if supports:
        return SHOWN, supports[:1]
    return UNSUPPORTED, []


def gated(
    question: str, evidence: list[EvidenceText], stream: Stream[str, None, Generation]
) -> Stream[str, None, Generation]:
    """`stream` (a generator's pieces, then its Generation) with every sentence checked: shown
    sentences as they pass, then the Generation of what was shown. Raises Withheld when nothing
    may be shown."""
    judged = [{"n": e.n, "text": e.text, "origin": e.origin} for e in evidence]
    sentences_of = {e.n: [sentence for strip in (e.sentences or [e.text]) for sentence in split_sentences(strip)]
                    for e in evidence}  # fmt: skip
    records: list[dict] = []
    shown: list[tuple[str, list[int]]] = []
    spent = {"output_gate": 0.0}
    started = time.perf_counter()

    def check(sentence: str, cited: list[int], *, alone: bool) -> str | None:
        """Judge one sentence; its text to show, or None. Only passages that could support it go
        to the NLI model: those where one sentence states its names and figures and which hold
        its words (a sentence the model made up mostly costs no model call at all)."""
        began = time.perf_counter()
        plausible = [j for j in judged if could_support(sentence, question, j["text"], sentences_of[j["n"]])]
        if plausible and len(sentence.split()) <= SHORT_ANSWER_WORDS:
            stating = fragment_sources(question, sentence, {j["n"]: sentences_of[j["n"]] for j in plausible})
            plausible = [j for j in plausible if j["n"] in stating]
        if plausible:
            result = check_grounding(question, [(sentence, cited)], plausible, alone=alone)[0]
        else:
            result = SentenceCheck(sentence, claim_for(question, sentence, alone=alone), cited, 0.0, None, 0.0)
        decision, citations = verdict(result)
        spent["output_gate"] += (time.perf_counter() - began) * 1000
        records.append(result.record() | {"verdict": decision, "shown_cited": citations,
                                          "could_support": [j["n"] for j in plausible]})  # fmt: skip
        if decision != SHOWN:
            return None
        shown.append((sentence, citations))
        spent.setdefault("first_shown", (time.perf_counter() - started) * 1000)
        return cited_text(sentence, citations) + " "

    written: list[str] = []
    done = 0  # sentences checked
    while True:
        try:
            written.append(next(stream))
        except StopIteration as finished:
            generation = finished.value
            break
        text = unmarked("".join(written), evidence)
        if text.lstrip().upper().startswith(NOT_FOUND_MARK):
            continue  # the model says it cannot answer: nothing to check
        sentences = answer_sentences(text)
        while done < len(sentences) - 1:  # the last one may still grow or take its citation
            if (out := check(*sentences[done], alone=False)) is not None:
                yield out
            done += 1
    if not generation.found:
        return generation
    sentences = answer_sentences(unmarked("".join(written), evidence))
    for sentence, cited in sentences[done:]:
        if (out := check(sentence, cited, alone=len(sentences) == 1)) is not None:
            yield out
    if not shown:
        raise Withheld("no sentence the model wrote is supported by the verified evidence", records)
    began = time.perf_counter()
    relevance = answer_relevance(question, shown)
    spent["output_gate"] += (time.perf_counter() - began) * 1000
    if relevance is not None and relevance < settings.CAIRN_ANSWER_STATED_FLOOR:
        raise Withheld("the sentences the evidence supports do not answer the question", records)
    left_out = sum(r["verdict"] != SHOWN for r in records)
    notes = list(generation.notes)
    if left_out:
        notes.append(
            "1 sentence left out: the sources do not support it" if left_out == 1
            else f"{left_out} sentences left out: the sources do not support them"
        )  # fmt: skip
    return Generation(
        " ".join(cited_text(s, c) for s, c in shown), sorted({n for _, c in shown for n in c}), generation.generator,
        notes=notes, sentences=records, timings_ms={k: round(v, 2) for k, v in spent.items()},
    )  # fmt: skip
