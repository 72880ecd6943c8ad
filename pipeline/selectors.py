"""Reads of recorded answers."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, OuterRef, Prefetch, Q, QuerySet, Subquery

from corpus.models import Collection
from corpus.selectors import collections_curated_by, user_is_curator
from pipeline.models import Answer, Conversation, Evidence
from reputation.models import Feedback


def answers_curated_by(*, user: AbstractBaseUser) -> QuerySet[Answer]:
    """The answers a curator may read: every one for a superuser; else those whose evidence came
    all from collections they curate (Answer.collections, recorded when the answer was made, so a
    re-ingest that replaces its chunks changes nothing), and from some: a question alone belongs to
    no collection, and may say what its asker was looking for."""
    if user.is_superuser:
        return Answer.objects.all()
    outside = Collection.objects.exclude(id__in=collections_curated_by(user=user).values("id"))
    return Answer.objects.filter(collections__isnull=False).exclude(collections__in=outside).distinct()


def answer_get(*, user: AbstractBaseUser, response_id) -> Answer | None:
    """The recorded answer with its evidence, if `user` asked it or curates every collection it
    drew on; else None."""
    answers = (
        Answer.objects.select_related("conversation")
        .prefetch_related(
            Prefetch(
                "evidence",
                queryset=Evidence.objects.select_related(
                    "chunk__document__collection", "chunk__document__upload__uploader", "chunk__document__original"
                ).order_by("n"),
            )
        )
        .filter(response_id=response_id)
    )
    mine = Q(user=user) if user.is_authenticated else Q(pk__in=[])
    if user_is_curator(user):
        mine |= Q(pk__in=answers_curated_by(user=user).values("pk"))
    return answers.filter(mine).first()


def answers_asked_by(*, user: AbstractBaseUser, search: str = "") -> QuerySet[Answer]:
    """`user`'s own questions and answers, newest first, with their latest thumbs (None: none
    given); `search` keeps those whose question (as answered or as typed) or answer contains it."""
    thumbs = Feedback.objects.filter(user=user, response_id=OuterRef("response_id"), thumbs__isnull=False)
    answers = Answer.objects.filter(user=user).annotate(thumbs=Subquery(thumbs.order_by("-id").values("thumbs")[:1]))
    if search:
        answers = answers.filter(Q(question__icontains=search) | Q(asked__icontains=search) | Q(text__icontains=search))
    return answers.order_by("-created_at")


def conversations_of(*, user: AbstractBaseUser) -> QuerySet[Conversation]:
    """`user`'s conversations, the one asked in last first, each with its number of turns."""
    if not user.is_authenticated:
        return Conversation.objects.none()
    return Conversation.objects.filter(user=user).annotate(turn_count=Count("turns")).order_by("-updated_at")


def conversation_get(*, user: AbstractBaseUser, conversation_id) -> Conversation | None:
    """`user`'s conversation with its turns, oldest first; None for anyone else's (a curator's too:
    a conversation is its asker's alone)."""
    turns = Prefetch("turns", queryset=Answer.objects.order_by("created_at"))
    return conversations_of(user=user).prefetch_related(turns).filter(conversation_id=conversation_id).first()
