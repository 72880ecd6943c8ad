"""Reads of recorded answers, critiques and write-backs."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Prefetch, QuerySet
from pgvector.django import CosineDistance

from corpus.models import Collection, WriteBack
from corpus.selectors import collections_readable_by, user_is_curator
from pipeline.models import Answer, Critique, Evidence


def answer_get(*, user: AbstractBaseUser, response_id) -> Answer | None:
    """The recorded answer with its evidence, if `user` asked it or is a curator; else None."""
    answers = Answer.objects.prefetch_related(
        Prefetch("evidence", queryset=Evidence.objects.select_related("chunk").order_by("n"))
    )
    if not user_is_curator(user):
        answers = answers.filter(user=user)
    return answers.filter(response_id=response_id).first()


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


def writeback_list(*, status: str | None = None) -> QuerySet[WriteBack]:
    """Write-backs for curators, the most-asked first, then the newest, optionally of one status, with the
    questions that asked each."""
    writebacks = (
        WriteBack.objects.select_related("collection", "document", "reviewer")
        .prefetch_related("askings")
        .order_by("-asked", "-created_at", "-id")
    )
    return writebacks.filter(status=status) if status else writebacks
