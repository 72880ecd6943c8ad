"""A reader marks where the answer was: a sentence of one of their answer's passages, or that none of
the sources answers it (POST /api/v1/answers/<id>/mark). Only the asker marks, only sentences the
answer showed, one mark per answer; a mark moves no reputation and changes nobody's answer.
Personas (tests/conftest.py): charlie asks, alice is another reader, bob curates the demo corpus."""

import uuid

import pytest
from drf_spectacular.generators import SchemaGenerator

from common.exceptions import CairnError
from pipeline.models import Answer, Evidence
from pipeline.services import answer_mark
from reputation.models import Feedback, Reputation
from tests.conftest import client_for
from writeback.models import Mark

pytestmark = pytest.mark.django_db
QUESTION = "who got the first nobel prize in physics"


def ask(user, question: str = QUESTION) -> dict:
    response = client_for(user).post("/api/v1/query", {"question": question, "mode": "fast"}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def markable(answer: dict) -> list[dict]:
    """The answer's evidence a reader may mark: from the corpus, with sentences."""
    passages = [e for e in answer["evidence"] if e["origin"] == "corpus" and e["chunk_id"] and e["strips"]]
    assert len(passages) >= 2, answer["evidence"]
    return passages


def mark(user, answer: dict, body: dict):
    return client_for(user).post(f"/api/v1/answers/{answer['response_id']}/mark", body, format="json")


def test_the_asker_marks_a_sentence_and_a_second_mark_replaces_the_first(charlie):
    answer = ask(charlie)
    assert answer["mark"] is None
    first, second = markable(answer)[:2]
    sentence = first["strips"][0]["text"]
    # As the page sends it, or with its spaces changed: the sentence the passage holds is kept.
    response = mark(charlie, answer, {"n": first["n"], "sentence": "  " + sentence.replace(" ", "\n ") + " "})
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["response_id"], body["n"], body["sentence"], body["none"]) == (
        answer["response_id"], first["n"], sentence, False
    )  # fmt: skip
    row = Mark.objects.get(response_id=answer["response_id"])
    assert (row.user, row.question, row.evidence_n, row.chunk_id, row.sentence) == (
        charlie, QUESTION, first["n"], first["chunk_id"], sentence
    )  # fmt: skip
    assert row.collection.slug == "demo"

    # Another passage's sentence (cited or not: every passage of the answer is a card) replaces it.
    other = second["strips"][-1]["text"]
    assert mark(charlie, answer, {"n": second["n"], "sentence": other}).status_code == 200
    row = Mark.objects.get(response_id=answer["response_id"])
    assert (row.evidence_n, row.chunk_id, row.sentence) == (second["n"], second["chunk_id"], other)
    detail = client_for(charlie).get(f"/api/v1/answers/{answer['response_id']}").json()
    assert (detail["mark"]["n"], detail["mark"]["sentence"], detail["mark"]["none"]) == (second["n"], other, False)


def test_none_of_the_sources_is_a_mark_too_and_replaces_a_sentence(charlie):
    answer = ask(charlie)
    first = markable(answer)[0]
    assert mark(charlie, answer, {"n": first["n"], "sentence": first["strips"][0]["text"]}).status_code == 200
    response = mark(charlie, answer, {"none": True})
    assert response.status_code == 200, response.content
    assert {k: response.json()[k] for k in ("n", "sentence", "none")} == {"n": None, "sentence": "", "none": True}
    row = Mark.objects.get(response_id=answer["response_id"])
    assert row.none_answers and row.evidence_n is None and row.chunk is None and row.collection is None
    assert client_for(charlie).get(f"/api/v1/answers/{answer['response_id']}").json()["mark"]["none"] is True


def test_a_sentence_that_evidence_did_not_show_is_not_found_naming_sentence(charlie):
    answer = ask(charlie)
    first, second = markable(answer)[:2]
    not_in_first = next(s["text"] for s in second["strips"] if s["text"] not in first["text"])
    for sentence in (not_in_first, "Marie Curie got the first Nobel prize in physics."):
        response = mark(charlie, answer, {"n": first["n"], "sentence": sentence})
        assert response.status_code == 404 and list(response.json()) == ["sentence"], response.content
    unknown = mark(charlie, answer, {"n": 99, "sentence": first["strips"][0]["text"]})
    assert unknown.status_code == 404 and list(unknown.json()) == ["n"]
    assert not Mark.objects.filter(response_id=answer["response_id"]).exists()


def test_a_passage_changed_since_the_answer_is_a_conflict_naming_n(charlie):
    answer = ask(charlie)
    first = markable(answer)[0]
    # A re-ingest replaces the chunk: the evidence keeps its text, and loses its chunk.
    Evidence.objects.filter(answer__response_id=answer["response_id"], n=first["n"]).update(chunk=None)
    response = mark(charlie, answer, {"n": first["n"], "sentence": first["strips"][0]["text"]})
    assert response.status_code == 409 and "changed" in response.json()["n"][0], response.content
    assert not Mark.objects.exists()


def test_only_the_asker_marks_an_answer_a_curator_and_another_reader_find_none(charlie, alice, bob):
    answer = ask(charlie)
    first = markable(answer)[0]
    body = {"n": first["n"], "sentence": first["strips"][0]["text"]}
    assert client_for(bob).get(f"/api/v1/answers/{answer['response_id']}").status_code == 200  # bob curates it
    for someone in (alice, bob):
        for attempt in (body, {"none": True}):
            response = mark(someone, answer, attempt)
            assert response.status_code == 404 and list(response.json()) == ["response_id"], response.content
    unknown = mark(charlie, {"response_id": str(uuid.uuid4())}, body)
    assert unknown.status_code == 404 and unknown.json() == mark(alice, answer, body).json()
    assert not Mark.objects.exists()

    # What a curator reading the answer sees: the asker's mark, once there is one.
    assert mark(charlie, answer, body).status_code == 200
    assert (
        client_for(bob).get(f"/api/v1/answers/{answer['response_id']}").json()["mark"]["sentence"] == body["sentence"]
    )


def test_bad_bodies_are_400s_naming_the_field_never_500s(charlie):
    answer = ask(charlie)
    first = markable(answer)[0]
    sentence = first["strips"][0]["text"]
    bodies = [
        ({"sentence": sentence}, "n"),  # which passage?
        ({"n": None, "sentence": sentence}, "n"),
        ({"none": True, "sentence": sentence}, "sentence"),
        ({"none": True, "n": first["n"]}, "n"),
        ({"n": "two", "sentence": sentence}, "n"),
        ({"n": 1.5, "sentence": sentence}, "n"),
        ({"n": 0, "sentence": sentence}, "n"),
        ({"n": 10**30, "sentence": sentence}, "n"),
        ({"n": [1], "sentence": sentence}, "n"),
        ({"n": first["n"]}, "sentence"),
        ({"n": first["n"], "sentence": "   "}, "sentence"),
        ({"n": first["n"], "sentence": ["a", "list"]}, "sentence"),
        ({"n": first["n"], "sentence": "x" * 10_001}, "sentence"),
        ({"none": "perhaps"}, "none"),
        ({}, "sentence"),
    ]
    for body, field in bodies:
        response = mark(charlie, answer, body)
        assert response.status_code == 400 and field in response.json(), (body, response.content)
    assert not Mark.objects.exists()


def test_a_mark_moves_no_reputation_and_changes_no_other_readers_answer(charlie, alice):
    answer = ask(charlie)
    before = sorted(Reputation.objects.values_list("chunk_id", "alpha", "beta", "long_alpha", "long_beta", "fooled"))
    # The asker says a passage the answer did not quote is where the answer was.
    quoted = markable(answer)[-1]
    assert mark(charlie, answer, {"n": quoted["n"], "sentence": quoted["strips"][-1]["text"]}).status_code == 200
    assert mark(charlie, answer, {"n": quoted["n"], "sentence": quoted["strips"][0]["text"]}).status_code == 200
    assert Mark.objects.count() == 1
    after = sorted(Reputation.objects.values_list("chunk_id", "alpha", "beta", "long_alpha", "long_beta", "fooled"))
    assert after == before and not Feedback.objects.exists()
    again = ask(alice)
    assert again["answer"] == answer["answer"] and again["mark"] is None
    assert Answer.objects.get(response_id=answer["response_id"]).text == answer["answer"]


def test_the_service_refuses_anyone_but_the_asker_with_the_unknown_answers_error(charlie, bob):
    answer = ask(charlie)
    with pytest.raises(CairnError) as refused:
        answer_mark(user=bob, response_id=answer["response_id"], n=None, none=True)
    assert (refused.value.field, refused.value.status_code) == ("response_id", 404)
    recorded = answer_mark(user=charlie, response_id=answer["response_id"], n=None, none=True)
    assert recorded.user == charlie and recorded.none_answers


def test_the_schema_documents_the_mark_and_its_refusals():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    post = schema["paths"]["/api/v1/answers/{response_id}/mark"]["post"]
    assert {"200", "400", "404", "409"} <= set(post["responses"])
    assert set(schema["components"]["schemas"]["MarkInput"]["properties"]) == {"n", "sentence", "none"}
    assert "mark" in schema["components"]["schemas"]["Answer"]["properties"]
