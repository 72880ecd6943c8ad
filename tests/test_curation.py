"""Curators per collection (issue 21): a curator curates the collections whose curator groups they
belong to; outside them every curator surface (admin, write-back queue, answers, retraction,
uploads, reputation) behaves as if the rows did not exist. Real admin, real API, real database."""

import json
import uuid

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from corpus.models import AuditEvent, Collection, Document, Upload
from corpus.services import collection_get_or_create, curators_group_ensure, documents_ingest
from pipeline.models import Answer, Conversation, Evidence
from readers.extract import ExtractedDocument
from tests.conftest import SALARY, client_for
from tests.mcp_client import mcp_tool
from writeback.lessons import gap_record, lesson_create, mark_record
from writeback.models import Gap, JudgeVersion, Lesson, WriteBack
from writeback.proposals import writeback_propose, writeback_publish


def admin_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def hr_writeback(hr) -> WriteBack:
    document = Document.objects.get(collection=hr)
    chunk = document.chunks.first()
    writeback, _ = writeback_propose(
        response_id=__import__("uuid").uuid4(), asked_by=None, question="When are salary bands reviewed?",
        answer="Every March [1].", collection_id=hr.id,
        evidence=[{"n": 1, "chunk_id": chunk.id, "document_id": document.id, "title": document.title,
                   "text": chunk.text}],
    )  # fmt: skip
    return writeback


def test_a_new_collection_is_curated_by_every_curator_unless_given_its_own_curators(hr, bob, dana):
    handbook, _ = collection_get_or_create(slug="handbook", public=True)
    assert list(handbook.curator_groups.values_list("name", flat=True)) == ["curators"]
    assert list(hr.curator_groups.values_list("name", flat=True)) == ["hr-curators"]
    from corpus.selectors import collections_curated_by

    assert set(collections_curated_by(user=bob).values_list("slug", flat=True)) == {"demo", "handbook"}
    assert {"hr", "handbook"} <= set(collections_curated_by(user=dana).values_list("slug", flat=True))


def test_a_curator_outside_a_collection_can_neither_see_nor_change_it_in_the_admin(hr, bob, dana):
    document = Document.objects.get(collection=hr)
    chunk = document.chunks.first()
    outsider, insider = admin_client(bob), admin_client(dana)
    for url in ("/admin/corpus/document/?q=salary", "/admin/corpus/chunk/?q=salary",
                "/admin/reputation/documentreputation/?q=salary"):  # fmt: skip
        assert b"Salary bands" not in outsider.get(url).content, url
    assert b"Salary bands" in insider.get("/admin/corpus/document/?q=salary").content
    for url in (f"/admin/corpus/document/{document.id}/change/", f"/admin/corpus/chunk/{chunk.id}/change/",
                f"/admin/corpus/collection/{hr.id}/change/"):  # fmt: skip
        response = outsider.get(url)  # "... doesn't exist. Perhaps it was deleted?": back to the index
        assert (response.status_code, response.url) == (302, "/admin/")
    # The collection cannot be opened, so it cannot be made public either.
    outsider.post(f"/admin/corpus/collection/{hr.id}/change/", {"name": "HR", "slug": "hr", "is_public": "on"})
    hr.refresh_from_db()
    assert not hr.is_public
    # Even its own curator cannot move a document to another collection, nor delete it: retraction
    # (audited, cascading) is the one way out.
    page = insider.get(f"/admin/corpus/document/{document.id}/change/").content.decode()
    assert 'name="collection"' not in page
    assert insider.post(f"/admin/corpus/document/{document.id}/delete/", {"post": "yes"}).status_code == 403
    assert Document.objects.filter(id=document.id, status=Document.Status.ACTIVE).exists()
    # The audit trail spans every collection: superusers read it.
    assert outsider.get("/admin/corpus/auditevent/").status_code == 403


def test_a_curator_outside_a_collection_cannot_retract_review_upload_or_read_its_answers(hr, bob, dana):
    document = Document.objects.get(collection=hr)
    outsider, insider = client_for(bob), client_for(dana)
    # Retraction: the same 404 as an id that does not exist, whatever the document's status.
    assert outsider.post(f"/api/v1/documents/{document.id}/retract", {}, format="json").status_code == 404
    assert outsider.post("/api/v1/documents/999999/retract", {}, format="json").status_code == 404
    # The write-back queue.
    writeback = hr_writeback(hr)
    assert writeback.id not in [w["id"] for w in outsider.get("/api/v1/writebacks").json()["results"]]
    assert writeback.id in [w["id"] for w in insider.get("/api/v1/writebacks").json()["results"]]
    for verb in ("approve", "reject"):
        response = outsider.post(f"/api/v1/writebacks/{writeback.id}/{verb}", {"reason": "no"}, format="json")
        assert response.status_code == 404
    # Uploads: only into a collection one curates.
    upload = {"collection": "hr", "title": "Bonus", "text": "Bonuses are paid in April to every engineer."}
    assert outsider.post("/api/v1/documents", upload, format="json").status_code == 404  # not even readable
    hr_reader = User.objects.create_user("erin", is_staff=True)
    hr_reader.groups.add(curators_group_ensure(), Group.objects.get(name="hr"))  # reads hr, curates it not
    refused = client_for(hr_reader).post("/api/v1/documents", upload, format="json")
    assert refused.status_code == 403 and "do not curate" in refused.json()["collection"][0]
    assert insider.post("/api/v1/documents", upload, format="json").status_code == 201
    # Answers drawn from hr: its curator reads them, another curator does not.
    answer = Answer.objects.create(question="When are salary bands reviewed?", text="Every March [1].")
    Evidence.objects.create(answer=answer, n=1, chunk=document.chunks.first(), text=SALARY)
    answer.collections.set([hr])  # as the record stage does
    assert outsider.get(f"/api/v1/answers/{answer.response_id}").status_code == 404
    assert insider.get(f"/api/v1/answers/{answer.response_id}").status_code == 200
    # Insiders can retract, and it is audited.
    assert insider.post(f"/api/v1/documents/{document.id}/retract", {}, format="json").status_code == 200
    assert AuditEvent.objects.filter(action="document.retract", object_id=str(document.id)).exists()


def test_changing_who_curates_a_collection_is_audited(hr):
    hr.curator_groups.add(Group.objects.get_or_create(name="people-ops")[0])
    event = AuditEvent.objects.filter(action="collection.curator_groups").latest("id")
    assert "curators added: people-ops" in event.summary
    assert event.after == {"curator_groups": ["hr-curators", "people-ops"]}
    assert Collection.objects.get(slug="hr").curator_groups.count() == 2


def test_a_retraction_is_undone_by_an_audited_restore_and_not_by_ingesting_again(hr, bob, dana):
    from corpus.services import documents_ingest as ingest_again

    document = Document.objects.get(collection=hr)
    insider = client_for(dana)
    assert insider.post(f"/api/v1/documents/{document.id}/retract", {}, format="json").status_code == 200
    # Its source ingested again: it stays retracted, and the report says so instead of "unchanged".
    report = ingest_again(collection=hr, documents=[ExtractedDocument("Salary bands", SALARY + " Edited.",
                                                                      "hr/salary.md", "text/markdown")])  # fmt: skip
    assert (report.retracted, report.updated, report.unchanged) == (1, 0, 0)
    assert report.outcomes[0].outcome == "retracted"
    document.refresh_from_db()
    assert document.status == Document.Status.RETRACTED and "Edited" not in document.chunks.first().text
    # Restore: curators of hr only, audited; a second restore is a conflict.
    assert client_for(bob).post(f"/api/v1/documents/{document.id}/restore", {}, format="json").status_code == 404
    restored = insider.post(f"/api/v1/documents/{document.id}/restore", {"reason": "retracted by mistake"},
                            format="json")  # fmt: skip
    assert restored.status_code == 200 and restored.json() == {"id": document.id, "status": "active"}
    event = AuditEvent.objects.filter(action="document.restore", object_id=str(document.id)).get()
    assert event.summary == "retracted by mistake" and event.after == {"status": "active"}
    assert insider.post(f"/api/v1/documents/{document.id}/restore", {}, format="json").status_code == 409


def hr_miss(hr, user, question: str) -> Answer:
    missed = Answer.objects.create(user=user, question=question, text="…", found=False,
                                   outcome=Answer.Outcome.WHERE_TO_LOOK)  # fmt: skip
    missed.collections.set([hr])
    return missed


def misses_surfaces(web: Client, user, hr, chunk, root) -> tuple[dict[str, bool], dict[str, bool]]:
    """The curators' list of what went unanswered in hr, its decisions, and the lessons, gaps and
    marks of hr, tried through `web` as `user`: which let it through, and (second) which showed
    what no one may see there. A decision let through settles the group; it is undone after, so
    that the next one finds the group again."""
    hal, ivy = User.objects.create_user("hal"), User.objects.create_user("ivy")  # readers of hr
    for reader in (hal, ivy):
        reader.groups.add(Group.objects.get(name="hr"))
    missed = hr_miss(hr, hal, "Who reviews the salary bands?")
    hr_miss(hr, ivy, "Who reviews the salary bands of interns?")  # the same group, never marked
    # Marked by its reader: shown to hr's curators at once, two askers though the group has.
    mark = mark_record(user=hal, response_id=missed.response_id, question=missed.question, evidence_n=1,
                       chunk=chunk, sentence=SALARY)  # fmt: skip
    # The viewer's own question, marked by the viewer: no one else asked it.
    own = hr_miss(hr, user, "Is there a gym at the office?")
    mark_record(user=user, response_id=own.response_id, question=own.question, evidence_n=1, chunk=chunk,
                sentence=SALARY)  # fmt: skip
    lesson = lesson_create(actor=root, question="When are salary bands reviewed?", chunk=chunk, sentence=SALARY,
                           origin=Lesson.Origin.PICKED)  # fmt: skip
    gap = gap_record(actor=root, collection=hr, question="Are the salary bands published?")
    marker, unanswered = "alary bands", "/admin/writeback/lesson/unanswered/"
    group = f"{unanswered}{hr.id}/{missed.response_id}/"

    def shown(response) -> bool:
        return response.status_code == 200 and marker in response.content.decode()

    def settles(decision: str, data: dict) -> bool:
        response = web.post(f"{group}{decision}/", data)
        key = [str(missed.response_id)]
        made = [Lesson.objects.filter(response_ids__contains=key), Gap.objects.filter(response_ids__contains=key)]
        settled = any(m.exists() for m in made)
        for m in made:
            m.delete()
        return response.status_code == 302 and settled

    listed = web.get(unanswered).content.decode() + web.get(group).content.decode()
    hidden = {
        "admin unanswered: a question no one marked, in a group under k": "interns" in listed,
        "admin unanswered: a group under k shown by the viewer's own mark": "gym" in listed,
    }
    return {
        "admin unanswered questions": shown(web.get(unanswered)),
        "admin unanswered questions of hr": shown(web.get(f"{unanswered}?collection={hr.id}")),
        "admin unanswered group and its search": shown(web.get(group)),
        "admin confirm a mark": settles("confirm", {"mark": mark.id}),
        "admin pick a sentence": settles("pick", {"chunk": chunk.id, "sentence": SALARY}),
        "admin write the answer": settles("write", {"answer": "The compensation committee reviews salary bands."}),
        "admin not covered": settles("gap", {"note": "publish the salary bands"}),
        **{f"admin list {url}": shown(web.get(url)) for url in (
            "/admin/writeback/lesson/?q=salary", "/admin/writeback/gap/?q=salary", "/admin/writeback/mark/?q=salary",
        )},
        **{f"admin page {url}": web.get(url).status_code == 200 for url in (
            f"/admin/writeback/lesson/{lesson.id}/change/", f"/admin/writeback/gap/{gap.id}/change/",
            f"/admin/writeback/mark/{mark.id}/change/",
        )},
    }, hidden  # fmt: skip


def lesson_over_hr(web: Client, handbook, askers, root) -> bool:
    """A lesson of the public handbook that contradicts hr's passage, written through `web` on the
    curators' list (three people asked its question there): does a reader of hr, asking without
    naming collections, get it stated, or VERIFIED, over hr's passage that says otherwise?"""
    from corpus.lifecycle import document_restore

    salary = Document.objects.get(collection__slug="hr", source="hr/salary.md")
    if salary.status != Document.Status.ACTIVE:  # retracted through a surface tried before
        document_restore(salary, actor=root, reason="tried again")
    question = "When are the salary bands for engineers reviewed?"
    wrong = "The salary bands for engineers are not reviewed in March; they are reviewed every September."
    for asker in askers:
        Answer.objects.create(user=asker, question=question, text="…", outcome=Answer.Outcome.NOT_FOUND
                              ).collections.set([handbook])  # fmt: skip
    key = Answer.objects.filter(question=question).first().response_id
    web.post(f"/admin/writeback/lesson/unanswered/{handbook.id}/{key}/write/", {"answer": wrong})
    reader = User.objects.create_user("hr-reader")
    reader.groups.add(Group.objects.get(name="hr"))
    body = client_for(reader).post("/api/v1/query", {"question": question, "mode": "fast"}, format="json").json()
    taught = next((e for e in body["evidence"] if wrong in e["text"]), {})
    stated = "every September" in body["answer"] and "disagree" not in body["answer"].lower()
    return stated or taught.get("bucket") == "VERIFIED"


PERSONAS = ["alice", "charlie", "bob", "dana", "root"]  # finance reader, outsider, other curator, hr's, superuser


@pytest.mark.parametrize("persona", PERSONAS)
def test_the_access_matrix_has_no_unexpected_allow(persona, hr, alice, charlie, bob, dana, settings):
    """Every surface that shows or changes hr's content, tried by each persona: only hr's curator
    (who also reads it) and the superuser get through, and they get through everywhere; bob, who
    curates the public handbook beside it, nowhere (sibling answers, an answer whose chunks were
    replaced). Through the `never` surfaces no one gets through."""
    from reputation.models import Reputation
    from writeback.models import Critique

    root = User.objects.create_superuser("root", password="root-pw")
    user = {"alice": alice, "charlie": charlie, "bob": bob, "dana": dana, "root": root}[persona]
    document = Document.objects.get(collection=hr)
    chunk = document.chunks.first()
    writeback = hr_writeback(hr)
    WriteBack.objects.filter(id=writeback.id).update(status=WriteBack.Status.PENDING_REVIEW)
    answer = Answer.objects.create(question="When are salary bands reviewed?", text="Every March [1].")
    Evidence.objects.create(answer=answer, n=1, chunk=chunk, text=SALARY)
    answer.collections.set([hr])  # as the record stage does
    critique = Critique.objects.create(writeback=writeback, source="curator", question=writeback.question,
                                       text="An earlier answer to a similar question was rejected: salary bands.",
                                       embedding=[0.1] * 384)  # fmt: skip
    critique.collections.set([hr])
    Reputation.objects.create(chunk=chunk)
    upload = Upload.objects.create(collection=hr, name="Salary bands.md", size=88, sha256="0" * 64,
                                   status=Upload.Status.DONE)  # fmt: skip
    marker = "alary bands"  # "Salary bands", "salary bands"
    # A write-back of the public handbook (curated by every curator) beside a sibling that quotes hr.
    handbook, _ = collection_get_or_create(slug="handbook", public=True)
    documents_ingest(collection=handbook, documents=[ExtractedDocument("Pay", "Pay is reviewed yearly.", "hb/pay.md",
                                                                       "text/markdown")])  # fmt: skip
    pay = Document.objects.get(collection=handbook)
    same_question = [0.1] * 384

    def candidate(document, answer, collection=handbook):
        chunk = document.chunks.first()
        return writeback_propose(
            response_id=uuid.uuid4(), asked_by=None, question="When is pay reviewed?", answer=answer,
            collection_id=collection.id, question_embedding=same_question,
            evidence=[{"n": 1, "chunk_id": chunk.id, "document_id": document.id, "title": document.title,
                       "text": chunk.text}],
        )[0]  # fmt: skip

    def under_review(writeback, text=""):
        WriteBack.objects.filter(id=writeback.id).update(status=WriteBack.Status.PENDING_REVIEW, text=text)
        writeback.refresh_from_db()
        return writeback

    public_writeback = under_review(candidate(pay, "Yearly [1]."))
    candidate(document, "Salary bands are reviewed every March [1].")
    # An answer the superuser had from hr, whose evidence chunks a re-ingest then replaced; and an
    # answer published from hr that the same re-ingest sent back to review, its document hidden.
    documents_ingest(collection=hr, documents=[ExtractedDocument("Bonus", "Bonuses are paid in April alongside the "
                                                                 "salary bands review.", "hr/bonus.md",
                                                                 "text/markdown")])  # fmt: skip
    settings.CAIRN_WRITEBACK_ALPHA_MAX = 1.0
    bonus = Document.objects.get(collection=hr, source="hr/bonus.md")
    hidden = writeback_publish(under_review(candidate(bonus, "In April [1].", hr), "Bonuses are paid in April."),
                               actor=root).document  # fmt: skip
    asked = client_for(root).post("/api/v1/query", {"question": "When are bonuses paid and pay reviewed?", "mode": "fast",
                                                    "collections": ["hr", "handbook"]}, format="json").json()  # fmt: skip
    documents_ingest(collection=hr, documents=[ExtractedDocument("Bonus", "Bonuses are paid in May alongside the "
                                                                 "salary bands review.", "hr/bonus.md",
                                                                 "text/markdown")])  # fmt: skip
    web, api = admin_client(user), client_for(user)
    # An answer from hr the persona asked, as if they had read hr then: only its readers read it now.
    conversation = Conversation.objects.create(user=user, title="When are they reviewed?")
    theirs = Answer.objects.create(user=user, conversation=conversation, question="When are they reviewed?",
                                   text=f"{SALARY} [1]", citations=[{"n": 1, "chunk_id": chunk.id, "origin": "corpus",
                                                                     "strips": [SALARY]}])  # fmt: skip
    Evidence.objects.create(answer=theirs, n=1, chunk=chunk, text=SALARY, cited=True)
    theirs.collections.set([hr])

    def shown(response) -> bool:
        return response.status_code == 200 and marker in response.content.decode()

    allowed = {
        f"admin list {url}": shown(web.get(url))
        for url in (
            "/admin/corpus/document/?q=salary",
            "/admin/corpus/chunk/?q=salary",
            "/admin/writeback/writeback/?q=salary",
            "/admin/pipeline/answer/?q=salary",
            "/admin/writeback/critique/?q=salary",
            "/admin/reputation/reputation/?q=salary",
            "/admin/reputation/documentreputation/?q=salary",
            "/admin/corpus/upload/?q=salary",
        )
    }
    collections = web.get("/admin/corpus/collection/?q=hr").content.decode()
    allowed["admin list collections"] = f"/admin/corpus/collection/{hr.id}/change/" in collections
    allowed |= {
        f"admin page {url}": web.get(url).status_code == 200
        for url in (
            f"/admin/corpus/document/{document.id}/change/",
            f"/admin/corpus/chunk/{chunk.id}/change/",
            f"/admin/corpus/collection/{hr.id}/change/",
            f"/admin/writeback/writeback/{writeback.id}/change/",
            f"/admin/pipeline/answer/{answer.id}/change/",
            f"/admin/writeback/critique/{critique.id}/change/",
            f"/admin/reputation/reputation/{chunk.id}/change/",
        )  # fmt: skip
    }
    shown_misses, hidden_misses = misses_surfaces(web, user, hr, chunk, root)
    allowed |= shown_misses
    query = api.post("/api/v1/query", {"question": "When are salary bands reviewed?", "mode": "fast",
                                       "collections": ["hr"]}, format="json")  # fmt: skip
    chat = api.post("/v1/chat/completions", {"model": "cairn/hr", "mode": "fast", "messages": [
        {"role": "user", "content": "When are salary bands reviewed?"}]}, format="json")  # fmt: skip
    chat_all = api.post("/v1/chat/completions", {"model": "cairn", "mode": "fast", "messages": [
        {"role": "user", "content": "When are salary bands reviewed?"}]}, format="json")  # fmt: skip
    allowed |= {
        "openai models": "cairn/hr" in {m["id"] for m in api.get("/v1/models").json().get("data", [])},
        "openai chat of hr": chat.status_code == 200 and marker in str(chat.json()["cairn"]["evidence"]),
        "openai chat of all": chat_all.status_code == 200 and marker in str(chat_all.json()["cairn"]["evidence"]),
        "document page": shown(web.get(f"/documents/{document.id}")),
        "api upload status": shown(api.get(f"/api/v1/uploads/{upload.id}")),
        "api documents": shown(api.get("/api/v1/documents?collection=hr")),
        "api document": api.get(f"/api/v1/documents/{document.id}").status_code == 200,
        "api chunk": api.get(f"/api/v1/chunks/{chunk.id}").status_code == 200,
        "api answer": api.get(f"/api/v1/answers/{answer.response_id}").status_code == 200,
        "api answer, evidence chunks replaced": shown(api.get(f"/api/v1/answers/{asked['response_id']}")),
        "api answer the persona asked": shown(api.get(f"/api/v1/answers/{theirs.response_id}")),
        "api conversation the persona had": shown(api.get(f"/api/v1/conversations/{conversation.conversation_id}")),
        "history page": "compensation committee" in web.get("/history").content.decode(),  # not the questions
        "history search of an answer's text": str(theirs.response_id)
        in web.get("/history", {"q": "every March"}).content.decode(),  # fmt: skip
        "admin sibling answers": shown(web.get(f"/admin/writeback/writeback/{public_writeback.id}/change/")),
        "api write-backs": shown(api.get("/api/v1/writebacks")),
        "api query": query.status_code == 200 and any(marker in e["text"] for e in query.json()["evidence"]),
        "api upload": api.post(
            "/api/v1/documents",
            {"collection": "hr", "title": "Bonus", "text": "Bonuses are paid in April."},
            format="json",
        ).status_code
        == 201,  # fmt: skip
        "api reject": api.post(f"/api/v1/writebacks/{writeback.id}/reject", {"reason": "no"}, format="json").status_code
        == 200,  # fmt: skip
        "api retract": api.post(f"/api/v1/documents/{document.id}/retract", {}, format="json").status_code == 200,
    }
    # hr's adapted judges: which serve it, and going back to the shipped ones.
    judges = JudgeVersion.objects.create(collection=hr, version=1, status=JudgeVersion.Status.SERVING,
                                         answer_model=str(settings.CAIRN_ANSWER_MODEL))  # fmt: skip
    allowed["admin judge version"] = web.get(f"/admin/writeback/judgeversion/{judges.id}/change/").status_code == 200
    web.post("/admin/writeback/judgeversion/", {"action": "retire", "_selected_action": [judges.id]})
    judges.refresh_from_db()
    allowed["admin retire judge version"] = judges.status == JudgeVersion.Status.RETIRED
    # The MCP tools: search over all the persona reads (the pipeline's own filter), ask within hr.
    found = mcp_tool(user, "search", {"question": "When are salary bands reviewed?", "mode": "fast"})
    answered = mcp_tool(user, "ask", {"question": "When are salary bands reviewed?", "mode": "fast",
                                      "collections": ["hr"]})  # fmt: skip
    cited = "" if answered["isError"] else json.dumps(answered["structuredContent"]["citations"])
    allowed |= {
        "mcp search": any(marker in p["text"] for p in (found.get("structuredContent") or {}).get("passages", [])),
        "mcp ask": not answered["isError"] and (marker in answered["structuredContent"]["answer"] or marker in cited),
    }
    # root asks in hr, then follows on within the public handbook: the follow-up's question is read
    # by the handbook's curators.
    asked_in_hr = client_for(root).post("/api/v1/query", {"question": "When are salary bands reviewed?", "mode": "fast",
                                                          "collections": ["hr"]}, format="json").json()  # fmt: skip
    follow_up = client_for(root).post("/api/v1/query", {
        "question": "and when is pay reviewed?", "mode": "fast", "collections": ["handbook"],
        "conversation_id": asked_in_hr["conversation_id"]}, format="json").json()["response_id"]  # fmt: skip
    # Through these no one gets hr's text or changes what it shows, hr's own curator included.
    never = {
        "api answer: a handbook follow-up of an hr question": shown(api.get(f"/api/v1/answers/{follow_up}")),
        "admin answer: a handbook follow-up of an hr question": shown(web.get(
            f"/admin/pipeline/answer/{Answer.objects.get(response_id=follow_up).id}/change/")),  # fmt: skip
        "admin lesson edit": web.post(f"/admin/writeback/lesson/{Lesson.objects.get().id}/change/",
                                      {"sentence": "Renamed."}) and Lesson.objects.filter(sentence="Renamed.").exists(),
        "nearest text to an edited approve": "alary bands"
        in str(api.post(f"/api/v1/writebacks/{public_writeback.id}/approve", {"answer": SALARY + " [1]"},
                        format="json").json().get("nearest")),
        "restore a published answer under review": api.post(f"/api/v1/documents/{hidden.id}/restore", {},
                                                            format="json").status_code == 200,
        "admin document edit": web.post(f"/admin/corpus/document/{document.id}/change/", {"title": "Renamed"})
        and Document.objects.filter(title="Renamed").exists(),
        "admin answer edit": web.post(f"/admin/pipeline/answer/{answer.id}/change/", {"question": "Renamed?"})
        and Answer.objects.filter(question="Renamed?").exists(),
        "admin answer delete": web.post(f"/admin/pipeline/answer/{answer.id}/delete/", {"post": "yes"})
        and not Answer.objects.filter(id=answer.id).exists(),
        **hidden_misses,
        # Last: the handbook's lesson puts hr's words in a public collection.
        "a handbook lesson over hr's passage": lesson_over_hr(web, handbook, [alice, charlie, bob], root),
    }  # fmt: skip
    # The lesson was written wherever the persona curates the handbook: the row above was tried.
    assert Lesson.objects.filter(collection=handbook).exists() == (persona in ("bob", "dana", "root"))
    expected = persona in ("dana", "root")
    assert {surface for surface, ok in allowed.items() if ok != expected} | {
        s for s, ok in never.items() if ok
    } == set()


def test_moving_a_document_needs_both_collections_is_audited_and_sends_what_rests_on_it_to_review(
    hr, bob, dana, settings
):
    from writeback.proposals import writeback_publish

    settings.CAIRN_WRITEBACK_ALPHA_MAX = 1.0  # a one-document collection: the generated-share cap aside

    document = Document.objects.get(collection=hr)
    writeback = hr_writeback(hr)
    WriteBack.objects.filter(id=writeback.id).update(status=WriteBack.Status.PENDING_REVIEW, text="Every March.")
    writeback.refresh_from_db()
    published = writeback_publish(writeback, actor=dana).document
    handbook, _ = collection_get_or_create(slug="handbook", public=True)  # curated by every curator
    move = {"collection": "handbook", "reason": "salary bands are public now"}
    # bob curates handbook but not hr: the document is "not found" to him.
    assert client_for(bob).post(f"/api/v1/documents/{document.id}/move", move, format="json").status_code == 404
    # dana curates both.
    response = client_for(dana).post(f"/api/v1/documents/{document.id}/move", move, format="json")
    assert response.status_code == 200 and response.json()["collection"] == "handbook"
    document.refresh_from_db()
    assert document.collection == handbook
    event = AuditEvent.objects.get(action="document.move", object_id=str(document.id))
    assert (event.before, event.after, event.summary) == (
        {"collection": "hr"}, {"collection": "handbook"}, "salary bands are public now",
    )  # fmt: skip
    writeback.refresh_from_db()
    published.refresh_from_db()
    assert writeback.status == WriteBack.Status.PENDING_REVIEW and "moved from hr to handbook" in writeback.review_note
    assert published.status == Document.Status.RETRACTED  # hidden until a curator approves it again
    # Into a collection one does not curate: refused, naming it.
    refused = client_for(dana).post(f"/api/v1/documents/{document.id}/move", {"collection": "finance"}, format="json")
    assert refused.status_code == 404 and "finance" in refused.json()["collection"][0]


def test_the_admin_moves_documents_only_into_collections_the_curator_curates_and_audits_it(hr, bob, dana):
    document = Document.objects.get(collection=hr)
    collection_get_or_create(slug="handbook", public=True)
    collection_get_or_create(slug="legal", group_names=["legal"], curator_group_names=["legal-curators"])
    changelist = "/admin/corpus/document/"
    chosen = {"action": "move", "_selected_action": [document.id]}
    page = admin_client(dana).post(changelist, chosen).content.decode()
    assert 'value="handbook"' in page and 'value="legal"' not in page  # dana does not curate legal
    # A collection dana does not curate, posted anyway: asked again, nothing moved.
    again = admin_client(dana).post(changelist, chosen | {"apply": "Move", "collection": "legal"})
    assert "Choose a collection" in again.content.decode()
    document.refresh_from_db()
    assert document.collection == hr
    # bob does not curate hr: the document is not among his rows, so nothing is moved.
    admin_client(bob).post(changelist, chosen | {"apply": "Move", "collection": "handbook"})
    document.refresh_from_db()
    assert document.collection == hr
    done = admin_client(dana).post(changelist, chosen | {"apply": "Move", "collection": "handbook", "reason": "public"})
    assert done.status_code == 302
    document.refresh_from_db()
    assert document.collection.slug == "handbook"
    event = AuditEvent.objects.get(action="document.move", object_id=str(document.id))
    assert (event.actor, event.summary, event.after) == (dana, "public", {"collection": "handbook"})


def test_a_write_back_quoting_a_private_collection_stays_with_that_collections_curators(hr, bob, dana):
    """Published into a collection bob curates, but resting on hr's document: its evidence quotes
    hr, so bob sees it neither in the queue nor in the admin."""
    handbook, _ = collection_get_or_create(slug="handbook", public=True)
    writeback = hr_writeback(hr)
    WriteBack.objects.filter(id=writeback.id).update(collection=handbook)
    assert writeback.id not in [w["id"] for w in client_for(bob).get("/api/v1/writebacks").json()["results"]]
    assert admin_client(bob).get(f"/admin/writeback/writeback/{writeback.id}/change/").status_code == 302
    assert writeback.id in [w["id"] for w in client_for(dana).get("/api/v1/writebacks").json()["results"]]
