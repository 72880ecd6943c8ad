"""How sure Cairn is of an answer: P(the stated answer holds what was asked), calibrated.

The answer judge rates sentences, not answers, and a QA model is overconfident outside the text it
was trained on: on manuals no one tuned on, Cairn stated an answer to nearly every question, and a
third to two thirds of them quoted a neighbouring entry. Following Kamath, Jia & Liang ("Selective
Question Answering under Domain Shift", ACL 2020), a small calibrator learns when the reader is
wrong from its behaviour on other domains: a logistic regression over what the extractive answer
already computed (pipeline/confidence.py: no model call is added), trained leaving one manual out
(judges/confidence_training.py, run by benchmarks/answer_confidence.py, which writes
models/confidence/: its weights, the threshold and the model card). Serving reads the weights with
plain arithmetic: no scikit-learn.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings


@dataclass(frozen=True)
class Calibrator:
    """A logistic regression over standardised features, as benchmarks/answer_confidence.py wrote it."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float

    def probability(self, features: dict[str, float]) -> float:
        z = self.bias + sum(
            w * (features.get(name, 0.0) - m) / s
            for name, m, s, w in zip(self.features, self.mean, self.scale, self.weights, strict=True)
        )
        return sigmoid(z)

    @classmethod
    def from_file(cls, path: Path) -> Calibrator:
        data = json.loads(path.read_text())
        model = data["model"]
        return cls(
            tuple(model["features"]), tuple(model["mean"]), tuple(model["scale"]), tuple(model["weights"]),
            float(model["bias"]),
        )  # fmt: skip


@functools.cache
def get_calibrator() -> Calibrator | None:
    """The shipped calibrator (CAIRN_CONFIDENCE_MODEL), loaded once per process; None when the file is
    missing, and then an answer is stated as before the calibrator (its best sentence above the
    judge's floor) with no confidence."""
    path = Path(settings.CAIRN_CONFIDENCE_MODEL)
    return Calibrator.from_file(path) if path.is_file() else None


def answer_confidence(features: dict[str, float], *, shift: float = 0.0) -> float | None:
    """P(right) for an answer with `features`; `shift` is added to its log-odds (a collection's own
    adaptation, fit_shift)."""
    calibrator = get_calibrator()
    if calibrator is None:
        return None
    return round(shifted(calibrator.probability(features), shift), 4)


def sigmoid(z: float) -> float:
    return 1 / (1 + math.exp(-max(min(z, 50.0), -50.0)))


def logit(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def shifted(p: float, shift: float) -> float:
    return p if not shift else sigmoid(logit(p) + shift)


def log_loss(probabilities, labels, shift: float = 0.0) -> float:
    """Mean log loss of `probabilities` shifted by `shift` against `labels` (True: right)."""
    total = 0.0
    for p, y in zip(probabilities, labels, strict=True):
        q = min(max(shifted(p, shift), 1e-6), 1 - 1e-6)
        total -= math.log(q if y else 1 - q)
    return total / max(1, len(labels))


def fit_shift(probabilities, labels, *, prior: float = 1.0) -> float:
    """The shift b of the log-odds that fits answers of one collection best: the maximum of the
    likelihood of `labels` under sigmoid(logit(p) + b), with a Gaussian prior of precision `prior`
    pulling b to 0 (few answers move it little). Platt's intercept alone: the calibrator's
    weights, learned on other manuals, say which answers are surer; a collection's own answers
    say how sure on the whole. Newton's method; the objective is concave."""
    z = [logit(p) for p in probabilities]
    b = 0.0
    for _ in range(50):
        q = [sigmoid(zi + b) for zi in z]
        gradient = sum(y - qi for y, qi in zip(labels, q, strict=True)) - prior * b
        curvature = sum(qi * (1 - qi) for qi in q) + prior
        step = gradient / curvature
        b += step
        if abs(step) < 1e-9:
            break
    return b
