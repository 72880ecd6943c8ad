"""Audit rows for what decides who may read what, and for sign-in lockouts."""

from axes.signals import user_locked_out
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models.signals import m2m_changed
from django.dispatch import receiver
from django.utils import timezone

from corpus.audit import audit
from corpus.models import AuditEvent

User = get_user_model()


@receiver(m2m_changed, sender=User.groups.through)
def user_groups_changed(sender, instance, action, reverse, pk_set, **kwargs):
    """A user's groups decide which collections they read: every change is audited, from the
    admin, a command or a directory sync alike."""
    if action not in ("post_add", "post_remove", "post_clear") or (action != "post_clear" and not pk_set):
        return  # nothing changed (adding a group a user already has sends an empty set)
    verb = {"post_add": "added to", "post_remove": "removed from", "post_clear": "removed from"}[action]
    users = User.objects.filter(pk__in=pk_set) if reverse else [instance]
    groups = (
        [instance.name] if reverse else sorted(Group.objects.filter(pk__in=pk_set or ()).values_list("name", flat=True))
    )
    for user in users:
        audit("user.groups", user, summary=f"{verb} {', '.join(groups) or 'all groups'}",
              after={"groups": sorted(user.groups.values_list("name", flat=True))})  # fmt: skip


@receiver(user_locked_out)
def sign_in_locked_out(sender, request, username, ip_address, **kwargs):
    """One audit row per lockout: axes signals again at every attempt while it lasts, and a brute
    force must not flood the trail."""
    object_id = (username or "?")[:64]
    since = timezone.now() - settings.AXES_COOLOFF_TIME
    if AuditEvent.objects.filter(
        action="user.locked_out", object_id=object_id, after__ip_address=ip_address, created_at__gte=since
    ).exists():
        return
    audit("user.locked_out", ("auth.user", object_id),
          summary=f"too many failed sign-ins for {username!r} from {ip_address}",
          after={"username": username, "ip_address": ip_address})  # fmt: skip
