from django.apps import AppConfig


class WritebackConfig(AppConfig):
    name = "writeback"
    verbose_name = "Write-back: validation and review of proposed corpus additions"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from corpus.lifecycle import document_restoring, document_retracted, documents_changed
        from writeback.lineage import published_answer_restorable, writebacks_requeue, writebacks_retract

        post_migrate.connect(_curators_keep_their_permissions, sender=self)
        # What rests on a document is this app's to carry along (writeback/lineage.py).
        document_retracted.connect(writebacks_retract, dispatch_uid="writeback.lineage.retract")
        documents_changed.connect(writebacks_requeue, dispatch_uid="writeback.lineage.requeue")
        document_restoring.connect(published_answer_restorable, dispatch_uid="writeback.lineage.restorable")


def _curators_keep_their_permissions(using, **kwargs) -> None:
    """After a migrate, the curators group (where it exists) holds the permissions of the models
    that moved into this app (critiques and the experience log came from pipeline, write-backs
    from corpus): an upgrade must not take from curators what they could see before."""
    from django.conf import settings
    from django.contrib.auth.models import Group

    from corpus.services import curators_group_ensure

    if Group.objects.using(using).filter(name=settings.CAIRN_CURATORS_GROUP).exists():
        curators_group_ensure()
