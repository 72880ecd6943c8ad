"""Answering questions: resolve what the asker may read, then run the pipeline; and the asker's
mark on an answer (the sentence of its evidence that answers it, or none)."""

from __future__ import annotations

import numpy as np
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from rest_framework import status

from common.exceptions import CairnError
from corpus.audit import audit
from corpus.selectors import chunks_readable_by, collections_readable_by
from pipeline.conversations import Turn
from pipeline.models import Answer, Conversation, Evidence
from pipeline.selectors import conversation_get
from pipeline.stages import QueryState, pipeline_run
from writeback.lessons import mark_record, same_sentence
from writeback.models import Mark


def question_answer(**kwargs) -> QueryState:
    """Answer a question (query_state's arguments): the state of the finished run."""
    return pipeline_run(query_state(**kwargs))


def query_state(
    *,
    user: AbstractBaseUser,
    question: str,
    top_k: int = 8,
    collections: list[str] | None = None,
    mode: str = Answer.Mode.STANDARD,
    generator: str | None = None,
    conversation_id=None,
) -> QueryState:
    """A question ready to answer from the chunks `user` may read, optionally within some collections
    (pipeline_run or pipeline_events answers it); a CairnError when the request cannot be answered.

    `mode`: fast (gate + extractive), standard (gate + CAIRN_GENERATOR or the `generator` asked
    for, when CAIRN_GENERATOR_OVERRIDE allows), deep (the retroactive loop, on the LLM).
    """
    if generator and not settings.CAIRN_GENERATOR_OVERRIDE:
        raise CairnError(
            "generator", "this server does not let a query choose its generator (CAIRN_GENERATOR_OVERRIDE)",
            status_code=status.HTTP_403_FORBIDDEN,
        )  # fmt: skip
    if generator and mode != Answer.Mode.STANDARD:
        raise CairnError("generator", f"mode {mode!r} fixes its generator; choose one only with mode 'standard'")
    collection_ids = None
    if collections:
        found = dict(collections_readable_by(user=user).filter(slug__in=collections).values_list("slug", "id"))
        unknown = [slug for slug in collections if slug not in found]
        if unknown:
            # Unreadable and nonexistent look alike: a reader learns nothing about hidden collections.
            raise CairnError(
                "collections", f"unknown collection(s): {', '.join(unknown)}", status_code=status.HTTP_404_NOT_FOUND
            )
        collection_ids = list(found.values())
    conversation, earlier = None, []
    if conversation_id is not None:
        conversation = conversation_get(user=user, conversation_id=conversation_id)
        if conversation is None:  # someone else's and none at all look alike
            raise CairnError("conversation_id", NO_CONVERSATION, status_code=status.HTTP_404_NOT_FOUND)
        earlier = conversation_turns(conversation)
    return QueryState(
        user=user, question=question, top_k=top_k, mode=mode, generator=generator or "", collection_ids=collection_ids,
        conversation=conversation, earlier=earlier,
    )  # fmt: skip


NO_CONVERSATION = "no conversation with this id for you"
EARLIER_TURNS = 5  # the rewrite reads back at most this far


def conversation_turns(conversation: Conversation) -> list[Turn]:
    """The conversation's last turns, oldest first, as the rewrite reads them."""
    answers = conversation.turns.order_by("-created_at").prefetch_related("collections")[:EARLIER_TURNS]
    return [
        Turn(asked=a.asked or a.question, question=a.question, answer=a.text, stood_alone=not a.rewritten_by,
             embedding=None if a.embedding is None else np.asarray(a.embedding, dtype=np.float32),
             collections=frozenset(c.id for c in a.collections.all()))
        for a in reversed(answers)
    ]  # fmt: skip


def conversation_delete(*, user: AbstractBaseUser, conversation_id) -> int:
    """Delete `user`'s conversation and its turns (answers and their evidence); the number of turns.
    What curators hold of them stays theirs: write-back proposals, marks and lessons keep their own
    copy of the question. The audit row names the conversation and its size, not what was asked."""
    conversation = conversation_get(user=user, conversation_id=conversation_id)
    if conversation is None:
        raise CairnError("conversation_id", NO_CONVERSATION, status_code=status.HTTP_404_NOT_FOUND)
    turns = conversation.turn_count  # conversations_of counts them
    with transaction.atomic():
        audit("conversation.delete", conversation, actor=user, summary=f"{turns} turn(s)",
              before={"conversation_id": str(conversation.conversation_id), "turns": turns})  # fmt: skip
        conversation.delete()
    return turns


def answer_mark(*, user: AbstractBaseUser, response_id, n: int | None, sentence: str = "", none: bool = False) -> Mark:
    """Record the asker's word on their answer `response_id`: `sentence` of its evidence `n`
    answers the question, or (`none`) none of its sources does. A second mark replaces the first.

    Only the asker marks: anyone else, a curator of the answer included, is told there is no such
    answer. The sentence must be one that evidence `n` of this answer showed (its strips), and its
    passage still in the documents `user` may read. It moves no reputation counter and changes no
    answer: it waits for a curator."""
    answer = Answer.objects.filter(response_id=response_id, user_id=user.pk).first() if user.is_authenticated else None
    if answer is None:  # unknown, or someone else's: the same answer, so nothing leaks
        raise CairnError(
            "response_id", "no answer with this response id for you", status_code=status.HTTP_404_NOT_FOUND
        )
    if none:
        if n is not None:
            raise CairnError("n", "a mark that none of the sources answers names no passage")
        if sentence.strip():
            raise CairnError("sentence", "a mark that none of the sources answers names no sentence")
        return mark_record(user=user, response_id=answer.response_id, question=answer.question)
    if not sentence.strip():
        raise CairnError("sentence", "name the sentence that answers it, or mark that none of the sources does")
    if n is None:
        raise CairnError("n", "name the evidence number of the passage the sentence is from")
    evidence = answer.evidence.filter(n=n, origin=Evidence.Origin.CORPUS).first()
    if evidence is None:
        raise CairnError(
            "n", f"this answer has no passage [{n}] from your documents", status_code=status.HTTP_404_NOT_FOUND
        )
    # Through the one gate to chunks: a passage re-ingested, retracted or no longer readable since.
    chunk = (
        chunks_readable_by(user=user).filter(id=evidence.chunk_id).select_related("document__collection").first()
        if evidence.chunk_id is not None
        else None
    )
    if chunk is None:
        raise CairnError(
            "n", f"passage [{n}] has changed since this answer: ask again to mark its sentence",
            status_code=status.HTTP_409_CONFLICT,
        )  # fmt: skip
    held = next((s["text"] for s in evidence.strips if same_sentence(s["text"], sentence)), None)
    if held is None:
        raise CairnError(
            "sentence", f"passage [{n}] of this answer showed no such sentence", status_code=status.HTTP_404_NOT_FOUND
        )
    return mark_record(
        user=user, response_id=answer.response_id, question=answer.question, evidence_n=n, chunk=chunk, sentence=held
    )
