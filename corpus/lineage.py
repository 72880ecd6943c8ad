"""Provenance: what rests on what. A published write-back rests on the documents of its evidence
(WriteBack.evidence_documents) and is itself a document other write-backs may rest on, so a change
at the bottom travels up, transitively, in one transaction, each step leaving an audit row:

- retracting a document retracts every write-back resting on it (published or still pending) and
  the documents those published, and so on;
- re-ingesting a changed source sends the published write-backs resting on it back to review,
  their documents hidden until a curator approves them again against the new text.

Retracted (and hidden) documents leave retrieval at once: every read starts from active documents.
A retraction is undone by restoring the document (audited); ingesting its source again leaves it
retracted and says so.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from rest_framework import status

from common.exceptions import CairnError
from corpus.audit import audit
from corpus.models import Collection, Document, WriteBack

_SETTLED = (WriteBack.Status.REJECTED, WriteBack.Status.RETRACTED)


def _resting_on(document_ids: list[int]):
    return (
        WriteBack.objects.filter(evidence_documents__in=document_ids)
        .exclude(status__in=_SETTLED)
        .select_related("document")
        .distinct()
        .order_by("id")
    )


def _hide(document: Document, *, actor, action: str, summary: str) -> None:
    if document.status == Document.Status.RETRACTED:
        return
    Document.objects.filter(id=document.id).update(status=Document.Status.RETRACTED, updated_at=timezone.now())
    audit(action, document, actor=actor, summary=summary, before={"status": document.status},
          after={"status": Document.Status.RETRACTED})  # fmt: skip
    document.status = Document.Status.RETRACTED


def _lineage(roots: list[Document]):
    """Walk up from `roots`, breadth first: yield (write-back, the document it rests on that was
    reached, the document it published if not walked yet, else None) for every unsettled
    write-back resting on a reached document; a yielded published document is reached next. The
    caller settles each write-back (and hides its document) before the walk goes on."""
    frontier, seen = list(roots), {d.id for d in roots}
    while frontier:
        causes = {d.id: d for d in frontier}
        frontier = []
        for writeback in _resting_on(list(causes)):
            cause = next(d for d in writeback.evidence_documents.all() if d.id in causes)
            derived = writeback.document
            fresh = derived is not None and derived.id not in seen
            yield writeback, cause, derived if fresh else None
            if fresh:
                seen.add(derived.id)
                frontier.append(derived)


def document_retract(document: Document, *, actor: AbstractBaseUser | None = None, reason: str = "") -> dict:
    """Retract `document` and everything derived from it. Returns {"documents": [...], "writebacks": [...]}."""
    documents, writebacks = [], []
    with transaction.atomic():
        _hide(document, actor=actor, action="document.retract", summary=reason or "retracted")
        documents.append(document)
        for writeback, cause, derived in _lineage([document]):
            before = writeback.status
            writeback.status, writeback.retracted_at = WriteBack.Status.RETRACTED, timezone.now()
            writeback.save(update_fields=["status", "retracted_at"])
            audit("writeback.retract", writeback, actor=actor,
                  summary=f"rests on retracted document {cause.id} ({cause.title[:80]})",
                  before={"status": before}, after={"status": writeback.status})  # fmt: skip
            writebacks.append(writeback)
            if derived is not None:
                _hide(derived, actor=actor, action="document.retract",
                      summary=f"cascade: write-back {writeback.id} retracted")  # fmt: skip
                documents.append(derived)
    return {"documents": documents, "writebacks": writebacks}


def document_restore(document: Document, *, actor: AbstractBaseUser | None = None, reason: str = "") -> Document:
    """Undo a retraction: the document is active again (audited). What its retraction cascaded to
    stays retracted: each such write-back rested on a judgement a curator should make again."""
    with transaction.atomic():
        document = Document.objects.select_for_update().get(id=document.id)
        if document.status != Document.Status.RETRACTED:
            raise CairnError(
                "document", f"document {document.id} is {document.status}, not retracted",
                status_code=status.HTTP_409_CONFLICT,
            )  # fmt: skip
        if document.origin == Document.Origin.GENERATED:
            _generated_restorable(document)
        Document.objects.filter(id=document.id).update(status=Document.Status.ACTIVE, updated_at=timezone.now())
        audit("document.restore", document, actor=actor, summary=reason or "restored",
              before={"status": Document.Status.RETRACTED}, after={"status": Document.Status.ACTIVE})  # fmt: skip
        document.status = Document.Status.ACTIVE
    return document


def _generated_restorable(document: Document) -> None:
    """A published answer comes back only as its write-back last published it: while the write-back
    is published, on evidence that is all still active, readable by readers of all of that
    evidence's collections as they are now. Hidden for re-review (or its write-back retracted),
    it returns by a curator approving the write-back again, never by a restore."""
    writeback = WriteBack.objects.filter(document=document).first()
    if writeback is None or writeback.status != WriteBack.Status.PUBLISHED:
        state = f"write-back {writeback.id} is {writeback.status}" if writeback else "it has no write-back"
        raise CairnError(
            "document", f"document {document.id} is a published answer and {state}: approve the write-back instead",
            status_code=status.HTTP_409_CONFLICT,
        )  # fmt: skip
    evidence = writeback.evidence_documents.all()
    if evidence.exclude(status=Document.Status.ACTIVE).exists():
        raise CairnError(
            "document", f"document {document.id} rests on evidence that is no longer active",
            status_code=status.HTTP_409_CONFLICT,
        )  # fmt: skip
    readers_of_evidence_only(document, writeback)


def readers_of_evidence_only(document: Document, writeback: WriteBack) -> None:
    """`document`, which publishes `writeback`, is readable only by readers of every collection its
    evidence is in now: it must not widen access to any of them (Document.requires_collections)."""
    document.requires_collections.set(
        Collection.objects.filter(documents__in=writeback.evidence_documents.all()).distinct()
    )


def document_move(
    document: Document, to: Collection, *, actor: AbstractBaseUser | None = None, reason: str = ""
) -> Document:
    """Move `document` to collection `to` (audited): its text is then read by `to`'s readers, not its
    old collection's. The caller checks that `actor` curates both. What rests on it goes back to
    review with its published documents hidden: a write-back readable by the old collection's
    readers must not keep quoting a document they can no longer read."""
    with transaction.atomic():
        document = Document.objects.select_for_update().get(id=document.id)
        before = document.collection
        if before.id == to.id:
            raise CairnError("collection", f"document {document.id} is already in {to.slug!r}")
        if Document.objects.filter(collection=to, source=document.source).exists():
            raise CairnError(
                "collection", f"{to.slug!r} already has a document from {document.source!r}",
                status_code=status.HTTP_409_CONFLICT,
            )  # fmt: skip
        Document.objects.filter(id=document.id).update(collection=to, updated_at=timezone.now())
        audit("document.move", document, actor=actor, summary=reason or f"moved from {before.slug} to {to.slug}",
              before={"collection": before.slug}, after={"collection": to.slug})  # fmt: skip
        document.collection = to
        writebacks_requeue([document], actor=actor, why=f"moved from {before.slug} to {to.slug}")
    return document


def writebacks_requeue(
    changed: list[Document], *, actor: AbstractBaseUser | None = None, why: str = "changed"
) -> list[WriteBack]:
    """`changed` documents were re-ingested with new text (or moved): what rests on them goes back
    to review."""
    requeued = []
    with transaction.atomic():
        for writeback, cause, derived in _lineage(changed):
            note = f"evidence document {cause.id} ({cause.title[:80]}) {why}: check the answer against it again"
            before = writeback.status
            if before == WriteBack.Status.PUBLISHED:
                writeback.status = WriteBack.Status.PENDING_REVIEW
            writeback.review_note = "\n".join(filter(None, [writeback.review_note, note]))
            writeback.save(update_fields=["status", "review_note"])
            audit("writeback.requeue", writeback, actor=actor, summary=note,
                  before={"status": before}, after={"status": writeback.status})  # fmt: skip
            requeued.append(writeback)
            if derived is not None:
                _hide(derived, actor=actor, action="document.hide", summary=f"write-back {writeback.id} re-queued")
    return requeued
