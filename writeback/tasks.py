"""Background tasks (django-q2). Each is idempotent: the broker may hand a task out again after a
worker dies (Q_CLUSTER retry), and `manage.py validate_pending` may run it by hand."""

from __future__ import annotations

from django_q.tasks import async_task

VALIDATE = "writeback.tasks.writeback_validate"


def writeback_validate(writeback_id: int) -> str:
    from writeback.validation import writeback_validate as validate

    writeback = validate(writeback_id)
    return writeback.status if writeback else "already validated"


def writeback_validate_enqueue(writeback_id: int) -> None:
    async_task(VALIDATE, writeback_id, task_name=f"validate-writeback-{writeback_id}", group="validation")
