"""The reputation layer's gates (the Retrieval Reputation Layer) replayed through Cairn's real services and database.

    .venv/bin/python benchmarks/reputation.py [--seeds 10] [--seeds-b 30] [--steps 200] [--only a b c syc tp]

Retrieval is simulated; everything after it is Cairn's own code on the `cairn_bench` database:
`reputation.ranking.hits_rank` orders each pool from the counters `reputation.selectors.standings`
reads, `reputation.services.credits_record` freezes the credit shares and creates the counter rows,
and `reputation.services.feedback_submit` moves them in its one SQL UPDATE with lazy decay.

Corpus. A throwaway private collection `bench-reputation` with one document and as many chunks as
the largest gate needs (1000 at the defaults), created as rows directly: retrieval is simulated,
so no text is embedded and every embedding is the all-ones vector. Before every arm of every seed
the bench users' Feedback and Credit rows and the chunks' Reputation rows are deleted, so no two
arms or seeds share a counter; the arms of one seed see the same question stream and the same
feedback coins (paired comparisons). The collection, its chunks and the bench users are deleted at
the end. The simulations' session commits with synchronous_commit off (no wait for the WAL flush:
a crash could lose only bench rows; the statements are the same); the throughput clients keep the
server's setting.

Retrieval model. A question type has a pool of --pool chunks (5) with fixed retrieval results,
both legs agreeing on the order: hybrid score 2/(CAIRN_RRF_K + position), what reciprocal rank
fusion gives (fused/best is 1.00 ... 0.94 over five positions: RRF is flat), cosine similarity
drawn in [0.45, 0.85] and sorted to match (all above CAIRN_RANK_SIMILARITY_FLOOR, so exploration
may touch every chunk). Exactly one chunk is correct; retrieval puts it first with probability
--p-first (0.4), else at a uniformly drawn lower position, so plain retrieval is right about 40%
of the time. The answer is correct iff the top ranked chunk is the correct one (the seed's Gate A
uses top_k 1 for the same reason). Feedback credits the top 1 chunk, or the top 3 (what
pipeline/stages.py does: every piece of evidence the answer was given shares its outcome, here
also chunks that did not decide it), with their similarities.

Questions. Each question has an embedding, passed to hits_rank and credits_record as the pipeline
passes its own: a question type has a random unit vector and every time it is asked it is
reworded (cosine about 0.95 to the type, what MiniLM gives a reworded question); a question that
never recurs (Gate C) is a fresh random unit vector (cosine to any other about 0, sd 0.05;
MiniLM's unrelated questions: 99% below 0.27). A chunk's record counts by the question's affinity to the
questions it was credited for (reputation/ranking.py).

Time. Simulated time is made real: step s happens at t0 + s·--step-seconds (3600: a question an
hour), passed as `now=` to feedback_submit and, by patching the `standings` name that
reputation.ranking imported with one that passes the same `now`, to the ranking's decay-on-read;
hits_rank itself runs unchanged. Gates A and C and sycophancy use Cairn's default decay
(CAIRN_REPUTATION_GAMMA per CAIRN_REPUTATION_DECAY_UNIT: 0.95 a day, about 0.998 a step here).
Gate B sets the decay unit to one step and compares gamma 1 (off), Cairn's default, and --gamma
(0.9) a step, the seed's setting.

Gates.
- A (value under recurrence): --types (10) question types asked in random order for --steps
  (200), a verifier on every feedback (1.0 / 0.0). Reputation with exploration off (Cairn's
  default) and on (the seed's Thompson exploration), crediting the top 1 and the top 3, against
  plain retrieval order. Mean correctness over all steps and over the last half, 95% t intervals
  over --seeds (10), and the paired gain over retrieval. Floor: the gain's interval above 0.
- B (decay): at --shift (50) each question type's correct chunk moves to another chunk of its pool
  and the old one becomes wrong; correctness after the shift. Two set-ups: Gate A's (10 types,
  credit top 1, exploration off as Cairn ships) and the seed's own (one question, three chunks,
  100 steps, exploration on, --seeds-b 30 seeds). Floor: decay on matches or beats the seed's 0.730
  after the shift (the seed: 0.417 off, 0.730 on) and beats decay off.
- C (no recurrence): every step a new question, explore off and on. "fresh": a pool of never-seen
  chunks (counters at the prior: explore off must equal retrieval exactly). "shared": a pool of
  --pool chunks drawn from 100, so chunks recur but questions do not and a chunk's record says
  nothing about the next question (the worst case); with a what-if arm giving hits_rank the seed's
  min-max normalised retrieval score instead of fused/best. Floor: at most 3 points below plain
  retrieval.
- Sycophancy: each feedback is from a sycophant (thumbs up whatever the answer) with probability
  p in 0.1..0.4, else from an honest user (thumbs = correctness); a verifier rides on --coverage
  (30%) of feedback. Explore off, crediting the top 1 and the top 3 (--syc-credit-k). With the
  liar counter (the service as is) and without it: the services have no switch, so the ablation
  sets `fooled` back to 0 on the credited chunks after every feedback
  (`Reputation.objects.filter(...).update(fooled=0)`), i.e. trust stays 1. p = 0 is Gate A's
  explore-off arm (honest thumbs at full trust give y in {0, 1} as the verifier does: the same
  counters), reused when Gate A ran.
- Throughput: --clients (4) client processes (forked, as a web server's workers are; threads would
  share one interpreter lock), each with its own connection, submit --per-client (1000) thumbs
  feedbacks each, each crediting --credited (5) chunks drawn from 200 (contention on hot rows is
  real; lost updates are counted); the credits are recorded first with credits_record.
  Feedbacks/s (and chunk-counter updates/s) over the whole run from a barrier, p50/p95 latency per
  feedback; one client with half as many for reference. The host's load average is recorded
  beside it: the numbers are this machine's, shared with other jobs.

Writes benchmarks/results/reputation.json and reputation.png. `--only` with some sections updates
those sections of an existing results file and keeps the others (and their parameters).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import time
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import replace
from datetime import timedelta
from unittest import mock

from _common import RESULTS, django_setup, percentile, write_result

COLLECTION = "bench-reputation"
USER = "reputation-bench"
SHARED_CORPUS = 100  # Gate C "shared": the chunks questions draw their pools from
SEED_REPLAY = {"types": 1, "pool": 3, "steps": 100, "shift": 50}  # the seed's Gate B set-up
SYCOPHANCY = (0.0, 0.1, 0.2, 0.3, 0.4)
TP_HOT_CHUNKS = 200
SECTIONS = {"a": "gate_a", "b": "gate_b", "c": "gate_c", "syc": "sycophancy", "tp": "throughput"}
# The parameters only one section reads; every other parameter belongs to the simulated gates.
PARAMETER_SECTION = {"clients": "throughput", "per_client": "throughput", "credited": "throughput",
                     "seeds_b": "gate_b", "shift": "gate_b", "gamma": "gate_b", "coverage": "sycophancy",
                     "syc_credit_k": "sycophancy"}  # fmt: skip


# --- statistics --------------------------------------------------------------------------------


def mean_ci(values: list[float]) -> dict:
    """Mean with a two-sided 95% t interval over seeds."""
    import numpy as np
    from scipy import stats

    a = np.asarray(values, dtype=float)
    m = float(a.mean())
    if len(a) < 2:
        return {"mean": m, "low": m, "high": m, "n": len(a)}
    half = float(stats.t.ppf(0.975, len(a) - 1) * a.std(ddof=1) / np.sqrt(len(a)))
    return {"mean": round(m, 4), "low": round(m - half, 4), "high": round(m + half, 4), "n": len(a)}


def smoothed(curves: list[list[int]], window: int) -> dict:
    """Per-step mean and 95% band over seeds of each seed's trailing moving average."""
    import numpy as np
    from scipy import stats

    a = np.asarray(curves, dtype=float)
    kernel = np.ones(window)
    sums = np.apply_along_axis(lambda row: np.convolve(row, kernel)[: len(row)], 1, a)
    counts = np.minimum(np.arange(1, a.shape[1] + 1), window)
    ma = sums / counts
    m = ma.mean(axis=0)
    half = stats.t.ppf(0.975, max(len(a) - 1, 1)) * ma.std(axis=0, ddof=1) / np.sqrt(len(a)) if len(a) > 1 else 0 * m
    return {"mean": [round(x, 4) for x in m], "low": [round(x, 4) for x in m - half],
            "high": [round(x, 4) for x in m + half], "window": window}  # fmt: skip


# --- the bench corpus --------------------------------------------------------------------------


class Bench:
    """The throwaway chunks and users, counter resets, and one arm's simulation."""

    def __init__(self, n_chunks: int, step_seconds: float):
        from django.contrib.auth.models import User

        from corpus.models import EMBEDDING_DIM, Chunk, Document
        from corpus.services import collection_get_or_create

        self.collection, _ = collection_get_or_create(slug=COLLECTION)
        self.document, _ = Document.objects.get_or_create(
            collection=self.collection, source=f"{COLLECTION}/pool",
            defaults={"title": "Reputation bench", "sha256": "0" * 64, "mime_type": "text/plain"},
        )  # fmt: skip
        have = Chunk.objects.filter(document=self.document).count()
        if have < n_chunks:
            Chunk.objects.bulk_create(
                [Chunk(document=self.document, ordinal=i, text=f"Reputation bench chunk {i}.", token_count=5,
                       consistency=1.0, embedding=[1.0] * EMBEDDING_DIM) for i in range(have, n_chunks)],
                batch_size=500,
            )  # fmt: skip
        self.chunk_ids = list(
            Chunk.objects.filter(document=self.document).order_by("ordinal").values_list("id", flat=True)
        )
        # Staff: the bench's feedback carries verifier results, which only staff and the verifier group send.
        self.user, _ = User.objects.get_or_create(username=USER, defaults={"is_staff": True})
        self.step_seconds = step_seconds

    def drop(self) -> None:
        """Delete the throwaway collection, its chunks (their counters cascade) and the bench users."""
        from django.contrib.auth.models import User

        self.reset(list(User.objects.filter(username__startswith=USER)))
        self.document.delete()
        self.collection.delete()
        User.objects.filter(username__startswith=USER).delete()

    def reset(self, users=None) -> None:
        from reputation.models import Credit, Feedback, Reputation

        users = users or [self.user]
        Feedback.objects.filter(user__in=users).delete()
        Credit.objects.filter(user__in=users).delete()
        Reputation.objects.filter(chunk_id__in=self.chunk_ids).delete()

    def pool(self, chunk_ids: list[int], rng: random.Random, p_first: float) -> tuple[list, int]:
        """Hits in retrieval order and the correct chunk's id."""
        from django.conf import settings

        from corpus.selectors import Hit

        sims = sorted((rng.uniform(0.45, 0.85) for _ in chunk_ids), reverse=True)
        hits = [
            Hit(chunk_id=c, document_id=self.document.id, collection_id=self.collection.id, ordinal=0, title="",
                source="", text="", consistency=1.0, vector_distance=1 - s, text_rank=0.1, vector_position=i + 1,
                text_position=i + 1, score=2 / (settings.CAIRN_RRF_K + i + 1), similarity=s)
            for i, (c, s) in enumerate(zip(chunk_ids, sims, strict=True))
        ]  # fmt: skip
        position = 0 if rng.random() < p_first else rng.randrange(1, len(chunk_ids))
        return hits, chunk_ids[position]

    def run(
        self,
        plan: list[tuple[list, int, list[float]]],
        *,
        explore: bool,
        credit_k: int,
        feedback: Callable[[bool, random.Random], dict],
        seed: int,
        decay: tuple[float, float] | None = None,
        liar: bool = True,
        minmax: bool = False,
    ) -> list[int]:
        """Ask every (hits, correct, question vector) of `plan` in order through the reputation
        ranking, record the credit and the feedback; 1 per step where the top chunk was the correct one. `minmax`: the
        what-if of the seed's min-max normalised retrieval score (hits_rank divides by the best,
        so scores pre-normalised to [0, 1] reach rank_score as the seed's sim)."""
        from django.test import override_settings
        from django.utils import timezone

        from reputation import ranking
        from reputation.models import Reputation
        from reputation.selectors import standings
        from reputation.services import credits_record, feedback_submit

        self.reset()
        overrides = {"CAIRN_REPUTATION_GAMMA": decay[0], "CAIRN_REPUTATION_DECAY_UNIT": decay[1]} if decay else {}
        rank_rng, feedback_rng = random.Random(seed * 7919 + 1), random.Random(seed * 7919 + 2)
        start = timezone.now()
        clock = {"now": start}
        correct_steps = []
        with (
            override_settings(**overrides),
            mock.patch.object(ranking, "standings", lambda ids, **kw: standings(ids, now=clock["now"], **kw)),
        ):
            for step, (hits, correct_id, question) in enumerate(plan):
                if minmax:
                    low, high = min(h.score for h in hits), max(h.score for h in hits)
                    hits = [replace(h, score=(h.score - low) / ((high - low) or 1.0)) for h in hits]
                clock["now"] = start + timedelta(seconds=step * self.step_seconds)
                ranked = ranking.hits_rank(hits, explore=explore, rng=rank_rng, question_vector=question)
                correct = ranked[0].hit.chunk_id == correct_id
                credited = [(r.hit.chunk_id, r.hit.similarity) for r in ranked[:credit_k]]
                response_id = uuid.uuid4()
                credits_record(response_id=response_id, user=self.user, credited=credited, question_vector=question)
                feedback_submit(user=self.user, response_id=response_id, now=clock["now"],
                                **feedback(correct, feedback_rng))  # fmt: skip
                if not liar:  # the ablation: trust stays 1
                    Reputation.objects.filter(chunk_id__in=[c for c, _ in credited]).update(fooled=0.0)
                correct_steps.append(int(correct))
        return correct_steps


def verifier_feedback(correct: bool, rng: random.Random) -> dict:
    return {"verifier": 1.0 if correct else 0.0}


def user_feedback(sycophancy: float, coverage: float) -> Callable[[bool, random.Random], dict]:
    def feedback(correct: bool, rng: random.Random) -> dict:
        sycophant, verified = rng.random() < sycophancy, rng.random() < coverage  # both drawn every step
        signals = {"thumbs": 1 if sycophant else int(correct)}
        if verified:
            signals["verifier"] = 1.0 if correct else 0.0
        return signals

    return feedback


# --- plans (the question streams, shared by every arm of a seed) --------------------------------


def question_vectors(seed: int, n: int) -> list[list[float]]:
    """`n` unrelated questions: random unit embeddings (cosine to each other about 0, sd 0.05 in
    384 dimensions). Generators of their own (here and in `rewordings`), so the hits and correct
    chunks of a seed's plan stay what they were without questions."""
    import numpy as np

    from corpus.models import EMBEDDING_DIM

    return _unit(np.random.default_rng(seed + 104729).standard_normal((n, EMBEDDING_DIM)))


def rewordings(seed: int, questions: list[list[float]]) -> list[list[float]]:
    """Each question reworded: cosine about 0.95 to it, what MiniLM gives a reworded question."""
    import numpy as np

    originals = np.asarray(questions)
    noise = np.random.default_rng(seed + 104729).standard_normal(originals.shape) / np.sqrt(originals.shape[1])
    return _unit(originals + 0.33 * noise)


def _unit(vectors) -> list[list[float]]:
    import numpy as np

    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).tolist()


def recurring_plan(bench: Bench, seed: int, *, types: int, pool: int, steps: int, p_first: float,
                   shift: int | None = None) -> list[tuple[list, int, list[float]]]:  # fmt: skip
    """`types` pools over disjoint chunks, asked in random order, each time reworded; at `shift`
    each type's correct chunk moves to another chunk of its pool."""
    rng = random.Random(seed)
    pools = [bench.pool(bench.chunk_ids[t * pool : (t + 1) * pool], rng, p_first) for t in range(types)]
    moved = [rng.choice([h.chunk_id for h in hits if h.chunk_id != correct]) for hits, correct in pools]
    plan, asked = [], []
    for step in range(steps):
        t = rng.randrange(types)
        hits, correct = pools[t]
        plan.append((hits, moved[t] if shift is not None and step >= shift else correct))
        asked.append(t)
    types_asked = question_vectors(seed, types)
    reworded = rewordings(seed + 1, [types_asked[t] for t in asked])
    return [(hits, correct, question) for (hits, correct), question in zip(plan, reworded, strict=True)]


def fresh_plan(bench: Bench, seed: int, *, pool: int, steps: int, p_first: float, shared: bool) -> list:
    """A new, unrelated question every step."""
    rng = random.Random(seed)
    if shared:
        pools = [bench.pool(rng.sample(bench.chunk_ids[:SHARED_CORPUS], pool), rng, p_first) for _ in range(steps)]
    else:
        pools = [bench.pool(bench.chunk_ids[s * pool : (s + 1) * pool], rng, p_first) for s in range(steps)]
    return [(hits, correct, q) for (hits, correct), q in zip(pools, question_vectors(seed, steps), strict=True)]


def retrieval_correct(plan: list) -> list[int]:
    return [int(hits[0].chunk_id == correct) for hits, correct, _question in plan]


# --- gates -------------------------------------------------------------------------------------


def gate_a(bench: Bench, args, bar) -> tuple[dict, dict]:
    """The result, and the per-seed runs of the explore-off arms by credit k (sycophancy's p = 0)."""
    arms = {"explore off, credit top 1": (False, 1), "explore on, credit top 1": (True, 1),
            "explore off, credit top 3": (False, 3), "explore on, credit top 3": (True, 3)}  # fmt: skip
    curves = {"retrieval": [], **{name: [] for name in arms}}
    for seed in range(args.seeds):
        plan = recurring_plan(bench, seed, types=args.types, pool=args.pool, steps=args.steps, p_first=args.p_first)
        curves["retrieval"].append(retrieval_correct(plan))
        for name, (explore, k) in arms.items():
            curves[name].append(bench.run(plan, explore=explore, credit_k=k, feedback=verifier_feedback, seed=seed))
            bar.update(len(plan))
    half = args.steps // 2
    result = {"arms": {}, "curves": {}}
    for name, runs in curves.items():
        result["arms"][name] = {
            "all_steps": mean_ci([sum(r) / len(r) for r in runs]),
            "last_half": mean_ci([sum(r[half:]) / len(r[half:]) for r in runs]),
        }
        if name != "retrieval":
            result["arms"][name]["gain_over_retrieval"] = mean_ci(
                [(sum(r) - sum(b)) / len(r) for r, b in zip(runs, curves["retrieval"], strict=True)]
            )
        result["curves"][name] = smoothed(runs, window=20)
    return result, {k: curves[f"explore off, credit top {k}"] for k in (1, 3)}


def gate_b(bench: Bench, args, bar) -> dict:
    from django.conf import settings

    unit = bench.step_seconds  # gamma per step
    decays = {
        "off (gamma 1)": (1.0, unit),
        f"Cairn default ({settings.CAIRN_REPUTATION_GAMMA} per {settings.CAIRN_REPUTATION_DECAY_UNIT:g} s)": (
            settings.CAIRN_REPUTATION_GAMMA, settings.CAIRN_REPUTATION_DECAY_UNIT),
        f"on (gamma {args.gamma} per step)": (args.gamma, unit),
    }  # fmt: skip
    setups = {
        "cairn": {"types": args.types, "pool": args.pool, "steps": args.steps, "shift": args.shift},
        "seed replay": SEED_REPLAY,
    }
    result = {}
    for setup_name, setup in setups.items():
        explore = setup_name != "cairn"  # Cairn's default (off) on its set-up, the seed's (on) on the seed's
        curves = {"retrieval": []}
        for seed in range(args.seeds if setup_name == "cairn" else args.seeds_b):
            plan = recurring_plan(bench, seed, p_first=args.p_first, **setup)
            curves["retrieval"].append(retrieval_correct(plan))
            for decay_name, decay in decays.items():
                curves.setdefault(f"decay {decay_name}", []).append(
                    bench.run(plan, explore=explore, credit_k=1, feedback=verifier_feedback, seed=seed, decay=decay)
                )
                bar.update(len(plan))
        shift = setup["shift"]
        result[setup_name] = {
            **setup,
            "explore": explore,
            "seeds": len(curves["retrieval"]),
            "arms": {name: {"before_shift": mean_ci([sum(r[:shift]) / shift for r in runs]),
                            "after_shift": mean_ci([sum(r[shift:]) / len(r[shift:]) for r in runs])}
                     for name, runs in curves.items()},
            "curves": {name: smoothed(runs, window=10) for name, runs in curves.items()},
        }  # fmt: skip
    return result


def gate_c(bench: Bench, args, bar) -> dict:
    result = {}
    for variant in ("fresh", "shared"):
        arms = {"explore off": (False, False), "explore on": (True, False)}
        if variant == "shared":
            arms["explore off, what-if min-max sim"] = (False, True)
        runs = {"retrieval": [], **{name: [] for name in arms}}
        for seed in range(args.seeds):
            plan = fresh_plan(bench, seed, pool=args.pool, steps=args.steps, p_first=args.p_first,
                              shared=variant == "shared")  # fmt: skip
            runs["retrieval"].append(retrieval_correct(plan))
            for name, (explore, minmax) in arms.items():
                runs[name].append(bench.run(plan, explore=explore, credit_k=1, feedback=verifier_feedback, seed=seed,
                                            minmax=minmax))  # fmt: skip
                bar.update(len(plan))
        result[variant] = {
            name: {"correct": mean_ci([sum(r) / len(r) for r in rs]),
                   "cost_vs_retrieval": mean_ci([(sum(b) - sum(r)) / len(r) for r, b in zip(rs, runs["retrieval"],
                                                                                           strict=True)])}
            for name, rs in runs.items()
        }  # fmt: skip
    return result


def sycophancy(bench: Bench, args, bar, honest: dict | None) -> dict:
    """p = 0 (honest thumbs, y in {0, 1} at full trust, and nobody to fool) moves the counters exactly
    as Gate A's verifier does, so its runs are Gate A's explore-off arms when those ran."""
    result = {"coverage": args.coverage, "explore": False, "by_credit_k": {}}
    half = args.steps // 2
    for k in args.syc_credit_k:
        by_p = result["by_credit_k"][str(k)] = {}
        for p in SYCOPHANCY:
            liars = (True, False) if p else (True,)  # no sycophant, no lie: the liar counter stays 0
            runs = {"retrieval": [], **{f"liar counter {'on' if liar else 'off'}": [] for liar in liars}}
            for seed in range(args.seeds):
                plan = recurring_plan(bench, seed, types=args.types, pool=args.pool, steps=args.steps,
                                      p_first=args.p_first)  # fmt: skip
                runs["retrieval"].append(retrieval_correct(plan))
                if not p and honest and k in honest:
                    runs["liar counter on"].append(honest[k][seed])
                    continue
                for liar in liars:
                    runs[f"liar counter {'on' if liar else 'off'}"].append(
                        bench.run(plan, explore=False, credit_k=k, feedback=user_feedback(p, args.coverage), seed=seed,
                                  liar=liar)
                    )  # fmt: skip
                    bar.update(len(plan))
            by_p[str(p)] = {
                name: {"all_steps": mean_ci([sum(r) / len(r) for r in rs]),
                       "last_half": mean_ci([sum(r[half:]) / len(r[half:]) for r in rs])}
                for name, rs in runs.items()
            }  # fmt: skip
            if p:
                by_p[str(p)]["liar_counter_gain"] = mean_ci(
                    [(sum(a) - sum(b)) / len(a) for a, b in zip(runs["liar counter on"], runs["liar counter off"],
                                                                strict=True)]
                )  # fmt: skip
    return result


def throughput_client(user_id: int, plan: list, barrier, results) -> None:
    """One client process: its own connection, the feedbacks of its plan as fast as they go."""
    from django.contrib.auth.models import User
    from django.db import connection, connections

    from reputation.services import feedback_submit

    try:
        connection.ensure_connection()
        user = User.objects.get(id=user_id)
        barrier.wait()
        latencies = []
        for response_id, up in plan:
            began = time.perf_counter()
            feedback_submit(user=user, response_id=response_id, thumbs=int(up))
            latencies.append(1000 * (time.perf_counter() - began))
        results.put(latencies)
    except Exception as exc:  # noqa: BLE001 - reported by the parent
        barrier.abort()
        results.put(repr(exc))
    finally:
        connections.close_all()


def throughput(bench: Bench, args) -> dict:
    from django.contrib.auth.models import User
    from django.db import connections, transaction
    from tqdm import tqdm

    from reputation.models import Reputation
    from reputation.services import credits_record

    users = [User.objects.get_or_create(username=f"{USER}-{t}")[0] for t in range(args.clients)]
    hot = bench.chunk_ids[:TP_HOT_CHUNKS]
    fork = multiprocessing.get_context("fork")  # the children inherit Django set up; each opens its own connection

    def one_run(clients: int, per_client: int) -> dict:
        bench.reset(users)
        rng = random.Random(clients)
        plans = [[] for _ in range(clients)]
        desc = f"throughput: recording credits ({clients} client(s))"
        with tqdm(total=clients * per_client, desc=desc) as bar, transaction.atomic():
            for t in range(clients):
                for _ in range(per_client):
                    response_id = uuid.uuid4()
                    credited = [(c, rng.uniform(0.45, 0.85)) for c in rng.sample(hot, args.credited)]
                    credits_record(response_id=response_id, user=users[t], credited=credited)
                    plans[t].append((response_id, rng.random() < 0.6))
                    bar.update()
        connections.close_all()  # no socket shared with the children
        barrier, results = fork.Barrier(clients + 1), fork.Queue()
        processes = [
            fork.Process(target=throughput_client, args=(users[t].id, plans[t], barrier, results))
            for t in range(clients)
        ]
        for process in processes:
            process.start()
        load_before = os.getloadavg()
        barrier.wait()
        began = time.perf_counter()
        outcomes = [results.get(timeout=3600) for _ in processes]  # before join: a child exits once read
        elapsed = time.perf_counter() - began
        for process in processes:
            process.join()
        errors = [o for o in outcomes if isinstance(o, str)]
        if errors:
            raise RuntimeError(f"a throughput client failed: {errors[0]}")
        flat = [x for latencies in outcomes for x in latencies]
        counted = sum(Reputation.objects.filter(chunk_id__in=hot).values_list("feedback_count", flat=True))
        return {
            "clients": clients, "feedbacks": len(flat), "chunks_per_feedback": args.credited,
            "seconds": round(elapsed, 3), "feedbacks_per_s": round(len(flat) / elapsed, 1),
            "chunk_updates_per_s": round(len(flat) * args.credited / elapsed, 1),
            "latency_ms_p50": round(percentile(flat, 50), 2), "latency_ms_p95": round(percentile(flat, 95), 2),
            "lost_updates": len(flat) * args.credited - counted, "load_average_before": [round(x, 2) for x in load_before],
        }  # fmt: skip

    result = {"single": one_run(1, args.per_client // 2), "concurrent": one_run(args.clients, args.per_client)}
    bench.reset(users)
    return result


@contextmanager
def commits_unawaited():
    """The simulations' own session commits without waiting for the WAL flush (synchronous_commit
    off: what a crash could lose is bench rows, and the statements are the same). The throughput
    clients open their own connections with the server's setting."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit = off")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET synchronous_commit")


# --- main --------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=10, help="Seeds per arm (gates A, B cairn, C, sycophancy).")
    parser.add_argument("--seeds-b", type=int, default=30, help="Seeds of Gate B's seed replay (the seed ran 30).")
    parser.add_argument("--steps", type=int, default=200, help="Questions per run.")
    parser.add_argument("--types", type=int, default=10, help="Recurring question types.")
    parser.add_argument("--pool", type=int, default=5, help="Chunks per question's retrieval pool.")
    parser.add_argument("--p-first", type=float, default=0.4, help="How often retrieval puts the correct chunk first.")
    parser.add_argument("--shift", type=int, default=50, help="Gate B: the step at which the correct chunks move.")
    parser.add_argument("--gamma", type=float, default=0.9, help="Gate B: decay per step with decay on.")
    parser.add_argument("--coverage", type=float, default=0.3, help="Sycophancy: share of feedback with a verifier.")
    parser.add_argument("--step-seconds", type=float, default=3600.0, help="Simulated seconds between questions.")
    parser.add_argument("--syc-credit-k", type=int, nargs="+", default=[1, 3], help="Sycophancy: chunks credited.")
    parser.add_argument("--clients", type=int, default=4, help="Throughput: concurrent clients.")
    parser.add_argument("--per-client", type=int, default=1000, help="Throughput: feedbacks per client.")
    parser.add_argument("--credited", type=int, default=5, help="Throughput: chunks each feedback credits.")
    parser.add_argument("--only", nargs="+", choices=list(SECTIONS), default=list(SECTIONS))
    args = parser.parse_args()
    django_setup()
    from tqdm import tqdm

    began = time.perf_counter()
    honest = None
    needed = max(args.steps * args.pool, args.types * args.pool, SHARED_CORPUS, TP_HOT_CHUNKS)
    bench = Bench(needed, args.step_seconds)
    steps = {
        "a": 4 * args.seeds * args.steps,
        "b": 3 * args.seeds * args.steps + 3 * args.seeds_b * SEED_REPLAY["steps"],
        "c": 5 * args.seeds * args.steps,
        "syc": sum(2 * len(SYCOPHANCY) - (2 if "a" in args.only and k in (1, 3) else 1) for k in args.syc_credit_k)
        * args.seeds
        * args.steps,
    }
    parameters = {k: v for k, v in vars(args).items() if k != "only"}
    result = {"parameters": parameters, "load_average_at_start": [round(x, 2) for x in os.getloadavg()]}
    if set(args.only) != set(SECTIONS) and (RESULTS / "reputation.json").exists():
        result = json.loads((RESULTS / "reputation.json").read_text())  # update these sections only
        ran = {name for section, name in SECTIONS.items() if section in args.only}
        if ran - {"throughput"}:
            ran.add("gates")  # the parameters every simulated gate reads
        result["parameters"] |= {k: v for k, v in parameters.items() if PARAMETER_SECTION.get(k, "gates") in ran}
    try:
        with (
            tqdm(total=sum(steps[g] for g in args.only if g in steps), desc="simulated answers", unit="ans") as bar,
            commits_unawaited(),
        ):
            if "a" in args.only:
                result["gate_a"], honest = gate_a(bench, args, bar)
            if "b" in args.only:
                result["gate_b"] = gate_b(bench, args, bar)
            if "c" in args.only:
                result["gate_c"] = gate_c(bench, args, bar)
            if "syc" in args.only:
                result["sycophancy"] = sycophancy(bench, args, bar, honest)
        if "tp" in args.only:
            result["throughput"] = throughput(bench, args)
    finally:
        bench.drop()
    result["floors"] = floors(result)
    result["wall_seconds"] = round(time.perf_counter() - began, 1)
    report(result)
    plot(result)
    print(f"wrote {write_result('reputation', result)} and {RESULTS / 'reputation.png'}")


def floors(result: dict) -> dict:
    out = {}
    if "gate_a" in result:
        gain = result["gate_a"]["arms"]["explore off, credit top 1"]["gain_over_retrieval"]
        out["A: reputation beats retrieval, CI of the paired gain above 0 (explore off, top 1)"] = gain["low"] > 0
    if "gate_b" in result:
        for setup, values in result["gate_b"].items():
            on = next(v for k, v in values["arms"].items() if k.startswith("decay on"))["after_shift"]
            out[f"B: {setup}, decay on after the shift >= the seed's 0.730"] = on["mean"] >= 0.730
            off = next(v for k, v in values["arms"].items() if k.startswith("decay off"))["after_shift"]
            out[f"B: {setup}: decay on beats off after the shift"] = on["mean"] > off["mean"]
    if "gate_c" in result:
        for variant, arms in result["gate_c"].items():
            for name in (n for n in arms if n != "retrieval"):
                out[f"C: {variant}, {name}: costs <= 3 points"] = arms[name]["cost_vs_retrieval"]["mean"] <= 0.03
    if "throughput" in result:
        concurrent = result["throughput"]["concurrent"]
        out["throughput: >= 500 feedbacks/s with 4 clients"] = concurrent["feedbacks_per_s"] >= 500
        out["throughput: >= 500 chunk-counter updates/s with 4 clients"] = concurrent["chunk_updates_per_s"] >= 500
    return out


def report(result: dict) -> None:
    fmt = lambda c: f"{c['mean']:.3f} [{c['low']:.3f}, {c['high']:.3f}]"  # noqa: E731
    if "gate_a" in result:
        print("Gate A (all steps | last half | gain over retrieval)")
        for name, arm in result["gate_a"]["arms"].items():
            gain = f" | {fmt(arm['gain_over_retrieval'])}" if "gain_over_retrieval" in arm else ""
            print(f"  {name:32} {fmt(arm['all_steps'])} | {fmt(arm['last_half'])}{gain}")
    if "gate_b" in result:
        for setup, values in result["gate_b"].items():
            print(f"Gate B {setup} (before shift | after shift), {values['seeds']} seeds")
            for name, arm in values["arms"].items():
                print(f"  {name:60} {fmt(arm['before_shift'])} | {fmt(arm['after_shift'])}")
    if "gate_c" in result:
        for variant, arms in result["gate_c"].items():
            print(f"Gate C {variant} (correct | cost vs retrieval)")
            for name, arm in arms.items():
                print(f"  {name:12} {fmt(arm['correct'])} | {fmt(arm['cost_vs_retrieval'])}")
    if "sycophancy" in result:
        print(f"Sycophancy, verifier on {result['sycophancy']['coverage']:.0%} of feedback (all steps | last half)")
        for k, by_p in result["sycophancy"]["by_credit_k"].items():
            for p, arms in by_p.items():
                for name, arm in arms.items():
                    if name != "liar_counter_gain":
                        print(f"  credit top {k} p={p:4} {name:17} {fmt(arm['all_steps'])} | {fmt(arm['last_half'])}")
                if "liar_counter_gain" in arms:
                    print(f"  credit top {k} p={p:4} liar counter gain  {fmt(arms['liar_counter_gain'])}")
    if "throughput" in result:
        for run in result["throughput"].values():
            print(f"Throughput {run}")
    for name, met in result["floors"].items():
        print(f"  {'MET ' if met else 'MISS'} {name}")


def plot(result: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(19, 10))
    (ax_a, ax_b, ax_b2), (ax_c, ax_s, ax_t) = axes

    def curves(ax, data: dict, title: str, shift: int | None = None) -> None:
        for name, c in data.items():
            x = range(len(c["mean"]))
            ax.plot(x, c["mean"], label=name, linestyle="--" if name == "retrieval" else "-")
            ax.fill_between(x, c["low"], c["high"], alpha=0.15)
        if shift is not None:
            ax.axvline(shift, color="grey", linestyle=":")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("step")
        ax.set_ylabel(f"correct (moving average of {next(iter(data.values()))['window']}, 95% band)")
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7)

    if "gate_a" in result:
        curves(ax_a, result["gate_a"]["curves"], "Gate A: recurrence + verifier")
    if "gate_b" in result:
        cairn, seed = result["gate_b"]["cairn"], result["gate_b"]["seed replay"]
        curves(ax_b, cairn["curves"], f"Gate B ({cairn['types']} types, explore off): correct chunks move at step "
               f"{cairn['shift']}", shift=cairn["shift"])  # fmt: skip
        curves(
            ax_b2, seed["curves"], "Gate B, the seed's set-up (1 question, 3 chunks, explore on)", shift=seed["shift"]
        )
    if "gate_c" in result:
        names = ["retrieval", "explore off", "explore on", "explore off, what-if min-max sim"]
        for i, (variant, arms) in enumerate(result["gate_c"].items()):
            xs = [j + 0.38 * i for j, n in enumerate(names) if n in arms]
            cis = [arms[n]["correct"] for n in names if n in arms]
            ax_c.bar(xs, [c["mean"] for c in cis], width=0.38, capsize=3, label=variant,
                     yerr=[[c["mean"] - c["low"] for c in cis], [c["high"] - c["mean"] for c in cis]])  # fmt: skip
        ax_c.set_xticks([j + 0.19 for j in range(len(names))], [n.replace(", ", ",\n") for n in names], fontsize=8)
        ax_c.axhline(result["gate_c"]["fresh"]["retrieval"]["correct"]["mean"] - 0.03, color="red", linestyle=":",
                     label="floor: retrieval - 3 points (fresh)")  # fmt: skip
        ax_c.set_ylabel("correct")
        ax_c.set_title("Gate C: no recurrence (fresh chunks | shared chunks)", fontsize=10)
        ax_c.legend(fontsize=8)
    if "sycophancy" in result:
        for k, by_p in result["sycophancy"]["by_credit_k"].items():
            for name, style in (("liar counter on", "-"), ("liar counter off", "--"), ("retrieval", ":")):
                if name == "retrieval" and k != next(iter(result["sycophancy"]["by_credit_k"])):
                    continue
                xs = [float(p) for p in by_p if name in by_p[p]]
                cis = [by_p[p][name]["all_steps"] for p in by_p if name in by_p[p]]
                ax_s.errorbar(xs, [c["mean"] for c in cis], yerr=[[c["mean"] - c["low"] for c in cis],
                              [c["high"] - c["mean"] for c in cis]], marker="o", capsize=3, linestyle=style,
                              label=name if name == "retrieval" else f"{name}, credit top {k}")  # fmt: skip
        ax_s.set_xlabel("share of sycophantic feedback p")
        ax_s.set_ylabel("correct, all steps")
        ax_s.set_title(f"Sycophancy, verifier on {result['sycophancy']['coverage']:.0%} of feedback, explore off",
                       fontsize=10)  # fmt: skip
        ax_s.set_ylim(0, 1.02)
        ax_s.legend(fontsize=7)
    if "throughput" in result:
        runs = list(result["throughput"].values())
        ax_t.bar([f"{r['clients']} client(s)" for r in runs], [r["feedbacks_per_s"] for r in runs])
        for i, r in enumerate(runs):
            ax_t.text(i, r["feedbacks_per_s"], f"p50 {r['latency_ms_p50']} ms\np95 {r['latency_ms_p95']} ms",
                      ha="center", va="bottom", fontsize=8)  # fmt: skip
        ax_t.axhline(500, color="red", linestyle="--", label="floor 500/s (4 clients)")
        ax_t.set_ylabel(f"feedbacks/s (each crediting {runs[0]['chunks_per_feedback']} chunks)")
        ax_t.set_title(f"Feedback throughput (host load {runs[-1]['load_average_before'][0]} before, "
                       f"{os.cpu_count()} cores)", fontsize=10)  # fmt: skip
        ax_t.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "reputation.png", dpi=100)


if __name__ == "__main__":
    main()
