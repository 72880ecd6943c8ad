"""The REST API end to end: authentication, roles, access control, and clear 400s."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from rest_framework.test import APIClient

from corpus import embedder
from corpus.embedder import get_embedder
from corpus.models import Chunk, Document
from pipeline.models import Answer
from tests.conftest import client_for
from tests.documents import write_pdf

pytestmark = pytest.mark.django_db
QUESTION = "who got the first nobel prize in physics"


def test_anonymous_requests_get_401_except_health_and_docs(monkeypatch):
    anonymous = APIClient()
    assert anonymous.post("/api/v1/query", {"question": QUESTION}, format="json").status_code == 401
    assert anonymous.get("/api/v1/documents").status_code == 401
    assert anonymous.get("/api/v1/chunks/1").status_code == 401
    get_embedder()  # loaded in this process (the session's ingest loaded it already)
    health = anonymous.get("/api/v1/health")
    assert health.status_code == 200
    assert health.json() == {"status": "ok", "database": "up", "vector_extension": "up", "embedder": "up"}
    monkeypatch.setattr(embedder, "_instance", None)  # a process that has not loaded it yet
    assert anonymous.get("/api/v1/health").json()["embedder"] == "loading"
    assert anonymous.get("/api/schema/").status_code == 200
    assert anonymous.get("/api/docs/").status_code == 200


def test_query_returns_a_cited_answer_with_its_evidence_and_records_it(charlie):
    response = client_for(charlie).post("/api/v1/query", {"question": QUESTION, "top_k": 5}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert "Wilhelm Conrad Röntgen" in body["answer"] and "[1]" in body["answer"]
    assert len(body["evidence"]) == 5
    first = body["evidence"][0]
    assert first["n"] == 1 and first["cited"] and first["title"] == "List of Nobel laureates in Physics"
    assert {"vector_distance", "text_rank", "fused_score", "chunk_id", "document_id", "bucket", "trust"} <= set(first)
    assert first["bucket"] == "VERIFIED" and first["origin"] == "corpus"
    assert body["citations"][0]["n"] == 1 and body["citations"][0]["chunk_id"] == first["chunk_id"]
    assert set(body["timings_ms"]) == {
        "rewrite",
        "embed_query",
        "retrieve",
        "rank",
        "verify",
        "correct",
        "refine",
        "recall",
        "generate",
        "total",
    }
    answer = Answer.objects.get(response_id=body["response_id"])
    assert answer.user == charlie and answer.text == body["answer"]
    assert [e.chunk_id for e in answer.evidence.all()] == [e["chunk_id"] for e in body["evidence"]]


def test_query_says_plainly_when_nothing_is_found(charlie):
    body = client_for(charlie).post("/api/v1/query", {"question": "the of and"}, format="json").json()
    assert body["answer"].startswith("Not found in the knowledge base") and body["citations"] == []


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "question"),
        ({"question": ""}, "question"),
        ({"question": "x" * 2001}, "question"),
        ({"question": QUESTION, "top_k": 0}, "top_k"),
        ({"question": QUESTION, "top_k": 51}, "top_k"),
        ({"question": QUESTION, "top_k": "many"}, "top_k"),
        ({"question": QUESTION, "collections": "demo"}, "collections"),
        ({"question": QUESTION, "collections": []}, "collections"),
        ({"question": QUESTION, "mode": "turbo"}, "mode"),
        ({"question": QUESTION, "generator": "gpt"}, "generator"),
        ({"question": QUESTION, "mode": "fast", "generator": "extractive"}, "generator"),
        ({"question": QUESTION, "mode": "fast", "generator": "ollama"}, "generator"),
    ],
)
def test_bad_query_input_gets_a_400_naming_the_field(charlie, payload, field):
    response = client_for(charlie).post("/api/v1/query", payload, format="json")
    assert response.status_code == 400
    assert field in response.json()


def test_malformed_json_is_a_400(charlie):
    response = client_for(charlie).post("/api/v1/query", "{not json", content_type="application/json")
    assert response.status_code == 400


def test_a_collection_the_reader_cannot_see_looks_unknown(charlie, finance):
    response = client_for(charlie).post(
        "/api/v1/query", {"question": QUESTION, "collections": ["finance"]}, format="json"
    )
    assert response.status_code == 404
    assert response.json() == {"collections": ["unknown collection(s): finance"]}
    response = client_for(charlie).post(
        "/api/v1/query", {"question": QUESTION, "collections": ["no-such-collection"]}, format="json"
    )
    assert response.status_code == 404 and response.json() == {
        "collections": ["unknown collection(s): no-such-collection"]
    }


def test_documents_and_chunks_are_visible_only_to_their_readers(alice, charlie, finance):
    document = Document.objects.get(collection=finance)
    chunk = Chunk.objects.get(document=document)
    assert client_for(alice).get(f"/api/v1/documents/{document.id}").json()["chunk_count"] == 1
    assert client_for(alice).get(f"/api/v1/chunks/{chunk.id}").json()["text"].startswith("Employees may claim")
    assert client_for(charlie).get(f"/api/v1/documents/{document.id}").status_code == 404
    assert client_for(charlie).get(f"/api/v1/chunks/{chunk.id}").status_code == 404
    listed = client_for(charlie).get("/api/v1/documents", {"collection": "finance"}).json()
    assert listed["count"] == 0
    assert client_for(alice).get("/api/v1/documents", {"collection": "finance"}).json()["count"] == 1
    assert client_for(charlie).get("/api/v1/documents").json()["count"] == 300


def test_a_curator_adds_a_document_as_json_and_can_replace_it(bob, charlie):
    client = client_for(bob)
    payload = {
        "collection": "demo",
        "title": "Cafeteria hours",
        "text": "The cafeteria opens at 7 am. It closes at 3 pm.",
    }
    created = client.post("/api/v1/documents", payload, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["documents"][0]["result"] == "added" and created.json()["documents"][0]["chunks"] == 1
    again = client.post("/api/v1/documents", payload, format="json")
    assert again.status_code == 200 and again.json()["unchanged"] == 1
    edited = client.post("/api/v1/documents", {**payload, "text": "The cafeteria opens at 8 am."}, format="json")
    assert edited.json()["updated"] == 1
    document = Document.objects.get(source="api:Cafeteria hours")
    assert [c.text for c in document.chunks.all()] == ["The cafeteria opens at 8 am."]
    answer = client_for(charlie).post("/api/v1/query", {"question": "When does the cafeteria open?"}, format="json")
    assert "8 am" in answer.json()["answer"]


def test_a_curator_uploads_a_pdf(bob, tmp_path):
    pdf = write_pdf(tmp_path / "safety.pdf", ["Fire drills happen twice a year."], title="Safety manual")
    upload = SimpleUploadedFile("safety.pdf", pdf.read_bytes(), content_type="application/pdf")
    response = client_for(bob).post("/api/v1/documents", {"collection": "demo", "file": upload}, format="multipart")
    assert response.status_code == 201, response.json()
    assert response.json()["documents"][0]["title"] == "Safety manual"
    assert Document.objects.get(source="upload:safety.pdf").mime_type == "application/pdf"


def test_a_broken_upload_is_a_400_naming_the_file(bob):
    upload = SimpleUploadedFile("broken.pdf", b"%PDF-1.4 nonsense", content_type="application/pdf")
    response = client_for(bob).post("/api/v1/documents", {"collection": "demo", "file": upload}, format="multipart")
    assert response.status_code == 400
    assert "broken.pdf: cannot read PDF" in response.json()["file"][0]
    unsupported = SimpleUploadedFile("image.png", b"\x89PNG", content_type="image/png")
    response = client_for(bob).post(
        "/api/v1/documents", {"collection": "demo", "file": unsupported}, format="multipart"
    )
    assert response.status_code == 400 and "unsupported file type" in response.json()["file"][0]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"title": "t", "text": "x"}, "collection"),
        ({"collection": "demo", "text": "Some text."}, "title"),
        ({"collection": "demo", "title": "Only a title"}, "text"),
        ({"collection": "demo", "title": "t", "text": "Some text.", "metadata": "not a dict"}, "metadata"),
    ],
)
def test_bad_document_input_gets_a_400_naming_the_field(bob, payload, field):
    response = client_for(bob).post("/api/v1/documents", payload, format="json")
    assert response.status_code == 400
    assert field in response.json()


def test_a_document_for_an_unknown_collection_is_not_found(bob):
    body = {"collection": "nowhere", "title": "t", "text": "Some text."}
    response = client_for(bob).post("/api/v1/documents", body, format="json")
    assert response.status_code == 404 and "nowhere" in response.json()["collection"][0]


def test_readers_cannot_add_documents(charlie):
    response = client_for(charlie).post(
        "/api/v1/documents", {"collection": "demo", "title": "t", "text": "x"}, format="json"
    )
    assert response.status_code == 403


@override_settings(CAIRN_MAX_UPLOAD_BYTES=1000)
def test_an_oversized_body_gets_a_413(bob):
    payload = {"collection": "demo", "title": "Big", "text": "word " * 1000}
    response = client_for(bob).post("/api/v1/documents", payload, format="json")
    assert response.status_code == 413
    assert "CAIRN_MAX_UPLOAD_BYTES" in response.json()["text"][0]
    assert not Document.objects.filter(title="Big").exists()


def test_session_login_works_for_the_ask_page(charlie):
    client = APIClient()
    assert client.get("/").status_code == 302  # to the login page
    client.force_login(charlie)
    assert client.get("/").status_code == 200
    assert client.post("/api/v1/query", {"question": QUESTION}, format="json").status_code == 200


def test_the_openapi_schema_generates_without_warnings():
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)
    assert "/api/v1/query" in out.getvalue() and "/api/v1/documents" in out.getvalue()


def test_nul_characters_get_a_400_in_fields_and_in_files(bob):
    payload = {"collection": "demo", "title": "Nul\u0000title", "text": "Text with a\u0000nul."}
    response = client_for(bob).post("/api/v1/documents", payload, format="json")
    assert response.status_code == 400 and set(response.json()) == {"title", "text"}
    # A NUL byte says "binary file": refused whole, not cleaned into text (tests/test_uploads.py).
    upload = SimpleUploadedFile("nul.txt", b"Text with a\x00nul.", content_type="text/plain")
    response = client_for(bob).post("/api/v1/documents", {"collection": "demo", "file": upload}, format="multipart")
    assert response.status_code == 400 and "nul.txt: the content holds NUL bytes" in response.json()["file"][0]
    assert not Document.objects.filter(source="upload:nul.txt").exists()


def test_nul_characters_in_metadata_are_dropped(bob):
    payload = {"collection": "demo", "title": "Meta", "text": "Some text.", "metadata": {"k\u0000": "v\u0000"}}
    response = client_for(bob).post("/api/v1/documents", payload, format="json")
    assert response.status_code == 201, response.content
    assert Document.objects.get(source="api:Meta").metadata == {"k": "v"}


def test_ready_says_what_it_waits_for_until_the_models_are_loaded(client, monkeypatch):
    from corpus import embedder
    from judges import verifiers

    # This process's models, loaded once; ready reads whether they are. (Loading a second set and
    # dropping it would leave OpenVINO's compiled models to be destroyed under a later test.)
    embedder.get_embedder()
    verifiers.get_relevance_model(), verifiers.get_entailment_model(), verifiers.get_answer_judge()
    response = client.get("/api/v1/ready")
    assert response.status_code == 200 and response.json() == {"ready": True, "waiting_for": []}
    monkeypatch.setattr(verifiers, "_instances", {})
    monkeypatch.setattr(embedder, "_instance", None)
    response = client.get("/api/v1/ready")
    assert response.status_code == 503
    assert response.json() == {"ready": False, "waiting_for": ["embedder", "verifiers"]}


def test_a_reader_removed_from_a_collection_keeps_their_questions_and_no_longer_reads_its_text(alice, finance):
    """alice asked in finance, then left the finance group: her old answer, its conversation and her
    history used to show finance's passages and the answer drawn from them."""
    from django.contrib.auth.models import Group
    from django.test import Client

    api = client_for(alice)
    asked = api.post("/api/v1/query", {"question": "How much per diem may employees claim for overnight travel?",
                                       "mode": "fast"}, format="json").json()  # fmt: skip
    assert "85 euros" in asked["answer"] and asked["citations"]
    kept = [e["n"] for e in asked["evidence"] if e["collection"] != "Finance"]  # the public demo's
    assert kept and len(kept) < len(asked["evidence"])
    alice.groups.remove(Group.objects.get(name="finance"))
    answer = api.get(f"/api/v1/answers/{asked['response_id']}")
    assert answer.status_code == 200
    body = answer.json()
    assert body["question"] == asked["question"] and "85 euros" not in answer.content.decode()
    assert body["answer"].startswith("Withheld") and body["citations"] == []
    assert [e["n"] for e in body["evidence"]] == kept  # what she may still read
    conversation = api.get(f"/api/v1/conversations/{asked['conversation_id']}")
    assert conversation.status_code == 200 and "85 euros" not in conversation.content.decode()
    assert conversation.json()["turns"][0]["answer"].startswith("Withheld")
    web = Client()
    web.force_login(alice)
    history = web.get("/history").content.decode()
    assert asked["question"] in history and "85 euros" not in history
    assert "None of your questions" in web.get("/history", {"q": "85 euros"}).content.decode()  # no oracle either
    # Back in the group: nothing was lost.
    alice.groups.add(Group.objects.get(name="finance"))
    assert api.get(f"/api/v1/answers/{asked['response_id']}").json()["answer"] == asked["answer"]
