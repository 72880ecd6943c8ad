"""Two real django-q2 worker processes (`manage.py qcluster`, as on two hosts) share one sync's
items: every item is ingested exactly once, none is lost, and the last task to finish closes the
run, even when the broker hands every task out twice. The workers are other processes, so what
they read is committed (tests/threads.py) and each test deletes what it made (tests/test_worker.py)."""

from collections import Counter

import pytest
from django.conf import settings
from django_q.models import OrmQ, Task
from django_q.tasks import async_task

from corpus.models import Chunk, Document
from corpus.services import collection_get_or_create
from sources.models import Source, SourceItem, SyncRun
from sources.services import ITEM_TASK, source_create, source_sync
from tests.test_worker import forget, kill, wait_for, worker  # noqa: F401 - forget is a fixture
from tests.threads import committed

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(not settings.CAIRN_EMBEDDED_DB, reason="the workers join the embedded database"),
]
ITEMS = 8


@pytest.fixture
def forget_sources(forget):  # noqa: F811 - the fixture imported above
    """Sources hold their collection (PROTECT): they go first, with their items and runs."""
    made: list[str] = []
    yield made
    committed(lambda: Source.objects.filter(name__in=made).delete())


def test_two_worker_processes_share_a_syncs_items_with_no_duplicate_and_none_lost(forget, forget_sources, tmp_path):  # noqa: F811
    forget["collections"].append("workers-share")
    forget_sources.append("workers-share")
    share = tmp_path / "share"
    share.mkdir()
    for n in range(ITEMS):
        (share / f"room-{n}.md").write_text(
            f"# Meeting room {n}\n\nMeeting room {n} seats {n + 4} people and has a projector on floor {n % 3}.\n"
        )

    def sync_queued() -> int:
        collection, _ = collection_get_or_create(slug="workers-share", public=True)
        source = source_create(
            operator=True, collection=collection, name="workers-share", kind="folder", location=str(share)
        )
        run = source_sync(source=source)  # lists, then queues one task per item (autocommit: at once)
        # The broker hands every task out a second time (a retry after a slow worker): still once each.
        for item_id in SourceItem.objects.filter(source=source).values_list("id", flat=True):
            async_task(ITEM_TASK, run.id, item_id, group="source-items")
        return run.id

    run_id = committed(sync_queued)
    assert OrmQ.objects.count() == 2 * ITEMS
    # No redelivery of its own here: on a loaded machine a first task (the model loading) can outlast
    # tests' short retry, and a task run again records its second result over its first.
    clusters = [worker(retry_s=600), worker(retry_s=600)]
    try:
        wait_for(lambda: Task.objects.filter(group="source-items").count() == 2 * ITEMS, timeout=300,
                 what="two workers to run every item task")  # fmt: skip
    finally:
        for cluster in clusters:
            kill(cluster)

    run = SyncRun.objects.get(id=run_id)
    assert (run.status, run.queued, run.done, run.added, run.failed) == ("succeeded", ITEMS, ITEMS, ITEMS, 0)
    tasks = list(Task.objects.filter(group="source-items"))
    results = Counter(task.result for task in tasks)
    assert results["added"] == ITEMS and results["added"] + results["done"] + results["busy"] == 2 * ITEMS, results
    documents = Document.objects.filter(collection__slug="workers-share")
    assert documents.count() == ITEMS and documents.values("source").distinct().count() == ITEMS
    assert Chunk.objects.filter(document__in=documents).values("document").distinct().count() == ITEMS
    # The two processes worked at the same time: some two item tasks overlap.
    spans = sorted((task.started, task.stopped) for task in tasks if task.result == "added")
    assert any(later[0] < earlier[1] for earlier, later in zip(spans, spans[1:])), spans
