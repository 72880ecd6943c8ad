"""python manage.py calibrate_gate [--far 0.05] [--frr 0.05]"""

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from corpus.audit import audit
from pipeline.calibration import (
    read_calibration,
    threshold_for_false_acceptance,
    threshold_for_false_rejection,
    write_calibration,
)
from pipeline.nli_data import DEFAULT_DATA, calibration_split, claim_from, shared_splits
from pipeline.relevance_data import score_pairs, shared_relevance_sets, tqdm_progress
from pipeline.verifiers import get_entailment_model, get_relevance_model


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
        parser.add_argument("--output", type=Path, default=settings.CAIRN_CALIBRATION_FILE)

    def handle(self, *args, data, far, frr, output, **options):
        if not (data / "halueval_qa").is_dir():
            raise CommandError(f"{data}: no halueval_qa/ folder here; pass --data with the shared data folder")
        for name, value in (("--far", far), ("--frr", frr)):
            if not 0 <= value < 1:
                raise CommandError(f"{name} must be in [0, 1), got {value}")
        splits = shared_splits(data)

        # Grounding: P(entailment) of "question + answer" against the knowledge, right vs hallucinated.
        rows, _report = calibration_split(splits["halueval"][1])
        nli = get_entailment_model()
        right = nli.predict([(r["knowledge"], claim_from(r["question"], r["right_answer"])) for r in rows])[:, 0]
        wrong = nli.predict([(r["knowledge"], claim_from(r["question"], r["hallucinated_answer"])) for r in rows])[:, 0]
        grounding = threshold_for_false_acceptance(wrong, far)

        # Relevance: the upper threshold admits at most `far` of hard negatives, the lower one
        # drops at most `frr` of relevant passages and strips.
        self.stdout.write("Mining hard negatives with Cairn's hybrid retrieval (a rolled-back ingest)...")
        pairs = shared_relevance_sets(splits, progress=tqdm_progress())["calibration"]
        scores = score_pairs(get_relevance_model(), pairs)
        labels = np.array([p.label for p in pairs])
        upper = threshold_for_false_acceptance(scores[labels == 0], far)
        lower = min(threshold_for_false_rejection(scores[labels == 1], frr), upper)

        values = {
            "grounding_threshold": grounding,
            "relevance_upper": upper,
            "relevance_lower": lower,
            "target_false_acceptance": far,
            "target_false_rejection": frr,
            "on_calibration_data": {
                "halueval_rows": len(rows),
                "hallucinated_accepted": float(np.mean(wrong > grounding)),
                "right_accepted": float(np.mean(right > grounding)),
                "relevance_pairs": len(pairs),
                "negatives_above_upper": float(np.mean(scores[labels == 0] > upper)),
                "positives_at_or_below_lower": float(np.mean(scores[labels == 1] <= lower)),
            },
            "nli_model": _shown(settings.CAIRN_NLI_MODEL),
            "relevance_model": _shown(settings.CAIRN_RELEVANCE_MODEL),
            "calibrated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        before = read_calibration(output)
        write_calibration(output, values)
        keys = ("grounding_threshold", "relevance_upper", "relevance_lower")
        audit("thresholds.calibrate", ("calibration", _shown(output)), summary="calibrate_gate wrote new thresholds",
              before={k: before.get(k) for k in keys}, after={k: values[k] for k in keys})  # fmt: skip
        self.stdout.write(
            f"grounding > {grounding:.3f} (right accepted {values['on_calibration_data']['right_accepted']:.1%}), "
            f"relevance upper {upper:.3f} / lower {lower:.3f}; wrote {output}"
        )


def _shown(path: Path) -> str:
    """A model path as the calibration file records it: relative to the project when inside it."""
    path = Path(path).resolve()
    return str(path.relative_to(settings.BASE_DIR)) if path.is_relative_to(settings.BASE_DIR) else str(path)
