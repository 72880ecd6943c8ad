"""Beyond repeats: what a collection's lessons teach about all of its answers.

A lesson settles the answers that asked its question (Lesson.response_ids), and says which sentence
answers it. Each of those answers, if the extractive answer judged it, is then a labelled example of
how sure Cairn should have been on this collection: right when what it stated, or would have stated
had it been sure (Answer.claim), holds the lesson's sentence. The calibrated confidence
(judges/confidence.py) was fitted on other manuals; a collection whose answers are right more (or
less) often than it predicts gets its own shift of the log-odds (judges.confidence.fit_shift), so
that questions no one taught are stated as often as this collection deserves.

The shift serves only when it passes a held-out check: fitted on all but one fold of the labelled
answers, it must lower the log loss on the fold left out, summed over folds, against no shift;
otherwise its figures are kept for the curator (Admin → Adaptations) and the shipped calibration
stays. Re-fitted by a django-q2 task after each lesson a curator confirms.
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django_q.tasks import async_task

from corpus.audit import audit
from corpus.models import Collection
from judges.confidence import fit_shift, log_loss
from pipeline.models import Answer
from writeback.models import Adaptation, Lesson
from writeback.proposals import plain_words

ADAPT = "pipeline.adaptation.confidence_adapt_task"
FOLDS = 5


def lesson_labels(collection: Collection) -> list[tuple[float, bool]]:
    """(confidence, right) of every answer an active lesson of `collection` settled that the
    extractive answer judged (a confidence and a claim), once per answer."""
    lessons = Lesson.objects.filter(collection=collection, status=Lesson.Status.ACTIVE).values_list(
        "sentence", "response_ids"
    )
    sentence_of = {}
    for sentence, response_ids in lessons:
        for response_id in response_ids:
            sentence_of.setdefault(str(response_id), plain_words(sentence))
    answers = Answer.objects.filter(
        response_id__in=list(sentence_of), confidence__isnull=False
    ).exclude(claim="").values_list("response_id", "confidence", "claim")  # fmt: skip
    return [(confidence, sentence_of[str(rid)] in plain_words(claim)) for rid, confidence, claim in answers]


def held_out_losses(labels: list[tuple[float, bool]]) -> tuple[float, float]:
    """Log loss over held-out folds without and with the shift fitted on the other folds."""
    folds = [labels[i::FOLDS] for i in range(FOLDS)]
    without, with_shift = 0.0, 0.0
    for k, fold in enumerate(folds):
        if not fold:
            continue
        rest = [item for j, other in enumerate(folds) if j != k for item in other]
        shift = fit_shift([p for p, _ in rest], [y for _, y in rest])
        probabilities, right = [p for p, _ in fold], [y for _, y in fold]
        without += log_loss(probabilities, right) * len(fold)
        with_shift += log_loss(probabilities, right, shift) * len(fold)
    return without / len(labels), with_shift / len(labels)


def confidence_adapt(collection: Collection, *, actor=None) -> Adaptation:
    """Fit `collection`'s confidence shift on the answers its lessons settled, check it on held-out
    folds, store it (serving only if it passed) with an audit row."""
    labels = lesson_labels(collection)
    n, right = len(labels), sum(y for _, y in labels)
    figures = {"answers": n, "right": right, "min_answers": settings.CAIRN_ADAPT_MIN_ANSWERS}
    shift, serving = 0.0, False
    if n >= settings.CAIRN_ADAPT_MIN_ANSWERS and 0 < right < n:
        shift = round(fit_shift([p for p, _ in labels], [y for _, y in labels]), 4)
        without, with_shift = held_out_losses(labels)
        serving = with_shift < without
        figures |= {"held_out_log_loss": round(without, 4), "held_out_log_loss_shifted": round(with_shift, 4)}
    with transaction.atomic():
        adaptation, _ = Adaptation.objects.select_for_update().get_or_create(collection=collection)
        before = {"shift": adaptation.confidence_shift, "serving": adaptation.serving}
        adaptation.confidence_shift, adaptation.serving, adaptation.figures = shift, serving, figures
        adaptation.save()
        audit("collection.adapt_confidence", collection, actor=actor,
              summary=f"confidence shift {shift:+.2f} from {n} answers its lessons settled "
                      f"({'serving' if serving else 'not serving: the held-out check did not pass'})",
              before=before, after={"shift": shift, "serving": serving, **figures})  # fmt: skip
    return adaptation


def confidence_adapt_task(collection_id: int) -> str:
    collection = Collection.objects.filter(id=collection_id).first()
    if collection is None:
        return "collection gone"
    return str(confidence_adapt(collection))


def confidence_adapt_enqueue(collection_id: int) -> None:
    async_task(ADAPT, collection_id, task_name=f"adapt-confidence-{collection_id}", group="adaptation")
