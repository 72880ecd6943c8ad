"""python manage.py calibrate_gate [--far 0.05] [--frr 0.05] [--search-budget 0.10] [--auto-publish-far 0.01] [--answer-judge-only]
python manage.py calibrate_gate --collection SLUG [--questions 200] [--far 0.05] [--search-budget 0.10] [--clear]"""

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from common.env import calibration_read
from corpus.audit import audit
from judges.answer_data import answer_judge_sets
from judges.calibration import (
    relevance_stack_fit,
    relevance_stacked,
    threshold_for_false_acceptance,
    threshold_for_false_rejection,
    upper_threshold,
    write_calibration,
)
from judges.nli_data import DEFAULT_DATA, SharedDataMissing, calibration_split, claim_from, shared_splits
from judges.relevance_data import score_pairs, shared_relevance_sets, tqdm_progress
from judges.verifiers import get_answer_judge, get_entailment_model, get_relevance_model


class Command(BaseCommand):
    help = (
        "Choose the verifier thresholds for a target false-acceptance rate on labelled data the models "
        "were not trained on (the calibration part of the HaluEval and NQ shared splits) and write them "
        "to CAIRN_CALIBRATION_FILE, where the settings read them."
    )

    def add_arguments(self, parser):
        parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="The shared data folder.")
        parser.add_argument("--far", type=float, default=0.05, help="False-acceptance rate to allow (default 0.05).")
        parser.add_argument(
            "--frr", type=float, default=0.05, help="Share of relevant passages the lower relevance threshold may drop."
        )
        parser.add_argument(
            "--search-budget", type=float, default=0.10,
            help="Share of answerable questions (gold passage retrieved) that may go to external search (default 0.10).",
        )  # fmt: skip
        parser.add_argument(
            "--auto-publish-far", type=float, default=0.01,
            help="Share of hallucinated answers the auto-publish grounding bar may let through (default 0.01).",
        )  # fmt: skip
        parser.add_argument("--output", type=Path, default=settings.CAIRN_CALIBRATION_FILE)
        parser.add_argument(
            "--answer-judge-only", action="store_true",
            help="Recalibrate only the answer judge's thresholds (after retraining it), keeping the others.",
        )  # fmt: skip
        parser.add_argument(
            "--collection", metavar="SLUG",
            help="Fit the upper relevance threshold to this collection's own text instead, without labels "
            "(judges/collection_calibration.py): stored on the collection, used for questions asked of it.",
        )  # fmt: skip
        parser.add_argument("--questions", type=int, default=200, help="With --collection: questions to write (200).")
        parser.add_argument("--clear", action="store_true", help="With --collection: drop its fitted threshold.")

    def handle(
        self, *args, data, far, frr, search_budget, auto_publish_far, output, answer_judge_only, collection,
        questions, clear, **options,
    ):  # fmt: skip
        checked = (
            ("--far", far),
            ("--frr", frr),
            ("--search-budget", search_budget),
            ("--auto-publish-far", auto_publish_far),
        )
        for name, value in checked:
            if not 0 <= value < 1:
                raise CommandError(f"{name} must be in [0, 1), got {value}")
        if collection:
            self._collection(collection, questions=questions, far=far, search_budget=search_budget, clear=clear)
            return
        try:
            splits = shared_splits(data)
        except SharedDataMissing as missing:
            raise CommandError(missing.explain("--data")) from missing
        if answer_judge_only:
            self._answer_judge_only(data, splits, far=far, frr=frr, output=output)
            return

        # Grounding: P(entailment) of "question + answer" against the knowledge, right vs hallucinated.
        rows, _report = calibration_split(splits["halueval"][1])
        nli = get_entailment_model()
        right = nli.predict([(r["knowledge"], claim_from(r["question"], r["right_answer"])) for r in rows])[:, 0]
        wrong = nli.predict([(r["knowledge"], claim_from(r["question"], r["hallucinated_answer"])) for r in rows])[:, 0]
        grounding = threshold_for_false_acceptance(wrong, far)
        # Auto-publishing skips the curator, so its bar lets fewer hallucinations through. A fixed
        # 0.99 was never reached: this NLI model's entailment tops out near 0.986.
        auto_publish = max(threshold_for_false_acceptance(wrong, auto_publish_far), grounding)

        # Relevance: the stack of evaluator and similarity is fitted on the passages (what the gate
        # grades); the upper threshold keeps to `far` or, where the two conflict, to the search
        # budget (calibration.upper_threshold), and the hard negatives it admits are recorded; the
        # lower one drops at most `frr` of relevant passages.
        self.stdout.write("Mining hard negatives with Cairn's hybrid retrieval (a rolled-back ingest)...")
        pairs = shared_relevance_sets(splits, progress=tqdm_progress())["calibration"]
        passage_pairs = [p for p in pairs if p.kind == "passage"]
        evaluator = score_pairs(get_relevance_model(), passage_pairs)
        passage_labels = np.array([p.label for p in passage_pairs])
        similarity = np.array([p.similarity for p in passage_pairs])
        stack = relevance_stack_fit(evaluator, similarity, passage_labels)
        stacked = np.array([relevance_stacked(float(e), float(s), stack) for e, s in zip(evaluator, similarity)])
        best: dict[str, float] = {}  # each question's best passage: the CRAG action rests on it
        for pair, score in zip(passage_pairs, stacked, strict=True):
            best[pair.question] = max(best.get(pair.question, 0.0), float(score))
        upper = upper_threshold(stacked[passage_labels == 0], list(best.values()), far=far, search_budget=search_budget)
        lower = min(threshold_for_false_rejection(stacked[passage_labels == 1], frr), upper)

        judge, judge_checks = _answer_judge_thresholds(data, splits, far=far, frr=frr)
        answer_threshold, stated_floor = judge["answer_threshold"], judge["answer_stated_floor"]

        values = {
            "grounding_threshold": grounding,
            "auto_publish_grounding": auto_publish,
            "relevance_stack": stack,
            "relevance_upper": upper,
            "relevance_lower": lower,
            "answer_threshold": answer_threshold,
            "answer_stated_floor": stated_floor,
            "target_false_acceptance": far,
            "target_false_rejection": frr,
            "target_search_budget": search_budget,
            "target_auto_publish_false_acceptance": auto_publish_far,
            "on_calibration_data": {
                "halueval_rows": len(rows),
                "hallucinated_accepted": float(np.mean(wrong > grounding)),
                "right_accepted": float(np.mean(right > grounding)),
                "hallucinated_auto_published": float(np.mean(wrong > auto_publish)),
                "right_auto_published": float(np.mean(right > auto_publish)),
                "relevance_pairs": len(pairs),
                "relevance_passages": len(passage_pairs),
                "negatives_above_upper": float(np.mean(stacked[passage_labels == 0] > upper)),
                "positives_above_upper": float(np.mean(stacked[passage_labels == 1] > upper)),
                "positives_at_or_below_lower": float(np.mean(stacked[passage_labels == 1] <= lower)),
                "questions": len(best),
                "questions_below_upper": float(np.mean(np.array(list(best.values())) < upper)),
                **judge_checks,
            },
            "nli_model": _shown(settings.CAIRN_NLI_MODEL),
            "relevance_model": _shown(settings.CAIRN_RELEVANCE_MODEL),
            "answer_model": _shown(settings.CAIRN_ANSWER_MODEL),
            "calibrated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        before = calibration_read(output)
        write_calibration(output, values)
        keys = (
            "grounding_threshold",
            "auto_publish_grounding",
            "relevance_stack",
            "relevance_upper",
            "relevance_lower",
            "answer_threshold",
            "answer_stated_floor",
        )
        audit("thresholds.calibrate", ("calibration", _shown(output)), summary="calibrate_gate wrote new thresholds",
              before={k: before.get(k) for k in keys}, after={k: values[k] for k in keys})  # fmt: skip
        self.stdout.write(
            f"grounding > {grounding:.3f} (right accepted {values['on_calibration_data']['right_accepted']:.1%}; "
            f"auto-publish > {auto_publish:.4f}), "
            f"relevance upper {upper:.3f} / lower {lower:.3f} (stack {stack}), "
            f"answer judge > {answer_threshold:.3f} (stated floor {stated_floor:.3f}); wrote {output}"
        )

    def _collection(self, slug: str, *, questions: int, far: float, search_budget: float, clear: bool) -> None:
        from tqdm import tqdm

        from corpus.models import Collection
        from corpus.services import collection_gate_calibration_save
        from judges.collection_calibration import collection_gate_calibration
        from judges.corpus_questions import NoSectionQuestions
        from pipeline.stages import best_answerable_relevance

        found = Collection.objects.filter(slug=slug).first()
        if found is None:
            raise CommandError(f"--collection: no collection {slug!r}")
        if clear:
            collection_gate_calibration_save(collection=found, calibration={})
            self.stdout.write(f"{slug}: fitted threshold dropped; the global upper threshold applies")
            return
        if questions < 10:
            raise CommandError(f"--questions must be at least 10, got {questions}")
        try:
            with tqdm(total=questions, desc=f"asking {slug}", unit="question") as bar:
                fitted = collection_gate_calibration(
                    found, relevance_of=best_answerable_relevance, questions=questions, far=far,
                    search_budget=search_budget, progress=bar.update,
                )  # fmt: skip
        except NoSectionQuestions as empty:
            raise CommandError(str(empty)) from empty
        collection_gate_calibration_save(collection=found, calibration=fitted)
        at, at_global = fitted["at_relevance_upper"], fitted["at_global_relevance_upper"]
        self.stdout.write(
            f"{slug}: relevance upper {fitted['relevance_upper']:.3f} (global {fitted['global_relevance_upper']:.3f}) "
            f"from {fitted['questions']} questions: its own questions below it {at['positives_below']:.1%} "
            f"({at_global['positives_below']:.1%} at the global one), questions about what it never mentions "
            f"at or above it {at['negatives_at_or_above']:.1%} ({at_global['negatives_at_or_above']:.1%})"
        )

    def _answer_judge_only(self, data, splits, *, far, frr, output) -> None:
        before = calibration_read(output)
        judge, checks = _answer_judge_thresholds(data, splits, far=far, frr=frr)
        values = {
            **{k: v for k, v in before.items() if k != "answer_stated_floor_calibrated_at"}, **judge,
            "answer_model": _shown(settings.CAIRN_ANSWER_MODEL),
            "answer_threshold_calibrated_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "on_calibration_data": {**before.get("on_calibration_data", {}), **checks},
        }  # fmt: skip
        write_calibration(output, values)
        audit("thresholds.calibrate", ("calibration", _shown(output)),
              summary="calibrate_gate --answer-judge-only wrote the answer judge's thresholds",
              before={k: before.get(k) for k in judge}, after=judge)  # fmt: skip
        self.stdout.write(
            f"answer judge > {judge['answer_threshold']:.3f} (stated floor {judge['answer_stated_floor']:.3f}; "
            f"answers accepted {checks['answer_judge_answers_accepted']:.1%}, others "
            f"{checks['answer_judge_others_accepted']:.1%}); wrote {output}"
        )


def _answer_judge_thresholds(data: Path, splits, *, far: float, frr: float) -> tuple[dict, dict]:
    """The answer judge's thresholds and what they accept on the calibration part. Does this
    sentence state the answer? Its negatives are the same passage's other sentences
    (judges/answer_data.py): at most `far` of them accepted. Below the stated floor even the best
    sentence states nothing: at most `frr` of answer sentences are."""
    judged = answer_judge_sets(data, splits)["calibration"]
    scores = score_pairs(get_answer_judge(), judged)
    labels = np.array([p.label for p in judged])
    threshold = threshold_for_false_acceptance(scores[labels == 0], far)
    floor = min(threshold_for_false_rejection(scores[labels == 1], frr), threshold)
    checks = {
        "answer_judge_pairs": len(judged),
        "answer_judge_answers_accepted": float(np.mean(scores[labels == 1] > threshold)),
        "answer_judge_others_accepted": float(np.mean(scores[labels == 0] > threshold)),
    }
    return {"answer_threshold": threshold, "answer_stated_floor": floor}, checks


def _shown(path: Path) -> str:
    """A model path as the calibration file records it: relative to the project when inside it."""
    path = Path(path).resolve()
    return str(path.relative_to(settings.BASE_DIR)) if path.is_relative_to(settings.BASE_DIR) else str(path)
