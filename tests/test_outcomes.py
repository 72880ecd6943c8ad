"""An answer's outcome (answered, where to look, not found) and confidence, from the generation
through the record, the write-back proposal, the API and its schema, "my questions", and the
migration that gave existing answers theirs."""

import importlib

import pytest
from django.apps import apps
from django.test import Client

from pipeline.generators import ANSWERED, NOT_FOUND_OUTCOME, WHERE_TO_LOOK, WHERE_TO_LOOK_OUTCOME, Generation
from pipeline.models import Answer
from pipeline.services import query_state
from pipeline.stages import STAGES, generate, pipeline_events
from tests.conftest import client_for
from writeback.models import WriteBackAsking

pytestmark = pytest.mark.django_db
QUESTION = "who got the first nobel prize in physics"


def test_the_outcomes_stored_are_the_generators_own():
    assert set(Answer.Outcome.values) == {ANSWERED, WHERE_TO_LOOK_OUTCOME, NOT_FOUND_OUTCOME}


def test_an_answer_carries_its_outcome_and_confidence_and_found_means_answered(charlie):
    body = client_for(charlie).post("/api/v1/query", {"question": QUESTION, "mode": "fast"}, format="json").json()
    assert body["outcome"] in Answer.Outcome.values and body["found"] == (body["outcome"] == ANSWERED)
    assert body["confidence"] is None or 0.0 <= body["confidence"] <= 1.0
    answer = Answer.objects.get(response_id=body["response_id"])
    assert (answer.outcome, answer.confidence, answer.found) == (body["outcome"], body["confidence"], body["found"])


def test_a_not_found_answer_says_so_and_judged_nothing(charlie):
    body = client_for(charlie).post("/api/v1/query", {"question": "the of and"}, format="json").json()
    assert body["outcome"] == NOT_FOUND_OUTCOME and body["confidence"] is None and body["found"] is False
    assert Answer.objects.get(response_id=body["response_id"]).outcome == NOT_FOUND_OUTCOME


def where_to_look(state):
    """The real answer's passages offered as where to look: no claim, so nothing to propose."""
    real = state.generation
    state.generation = Generation(
        f"{WHERE_TO_LOOK} {real.text}", real.cited, real.generator, found=False, outcome=WHERE_TO_LOOK_OUTCOME,
        confidence=0.31,
    )  # fmt: skip


def answered(state):
    real = state.generation
    state.generation = Generation(real.text, real.cited, real.generator, confidence=0.93)


@pytest.mark.parametrize(("stated", "outcome", "proposed"), [(where_to_look, "where_to_look", False),
                                                             (answered, "answered", True)])  # fmt: skip
def test_only_an_answered_outcome_is_proposed_as_a_write_back(charlie, settings, stated, outcome, proposed):
    settings.CAIRN_WRITEBACK = True
    state = query_state(user=charlie, question=QUESTION, top_k=5, mode="fast")
    at = STAGES.index(generate) + 1
    events = list(pipeline_events(state, (*STAGES[:at], stated, *STAGES[at:])))
    reported = next(p.data for p in events if p.kind == "stage" and p.data["stage"] == "generate")
    assert reported["outcome"] in Answer.Outcome.values and reported["found"] == (reported["outcome"] == ANSWERED)
    assert state.generation.cited  # the passages it offers are cited either way
    answer = Answer.objects.get(response_id=state.record.response_id)
    assert (answer.outcome, answer.found, answer.confidence) == (outcome, proposed, 0.93 if proposed else 0.31)
    assert WriteBackAsking.objects.filter(response_id=answer.response_id).exists() == proposed
    body = client_for(charlie).get(f"/api/v1/answers/{answer.response_id}").json()
    assert (body["outcome"], body["found"], body["confidence"]) == (outcome, proposed, answer.confidence)


def test_my_questions_say_answered_where_to_look_or_not_found(charlie):
    for question, outcome in [("q1", "answered"), ("q2", "where_to_look"), ("q3", "not_found")]:
        Answer.objects.create(user=charlie, question=question, text="…", found=outcome == ANSWERED, outcome=outcome)
    client = Client()
    client.force_login(charlie)
    page = " ".join(client.get("/history").content.decode().split())
    assert all(f"· {said}" in page for said in ("answered", "where to look", "not found"))


def test_the_migration_gives_existing_answers_their_outcome():
    made = {
        "found": Answer.objects.create(question="a", text="Röntgen [1]", found=True),
        "not stated": Answer.objects.create(
            question="b", text="No passage states the answer; these look related: X [1]", found=False
        ),
        "disputed": Answer.objects.create(question="c", text="Sources disagree: X [1] Y [2]", found=False),
        "not found": Answer.objects.create(question="d", text="Not found in the knowledge base: …", found=False),
    }
    importlib.import_module("pipeline.migrations.0008_answer_outcome").outcomes_backfill(apps, None)
    outcomes = {name: Answer.objects.get(pk=a.pk).outcome for name, a in made.items()}
    assert outcomes == {"found": "answered", "not stated": "where_to_look", "disputed": "where_to_look",
                        "not found": "not_found"}  # fmt: skip


def test_the_schema_documents_outcome_and_confidence():
    schema = Client().get("/api/schema/", {"format": "json"}).json()
    answer = schema["components"]["schemas"]["Answer"]
    properties = answer["properties"]
    assert "where_to_look" in properties["outcome"]["description"]
    assert properties["confidence"]["nullable"] and "calibrated probability" in properties["confidence"]["description"]
    assert {"outcome", "confidence", "found"} <= set(answer["required"])
    enum = schema["components"]["schemas"][properties["outcome"]["allOf"][0]["$ref"].rsplit("/", 1)[1]]["enum"]
    assert enum == ["answered", "where_to_look", "not_found"]


def test_curators_filter_answers_by_outcome_in_the_admin(bob):
    client = Client()
    client.force_login(bob)
    page = client.get("/admin/pipeline/answer/", {"outcome__exact": "where_to_look"})
    assert page.status_code == 200 and "By outcome" in page.content.decode()
