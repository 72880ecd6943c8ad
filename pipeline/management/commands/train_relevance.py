"""python manage.py train_relevance [--output DIR] [--max-minutes 45] ..."""

from collections import Counter
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from corpus.embedder import bundled_model_path
from pipeline.nli_data import shared_splits
from pipeline.relevance_data import RELEVANCE_LABELS, shared_relevance_sets, tqdm_progress
from pipeline.training import TrainingConfig, train_with_progress

DEFAULT_DATA = settings.BASE_DIR.parent / "shared" / "data"


class Command(BaseCommand):
    help = (
        "Train Cairn's relevance cross-encoder on NQ and HaluEval questions with hard negatives mined by "
        "Cairn's own hybrid retrieval (seeded, time-capped, resumable: re-run to continue)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="The shared data folder.")
        parser.add_argument("--base", default=str(bundled_model_path()), help="Model directory to start from.")
        parser.add_argument("--output", default=str(settings.CAIRN_RELEVANCE_MODEL))
        parser.add_argument("--epochs", type=int, default=1)
        parser.add_argument("--batch-size", type=int, default=32)
        parser.add_argument("--learning-rate", type=float, default=5e-5)
        parser.add_argument("--max-length", type=int, default=160)
        parser.add_argument("--layers", type=int, help="Keep only the first N transformer layers.")
        parser.add_argument("--negatives", type=int, default=2, help="Hard negatives per question.")
        parser.add_argument("--seed", type=int, default=13)
        parser.add_argument("--max-minutes", type=float, default=45.0)

    def handle(self, *args, data, base, output, negatives, seed, **options):
        if not (data / "nq_open_oracle").is_dir() or not (data / "halueval_qa").is_dir():
            raise CommandError(
                f"{data}: needs nq_open_oracle/ and halueval_qa/; pass --data with the shared data folder"
            )
        self.stdout.write("Mining hard negatives with Cairn's hybrid retrieval (a rolled-back ingest)...")
        pairs = shared_relevance_sets(shared_splits(data), negatives=negatives, progress=tqdm_progress())["train"]
        counts = Counter((p.kind, RELEVANCE_LABELS[p.label]) for p in pairs)
        self.stdout.write(
            f"{len(pairs)} training pairs: " + ", ".join(f"{k}/{v} {n}" for (k, v), n in sorted(counts.items()))
        )
        config = TrainingConfig(
            base=base,
            output=output,
            labels=RELEVANCE_LABELS,
            epochs=options["epochs"],
            batch_size=options["batch_size"],
            learning_rate=options["learning_rate"],
            max_length=options["max_length"],
            layers=options["layers"],
            seed=seed,
            max_minutes=options["max_minutes"],
            data={f"{kind}/{label}": n for (kind, label), n in sorted(counts.items())},
        )
        train_with_progress(self.stdout, "training relevance", config, [(p.question, p.text, p.label) for p in pairs])
