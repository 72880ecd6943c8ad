"""Curator decisions on write-backs, one service for the admin and the API alike: approve (an edited
answer is validated again, as advice), reject with a reason (which becomes a critique)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from corpus.embedder import get_embedder
from writeback.models import Critique, WriteBack
from writeback.proposals import writeback_publish, writeback_reject
from writeback.validation import advice_record, critique_record, validate


def writeback_approve(
    writeback: WriteBack, *, actor: AbstractBaseUser, answer: str | None = None, note: str = ""
) -> WriteBack:
    """Publish `writeback`: a curator's approval is a decision. With an edited `answer`, that is
    what is published; validation runs on it first as advice (its scores recorded and shown, the
    checks it fails listed in `critique`), never as a verdict: it neither rejects the write-back
    nor leaves a critique for later answers."""
    if answer is not None and " ".join(answer.split()) != " ".join(writeback.answer.split()):
        validation = validate(writeback, answer=answer)
        with transaction.atomic():
            writeback = WriteBack.objects.select_for_update().get(id=writeback.id)
            if writeback.status != WriteBack.Status.PENDING_REVIEW:
                return writeback_publish(writeback, actor=actor)  # raises the status conflict
            advice_record(writeback, validation, answer=answer, actor=actor, note=note)
            return writeback_publish(writeback, actor=actor, note=note)
    return writeback_publish(writeback, actor=actor, note=note)


def writeback_dismiss(writeback: WriteBack, *, actor: AbstractBaseUser, reason: str) -> WriteBack:
    """Reject a write-back under review; the curator's reason becomes a critique."""
    with transaction.atomic():
        writeback = writeback_reject(writeback, actor=actor, reason=reason)
        critique_record(
            writeback, [{"check": "curator", "reason": reason.strip()}], source=Critique.Source.CURATOR,
            embedding=get_embedder().embed([writeback.question])[0].tolist(), actor=actor,
        )  # fmt: skip
    return writeback
