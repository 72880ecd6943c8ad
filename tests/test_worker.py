"""A real django-q2 worker process (`manage.py qcluster`): it ingests an upload too large for the
request and validates write-backs, as it does in production (the other tests run django-q2 in
sync mode); and a worker killed mid-validation leaves its candidate PENDING_VALIDATION, and a
restarted worker finishes it (the ORM broker hands the unacknowledged task out again after
Q_CLUSTER retry seconds; validation is idempotent).

The worker is another process, so what it reads must be committed (tests/threads.py), and what
it writes is committed: each test deletes its rows afterwards, audit rows included.
"""

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.db.models import Q
from django.test import override_settings
from django.utils import timezone
from django_q.models import OrmQ, Task

from corpus.models import AuditEvent, Chunk, Collection, Document, Upload
from corpus.services import collection_get_or_create, curators_group_ensure, documents_ingest
from readers.extract import ExtractedDocument
from tests.conftest import client_for
from tests.threads import committed
from writeback.models import Critique, ExperienceLog, WriteBack
from writeback.proposals import writeback_propose
from writeback.tasks import writeback_validate_enqueue

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not settings.CAIRN_EMBEDDED_DB, reason="the worker joins the embedded database"),
]
ROOT = Path(__file__).resolve().parent.parent
RETRY_S = 21


def worker(*, retry_s: int = RETRY_S) -> subprocess.Popen:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "CAIRN_DB_NAME": connection.settings_dict["NAME"],
        "CAIRN_Q_WORKERS": "1",
        "CAIRN_Q_TIMEOUT": str(retry_s - 1),
        "CAIRN_Q_RETRY": str(retry_s),
        "CAIRN_Q_SYNC": "0",
    }
    return subprocess.Popen(
        [sys.executable, "manage.py", "qcluster"], cwd=ROOT, env=env, start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def kill(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGKILL)  # the cluster and its worker children, mid-whatever
    process.wait(timeout=30)


def wait_for(condition, *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def status_of(writeback_id: int) -> str:
    return WriteBack.objects.values_list("status", flat=True).get(id=writeback_id)


@pytest.fixture
def forget():
    """Delete, after the test, the committed rows it made: its collections (with their documents,
    uploads and write-backs), its users, the queue, and the audit rows written since it began (the
    trail refuses deletes: the trigger is left out, for this connection only, as replication would)."""
    first_audit = committed(lambda: (AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0) + 1)
    made = {"collections": [], "users": [], "writebacks": []}
    yield made

    def cleanup():
        writebacks = WriteBack.objects.filter(
            Q(collection__slug__in=made["collections"]) | Q(id__in=made["writebacks"])
        )
        Critique.objects.filter(writeback__in=writebacks).delete()
        writebacks.delete()
        Document.objects.filter(collection__slug__in=made["collections"]).delete()
        Collection.objects.filter(slug__in=made["collections"]).delete()
        User.objects.filter(username__in=made["users"]).delete()
        OrmQ.objects.all().delete()
        Task.objects.all().delete()
        with connection.cursor() as cursor:
            cursor.execute("SET session_replication_role = replica")
            cursor.execute(f"DELETE FROM {AuditEvent._meta.db_table} WHERE id >= %s", [first_audit])
            cursor.execute("SET session_replication_role = DEFAULT")

    committed(cleanup)


AURORA = [
    ("Aurora project lead", "The Aurora project is led by Dr. Mira Okafor, who joined the research division in 2019."),
    ("Aurora project budget", "The Aurora project has a budget of 4.2 million euros for the year 2026."),
]
FLOORS = "# Visitor handbook\n\n" + "\n".join(f"Floor {n} has a quiet room with {n + 2} desks." for n in range(1, 40))


def test_an_upload_too_large_for_the_request_is_ingested_by_the_worker(forget):
    forget["collections"].append("worker-uploads")
    forget["users"].append("wanda")

    def post_upload() -> tuple[int, dict]:
        collection_get_or_create(slug="worker-uploads", public=True)
        wanda = User.objects.create_user("wanda", password="wanda-pw", is_staff=True)
        wanda.groups.add(curators_group_ensure())
        upload = SimpleUploadedFile("floors.md", FLOORS.encode(), content_type="text/plain")
        with override_settings(CAIRN_SYNC_UPLOAD_BYTES=64):
            response = client_for(wanda).post(
                "/api/v1/documents", {"collection": "worker-uploads", "file": upload, "title": "Visitor handbook"},
                format="multipart",
            )  # fmt: skip
        return response.status_code, response.json()

    code, queued = committed(post_upload)
    assert code == 202 and queued["status"] == "queued", queued
    assert OrmQ.objects.count() == 1 and not Document.objects.filter(collection__slug="worker-uploads").exists()

    cluster = worker()
    try:  # until the worker has run the task and saved its result
        wait_for(lambda: Task.objects.filter(name=f"ingest-upload-{queued['id']}").exists(), timeout=180,
                 what="the worker to run the upload's task")  # fmt: skip
    finally:
        kill(cluster)
    upload = Upload.objects.get(id=queued["id"])
    assert (upload.status, upload.error, upload.data) == ("done", "", None)
    assert upload.counts["added"] == 1 and upload.counts["chunks"] >= 2
    assert (upload.documents_done, upload.documents_total) == (1, 1)
    document = Document.objects.get(upload=upload)
    assert (document.title, document.collection.slug) == ("Visitor handbook", "worker-uploads")
    chunks = Chunk.objects.filter(document=document)
    assert chunks.count() == upload.counts["chunks"] and not chunks.filter(embedding__isnull=True).exists()
    assert "Floor 39 has a quiet room with 41 desks." in "".join(chunks.values_list("text", flat=True))
    task = Task.objects.get(name=f"ingest-upload-{upload.id}")
    assert task.success and task.result == "done"
    events = AuditEvent.objects.filter(object_type="corpus.upload", object_id=str(upload.id)).order_by("id")
    assert [(e.action, e.actor_name) for e in events] == [("upload.receive", "wanda"), ("upload.ingest", "wanda")]


def test_the_worker_validates_write_backs_and_records_each_verdict(forget):
    forget["collections"].append("worker-handbook")

    def propose_and_enqueue() -> tuple[int, int]:
        collection, _ = collection_get_or_create(slug="worker-handbook", public=True)
        report = documents_ingest(
            collection=collection,
            documents=[ExtractedDocument(t, text, f"worker-handbook/{t}", "text/markdown") for t, text in AURORA],
        )
        evidence = [
            {"n": n, "chunk_id": chunk.id, "document_id": chunk.document_id, "title": chunk.document.title,
             "text": chunk.text}
            for n, chunk in enumerate(
                (Chunk.objects.select_related("document").get(document=o.document) for o in report.outcomes), start=1
            )
        ]  # fmt: skip
        ids = []
        for answer in (
            "The Aurora project is led by Dr. Mira Okafor [1]. The Aurora project has a budget of 4.2 million euros [2].",
            "The Aurora project is led by Dr. Mira Okafor [1]. It costs 4.2 million euros [7].",  # no evidence [7]
        ):
            writeback, _ = writeback_propose(
                response_id=uuid.uuid4(), asked_by=None, question="Who leads the Aurora project and what is its budget?",
                answer=answer, evidence=evidence, collection_id=collection.id,
            )  # fmt: skip
            writeback_validate_enqueue(writeback.id)
            ids.append(writeback.id)
        return tuple(ids)

    grounded, miscited = committed(propose_and_enqueue)
    assert status_of(grounded) == status_of(miscited) == WriteBack.Status.PENDING_VALIDATION
    cluster = worker()
    try:  # until the worker has run both tasks and saved their results
        wait_for(lambda: Task.objects.filter(group="validation").count() == 2, timeout=240,
                 what="the worker to run both validation tasks")  # fmt: skip
    finally:
        kill(cluster)

    passed = WriteBack.objects.get(id=grounded)
    assert passed.status == WriteBack.Status.PENDING_REVIEW, passed.critique
    assert passed.grounding >= 0.9 and passed.attribution == 1.0 and passed.critique == []
    assert ExperienceLog.objects.get(writeback=passed).accepted and not Critique.objects.filter(writeback=passed)
    rejected = WriteBack.objects.get(id=miscited)
    assert rejected.status == WriteBack.Status.REJECTED and rejected.attribution == 0.5
    (attribution,) = [c for c in rejected.critique if c["check"] == "attribution"]
    assert attribution["bad_citations"] == [7]
    assert not ExperienceLog.objects.get(writeback=rejected).accepted
    assert Critique.objects.get(writeback=rejected).source == Critique.Source.VALIDATION
    verdicts = {
        int(e.object_id): e.summary
        for e in AuditEvent.objects.filter(action="writeback.validate", object_id__in=[str(grounded), str(miscited)])
    }
    assert verdicts[grounded] == "passed: awaits review"
    assert verdicts[miscited].startswith("rejected: ") and "attribution" in verdicts[miscited]
    results = dict(Task.objects.filter(group="validation").values_list("name", "result"))
    assert results == {f"validate-writeback-{grounded}": "PENDING_REVIEW", f"validate-writeback-{miscited}": "REJECTED"}


def waiting_on_chunks() -> list[str]:
    """The statements of client connections waiting for a lock on the chunk table. Read on a fresh
    connection: pg_stat_activity stays as first read for the rest of a transaction."""

    def read():
        with connection.cursor() as cursor:
            cursor.execute(
                """SELECT activity.query FROM pg_locks locks JOIN pg_stat_activity activity USING (pid)
                   WHERE NOT locks.granted AND locks.relation = %s::regclass
                   AND activity.backend_type = 'client backend'""",
                [Chunk._meta.db_table],
            )
            return [query for (query,) in cursor.fetchall()]

    return committed(read)


def test_a_worker_killed_mid_validation_leaves_the_candidate_pending_and_a_restart_finishes_it(forget):
    def propose_and_enqueue() -> int:
        chunk = Chunk.objects.select_related("document").filter(document__collection__slug="demo").first()
        writeback, _ = writeback_propose(
            response_id=uuid.uuid4(), asked_by=None, question=f"What does {chunk.document.title} say?",
            answer=f"{chunk.text.split('. ')[0]}. [1]", collection_id=chunk.document.collection_id,
            evidence=[{"n": 1, "chunk_id": chunk.id, "document_id": chunk.document_id, "title": chunk.document.title,
                       "text": chunk.text}],
        )  # fmt: skip
        writeback_validate_enqueue(writeback.id)
        return writeback.id

    writeback_id = committed(propose_and_enqueue)
    forget["writebacks"].append(writeback_id)
    # Validation reads the chunk table once it has read its write-back and its evidence, to find the
    # nearest existing text: with the table locked, the worker stops there, mid-validation, where
    # the test can see it and kill it.
    lock = connection.copy()
    lock.set_autocommit(False)
    try:
        with lock.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {Chunk._meta.db_table} IN ACCESS EXCLUSIVE MODE")
        first = worker()
        try:
            wait_for(lambda: OrmQ.objects.filter(lock__gt=timezone.now()).exists(), timeout=120, what="the task taken")
            wait_for(waiting_on_chunks, timeout=RETRY_S - 2, what="the validation to reach the chunk table")
            (stopped_at,) = waiting_on_chunks()
            assert "<=>" in stopped_at, stopped_at  # nearest_existing's cosine distance
        finally:
            kill(first)
    finally:
        lock.rollback()
        lock.close()
    assert status_of(writeback_id) == WriteBack.Status.PENDING_VALIDATION
    assert not AuditEvent.objects.filter(action="writeback.validate", object_id=str(writeback_id)).exists()

    second = worker()
    try:
        wait_for(lambda: status_of(writeback_id) != WriteBack.Status.PENDING_VALIDATION, timeout=RETRY_S + 120,
                 what="the restarted worker to finish")  # fmt: skip
    finally:
        kill(second)
    assert status_of(writeback_id) in (WriteBack.Status.PENDING_REVIEW, WriteBack.Status.REJECTED)
    # Validated once, by the second worker: one verdict, one experience row.
    assert AuditEvent.objects.filter(action="writeback.validate", object_id=str(writeback_id)).count() == 1
    assert ExperienceLog.objects.filter(writeback_id=writeback_id).count() == 1
