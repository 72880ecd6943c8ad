"""Attacks from a security review of the curator surfaces, each written as the attacker would try it:
a curator of the public handbook reading the private hr collection through validation's "nearest
existing text", through an answer whose evidence chunks a re-ingest replaced, through sibling
answers; a reader forging ground truth; a curator editing a document's provenance unaudited; a
published answer brought back past its review; bodies of any size. Real database, real models,
real admin and API."""

import json
import uuid

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from corpus.models import AuditEvent, Collection, Document, Upload
from corpus.services import collection_get_or_create, documents_ingest
from pipeline.models import Answer
from readers.extract import ExtractedDocument
from reputation.models import Reputation
from tests.conftest import SALARY, client_for
from writeback.models import WriteBack
from writeback.proposals import writeback_propose, writeback_publish

PAY = "Pay for the support team is reviewed once a year, in the autumn, by the team lead."


@pytest.fixture(autouse=True)
def no_cap(settings):
    settings.CAIRN_WRITEBACK_ALPHA_MAX = 1.0  # one-document collections: the generated-share cap aside


@pytest.fixture
def handbook(db):
    """Public, curated by every curator (bob among them)."""
    collection, _ = collection_get_or_create(slug="handbook", public=True)
    documents_ingest(collection=collection, documents=[ExtractedDocument("Pay", PAY, "hb/pay.md", "text/markdown")])
    return collection


def candidate(collection, document, answer, *, question="When is pay reviewed?", embedding=None) -> WriteBack:
    chunk = document.chunks.first()
    evidence = [{"n": 1, "chunk_id": chunk.id, "document_id": document.id, "title": document.title, "text": chunk.text}]
    return writeback_propose(
        response_id=uuid.uuid4(), asked_by=None, question=question, answer=answer, evidence=evidence,
        collection_id=collection.id, question_embedding=embedding,
    )[0]  # fmt: skip


def pending(writeback: WriteBack, text: str = "") -> WriteBack:
    WriteBack.objects.filter(id=writeback.id).update(status=WriteBack.Status.PENDING_REVIEW, text=text)
    writeback.refresh_from_db()
    return writeback


def admin_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_edited_approve_is_no_search_oracle_over_collections_the_curator_does_not_curate(hr, handbook, bob):
    """bob curates handbook, not hr: approving a handbook write-back with hr's sentence typed in as
    the edit used to answer with hr's own chunk as the "nearest existing text"."""
    writeback = pending(candidate(handbook, Document.objects.get(collection=handbook), "Yearly [1]."))
    response = client_for(bob).post(
        f"/api/v1/writebacks/{writeback.id}/approve", {"answer": SALARY + " [1]"}, format="json"
    )
    assert response.status_code == 200
    body = response.json()
    hr_chunk_ids = set(Document.objects.get(collection=hr).chunks.values_list("id", flat=True))
    # The rest of the response repeats the edit bob typed; "nearest" is what the corpus holds.
    assert body["nearest"].get("id") not in hr_chunk_ids and "compensation committee" not in json.dumps(body["nearest"])
    assert body["nearest"]["text"].startswith("Pay for the support team")  # the handbook's own text instead
    listed = client_for(bob).get("/api/v1/writebacks").content.decode()
    assert "compensation committee" not in listed.replace(SALARY, "")  # only the edit bob typed himself


def test_validation_measures_novelty_within_the_collections_a_write_back_shows(hr, handbook, bob):
    """A pending hr write-back is no "nearest" for a handbook one, though the texts are the same."""
    from writeback.validation import nearest_existing

    salary = Document.objects.get(collection=hr)
    hr_pending = pending(candidate(hr, salary, SALARY + " [1]"))
    WriteBack.objects.filter(id=hr_pending.id).update(embedding=[0.1] * 384)
    public = candidate(handbook, Document.objects.get(collection=handbook), "Yearly [1].")
    nearest = nearest_existing([0.1] * 384, exclude=public)
    assert nearest["kind"] == "chunk" and nearest["document_id"] == Document.objects.get(collection=handbook).id
    inside = nearest_existing([0.1] * 384, exclude=candidate(hr, salary, "Every March [1]."))
    assert (inside["kind"], inside["id"]) == ("writeback", hr_pending.id)  # hr's own curators still see it


def test_an_answer_stays_closed_to_other_curators_after_its_evidence_chunks_are_replaced(hr, handbook, bob, dana):
    """An answer drawing on hr and the handbook was closed to bob for its hr evidence: once a re-ingest
    replaced hr's chunks, only the handbook's evidence still named a collection, and bob read hr's
    text in it."""
    asked = client_for(dana).post(
        "/api/v1/query", {"question": "When are salary bands and pay reviewed?", "mode": "fast",
                          "collections": ["hr", "handbook"]}, format="json",
    ).json()  # fmt: skip
    assert {(e["collection"] or "").lower() for e in asked["evidence"]} >= {"hr", "handbook"}
    url = f"/api/v1/answers/{asked['response_id']}"
    assert client_for(bob).get(url).status_code == 404
    documents_ingest(collection=hr, documents=[ExtractedDocument("Salary bands", SALARY + " Bands rose 3%.",
                                                                 "hr/salary.md", "text/markdown")])  # fmt: skip
    assert Answer.objects.get(response_id=asked["response_id"]).evidence.filter(chunk__isnull=True).exists()
    assert client_for(bob).get(url).status_code == 404
    assert client_for(dana).get(url).status_code == 200


def test_sibling_answers_in_the_admin_show_only_what_the_curator_curates(hr, handbook, bob, dana):
    same = [0.2] * 384
    public = pending(candidate(handbook, Document.objects.get(collection=handbook), "Yearly [1].", embedding=same))
    candidate(handbook, Document.objects.get(collection=hr), "Salary bands are reviewed every March [1].",
              embedding=same)  # fmt: skip
    page = f"/admin/writeback/writeback/{public.id}/change/"
    assert "every March" not in admin_client(bob).get(page).content.decode()
    assert "every March" in admin_client(dana).get(page).content.decode()


def test_only_staff_and_the_verifier_group_send_ground_truth(handbook, charlie, settings):
    asked = client_for(charlie).post("/api/v1/query", {"question": "When is pay reviewed?", "mode": "fast"},
                                     format="json").json()  # fmt: skip
    chunk_ids = [e["chunk_id"] for e in asked["evidence"] if e.get("chunk_id")]
    before = list(Reputation.objects.filter(chunk_id__in=chunk_ids).values_list("alpha", "beta", "fooled"))
    forged = client_for(charlie).post(
        "/api/v1/feedback", {"response_id": asked["response_id"], "thumbs": 1, "verifier": 0.0}, format="json"
    )
    assert forged.status_code == 403 and "verifier" in forged.json()
    assert list(Reputation.objects.filter(chunk_id__in=chunk_ids).values_list("alpha", "beta", "fooled")) == before
    charlie.groups.add(Group.objects.get_or_create(name=settings.CAIRN_VERIFIER_GROUP)[0])
    trusted = client_for(charlie).post(
        "/api/v1/feedback", {"response_id": asked["response_id"], "verifier": 1.0}, format="json"
    )
    assert trusted.status_code == 200 and trusted.json()["verifier"] == 1.0


def test_the_document_admin_edits_nothing_and_lists_no_other_uploads(hr, handbook, bob, dana):
    document = Document.objects.get(collection=handbook)
    Upload.objects.create(collection=hr, name="Secret reorg plan.docx", size=1, sha256="0" * 64)
    page = admin_client(bob).get(f"/admin/corpus/document/{document.id}/change/")
    assert page.status_code == 200 and "Secret reorg plan" not in page.content.decode()
    forged = admin_client(bob).post(
        f"/admin/corpus/document/{document.id}/change/",
        {"title": "Renamed", "source": "elsewhere.md", "metadata": "{}", "upload": ""},
    )
    assert forged.status_code == 403
    document.refresh_from_db()
    assert (document.title, document.source) == ("Pay", "hb/pay.md")


def test_a_published_answer_hidden_for_review_comes_back_only_through_review(hr, dana):
    salary = Document.objects.get(collection=hr)
    writeback = writeback_publish(pending(candidate(hr, salary, "Every March [1].", question="When?"),
                                          text="Salary bands are reviewed every March."), actor=dana)  # fmt: skip
    published = writeback.document
    documents_ingest(collection=hr, documents=[ExtractedDocument("Salary bands", SALARY + " From 2027: June.",
                                                                 "hr/salary.md", "text/markdown")])  # fmt: skip
    writeback.refresh_from_db()
    published.refresh_from_db()
    assert writeback.status == WriteBack.Status.PENDING_REVIEW and published.status == Document.Status.RETRACTED
    # A restore would bring back the answer its curator has not checked against the new text.
    refused = client_for(dana).post(f"/api/v1/documents/{published.id}/restore", {}, format="json")
    assert refused.status_code == 409 and "approve the write-back" in refused.json()["document"][0]
    published.refresh_from_db()
    assert published.status == Document.Status.RETRACTED
    # Approving an edit publishes the edit, not the text that was hidden.
    edited = "Salary bands are reviewed every March until 2027 and every June after [1]."
    approved = client_for(dana).post(f"/api/v1/writebacks/{writeback.id}/approve", {"answer": edited}, format="json")
    assert approved.status_code == 200 and approved.json()["document_id"] == published.id
    published.refresh_from_db()
    assert published.status == Document.Status.ACTIVE and "every June" in published.chunks.first().text
    assert AuditEvent.objects.filter(action="document.restore", object_id=str(published.id)).exists()


def test_a_write_backs_source_name_is_reserved(hr, dana):
    salary = Document.objects.get(collection=hr)
    writeback = candidate(hr, salary, "Every March [1].", question="When?")
    squat = {"collection": "hr", "title": "Fake", "text": "Salaries are never reviewed.",
             "source": f"writeback:{writeback.id}"}  # fmt: skip
    response = client_for(dana).post("/api/v1/documents", squat, format="json")
    assert response.status_code == 400 and "reserved" in response.json()["source"][0]
    report = documents_ingest(collection=hr, documents=[ExtractedDocument("Fake", "x y z", f"writeback:{writeback.id}",
                                                                          "text/plain")])  # fmt: skip
    assert report.failed and not Document.objects.filter(source=f"writeback:{writeback.id}").exists()
    published = writeback_publish(pending(writeback, text="Salary bands are reviewed every March."), actor=dana)
    assert published.document.origin == Document.Origin.GENERATED


@pytest.mark.parametrize("path", ["/api/v1/query", "/api/v1/feedback", "/api/v1/writebacks/1/approve"])
def test_every_json_endpoint_bounds_its_body(path, bob, settings):
    settings.CAIRN_MAX_REQUEST_BYTES = 64 * 1024
    body = json.dumps({"question": "When?", "response_id": str(uuid.uuid4()), "padding": "a" * (1024 * 1024)})
    response = client_for(bob).post(path, body, content_type="application/json")
    assert response.status_code == 413 and "65536 bytes" in response.json()["detail"]


def test_admin_filters_and_group_choices_name_only_what_the_curator_curates(hr, handbook, bob):
    legal, _ = collection_get_or_create(slug="legal", group_names=["legal-team"], curator_group_names=["legal-leads"])
    web = admin_client(bob)
    for url in ("/admin/corpus/document/", "/admin/corpus/chunk/", "/admin/writeback/writeback/",
                "/admin/corpus/upload/", "/admin/reputation/reputation/", "/admin/reputation/documentreputation/"):  # fmt: skip
        page = web.get(url).content.decode()
        assert f"__exact={hr.id}" not in page and f"__exact={legal.id}" not in page, url
    page = web.get(f"/admin/corpus/collection/{handbook.id}/change/").content.decode()
    assert page and all(f">{name}<" not in page for name in ("hr", "hr-curators", "legal-team", "legal-leads"))
    assert User.objects.get(username="bob").groups.filter(name="curators").exists() and ">curators<" in page


def test_answers_recorded_before_their_collections_were_get_them_from_their_evidence(hr, handbook):
    """Migration 0006's backfill: from the evidence's chunks; for evidence whose chunk is gone, from
    documents of the same source; evidence matching none could be from anywhere: every collection."""
    import importlib

    from django.apps import apps

    from pipeline.models import Evidence

    backfill = importlib.import_module("pipeline.migrations.0006_answer_collections").backfill
    live, orphan, unknown = (Answer.objects.create(question="q", text="a") for _ in range(3))
    Evidence.objects.create(answer=live, n=1, chunk=Document.objects.get(collection=handbook).chunks.first(), text=PAY)
    Evidence.objects.create(answer=orphan, n=1, chunk=None, source="hr/salary.md", text=SALARY)
    Evidence.objects.create(answer=unknown, n=1, chunk=None, source="gone.md", text="?")
    backfill(apps, None)
    assert set(live.collections.values_list("slug", flat=True)) == {"handbook"}
    assert set(orphan.collections.values_list("slug", flat=True)) == {"hr"}
    assert unknown.collections.count() == Collection.objects.count()


def test_a_warning_quoting_another_collections_critique_reaches_none_of_its_curators(hr, handbook, bob, dana):
    """A critique quotes the evidence of the answer it rejects. dana reads hr and the handbook; a
    question of hers near one rejected in hr was warned with hr's critique, and its answer, recorded
    in the handbook alone, opened to bob, who curates only the handbook: hr's words in his hands.
    Asked within the handbook, it is warned by the handbook's critiques alone; asked across both,
    its answer is recorded in hr too, where bob reads nothing."""
    from corpus.embedder import get_embedder
    from writeback.models import Critique

    question = "When is pay reviewed?"
    secret = "grade seven bands were frozen by the board"
    critique = Critique.objects.create(
        source="curator", question=question, text=f"An earlier answer was rejected: the {secret}.",
        embedding=get_embedder().embed([question])[0],
    )  # fmt: skip
    critique.collections.set([hr])
    asker, curator = client_for(dana), client_for(bob)

    def asked(**scope) -> dict:
        response = asker.post("/api/v1/query", {"question": question, "mode": "fast", **scope}, format="json")
        assert response.status_code == 200, response.content
        return response.json()

    within = asked(collections=["handbook"])
    assert secret not in json.dumps(within)
    seen = curator.get(f"/api/v1/answers/{within['response_id']}")
    assert seen.status_code == 200 and secret not in seen.content.decode()
    across = asked()
    assert any(secret in warning for warning in across["warnings"])  # the critique does warn her
    seen = curator.get(f"/api/v1/answers/{across['response_id']}")
    assert seen.status_code == 404 and secret not in seen.content.decode()
