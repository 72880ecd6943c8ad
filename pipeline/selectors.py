"""Reads of recorded answers."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Exists, OuterRef, Prefetch, Q, QuerySet, Subquery

from corpus.models import Collection
from corpus.selectors import collections_curated_by, collections_readable_by, documents_within, user_is_curator
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


def withheld_from(user: AbstractBaseUser) -> Exists:
    """Whether an answer drew on a collection `user` may not read now (collections_readable_by): a
    reader removed from a collection keeps their questions, and is shown nothing more of its text."""
    readable = collections_readable_by(user=user).values("id")
    return Exists(
        Answer.collections.through.objects.filter(answer_id=OuterRef("pk")).exclude(collection_id__in=readable)
    )


def evidence_withheld(*, user: AbstractBaseUser, answer: Answer) -> frozenset[int]:
    """The numbers of `answer`'s evidence `user` may not read now: corpus evidence whose document
    lies outside the collections they read, and any whose passage a re-ingest has replaced or that
    was inferred, which cannot be placed (the answer drew on a collection they can no longer read)."""
    evidence = answer.evidence.all()
    within = documents_within(collections_readable_by(user=user), active=False)  # a retraction withholds nothing
    readable = set(
        within.filter(id__in=[e.chunk.document_id for e in evidence if e.chunk]).values_list("id", flat=True)
    )
    return frozenset(
        e.n for e in evidence
        if e.origin != Evidence.Origin.EXTERNAL and (e.chunk is None or e.chunk.document_id not in readable)
    )  # fmt: skip


def answer_get(*, user: AbstractBaseUser, response_id) -> Answer | None:
    """The recorded answer with its evidence, if `user` asked it or curates every collection it
    drew on; else None. Its asker, once they can no longer read a collection it drew on, gets its
    question and the evidence they may still read: its text and the rest are withheld."""
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
    curated = answers_curated_by(user=user).values("pk") if user_is_curator(user) else None
    if curated is not None:
        mine |= Q(pk__in=curated)
    answer = answers.filter(mine).annotate(withheld=withheld_from(user)).first()
    if answer is not None and answer.withheld:
        if curated is not None and Answer.objects.filter(pk=answer.pk, pk__in=curated).exists():
            answer.withheld = False  # its curator sees it whole, as the admin shows it
        else:
            answer.withheld_evidence = evidence_withheld(user=user, answer=answer)
    return answer


def answers_asked_by(*, user: AbstractBaseUser, search: str = "") -> QuerySet[Answer]:
    """`user`'s own questions and answers, newest first, with their latest thumbs (None: none
    given) and whether each is withheld (withheld_from); `search` keeps those whose question (as
    answered or as typed) or answer contains it."""
    thumbs = Feedback.objects.filter(user=user, response_id=OuterRef("response_id"), thumbs__isnull=False)
    answers = Answer.objects.filter(user=user).annotate(
        thumbs=Subquery(thumbs.order_by("-id").values("thumbs")[:1]), withheld=withheld_from(user)
    )
    if search:  # a withheld text is not searched either
        said = Q(text__icontains=search, withheld=False)
        answers = answers.filter(Q(question__icontains=search) | Q(asked__icontains=search) | said)
    return answers.order_by("-created_at")


def conversations_of(*, user: AbstractBaseUser) -> QuerySet[Conversation]:
    """`user`'s conversations, the one asked in last first, each with its number of turns."""
    if not user.is_authenticated:
        return Conversation.objects.none()
    return Conversation.objects.filter(user=user).annotate(turn_count=Count("turns")).order_by("-updated_at")


def conversation_get(*, user: AbstractBaseUser, conversation_id) -> Conversation | None:
    """`user`'s conversation with its turns, oldest first, each marked withheld as answer_get does;
    None for anyone else's (a curator's too: a conversation is its asker's alone)."""
    turns = Prefetch("turns", queryset=Answer.objects.annotate(withheld=withheld_from(user)).order_by("created_at"))
    return conversations_of(user=user).prefetch_related(turns).filter(conversation_id=conversation_id).first()
