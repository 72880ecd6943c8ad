"""python manage.py train_nli [--from-corpus SLUG] [--output DIR] [--max-minutes 45] ..."""

from collections import Counter
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from corpus.embedder import bundled_model_path
from corpus.models import Chunk
from pipeline.nli_data import LABELS, nli_training_pairs, shared_splits
from pipeline.training import TrainingConfig, train_with_progress

DEFAULT_DATA = settings.BASE_DIR.parent / "shared" / "data"


class Command(BaseCommand):
    help = (
        "Train Cairn's NLI cross-encoder (seeded, time-capped, resumable: re-run the same command to "
        "continue from the checkpoint in OUTPUT/checkpoint)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--data",
            type=Path,
            default=DEFAULT_DATA,
            help="The shared data folder (nli/, nq_open_oracle/, halueval_qa/).",
        )
        parser.add_argument("--from-corpus", metavar="SLUG", help="Add synthetic pairs from this collection's chunks.")
        parser.add_argument("--base", default=str(bundled_model_path()), help="Model directory to start from.")
        parser.add_argument("--output", default=str(settings.CAIRN_NLI_MODEL))
        parser.add_argument("--epochs", type=int, default=3)
        parser.add_argument("--batch-size", type=int, default=16)
        parser.add_argument("--learning-rate", type=float, default=5e-5)
        parser.add_argument("--max-length", type=int, default=160)
        parser.add_argument("--layers", type=int, help="Keep only the first N transformer layers.")
        parser.add_argument("--seed", type=int, default=13)
        parser.add_argument("--max-minutes", type=float, default=45.0)

    def handle(self, *args, data, from_corpus, base, output, seed, **options):
        if not (data / "nli").is_dir():
            raise CommandError(f"{data}: no nli/ folder here; pass --data with the shared data folder")
        passages = []
        if from_corpus:
            passages = list(Chunk.objects.filter(document__collection__slug=from_corpus).values_list("text", flat=True))
            if not passages:
                raise CommandError(f"--from-corpus {from_corpus}: no chunks in that collection")
        pairs = nli_training_pairs(shared_splits(data), seed=seed, corpus_passages=passages)
        counts = Counter((p.source, LABELS[p.label]) for p in pairs)
        self.stdout.write(
            f"{len(pairs)} training pairs: " + ", ".join(f"{s}/{label} {n}" for (s, label), n in sorted(counts.items()))
        )
        config = TrainingConfig(
            base=base,
            output=output,
            labels=LABELS,
            epochs=options["epochs"],
            batch_size=options["batch_size"],
            learning_rate=options["learning_rate"],
            max_length=options["max_length"],
            layers=options["layers"],
            seed=seed,
            max_minutes=options["max_minutes"],
            data={f"{source}/{label}": n for (source, label), n in sorted(counts.items())},
        )
        train_with_progress(self.stdout, "training NLI", config, [(p.premise, p.hypothesis, p.label) for p in pairs])
