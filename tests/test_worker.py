"""A real django-q2 worker process: a worker killed mid-validation leaves its candidate
PENDING_VALIDATION, and a restarted worker finishes it (the ORM broker hands the unacknowledged
task out again after Q_CLUSTER retry seconds; validation is idempotent).

The worker is another process, so what it reads must be committed (tests/threads.py)."""

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone
from django_q.models import OrmQ, Task

from corpus.models import Chunk, WriteBack
from corpus.writebacks import writeback_propose
from pipeline.models import Critique
from tests.threads import committed
from writeback.tasks import writeback_validate_enqueue

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not settings.CAIRN_EMBEDDED_DB, reason="the worker joins the embedded database"),
]
ROOT = Path(__file__).resolve().parent.parent
RETRY_S = 21


def worker() -> subprocess.Popen:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "CAIRN_DB_NAME": connection.settings_dict["NAME"],
        "CAIRN_Q_WORKERS": "1",
        "CAIRN_Q_TIMEOUT": str(RETRY_S - 1),
        "CAIRN_Q_RETRY": str(RETRY_S),
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


def test_a_worker_killed_mid_validation_leaves_the_candidate_pending_and_a_restart_finishes_it():
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
    first = worker()
    try:
        # Taken: the broker locked the task for this worker, which now loads models and validates.
        wait_for(lambda: OrmQ.objects.filter(lock__gt=timezone.now()).exists(), timeout=120, what="the task taken")
        time.sleep(1.0)
    finally:
        kill(first)
    assert status_of(writeback_id) == WriteBack.Status.PENDING_VALIDATION

    second = worker()
    try:
        wait_for(lambda: status_of(writeback_id) != WriteBack.Status.PENDING_VALIDATION, timeout=RETRY_S + 120,
                 what="the restarted worker to finish")  # fmt: skip
    finally:
        kill(second)
    assert status_of(writeback_id) in (WriteBack.Status.PENDING_REVIEW, WriteBack.Status.REJECTED)

    def cleanup():  # the audit rows stay: the trail is append-only
        Critique.objects.filter(writeback_id=writeback_id).delete()
        WriteBack.objects.filter(id=writeback_id).delete()
        OrmQ.objects.all().delete()
        Task.objects.all().delete()

    committed(cleanup)
