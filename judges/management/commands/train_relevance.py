"""python manage.py train_relevance [--from-corpus SLUG ...] [--output DIR] [--max-minutes 45] ..."""

from collections import Counter
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from judges.corpus_questions import NoSectionQuestions, collections_training_pairs, relevance_pairs
from judges.nli_data import DEFAULT_DATA, SharedDataMissing, shared_splits
from judges.relevance_data import RELEVANCE_LABELS, shared_relevance_sets, tqdm_progress
from judges.training import add_training_arguments, train_command


class Command(BaseCommand):
    help = (
        "Train Cairn's relevance cross-encoder on NQ and HaluEval questions with hard negatives mined by "
        "Cairn's own hybrid retrieval (seeded, time-capped, resumable: re-run to continue)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="The shared data folder.")
        # The shipped model's recipe: 3 epochs, 3 hard negatives. Against 1 epoch and 2 negatives it
        # lifted CRAG's CORRECT with the gold passage retrieved from 52% to 73% (forward_path.py).
        add_training_arguments(parser, output=str(settings.CAIRN_RELEVANCE_MODEL), epochs=3, batch_size=32)
        parser.add_argument("--negatives", type=int, default=3, help="Hard negatives per question.")
        parser.add_argument(
            "--from-corpus", metavar="SLUG", action="append", default=[],
            help="Add questions written from this collection's headings and definition terms against their "
            "section and its neighbouring sections (judges/corpus_questions.py); repeat for several.",
        )  # fmt: skip

    def handle(self, *args, data, base, output, negatives, from_corpus, seed, **options):
        try:
            splits = shared_splits(data)
        except SharedDataMissing as missing:
            raise CommandError(missing.explain("--data")) from missing
        self.stdout.write("Mining hard negatives with Cairn's hybrid retrieval (a rolled-back ingest)...")
        shared = shared_relevance_sets(splits, negatives=negatives, progress=tqdm_progress())["train"]
        pairs = [(p.question, p.text, p.label) for p in shared]
        counts = Counter((p.kind, RELEVANCE_LABELS[p.label]) for p in shared)
        try:
            corpus, corpus_counts = collections_training_pairs(
                from_corpus, lambda questions, chunks: relevance_pairs(questions, chunks, seed=seed), RELEVANCE_LABELS
            )
        except NoSectionQuestions as empty:
            raise CommandError(str(empty)) from empty
        pairs += corpus
        counts.update(corpus_counts)
        train_command(
            self.stdout,
            "training relevance",
            labels=RELEVANCE_LABELS,
            pairs=pairs,
            counts=counts,
            base=base,
            output=output,
            seed=seed,
            options=options,
        )
