"""Ranking with reputation (seed 004): re-order what retrieval found, never widen it.

    score(i) = w_sim·sim(i) + w_c·C(i) + w_p·P(i)                     exploitation
             + w_e·sim(i)·(ThompsonSample(Beta(alpha, beta)) + rarity)  exploration, when enabled

sim is the hybrid retrieval score (reciprocal rank fusion) divided by the best in the pool, so
a chunk without history keeps retrieval's order; C is the decayed short-term mean, P the
long-term mean A/(A+B). Exploration is scaled by the chunk's cosine similarity and never given to
one below CAIRN_RANK_SIMILARITY_FLOOR, so it cannot surface an irrelevant chunk; the rarity bonus
1/sqrt(1 + feedback) lets little-judged chunks be tried. Exploration is off by default: it buys
learning with answer stability, worth it where a verifier closes the loop. Only chunks the asker could already read
reach this function: ranking changes order, not access.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from django.conf import settings

from corpus.selectors import Hit
from reputation.selectors import PRIOR, Standing, standings


@dataclass(frozen=True)
class Ranked:
    hit: Hit
    score: float
    standing: Standing


def rank_score(retrieval: float, similarity: float, standing: Standing, *, explore: bool, rng: random.Random) -> float:
    w_sim, w_c, w_p, w_e = settings.CAIRN_RANK_WEIGHTS
    score = w_sim * retrieval + w_c * standing.short_mean + w_p * standing.long_mean
    if explore and similarity >= settings.CAIRN_RANK_SIMILARITY_FLOOR:
        rarity = 1 / math.sqrt(1 + standing.feedback_count)
        score += w_e * similarity * (rng.betavariate(standing.alpha, standing.beta) + rarity)
    return score


def hits_rank(hits: list[Hit], *, explore: bool, rng: random.Random | None = None) -> list[Ranked]:
    """`hits` in reputation order (stable for ties: retrieval order breaks them)."""
    rng = rng or random.Random()
    known = standings(h.chunk_id for h in hits)
    best = max((h.score for h in hits), default=0.0) or 1.0
    ranked = []
    for hit in hits:
        standing = known.get(hit.chunk_id, PRIOR)
        score = rank_score(hit.score / best, hit.similarity or 0.0, standing, explore=explore, rng=rng)
        ranked.append(Ranked(hit, round(score, 6), standing))
    return sorted(ranked, key=lambda r: -r.score)
