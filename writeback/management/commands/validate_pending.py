"""python manage.py validate_pending [--enqueue]: finish every write-back still PENDING_VALIDATION."""

from django.core.management.base import BaseCommand
from tqdm import tqdm

from writeback.models import WriteBack
from writeback.tasks import writeback_validate_enqueue
from writeback.validation import writeback_validate


class Command(BaseCommand):
    help = (
        "Validate the write-backs still PENDING_VALIDATION here and now (or, with --enqueue, hand them to "
        "the workers). Safe to run beside workers: validation is idempotent and skips what is taken."
    )

    def add_arguments(self, parser):
        parser.add_argument("--enqueue", action="store_true", help="Queue them for the workers instead.")

    def handle(self, *args, enqueue, **options):
        pending = list(
            WriteBack.objects.filter(status=WriteBack.Status.PENDING_VALIDATION).values_list("id", flat=True)
        )
        if enqueue:
            for writeback_id in pending:
                writeback_validate_enqueue(writeback_id)
            self.stdout.write(f"queued {len(pending)} write-back(s) for validation")
            return
        outcomes = {}
        for writeback_id in tqdm(pending, desc="validating", unit="write-back", disable=not pending):
            writeback = writeback_validate(writeback_id)
            status = writeback.status if writeback else "taken elsewhere"
            outcomes[status] = outcomes.get(status, 0) + 1
        self.stdout.write(f"validated {len(pending)} write-back(s): {outcomes or 'none pending'}")
