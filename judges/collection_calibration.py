"""The gate's upper relevance threshold fitted to one collection's own text, without labels
(calibrate_gate --collection SLUG).

The global thresholds were fitted on Wikipedia QA (models/calibration.json). On a manual the
relevance evaluator reads every chunk as relevant to every technical question, so a customer's
corpus needs thresholds for its own domain, and it has no labelled questions. Its structure writes
them (judges/corpus_questions.py: "What does os.lstat do?" from an entry's heading):
- positives: those questions, each answered by the section it was written from;
- negatives: the same questions with their subject's longest word scrambled into one the
  collection never holds ("What does os.tslat do?"): what a reader asks about a thing the
  documents do not cover, worded in the collection's own vocabulary.
Each is asked as the pipeline asks it (retrieval, ranking, the gate's coverage and relevance),
and its score is the best relevance among the chunks that hold its key terms (0 when none does:
the answerability check already answers "not found"). The threshold is chosen as calibrate_gate
chooses the global one (judges.calibration.upper_threshold): it admits at most `far` of the
negatives unless that sends more than `search_budget` of the positives to external search.

Measured on the Python docs (200 questions, 2.3 minutes; README): 0.604 against the global 0.460,
its own questions below it 4.0% (3.5% at the global one), absent-word questions at or above it
5.0% (7.0%).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.contrib.auth.models import User

from corpus.models import Chunk, Collection
from judges.calibration import upper_threshold
from judges.corpus_questions import NoSectionQuestions, collection_chunks, section_questions

_WORD = re.compile(r"[^\W\d_]{4,}")


@dataclass(frozen=True)
class CalibrationQuestion:
    question: str  # written from a section's heading or term: the section answers it
    absent: str  # the same question about a word the collection never holds


def absent_word(word: str, held, rng: random.Random, tries: int = 20) -> str | None:
    """`word` with its letters shuffled into a string `held` says the collection never holds."""
    for _ in range(tries):
        letters = list(word)
        rng.shuffle(letters)
        scrambled = "".join(letters)
        if scrambled.lower() != word.lower() and not held(scrambled):
            return scrambled
    return None


def calibration_questions(collection: Collection, *, limit: int, seed: int = 13) -> list[CalibrationQuestion]:
    """Up to `limit` questions written from the collection's sections (a seeded sample), each with
    its absent twin. Raises NoSectionQuestions when its structure writes none."""
    questions = section_questions(collection_chunks(collection.slug))
    if not questions:
        raise NoSectionQuestions(f"collection {collection.slug!r} has no headings or definition terms to ask about")
    rng = random.Random(seed)
    rng.shuffle(questions)
    chunks = Chunk.objects.filter(document__collection=collection)

    def held(word: str) -> bool:
        return chunks.filter(text__icontains=word).exists()

    chosen = []
    for question in questions:
        words = _WORD.findall(question.subject)
        if not words:
            continue
        word = max(words, key=len)
        scrambled = absent_word(word, held, rng)
        absent = re.sub(re.escape(word), scrambled, question.question, flags=re.IGNORECASE) if scrambled else ""
        if absent and absent != question.question:
            chosen.append(CalibrationQuestion(question.question, absent))
        if len(chosen) == limit:
            break
    return chosen


def collection_gate_calibration(
    collection: Collection,
    *,
    relevance_of: Callable[[str, Collection, User], float],
    questions: int = 200,
    far: float = 0.05,
    search_budget: float = 0.10,
    progress=None,
) -> dict:
    """The collection's fitted upper threshold and what it saw, ready for Collection.gate_calibration.
    `relevance_of(question, collection, reader)`: a question's best answerable relevance as the
    pipeline asks it (pipeline.stages.best_answerable_relevance, passed in: the judges never
    import the request path). Read as an administrator would read the collection (an unsaved
    superuser: nothing is recorded)."""
    import numpy as np

    reader = User(username="calibrate_gate", is_superuser=True)
    asked = calibration_questions(collection, limit=questions)
    positives, negatives = [], []
    for question in asked:
        positives.append(relevance_of(question.question, collection, reader))
        negatives.append(relevance_of(question.absent, collection, reader))
        if progress:
            progress()
    upper = max(
        upper_threshold(negatives, positives, far=far, search_budget=search_budget), settings.CAIRN_RELEVANCE_LOWER
    )
    positives, negatives = np.array(positives), np.array(negatives)

    def shares(threshold: float) -> dict:
        return {
            "positives_below": round(float(np.mean(positives < threshold)), 4),
            "negatives_at_or_above": round(float(np.mean(negatives >= threshold)), 4),
        }

    return {
        "relevance_upper": round(float(upper), 4),
        "questions": len(asked),
        "target_false_acceptance": far,
        "target_search_budget": search_budget,
        "at_relevance_upper": shares(upper),
        "global_relevance_upper": round(settings.CAIRN_RELEVANCE_UPPER, 4),
        "at_global_relevance_upper": shares(settings.CAIRN_RELEVANCE_UPPER),
        "examples": [{"question": q.question, "absent": q.absent} for q in asked[:5]],
        "relevance_model": str(settings.CAIRN_RELEVANCE_MODEL),
        "calibrated_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
