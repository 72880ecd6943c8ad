"""Writes to write-backs: propose, publish, reject. Validation (writeback/validation.py) decides
which proposals reach review; curators (or the auto-publish policy) decide what is published.

Publishing makes a GENERATED document in the collection of the write-back's best source evidence,
chunked and embedded like any document, readable only by users who can read every collection its
evidence came from (Document.requires_collections), and linked to the documents it rests on.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from pgvector.django import CosineDistance
from rest_framework import status

from common.exceptions import CairnError
from corpus.audit import audit
from corpus.citations import without_citations
from corpus.embedder import Embedder
from corpus.models import Collection, Document
from corpus.services import WRITEBACK_SOURCE_PREFIX, documents_ingest
from readers.extract import ExtractedDocument
from writeback.lineage import readers_of_evidence_only
from writeback.models import WriteBack, WriteBackAsking


def writeback_propose(
    *,
    response_id,
    asked_by,
    question: str,
    answer: str,
    evidence: list[dict],
    collection_id: int,
    question_embedding=None,
    gate_claims: dict | None = None,
) -> tuple[WriteBack, bool]:
    """(the candidate, whether it is new). Written in the answer's own transaction, so no answer's
    candidate is lost between the response and the worker. The same question asked again or reworded
    (question cosine >= CAIRN_WRITEBACK_SAME_QUESTION) and answered the same (citations and spacing
    aside) is merged into the existing candidate: it counts the asking instead of becoming a
    duplicate for curators to review and validation to reject again. A different answer to the same
    question is a candidate of its own, shown beside its siblings (same_question_candidates).
    `gate_claims`: what the output gate scored ({claim: {n: entailment}}), handed to validation."""
    with transaction.atomic():
        if question_embedding is not None:
            for existing in same_question_candidates(question_embedding, collection_id=collection_id, lock=True):
                if same_answer(existing.answer, answer):
                    WriteBack.objects.filter(id=existing.id).update(asked=F("asked") + 1)
                    WriteBackAsking.objects.create(
                        writeback=existing, response_id=response_id, question=question, asked_by=asked_by
                    )
                    existing.refresh_from_db()
                    return existing, False
        writeback = WriteBack.objects.create(
            response_id=response_id, asked_by=asked_by, question=question, answer=answer, evidence=evidence,
            collection_id=collection_id, question_embedding=question_embedding, gate_claims=gate_claims or {},
        )  # fmt: skip
        WriteBackAsking.objects.create(
            writeback=writeback, response_id=response_id, question=question, asked_by=asked_by
        )
        writeback.evidence_documents.set({e["document_id"] for e in evidence if e.get("document_id")})
    return writeback, True


def same_question_candidates(question_embedding, *, collection_id: int, lock: bool = False, exclude_id=None):
    """Candidates in `collection_id` (any status but retracted) whose question is the same as this
    one, by question cosine >= CAIRN_WRITEBACK_SAME_QUESTION, nearest first."""
    candidates = (
        WriteBack.objects.filter(collection_id=collection_id, question_embedding__isnull=False)
        .exclude(status=WriteBack.Status.RETRACTED)
        .exclude(id=exclude_id)
        .annotate(distance=CosineDistance("question_embedding", list(map(float, question_embedding))))
        .filter(distance__lte=1 - settings.CAIRN_WRITEBACK_SAME_QUESTION)
        .order_by("distance", "id")
    )
    return candidates.select_for_update(of=("self",)) if lock else candidates


def plain_words(text: str) -> str:
    """`text` without its citation markers, its spacing or its case: what two answers are compared by."""
    return " ".join(without_citations(text).split()).lower()


def same_answer(a: str, b: str) -> bool:
    """The same answer, whatever its citation numbers (they follow the evidence's order) and spacing."""
    return plain_words(a) == plain_words(b)


def generated_share(collection: Collection, *, adding: int = 0) -> float:
    """The share of `collection`'s active documents that are generated, after adding `adding` more."""
    active = Document.objects.filter(collection=collection, status=Document.Status.ACTIVE)
    total = active.count() + adding
    return (active.filter(origin=Document.Origin.GENERATED).count() + adding) / total if total else 0.0


def cap_reason(collection: Collection) -> str:
    """Why a write-back cannot be published into `collection` now ("" when it can): the share of
    generated documents may not pass CAIRN_WRITEBACK_ALPHA_MAX (the loop guard's cap)."""
    alpha_max = settings.CAIRN_WRITEBACK_ALPHA_MAX
    share = generated_share(collection, adding=1)
    if share > alpha_max:
        return f"collection {collection.slug} would be {share:.0%} generated (cap {alpha_max:.0%}): waits for sources"
    return ""


def writeback_title(writeback: WriteBack) -> str:
    """The title a write-back is published under: its evidence's titles, never the reader's
    question as typed (a question carrying an injection once became a published title)."""
    titles = dict.fromkeys(e["title"] for e in writeback.evidence if e.get("title"))
    return ("Answer from " + " · ".join(titles))[:500] if titles else "Answer from the knowledge base"


def _locked(writeback: WriteBack, *expected: str) -> WriteBack:
    locked = WriteBack.objects.select_for_update().get(id=writeback.id)
    if locked.status not in expected:
        raise CairnError(
            "status", f"write-back {writeback.id} is {locked.status}, not {' or '.join(expected)}",
            status_code=status.HTTP_409_CONFLICT,
        )  # fmt: skip
    return locked


def writeback_publish(
    writeback: WriteBack, *, actor: AbstractBaseUser | None = None, note: str = "", embedder: Embedder | None = None
) -> WriteBack:
    """Publish a PENDING_REVIEW write-back (`actor` None: the auto-publish policy)."""
    with transaction.atomic():
        writeback = _locked(writeback, WriteBack.Status.PENDING_REVIEW)
        if not writeback.text.strip():
            raise CairnError(
                "text",
                f"write-back {writeback.id} has no validated text to publish",
                status_code=status.HTTP_409_CONFLICT,
            )
        if reason := cap_reason(writeback.collection):
            if writeback.held != reason:
                writeback.held = reason
                writeback.save(update_fields=["held"])
            raise CairnError("collection", reason, status_code=status.HTTP_409_CONFLICT)
        source = f"{WRITEBACK_SOURCE_PREFIX}{writeback.id}"
        # Published before and hidden since (re-queued, or retracted by hand): active again first, so
        # the ingest below writes the text approved now; a retracted document would keep the old one.
        hidden = Document.objects.filter(
            collection=writeback.collection, source=source, status=Document.Status.RETRACTED
        ).first()
        if hidden is not None:
            Document.objects.filter(id=hidden.id).update(status=Document.Status.ACTIVE)
            audit("document.restore", hidden, actor=actor, summary=f"write-back {writeback.id} published again",
                  before={"status": Document.Status.RETRACTED}, after={"status": Document.Status.ACTIVE})  # fmt: skip
        report = documents_ingest(
            collection=writeback.collection,
            documents=[
                ExtractedDocument(
                    title=writeback_title(writeback), text=writeback.text, source=source,
                    mime_type="text/plain", metadata={"writeback": writeback.id, "response_id": str(writeback.response_id)},
                )
            ],
            origin=Document.Origin.GENERATED,
            embedder=embedder,
        )  # fmt: skip
        document = report.outcomes[0].document
        readers_of_evidence_only(document, writeback)
        now = timezone.now()
        writeback.status, writeback.document, writeback.held, writeback.published_at = (
            WriteBack.Status.PUBLISHED, document, "", now,
        )  # fmt: skip
        if actor is not None:
            writeback.reviewer, writeback.reviewed_at = actor, now
        if note:
            writeback.review_note = "\n".join(filter(None, [writeback.review_note, note]))
        writeback.save()
        audit("writeback.publish", writeback, actor=actor,
              summary=note or ("approved" if actor else "auto-published by policy"),
              before={"status": WriteBack.Status.PENDING_REVIEW},
              after={"status": writeback.status, "document": document.id})  # fmt: skip
    return writeback


def writeback_reject(writeback: WriteBack, *, actor: AbstractBaseUser, reason: str) -> WriteBack:
    """A curator rejects a PENDING_REVIEW write-back (writeback.review also records the critique)."""
    if not reason.strip():
        raise CairnError("reason", "say why the write-back is rejected: the reason becomes a critique")
    with transaction.atomic():
        writeback = _locked(writeback, WriteBack.Status.PENDING_REVIEW)
        writeback.status, writeback.reviewer, writeback.reviewed_at = WriteBack.Status.REJECTED, actor, timezone.now()
        writeback.review_note = "\n".join(filter(None, [writeback.review_note, reason.strip()]))
        writeback.critique = [*writeback.critique, {"check": "curator", "reason": reason.strip()}]
        writeback.save()
        audit("writeback.reject", writeback, actor=actor, summary=reason.strip(),
              before={"status": WriteBack.Status.PENDING_REVIEW}, after={"status": writeback.status})  # fmt: skip
    return writeback
