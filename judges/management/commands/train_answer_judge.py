"""python manage.py train_answer_judge [--from-corpus SLUG ...] [--output models/answer] [--max-minutes 60] ..."""

from collections import Counter
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from judges.answer_data import ANSWER_LABELS, answer_judge_sets
from judges.corpus_questions import NoSectionQuestions, answer_pairs, collections_training_pairs
from judges.nli_data import DEFAULT_DATA, SharedDataMissing, shared_splits
from judges.training import add_training_arguments, train_command


class Command(BaseCommand):
    help = (
        "Train Cairn's answer judge (does this sentence state an answer to this question?) on SQuAD 2.0, "
        "XQuAD, QNLI and NQ/HaluEval gold passages, hard negatives from the same passage (seeded, "
        "time-capped, resumable: re-run to continue)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="The shared data folder.")
        parser.add_argument(
            "--from-corpus", metavar="SLUG", action="append", default=[],
            help="Add questions written from this collection's headings and definition terms "
            "(judges/corpus_questions.py); repeat for several collections.",
        )  # fmt: skip
        # 3 epochs: chosen over 2 on the calibration part (benchmarks/answer_judges.py, README).
        add_training_arguments(parser, output=str(settings.CAIRN_ANSWER_MODEL), epochs=3, batch_size=32)
        # It starts from the relevance evaluator, which already reads (question, text) pairs.
        parser.set_defaults(base=str(settings.CAIRN_RELEVANCE_MODEL), max_length=128, learning_rate=3e-5)

    def handle(self, *args, data, from_corpus, base, output, seed, **options):
        try:
            shared = answer_judge_sets(data, shared_splits(data))["train"]
        except SharedDataMissing as missing:
            raise CommandError(missing.explain("--data")) from missing
        pairs = [(p.question, p.text, p.label) for p in shared]
        counts = Counter((p.source, ANSWER_LABELS[p.label]) for p in shared)
        try:
            corpus, corpus_counts = collections_training_pairs(
                from_corpus, lambda questions, _chunks: answer_pairs(questions, seed=seed), ANSWER_LABELS
            )
        except NoSectionQuestions as empty:
            raise CommandError(str(empty)) from empty
        pairs += corpus
        counts.update(corpus_counts)
        train_command(
            self.stdout,
            "training the answer judge",
            labels=ANSWER_LABELS,
            pairs=pairs,
            counts=counts,
            base=base,
            output=output,
            seed=seed,
            options=options,
        )
