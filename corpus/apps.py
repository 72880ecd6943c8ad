from django.apps import AppConfig


class CorpusConfig(AppConfig):
    name = "corpus"
    verbose_name = "Corpus"

    def ready(self) -> None:
        from corpus import signals  # noqa: F401 - registers the audit receivers
