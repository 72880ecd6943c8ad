"""Reads of recorded answers, critiques and write-backs."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import OuterRef, Prefetch, Q, QuerySet, Subquery
from pgvector.django import CosineDistance

from corpus.models import Collection, WriteBack
from corpus.selectors import collections_curated_by, collections_readable_by, user_is_curator, writebacks_within
from corpus.writebacks import same_question_candidates
from pipeline.models import Answer, Evidence
from reputation.models import Feedback
from writeback.models import Critique


def answers_curated_by(*, user: AbstractBaseUser) -> QuerySet[Answer]:
    """The answers a curator may read: every one for a superuser; else those whose evidence came
    all from collections they curate (Answer.collections, recorded when the answer was made, so a
    re-ingest that replaces its chunks changes nothing), and from some: a question alone belongs to
    no collection, and may say what its asker was looking for."""
    if user.is_superuser:
        return Answer.objects.all()
    outside = Collection.objects.exclude(id__in=collections_curated_by(user=user).values("id"))
    return Answer.objects.filter(collections__isnull=False).exclude(collections__in=outside).distinct()


def critiques_curated_by(*, user: AbstractBaseUser) -> QuerySet[Critique]:
    """The critiques a curator may read: those all of whose collections they curate."""
    if user.is_superuser:
        return Critique.objects.all()
    outside = Collection.objects.exclude(id__in=collections_curated_by(user=user).values("id"))
    return Critique.objects.exclude(collections__in=outside)


def answer_get(*, user: AbstractBaseUser, response_id) -> Answer | None:
    """The recorded answer with its evidence, if `user` asked it or curates every collection it
    drew on; else None."""
    answers = Answer.objects.prefetch_related(
        Prefetch(
            "evidence",
            queryset=Evidence.objects.select_related(
                "chunk__document__collection", "chunk__document__upload__uploader", "chunk__document__original"
            ).order_by("n"),
        )
    ).filter(response_id=response_id)
    mine = Q(user=user) if user.is_authenticated else Q(pk__in=[])
    if user_is_curator(user):
        mine |= Q(pk__in=answers_curated_by(user=user).values("pk"))
    return answers.filter(mine).first()


def critiques_similar(*, user: AbstractBaseUser, query_vector, limit: int | None = None) -> list[Critique]:
    """Critiques (that warn) of answers to questions within CAIRN_CRITIQUE_MAX_DISTANCE of this one,
    nearest first, only those whose every collection `user` may read: a critique quotes evidence.
    One per distinct text: the same question rejected three times for the same reason is one lesson."""
    limit = settings.CAIRN_CRITIQUE_LIMIT if limit is None else limit
    if not limit or query_vector is None:
        return []
    readable = collections_readable_by(user=user).values("id")
    nearest = (
        Critique.objects.filter(warns=True)
        .exclude(collections__in=Collection.objects.exclude(id__in=readable))
        .annotate(distance=CosineDistance("embedding", list(map(float, query_vector))))
        .filter(distance__lte=settings.CAIRN_CRITIQUE_MAX_DISTANCE)
        .order_by("distance", "-id")[: limit * 5]
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


def answers_asked_by(*, user: AbstractBaseUser, search: str = "") -> QuerySet[Answer]:
    """`user`'s own questions and answers, newest first, with their latest thumbs (None: none
    given); `search` keeps those whose question or answer contains it."""
    thumbs = Feedback.objects.filter(user=user, response_id=OuterRef("response_id"), thumbs__isnull=False)
    answers = Answer.objects.filter(user=user).annotate(thumbs=Subquery(thumbs.order_by("-id").values("thumbs")[:1]))
    if search:
        answers = answers.filter(Q(question__icontains=search) | Q(text__icontains=search))
    return answers.order_by("-created_at")
