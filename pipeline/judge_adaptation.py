"""Adapting the judges to one collection: the teacher's questions over its passages, the hard
negatives Cairn's own retrieval brings for them, and the pairs both judges are fine-tuned on.

The teacher is the deployment's model server (pipeline.generators.get_llm: Ollama or any
OpenAI-compatible server), asked under a JSON schema (judges/teacher_questions.py says what is
asked and what is kept). Its replies are kept in a file per collection (TeacherCache), so a job
that stops resumes where it stopped, and the same questions train again without the teacher.
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.utils import timezone
from django_q.tasks import async_task

from corpus.audit import audit
from corpus.embedder import get_embedder
from corpus.models import Chunk, Collection, Document
from corpus.selectors import chunk_search
from corpus.strips import Strip, section_of, strips_in_context
from judges.corpus_questions import SectionChunk, collection_chunks
from judges.teacher_questions import (
    SCHEMA,
    TeacherCache,
    TeacherQuestion,
    answer_pairs,
    answering_strip,
    content_words,
    relevance_pairs,
    sampled_chunks,
    split_held_out,
    teacher_messages,
    teacher_questions,
)
from judges.verifiers import get_answer_judge, get_relevance_model, judges_serving
from pipeline.generators import GeneratorUnavailable, get_llm
from pipeline.stages import STAGES, QueryState, pipeline_run, record
from writeback.models import JudgeVersion, Lesson
from writeback.proposals import plain_words

NEGATIVE_POOL = 8  # passages retrieved for each question, its own left out
GIVE_UP_AFTER = 3  # failures in a row: the server is down, not one passage hard
HELD_OUT = 0.2  # of the passages asked about: their questions decide whether the adapted judges serve
MIN_QUESTIONS = 40  # fewer teach nothing a held-out part could show
EPOCHS, LEARNING_RATE = 2, 2e-5  # from the shipped weights: a nudge, not a new model
MAX_MINUTES = 15.0  # each judge's training; a run past it stops at a checkpoint and the next continues
ADAPT_TASK = "pipeline.judge_adaptation.judges_adapt_task"
_LOCK_SPACE = 6262  # the advisory locks' first key: adaptation, apart from the sources' one-key locks


def teacher_cache(collection: Collection) -> TeacherCache:
    return TeacherCache(Path(settings.CAIRN_ADAPTATION_DIR) / collection.slug / "teacher.jsonl")


def teacher_write(
    chunks: list[SectionChunk], cache: TeacherCache, llm, *, model: str, progress: Callable[[], None] | None = None
) -> Counter:
    """Ask the teacher about each of `chunks` it has not answered yet; a reply that fails (the server
    down, what is not JSON) is counted and asked again on the next run."""
    outcomes: Counter = Counter()
    failing = 0
    for chunk in chunks:
        if chunk in cache:
            outcomes["cached"] += 1
        elif failing == GIVE_UP_AFTER:
            outcomes["not asked"] += 1  # the server is down: the next run asks
        else:
            started = time.monotonic()
            try:
                reply = llm.complete_json(teacher_messages(chunk), SCHEMA)
            except GeneratorUnavailable:
                outcomes["failed"] += 1
                failing += 1
            else:
                cache.add(chunk, reply, model=model, seconds=time.monotonic() - started)
                outcomes["asked"] += 1
                failing = 0
        if progress:
            progress()
    return outcomes


@dataclass(frozen=True)
class Retrieved:
    """What Cairn's retrieval brings for each question, its own passage left out: the passages (for
    the relevance evaluator) and their sentences that share the most words with it (for the answer
    judge: the entry that mentions the subject)."""

    passages: dict[str, list[SectionChunk]]
    sentences: dict[str, list[Strip]]


def retrieved_for(collection: Collection, questions: list[TeacherQuestion], *, batch: int = 64) -> Retrieved:
    """Each question searched as a reader would search the collection (hybrid, one round trip a
    question), read as an administrator reads it (an unsaved superuser: nothing is recorded)."""
    reader = User(username="adapt", is_superuser=True)
    embedder = get_embedder()
    passages, sentences = {}, {}
    for start in range(0, len(questions), batch):
        part = questions[start : start + batch]
        vectors = embedder.embed([q.question for q in part])
        for q, vector in zip(part, vectors, strict=True):
            hits = chunk_search(user=reader, query_vector=vector, text=q.question, limit=NEGATIVE_POOL + 1,
                                collection_ids=[collection.id])  # fmt: skip
            found = [
                SectionChunk(h.chunk_id, h.document_id, h.heading, h.text) for h in hits if h.chunk_id != q.chunk_id
            ]
            passages[q.question] = found[:NEGATIVE_POOL]
            asked = content_words(q.question)
            strips = [s for c in found for s in strips_in_context(c.text, section_of(c.heading))]
            sentences[q.question] = sorted(strips, key=lambda s: -len(asked & content_words(s.judged)))
    return Retrieved(passages, sentences)


def passages_to_ask(collection: Collection, limit: int) -> list[SectionChunk]:
    return sampled_chunks(collection_chunks(collection.slug), limit)


def lesson_questions(collection: Collection, by_id: dict[int, SectionChunk]) -> list[TeacherQuestion]:
    """The collection's confirmed lessons on its passages `by_id` as questions with their answering
    sentence: the in-domain labels of the best kind (a curator chose the sentence). Training only,
    never held out."""
    questions = []
    for question, chunk_id, sentence in Lesson.objects.filter(
        collection=collection, status=Lesson.Status.ACTIVE, chunk_id__in=list(by_id)
    ).values_list("question", "chunk_id", "sentence"):
        chunk = by_id[chunk_id]
        strips = strips_in_context(chunk.text, section_of(chunk.heading))
        if answer := answering_strip(sentence, strips):
            questions.append(TeacherQuestion(question, chunk_id, answer, tuple(s for s in strips if s is not answer)))
    return questions


def held_out_figures(held: list[TeacherQuestion], retrieved: Retrieved, chunks: dict[int, SectionChunk]) -> dict:
    """How the judges serving now (judges_serving) read the held-out questions: the answer judge's
    share of questions whose answering sentence it scores above every negative the training would
    have given it, and the relevance evaluator's mean reciprocal rank of the question's own passage
    among those Cairn's retrieval brought for it."""
    judge, evaluator = get_answer_judge(), get_relevance_model()
    top, reciprocal = [], []
    for q in held:
        candidates = [text for _, text, _ in answer_pairs([q], retrieved.sentences, negatives=len(q.others))]
        scores = judge.score(q.question, candidates)
        top.append(bool(len(scores) > 1 and scores[0] > max(scores[1:])))
        passages = [text for _, text, label in relevance_pairs([q], chunks, retrieved.passages, hard=NEGATIVE_POOL)
                    if label == 0]  # fmt: skip
        scores = evaluator.score(q.question, [chunks[q.chunk_id].text, *passages])
        reciprocal.append(1.0 / (1 + int((scores[1:] >= scores[0]).sum())))
    return {"answer_top1": round(sum(top) / len(top), 4), "relevance_mrr": round(sum(reciprocal) / len(reciprocal), 4)}


def held_out_answers(collection: Collection, held: list[TeacherQuestion]) -> dict:
    """The held-out questions answered end to end as a reader of the collection is answered, by the
    judges serving now (fast mode, nothing recorded): the share whose answering sentence is stated,
    and stated or among the "where to look" passages. What the ranking figures cannot show: whether
    the answer's confidence, fitted on the shipped judges' scores, still states what it should."""
    reader = User(username="adapt", is_superuser=True)
    stated = pointed = 0
    for q in held:
        state = QueryState(user=reader, question=q.question, top_k=8, mode="fast", collection_ids=[collection.id])
        pipeline_run(state, [stage for stage in STAGES if stage is not record])
        holds = plain_words(q.answer.text) in plain_words(state.generation.text)
        stated += holds and state.generation.found
        pointed += holds and not state.generation.found
    return {"stated": round(stated / len(held), 4), "stated_or_pointed": round((stated + pointed) / len(held), 4)}


def _train(base: str, output: Path, labels, pairs: list[tuple[str, str, int]], *, max_length: int, progress) -> bool:
    from judges.training import TrainingConfig, train_classifier

    config = TrainingConfig(
        base=base, output=str(output), labels=labels, epochs=EPOCHS, batch_size=16, learning_rate=LEARNING_RATE,
        max_length=max_length, max_minutes=MAX_MINUTES, data={"teacher questions": len(pairs)},
    )  # fmt: skip
    return train_classifier(config, pairs, progress=progress)["finished"]


def _steps(say) -> Callable[[int, int, float], None]:
    """Training's progress in ten lines, with the time left at this pace."""
    started = time.monotonic()

    def progress(step: int, total: int, loss: float) -> None:
        if step == total or step % max(1, total // 10) == 0:
            left = (time.monotonic() - started) / step * (total - step)
            say(f"  step {step}/{total}, loss {loss:.3f}, about {left / 60:.0f} min left")

    return progress


class AdaptationUnfinished(Exception):
    """Training stopped at its time cap; running the adaptation again continues from the checkpoint."""


def judges_adapt(
    collection: Collection, *, llm=None, model: str = "", passages: int = 120, actor=None, progress=None
) -> JudgeVersion:
    """Adapt the answer judge and relevance evaluator to `collection` and record the outcome as its
    next JudgeVersion: ask the teacher (`llm`, when given) about a sample of `passages`, train on the
    validated questions of four passages in five and the collection's lessons, and let the adapted
    judges serve only when the fifth part, answered end to end, fares better with them. Resumable: the
    teacher's replies are cached and training checkpoints (AdaptationUnfinished until it is done)."""
    from judges.answer_data import ANSWER_LABELS
    from judges.relevance_data import RELEVANCE_LABELS

    say = progress or (lambda message: None)
    cache = teacher_cache(collection)
    chunks = {c.id: c for c in collection_chunks(collection.slug)}  # read once: a collection may be large
    sample = sampled_chunks(list(chunks.values()), passages)
    asked = {}
    if llm is not None:
        say(f"asking the teacher about {len(sample)} passages ({sum(c in cache for c in sample)} answered before)")
        asked = dict(teacher_write(sample, cache, llm, model=model))
    questions, dropped = teacher_questions(sample, cache)
    figures = {"teacher": model or "cached replies", "passages": len(sample), "asked": asked,
               "questions": len(questions), "dropped": dict(dropped)}  # fmt: skip
    version = (collection.judge_versions.order_by("-version").values_list("version", flat=True).first() or 0) + 1
    if len(questions) < MIN_QUESTIONS:
        figures["why"] = f"{len(questions)} questions held; adapting needs {MIN_QUESTIONS}"
        return _recorded(collection, version, figures, "", "", actor)
    train, held = split_held_out(questions, HELD_OUT)
    lessons = lesson_questions(collection, chunks)
    figures |= {"training_questions": len(train), "lessons": len(lessons), "held_out_questions": len(held)}
    say(f"{len(train)} questions and {len(lessons)} lessons to train on, {len(held)} held out; searching negatives")
    retrieved = retrieved_for(collection, train + lessons + held)
    pending = Path(settings.CAIRN_ADAPTATION_DIR) / collection.slug / "pending"  # a stopped run resumes it
    answer_pairs_ = list(answer_pairs(train + lessons, retrieved.sentences))
    relevance_pairs_ = list(relevance_pairs(train + lessons, chunks, retrieved.passages))
    say(f"training the answer judge on {len(answer_pairs_)} pairs")
    if not _train(str(settings.CAIRN_ANSWER_MODEL), pending / "answer", ANSWER_LABELS, answer_pairs_,
                  max_length=128, progress=_steps(say)):  # fmt: skip
        raise AdaptationUnfinished("the answer judge stopped at its time cap: run again to continue")
    say(f"training the relevance evaluator on {len(relevance_pairs_)} pairs")
    if not _train(str(settings.CAIRN_RELEVANCE_MODEL), pending / "relevance", RELEVANCE_LABELS, relevance_pairs_,
                  max_length=256, progress=_steps(say)):  # fmt: skip
        raise AdaptationUnfinished("the relevance evaluator stopped at its time cap: run again to continue")
    final = pending.parent / f"v{version}"
    if final.exists():  # left by a collection of this name deleted since: no row names it
        shutil.rmtree(final)
    pending.rename(final)
    say("reading the held-out questions with the shipped and the adapted judges")
    shipped = held_out_figures(held, retrieved, chunks)
    with judges_serving(str(final / "answer"), str(final / "relevance")):
        adapted = held_out_figures(held, retrieved, chunks)
    answer_model = str(final / "answer") if adapted["answer_top1"] > shipped["answer_top1"] else ""
    relevance_model = str(final / "relevance") if adapted["relevance_mrr"] > shipped["relevance_mrr"] else ""
    if answer_model or relevance_model:
        say("answering the held-out questions end to end with the shipped and the adapted judges")
        shipped |= held_out_answers(collection, held)
        with judges_serving(answer_model, relevance_model):
            adapted |= held_out_answers(collection, held)
    figures |= {"held_out_shipped": shipped, "held_out_adapted": adapted}
    if not (answer_model or relevance_model):
        figures["why"] = "neither adapted judge read the held-out questions better than the shipped one"
    elif adapted["stated"] <= shipped["stated"] or adapted["stated_or_pointed"] < shipped["stated_or_pointed"]:
        figures["why"] = "answered end to end, the held-out questions fared no better than with the shipped judges"
        answer_model = relevance_model = ""
    return _recorded(collection, version, figures, answer_model, relevance_model, actor)


def _recorded(collection, version: int, figures: dict, answer_model: str, relevance_model: str, actor):
    serving = bool(answer_model or relevance_model)
    with transaction.atomic():
        row = JudgeVersion.objects.create(
            collection=collection, version=version, answer_model=answer_model, relevance_model=relevance_model,
            status=JudgeVersion.Status.SERVING if serving else JudgeVersion.Status.KEPT_BACK, figures=figures,
        )  # fmt: skip
        audit("collection.adapt_judges", collection, actor=actor,
              summary=f"judges v{version} {row.status}: " + (figures.get("why") or "adapted judges serve"),
              after={"version": version, "status": row.status, "answer_model": answer_model,
                     "relevance_model": relevance_model})  # fmt: skip
    return row


def judge_version_retire(row: JudgeVersion, *, actor) -> JudgeVersion:
    """Stop a version serving: the collection goes back to its newest serving version before it, or
    to the shipped judges."""
    with transaction.atomic():
        before = row.status
        row.status, row.status_changed_at = JudgeVersion.Status.RETIRED, timezone.now()
        row.save(update_fields=["status", "status_changed_at"])
        audit("collection.judges_retire", row.collection, actor=actor, summary=f"judges v{row.version} retired",
              before={"status": before}, after={"status": row.status})  # fmt: skip
    return row


def changed_share(collection: Collection) -> float:
    """The share of the collection's passages in documents added or changed since its last
    adaptation (all of them when it has none)."""
    chunks = Chunk.objects.filter(document__collection=collection, document__status=Document.Status.ACTIVE)
    total = chunks.count()
    last = collection.judge_versions.order_by("-version").values_list("created_at", flat=True).first()
    if not total or last is None:
        return 1.0 if total else 0.0
    return chunks.filter(document__updated_at__gt=last).count() / total


def adapt_when_changed(sender, collection: Collection, **kwargs) -> None:
    """After an ingest (corpus.signals.collection_text_changed): adapt in the background once enough
    of the collection's text is new since its last adaptation (CAIRN_ADAPT_CHANGED_SHARE; 0: never)."""
    share = settings.CAIRN_ADAPT_CHANGED_SHARE
    if share > 0 and changed_share(collection) >= share:
        async_task(ADAPT_TASK, collection.id, task_name=f"adapt-judges-{collection.id}", group="adaptation")


def judges_adapt_task(collection_id: int) -> str:
    """The background adaptation (django-q2): the deployment's model server as teacher, when one is
    configured, else the cached replies. One run per collection at a time (an advisory lock), and a
    task queued twice by one sync finds the first one's version and stops. Training needs PyTorch
    on the worker host."""
    collection = Collection.objects.filter(id=collection_id).first()
    if collection is None:
        return "no such collection"
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [_LOCK_SPACE, collection_id])
        if not cursor.fetchone()[0]:
            return "already adapting"
    try:
        if settings.CAIRN_ADAPT_CHANGED_SHARE > 0 and changed_share(collection) < settings.CAIRN_ADAPT_CHANGED_SHARE:
            return "adapted since"
        llm, model = configured_teacher()
        try:
            row = judges_adapt(collection, llm=llm, model=model)
        except AdaptationUnfinished:
            async_task(ADAPT_TASK, collection_id, task_name=f"adapt-judges-{collection_id}", group="adaptation")
            return "continuing from the checkpoint"
        return str(row)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [_LOCK_SPACE, collection_id])


def configured_teacher():
    """The deployment's model server (pipeline.generators.get_llm) and its model's name, or (None, "")."""
    try:
        llm = get_llm()
    except GeneratorUnavailable:
        return None, ""
    return llm, getattr(llm, "model", "")
