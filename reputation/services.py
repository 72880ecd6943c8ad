"""Writes to reputation: freeze an answer's credit shares, apply feedback, reset counters.

Feedback moves the counters of every credited chunk in ONE SQL statement: the rows are locked in
chunk order (no deadlock between concurrent feedbacks), each chunk's outcome is computed from its
own liar counter, decay since the row last changed is applied, a replaced feedback's effect is
taken back, and the increments are returned for the record. No counter is read into Python and
written back, so concurrent feedback loses nothing (tests/test_reputation.py runs 8 threads).
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from config.exceptions import CairnError
from corpus.audit import audit
from corpus.models import Chunk, WriteBack
from reputation.models import Credit, Feedback, Reputation
from reputation.scoring import LONG_TERM_RATE, Signals, credit_shares, outcome_terms


def credits_record(*, response_id, user, credited: list[tuple[int, float]]) -> Credit:
    """Freeze each credited chunk's share of an answer from (chunk id, retrieval similarity)
    pairs; make sure every credited chunk has its counter row (the prior)."""
    shares = credit_shares([similarity for _, similarity in credited])
    credit = Credit.objects.create(
        response_id=response_id,
        user=user,
        shares=[
            {"chunk_id": chunk_id, "share": round(share, 6), "similarity": round(similarity, 4)}
            for (chunk_id, similarity), share in zip(credited, shares, strict=True)
        ],
    )
    if credited:
        Reputation.objects.bulk_create(
            [Reputation(chunk_id=chunk_id) for chunk_id, _ in credited], ignore_conflicts=True
        )
    return credit


def _decay_since(column: str) -> str:
    """gamma ^ (seconds since `column` / unit), never above 1 (clock skew between web nodes)."""
    return f"power(%(gamma)s, GREATEST(EXTRACT(EPOCH FROM (%(now)s - {column})), 0) / %(unit)s)"


# One statement: lock the credited rows in chunk order, compute each chunk's outcome y from its
# trust (1 - fooled / (verified + 1)) and the signal terms, then move every counter.
_UPDATE = f"""
WITH credit(chunk_id, share, old_alpha, old_beta, old_a, old_b, old_fooled, old_verified, old_at) AS (
    VALUES {{values}}
),
locked AS (
    SELECT r.chunk_id, r.fooled, r.verified FROM {Reputation._meta.db_table} r
    WHERE r.chunk_id IN (SELECT chunk_id FROM credit) ORDER BY r.chunk_id FOR UPDATE
),
outcome AS (
    SELECT c.*, y, 2 * abs(y - 0.5) AS kappa FROM credit c JOIN locked l USING (chunk_id),
    LATERAL (SELECT CASE WHEN %(verifier)s::float IS NOT NULL THEN %(verifier)s::float
                         ELSE 0.5 + ((1 - l.fooled / (l.verified + 1)) * %(user)s + %(other)s) / %(weight)s
                    END AS y) o
)
UPDATE {Reputation._meta.db_table} r SET
    alpha = 1 + (r.alpha - 1) * {_decay_since("r.last_updated")}
            - o.old_alpha * {_decay_since("o.old_at")} + o.kappa * o.share * o.y,
    beta = 1 + (r.beta - 1) * {_decay_since("r.last_updated")}
           - o.old_beta * {_decay_since("o.old_at")} + o.kappa * o.share * (1 - o.y),
    long_alpha = r.long_alpha - o.old_a + %(rate)s * o.kappa * o.share * o.y,
    long_beta = r.long_beta - o.old_b + %(rate)s * o.kappa * o.share * (1 - o.y),
    fooled = r.fooled - o.old_fooled + %(fooled)s,
    verified = r.verified - o.old_verified + %(verified)s,
    feedback_count = r.feedback_count + %(new)s,
    last_updated = %(now)s
FROM outcome o
WHERE r.chunk_id = o.chunk_id
RETURNING r.chunk_id, o.kappa * o.share * o.y, o.kappa * o.share * (1 - o.y),
          %(rate)s * o.kappa * o.share * o.y, %(rate)s * o.kappa * o.share * (1 - o.y)
"""


def feedback_submit(
    *,
    user: AbstractBaseUser,
    response_id,
    thumbs: int | None = None,
    behaviour: str | None = None,
    verifier: float | None = None,
    comment: str = "",
    now: datetime | None = None,
) -> Feedback:
    """Record `user`'s feedback on their answer `response_id` and move the credited chunks'
    counters; a second feedback from the same user replaces the first, effect included."""
    credit = Credit.objects.filter(response_id=response_id, user=user).first()
    if credit is None:  # unknown, or someone else's: the same answer, so nothing leaks
        raise CairnError("response_id", "no answer with this response id for you")
    judge = WriteBack.objects.filter(response_id=response_id, grounding__isnull=False).values_list(
        "grounding", flat=True
    ).first()  # fmt: skip
    signals = Signals(thumbs=thumbs, behaviour=behaviour or None, judge=judge, verifier=verifier)
    if thumbs is None and not behaviour and verifier is None:
        raise CairnError("thumbs", "give at least one signal: thumbs, behaviour or verifier")
    try:
        return _feedback_apply(user, response_id, credit, signals, comment, now or timezone.now())
    except IntegrityError:
        # Two first feedbacks from one user on one answer raced: the loser rolled back whole
        # (counters included) and now finds the winner's row, which it replaces.
        return _feedback_apply(user, response_id, credit, signals, comment, now or timezone.now())


def _feedback_apply(user, response_id, credit: Credit, signals: Signals, comment: str, now: datetime) -> Feedback:
    thumbs, behaviour, verifier, judge = signals.thumbs, signals.behaviour, signals.verifier, signals.judge
    terms = outcome_terms(signals)
    fooled = 1.0 if verifier is not None and verifier < 0.5 and signals.user_accepted else 0.0
    with transaction.atomic():
        previous = (
            Feedback.objects.select_for_update().filter(user=user, response_id=response_id).first()
        )  # serialises a user's two feedbacks on one answer
        old = previous.applied if previous else {}
        old_at = previous.applied_at if previous and previous.applied_at else now
        applied = {}
        if credit.shares:
            rows, named = [], {}
            for i, item in enumerate(credit.shares):
                o = old.get(str(item["chunk_id"]), [0.0] * 6)
                rows.append(
                    f"(%(id{i})s::bigint, %(share{i})s::float, %(a{i})s::float, %(b{i})s::float, %(la{i})s::float, "
                    f"%(lb{i})s::float, %(f{i})s::float, %(v{i})s::float, %(old_at)s::timestamptz)"
                )
                named |= {f"id{i}": item["chunk_id"], f"share{i}": item["share"], f"a{i}": o[0], f"b{i}": o[1],
                          f"la{i}": o[2], f"lb{i}": o[3], f"f{i}": o[4], f"v{i}": o[5]}  # fmt: skip
            named |= {
                "old_at": old_at, "gamma": settings.CAIRN_REPUTATION_GAMMA,
                "unit": settings.CAIRN_REPUTATION_DECAY_UNIT, "now": now, "verifier": verifier, "user": terms.user,
                "other": terms.other, "weight": terms.weight or 1.0, "rate": LONG_TERM_RATE, "fooled": fooled,
                "verified": 1.0 if verifier is not None else 0.0, "new": 0 if previous else 1,
            }  # fmt: skip
            with connection.cursor() as cursor:
                cursor.execute(_UPDATE.replace("{values}", ", ".join(rows)), named)
                for chunk_id, *increments in cursor.fetchall():
                    applied[str(chunk_id)] = [*increments, named["fooled"], named["verified"]]
        values = {
            "thumbs": thumbs, "behaviour": behaviour or "", "verifier": verifier, "judge": judge, "comment": comment,
            "outcome": round(terms.outcome(), 6), "kappa": round(2 * abs(terms.outcome() - 0.5), 6),
            "applied": applied, "applied_at": now,
        }  # fmt: skip
        if previous:
            for field, value in values.items():
                setattr(previous, field, value)
            previous.save()
            return previous
        return Feedback.objects.create(user=user, response_id=response_id, **values)


def reputation_reset(chunks: list[Chunk] | list[int], *, actor: AbstractBaseUser | None, reason: str = "") -> int:
    """Put chunks' counters back to the prior, with an audit row per chunk (its counters before)."""
    ids = [c.id if isinstance(c, Chunk) else c for c in chunks]
    with transaction.atomic():
        rows = list(Reputation.objects.select_for_update().filter(chunk_id__in=ids).order_by("chunk_id"))
        for row in rows:
            audit("reputation.reset", row, actor=actor, summary=reason or "counters reset to the prior",
                  before={"alpha": row.alpha, "beta": row.beta, "A": row.long_alpha, "B": row.long_beta,
                          "fooled": row.fooled, "verified": row.verified},
                  after={"alpha": 1.0, "beta": 1.0, "A": 1.0, "B": 1.0, "fooled": 0.0, "verified": 0.0})  # fmt: skip
        Reputation.objects.filter(chunk_id__in=[r.chunk_id for r in rows]).update(
            alpha=1.0, beta=1.0, long_alpha=1.0, long_beta=1.0, fooled=0.0, verified=0.0, last_updated=timezone.now()
        )
    return len(rows)
