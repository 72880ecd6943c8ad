"""Conversations: a follow-up answered as the standalone question it means, verified on its own
(an earlier answer is never evidence), its asker's alone, deleted with its turns. Real database,
real MiniLM, the real pipeline through the API; the LLM's rewrite against llama.cpp's SmolLM2."""

import uuid

import pytest

from corpus.lifecycle import document_retract
from corpus.models import AuditEvent, Document
from pipeline.conversations import Turn, follows_on, rewrite_checked, rules_rewrite, standalone, turns_within
from pipeline.models import Answer, Conversation, Evidence
from tests.conftest import client_for
from tests.test_llm import asked, completions_served, on
from writeback.models import WriteBack
from writeback.selectors import writeback_collection_ids

pytestmark = pytest.mark.django_db

ROTATE = Turn(asked="How can I rotate Apache's access log?", question="How can I rotate Apache's access log?")


@pytest.mark.parametrize(
    "question",
    ["and keep only the last 5 files?", "what about Windows?", "can I switch it on mid-transaction?",
     "which names are allowed then?", "Same for brotli"],
)  # fmt: skip
def test_a_question_that_opens_on_or_points_back_at_the_one_before_follows_on(question):
    assert follows_on(question, ROTATE)


def test_a_long_question_with_nothing_pointing_back_stands_alone_and_a_first_question_always_does():
    assert not follows_on("How do I configure name-based virtual hosts on one IP address in Apache?", ROTATE)
    assert not follows_on("and on Windows?", None)


def test_a_short_question_without_cues_follows_on_only_when_it_is_on_the_same_topic():
    from corpus.embedder import get_embedder

    embed = lambda text: get_embedder().embed([text])[0]  # noqa: E731
    before = Turn(ROTATE.asked, ROTATE.question, embedding=embed(ROTATE.question))
    assert follows_on("Log rotation on Windows?", before, embed)
    assert not follows_on("Cafeteria opening hours?", before, embed)


def test_the_rules_keep_the_follow_ups_words_first_and_carry_the_questions_back_to_one_that_stood_alone():
    second = Turn("and keep only the last 5 files?", "Keep only the last 5 files? (…)", stood_alone=False)
    assert rules_rewrite("and keep only the last 5 files?", [ROTATE]) == (
        "Keep only the last 5 files? (How can I rotate Apache's access log?)"
    )
    assert rules_rewrite("any gotchas on Windows?", [ROTATE, second]) == (
        "Any gotchas on Windows? (How can I rotate Apache's access log? and keep only the last 5 files?)"
    )
    assert standalone("How do I enable gzip compression for HTML and CSS responses in Apache?", [ROTATE]).by == ""


def test_an_llms_rewrite_is_kept_only_when_it_is_one_question_about_the_follow_up():
    follow_up = "and keep only the last 5 files?"
    assert rewrite_checked(follow_up, "How do I keep only the last 5 rotated Apache log files?", [ROTATE])
    for written in [
        "You can use piped logs with rotatelogs [1].",  # an answer, not a question
        "How can I rotate Apache's access log?",  # the question before
        "What is the capital of France?",  # about something else
        "How do I keep 5 files?\nThe answer is rotatelogs -n 5.",  # more than the question
        "",
    ]:
        assert rewrite_checked(follow_up, written, [ROTATE]) is None, written


def ask(user, question: str, **payload) -> dict:
    response = client_for(user).post(
        "/api/v1/query", {"question": question, "mode": "fast", "collections": ["finance"], **payload}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()


def test_a_follow_up_is_answered_as_the_standalone_question_it_means_and_shown_as_such(alice, finance):
    first = ask(alice, "Which approval do business class flights require?")
    assert first["conversation_id"] and first["asked"] == "" and first["rewritten_by"] == ""
    assert "chief financial officer" in first["answer"]
    follow_up = ask(alice, "and what about the hotel receipts?", conversation_id=first["conversation_id"])
    assert follow_up["conversation_id"] == first["conversation_id"]
    assert follow_up["asked"] == "and what about the hotel receipts?"
    assert follow_up["rewritten_by"] == "rules"
    assert follow_up["question"].startswith("What about the hotel receipts? (Which approval")
    assert "thirty days" in follow_up["answer"]
    shown = client_for(alice).get(f"/api/v1/conversations/{first['conversation_id']}").json()
    assert [t["response_id"] for t in shown["turns"]] == [first["response_id"], follow_up["response_id"]]
    assert [c["conversation_id"] for c in client_for(alice).get("/api/v1/conversations").json()["results"]] == [
        first["conversation_id"]
    ]


def test_an_earlier_answer_is_never_evidence_for_a_follow_up(alice, finance):
    """The first answer states the per diem from the policy; once the policy is retracted, the
    follow-up that asks for it again finds no verified evidence, though the answer before it
    holds it: no answer of a conversation cites anything but a corpus passage."""
    first = ask(alice, "How much per diem may employees claim for overnight business travel?")
    assert "85 euros" in first["answer"]
    document_retract(Document.objects.get(collection=finance), actor=None, reason="superseded")
    again = ask(alice, "and how much was that again, the per diem?", conversation_id=first["conversation_id"])
    assert again["rewritten_by"] == "rules"
    assert again["outcome"] == "not_found" and "85 euros" not in again["answer"]
    turns = Answer.objects.filter(conversation__conversation_id=first["conversation_id"])
    cited = Evidence.objects.filter(answer__in=turns, cited=True)
    assert cited.exists() and all(e.origin == "corpus" and e.chunk_id is not None for e in cited)
    assert not Evidence.objects.filter(answer__in=turns, text__contains=first["answer"]).exists()


def test_a_conversation_is_its_askers_alone_and_deleting_it_deletes_its_turns(alice, bob, finance):
    first = ask(alice, "Which approval do business class flights require?")
    conversation = first["conversation_id"]
    ask(alice, "and hotel receipts?", conversation_id=conversation)
    bob_asks = client_for(bob).post("/api/v1/query", {"question": "and the per diem?", "conversation_id": conversation,
                                                      "mode": "fast"}, format="json")  # fmt: skip
    assert bob_asks.status_code == 404 and "conversation_id" in bob_asks.json()
    assert client_for(bob).get(f"/api/v1/conversations/{conversation}").status_code == 404
    assert client_for(bob).delete(f"/api/v1/conversations/{conversation}").status_code == 404
    assert client_for(bob).get("/api/v1/conversations").json()["results"] == []
    assert client_for(alice).post("/api/v1/query", {"question": "and?", "conversation_id": str(uuid.uuid4())},
                                  format="json").status_code == 404  # fmt: skip
    assert Answer.objects.filter(conversation__conversation_id=conversation).count() == 2
    assert client_for(alice).delete(f"/api/v1/conversations/{conversation}").status_code == 204
    assert not Conversation.objects.filter(conversation_id=conversation).exists()
    assert not Answer.objects.filter(response_id=first["response_id"]).exists()
    assert not Evidence.objects.filter(answer__response_id=first["response_id"]).exists()
    deleted = AuditEvent.objects.get(action="conversation.delete")
    assert deleted.actor == alice and deleted.before == {"conversation_id": conversation, "turns": 2}
    assert client_for(alice).get(f"/api/v1/conversations/{conversation}").status_code == 404


def test_a_bad_conversation_id_is_a_400_naming_the_field(alice):
    response = client_for(alice).post("/api/v1/query", {"question": "and?", "conversation_id": "not-a-uuid"},
                                      format="json")  # fmt: skip
    assert response.status_code == 400 and "conversation_id" in response.json()


def test_with_an_llm_answering_it_rewrites_the_follow_up_and_what_is_no_question_gives_way_to_the_rules(
    alice, finance, smollm2
):
    """SmolLM2 is asked to rewrite the follow-up (one completion more than the answer takes); a
    135M model answers instead of rewriting, which the check refuses, and the rules stand in."""
    with on(smollm2):
        first = asked(alice, "Which approval do business class flights require?", collections=["finance"])
        served = completions_served(smollm2)
        follow_up = asked(alice, "and what about the hotel receipts?", collections=["finance"],
                          conversation_id=first["conversation_id"])  # fmt: skip
    assert completions_served(smollm2) - served >= 2  # the rewrite, then the answer
    assert follow_up["asked"] == "and what about the hotel receipts?"
    if follow_up["rewritten_by"] == "llm":
        assert rewrite_checked(follow_up["asked"], follow_up["question"], []) == follow_up["question"]
    else:
        assert follow_up["rewritten_by"] == "rules" and follow_up["question"].startswith(
            "What about the hotel receipts?"
        )


def test_a_follow_up_carries_no_question_of_a_collection_it_was_not_asked_within(hr, dana, bob):
    """dana asks in hr, then follows on within the public handbook, which bob curates too: the
    rewritten question used to carry hr's question into an answer bob reads."""
    from corpus.services import collection_get_or_create, documents_ingest
    from readers.extract import ExtractedDocument

    handbook, _ = collection_get_or_create(slug="handbook", public=True)
    documents_ingest(collection=handbook, documents=[ExtractedDocument(
        "Pay", "Pay for the support team is reviewed once a year, in the autumn, by the team lead.", "hb/pay.md",
        "text/markdown")])  # fmt: skip
    first = ask(dana, "When are the salary bands reviewed?", collections=["hr"])
    follow_up = ask(dana, "and for the support team?", collections=["handbook"],
                    conversation_id=first["conversation_id"])  # fmt: skip
    assert (follow_up["question"], follow_up["rewritten_by"]) == ("and for the support team?", "")
    assert "asked in other collections" in " ".join(follow_up["notes"])
    shown = client_for(bob).get(f"/api/v1/answers/{follow_up['response_id']}")
    assert shown.status_code == 200 and "salary" not in shown.content.decode().lower()
    # Asked within all dana reads, it follows on; its answer is hr's too, so bob, who curates the
    # handbook and not hr, does not read it.
    again = ask(dana, "When are the salary bands reviewed?", collections=["hr"])  # a new conversation
    anywhere = client_for(dana).post("/api/v1/query", {"question": "and for the support team?", "mode": "fast",
                                                       "conversation_id": again["conversation_id"]}, format="json").json()  # fmt: skip
    assert anywhere["rewritten_by"] == "rules" and "salary bands" in anywhere["question"]
    assert "hr" in set(Answer.objects.get(response_id=anywhere["response_id"]).collections.values_list("slug",
                                                                                                     flat=True))  # fmt: skip
    assert client_for(bob).get(f"/api/v1/answers/{anywhere['response_id']}").status_code == 404
    for writeback in WriteBack.objects.filter(response_id=anywhere["response_id"]):  # reviewed by hr's curators
        assert hr.id in writeback_collection_ids(writeback)


def test_only_the_latest_turns_within_the_collections_asked_are_carried():
    hr, handbook = frozenset([1]), frozenset([2])
    turns = [Turn("q1", "q1", collections=handbook), Turn("q2", "q2", collections=hr),
             Turn("q3", "q3", collections=handbook | frozenset([3])), Turn("q4", "q4")]  # fmt: skip
    assert [t.asked for t in turns_within(turns, {2, 3})] == ["q3", "q4"]  # not past hr's
    assert turns_within(turns[:2], {2}) == [] and turns_within(turns, {1, 2, 3}) == turns
