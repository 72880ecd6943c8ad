from django.apps import AppConfig


class CorpusConfig(AppConfig):
    name = "corpus"
    verbose_name = "Corpus"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from common.postgres.roles import on_post_migrate
        from corpus import checks, signals  # noqa: F401 - register the start-up checks and the audit receivers

        # After every migrate: the application's role gets its rights on the new tables.
        post_migrate.connect(on_post_migrate, dispatch_uid="cairn-app-role")
