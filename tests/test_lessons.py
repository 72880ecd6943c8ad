"""Lessons at query time: a curator's confirmed (question, passage, sentence) reaches near questions
of readers who may read the passage, and nothing else; it follows its document (retracted, changed)."""

import numpy as np
import pytest
from django.contrib.auth.models import Group, User

from common.exceptions import CairnError
from corpus.embedder import get_embedder
from corpus.lifecycle import document_retract
from corpus.models import AuditEvent, Document
from corpus.services import collection_get_or_create, curators_group_ensure, documents_ingest
from pipeline.generators import ANSWERED
from pipeline.services import question_answer
from readers.extract import ExtractedDocument
from writeback.lessons import lesson_create, lesson_retract
from writeback.models import Lesson

pytestmark = pytest.mark.django_db

BADGE = "Lost badges must be reported to the security desk on the ground floor within one working day."
HANDBOOK = (
    "Passwords expire every ninety days and are changed from the account portal. "
    "The VPN client is installed from the software centre on every managed laptop. "
    f"{BADGE} "
    "Printer queues are cleared automatically every night at two o'clock."
)
TAUGHT = "What do I do if I lose my badge?"
NEAR = "I lost my badge, what should I do?"
FAR = "How do I install the VPN client?"


@pytest.fixture
def itdesk(db):
    collection, _ = collection_get_or_create(slug="itdesk", group_names=["staff"], curator_group_names=["it-curators"])
    documents_ingest(collection=collection, documents=[ExtractedDocument("IT handbook", HANDBOOK, "it/handbook.md",
                                                                         "text/markdown")])  # fmt: skip
    return collection


@pytest.fixture
def reader(db):
    user = User.objects.create_user("erin")
    user.groups.add(Group.objects.get_or_create(name="staff")[0])
    return user


@pytest.fixture
def curator(db, itdesk):
    user = User.objects.create_user("ivan", is_staff=True)
    user.groups.add(curators_group_ensure(), Group.objects.get(name="it-curators"))
    return user


def similarity(a: str, b: str) -> float:
    x, y = get_embedder().embed([a, b])
    return float(np.dot(x, y) / (np.linalg.norm(x) * np.linalg.norm(y)))


@pytest.fixture
def lesson(itdesk, curator, settings):
    # The premise of every test here: NEAR is near TAUGHT and FAR is not, at the threshold used.
    settings.CAIRN_LESSON_SIMILARITY = 0.6
    assert similarity(NEAR, TAUGHT) >= 0.6 > similarity(FAR, TAUGHT)
    chunk = Document.objects.get(collection=itdesk).chunks.get()
    return lesson_create(actor=curator, question=TAUGHT, chunk=chunk, sentence=BADGE, origin=Lesson.Origin.PICKED)


def ask(user, question, **kwargs):
    return question_answer(user=user, question=question, mode="fast", **kwargs)


def taught(state) -> bool:
    return any("lesson" in note for note in state.notes)


def test_a_near_question_gets_the_lesson_stated_and_cited(lesson, reader):
    state = ask(reader, NEAR)
    generation = state.generation
    assert taught(state) and generation.outcome == ANSWERED
    assert generation.text.startswith(BADGE) and generation.cited == [1]
    lead = state.candidates[0]
    assert lead.hit.chunk_id == lesson.chunk_id and lead.bucket == "VERIFIED"
    assert any("curator confirmed" in note for note in lead.notes)


def test_a_far_question_is_answered_as_if_there_were_no_lesson(lesson, reader):
    with_lesson = ask(reader, FAR)
    Lesson.objects.all().delete()
    without = ask(reader, FAR)
    assert not taught(with_lesson) and with_lesson.generation.text == without.generation.text


def test_a_lesson_is_reached_through_every_phrasing_its_askers_used(itdesk, curator, reader, settings):
    settings.CAIRN_LESSON_SIMILARITY = 0.6
    asked_as = "Who should be told about a missing access card?"
    question = "My access card is missing, who do I tell?"
    assert similarity(question, TAUGHT) < 0.6 <= similarity(question, asked_as)
    chunk = Document.objects.get(collection=itdesk).chunks.get()
    lesson = lesson_create(actor=curator, question=TAUGHT, chunk=chunk, sentence=BADGE, origin=Lesson.Origin.PICKED)
    assert not taught(ask(reader, question))
    again = lesson_create(actor=curator, question=TAUGHT, chunk=chunk, sentence=BADGE, origin=Lesson.Origin.PICKED,
                          phrasings=[(asked_as, get_embedder().embed([asked_as])[0]), (TAUGHT, [0.0] * 383 + [1.0])])  # fmt: skip
    state = ask(reader, question)
    assert taught(state) and state.generation.text.startswith(BADGE)
    # Its own question once (the repeat of it among the phrasings dropped), and the askers' words.
    assert lesson.phrasings.count() == 1 and sorted(again.phrasings.values_list("question", flat=True)) == sorted(
        [TAUGHT, asked_as]
    )


def test_a_reader_who_cannot_read_the_passage_never_gets_the_lesson(lesson, charlie):
    state = ask(charlie, NEAR)
    assert not taught(state)
    assert all(c.hit is None or c.hit.collection_id != lesson.collection_id for c in state.candidates)


def test_a_question_asked_within_another_collection_does_not_get_it(lesson, reader):
    other, _ = collection_get_or_create(slug="canteen", public=True)
    documents_ingest(collection=other, documents=[ExtractedDocument("Menu", "Soup is served daily at noon.",
                                                                    "canteen/menu.md", "text/markdown")])  # fmt: skip
    assert not taught(ask(reader, NEAR, collections=["canteen"]))
    assert taught(ask(reader, NEAR, collections=["itdesk"]))


def test_a_retracted_document_takes_its_lessons_with_it_and_a_restore_brings_them_back(lesson, reader, curator):
    from corpus.lifecycle import document_restore

    document = lesson.document
    document_retract(document, actor=curator, reason="outdated")
    assert not taught(ask(reader, NEAR))
    document_restore(Document.objects.get(id=document.id), actor=curator, reason="still valid")
    assert taught(ask(reader, NEAR))


def test_a_changed_document_keeps_a_lesson_whose_sentence_survives_and_sends_back_one_whose_did_not(
    lesson, reader, itdesk
):
    edited = HANDBOOK.replace("two o'clock", "three o'clock")  # the chunk changes; the badge sentence does not
    documents_ingest(collection=itdesk, documents=[ExtractedDocument("IT handbook", edited, "it/handbook.md",
                                                                     "text/markdown")])  # fmt: skip
    lesson.refresh_from_db()
    assert lesson.chunk_id is None  # the re-ingest replaced it
    state = ask(reader, NEAR)
    lesson.refresh_from_db()
    assert taught(state) and lesson.chunk_id is not None and lesson.status == Lesson.Status.ACTIVE
    assert AuditEvent.objects.filter(action="lesson.keep", object_id=str(lesson.id)).exists()

    documents_ingest(collection=itdesk, documents=[ExtractedDocument("IT handbook", edited.replace(BADGE, ""),
                                                                     "it/handbook.md", "text/markdown")])  # fmt: skip
    state = ask(reader, NEAR)
    lesson.refresh_from_db()
    assert not taught(state) and lesson.status == Lesson.Status.RECHECK
    assert AuditEvent.objects.filter(action="lesson.recheck", object_id=str(lesson.id)).exists()


def test_a_retracted_lesson_reaches_no_answer_and_the_decision_is_audited(lesson, reader, curator):
    lesson_retract(lesson, actor=curator, reason="the badge procedure moved to the security wiki")
    assert not taught(ask(reader, NEAR))
    event = AuditEvent.objects.get(action="lesson.retract", object_id=str(lesson.id))
    assert event.actor == curator and event.after == {"status": "retracted"}


def test_only_a_curator_of_the_collection_teaches_and_only_a_sentence_of_the_passage(itdesk, curator, bob, reader):
    chunk = Document.objects.get(collection=itdesk).chunks.get()
    with pytest.raises(CairnError) as refused:
        lesson_create(actor=reader, question=TAUGHT, chunk=chunk, sentence=BADGE, origin=Lesson.Origin.PICKED)
    assert refused.value.status_code == 403
    with pytest.raises(CairnError) as outsider:  # a curator, but not of this collection
        lesson_create(actor=bob, question=TAUGHT, chunk=chunk, sentence=BADGE, origin=Lesson.Origin.PICKED)
    assert outsider.value.status_code == 403
    with pytest.raises(CairnError) as invented:
        lesson_create(actor=curator, question=TAUGHT, chunk=chunk, sentence="Badges are never lost.",
                      origin=Lesson.Origin.PICKED)  # fmt: skip
    assert invented.value.field == "sentence"
    assert not Lesson.objects.exists()
    lesson = lesson_create(actor=curator, question=TAUGHT, chunk=chunk, sentence=f"  {BADGE}  ",
                           origin=Lesson.Origin.PICKED)  # fmt: skip
    assert lesson.sentence == BADGE and AuditEvent.objects.filter(action="lesson.create", actor=curator).exists()


def test_a_lesson_of_another_collection_neither_demotes_nor_silences_the_passage_it_contradicts(hr, bob, settings):
    """bob curates the public handbook, not hr: he asks hr's question within the handbook and writes
    his own answer to it on the curators' list. A reader of hr who asks without naming collections
    gets hr's passage where the ranking puts it, and "sources disagree", not bob's sentence stated."""
    from django.test import Client

    from tests.conftest import SALARY, client_for

    settings.CAIRN_MISS_MIN_ASKERS, settings.CAIRN_WRITEBACK_ALPHA_MAX = 1, 1.0  # bob alone; a small collection
    handbook, _ = collection_get_or_create(slug="handbook", public=True)  # curated by every curator
    documents_ingest(collection=handbook, documents=[ExtractedDocument(
        "Pay", "Pay for the support team is reviewed once a year by the team lead.", "hb/pay.md", "text/markdown")])  # fmt: skip
    question = "When are the salary bands for engineers reviewed?"
    asked = client_for(bob).post("/api/v1/query", {"question": question, "mode": "fast", "collections": ["handbook"]},
                                 format="json").json()  # fmt: skip
    web = Client()
    web.force_login(bob)
    wrong = "The salary bands for engineers are not reviewed in March; they are reviewed every September."
    decided = web.post(f"/admin/writeback/lesson/unanswered/{handbook.id}/{asked['response_id']}/write/",
                       {"answer": wrong})  # fmt: skip
    assert decided.status_code == 302 and Lesson.objects.filter(collection=handbook).exists()

    reader = User.objects.create_user("hal")
    reader.groups.add(Group.objects.get(name="hr"))
    body = client_for(reader).post("/api/v1/query", {"question": question, "mode": "fast"}, format="json").json()
    salary = next(e for e in body["evidence"] if e["text"] == SALARY)
    lesson = next(e for e in body["evidence"] if wrong in e["text"])
    assert salary["n"] < lesson["n"]  # not demoted below the lesson's passage
    assert lesson["bucket"] != "VERIFIED" and "stated from a lesson" not in " ".join(body["notes"])
    assert body["outcome"] == "where_to_look" and "disagree" in body["answer"].lower(), body["answer"]


def test_a_lessons_passage_goes_first_among_its_own_collections_and_takes_no_other_collections_place():
    from types import SimpleNamespace

    from pipeline.stages import lesson_placed

    def ranked(*pairs):  # (chunk id, collection id), best first
        return [SimpleNamespace(hit=SimpleNamespace(chunk_id=c, collection_id=k)) for c, k in pairs]

    def ids(rows):
        return [r.hit.chunk_id for r in rows]

    pool = ranked((1, 7), (2, 8), (3, 7), (4, 8), (5, 7))
    assert ids(lesson_placed(pool, {3}, 4)) == [3, 2, 1, 4]  # 7's slots reordered, 8's kept
    assert ids(lesson_placed(pool, {5}, 4)) == [5, 2, 1, 4]  # from outside the top 4: 7's last drops out
    assert ids(lesson_placed(pool, {9}, 4)) == [1, 2, 3, 4]  # no lesson reached
    alone = ranked((1, 8), (2, 8), (3, 7))
    assert ids(lesson_placed(alone, {3}, 2)) == [1, 2, 3]  # none of 7's made it: one passage more
