"""Audit rows for collection permission changes (readers, curators, public), wherever they are made (admin, shell, services):
who may read a collection is a state change that matters. The acting user is not known here;
the admin records it in its own history, the audit row says what changed."""

from django.db.models.signals import m2m_changed, pre_save
from django.dispatch import Signal, receiver

from corpus.audit import audit
from corpus.models import Collection

# Sent after an ingest added or changed documents of `collection` (corpus.services.documents_ingest):
# what rests on a collection's text (the judges adapted to it) may listen from the layers above.
collection_text_changed = Signal()


def _groups_changed(field: str, role: str, instance, action, reverse, pk_set) -> None:
    if action not in ("post_add", "post_remove", "post_clear") or (reverse and not pk_set):
        return
    from django.contrib.auth.models import Group

    collections = Collection.objects.filter(id__in=pk_set) if reverse else [instance]
    groups = (
        sorted(Group.objects.filter(id__in=pk_set).values_list("name", flat=True)) if not reverse else [instance.name]
    )
    verb = {"post_add": "added", "post_remove": "removed", "post_clear": "cleared"}[action]
    for collection in collections:
        audit(f"collection.{field}", collection, summary=f"{role} {verb}: {', '.join(groups) or 'all groups'}",
              after={field: sorted(getattr(collection, field).values_list("name", flat=True))})  # fmt: skip


@receiver(m2m_changed, sender=Collection.groups.through)
def collection_groups_changed(sender, instance, action, reverse, pk_set, **kwargs):
    _groups_changed("groups", "readers", instance, action, reverse, pk_set)


@receiver(m2m_changed, sender=Collection.curator_groups.through)
def collection_curators_changed(sender, instance, action, reverse, pk_set, **kwargs):
    _groups_changed("curator_groups", "curators", instance, action, reverse, pk_set)


@receiver(pre_save, sender=Collection)
def collection_visibility_changed(sender, instance, raw=False, **kwargs):
    if raw or instance.pk is None:
        return
    was_public = Collection.objects.filter(pk=instance.pk).values_list("is_public", flat=True).first()
    if was_public is not None and was_public != instance.is_public:
        audit("collection.public", instance, summary="made public" if instance.is_public else "made private",
              before={"is_public": was_public}, after={"is_public": instance.is_public})  # fmt: skip
