"""Beyond repeats: a collection's lessons adapt its answers' confidence (pipeline/adaptation.py),
only when the shift predicts held-out lessons better than none, and only for answers quoted from it."""

import math
import uuid

import pytest

from corpus.models import AuditEvent, Document
from judges.confidence import fit_shift, log_loss, logit, shifted
from pipeline.adaptation import confidence_adapt, lesson_labels
from pipeline.models import Answer
from pipeline.services import question_answer
from tests.test_lessons import BADGE, curator, itdesk, reader  # noqa: F401  (fixtures)
from writeback.models import Adaptation, Lesson

pytestmark = pytest.mark.django_db
PASSWORDS = "How often do passwords expire?"


def test_the_shift_follows_the_labels_and_few_labels_move_it_little():
    assert fit_shift([0.5] * 400, [True] * 300 + [False] * 100) == pytest.approx(math.log(3), abs=0.1)
    assert fit_shift([0.5] * 400, [True] * 100 + [False] * 300) == pytest.approx(-math.log(3), abs=0.1)
    few = fit_shift([0.5] * 4, [True] * 3 + [False])
    assert 0 < few < math.log(3)  # the prior pulls it toward 0
    # Answers already calibrated need no shift.
    assert abs(fit_shift([0.8] * 50, [True] * 40 + [False] * 10)) < 0.05
    assert shifted(0.5, math.log(3)) == pytest.approx(0.75)
    assert log_loss([0.5, 0.5], [True, False]) == pytest.approx(math.log(2))


def settled(collection, chunk, actor, rows: list[tuple[float, bool]]) -> None:
    """Answers the lesson settled: right when their claim holds the lesson's sentence."""
    answers = [
        Answer.objects.create(question=f"badge question {i}", text="…", confidence=p, response_id=uuid.uuid4(),
                              claim=f"{BADGE} [1]" if right else "Printer queues are cleared every night. [1]")
        for i, (p, right) in enumerate(rows)
    ]  # fmt: skip
    Lesson.objects.create(question="What do I do if I lose my badge?", embedding=[0.1] * 384, collection=collection,
                          document=chunk.document, chunk=chunk, sentence=BADGE, origin=Lesson.Origin.PICKED,
                          response_ids=[str(a.response_id) for a in answers], created_by=actor)  # fmt: skip


def test_a_collection_whose_answers_are_right_more_often_than_predicted_states_more(itdesk, curator):  # noqa: F811
    chunk = Document.objects.get(collection=itdesk).chunks.get()
    settled(itdesk, chunk, curator, [(0.4, i % 5 != 0) for i in range(30)])  # 80% right at a predicted 40%
    assert sum(right for _, right in lesson_labels(itdesk)) == 24
    adaptation = confidence_adapt(itdesk, actor=curator)
    assert adaptation.serving and adaptation.confidence_shift > 1.0
    figures = adaptation.figures
    assert figures["held_out_log_loss_shifted"] < figures["held_out_log_loss"] and figures["answers"] == 30
    event = AuditEvent.objects.get(action="collection.adapt_confidence", object_id=str(itdesk.id))
    assert event.actor == curator and event.after["serving"] is True


def test_too_few_answers_or_a_retracted_lesson_adapt_nothing(itdesk, curator, settings):  # noqa: F811
    chunk = Document.objects.get(collection=itdesk).chunks.get()
    settled(itdesk, chunk, curator, [(0.4, True)] * 3 + [(0.4, False)] * 2)
    adaptation = confidence_adapt(itdesk)
    assert not adaptation.serving and adaptation.confidence_shift == 0.0 and adaptation.figures["answers"] == 5
    settled(itdesk, chunk, curator, [(0.4, i % 5 != 0) for i in range(30)])
    Lesson.objects.update(status=Lesson.Status.RETRACTED)
    assert lesson_labels(itdesk) == [] and not confidence_adapt(itdesk).serving


def test_a_serving_shift_moves_the_confidence_of_answers_quoted_from_its_collection_only(itdesk, reader, settings):  # noqa: F811
    settings.CAIRN_ADAPT_CONFIDENCE = True
    before = question_answer(user=reader, question=PASSWORDS, mode="fast").generation
    assert before.confidence is not None
    adaptation = Adaptation.objects.create(collection=itdesk, confidence_shift=-1.5, serving=False)
    assert question_answer(user=reader, question=PASSWORDS, mode="fast").generation.confidence == before.confidence
    Adaptation.objects.filter(id=adaptation.id).update(serving=True)
    after = question_answer(user=reader, question=PASSWORDS, mode="fast").generation
    assert logit(after.confidence) - logit(before.confidence) == pytest.approx(-1.5, abs=0.01)
    settings.CAIRN_ADAPT_CONFIDENCE = False  # the shipped default: fitted and shown, not used
    assert question_answer(user=reader, question=PASSWORDS, mode="fast").generation.confidence == before.confidence
