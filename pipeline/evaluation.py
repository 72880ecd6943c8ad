"""How answers are scored against an organisation's own questions: one answer against its gold
strings, a run of answers summed into figures, and one run compared with the run before it.

`manage.py evaluate` stores these figures and benchmarks/docs_qa.py reports them: both call these
functions, so the two cannot drift. Plain functions over plain data: no database, no Django, so a
benchmark script may import this module before Django is set up.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# The figures a run is judged by: a fall of either by more than the margin fails the run.
RATES = {
    "gold_stated_rate": "answerable: gold in a stated answer",
    "not_found_rate": "unanswerable: not found",
}


def has_gold(text: str, gold: Iterable[str]) -> bool:
    """Does `text` hold one of the gold strings (case-insensitive; a blank one matches nothing)?"""
    text = text.lower()
    return any(g.strip() and g.strip().lower() in text for g in gold)


@dataclass(frozen=True)
class Score:
    """One answer against its question. `stated`: the answer states something (outcome answered,
    `found` true); `quoted`: its text holds a gold string, stated or withheld (a gold string inside
    "Sources disagree" or where to look was not given to the reader); always False when unanswerable."""

    answerable: bool
    stated: bool
    quoted: bool = False

    @property
    def right(self) -> bool:
        """Answerable: a gold string in a stated answer. Unanswerable: nothing stated (not found,
        where to look and a dispute all leave `found` false)."""
        return self.stated and self.quoted if self.answerable else not self.stated


def answer_score(*, text: str, stated: bool, gold: Sequence[str] | None) -> Score:
    """Score one answer's text; `gold` None for an unanswerable question."""
    if gold is None:
        return Score(answerable=False, stated=stated)
    return Score(answerable=True, stated=stated, quoted=has_gold(text, gold))


def percentile(values: Sequence[float], q: float) -> float | None:
    """numpy's percentile (linear interpolation); None for no values."""
    import numpy as np

    return float(np.percentile(np.asarray(values), q)) if len(values) else None


def run_summary(*, scores: Sequence[Score], latencies_ms: Sequence[float], errors: int = 0) -> dict:
    """The figures of a run: counts of the questions answered (`scores`; the `errors` that got no
    answer are counted apart, as benchmarks/docs_qa.py counts a 5xx), the two rates (of no
    questions: 0) and the latency p50/p95 of every call, the failed ones too."""
    answerable = [s for s in scores if s.answerable]
    unanswerable = [s for s in scores if not s.answerable]
    gold_stated = sum(s.right for s in answerable)
    not_found = sum(s.right for s in unanswerable)
    return {
        "asked": len(scores),
        "errors": errors,
        "answerable": len(answerable),
        "gold_stated": gold_stated,
        "gold_unstated": sum(s.quoted and not s.stated for s in answerable),
        "stated": sum(s.stated for s in answerable),
        "gold_stated_rate": gold_stated / max(1, len(answerable)),
        "unanswerable": len(unanswerable),
        "not_found_unanswerable": not_found,
        "not_found_rate": not_found / max(1, len(unanswerable)),
        "p50_ms": percentile(latencies_ms, 50),
        "p95_ms": percentile(latencies_ms, 95),
    }


def run_compare(*, previous: dict | None, current: dict, margin_points: float) -> dict:
    """Compare two runs' totals (run_summary's): each rate before and now, its change in points and
    whether it fell by more than `margin_points`. A rate is compared only where both runs asked
    questions of its kind. Without a previous run, nothing can have fallen."""
    if previous is None:
        return {"margin_points": margin_points, "rates": {}, "fell": []}
    kinds = {"gold_stated_rate": "answerable", "not_found_rate": "unanswerable"}
    rates, fell = {}, []
    for rate, kind in kinds.items():
        if not previous.get(kind) or not current.get(kind):
            continue
        before, now = previous[rate], current[rate]
        # Rounded: 0.50 - 0.48 is 2.0000000000000018 points in floating point, not more than 2.
        change = round((now - before) * 100, 9)
        rates[rate] = {"before": before, "now": now, "change_points": change, "fell": -change > margin_points}
        if -change > margin_points:
            fell.append(rate)
    return {"margin_points": margin_points, "rates": rates, "fell": fell}


def results_changed(*, previous: Sequence[dict], current: Sequence[dict]) -> dict:
    """The questions (by id, else by text) right in the previous run's results and wrong now, and
    the reverse: what a fall is made of."""

    def key(row: dict) -> str:
        return str(row["id"]) if row.get("id") is not None else row["question"]

    before = {key(r): r.get("right") for r in previous}
    now_wrong = [key(r) for r in current if before.get(key(r)) is True and r.get("right") is False]
    now_right = [key(r) for r in current if before.get(key(r)) is False and r.get("right") is True]
    return {"now_wrong": now_wrong, "now_right": now_right}
