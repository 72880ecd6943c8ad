"""Writes for learning from misses: a reader's mark, and a curator's decisions on what went
unanswered (a lesson confirmed from a mark, picked from a search, or written; a gap), each decision
audited; and the re-check that keeps lessons true to their documents.

A sentence is named by its text, as the passage's card shows it (a strip of corpus.strips): the
same text is found again in the passage at query time, and in a re-ingested version of it."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone
from rest_framework import status

from common.exceptions import CairnError
from corpus.audit import audit
from corpus.embedder import get_embedder
from corpus.models import Chunk, Collection
from corpus.selectors import collections_curated_by
from corpus.strips import section_of, strips_in_context
from writeback.models import Gap, Lesson, LessonQuestion, Mark, WriteBack
from writeback.proposals import writeback_publish

Phrasings = Sequence[tuple[str, Sequence[float]]]


def same_sentence(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def chunk_sentences(chunk: Chunk) -> list[str]:
    """The sentences a reader may mark in `chunk` (its strips, as its card lists them)."""
    return [s.text for s in strips_in_context(chunk.text, section_of(chunk.heading))]


def sentence_in(chunk: Chunk, sentence: str) -> str | None:
    """`sentence` as `chunk` holds it (whitespace aside), or None."""
    return next((s for s in chunk_sentences(chunk) if same_sentence(s, sentence)), None)


def mark_record(
    *, user: AbstractBaseUser, response_id, question: str, evidence_n: int | None = None,
    chunk: Chunk | None = None, sentence: str = "",
) -> Mark:  # fmt: skip
    """The asker's mark on their answer `response_id`: `sentence` of evidence `evidence_n` (the
    caller checked both belong to the answer), or none of the sources (`sentence` empty). A second
    mark replaces the first. It changes nobody's answer: it waits on the curators' list."""
    document = chunk.document if chunk is not None else None
    mark, _ = Mark.objects.update_or_create(
        response_id=response_id,
        defaults={
            "user": user, "question": question, "evidence_n": evidence_n if sentence else None,
            "chunk": chunk if sentence else None, "document": document if sentence else None,
            "collection": document.collection if sentence and document else None, "sentence": sentence,
        },
    )  # fmt: skip
    return mark


def _curated(actor: AbstractBaseUser, collection: Collection) -> None:
    if not collections_curated_by(user=actor).filter(id=collection.id).exists():
        raise CairnError(
            "collection", f"you do not curate the collection {collection.slug!r}", status_code=status.HTTP_403_FORBIDDEN
        )


def lesson_create(
    *, actor: AbstractBaseUser, question: str, chunk: Chunk, sentence: str, origin: str,
    response_ids: Sequence = (), writeback: WriteBack | None = None, embedding=None, phrasings: Phrasings = (),
) -> Lesson:  # fmt: skip
    """A curator's decision that `sentence` of `chunk` answers `question` (and the answers
    `response_ids` asked it, in the words of `phrasings`: (question, embedding) pairs): a lesson,
    audited. The sentence must be one of the chunk's."""
    collection = chunk.document.collection
    _curated(actor, collection)
    held = sentence_in(chunk, sentence)
    if held is None:
        raise CairnError("sentence", f"passage {chunk.id} holds no such sentence")
    if not question.strip():
        raise CairnError("question", "a lesson needs the question it answers")
    if embedding is None:
        embedding = get_embedder().embed([question])[0]
    with transaction.atomic():
        lesson = Lesson.objects.create(
            question=question.strip(), embedding=list(map(float, embedding)), collection=collection,
            document=chunk.document, chunk=chunk, sentence=held, origin=origin, writeback=writeback,
            response_ids=[str(r) for r in response_ids], created_by=actor,
        )  # fmt: skip
        worded = {}  # one row per wording, the lesson's own first
        for text, vector in [(lesson.question, embedding), *phrasings]:
            worded.setdefault(" ".join(text.split()).lower(), (text.strip(), vector))
        LessonQuestion.objects.bulk_create(
            LessonQuestion(lesson=lesson, question=text, embedding=list(map(float, vector)))
            for text, vector in worded.values()
        )
        audit("lesson.create", lesson, actor=actor, summary=f"{lesson.get_origin_display()}: {lesson.question[:200]}",
              after={"chunk": chunk.id, "sentence": held, "answers": len(lesson.response_ids)})  # fmt: skip
    return lesson


def lesson_from_mark(
    mark: Mark, *, actor: AbstractBaseUser, response_ids: Sequence = (), phrasings: Phrasings = ()
) -> Lesson:
    """Confirm a reader's mark: its sentence answers its question."""
    if mark.none_answers or mark.chunk is None:
        raise CairnError("mark", "this mark names no sentence (or its passage has changed since): pick one instead")
    ids = list(dict.fromkeys([str(mark.response_id), *map(str, response_ids)]))
    return lesson_create(
        actor=actor, question=mark.question, chunk=mark.chunk, sentence=mark.sentence, origin=Lesson.Origin.MARK,
        response_ids=ids, phrasings=phrasings,
    )  # fmt: skip


def lesson_written(
    *, actor: AbstractBaseUser, collection: Collection, question: str, answer: str, response_ids: Sequence = (),
    phrasings: Phrasings = (),
) -> Lesson:  # fmt: skip
    """A curator writes the answer: published at once as a write-back document of `collection`
    (audited as any publication), and its first sentence becomes the lesson for `question`."""
    _curated(actor, collection)
    answer = answer.strip()
    if not answer:
        raise CairnError("answer", "write the answer to publish")
    if not question.strip():
        raise CairnError("question", "a written answer needs the question it answers")
    embedding = get_embedder().embed([question])[0]
    with transaction.atomic():
        writeback = WriteBack.objects.create(
            response_id=uuid.uuid4(), asked_by=actor, question=question.strip(), answer=answer, text=answer,
            collection=collection, evidence=[], status=WriteBack.Status.PENDING_REVIEW,
            question_embedding=list(map(float, embedding)),
        )  # fmt: skip
        writeback = writeback_publish(writeback, actor=actor, note="written by a curator for unanswered questions")
        chunk = writeback.document.chunks.order_by("ordinal").first()
        sentences = chunk_sentences(chunk) if chunk is not None else []
        if not sentences:
            raise CairnError("answer", "write the answer as at least one sentence of prose")
        return lesson_create(
            actor=actor, question=question, chunk=chunk, sentence=sentences[0], origin=Lesson.Origin.WRITTEN,
            response_ids=response_ids, writeback=writeback, embedding=embedding, phrasings=phrasings,
        )  # fmt: skip


def gap_record(
    *, actor: AbstractBaseUser, collection: Collection, question: str, note: str = "", response_ids: Sequence = ()
) -> Gap:
    """A curator marks `question` not covered by `collection`: a page to write (audited)."""
    _curated(actor, collection)
    if not question.strip():
        raise CairnError("question", "name the question the collection does not cover")
    embedding = get_embedder().embed([question])[0]
    with transaction.atomic():
        gap = Gap.objects.create(
            question=question.strip(), embedding=list(map(float, embedding)), collection=collection, note=note.strip(),
            response_ids=[str(r) for r in response_ids], created_by=actor,
        )  # fmt: skip
        audit("gap.create", gap, actor=actor, summary=f"not covered: {gap.question[:200]}",
              after={"collection": collection.slug, "answers": len(gap.response_ids), "note": gap.note})  # fmt: skip
    return gap


def gap_close(gap: Gap, *, actor: AbstractBaseUser) -> bool:
    """Close an open gap (its page is written), audited; False if it was closed already."""
    _curated(actor, gap.collection)
    with transaction.atomic():
        closed = Gap.objects.filter(id=gap.id, closed_at__isnull=True).update(closed_at=timezone.now())
        if closed:
            audit("gap.close", gap, actor=actor, summary=f"covered now: {gap.question[:200]}",
                  before={"closed": False}, after={"closed": True})  # fmt: skip
    return bool(closed)


def lesson_retract(lesson: Lesson, *, actor: AbstractBaseUser, reason: str) -> Lesson:
    """Take a lesson back (a curator's decision, audited): it reaches no answer any more."""
    _curated(actor, lesson.collection)
    if not reason.strip():
        raise CairnError("reason", "say why the lesson is taken back")
    with transaction.atomic():
        before = lesson.status
        Lesson.objects.filter(id=lesson.id).update(status=Lesson.Status.RETRACTED)
        lesson.status = Lesson.Status.RETRACTED
        audit("lesson.retract", lesson, actor=actor, summary=reason.strip(), before={"status": before},
              after={"status": lesson.status})  # fmt: skip
    return lesson


def lessons_recheck(lessons=None) -> dict[str, int]:
    """Keep lessons true to their documents: a lesson whose chunk a re-ingest replaced finds its
    sentence in the document's chunks now (kept, re-pointed at the chunk that holds it) or goes back
    to the curators' list (RECHECK), each change audited as the system's. Only lessons without a
    chunk are read, so a re-check when nothing changed costs one query. A lesson of a retracted
    document reaches no answer without any change here: every read of a lesson goes through the
    chunks its asker may read, and those are of active documents only (lessons_near)."""
    base = Lesson.objects.all() if lessons is None else lessons
    counts = {"kept": 0, "recheck": 0}
    stale = base.filter(chunk__isnull=True).exclude(status=Lesson.Status.RETRACTED).select_related("document")
    for lesson in stale:
        chunk = next((c for c in lesson.document.chunks.all() if sentence_in(c, lesson.sentence)), None)
        with transaction.atomic():
            if chunk is not None:
                Lesson.objects.filter(id=lesson.id).update(chunk=chunk, status=Lesson.Status.ACTIVE)
                audit("lesson.keep", lesson, summary="the changed document still holds its sentence",
                      before={"chunk": None, "status": lesson.status}, after={"chunk": chunk.id, "status": "active"})  # fmt: skip
                counts["kept"] += 1
            elif lesson.status != Lesson.Status.RECHECK:
                Lesson.objects.filter(id=lesson.id).update(status=Lesson.Status.RECHECK)
                audit("lesson.recheck", lesson, summary="its sentence is gone from the changed document",
                      before={"status": lesson.status}, after={"status": Lesson.Status.RECHECK})  # fmt: skip
                counts["recheck"] += 1
    return counts
