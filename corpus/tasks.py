"""Background tasks for the corpus (django-q2). Each is idempotent: the broker may hand a task out
again after a worker dies (Q_CLUSTER retry)."""

from __future__ import annotations

import logging

from django_q.tasks import async_task

from corpus.services import upload_claim
from corpus.services import upload_ingest as ingest
from readers.extract import ExtractionError

INGEST_UPLOAD = "corpus.tasks.upload_ingest"

log = logging.getLogger(__name__)


def upload_ingest(upload_id: int) -> str:
    """Extract and ingest a queued upload; its row says how it went."""
    upload = upload_claim(upload_id=upload_id)
    if upload is None:
        return "already finished"
    try:
        ingest(upload=upload, data=bytes(upload.data))
    except ExtractionError as exc:  # the file's fault, recorded on the row: nothing to retry
        log.info("upload %s failed: %s", upload_id, exc)
        return "failed"
    return "done"


def upload_ingest_enqueue(upload_id: int) -> None:
    async_task(INGEST_UPLOAD, upload_id, task_name=f"ingest-upload-{upload_id}", group="uploads")
