"""The one way to write the audit trail (corpus.models.AuditEvent is append-only)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import models

from corpus.models import AuditEvent

SYSTEM = "system"


def audit(
    action: str,
    obj: models.Model | tuple[str, object],
    *,
    actor: AbstractBaseUser | None = None,
    summary: str = "",
    before: dict | None = None,
    after: dict | None = None,
) -> AuditEvent:
    """Record that `actor` (None: the system) did `action` to `obj` (a model instance, or a
    (type, id) pair for things that are not rows, such as settings)."""
    if isinstance(obj, models.Model):
        object_type, object_id = obj._meta.label_lower, obj.pk
    else:
        object_type, object_id = obj
    authenticated = actor is not None and actor.is_authenticated
    return AuditEvent.objects.create(
        actor=actor if authenticated else None,
        actor_name=actor.get_username() if authenticated else SYSTEM,
        action=action,
        object_type=object_type,
        object_id=str(object_id),
        summary=summary,
        before=before or {},
        after=after or {},
    )
