"""Training and evaluation pairs for the relevance evaluator: (question, passage or strip, label).

Positives are a question's gold passage and the sentence of it that holds the answer. Negatives
are hard ones, found the way Cairn finds evidence: the passages are ingested into a throwaway
collection and every question runs through the hybrid retrieval (`chunk_search`); the best
ranked passages that are not the gold one and do not contain an answer become negatives, and
their sentence closest to the question becomes a negative strip. The ingest happens inside a
transaction that is rolled back, so the corpus is never touched. Passage pairs keep the cosine
similarity the retrieval computed between question and passage, so that calibrate_gate can stack
the evaluator with it the way the gate does at query time.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from corpus.chunking import split_sentences

RELEVANCE_LABELS = ("irrelevant", "relevant")


@dataclass(frozen=True)
class RelevanceExample:
    question: str
    passage: str
    answers: tuple[str, ...]
    title: str = ""


@dataclass(frozen=True)
class RelevancePair:
    question: str
    text: str
    label: int  # 1 relevant, 0 not
    kind: str  # "passage" or "strip"
    similarity: float | None = None  # the retrieval's cosine similarity (passages); strips have none


@dataclass(frozen=True)
class Mined:
    """What the retrieval found for one example: its gold passage's similarity to the question, and
    the hard negatives with theirs."""

    similarity: float | None
    negatives: list[tuple[str, float]]


def nq_examples(rows: Sequence[dict]) -> list[RelevanceExample]:
    return [
        RelevanceExample(r["question"], r["ctxs"][0]["text"], tuple(r["answers"]), r["ctxs"][0].get("title", ""))
        for r in rows
    ]


def halueval_examples(rows: Sequence[dict]) -> list[RelevanceExample]:
    return [RelevanceExample(r["question"], r["knowledge"], (r["right_answer"],)) for r in rows]


_WORD = re.compile(r"\w+")


def word_set(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2}


def mentions_answer(text: str, answers: Sequence[str]) -> bool:
    lowered = text.lower()
    return any(answer.strip() and answer.strip().lower() in lowered for answer in answers)


def answer_strip(example: RelevanceExample) -> str | None:
    """The gold passage's first sentence that holds an answer, if any."""
    return next((s for s in split_sentences(example.passage) if mentions_answer(s, example.answers)), None)


def closest_sentence(question: str, passage: str) -> str | None:
    """The sentence sharing most words with the question: the hardest negative strip of a passage."""
    sentences = split_sentences(passage)
    if not sentences:
        return None
    asked = word_set(question)
    return max(sentences, key=lambda s: len(asked & word_set(s)))


def relevance_pairs(
    examples: Sequence[RelevanceExample], mined: dict[int, Mined], *, strips: bool = True
) -> list[RelevancePair]:
    """Positive and hard-negative pairs for each example; `mined[i]` is what example i's search found."""
    pairs = []
    for index, example in enumerate(examples):
        found = mined.get(index, Mined(similarity=None, negatives=[]))
        pairs.append(RelevancePair(example.question, example.passage, 1, "passage", found.similarity))
        pairs += [RelevancePair(example.question, text, 0, "passage", sim) for text, sim in found.negatives]
        if strips:
            strip = answer_strip(example)
            if strip:
                pairs.append(RelevancePair(example.question, strip, 1, "strip"))
            hard = [text for text, _ in found.negatives]
            if hard and (negative := closest_sentence(example.question, hard[0])):
                pairs.append(RelevancePair(example.question, negative, 0, "strip"))
    return pairs


def score_pairs(model, pairs: Sequence[RelevancePair]):
    """The relevance model's score for every pair, one batched call per question."""
    import numpy as np

    by_question: dict[str, list[int]] = {}
    for index, pair in enumerate(pairs):
        by_question.setdefault(pair.question, []).append(index)
    scores = np.zeros(len(pairs), dtype=np.float32)
    for question, indices in by_question.items():
        scores[indices] = model.score(question, [pairs[i].text for i in indices])
    return scores


def mine_hard_negatives(
    examples: Sequence[RelevanceExample], *, per_question: int = 2, depth: int = 10, progress=None
) -> dict[int, Mined]:
    """For each example, the top `per_question` passages Cairn's hybrid retrieval ranks for its
    question among every example's passage that are neither its gold passage nor mention an answer,
    with their similarity to the question, and the similarity of the gold passage itself (its best
    chunk's, as the retrieval computes it).

    Needs the database and the embedder; leaves no trace (the ingest is rolled back).
    """
    from django.contrib.auth.models import User
    from django.db import transaction

    from corpus.embedder import cosine_similarities, get_embedder
    from corpus.models import Chunk, Collection
    from corpus.selectors import chunk_search
    from corpus.services import documents_ingest
    from readers.extract import ExtractedDocument

    passages = {}
    for example in examples:
        passages.setdefault(example.passage, example.title)
    embedder = get_embedder()
    reader = User(username="relevance-miner", is_superuser=True)  # unsaved: reads every collection, owns nothing
    mined: dict[int, Mined] = {}
    with transaction.atomic():
        collection = Collection.objects.create(slug=f"relevance-mining-{uuid.uuid4().hex[:12]}", name="mining")
        ingested = [0]

        def ingest_progress(documents: int, _chunks: int) -> None:  # documents_ingest reports per batch
            ingested[0] += documents
            if progress:
                progress("ingest", ingested[0], len(passages))

        documents_ingest(
            collection=collection,
            documents=[
                ExtractedDocument(title=title, text=text, source=f"p{i}", mime_type="text/plain")
                for i, (text, title) in enumerate(passages.items())
            ],
            on_progress=ingest_progress,
        )
        # Each passage's chunk vectors, to read its similarity to each question as the retrieval would.
        source_of = {text: f"p{i}" for i, text in enumerate(passages)}
        chunk_vectors: dict[str, list] = {}
        for source, vector in Chunk.objects.filter(document__collection=collection).values_list(
            "document__source", "embedding"
        ):
            chunk_vectors.setdefault(source, []).append(vector)
        vectors = embedder.embed([e.question for e in examples])
        for index, (example, vector) in enumerate(zip(examples, vectors)):
            hits = chunk_search(
                user=reader, query_vector=vector, text=example.question, limit=depth, collection_ids=[collection.id]
            )
            found: dict[str, float] = {}
            for hit in hits:
                if (
                    hit.text in example.passage
                    or example.passage in hit.text
                    or mentions_answer(hit.text, example.answers)
                ):
                    continue
                found.setdefault(hit.text, hit.similarity)
                if len(found) == per_question:
                    break
            best = cosine_similarities(chunk_vectors[source_of[example.passage]], vector).max()
            mined[index] = Mined(similarity=round(float(best), 6), negatives=list(found.items()))
            if progress:
                progress("search", index + 1, len(examples))
        transaction.set_rollback(True)
    return mined


def tqdm_progress():
    """A `progress(stage, done, total)` callback drawing one tqdm bar per stage (ingest, search)."""
    from tqdm import tqdm

    bars: dict[str, tqdm] = {}

    def progress(stage: str, done: int, total: int) -> None:
        bar = bars.get(stage)
        if bar is None or bar.total != total or done < bar.n:
            if bar is not None:
                bar.close()
            bar = bars[stage] = tqdm(total=total, desc=f"mining: {stage}", unit="q" if stage == "search" else "doc")
        bar.update(done - bar.n)
        if done == total:
            bar.close()

    return progress


MINING_VERSION = 3  # bump when mining changes, so cached sets are not reused (2 was an unshipped trial's)


def shared_relevance_sets(
    splits: dict[str, tuple[list, list]], *, negatives: int = 2, progress=None
) -> dict[str, list[RelevancePair]]:
    """Pairs for the "train", "calibration" and "report" parts of the NQ and HaluEval shared splits.

    Negatives are mined among every passage of a data set (held-out passages are distractors,
    never labels), so they are equally hard in training, calibration and reporting. Mining takes
    minutes on a CPU, so the result is cached under CAIRN_DATA_DIR/cache, keyed by the data, the
    embedder, the chunking settings and MINING_VERSION; train_relevance, calibrate_gate and the
    benchmark then share one mining run.
    """
    import hashlib
    import json

    from django.conf import settings

    from judges.nli_data import calibration_split

    key = hashlib.sha256(
        json.dumps(
            [splits["nq"], splits["halueval"], negatives, settings.CAIRN_EMBEDDING_MODEL, settings.CAIRN_CHUNK_TOKENS,
             settings.CAIRN_CHUNK_OVERLAP_TOKENS, MINING_VERSION],
            sort_keys=True,
        ).encode()
    ).hexdigest()[:16]  # fmt: skip
    cache = settings.CAIRN_DATA_DIR / "cache" / f"relevance-pairs-{key}.json"
    if cache.exists():
        return {part: [RelevancePair(**p) for p in pairs] for part, pairs in json.loads(cache.read_text()).items()}

    parts: dict[str, list[RelevancePair]] = {"train": [], "calibration": [], "report": []}
    for name, to_examples in (("nq", nq_examples), ("halueval", halueval_examples)):
        train, held_out = splits[name]
        calibration, report = calibration_split(held_out)
        examples = to_examples(train + calibration + report)
        mined = mine_hard_negatives(examples, per_question=negatives, progress=progress)
        start = 0
        for part, rows in (("train", train), ("calibration", calibration), ("report", report)):
            indices = range(start, start + len(rows))
            parts[part] += relevance_pairs([examples[i] for i in indices], {j: mined[i] for j, i in enumerate(indices)})
            start += len(rows)
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({part: [vars(p) for p in pairs] for part, pairs in parts.items()}))
    return parts
