"""Judges adapted to each manual, measured leaving that manual's questions out.

    .venv/bin/python benchmarks/adaptation.py teach --set sqlite [--passages 120]   # needs a model server
    .venv/bin/python benchmarks/adaptation.py adapt --set sqlite                      # no model server

`teach` asks the teacher (the OpenAI-compatible server at CAIRN_OPENAI_BASE_URL, CAIRN_OPENAI_MODEL;
measured with Qwen2.5-Coder-1.5B-Instruct Q4_K_M on llama.cpp, ../shared/tools/fetch-qwen-coder.sh)
about a sample of the manual's passages (judges/teacher_questions.sampled_chunks) and appends its
replies to benchmarks/teacher/SET.jsonl, which is committed: everything after it re-runs from a
checkout without the teacher. It resumes where it stopped.

`adapt` fine-tunes the manual's answer judge and relevance evaluator on those questions only (the
manual's own text: none of its evaluation questions, and nothing chosen on them), as `manage.py
adapt` does, and writes what the guard saw to benchmarks/results/adaptation_SET.json.
"""

from __future__ import annotations

import argparse
import os
import time

from _common import ROOT, django_setup

TEACHER = ROOT / "benchmarks" / "teacher"


def teach(name: str, passages: int) -> None:
    from tqdm import tqdm

    from corpus.models import Collection
    from docs_qa import SETS, ingest
    from judges.teacher_questions import TeacherCache
    from pipeline.generators import get_generator
    from pipeline.judge_adaptation import passages_to_ask, teacher_write

    docs = SETS[name]
    ingest(docs, fresh=False)
    collection = Collection.objects.get(slug=docs.collection)
    chunks = passages_to_ask(collection, passages)
    cache = TeacherCache(TEACHER / f"{name}.jsonl")
    llm = get_generator("openai")
    model = os.environ.get("CAIRN_OPENAI_MODEL", "")
    started = time.monotonic()
    with tqdm(total=len(chunks), desc=f"teacher over {name}", unit="passage") as bar:
        outcomes = teacher_write(chunks, cache, llm, model=model, progress=bar.update)
    print(dict(outcomes), f"{time.monotonic() - started:.0f} s")


def asked(docs, collection, user) -> dict:
    """Every question of the manual asked as a reader asks it (fast mode, within the collection),
    summed as docs_qa.py sums them: selective figures of the answerable ones, the unanswerable
    ones never answered, latency."""
    from django.test import Client
    from tqdm import tqdm

    from _common import percentile
    from docs_qa import judged, never_answered, questions_of, selective

    client = Client()
    client.force_login(user)

    def ask(question: str):
        started = time.perf_counter()
        response = client.post("/api/v1/query", {"question": question, "mode": "fast", "top_k": 8,
                               "collections": [collection.slug]}, content_type="application/json")  # fmt: skip
        assert response.status_code == 200, response.content
        return response.json(), (time.perf_counter() - started) * 1000

    ask("warm up: what is a list?")
    rows, latencies = {True: [], False: []}, []
    for q in tqdm(questions_of(docs), desc=f"asking {docs.collection}", unit="q"):
        body, ms = ask(q["question"])
        latencies.append(ms)
        rows[q["answerable"]].append({"id": q["id"], "answer": body.get("answer", "")[:300]}
                                     | judged(body, q["gold"] if q["answerable"] else None))  # fmt: skip
    return {"answerable": selective(rows[True]), "unanswerable": never_answered(rows[False]),
            "answerable_asked": len(rows[True]), "unanswerable_asked": len(rows[False]),
            "p50_ms": percentile(latencies, 50), "p95_ms": percentile(latencies, 95),
            "questions": rows[True] + rows[False]}  # fmt: skip


def adapt(name: str, passages: int) -> None:
    """Shipped judges against judges adapted on the manual's own text, on the manual's questions."""
    import shutil

    from django.conf import settings
    from django.contrib.auth.models import User

    from _common import write_result
    from corpus.models import Collection
    from docs_qa import SETS, ingest
    from pipeline.judge_adaptation import judges_adapt, teacher_cache

    docs = SETS[name]
    ingest(docs, fresh=False)
    collection = Collection.objects.get(slug=docs.collection)
    user, _ = User.objects.get_or_create(username=f"{docs.collection}-reader")
    user.groups.add(*collection.groups.all())
    collection.judge_versions.all().delete()  # shipped judges first, whatever an earlier run left
    shutil.rmtree(settings.CAIRN_ADAPTATION_DIR / collection.slug, ignore_errors=True)
    cache = teacher_cache(collection).path
    cache.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(TEACHER / f"{name}.jsonl", cache)

    shipped = asked(docs, collection, user)
    started = time.monotonic()
    row = judges_adapt(collection, passages=passages, progress=print)
    training_s = time.monotonic() - started
    teacher_s = sum(r["seconds"] for r in teacher_cache(collection).replies.values())
    # The adapted judges on the manual's questions whether or not the guard let them serve: what it
    # let through, or what it kept back.
    trained = settings.CAIRN_ADAPTATION_DIR / collection.slug / f"v{row.version}"
    if trained.is_dir():
        collection.judge_versions.update(status=row.Status.SERVING, answer_model=str(trained / "answer"),
                                         relevance_model=str(trained / "relevance"))  # fmt: skip
    adapted = asked(docs, collection, user) if trained.is_dir() else None
    collection.judge_versions.all().delete()  # the bench database as it was found: shipped judges
    result = {"set": name, "passages": passages, "version": {"status": row.status, "answer_model": bool(row.answer_model),
              "relevance_model": bool(row.relevance_model), "figures": row.figures},
              "teacher_seconds": round(teacher_s), "training_seconds": round(training_s),
              "shipped": shipped, "adapted": adapted}  # fmt: skip
    print(write_result(f"adaptation_{name}", result))
    for label, run in (("shipped", shipped), ("adapted", adapted)):
        if run:
            a, u = run["answerable"], run["unanswerable"]
            print(f"{label}: coverage {a['coverage']:.3f} precision {a['precision']} stated-or-pointed "
                  f"{a['gold_stated_or_pointed_share']:.3f} unanswerable answered {u['outcomes']['answered']}/"
                  f"{run['unanswerable_asked']} p50 {run['p50_ms']:.0f} ms")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["teach", "adapt"])
    parser.add_argument("--set", required=True)
    parser.add_argument("--passages", type=int, default=120)
    args = parser.parse_args()
    os.environ.setdefault("CAIRN_INGEST_BATCH_DOCUMENTS", "16")
    os.environ.setdefault("CAIRN_OPENAI_TIMEOUT", "600")  # a loaded two-core machine writes slowly
    os.environ.setdefault("CAIRN_THROTTLE_QUERY", "100000/minute")  # a benchmark, not a user
    # The adapted models are large and re-made from the committed replies: kept out of the checkout's history.
    os.environ.setdefault("CAIRN_ADAPTATION_DIR", str(ROOT / "benchmarks" / "results" / "cache" / "adaptation"))
    django_setup()
    (teach if args.command == "teach" else adapt)(args.set, args.passages)


if __name__ == "__main__":
    main()
