from django.apps import AppConfig


class WritebackConfig(AppConfig):
    name = "writeback"
    verbose_name = "Write-back: validation and review of proposed corpus additions"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        post_migrate.connect(_curators_keep_their_permissions, sender=self)


def _curators_keep_their_permissions(using, **kwargs) -> None:
    """After a migrate, the curators group (where it exists) holds the permissions of the models
    that moved into this app (critiques and the experience log came from pipeline): an upgrade
    must not take from curators what they could see before."""
    from django.conf import settings
    from django.contrib.auth.models import Group

    from corpus.services import curators_group_ensure

    if Group.objects.using(using).filter(name=settings.CAIRN_CURATORS_GROUP).exists():
        curators_group_ensure()
