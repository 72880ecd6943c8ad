"""The forward path: an ordered list of stages over one `QueryState`.

Each stage is a plain function of the state, testable alone. Later stages (rank, verify,
correct) slot into `STAGES` without changing the others.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from corpus.embedder import get_embedder
from corpus.selectors import Hit, chunk_search
from pipeline.extractive import extractive_answer
from pipeline.models import Answer, Evidence

NOT_FOUND = "Not found in the knowledge base: no readable document matches this question."


@dataclass
class QueryState:
    user: AbstractBaseUser
    question: str
    top_k: int
    collection_ids: list[int] | None = None
    query_vector: np.ndarray | None = None
    hits: list[Hit] = field(default_factory=list)
    answer: str = ""
    cited: list[int] = field(default_factory=list)  # evidence numbers (1-based) the answer cites
    timings_ms: dict[str, float] = field(default_factory=dict)
    record: Answer | None = None


def embed_query(state: QueryState) -> None:
    state.query_vector = get_embedder().embed([state.question])[0]


def retrieve(state: QueryState) -> None:
    state.hits = chunk_search(
        user=state.user,
        query_vector=state.query_vector,
        text=state.question,
        limit=state.top_k,
        collection_ids=state.collection_ids,
    )


def generate_extractive(state: QueryState) -> None:
    answer, cited = extractive_answer(
        state.question, [hit.text for hit in state.hits], max_sentences=settings.CAIRN_ANSWER_SENTENCES
    )
    state.answer, state.cited = (answer, cited) if answer else (NOT_FOUND, [])


def record(state: QueryState) -> None:
    cited = set(state.cited)
    with transaction.atomic():
        state.record = Answer.objects.create(
            user=state.user,
            question=state.question,
            text=state.answer,
            citations=[{"n": n, "chunk_id": state.hits[n - 1].chunk_id} for n in state.cited],
            timings_ms=state.timings_ms,
        )
        Evidence.objects.bulk_create(
            Evidence(
                answer=state.record,
                chunk_id=hit.chunk_id,
                rank=rank,
                text=hit.text,
                vector_distance=hit.vector_distance,
                text_rank=hit.text_rank,
                fused_score=hit.score,
                cited=rank in cited,
            )
            for rank, hit in enumerate(state.hits, start=1)
        )


Stage = Callable[[QueryState], None]
STAGES: tuple[Stage, ...] = (embed_query, retrieve, generate_extractive, record)


def pipeline_run(state: QueryState, stages: Sequence[Stage] = STAGES) -> QueryState:
    """Run `stages` in order, timing each. The stored timings stop before `record` itself."""
    for stage in stages:
        started = time.perf_counter()
        stage(state)
        state.timings_ms[stage.__name__] = round((time.perf_counter() - started) * 1000, 2)
    return state
