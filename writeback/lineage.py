"""Provenance: what rests on what. A published write-back rests on the documents of its evidence
(WriteBack.evidence_documents) and is itself a document other write-backs may rest on, so a change
at the bottom travels up, transitively, in the transaction that made it (corpus/lifecycle.py sends
the signals answered here), each step leaving an audit row:

- retracting a document retracts every write-back resting on it (published or still pending) and
  the documents those published, and so on;
- re-ingesting a changed source, or moving a document to another collection, sends the published
  write-backs resting on it back to review, their documents hidden until a curator approves them
  again against the new text;
- a published answer is restored only as its write-back last published it.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone
from rest_framework import status

from common.exceptions import CairnError
from corpus.audit import audit
from corpus.lifecycle import document_hide
from corpus.models import Collection, Document
from writeback.models import WriteBack

_SETTLED = (WriteBack.Status.REJECTED, WriteBack.Status.RETRACTED)


def _resting_on(document_ids: list[int]):
    return (
        WriteBack.objects.filter(evidence_documents__in=document_ids)
        .exclude(status__in=_SETTLED)
        .select_related("document")
        .distinct()
        .order_by("id")
    )


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


def writebacks_retract(document: Document, *, actor: AbstractBaseUser | None = None, **signal) -> dict:
    """`document` was retracted: so is every write-back resting on it, transitively, with the
    documents they published (corpus.lifecycle.document_retracted)."""
    documents, writebacks = [], []
    for writeback, cause, derived in _lineage([document]):
        before = writeback.status
        writeback.status, writeback.retracted_at = WriteBack.Status.RETRACTED, timezone.now()
        writeback.save(update_fields=["status", "retracted_at"])
        audit("writeback.retract", writeback, actor=actor,
              summary=f"rests on retracted document {cause.id} ({cause.title[:80]})",
              before={"status": before}, after={"status": writeback.status})  # fmt: skip
        writebacks.append(writeback)
        if derived is not None:
            document_hide(derived, actor=actor, action="document.retract",
                          summary=f"cascade: write-back {writeback.id} retracted")  # fmt: skip
            documents.append(derived)
    return {"documents": documents, "writebacks": writebacks}


def writebacks_requeue(
    documents: list[Document], *, actor: AbstractBaseUser | None = None, why: str = "changed", **signal
) -> list[WriteBack]:
    """`documents` were re-ingested with new text or moved: what rests on them goes back to review
    (corpus.lifecycle.documents_changed)."""
    requeued = []
    for writeback, cause, derived in _lineage(documents):
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
            document_hide(derived, actor=actor, action="document.hide", summary=f"write-back {writeback.id} re-queued")
    return requeued


def published_answer_restorable(document: Document, **signal) -> None:
    """A published answer comes back only as its write-back last published it: while the write-back
    is published, on evidence that is all still active, readable by readers of all of that
    evidence's collections as they are now. Hidden for re-review (or its write-back retracted),
    it returns by a curator approving the write-back again, never by a restore
    (corpus.lifecycle.document_restoring)."""
    if document.origin != Document.Origin.GENERATED:
        return
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
