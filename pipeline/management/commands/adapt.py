"""python manage.py adapt --collection SLUG [--passages 120] [--no-teacher]
python manage.py adapt --collection SLUG --retire VERSION"""

from django.core.management.base import BaseCommand, CommandError

from corpus.models import Collection
from pipeline.judge_adaptation import AdaptationUnfinished, configured_teacher, judge_version_retire, judges_adapt
from writeback.models import JudgeVersion


class Command(BaseCommand):
    help = (
        "Adapt the answer judge and relevance evaluator to one collection from questions the deployment's model "
        "server writes over its passages (pipeline/judge_adaptation.py). The adapted judges serve that collection "
        "only when its held-out questions, answered end to end, fare better with them. Resumable: run it again after "
        "an interruption. Training needs PyTorch (make dev, or requirements-train.txt) on this host."
    )

    def add_arguments(self, parser):
        parser.add_argument("--collection", required=True, metavar="SLUG")
        parser.add_argument("--passages", type=int, default=120, help="Passages the teacher is asked about (120).")
        parser.add_argument(
            "--no-teacher", action="store_true", help="Use only the replies cached before; ask no model server."
        )
        parser.add_argument("--retire", type=int, metavar="VERSION", help="Stop this version serving instead.")

    def handle(self, *args, collection, passages, no_teacher, retire, **options):
        if passages < 1:
            raise CommandError("--passages: must be at least 1")
        found = Collection.objects.filter(slug=collection).first()
        if found is None:
            raise CommandError(f"--collection: no collection {collection!r}")
        if retire is not None:
            row = found.judge_versions.filter(version=retire).first()
            if row is None:
                raise CommandError(f"--retire: {collection} has no judges v{retire}")
            judge_version_retire(row, actor=None)
            self.stdout.write(f"judges v{retire} of {collection} retired")
            return
        llm, model = (None, "") if no_teacher else configured_teacher()
        if llm is None and not no_teacher:
            self.stdout.write("No model server is configured (CAIRN_OPENAI_BASE_URL or Ollama): cached replies only.")
        try:
            row = judges_adapt(found, llm=llm, model=model, passages=passages, progress=self.stdout.write)
        except AdaptationUnfinished as unfinished:
            raise CommandError(str(unfinished)) from unfinished
        except ImportError as missing:
            raise CommandError(f"training needs PyTorch on this host (make dev): {missing}") from missing
        figures = row.figures
        self.stdout.write(f"judges v{row.version} of {collection}: {row.get_status_display()}")
        if "held_out_adapted" in figures:
            self.stdout.write(
                f"held out, shipped: {figures['held_out_shipped']}; adapted: {figures['held_out_adapted']}"
            )
        if row.status == JudgeVersion.Status.KEPT_BACK:
            self.stdout.write(f"why: {figures.get('why', '')}")
