"""The statistics of reputation (the Retrieval Reputation Layer), as pure functions.

- Outcome y in [0, 1] from the feedback signals: a verifier (external ground truth) overrides the
  rest; otherwise the weighted mean of behaviour (0.45), judge (0.15) and thumbs (0.10) over the
  signals present (the seed's weights; its 0.30 ground-truth weight is the verifier, which never
  mixes). Positive behaviour is capped at 0.75: users who keep whatever they are given must not
  be able to push a chunk far.
- User signals are heard through the chunk's trust (the liar counter): y_i = 0.5 + (t_i·D_user +
  D_judge) / W, where D is each signal's weighted distance from 0.5 and W the present weights. A
  chunk that fooled users before (they accepted, the verifier failed) hears its users as less
  decisive; t = 1 - fooled / (verified + 1).
- Decisiveness kappa = 2·|y - 0.5|; alpha += kappa·r·y, beta += kappa·r·(1 - y); the long-term A, B
  at 0.25 of that. An undecided outcome barely moves a counter.
- Lazy decay toward the prior 1: x <- 1 + (x - 1)·gamma^dt, dt in CAIRN_REPUTATION_DECAY_UNIT
  seconds since the row last changed, applied by the UPDATE that increments (reputation/services.py
  writes the same formula in SQL) and on read for ranking. A and B do not decay: they are the memory.
- Credit shares r(i): each credited chunk's share of the answer, from its retrieval similarity,
  Laplace-smoothed so a barely-similar chunk still carries some of the blame: (s_i + eps)/(sum + k·eps).
"""

from __future__ import annotations

from dataclasses import dataclass

BEHAVIOUR = {"kept": 0.9, "copied": 0.9, "edited": 0.5, "regenerated": 0.1, "abandoned": 0.1}
BEHAVIOUR_CAP = 0.75  # the most a positive behaviour may say
WEIGHTS = {"behaviour": 0.45, "judge": 0.15, "thumbs": 0.10}
USER_SIGNALS = ("behaviour", "thumbs")
LONG_TERM_RATE = 0.25
SHARE_SMOOTHING = 0.05


@dataclass(frozen=True)
class Signals:
    thumbs: int | None = None  # 1 up, 0 down
    behaviour: str | None = None  # a key of BEHAVIOUR
    judge: float | None = None  # the answer's grounding score, from validation
    verifier: float | None = None  # external ground truth in [0, 1]: overrides the rest

    def values(self) -> dict[str, float]:
        """The present signals as numbers in [0, 1] (behaviour mapped and capped)."""
        values = {}
        if self.thumbs is not None:
            values["thumbs"] = float(self.thumbs)
        if self.behaviour is not None:
            values["behaviour"] = min(BEHAVIOUR[self.behaviour], BEHAVIOUR_CAP)
        if self.judge is not None:
            values["judge"] = float(self.judge)
        return values

    @property
    def user_accepted(self) -> bool:
        """Did the user say yes (what the liar counter checks against the verifier)?"""
        return self.thumbs == 1 or (self.behaviour is not None and BEHAVIOUR[self.behaviour] > 0.5)

    @property
    def any(self) -> bool:
        return self.verifier is not None or bool(self.values())


@dataclass(frozen=True)
class OutcomeTerms:
    """y_i = 0.5 + (trust_i * user + other) / weight, or `verifier` when one is present."""

    user: float
    other: float
    weight: float
    verifier: float | None

    def outcome(self, trust: float = 1.0) -> float:
        if self.verifier is not None:
            return self.verifier
        if self.weight == 0:
            return 0.5
        return 0.5 + (trust * self.user + self.other) / self.weight


def outcome_terms(signals: Signals) -> OutcomeTerms:
    values = signals.values()
    weight = sum(WEIGHTS[name] for name in values)
    user = sum(WEIGHTS[n] * (v - 0.5) for n, v in values.items() if n in USER_SIGNALS)
    other = sum(WEIGHTS[n] * (v - 0.5) for n, v in values.items() if n not in USER_SIGNALS)
    return OutcomeTerms(user=user, other=other, weight=weight, verifier=signals.verifier)


def outcome(signals: Signals, trust: float = 1.0) -> float:
    return outcome_terms(signals).outcome(trust)


def decisiveness(y: float) -> float:
    return 2 * abs(y - 0.5)


def trust(fooled: float, verified: float) -> float:
    return 1 - fooled / (verified + 1)


def increments(y: float, share: float) -> tuple[float, float, float, float]:
    """(d_alpha, d_beta, d_A, d_B) for one chunk with credit share `share` and outcome `y`."""
    kappa = decisiveness(y)
    d_alpha, d_beta = kappa * share * y, kappa * share * (1 - y)
    return d_alpha, d_beta, LONG_TERM_RATE * d_alpha, LONG_TERM_RATE * d_beta


def decayed(x: float, gamma: float, dt: float) -> float:
    return 1 + (x - 1) * gamma ** max(dt, 0.0)


def credit_shares(similarities: list[float], eps: float = SHARE_SMOOTHING) -> list[float]:
    """Shares summing to 1 from similarities (negative similarity counts as 0)."""
    if not similarities:
        return []
    smoothed = [max(s, 0.0) + eps for s in similarities]
    total = sum(smoothed)
    return [s / total for s in smoothed]


def beta_mean(alpha: float, beta: float) -> float:
    return alpha / (alpha + beta)
