"""Curator decisions on write-backs, one service for the admin and the API alike: approve (edited
text is validated again first), reject with a reason (which becomes a critique)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from corpus.audit import audit
from corpus.embedder import get_embedder
from corpus.models import WriteBack
from corpus.writebacks import writeback_publish, writeback_reject
from pipeline.models import Critique
from pipeline.validation import critique_record, validate, verdict_record


def writeback_approve(
    writeback: WriteBack, *, actor: AbstractBaseUser, answer: str | None = None, note: str = ""
) -> WriteBack:
    """Publish `writeback`. With an edited `answer`, validate that first: an edit that fails a
    check rejects the write-back (with its critique) instead of publishing it."""
    if answer is not None and " ".join(answer.split()) != " ".join(writeback.answer.split()):
        validation = validate(writeback, answer=answer)
        with transaction.atomic():
            writeback = WriteBack.objects.select_for_update().get(id=writeback.id)
            if writeback.status != WriteBack.Status.PENDING_REVIEW:
                return writeback_publish(writeback, actor=actor)  # raises the status conflict
            audit("writeback.edit", writeback, actor=actor, summary=note,
                  before={"answer": writeback.answer}, after={"answer": answer})  # fmt: skip
            writeback.answer = answer
            verdict_record(writeback, validation, actor=actor)
        if writeback.status == WriteBack.Status.REJECTED:
            return writeback
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
