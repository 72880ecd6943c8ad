"""Uploads that cannot poison the corpus: content is checked, not the extension; field types are
strict; every upload records its uploader and is audited; a large one is ingested by the worker
(django-q2, run in this process) behind a status resource. Bob curates, charlie is an outsider."""

import io
import random
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django_q.conf import Conf
from pypdf import PdfWriter

from corpus.models import AuditEvent, Chunk, Document, Upload
from tests.conftest import client_for

pytestmark = pytest.mark.django_db

ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(56) + b"\x00\x10\x40\x00" * 400  # an ELF header and then some
HANDBOOK = "# Visitor handbook\n\nVisitors sign in at the front desk and wear a badge at all times.\n"


@pytest.fixture
def q_sync(monkeypatch):
    """django-q2 runs queued tasks in the caller: what a worker would do, in this process."""
    monkeypatch.setattr(Conf, "SYNC", True)


def post_file(user, name: str, data: bytes, content_type: str = "text/plain", **fields):
    upload = SimpleUploadedFile(name, data, content_type=content_type)
    return client_for(user).post(
        "/api/v1/documents", {"collection": "demo", "file": upload, **fields}, format="multipart"
    )


def demo_chunks() -> int:
    return Chunk.objects.filter(document__collection__slug="demo").count()


def blank_pdf() -> bytes:
    writer = PdfWriter()
    writer.add_blank_page(width=612, height=792)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("release-notes.md", ELF, "an ELF executable"),
        ("noise.txt", random.Random(22).randbytes(4096), "not valid UTF-8"),
        ("latin.txt", "Caf\u00e9 opens at 8.".encode("cp1252"), "not valid UTF-8: byte 0xe9 at offset 3"),
        ("log.txt", b"Begins as text\x00 and holds a NUL.", "NUL bytes"),
        ("archive.txt", b"PK\x03\x04" + bytes(30), "a ZIP archive"),
        ("scan.pdf", blank_pdf(), "the PDF has no text layer"),
    ],
)
def test_a_file_that_is_not_text_in_its_format_is_a_400_naming_it_and_writes_no_chunk(bob, name, data, reason):
    chunks_before = demo_chunks()
    response = post_file(bob, name, data)
    assert response.status_code == 400, response.content
    message = response.json()["file"][0]
    assert message.startswith(f"{name}: ") and reason in message
    assert demo_chunks() == chunks_before
    assert not Document.objects.filter(source=f"upload:{name}").exists()
    upload = Upload.objects.get(name=name)
    assert upload.status == Upload.Status.FAILED and upload.error == message and upload.uploader == bob
    assert upload.data is None
    actions = AuditEvent.objects.filter(object_type="corpus.upload", object_id=str(upload.id))
    assert sorted(actions.values_list("action", flat=True)) == ["upload.fail", "upload.receive"]


def test_random_bytes_declared_single_byte_are_refused_as_control_characters(bob):
    noise = bytes(b for b in random.Random(7).randbytes(8192) if b)[:4096]  # no NUL: the ratio decides
    response = post_file(bob, "noise.txt", noise, content_type="text/plain; charset=latin-1")
    assert response.status_code == 400
    assert "control characters" in response.json()["file"][0]


def test_a_declared_charset_is_how_the_text_is_read(bob):
    data = "Caf\u00e9 hours: the caf\u00e9 opens at 8 am.".encode("cp1252")
    response = post_file(bob, "cafe.txt", data, content_type="text/plain; charset=windows-1252")
    assert response.status_code == 201, response.content
    document = Document.objects.get(source="upload:cafe.txt")
    assert document.chunks.get().text == "Caf\u00e9 hours: the caf\u00e9 opens at 8 am."
    utf16 = post_file(bob, "utf16.txt", "Badges are blue on Fridays.".encode("utf-16"))
    assert utf16.status_code == 201, utf16.content
    assert Document.objects.get(source="upload:utf16.txt").chunks.get().text == "Badges are blue on Fridays."


@pytest.mark.parametrize(
    ("field", "value"),
    [("text", 5), ("title", 7), ("source", []), ("metadata", "x"), ("collection", 3), ("text", True)],
)
def test_a_json_field_of_the_wrong_type_is_a_400_naming_it(bob, field, value):
    payload = {"collection": "demo", "title": "Typed", "text": "Typed text.", field: value}
    response = client_for(bob).post("/api/v1/documents", payload, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert not Upload.objects.exists() and not Document.objects.filter(title="Typed").exists()


def test_a_malformed_jsonl_upload_names_the_uploaded_file_and_line_not_a_server_path(bob):
    response = post_file(bob, "faq.jsonl", b'this line is not json\n{"title": "No text"}\n')
    assert response.status_code == 400
    message = response.json()["file"][0]
    assert "faq.jsonl:1: invalid JSON" in message and "faq.jsonl:2: missing or empty 'text'" in message
    assert "/tmp" not in message and "tmp" not in message
    partly = post_file(bob, "mixed.jsonl", b'{"title": "Wi-Fi", "text": "The guest password changes weekly."}\nnope\n')
    assert partly.status_code == 201
    assert partly.json()["failed"] == [{"name": "mixed.jsonl:2", "reason": "invalid JSON: Expecting value"}]


def test_a_small_upload_is_ingested_in_the_request_recording_its_uploader_and_audit_rows(bob):
    response = post_file(bob, "visitors.md", HANDBOOK.encode())
    assert response.status_code == 201, response.content
    assert response.json()["added"] == 1 and response.json()["documents"][0]["title"] == "Visitor handbook"
    upload = Upload.objects.get()
    assert (upload.status, upload.uploader, upload.name, upload.size) == ("done", bob, "visitors.md", len(HANDBOOK))
    assert upload.counts == {"added": 1, "updated": 0, "unchanged": 0, "retracted": 0, "failed": 0, "chunks": 1}
    assert (upload.documents_done, upload.documents_total, upload.data) == (1, 1, None)
    document = Document.objects.get(source="upload:visitors.md")
    assert document.upload == upload and document.upload.uploader == bob
    events = AuditEvent.objects.filter(object_type="corpus.upload", object_id=str(upload.id)).order_by("id")
    assert [(e.action, e.actor_name) for e in events] == [("upload.receive", "bob"), ("upload.ingest", "bob")]
    as_json = client_for(bob).post(
        "/api/v1/documents", {"collection": "demo", "title": "Lockers", "text": "Lockers close at 6 pm."}, format="json"
    )
    assert as_json.status_code == 201
    text_upload = Upload.objects.get(name="Lockers")
    assert text_upload.status == "done" and Document.objects.get(source="api:Lockers").upload == text_upload


def test_a_large_upload_goes_to_the_worker_behind_a_status_only_its_uploader_and_curators_see(
    bob, charlie, alice, settings, q_sync, django_capture_on_commit_callbacks
):
    settings.CAIRN_SYNC_UPLOAD_BYTES = 64
    text = HANDBOOK + "\n".join(f"Floor {n} has a quiet room with {n + 2} desks." for n in range(1, 40))
    chunks_before = demo_chunks()
    with django_capture_on_commit_callbacks() as queued:
        response = post_file(bob, "visitors.md", text.encode(), title="Visitor handbook (large)")
    assert response.status_code == 202, response.content
    status = response.json()
    assert response["Location"] == f"/api/v1/uploads/{status['id']}"
    assert (status["status"], status["uploader"], status["progress"]) == ("queued", "bob", {"done": 0, "total": None})
    assert demo_chunks() == chunks_before and Upload.objects.get().data is not None

    for callback in queued:  # the commit: the task is queued, and (sync) the worker runs it
        callback()
    done = client_for(bob).get(response["Location"])
    assert done.status_code == 200
    assert done.json()["status"] == "done" and done.json()["progress"] == {"done": 1, "total": 1}
    assert done.json()["counts"]["added"] == 1 and done.json()["counts"]["chunks"] >= 2
    assert done.json()["finished_at"] and Upload.objects.get().data is None
    document = Document.objects.get(source="upload:visitors.md")
    assert document.title == "Visitor handbook (large)" and document.upload.uploader == bob
    assert demo_chunks() == chunks_before + done.json()["counts"]["chunks"]
    listed = client_for(charlie).get("/api/v1/documents", {"collection": "demo", "page": 7}).json()["results"]
    assert document.id in [d["id"] for d in listed]
    actions = AuditEvent.objects.filter(object_type="corpus.upload").values_list("action", flat=True)
    assert sorted(actions) == ["upload.ingest", "upload.receive"]

    for outsider in (charlie, alice):  # readers, not curators: the upload is "not found"
        assert client_for(outsider).get(response["Location"]).status_code == 404
    assert client_for(bob).get("/api/v1/uploads/999999").status_code == 404


def test_a_large_upload_that_fails_in_the_worker_says_why_naming_the_file(
    bob, settings, q_sync, django_capture_on_commit_callbacks
):
    settings.CAIRN_SYNC_UPLOAD_BYTES = 64
    chunks_before = demo_chunks()
    with django_capture_on_commit_callbacks(execute=True):
        response = post_file(bob, "scan.pdf", blank_pdf(), content_type="application/pdf")
    assert response.status_code == 202
    failed = client_for(bob).get(response["Location"]).json()
    assert failed["status"] == "failed" and failed["error"].startswith("scan.pdf: the PDF has no text layer")
    assert demo_chunks() == chunks_before


def test_a_large_binary_is_refused_before_it_is_queued(bob, settings, django_capture_on_commit_callbacks):
    settings.CAIRN_SYNC_UPLOAD_BYTES = 64
    with django_capture_on_commit_callbacks() as queued:
        response = post_file(bob, "tool.md", ELF * 4)
    assert response.status_code == 400 and "tool.md: the content is an ELF executable" in response.json()["file"][0]
    assert not queued and Upload.objects.get().status == "failed"


def test_the_ingest_command_reports_files_that_are_not_text_by_name(tmp_path):
    (tmp_path / "good.txt").write_text("The library opens at nine.\n")
    (tmp_path / "tool.md").write_bytes(ELF)
    (tmp_path / "latin.txt").write_bytes("Caf\u00e9".encode("cp1252"))
    out, err = StringIO(), StringIO()
    call_command("ingest", str(tmp_path), collection="cli", verbosity=0, stdout=out, stderr=err)
    assert "1 added, 0 updated, 0 unchanged, 2 failed" in out.getvalue()
    assert "tool.md: the content is an ELF executable, not text" in err.getvalue()
    assert "latin.txt: not valid UTF-8" in err.getvalue()
    assert Chunk.objects.filter(document__collection__slug="cli").count() == 1
