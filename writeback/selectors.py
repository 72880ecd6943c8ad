"""Reads for learning from misses: the lessons that reach a question."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from pgvector.django import CosineDistance

from corpus.selectors import chunks_in_scope, collections_readable_by
from writeback.models import Adaptation, Lesson, LessonQuestion


@dataclass(frozen=True)
class LessonMatch:
    lesson_id: int
    chunk_id: int | None  # None: a re-ingest replaced the chunk and no re-check has run since
    sentence: str
    question: str
    similarity: float


def lessons_near(
    *, user: AbstractBaseUser, query_vector, collection_ids: Sequence[int] | None = None, limit: int = 1
) -> list[LessonMatch]:
    """Active lessons asked at least CAIRN_LESSON_SIMILARITY (cosine) from this question, in any of
    their phrasings (LessonQuestion), nearest first, whose passage `user` may read now within
    `collection_ids` (so none of a retracted document, a collection they cannot read, or one the
    question was not asked in). A lesson whose chunk was replaced comes back with chunk_id None, for
    the caller to re-check. Two queries when a lesson is near, one otherwise."""
    threshold = settings.CAIRN_LESSON_SIMILARITY
    if query_vector is None or threshold > 1.0:
        return []
    scope = collections_readable_by(user=user)
    if collection_ids is not None:
        scope = scope.filter(id__in=list(collection_ids))
    phrased = (
        LessonQuestion.objects.filter(
            lesson__status=Lesson.Status.ACTIVE, lesson__collection__in=scope.values("id")
        )
        .annotate(distance=CosineDistance("embedding", list(map(float, query_vector))))
        .filter(distance__lte=1.0 - threshold)
        .order_by("distance", "-lesson_id")
        .values("lesson_id", "lesson__chunk_id", "lesson__sentence", "lesson__question", "distance")[: limit * 8]
    )  # fmt: skip
    near = list(
        {
            row["lesson_id"]: {"id": row["lesson_id"], "chunk_id": row["lesson__chunk_id"],
                               "sentence": row["lesson__sentence"], "question": row["lesson__question"],
                               "distance": row["distance"]}
            for row in reversed(list(phrased))  # the nearest phrasing of each lesson is written last
        }.values()
    )  # fmt: skip
    near.sort(key=lambda n: (n["distance"], -n["id"]))
    if not near:
        return []
    readable = set(
        chunks_in_scope(user=user, collection_ids=collection_ids)
        .filter(id__in=[n["chunk_id"] for n in near if n["chunk_id"] is not None])
        .values_list("id", flat=True)
    )
    return [
        LessonMatch(n["id"], n["chunk_id"], n["sentence"], n["question"], round(1.0 - n["distance"], 4))
        for n in near
        if n["chunk_id"] is None or n["chunk_id"] in readable
    ][:limit]


def confidence_shifts(collection_ids) -> dict[int, float]:
    """The confidence shift each of these collections' lessons taught, where it passed its check (and
    CAIRN_ADAPT_CONFIDENCE lets answers use it)."""
    if not collection_ids or not settings.CAIRN_ADAPT_CONFIDENCE:
        return {}
    return dict(
        Adaptation.objects.filter(collection_id__in=list(collection_ids), serving=True).values_list(
            "collection_id", "confidence_shift"
        )
    )
