"""Writes to reputation: freeze an answer's credit shares, apply feedback, reset counters.

Feedback is ONE SQL statement, the feedback row included: the rows are locked in chunk order (no
deadlock between concurrent feedbacks), each chunk's outcome is computed from its own liar
counter, decay since the row last changed is applied, a replaced feedback's effect is taken back,
and the increments are stored with the feedback. No counter is read into Python and written back,
so concurrent feedback loses nothing (tests/test_reputation.py runs 8 threads, and 4 racing over
the same answers).
"""

from __future__ import annotations

import json
from datetime import datetime

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce
from django.utils import timezone
from pgvector.django import VectorField
from rest_framework import status

from common.exceptions import CairnError
from common.postgres.prepared import fetch_prepared, instance_from_row, returning
from corpus.audit import audit
from corpus.models import Chunk
from reputation.models import Credit, Feedback, Reputation
from reputation.scoring import LONG_TERM_RATE, Signals, credit_shares, decisiveness, outcome_terms
from writeback.models import WriteBack, WriteBackAsking


def credits_record(*, response_id, user, credited: list[tuple[int, float]], question_vector=None) -> Credit:
    """Freeze each credited chunk's share of an answer from (chunk id, retrieval similarity)
    pairs; make sure every credited chunk has its counter row (the prior), and add the question's
    embedding to each one's `questions` (what ranking compares a later question with)."""
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
        if question_vector is not None:
            question = Value(list(map(float, question_vector)), output_field=VectorField())
            Reputation.objects.filter(chunk_id__in=[chunk_id for chunk_id, _ in credited]).update(
                questions=Coalesce(F("questions") + question, question, output_field=VectorField())
            )
    return credit


def _decay_since(column: str) -> str:
    """gamma ^ (seconds since `column` / unit), never above 1 (clock skew between web nodes)."""
    return f"power(%(gamma)s, GREATEST(EXTRACT(EPOCH FROM (%(now)s - {column})), 0) / %(unit)s)"


_FEEDBACK = Feedback._meta.db_table
_REPUTATION = Reputation._meta.db_table

# The asker's credit for an answer, with the answer's grounding (the judge signal) if validated:
# the grounding of the write-back it proposed, or was merged into as a repeat of its question.
_CREDIT = f"""
SELECT c.shares, (SELECT w.grounding FROM {WriteBack._meta.db_table} w
                  JOIN {WriteBackAsking._meta.db_table} a ON a.writeback_id = w.id
                  WHERE a.response_id = c.response_id AND w.grounding IS NOT NULL LIMIT 1)
FROM {Credit._meta.db_table} c WHERE c.response_id = %(response_id)s AND c.user_id = %(user_id)s
"""

# The whole feedback in one statement and one commit: lock the user's previous
# feedback on this answer if there is one (it serialises a user's feedbacks on one answer), then
# the credited counter rows in chunk order (no deadlock between concurrent feedbacks); compute
# each chunk's outcome y from its own trust (1 - fooled / (verified + 1)) and the signal terms;
# move every counter (decay since the row last changed, the previous feedback's effect taken
# back as decayed as the counters were, the new increments added); store the feedback with the
# increments it applied. Under READ COMMITTED a lock that waited reads the row as the winner left
# it, so a replacement always takes back what is really there.
_SUBMIT = f"""
WITH previous AS (
    SELECT id, applied, applied_at FROM {_FEEDBACK}
    WHERE user_id = %(user_id)s AND response_id = %(response_id)s FOR UPDATE
),
credit AS (
    SELECT c.chunk_id, c.share,
           COALESCE((p.applied -> c.chunk_id::text ->> 0)::float, 0) AS old_alpha,
           COALESCE((p.applied -> c.chunk_id::text ->> 1)::float, 0) AS old_beta,
           COALESCE((p.applied -> c.chunk_id::text ->> 2)::float, 0) AS old_a,
           COALESCE((p.applied -> c.chunk_id::text ->> 3)::float, 0) AS old_b,
           COALESCE((p.applied -> c.chunk_id::text ->> 4)::float, 0) AS old_fooled,
           COALESCE((p.applied -> c.chunk_id::text ->> 5)::float, 0) AS old_verified,
           COALESCE(p.applied_at, %(now)s) AS old_at
    FROM unnest(%(chunk_ids)s::bigint[], %(shares)s::float[]) AS c(chunk_id, share)
    LEFT JOIN previous p ON true
),
locked AS (
    SELECT r.chunk_id, r.fooled, r.verified FROM {_REPUTATION} r
    WHERE r.chunk_id IN (SELECT chunk_id FROM credit) ORDER BY r.chunk_id FOR UPDATE
),
outcome AS (
    SELECT c.*, y, 2 * abs(y - 0.5) AS kappa FROM credit c JOIN locked l USING (chunk_id),
    LATERAL (SELECT CASE WHEN %(verifier)s::float IS NOT NULL THEN %(verifier)s::float
                         ELSE 0.5 + ((1 - l.fooled / (l.verified + 1)) * %(user)s + %(other)s) / %(weight)s
                    END AS y) o
),
moved AS (
    UPDATE {_REPUTATION} r SET
        alpha = 1 + (r.alpha - 1) * {_decay_since("r.last_updated")}
                - o.old_alpha * {_decay_since("o.old_at")} + o.kappa * o.share * o.y,
        beta = 1 + (r.beta - 1) * {_decay_since("r.last_updated")}
               - o.old_beta * {_decay_since("o.old_at")} + o.kappa * o.share * (1 - o.y),
        long_alpha = r.long_alpha - o.old_a + %(rate)s * o.kappa * o.share * o.y,
        long_beta = r.long_beta - o.old_b + %(rate)s * o.kappa * o.share * (1 - o.y),
        fooled = r.fooled - o.old_fooled + %(fooled)s,
        verified = r.verified - o.old_verified + %(verified)s,
        feedback_count = r.feedback_count + CASE WHEN EXISTS (SELECT 1 FROM previous) THEN 0 ELSE 1 END,
        last_updated = %(now)s
    FROM outcome o
    WHERE r.chunk_id = o.chunk_id
    RETURNING r.chunk_id, jsonb_build_array(
        o.kappa * o.share * o.y, o.kappa * o.share * (1 - o.y), %(rate)s * o.kappa * o.share * o.y,
        %(rate)s * o.kappa * o.share * (1 - o.y), %(fooled)s::float, %(verified)s::float) AS increments
),
applied AS (
    SELECT COALESCE(jsonb_object_agg(chunk_id::text, increments), '{{}}'::jsonb) AS applied FROM moved
),
inserted AS (
    INSERT INTO {_FEEDBACK} (user_id, response_id, thumbs, behaviour, verifier, judge, comment, outcome,
                             kappa, applied, applied_at, created_at, updated_at)
    SELECT %(user_id)s, %(response_id)s, %(thumbs)s, %(behaviour)s, %(verifier)s, %(judge)s, %(comment)s,
           %(outcome)s, %(kappa)s, a.applied, %(now)s, now(), now()
    FROM applied a WHERE NOT EXISTS (SELECT 1 FROM previous)
    RETURNING {returning(Feedback, _FEEDBACK)}
),
replaced AS (
    UPDATE {_FEEDBACK} f SET
        thumbs = %(thumbs)s, behaviour = %(behaviour)s, verifier = %(verifier)s, judge = %(judge)s,
        comment = %(comment)s, outcome = %(outcome)s, kappa = %(kappa)s, applied = a.applied,
        applied_at = %(now)s, updated_at = now()
    FROM previous p, applied a WHERE f.id = p.id
    RETURNING {returning(Feedback, "f")}
)
SELECT * FROM inserted UNION ALL SELECT * FROM replaced
"""


def may_send_verifier(user: AbstractBaseUser) -> bool:
    """Is `user` trusted with ground truth (CAIRN_VERIFIER_GROUP)?"""
    return user.is_staff or user.groups.filter(name=settings.CAIRN_VERIFIER_GROUP).exists()


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
    counters; a second feedback from the same user replaces the first, effect included.
    Two prepared statements (common/postgres/prepared.py): the answer's credit with its judge,
    then the one above."""
    credit = fetch_prepared(_CREDIT, {"response_id": response_id, "user_id": user.pk})
    if credit is None:  # unknown, or someone else's: the same answer, so nothing leaks
        raise CairnError(
            "response_id", "no answer with this response id for you", status_code=status.HTTP_404_NOT_FOUND
        )
    if thumbs is None and not behaviour and verifier is None:
        raise CairnError("thumbs", "give at least one signal: thumbs, behaviour or verifier")
    if verifier is not None and not may_send_verifier(user):
        raise CairnError(
            "verifier", f"only staff and the {settings.CAIRN_VERIFIER_GROUP!r} group send verifier results",
            status_code=status.HTTP_403_FORBIDDEN,
        )  # fmt: skip
    shares, judge = json.loads(credit[0]), credit[1]  # Django's connection loads jsonb as text
    signals = Signals(thumbs=thumbs, behaviour=behaviour or None, judge=judge, verifier=verifier)
    terms = outcome_terms(signals)
    y = terms.outcome()  # at full trust: what the feedback row records
    params = {
        "user_id": user.pk, "response_id": response_id, "now": now or timezone.now(),
        "chunk_ids": [item["chunk_id"] for item in shares], "shares": [item["share"] for item in shares],
        "gamma": settings.CAIRN_REPUTATION_GAMMA, "unit": settings.CAIRN_REPUTATION_DECAY_UNIT,
        "verifier": verifier, "user": terms.user, "other": terms.other, "weight": terms.weight or 1.0,
        "rate": LONG_TERM_RATE, "fooled": 1.0 if verifier is not None and verifier < 0.5 and signals.user_accepted else 0.0,
        "verified": 1.0 if verifier is not None else 0.0, "thumbs": thumbs, "behaviour": behaviour or "",
        "judge": judge, "comment": comment, "outcome": round(y, 6),
        "kappa": round(decisiveness(y), 6),
    }  # fmt: skip
    try:
        with transaction.atomic():
            row = fetch_prepared(_SUBMIT, params)
    except IntegrityError:
        # Two first feedbacks from one user on one answer raced: the loser rolled back whole
        # (counters included); now it finds the winner's row and replaces it.
        with transaction.atomic():
            row = fetch_prepared(_SUBMIT, params)
    return instance_from_row(Feedback, row)


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
            alpha=1.0, beta=1.0, long_alpha=1.0, long_beta=1.0, fooled=0.0, verified=0.0, questions=None,
            last_updated=timezone.now(),
        )  # fmt: skip
    return len(rows)
