from django.apps import AppConfig


class CorpusConfig(AppConfig):
    name = "corpus"
    verbose_name = "Corpus"
