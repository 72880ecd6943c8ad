"""Curators see what went unanswered, and decide (pipeline.misses, pipeline.misses_admin): misses
grouped by meaning per collection, shown once CAIRN_MISS_MIN_ASKERS people asked (or a reader marked
a sentence), to that collection's curators only; each decision one POST to one service, audited,
that settles its group, and a lesson reaches later askers. Real database, real MiniLM, the real
pipeline where the outcome matters, the real admin with CSRF checks on.

Personas: erin, frank, gina and hank read hr; dana curates hr; bob curates the collections every
curator curates, not hr; root is the superuser."""

import numpy as np
import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from corpus.embedder import get_embedder
from corpus.models import AuditEvent, Chunk, Document
from corpus.services import documents_ingest
from pipeline import misses
from pipeline.misses import groups_of, medoid, misses_for
from pipeline.models import Answer
from pipeline.services import question_answer
from readers.extract import ExtractedDocument
from reputation.services import feedback_submit
from tests.conftest import client_for
from writeback.lessons import chunk_sentences, lesson_create, mark_record
from writeback.models import Gap, Lesson, Mark, WriteBack

pytestmark = pytest.mark.django_db

PAID_LEAVE = "Employees who become parents through birth or adoption may take sixteen weeks of fully paid leave."
LEAVE = (
    f"{PAID_LEAVE} The leave can start up to two weeks before the expected date of birth. "
    "Requests go to the people team at least four weeks in advance. "
    "The leave may be split into two blocks within the first year."
)
TWO_DAYS = "Staff may work from home up to two days a week, agreed with their manager."
REMOTE = (
    f"{TWO_DAYS} Equipment for a home office is reimbursed up to 400 euros once every three years. "
    "Core hours are ten to three, wherever people work."
)
# Asked in other words by three people; the pipeline finds the leave passage and rejects it.
NEWBORN = [
    "how long can I stay at home with a newborn",
    "how long can I stay home with my newborn?",
    "how long can i stay home with a newborn baby",
]
NEWBORN_LATER = "how long can we stay home with a newborn"
FRIDAYS = [
    "Can I work from home on Fridays?",
    "Am I allowed to work from home on Fridays?",
    "can I work from home on a friday",
]
GYM = ["Is there a gym at the office?", "is there a gym in the office", "Does the office have a gym?"]
UNANSWERED = "/admin/writeback/lesson/unanswered/"


@pytest.fixture
def policies(hr):
    """hr with its policies beside the salary bands."""
    documents_ingest(
        collection=hr,
        documents=[
            ExtractedDocument("Parental leave", LEAVE, "hr/leave.md", "text/markdown"),
            ExtractedDocument("Working from home", REMOTE, "hr/remote.md", "text/markdown"),
        ],
    )
    return hr


@pytest.fixture
def readers(hr):
    group = Group.objects.get(name="hr")
    people = {name: User.objects.create_user(name, password=f"{name}-pw") for name in ("erin", "frank", "gina", "hank")}
    for user in people.values():
        user.groups.add(group)
    return people


@pytest.fixture
def root(db):
    return User.objects.create_superuser("root", password="root-pw")


def asked(users, questions, collection, *, outcome=Answer.Outcome.NOT_FOUND, embedded=True) -> list[Answer]:
    """Answers as the record stage leaves them where only their grouping matters: each question
    asked by its user, with its real embedding (None: an answer from before they were stored)."""
    vectors = get_embedder().embed(list(questions))
    answers = []
    for user, question, vector in zip(users, questions, vectors, strict=True):
        answer = Answer.objects.create(
            user=user, question=question, text="…", found=outcome == Answer.Outcome.ANSWERED, outcome=outcome,
            embedding=list(map(float, vector)) if embedded else None,
        )  # fmt: skip
        answer.collections.set([collection])
        answers.append(answer)
    return answers


def ask(user, question) -> Answer:
    """Asked for real, in hr, fast mode."""
    return question_answer(user=user, question=question, mode="fast", collections=["hr"]).record


def signed_in(user) -> Client:
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    client.get("/admin/")  # the CSRF cookie, as a browser has it from the page it posts from
    return client


def post(client: Client, url: str, data: dict | None = None):
    return client.post(url, {**(data or {}), "csrfmiddlewaretoken": client.cookies["csrftoken"].value})


def decide(client: Client, group, decision: str, data: dict | None = None):
    return post(client, f"{UNANSWERED}{group.collection.id}/{group.key}/{decision}/", data)


def page(client: Client, url: str = UNANSWERED) -> str:
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return " ".join(response.content.decode().split())


def message(response) -> str:
    return " ".join(str(m) for m in response.wsgi_request._messages)


# --- Grouping (pure) -----------------------------------------------------------------------------


def test_groups_are_clusters_no_wider_than_the_distance_and_one_vector_is_a_group():
    east, north = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    near_east = np.array([0.99, 0.14])
    assert groups_of(np.vstack([east, north, near_east]), distance=0.3) == [[0, 2], [1]]
    assert groups_of(np.vstack([east]), distance=0.3) == [[0]]
    assert groups_of(np.zeros((0, 2)), distance=0.3) == []


def test_the_medoid_is_the_vector_nearest_all_the_others():
    vectors = np.array([[1.0, 0.0], [0.8, 0.6], [0.6, 0.8]])
    assert medoid(vectors) == 1


# --- The selector --------------------------------------------------------------------------------


def test_three_people_asking_one_question_in_other_words_form_one_group_and_another_question_another(
    policies, readers, dana
):
    people = [readers["erin"], readers["frank"], readers["gina"]]
    newborn = asked(people[:2], NEWBORN[:2], policies)
    newborn += asked(people[2:], NEWBORN[2:], policies, embedded=False)  # embedded when listed
    fridays = asked(people, FRIDAYS, policies, outcome=Answer.Outcome.WHERE_TO_LOOK)
    asked(people, ["When are salary bands reviewed?"] * 3, policies, outcome=Answer.Outcome.ANSWERED)  # no miss

    groups = misses_for(user=dana, collection=policies)
    assert [(g.size, g.askers) for g in groups] == [(3, 3), (3, 3)]
    by_question = {frozenset(g.examples): g for g in groups}
    newborn_group, fridays_group = by_question[frozenset(NEWBORN)], by_question[frozenset(FRIDAYS)]
    assert set(newborn_group.response_ids) == {str(a.response_id) for a in newborn}
    assert set(fridays_group.response_ids) == {str(a.response_id) for a in fridays}
    assert newborn_group.question in NEWBORN and newborn_group.key == newborn_group.response_ids[0]
    assert newborn_group.reasons == {"not_found": 3, "where_to_look": 0, "thumbs_down": 0, "reasked": 0, "marked": 0}
    assert fridays_group.reasons["where_to_look"] == 3
    assert newborn_group.first_asked == newborn[0].created_at and newborn_group.last_asked == newborn[2].created_at
    assert newborn_group.collection == policies and newborn_group.marks == []
    assert misses_for(user=dana) == groups  # all the collections dana curates: only hr has misses


def test_only_the_most_recent_misses_are_grouped(policies, readers, dana, settings, monkeypatch):
    monkeypatch.setattr(misses, "MOST_MISSES", 2)  # clustering's memory is quadratic in the misses
    settings.CAIRN_MISS_MIN_ASKERS = 1
    answers = asked([readers["erin"], readers["frank"], readers["gina"]], NEWBORN, policies)
    (group,) = misses_for(user=dana, collection=policies)
    assert set(group.response_ids) == {str(a.response_id) for a in answers[1:]}


def test_a_group_of_two_askers_is_shown_to_no_one_the_superuser_included(policies, readers, dana, root):
    erin, frank = readers["erin"], readers["frank"]
    asked([erin, frank, frank], NEWBORN, policies)  # three answers, two people
    assert misses_for(user=dana) == [] and misses_for(user=root) == []
    for curator in (dana, root):
        assert "newborn" not in page(signed_in(curator))


def test_one_asker_who_marked_a_sentence_is_shown(policies, readers, dana, settings):
    erin = readers["erin"]
    answer = ask(erin, NEWBORN[0])
    assert answer.outcome != Answer.Outcome.ANSWERED
    evidence = next(e for e in answer.evidence.all() if e.chunk and e.chunk.document.title == "Parental leave")
    assert PAID_LEAVE in chunk_sentences(evidence.chunk)
    mark_record(user=erin, response_id=answer.response_id, question=answer.question, evidence_n=evidence.n,
                chunk=evidence.chunk, sentence=PAID_LEAVE)  # fmt: skip

    [group] = misses_for(user=dana, collection=policies)
    assert (group.size, group.askers, group.reasons["marked"]) == (1, 1, 1)
    assert [(m.sentence, m.chunk_id) for m in group.marks] == [(PAID_LEAVE, evidence.chunk_id)]
    shown = page(signed_in(dana), f"{UNANSWERED}?collection={policies.id}")
    assert PAID_LEAVE in shown and "Confirm: this answers it" in shown
    # "None of these sources" names no sentence: that asker alone stays unseen.
    mark_record(user=erin, response_id=answer.response_id, question=answer.question)
    assert misses_for(user=dana) == []


def test_a_curators_own_mark_shows_no_group_and_another_readers_mark_shows_only_what_they_asked(
    policies, readers, dana, settings
):
    """Below CAIRN_MISS_MIN_ASKERS a mark shows a group: dana, who curates hr and reads it, used to
    ask the group's question herself and mark her own answer to read what everyone in it asked."""
    settings.CAIRN_MISS_MIN_ASKERS = 4
    asked([readers["erin"]], NEWBORN[:1], policies)

    def ask_and_mark(user, question):
        api = client_for(user)
        answer = api.post("/api/v1/query", {"question": question, "mode": "fast", "collections": ["hr"]},
                          format="json").json()  # fmt: skip
        leave = next(e for e in answer["evidence"] if PAID_LEAVE in [s["text"] for s in e["strips"]])
        marked = api.post(f"/api/v1/answers/{answer['response_id']}/mark", {"n": leave["n"], "sentence": PAID_LEAVE},
                          format="json")  # fmt: skip
        assert marked.status_code == 200, marked.content

    ask_and_mark(dana, NEWBORN[2])
    curator = signed_in(dana)
    shown = page(curator)
    assert NEWBORN[0] not in shown and NEWBORN[2] not in shown and misses_for(user=dana) == []
    ask_and_mark(readers["gina"], NEWBORN[1])  # three askers now, one short of the four needed
    shown = page(curator)
    assert NEWBORN[1] in shown and PAID_LEAVE in shown
    assert NEWBORN[0] not in shown and NEWBORN[2] not in shown  # not what the others asked
    [group] = misses_for(user=dana, collection=policies)
    assert (group.size, group.askers, group.question) == (1, 1, NEWBORN[1])
    # To another curator dana is a reader who marked: both marked answers, still not erin's question.
    [group] = misses_for(user=User.objects.create_superuser("root2"))
    assert sorted(group.examples) == sorted(NEWBORN[1:])


def test_a_thumbs_down_and_a_question_asked_again_at_once_are_misses(policies, readers, dana, settings):
    erin, frank, gina = readers["erin"], readers["frank"], readers["gina"]
    thumbed = ask(erin, FRIDAYS[2])  # answered
    feedback_submit(user=erin, response_id=thumbed.response_id, thumbs=0)
    first, again = asked([frank, frank], ["can I work from home on a friday", "can I work from home on fridays"],
                         policies, outcome=Answer.Outcome.ANSWERED)  # fmt: skip
    liked = asked([gina], ["may I work from home on friday"], policies, outcome=Answer.Outcome.ANSWERED)[0]
    feedback_submit(user=gina, response_id=ask(gina, "When are salary bands reviewed?").response_id, thumbs=0)

    settings.CAIRN_MISS_MIN_ASKERS = 2
    [group] = [g for g in misses_for(user=dana) if FRIDAYS[2] in g.examples]
    assert set(group.response_ids) == {str(thumbed.response_id), str(first.response_id)}
    assert (group.reasons["thumbs_down"], group.reasons["reasked"]) == (1, 1)
    assert str(again.response_id) not in group.response_ids and str(liked.response_id) not in group.response_ids
    settings.CAIRN_MISS_REASKED_MINUTES = 0  # asked again, but not soon enough
    assert misses_for(user=dana, collection=policies) == []


# --- Who sees it, who acts on it ------------------------------------------------------------------


def test_the_curator_of_another_collection_sees_none_of_it_and_cannot_act_on_it(policies, readers, dana, bob):
    people = [readers["erin"], readers["frank"], readers["gina"]]
    answers = asked(people, NEWBORN, policies)
    leave = Chunk.objects.get(document__title="Parental leave")
    mark = mark_record(user=people[0], response_id=answers[0].response_id, question=NEWBORN[0], evidence_n=1,
                       chunk=leave, sentence=PAID_LEAVE)  # fmt: skip
    [group] = misses_for(user=dana, collection=policies)
    assert misses_for(user=bob) == [] and misses_for(user=bob, collection=policies) == []

    outsider = signed_in(bob)
    assert "newborn" not in page(outsider) and PAID_LEAVE not in page(outsider)
    assert outsider.get(f"{UNANSWERED}?collection={policies.id}").status_code == 404
    assert outsider.get(f"{UNANSWERED}{policies.id}/{group.key}/").status_code == 404
    for decision, data in [("confirm", {"mark": mark.id}), ("pick", {"chunk": leave.id, "sentence": PAID_LEAVE}),
                           ("write", {"answer": "Sixteen weeks of paid leave."}), ("gap", {"note": "write it"})]:  # fmt: skip
        assert decide(outsider, group, decision, data).status_code == 404, decision
    assert not Lesson.objects.exists() and not Gap.objects.exists()
    # Readers and the outsider find nothing in the admin of lessons and marks either.
    assert "newborn" not in page(outsider, "/admin/writeback/mark/")
    assert signed_in(people[0]).get(UNANSWERED).status_code == 302  # not staff: the sign-in page


# --- The decisions --------------------------------------------------------------------------------


def test_confirming_a_mark_creates_an_audited_lesson_that_a_fourth_asker_is_answered_with(
    policies, readers, dana, root
):
    people = [readers["erin"], readers["frank"], readers["gina"]]
    answers = [ask(user, question) for user, question in zip(people, NEWBORN, strict=True)]
    assert all(a.outcome != Answer.Outcome.ANSWERED and PAID_LEAVE not in a.text for a in answers)
    evidence = next(e for e in answers[2].evidence.all() if e.chunk and e.chunk.document.title == "Parental leave")
    mark = mark_record(user=people[2], response_id=answers[2].response_id, question=answers[2].question,
                       evidence_n=evidence.n, chunk=evidence.chunk, sentence=PAID_LEAVE)  # fmt: skip
    curator = signed_in(dana)
    shown = page(curator)
    assert "Unanswered questions" in page(curator, "/admin/")  # linked from the index
    assert all(q in shown for q in NEWBORN) and PAID_LEAVE in shown
    [group] = misses_for(user=dana, collection=policies)
    assert group.size == 3 and group.reasons["not_found"] + group.reasons["where_to_look"] == 3

    assert curator.post(f"{UNANSWERED}{policies.id}/{group.key}/confirm/", {"mark": mark.id}).status_code == 403
    done = decide(curator, group, "confirm", {"mark": mark.id})
    assert done.status_code == 302 and "Lesson" in message(done)
    lesson = Lesson.objects.get()
    assert (lesson.origin, lesson.question, lesson.sentence, lesson.chunk_id, lesson.collection) == (
        Lesson.Origin.MARK, mark.question, PAID_LEAVE, evidence.chunk_id, policies,
    )  # fmt: skip
    assert set(lesson.response_ids) == {str(a.response_id) for a in answers}
    event = AuditEvent.objects.get(action="lesson.create", object_id=str(lesson.id))
    assert event.actor == dana
    assert misses_for(user=dana) == [] and group.key not in page(curator)  # settled

    later = ask(readers["hank"], NEWBORN_LATER)
    assert later.outcome == Answer.Outcome.ANSWERED and PAID_LEAVE in later.text
    cited = next(e for e in later.evidence.all() if e.chunk_id == evidence.chunk_id)
    assert f"{PAID_LEAVE} [{cited.n}]" in later.text and cited.cited
    # The lesson's later askers, as the curator sees them.
    assert "1 (1 answered)" in page(curator, "/admin/writeback/lesson/")
    assert lesson.question in page(signed_in(root), "/admin/writeback/lesson/")


def test_picking_the_sentence_from_a_search_creates_a_lesson(policies, readers, dana):
    answers = asked([readers["erin"], readers["frank"], readers["gina"]], FRIDAYS, policies)
    [group] = misses_for(user=dana, collection=policies)
    curator = signed_in(dana)
    search = page(curator, f"{UNANSWERED}{policies.id}/{group.key}/")
    assert f'value="{group.question}"' in search  # the search box, prefilled
    remote = Chunk.objects.get(document__title="Working from home")
    assert TWO_DAYS in search and "this answers it" in search
    elsewhere = curator.get(f"{UNANSWERED}{policies.id}/{group.key}/?q=parental+leave")
    assert PAID_LEAVE in elsewhere.content.decode()
    passages = elsewhere.context["passages"]
    assert passages and {p.chunk.document.collection_id for p in passages} == {policies.id}  # hr's alone

    refused = decide(curator, group, "pick", {"chunk": remote.id, "sentence": "Staff may never work from home."})
    assert "holds no such sentence" in message(refused) and not Lesson.objects.exists()
    done = decide(curator, group, "pick", {"chunk": remote.id, "sentence": TWO_DAYS})
    assert done.status_code == 302
    lesson = Lesson.objects.get()
    assert (lesson.origin, lesson.question, lesson.sentence, lesson.chunk_id) == (
        Lesson.Origin.PICKED, group.question, TWO_DAYS, remote.id,
    )  # fmt: skip
    assert set(lesson.response_ids) == {str(a.response_id) for a in answers}
    assert AuditEvent.objects.filter(action="lesson.create", object_id=str(lesson.id), actor=dana).exists()
    assert misses_for(user=dana) == []


def test_a_passage_outside_the_collection_cannot_be_picked(policies, readers, dana):
    asked([readers["erin"], readers["frank"], readers["gina"]], FRIDAYS, policies)
    [group] = misses_for(user=dana, collection=policies)
    demo = Chunk.objects.filter(document__collection__slug="demo").first()  # dana curates demo too
    refused = decide(signed_in(dana), group, "pick", {"chunk": demo.id, "sentence": chunk_sentences(demo)[0]})
    assert "no such passage in 'hr'" in message(refused) and not Lesson.objects.exists()


def test_writing_the_answer_publishes_a_write_back_document_and_a_lesson(policies, readers, dana, settings):
    answers = asked([readers["erin"], readers["frank"], readers["gina"]], GYM, policies)
    [group] = misses_for(user=dana, collection=policies)
    curator = signed_in(dana)
    written = "The office gym on the second floor is open to all staff from seven to nine. Bring a towel."
    refused = decide(curator, group, "write", {"answer": written})  # hr is small: the generated-share cap
    assert "cap" in message(refused).lower() and not Lesson.objects.exists()
    settings.CAIRN_WRITEBACK_ALPHA_MAX = 1.0
    done = decide(curator, group, "write", {"answer": written})
    assert done.status_code == 302, message(done)
    lesson = Lesson.objects.get()
    writeback = lesson.writeback
    assert writeback.status == WriteBack.Status.PUBLISHED and writeback.collection == policies
    assert writeback.document.status == Document.Status.ACTIVE and writeback.document.collection == policies
    assert (lesson.origin, lesson.question, lesson.document) == (Lesson.Origin.WRITTEN, group.question,
                                                                 writeback.document)  # fmt: skip
    assert lesson.sentence == chunk_sentences(lesson.chunk)[0] and written.startswith(lesson.sentence)
    assert set(lesson.response_ids) == {str(a.response_id) for a in answers}
    assert AuditEvent.objects.filter(action="lesson.create", object_id=str(lesson.id), actor=dana).exists()
    assert misses_for(user=dana) == []


def test_not_covered_records_a_gap_that_settles_the_group_until_it_is_closed(policies, readers, dana):
    answers = asked([readers["erin"], readers["frank"], readers["gina"]], GYM, policies)
    [group] = misses_for(user=dana, collection=policies)
    curator = signed_in(dana)
    done = decide(curator, group, "gap", {"note": "Facilities should write the gym page."})
    assert done.status_code == 302 and "Gap" in message(done)
    gap = Gap.objects.get()
    assert (gap.question, gap.note, gap.collection, gap.closed_at) == (
        group.question, "Facilities should write the gym page.", policies, None,
    )  # fmt: skip
    assert set(gap.response_ids) == {str(a.response_id) for a in answers}
    assert AuditEvent.objects.filter(action="gap.create", object_id=str(gap.id), actor=dana).exists()
    assert misses_for(user=dana) == []
    # Settled answers stay settled; a fourth asker alone is no group.
    asked([readers["hank"]], ["is there a gym at the office"], policies)
    assert misses_for(user=dana) == []

    gaps = "/admin/writeback/gap/"
    assert group.question in page(curator, gaps)
    post(curator, gaps, {"action": "close", "_selected_action": [gap.id]})
    gap.refresh_from_db()
    assert gap.closed_at is not None
    assert AuditEvent.objects.filter(action="gap.close", object_id=str(gap.id), actor=dana).exists()


def test_a_decision_reports_the_services_refusal(policies, readers, dana):
    asked([readers["erin"], readers["frank"], readers["gina"]], GYM, policies)
    [group] = misses_for(user=dana, collection=policies)
    refused = decide(signed_in(dana), group, "write", {"answer": "   "})
    assert refused.status_code == 302 and "answer" in message(refused) and not Lesson.objects.exists()


def test_a_lesson_is_retracted_with_a_reason_and_one_whose_sentence_is_gone_is_listed_to_recheck(
    policies, readers, dana
):
    remote = Chunk.objects.get(document__title="Working from home")
    lesson = lesson_create(actor=dana, question=FRIDAYS[0], chunk=remote, sentence=TWO_DAYS,
                           origin=Lesson.Origin.PICKED)  # fmt: skip
    curator = signed_in(dana)
    lessons = "/admin/writeback/lesson/"
    asked_reason = post(curator, lessons, {"action": "retract", "_selected_action": [lesson.id], "apply": "Retract"})
    assert "Say why" in asked_reason.content.decode()
    post(curator, lessons, {"action": "retract", "_selected_action": [lesson.id], "apply": "Retract",
                            "reason": "Fridays are office days now."})  # fmt: skip
    lesson.refresh_from_db()
    assert lesson.status == Lesson.Status.RETRACTED
    assert AuditEvent.objects.get(action="lesson.retract", object_id=str(lesson.id)).summary == (
        "Fridays are office days now."
    )

    # The document changed under another lesson: the list re-checks it first, and shows it.
    other = lesson_create(actor=dana, question=NEWBORN[0], chunk=Chunk.objects.get(document__title="Parental leave"),
                          sentence=PAID_LEAVE, origin=Lesson.Origin.PICKED)  # fmt: skip
    documents_ingest(collection=policies, documents=[ExtractedDocument(
        "Parental leave", "Parents may take twenty weeks of paid leave.", "hr/leave.md", "text/markdown")])  # fmt: skip
    shown = page(curator)
    other.refresh_from_db()
    assert other.status == Lesson.Status.RECHECK and "Lessons to re-check" in shown and PAID_LEAVE[:60] in shown


def test_the_marks_admin_shows_marks_and_changes_nothing(policies, readers, dana):
    erin = readers["erin"]
    [answer] = asked([erin], NEWBORN[:1], policies)
    leave = Chunk.objects.get(document__title="Parental leave")
    mark = mark_record(user=erin, response_id=answer.response_id, question=NEWBORN[0], evidence_n=1, chunk=leave,
                       sentence=PAID_LEAVE)  # fmt: skip
    curator = signed_in(dana)
    assert PAID_LEAVE[:80] in page(curator, "/admin/writeback/mark/")
    change = f"/admin/writeback/mark/{mark.id}/change/"
    assert PAID_LEAVE in page(curator, change)
    post(curator, change, {"sentence": "Something else."})
    assert post(curator, f"/admin/writeback/mark/{mark.id}/delete/", {"post": "yes"}).status_code == 403
    mark.refresh_from_db()
    assert mark.sentence == PAID_LEAVE
    assert Mark.objects.count() == 1
