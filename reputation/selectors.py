"""Reads of reputation: counters with decay applied on read."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.utils import timezone
from pgvector.django import CosineDistance

from reputation.models import Reputation
from reputation.scoring import beta_mean, decayed, trust


@dataclass(frozen=True)
class Standing:
    """A chunk's reputation now: short-term counters decayed to this moment."""

    alpha: float = 1.0
    beta: float = 1.0
    long_alpha: float = 1.0
    long_beta: float = 1.0
    fooled: float = 0.0
    verified: float = 0.0
    feedback_count: int = 0
    affinity: float | None = None  # cosine between the question and the ones the record came from

    @property
    def short_mean(self) -> float:  # C
        return beta_mean(self.alpha, self.beta)

    @property
    def long_mean(self) -> float:  # P = A / (A + B)
        return beta_mean(self.long_alpha, self.long_beta)

    @property
    def trust(self) -> float:
        return trust(self.fooled, self.verified)


PRIOR = Standing()


def standings(chunk_ids: Iterable[int], *, now: datetime | None = None, question_vector=None) -> dict[int, Standing]:
    """Each chunk's standing (the prior for chunks without a row), in one query; with a question,
    also its affinity to the questions the chunk was credited for."""
    now = now or timezone.now()
    gamma, unit = settings.CAIRN_REPUTATION_GAMMA, settings.CAIRN_REPUTATION_DECAY_UNIT
    rows = Reputation.objects.filter(chunk_id__in=list(chunk_ids)).defer("questions")
    if question_vector is not None:
        rows = rows.annotate(distance=CosineDistance("questions", list(map(float, question_vector))))
    result = {}
    for row in rows:
        dt = (now - row.last_updated).total_seconds() / unit
        distance = getattr(row, "distance", None)
        result[row.chunk_id] = Standing(
            alpha=decayed(row.alpha, gamma, dt), beta=decayed(row.beta, gamma, dt), long_alpha=row.long_alpha,
            long_beta=row.long_beta, fooled=row.fooled, verified=row.verified, feedback_count=row.feedback_count,
            affinity=None if distance is None else 1 - distance,
        )  # fmt: skip
    return result
