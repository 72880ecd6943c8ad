"""Verifier thresholds chosen from labelled data, stored where the settings read them.

`calibrate_gate` writes CAIRN_CALIBRATION_FILE (models/calibration.json by default); settings
take CAIRN_GROUNDING_THRESHOLD, CAIRN_RELEVANCE_UPPER and CAIRN_RELEVANCE_LOWER from it unless
the environment sets them. The paper's fixed 0.65 suits DeBERTa; a threshold belongs to a model.
"""

from __future__ import annotations

import json
from pathlib import Path


def threshold_for_false_acceptance(negative_scores, rate: float) -> float:
    """A threshold t (accept: score > t) that admits at most `rate` of the negatives, as low as
    possible. It sits midway between two distinct scores, so ties (common: bfloat16 scores are
    coarse) and float32-vs-float64 comparisons cannot tip a negative over it."""
    import numpy as np

    scores = np.sort(np.asarray(negative_scores, dtype=np.float64))
    allowed = int(np.floor(rate * len(scores)))  # negatives that may still pass
    if allowed >= len(scores):
        return float(scores[0]) - 1e-6
    cut = scores[len(scores) - allowed - 1]
    above = scores[scores > cut]
    return float((cut + above[0]) / 2) if len(above) else float(cut)


def threshold_for_false_rejection(positive_scores, rate: float) -> float:
    """A threshold t (reject: score <= t) that rejects at most `rate` of the positives, as high as
    possible, likewise midway between two distinct scores."""
    import numpy as np

    scores = np.sort(np.asarray(positive_scores, dtype=np.float64))
    if not len(scores):
        return 0.0
    allowed = int(np.floor(rate * len(scores)))
    if allowed >= len(scores):
        return float(scores[-1])
    keep = scores[allowed]
    below = scores[scores < keep]
    return float((below[-1] + keep) / 2) if len(below) else float(keep) - 1e-6


def read_calibration(path: Path) -> dict:
    """The stored thresholds, or {} when calibrate_gate has not run (settings fall back to defaults)."""
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        return {}
    except ValueError as exc:
        from django.core.exceptions import ImproperlyConfigured

        raise ImproperlyConfigured(
            f"CAIRN_CALIBRATION_FILE {path} is not valid JSON ({exc}); re-run calibrate_gate"
        ) from exc


def write_calibration(path: Path, values: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(values, indent=2, sort_keys=True) + "\n")
