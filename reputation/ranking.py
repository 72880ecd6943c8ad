"""Ranking with reputation (the Retrieval Reputation Layer): re-order what retrieval found, never widen it.

    score(i) = w_sim·sim(i) + w_c·C(i) + w_p·P(i)                     exploitation
             + w_e·sim(i)·(ThompsonSample(Beta(alpha, beta)) + rarity)  exploration, when enabled

sim is the hybrid retrieval score (reciprocal rank fusion) divided by the best in the pool, so
a chunk without history keeps retrieval's order; C is the decayed short-term mean, P the
long-term mean A/(A+B).

A chunk's record transfers to a question only as far as that question is like the ones the
record came from: C and P are pulled back to the prior 1/2 by the weight
g = clip((affinity - lo) / (hi - lo), 0, 1) (CAIRN_RANK_AFFINITY, default 0.3 .. 0.6), affinity
being the cosine between the question and the sum of the questions the chunk was credited for.
With recurring questions (paraphrases: cosine 0.9+) the record counts in full; with a question
unlike any it served (unrelated MiniLM questions: 99% below 0.27) it counts for nothing, so
reputation cannot cost a new question what retrieval would have found (the Retrieval Reputation Layer's Gate C). RRF is
flat (fused/best 1.00 .. 0.94 over five places), so any record that counts re-orders: this is
what keeps an unrelated record from doing so.

Exploration is scaled by the chunk's cosine similarity and never given to one below
CAIRN_RANK_SIMILARITY_FLOOR, so it cannot surface an irrelevant chunk; the rarity bonus
1/sqrt(1 + feedback) lets little-judged chunks be tried. Exploration is off by default: it buys
learning with answer stability, worth it where a verifier closes the loop. Only chunks the asker
could already read reach this function: ranking changes order, not access.
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
    weight: float  # how much of the chunk's record counted for this question (transfer)


def transfer(affinity: float | None) -> float:
    """How much of a chunk's record counts for this question (1 when either side has no question)."""
    if affinity is None:
        return 1.0
    lo, hi = settings.CAIRN_RANK_AFFINITY
    return min(1.0, max(0.0, (affinity - lo) / (hi - lo)))


def rank_score(
    retrieval: float, similarity: float, standing: Standing, *, weight: float, explore: bool, rng: random.Random
) -> float:
    """`weight`: the share of the record that counts (transfer); the rest stays at the prior."""
    w_sim, w_c, w_p, w_e = settings.CAIRN_RANK_WEIGHTS
    short = PRIOR.short_mean + weight * (standing.short_mean - PRIOR.short_mean)
    long = PRIOR.long_mean + weight * (standing.long_mean - PRIOR.long_mean)
    score = w_sim * retrieval + w_c * short + w_p * long
    if explore and similarity >= settings.CAIRN_RANK_SIMILARITY_FLOOR:
        rarity = 1 / math.sqrt(1 + standing.feedback_count)
        score += w_e * similarity * (rng.betavariate(standing.alpha, standing.beta) + rarity)
    return score


def hits_rank(
    hits: list[Hit], *, explore: bool, rng: random.Random | None = None, question_vector=None
) -> list[Ranked]:
    """`hits` for the question embedded as `question_vector` in reputation order (stable for ties:
    retrieval order breaks them). Without a question every record counts in full."""
    rng = rng or random.Random()
    known = standings([h.chunk_id for h in hits], question_vector=question_vector)
    best = max((h.score for h in hits), default=0.0) or 1.0
    ranked = []
    for hit in hits:
        standing = known.get(hit.chunk_id, PRIOR)
        weight = transfer(standing.affinity)
        score = rank_score(hit.score / best, hit.similarity or 0.0, standing, weight=weight, explore=explore, rng=rng)
        ranked.append(Ranked(hit, round(score, 6), standing, weight))
    return sorted(ranked, key=lambda r: -r.score)
