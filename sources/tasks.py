"""Background tasks for sources (django-q2). Each takes ids, loads, calls one service and returns;
each is safe to run again (the broker hands a task out again after a worker dies)."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from sources.models import Source
from sources.services import source_item_sync as item_sync
from sources.services import source_sync as sync


def source_sync(source_id: int, requested_by: int | None = None) -> str:
    """List a source and queue its changed items (the schedule's and the API's sync)."""
    source = Source.objects.select_related("collection").filter(pk=source_id, enabled=True).first()
    if source is None:
        return "no such enabled source"
    actor = get_user_model().objects.filter(pk=requested_by).first() if requested_by else None
    run = sync(source=source, actor=actor)
    return f"{run.status}: {run.queued} queued" if run.status != "failed" else f"failed: {run.error}"


def source_item_sync(run_id: int, item_id: int) -> str:
    """Fetch and ingest one item a sync queued."""
    return item_sync(run_id=run_id, item_id=item_id)
