from django.apps import AppConfig


class SourcesConfig(AppConfig):
    name = "sources"
    verbose_name = "Sources"

    def ready(self) -> None:
        from sources import checks  # noqa: F401 - registers the start-up checks
