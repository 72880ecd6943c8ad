from django.apps import AppConfig


class PipelineConfig(AppConfig):
    name = "pipeline"
    verbose_name = "Question answering"

    def ready(self) -> None:
        from corpus.signals import collection_text_changed
        from pipeline.judge_adaptation import adapt_when_changed

        collection_text_changed.connect(adapt_when_changed, dispatch_uid="cairn-adapt-judges")
