"""Fitting the answer's confidence (judges/confidence.py) and choosing when to state an answer.

A sample is one extractive answer Cairn would state (its features) and whether it held what was
asked (a gold string in it; never, for a question the documents cannot answer). Samples come in
groups (a manual, NQ), and every choice is made leaving the group it is judged on out:
- `fit`: a logistic regression (scikit-learn) over standardised features, written out as plain
  weights so that serving needs no scikit-learn;
- `selected`: the features it uses, chosen forward by out-of-fold log loss;
- `out_of_fold`: each group's probabilities from a model fitted on the other groups;
- `threshold_for`: the lowest threshold whose stated answers, over the groups' out-of-fold
  probabilities, reach TARGET_PRECISION on the mean over groups: the answers a reader is told are
  answers must mostly be right, and what is not stated is shown as "where to look", not lost.

`manage.py` is not involved: benchmarks/answer_confidence.py replays the stored evidence of the
question sets and calls these, so a new question set (a manual with its questions) retrains it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from judges.confidence import Calibrator

# Precision of stated answers the threshold is chosen for: the floor, on the mean over the
# training manuals' out-of-fold answers (each manual once, as the floor counts manuals left out).
TARGET_PRECISION = 0.75
REGULARISATION = 1.0  # scikit-learn's C, its default: forward selection keeps the model small
ALWAYS_IN = ("nq",)  # groups that are never left out: encyclopedic text, no manual of its own


@dataclass(frozen=True)
class Sample:
    group: str  # the manual (or "nq") the question belongs to
    features: dict[str, float]
    right: bool  # the stated answer held a gold string


def fit(samples: Sequence[Sample], names: Sequence[str], c: float = REGULARISATION) -> Calibrator:
    """A logistic regression over `names` (inverse regularisation `c`), standardised by the samples'
    own mean and spread."""
    from sklearn.linear_model import LogisticRegression

    x = np.array([[s.features.get(n, 0.0) for n in names] for s in samples], dtype=float)
    y = np.array([s.right for s in samples], dtype=int)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0  # a constant feature carries no weight
    model = LogisticRegression(C=c, max_iter=5000).fit((x - mean) / scale, y)
    return Calibrator(
        tuple(names), tuple(mean.tolist()), tuple(scale.tolist()), tuple(model.coef_[0].tolist()),
        float(model.intercept_[0]),
    )  # fmt: skip


def out_of_fold(samples: Sequence[Sample], names: Sequence[str], c: float = REGULARISATION) -> list[float]:
    """Each sample's probability from a model fitted without its group (ALWAYS_IN groups are
    always fitted on, and scored by a model fitted on everything else)."""
    groups = sorted({s.group for s in samples})
    scores = [0.0] * len(samples)
    for group in groups:
        model = fit([s for s in samples if s.group != group], names, c)
        for i, s in enumerate(samples):
            if s.group == group:
                scores[i] = model.probability(s.features)
    return scores


def threshold_for(
    scores: Sequence[float],
    right: Sequence[bool],
    groups: Sequence[str] | None = None,
    *,
    target: float = TARGET_PRECISION,
) -> float:
    """The lowest threshold at which the answers scored at or above it are right `target` of the
    time: on the mean over `groups` (each group with an answer stated counts once), else pooled.
    The highest score when none is (nothing but the surest answer is stated). A threshold states all
    answers of equal score or none."""
    scores_, right_ = np.asarray(scores, dtype=float), np.asarray(right, dtype=float)
    groups_ = np.asarray(groups if groups is not None else [""] * len(scores_))
    best = None
    for t in sorted(set(scores_.tolist()), reverse=True):
        stated = scores_ >= t
        precisions = [
            right_[stated & (groups_ == g)].mean() for g in set(groups_.tolist()) if (stated & (groups_ == g)).any()
        ]
        if np.mean(precisions) >= target:
            best = t
    return float(best if best is not None else (scores_.max() if len(scores_) else 0.5))


def log_loss(scores: Sequence[float], right: Sequence[bool]) -> float:
    p = np.clip(np.asarray(scores, dtype=float), 1e-6, 1 - 1e-6)
    y = np.asarray(right, dtype=float)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


MOST_FEATURES = 8  # forward selection stops here, or earlier when no feature lowers the loss


def selected(samples: Sequence[Sample], names: Sequence[str], c: float = REGULARISATION) -> list[str]:
    """Forward selection by out-of-fold log loss over the groups that can be left out: the feature
    that lowers it most joins, while one does. Features that help on the manuals a model was fitted
    on but not across them (most of them, on a few hundred answers) stay out."""
    held = [i for i, s in enumerate(samples) if s.group not in ALWAYS_IN]
    right = [samples[i].right for i in held]
    chosen: list[str] = []
    loss = log_loss([np.mean(right)] * len(right), right)  # no feature: the base rate
    while len(chosen) < MOST_FEATURES:
        trials = []
        for name in names:
            if name not in chosen:
                scores = out_of_fold(samples, [*chosen, name], c)
                trials.append((log_loss([scores[i] for i in held], right), name))
        if not trials or min(trials)[0] >= loss - 1e-4:
            break
        loss, name = min(trials)
        chosen.append(name)
    return chosen or list(names[:1])


def trained(samples: Sequence[Sample], names: Sequence[str]) -> tuple[Calibrator, float]:
    """The model fitted on every sample over the features forward selection keeps, and the threshold
    chosen on their out-of-fold probabilities over the groups that can be left out (ALWAYS_IN
    groups weigh in on the fits only)."""
    held = [i for i, s in enumerate(samples) if s.group not in ALWAYS_IN]
    kept = selected(samples, names)
    scores = out_of_fold(samples, kept)
    threshold = threshold_for(
        [scores[i] for i in held], [samples[i].right for i in held], [samples[i].group for i in held]
    )
    return fit(samples, kept), threshold


def calibration_table(scores: Sequence[float], right: Sequence[bool], bins: int = 5) -> list[dict]:
    """Predicted against observed: per equal-width bin of confidence, its count, mean score and the
    share right."""
    edges = np.linspace(0, 1, bins + 1)
    table = []
    for low, high in zip(edges[:-1], edges[1:], strict=True):
        inside = [(s, r) for s, r in zip(scores, right, strict=True) if low <= s < high or (high == 1 and s == 1)]
        if inside:
            table.append({"from": round(float(low), 2), "to": round(float(high), 2), "n": len(inside),
                          "predicted": float(np.mean([s for s, _ in inside])),
                          "observed": float(np.mean([r for _, r in inside]))})  # fmt: skip
    return table


def model_json(calibrator: Calibrator, threshold: float, extra: Mapping) -> dict:
    """What models/confidence/model.json holds: the weights (judges.confidence.Calibrator), the
    threshold CAIRN_ANSWER_CONFIDENCE defaults to, and how they were made."""
    return {
        "threshold": threshold,
        "model": {
            "kind": "logistic regression over standardised features",
            "features": list(calibrator.features),
            "mean": list(calibrator.mean),
            "scale": list(calibrator.scale),
            "weights": list(calibrator.weights),
            "bias": calibrator.bias,
        },
        **extra,
    }
