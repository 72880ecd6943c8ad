"""python manage.py sync NAME [--queue]"""

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from common.exceptions import CairnError
from sources.models import Source, SyncRun
from sources.services import source_sync


class Command(BaseCommand):
    help = "Sync one source now: list it, ingest what changed, retract what is gone. Exits 1 when the sync failed."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument(
            "--queue", action="store_true",
            help="Queue the changed items for the workers (as the schedule does) instead of ingesting them here.",
        )  # fmt: skip

    def handle(self, *args, name, queue, verbosity, **options):
        source = Source.objects.select_related("collection").filter(name=name).first()
        if source is None:
            raise CommandError(f"source {name}: no such source (manage.py sources list)")
        bar = None

        def on_progress(total: int, outcome: str) -> None:
            nonlocal bar
            if bar is None:
                bar = tqdm(total=total, desc=f"syncing {name}", unit="item", disable=verbosity == 0)
            if outcome:
                bar.update(1)
                bar.set_postfix_str(outcome)

        try:
            run = source_sync(source=source, inline=not queue, on_progress=on_progress)
        except CairnError as exc:
            raise CommandError(f"source {name}: {exc.message}") from exc
        finally:
            if bar is not None:
                bar.close()
        counts = ", ".join(f"{n} {k}" for k, n in run.counts().items())
        if run.status == SyncRun.Status.SKIPPED:
            raise CommandError(f"source {name}: skipped: {run.error}")
        if run.status == SyncRun.Status.FAILED:
            raise CommandError(f"source {name}: sync {run.id} failed, nothing retracted: {run.error}")
        state = (
            "queued for the workers"
            if run.status == SyncRun.Status.RUNNING
            else f"{run.status} in {run.duration:.1f} s"
        )
        self.stdout.write(f"{name}: sync {run.id} {state}: {counts}.")
        if run.error:
            self.stdout.write(f"  the listing was incomplete, so nothing was retracted: {run.error}")
        for key, reason in run.errors.items():
            self.stderr.write(f"  {key}: {reason}")
