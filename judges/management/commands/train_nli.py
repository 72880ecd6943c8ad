"""python manage.py train_nli [--from-corpus SLUG] [--output DIR] [--max-minutes 45] ..."""

from collections import Counter
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from judges.corpus_questions import collection_chunks
from judges.nli_data import DEFAULT_DATA, LABELS, SharedDataMissing, nli_training_pairs, shared_splits
from judges.training import add_training_arguments, train_command


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
        add_training_arguments(parser, output=str(settings.CAIRN_NLI_MODEL), epochs=3, batch_size=16)

    def handle(self, *args, data, from_corpus, base, output, seed, **options):
        passages = []
        if from_corpus:
            # Active documents only: a retracted one's text must not teach the verifier.
            passages = [chunk.text for chunk in collection_chunks(from_corpus)]
            if not passages:
                raise CommandError(f"--from-corpus {from_corpus}: no chunks of active documents in that collection")
        try:
            splits = shared_splits(data)
        except SharedDataMissing as missing:
            raise CommandError(missing.explain("--data")) from missing
        pairs = nli_training_pairs(splits, seed=seed, corpus_passages=passages)
        train_command(
            self.stdout,
            "training NLI",
            labels=LABELS,
            pairs=[(p.premise, p.hypothesis, p.label) for p in pairs],
            counts=Counter((p.source, LABELS[p.label]) for p in pairs),
            base=base,
            output=output,
            seed=seed,
            options=options,
        )
