"""Does Cairn learn from its misses? A replay over the manuals of benchmarks/docs_qa.py.

For each manual, its answerable questions are split in file order into *taught* (even positions)
and *untaught* (odd) halves; benchmarks/<set>_docs/reworded.jsonl holds every taught question in
other words, written without seeing Cairn's answers. Then, on the manual's collection of the
`cairn_bench` database (its lessons, gaps, marks and reputation counters cleared first):

1. before: readers ask the reworded taught questions, the untaught ones, the taught ones as
   written, and the unanswerable ones;
2. teaching: a reader asks each taught question on the API and, on its answer, marks the sentence
   holding a gold string when one of the evidence cards shows it (POST /api/v1/answers/ID/mark),
   else gives a thumbs down (POST /api/v1/feedback);
3. a curator works the list (pipeline.misses.misses_for, with CAIRN_MISS_MIN_ASKERS=1: each
   question here is asked by one reader): per question of each group, confirms its reader's mark,
   or searches the collection for a sentence holding the gold (the question, then the gold string
   itself, as a curator who knows the answer would type it) and picks it, or marks it not covered;
4. after: other readers ask the same four sets again.

The lesson threshold (CAIRN_LESSON_SIMILARITY) for each manual is chosen on the other manuals only
(leave one manual out): the threshold that reaches the most reworded questions' own lessons less
the untaught and unanswerable questions it would reach, from the questions' embeddings alone.
Write-backs are off (CAIRN_WRITEBACK=0): what is measured is the lessons. Reports gold in a stated
answer (pipeline.evaluation.answer_score, as docs_qa.py counts it) before and after, per manual
and on the mean, latency p50/p95 before and after, and, with --latency, p50/p95 of one manual's
untaught questions with 1,000 lessons in its collection against none.

    .venv/bin/python benchmarks/teaching.py [--set NAME ...] [--fresh] [--latency]

Resumable: each manual's result is kept in benchmarks/results/cache/teaching_<set>.json and reused
unless --fresh. Writes benchmarks/results/teaching.json and teaching.png.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path

from _common import CACHE, RESULTS, django_setup, percentile, write_result

MANUALS = ("python", "apache", "nodejs", "bash", "git", "sqlite", "postfix", "rust", "django")
PARTS = ("reworded", "untaught", "original", "unanswerable")
LATENCY_LESSONS = 1000


def questions_of(folder: Path) -> dict[str, list[dict]]:
    rows = [json.loads(line) for line in (folder / "questions.jsonl").read_text().splitlines() if line.strip()]
    answerable = [q for q in rows if q["answerable"]]
    taught, untaught = answerable[0::2], answerable[1::2]
    reworded = {r["id"]: r["question"] for r in map(json.loads, (folder / "reworded.jsonl").read_text().splitlines())}
    return {
        "original": taught,
        "reworded": [q | {"question": reworded[q["id"]]} for q in taught],
        "untaught": untaught,
        "unanswerable": [q for q in rows if not q["answerable"]],
    }


# --- the lesson threshold, leaving each manual out -------------------------------------------------


def similarities(sets: dict[str, dict]) -> dict[str, dict]:
    """Per manual: each reworded question's similarity to its own taught question (and whether that
    is its nearest), and each untaught or unanswerable question's best similarity to a taught one."""
    import numpy as np

    from corpus.embedder import get_embedder

    embedder = get_embedder()

    def unit(texts):
        matrix = np.asarray(embedder.embed(texts), dtype=np.float64)
        return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)

    found = {}
    for name, parts in sets.items():
        taught = unit([q["question"] for q in parts["original"]])
        reworded = unit([q["question"] for q in parts["reworded"]]) @ taught.T
        others = unit([q["question"] for q in parts["untaught"] + parts["unanswerable"]]) @ taught.T
        own = np.diag(reworded)
        found[name] = {
            "own": [float(s) if reworded[i].argmax() == i else 0.0 for i, s in enumerate(own)],
            "others": others.max(axis=1).tolist(),
        }
    return found


def best_threshold(sims: list[dict]) -> float:
    """The threshold that reaches the most own lessons less the far questions it reaches."""
    grid = [round(0.50 + 0.01 * i, 2) for i in range(46)]
    gain = {t: sum(sum(s >= t for s in m["own"]) - sum(s >= t for s in m["others"]) for m in sims) for t in grid}
    return max(grid, key=lambda t: (gain[t], t))


# --- one manual ----------------------------------------------------------------------------------


class Manual:
    def __init__(self, name: str):
        from django.contrib.auth.models import User
        from django.test import Client

        from corpus.models import Collection
        from docs_qa import SETS

        self.docs = SETS[name]
        self.collection = Collection.objects.get(slug=self.docs.collection)
        self.parts = questions_of(self.docs.folder)
        self.users = {}
        for role in ("teacher", *PARTS):
            user, _ = User.objects.get_or_create(username=f"{self.docs.collection}-{role}")
            user.groups.add(*self.collection.groups.all())
            self.users[role] = user
        self.curator, _ = User.objects.get_or_create(
            username="teaching-curator", defaults={"is_staff": True, "is_superuser": True}
        )
        self.client = Client

    def clear(self) -> None:
        """What a replay leaves behind, gone: lessons, gaps, marks, the readers' answers, counters."""
        from pipeline.models import Answer
        from reputation.models import Credit, Feedback, Reputation
        from writeback.models import Adaptation, Gap, Lesson, Mark

        Adaptation.objects.filter(collection=self.collection).delete()
        Lesson.objects.filter(collection=self.collection).delete()
        Gap.objects.filter(collection=self.collection).delete()
        users = list(self.users.values())
        Mark.objects.filter(user__in=users).delete()
        Feedback.objects.filter(user__in=users).delete()
        Credit.objects.filter(user__in=users).delete()
        Answer.objects.filter(user__in=users).delete()
        Reputation.objects.filter(chunk__document__collection=self.collection).delete()

    def ask(self, role: str, question: str) -> tuple[dict, float]:
        client = self.client()
        client.force_login(self.users[role])
        started = time.perf_counter()
        response = client.post(
            "/api/v1/query",
            {"question": question, "mode": "fast", "top_k": 8, "collections": [self.docs.collection]},
            content_type="application/json",
        )
        ms = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise SystemExit(
                f"{self.docs.name}: HTTP {response.status_code} for {question!r}: {response.content[:300]}"
            )
        return response.json(), ms

    def ask_all(self, label: str, parts=PARTS) -> dict:
        from tqdm import tqdm

        from pipeline.evaluation import answer_score

        out = {}
        for part in parts:
            rows = []
            for q in tqdm(self.parts[part], desc=f"{self.docs.name}: {label}, {part}", unit="q", leave=False):
                body, ms = self.ask(part, q["question"])
                score = answer_score(
                    text=body["answer"], stated=bool(body["found"]), gold=q.get("gold") if q["answerable"] else None
                )
                rows.append({"id": q["id"], "right": score.right, "stated": bool(body["found"]), "not_found": not body["found"],
                             "outcome": body["outcome"],
                             "ms": round(ms, 1), "taught": any("lesson" in n for n in body.get("notes", []))})  # fmt: skip
            out[part] = rows
        return out

    def teach(self) -> dict:
        """The teacher asks each taught question and marks the gold sentence, or gives a thumbs down."""
        from tqdm import tqdm

        from pipeline.evaluation import has_gold

        client = self.client()
        client.force_login(self.users["teacher"])
        asked = {}
        counts = {"marked": 0, "marked_stated": 0, "thumbs_down": 0}
        for q in tqdm(self.parts["original"], desc=f"{self.docs.name}: teaching", unit="q", leave=False):
            body, _ = self.ask("teacher", q["question"])
            asked[body["response_id"]] = q
            # The cited cards first: a reader marks the sentence the answer stated when it holds the gold.
            cards = sorted(body["evidence"], key=lambda e: (not e.get("cited"), e["n"]))
            mark = next(
                ((e["n"], s["text"]) for e in cards if e.get("chunk_id") for s in e.get("strips", [])
                 if has_gold(s["text"], q["gold"])), None,
            )  # fmt: skip
            if mark is not None:
                response = client.post(f"/api/v1/answers/{body['response_id']}/mark", {"n": mark[0], "sentence": mark[1]},
                                       content_type="application/json")  # fmt: skip
                counts["marked"] += response.status_code == 200
                counts["marked_stated"] += bool(body["found"]) and has_gold(body["answer"], q["gold"])
            else:
                response = client.post("/api/v1/feedback", {"response_id": body["response_id"], "thumbs": 0},
                                       content_type="application/json")  # fmt: skip
                counts["thumbs_down"] += response.status_code == 200
            if response.status_code != 200:
                raise SystemExit(
                    f"{self.docs.name}: mark/feedback HTTP {response.status_code}: {response.content[:300]}"
                )
        return {"asked": asked, **counts}

    def curate(self, asked: dict) -> dict:
        """The curator works the list: per question of each group, confirm, pick, or not covered."""
        from django.test import override_settings

        from corpus.embedder import get_embedder
        from corpus.models import Chunk
        from corpus.selectors import chunk_search
        from pipeline.evaluation import has_gold
        from pipeline.misses import misses_for
        from writeback.lessons import chunk_sentences, gap_record, lesson_create, lesson_from_mark
        from writeback.models import Lesson, Mark

        counts = {"groups": 0, "confirmed": 0, "picked": 0, "not_covered": 0, "unlisted": 0}
        with override_settings(CAIRN_MISS_MIN_ASKERS=1):
            groups = misses_for(user=self.curator, collection=self.collection)
        counts["groups"] = len(groups)
        listed = set()
        for group in groups:
            by_question: dict[str, list[str]] = {}
            for response_id in map(str, group.response_ids):
                if response_id in asked:
                    by_question.setdefault(asked[response_id]["id"], []).append(response_id)
            for response_ids in by_question.values():
                q = asked[response_ids[0]]
                listed.add(q["id"])
                mark = Mark.objects.filter(response_id__in=response_ids).exclude(sentence="").first()
                # No phrasings: the admin gives a lesson every wording in its group, and here the group
                # may hold the reworded question asked before teaching (the test's own answer).
                if mark is not None and mark.chunk is not None:
                    lesson_from_mark(mark, actor=self.curator, response_ids=response_ids)
                    counts["confirmed"] += 1
                    continue
                found = None
                vector = get_embedder().embed([q["question"]])[0]
                for text in (q["question"], *q["gold"]):
                    hits = chunk_search(user=self.curator, query_vector=vector, text=text, limit=20,
                                        collection_ids=[self.collection.id])  # fmt: skip
                    for hit in hits:
                        chunk = Chunk.objects.select_related("document__collection").get(id=hit.chunk_id)
                        if sentence := next((s for s in chunk_sentences(chunk) if has_gold(s, q["gold"])), None):
                            found = (chunk, sentence)
                            break
                    if found:
                        break
                if found:
                    lesson_create(actor=self.curator, question=q["question"], chunk=found[0], sentence=found[1],
                                  origin=Lesson.Origin.PICKED, response_ids=response_ids, embedding=vector)  # fmt: skip
                    counts["picked"] += 1
                else:
                    gap_record(actor=self.curator, collection=self.collection, question=q["question"],
                               response_ids=response_ids)  # fmt: skip
                    counts["not_covered"] += 1
        counts["unlisted"] = len({q["id"] for q in asked.values()} - listed)
        return counts


def summary(asked: dict) -> dict:
    out = {}
    for part, rows in asked.items():
        key = "not_found" if part == "unanswerable" else "right"
        ms = [r["ms"] for r in rows]
        stated = sum(r.get("stated", False) for r in rows)
        out[part] = {"n": len(rows), "rate": round(sum(r[key] for r in rows) / max(1, len(rows)), 4), "stated": stated,
                     "precision": round(sum(r["right"] for r in rows if r.get("stated")) / stated, 4) if stated else None,
                     "by_lesson": sum(r["taught"] for r in rows), "p50_ms": round(percentile(ms, 50), 1),
                     "p95_ms": round(percentile(ms, 95), 1)}  # fmt: skip
    return out


def run_manual(name: str, threshold: float) -> dict:
    from django.test import override_settings

    from pipeline.adaptation import confidence_adapt
    from writeback.models import Adaptation

    manual = Manual(name)
    with override_settings(CAIRN_LESSON_SIMILARITY=threshold, CAIRN_WRITEBACK=False, CAIRN_ADAPT_CONFIDENCE=True):
        manual.clear()
        try:
            manual.ask("teacher", "warm up: what is this manual about?")
            before = manual.ask_all("before")
            taught = manual.teach()
            curated = manual.curate(taught.pop("asked"))
            # The task a curator's decision enqueues, run here; measured apart: lessons alone first,
            # then with the collection's adapted confidence where it passed its held-out check.
            adaptation = confidence_adapt(manual.collection)
            Adaptation.objects.filter(id=adaptation.id).update(serving=False)
            after = manual.ask_all("after")
            Adaptation.objects.filter(id=adaptation.id).update(serving=adaptation.serving)
            adapted = manual.ask_all("adapted", ("untaught", "unanswerable")) if adaptation.serving else None
        finally:
            # Its lessons, adapted confidence and counters would steer every later benchmark on this
            # database (docs_qa, runtime, answer_replay): a replay leaves the manual as it found it.
            manual.clear()
    return {
        "set": name, "threshold": threshold, "teaching": taught | curated,
        "adaptation": {"shift": adaptation.confidence_shift, "serving": adaptation.serving, **adaptation.figures},
        "before": summary(before), "after": summary(after), "adapted": summary({**after, **(adapted or {})}),
        "questions": {"before": before, "after": after, "adapted": adapted},
    }  # fmt: skip


def latency(name: str, threshold: float, rounds: int = 3) -> dict:
    """p50/p95 of a manual's untaught questions with LATENCY_LESSONS lessons in its collection
    (questions of every other manual, pointed at random sentences of this one: the cost of looking
    lessons up, none of which reaches these questions' needs) and with none of them active,
    alternating `rounds` times so that both see the same machine."""
    from django.test import override_settings

    from corpus.embedder import get_embedder
    from corpus.models import Chunk
    from writeback.lessons import chunk_sentences
    from writeback.models import Lesson, LessonQuestion

    manual = Manual(name)
    others = [q["question"] for other in MANUALS if other != name for part in questions_of(Manual(other).docs.folder).values()
              for q in part]  # fmt: skip
    rng = random.Random(0)
    chunks = list(Chunk.objects.filter(document__collection=manual.collection).select_related("document"))
    vectors = get_embedder().embed(others)
    with override_settings(CAIRN_LESSON_SIMILARITY=threshold, CAIRN_WRITEBACK=False):
        manual.clear()
        rows = []
        while len(rows) < LATENCY_LESSONS:
            chunk = rng.choice(chunks)
            if sentences := chunk_sentences(chunk):
                i = len(rows) % len(others)
                rows.append(Lesson(question=others[i], embedding=list(map(float, vectors[i])), collection=manual.collection,
                                   document=chunk.document, chunk=chunk, sentence=rng.choice(sentences),
                                   origin=Lesson.Origin.PICKED))  # fmt: skip
        for lesson in Lesson.objects.bulk_create(rows):  # each reached through its own question, as lesson_create does
            LessonQuestion.objects.create(lesson=lesson, question=lesson.question, embedding=lesson.embedding)
        lessons = Lesson.objects.filter(collection=manual.collection)
        # One untimed pass first: torch's first run of each input shape is slow (measured: 0.6-1.3 s
        # against 0.2 s after), and would go to whichever condition came first.
        for q in manual.parts["untaught"]:
            manual.ask("untaught", q["question"])
        timings: dict[str, list[float]] = {"no lessons": [], f"{LATENCY_LESSONS} lessons": []}
        reached = 0
        for _ in range(rounds):
            for label, status in (
                ("no lessons", Lesson.Status.RETRACTED),
                (f"{LATENCY_LESSONS} lessons", Lesson.Status.ACTIVE),
            ):
                lessons.update(status=status)
                for q in manual.parts["untaught"]:
                    body, ms = manual.ask("untaught", q["question"])
                    timings[label].append(ms)
                    reached += any("lesson" in note for note in body.get("notes", []))
        manual.clear()
    return {"set": name, "rounds": rounds, "questions_reached_by_a_lesson": reached,
            **{label: {"p50_ms": round(percentile(ms, 50), 1), "p95_ms": round(percentile(ms, 95), 1)}
               for label, ms in timings.items()}}  # fmt: skip


def plot(results: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    names = [r["set"] for r in results]
    for ax, part, title in zip(axes, ("reworded", "untaught", "unanswerable"),
                               ("reworded taught questions: gold stated", "untaught questions: gold stated",
                                "unanswerable: not found"), strict=True):  # fmt: skip
        x = range(len(names))
        for shift, when, colour in (
            (-0.27, "before", "#c5d3ea"),
            (0, "after", "#4c72b0"),
            (0.27, "adapted", "#55a868"),
        ):
            label = {"after": "after: lessons", "adapted": "after: lessons + adapted confidence"}.get(when, when)
            ax.bar([i + shift for i in x], [r[when][part]["rate"] for r in results], 0.27, label=label, color=colour)
        ax.set_xticks(list(x), names, rotation=30, fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_title(title, fontsize=10)
        if part == "reworded":
            ax.axhline(0.9, color="black", linestyle="dashed", linewidth=1)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="upper center", ncol=3, fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    fig.savefig(RESULTS / "teaching.png", dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", action="append", choices=MANUALS, help="Manuals to replay (default: all nine).")
    parser.add_argument("--fresh", action="store_true", help="Replay manuals whose result is cached.")
    parser.add_argument("--latency", action="store_true", help="Also time 1,000 lessons in a collection (kept apart).")
    args = parser.parse_args()
    os.environ.setdefault("CAIRN_THROTTLE_QUERY", "100000/minute")
    os.environ.setdefault("CAIRN_THROTTLE_FEEDBACK", "100000/minute")
    django_setup()
    from docs_qa import SETS

    chosen = args.set or list(MANUALS)
    all_sets = {name: questions_of(SETS[name].folder) for name in MANUALS}
    sims = similarities(all_sets)
    thresholds = {name: best_threshold([sims[o] for o in MANUALS if o != name]) for name in MANUALS}
    shipped = best_threshold(list(sims.values()))
    results = []
    for name in chosen:
        cached = CACHE / f"teaching_{name}.json"
        if cached.exists() and not args.fresh:
            result = json.loads(cached.read_text())
        else:
            result = run_manual(name, thresholds[name])
            CACHE.mkdir(parents=True, exist_ok=True)
            cached.write_text(json.dumps(result))
        results.append(result)
        print(
            name,
            json.dumps({k: result[k] for k in ("threshold", "teaching", "adaptation", "before", "after", "adapted")}),
        )

    def mean(part: str, when: str) -> float:
        return round(sum(r[when][part]["rate"] for r in results) / len(results), 4)

    report = {
        "manuals": [
            {k: r[k] for k in ("set", "threshold", "teaching", "adaptation", "before", "after", "adapted")}
            for r in results
        ],  # fmt: skip
        "mean": {
            part: {"before": mean(part, "before"), "after": mean(part, "after"), "adapted": mean(part, "adapted")}
            for part in PARTS
        },  # fmt: skip
        "threshold_shipped": shipped,
        "thresholds_left_out": thresholds,
    }
    latency_cache = CACHE / "teaching_latency.json"
    if args.latency:
        latency_cache.write_text(json.dumps(latency("sqlite", thresholds["sqlite"])))
    if latency_cache.exists():  # measured apart (--latency): kept with the figures it belongs to
        report["latency"] = json.loads(latency_cache.read_text())
    print(write_result("teaching", report))
    print(json.dumps({k: v for k, v in report.items() if k != "manuals"}, indent=1))
    plot(results)


if __name__ == "__main__":
    main()
