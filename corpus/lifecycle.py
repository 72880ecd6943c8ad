"""A document's life after ingestion: retracted, restored, moved to another collection. Each change
is audited and takes effect at once (every read starts from active documents).

What rests on a document is not corpus's to know. The apps above it answer the signals below (a
published answer rests on the documents of its evidence: writeback/lineage.py), inside the
transaction that made the change, so the change and everything it carries along commit together.
A retraction is undone by restoring the document; ingesting its source again leaves it retracted
and says so.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.dispatch import Signal
from django.utils import timezone
from rest_framework import status

from common.exceptions import CairnError
from corpus.audit import audit
from corpus.models import Collection, Document

# `document` was just retracted by `actor`: a receiver retracts what rests on it and returns what
# it retracted, {"documents": [...], "writebacks": [...]}.
document_retracted = Signal()
# `documents` were re-ingested with new text or moved (`why` says how): what rests on them is
# checked again.
documents_changed = Signal()
# `document` is about to be restored: a receiver that must refuse raises CairnError.
document_restoring = Signal()


def document_hide(document: Document, *, actor, action: str, summary: str) -> None:
    """Take `document` out of retrieval (status RETRACTED), audited as `action`; already out: nothing."""
    if document.status == Document.Status.RETRACTED:
        return
    Document.objects.filter(id=document.id).update(status=Document.Status.RETRACTED, updated_at=timezone.now())
    audit(action, document, actor=actor, summary=summary, before={"status": document.status},
          after={"status": Document.Status.RETRACTED})  # fmt: skip
    document.status = Document.Status.RETRACTED


def document_retract(document: Document, *, actor: AbstractBaseUser | None = None, reason: str = "") -> dict:
    """Retract `document` and everything resting on it. Returns {"documents": [...], "writebacks": [...]}."""
    retracted = {"documents": [document], "writebacks": []}
    with transaction.atomic():
        document_hide(document, actor=actor, action="document.retract", summary=reason or "retracted")
        for _, carried in document_retracted.send(sender=Document, document=document, actor=actor):
            for kind, items in carried.items():
                retracted[kind].extend(items)
    return retracted


def document_restore(document: Document, *, actor: AbstractBaseUser | None = None, reason: str = "") -> Document:
    """Undo a retraction: the document is active again (audited). What its retraction carried along
    stays retracted: each such write-back rested on a judgement a curator should make again."""
    with transaction.atomic():
        document = Document.objects.select_for_update().get(id=document.id)
        if document.status != Document.Status.RETRACTED:
            raise CairnError(
                "document", f"document {document.id} is {document.status}, not retracted",
                status_code=status.HTTP_409_CONFLICT,
            )  # fmt: skip
        document_restoring.send(sender=Document, document=document)
        Document.objects.filter(id=document.id).update(status=Document.Status.ACTIVE, updated_at=timezone.now())
        audit("document.restore", document, actor=actor, summary=reason or "restored",
              before={"status": Document.Status.RETRACTED}, after={"status": Document.Status.ACTIVE})  # fmt: skip
        document.status = Document.Status.ACTIVE
    return document


def document_move(
    document: Document, to: Collection, *, actor: AbstractBaseUser | None = None, reason: str = ""
) -> Document:
    """Move `document` to collection `to` (audited): its text is then read by `to`'s readers, not its
    old collection's. The caller checks that `actor` curates both. What rests on it is checked
    again (documents_changed): an answer readable by the old collection's readers must not keep
    quoting a document they can no longer read."""
    with transaction.atomic():
        document = Document.objects.select_for_update().get(id=document.id)
        before = document.collection
        if before.id == to.id:
            raise CairnError(
                "collection", f"document {document.id} is already in {to.slug!r}", status_code=status.HTTP_409_CONFLICT
            )
        if Document.objects.filter(collection=to, source=document.source).exists():
            raise CairnError(
                "collection", f"{to.slug!r} already has a document from {document.source!r}",
                status_code=status.HTTP_409_CONFLICT,
            )  # fmt: skip
        Document.objects.filter(id=document.id).update(collection=to, updated_at=timezone.now())
        audit("document.move", document, actor=actor, summary=reason or f"moved from {before.slug} to {to.slug}",
              before={"collection": before.slug}, after={"collection": to.slug})  # fmt: skip
        document.collection = to
        documents_changed.send(
            sender=Document, documents=[document], actor=actor, why=f"moved from {before.slug} to {to.slug}"
        )
    return document
