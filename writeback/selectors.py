"""Reads of the backward path: the write-backs a curator reviews, the critiques that warn a later
answer, and (learning from misses) the lessons that reach a question."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet
from pgvector.django import CosineDistance

from corpus.models import Collection, Document
from corpus.selectors import chunks_in_scope, collections_curated_by, collections_quoted_by, collections_readable_by
from writeback.models import Adaptation, Critique, JudgeVersion, Lesson, LessonQuestion, WriteBack
from writeback.proposals import same_question_candidates

log = logging.getLogger(__name__)


def writeback_collection_ids(writeback: WriteBack) -> set[int]:
    """The collections a write-back shows text of: its own, and those its evidence quotes
    (collections_quoted_by). Whoever sees the write-back curates them all (writebacks_within), so
    whatever it is shown beside must come from them alone."""
    evidence = writeback.evidence_documents.all() if writeback.pk else Document.objects.none()
    return {writeback.collection_id} | collections_quoted_by(evidence)


def writebacks_within(collections) -> QuerySet[WriteBack]:
    """The write-backs of `collections` (a queryset or ids) whose evidence, which a write-back
    quotes, lies all within them too."""
    ids = collections.values("id") if isinstance(collections, QuerySet) else list(collections)
    outside = Collection.objects.exclude(id__in=ids)
    return (
        WriteBack.objects.filter(collection_id__in=ids)
        .exclude(evidence_documents__collection__in=outside)
        .exclude(evidence_documents__requires_collections__in=outside)
    )


def critiques_curated_by(*, user: AbstractBaseUser) -> QuerySet[Critique]:
    """The critiques a curator may read: those all of whose collections they curate."""
    if user.is_superuser:
        return Critique.objects.all()
    outside = Collection.objects.exclude(id__in=collections_curated_by(user=user).values("id"))
    return Critique.objects.exclude(collections__in=outside)


def critiques_similar(
    *, user: AbstractBaseUser, query_vector, collection_ids: Sequence[int] | None = None, limit: int | None = None
) -> list[Critique]:
    """Critiques (that warn) of answers to questions within CAIRN_CRITIQUE_MAX_DISTANCE of this one,
    nearest first, only those whose every collection `user` may read, within `collection_ids` (those
    the question is asked in) when given: a critique quotes evidence. One per distinct text: the same
    question rejected three times for the same reason is one lesson."""
    limit = settings.CAIRN_CRITIQUE_LIMIT if limit is None else limit
    if not limit or query_vector is None:
        return []
    scope = collections_readable_by(user=user)
    if collection_ids is not None:
        scope = scope.filter(id__in=list(collection_ids))
    nearest = (
        Critique.objects.filter(warns=True)
        .exclude(collections__in=Collection.objects.exclude(id__in=scope.values("id")))
        .annotate(distance=CosineDistance("embedding", list(map(float, query_vector))))
        .filter(distance__lte=settings.CAIRN_CRITIQUE_MAX_DISTANCE)
        .order_by("distance", "-id")
        .prefetch_related("collections")[: limit * 5]
    )
    distinct: dict[str, Critique] = {}
    for critique in nearest:
        distinct.setdefault(critique.text, critique)
    return list(distinct.values())[:limit]


def writebacks_curated_by(*, user: AbstractBaseUser) -> QuerySet[WriteBack]:
    """The write-backs `user` curates: writebacks_within the collections they curate."""
    return writebacks_within(collections_curated_by(user=user))


def writeback_siblings(writeback: WriteBack, *, user: AbstractBaseUser) -> QuerySet[WriteBack]:
    """Other candidate answers to the same question (same_question_candidates) that `user` curates:
    a sibling in the same collection may rest on evidence they may not read."""
    if writeback.question_embedding is None:
        return WriteBack.objects.none()
    return same_question_candidates(
        writeback.question_embedding, collection_id=writeback.collection_id, exclude_id=writeback.id
    ).filter(pk__in=writebacks_curated_by(user=user).values("pk"))


def writeback_list(*, user: AbstractBaseUser, status: str | None = None) -> QuerySet[WriteBack]:
    """Write-backs for a curator (of the collections they curate), the most-asked first, then the
    newest, optionally of one status, with the questions that asked each."""
    writebacks = (
        writebacks_curated_by(user=user)
        .select_related("collection", "document", "reviewer")
        .prefetch_related("askings")
        .order_by("-asked", "-created_at", "-id")
    )
    return writebacks.filter(status=status) if status else writebacks


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


def judges_for(*, user: AbstractBaseUser, collection_ids: Sequence[int] | None = None) -> tuple[str, str]:
    """The (answer judge, relevance evaluator) a question is judged with: the newest serving version
    adapted to its collection when it searches exactly one (those asked for, else all `user` may
    read); blank for the shipped ones. A question over several collections is judged by the
    shipped judges, so that their scores stand on one scale across collections."""
    collections = collections_readable_by(user=user)
    if collection_ids is not None:
        collections = collections.filter(id__in=list(collection_ids))
    ids = list(collections.values_list("id", flat=True)[:2])
    if len(ids) != 1:
        return "", ""
    serving = (
        JudgeVersion.objects.filter(collection_id=ids[0], status=JudgeVersion.Status.SERVING)
        .order_by("-version").values_list("answer_model", "relevance_model").first()
    )  # fmt: skip
    return tuple(_on_this_host(path) for path in serving) if serving else ("", "")


def _on_this_host(path: str) -> str:
    """An adapted model's folder, or blank (the shipped judge) where this host cannot see it: a web
    host without the workers' CAIRN_ADAPTATION_DIR answers as before, and says so in its log."""
    if path and not Path(path).is_dir():
        log.warning("adapted judge %s is not on this host (CAIRN_ADAPTATION_DIR): the shipped one judges", path)
        return ""
    return path
