"""Verifier thresholds chosen from labelled data, stored where the settings read them.

`calibrate_gate` writes CAIRN_CALIBRATION_FILE (models/calibration.json by default); settings
take CAIRN_GROUNDING_THRESHOLD, CAIRN_RELEVANCE_STACK, CAIRN_RELEVANCE_UPPER / _LOWER,
CAIRN_ANSWER_THRESHOLD and CAIRN_ANSWER_STATED_FLOOR from it unless the environment sets them.
The paper's fixed 0.65 suits DeBERTa; a threshold belongs to a model.

The relevance stack: a passage's relevance to a question is a logistic regression over two
signals, the relevance evaluator's score (the cross-encoder, as a logit) and the cosine similarity
of the embedder the retrieval already ran. Each misses what the other sees: the cross-encoder,
fine-tuned on a few thousand pairs, scores some plainly relevant passages near 0 ("3 pointers"
against "the three-point line was first tested in 1945"), while the embedder was trained on a
billion pairs and scores them high; on short single-topic texts the evaluator is the sharper.
ROC-AUC, gold passage vs retrieved hard negatives on the report part (benchmarks/verifiers.py):
NQ evaluator 0.900, similarity 0.948, stacked 0.953; HaluEval 0.994, 0.913, 0.986. calibrate_gate
fits it, class-balanced, on the calibration part's passages of both.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

_EDGE = 1e-4  # scores are clipped this far from 0 and 1 before taking logits (bfloat16 saturates)


def _logit(p: float) -> float:
    p = min(max(p, _EDGE), 1 - _EDGE)
    return math.log(p / (1 - p))


def relevance_stacked(evaluator: float, similarity: float, stack: dict | None) -> float:
    """A passage's relevance from the evaluator's score and the retrieval's cosine similarity; the
    evaluator's score alone when no stack has been calibrated."""
    if not stack:
        return evaluator
    z = stack["evaluator"] * _logit(evaluator) + stack["similarity"] * similarity + stack["bias"]
    return 1 / (1 + math.exp(-z))


def relevance_stack_fit(evaluator, similarity, labels, *, l2: float = 1e-3, iterations: int = 50) -> dict:
    """Class-balanced logistic regression of `labels` on (logit(evaluator), similarity), by Newton's
    method (three parameters need no library). Balanced, so that 0.5 sits where a relevant and an
    irrelevant passage are equally likely whatever their ratio in the data, as the evaluator was trained."""
    import numpy as np

    labels = np.asarray(labels, dtype=np.float64)
    x = np.column_stack([[_logit(float(e)) for e in evaluator], np.asarray(similarity, dtype=np.float64),
                         np.ones(len(labels))])  # fmt: skip
    positives = labels.sum()
    if not 0 < positives < len(labels):
        raise ValueError("fitting the relevance stack needs relevant and irrelevant passages")
    weight = np.where(labels == 1, len(labels) / (2 * positives), len(labels) / (2 * (len(labels) - positives)))
    beta = np.zeros(3)
    for _ in range(iterations):
        p = 1 / (1 + np.exp(-(x @ beta)))
        gradient = x.T @ (weight * (p - labels)) + l2 * beta
        hessian = (x * (weight * p * (1 - p))[:, None]).T @ x + l2 * np.eye(3)
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return {"evaluator": float(beta[0]), "similarity": float(beta[1]), "bias": float(beta[2])}


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


def upper_threshold(negative_scores, best_per_question, *, far: float, search_budget: float) -> float:
    """CRAG's upper relevance threshold: it admits at most `far` of the hard negatives, unless that
    would leave more than `search_budget` of answerable questions (each scored by its best passage)
    below it, each one a call to the external source; then the budget sets it. The budget is a
    promise about questions not seen here, so it is met with one standard error to spare (288
    calibration questions leave about two points of sampling error at 10%)."""
    n = len(best_per_question)
    spared = max(0.0, search_budget - (search_budget * (1 - search_budget) / n) ** 0.5) if n else search_budget
    within_budget = threshold_for_false_rejection(best_per_question, spared)
    return min(threshold_for_false_acceptance(negative_scores, far), within_budget)


def write_calibration(path: Path, values: dict) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(values, indent=2, sort_keys=True) + "\n")
