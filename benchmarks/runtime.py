"""The models on PyTorch against the models on OpenVINO (corpus/encoders.py), side by side: every
question of each manual asked once on each runtime, each runtime in a worker process of its own,
alternating which goes first question by question, so that both see the same machine, the same
database and the same code.

Reported per manual and pooled: the share of answers whose text is identical; gold in a stated
answer and not found (unanswerable) for each runtime; p50/p95 of the whole request and of each
stage, and verification against the rest of the request. The models run as each runtime would
serve them here (CAIRN_VERIFIER_DTYPE auto: bfloat16 on a CPU with AMX tiles, float32 elsewhere;
the embedder in float32 on both). Writes results/runtime.json and runtime.png (the stage
breakdown, p50, per runtime). On the `cairn_bench` database benchmarks/docs_qa.py ingested.

    .venv/bin/python benchmarks/runtime.py [--set NAME ...] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from _common import RESULTS, django_setup, percentile, write_result

RUNTIMES = ("torch", "openvino")
MANUALS = ("python", "apache", "nodejs", "bash", "git", "sqlite", "postfix", "rust", "django")
STAGES = ("embed_query", "retrieve", "recall", "rank", "verify", "correct", "refine", "generate")


class Worker:
    """A process of its own that answers on one runtime: two runtimes in one process would share
    the cores with each other's idle thread pools (PyTorch's OpenMP threads spin after each call)."""

    def __init__(self, runtime: str):
        env = os.environ | {"CAIRN_MODEL_RUNTIME": runtime}
        self.process = subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, env=env, text=True, bufsize=1)  # fmt: skip
        if self.process.stdout.readline().strip() != "ready":
            sys.exit(f"the {runtime} worker did not start")

    def ask(self, manual: str, question: str) -> tuple[dict, float]:
        self.process.stdin.write(json.dumps({"manual": manual, "question": question}) + "\n")
        reply = json.loads(self.process.stdout.readline())
        return reply["body"], reply["ms"]

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


def worker() -> None:
    """Answer {"manual", "question"} lines from stdin, one JSON line each, on CAIRN_MODEL_RUNTIME."""
    from django.test import override_settings

    from corpus.embedder import get_embedder
    from judges.verifiers import get_answer_judge, get_entailment_model, get_relevance_model

    get_embedder().embed(["warm up"])
    get_relevance_model().score("warm up", ["the verification gate"])
    get_entailment_model().predict([("warm up", "the verification gate")])
    get_answer_judge().score("warm up", ["the verification gate"])
    manuals: dict[str, Manual] = {}
    print("ready", flush=True)
    with override_settings(CAIRN_WRITEBACK=False):  # no validation tasks queued behind the answers
        for line in sys.stdin:
            asked = json.loads(line)
            if asked["manual"] not in manuals:
                manuals[asked["manual"]] = Manual(asked["manual"])
            manual = manuals[asked["manual"]]
            body, ms = manual.ask(asked["question"])
            keep = {k: body[k] for k in ("answer", "found", "outcome", "timings_ms")}
            print(json.dumps({"body": keep, "ms": ms}), flush=True)


class Manual:
    def __init__(self, name: str):
        from django.conf import settings
        from django.contrib.auth.models import User
        from django.test import Client

        from corpus.models import Collection
        from docs_qa import SETS

        self.docs = SETS[name]
        folder = self.docs.folder
        self.questions = [
            json.loads(line) for line in (folder / "questions.jsonl").read_text().splitlines() if line.strip()
        ]
        if settings.CAIRN_MODEL_RUNTIME == "auto":
            return  # the parent: it reads the questions, its workers ask them
        collection = Collection.objects.get(slug=self.docs.collection)
        user, _ = User.objects.get_or_create(username=f"{self.docs.collection}-runtime-{settings.CAIRN_MODEL_RUNTIME}")
        user.groups.add(*collection.groups.all())
        self.client = Client()
        self.client.force_login(user)

    def ask(self, question: str) -> tuple[dict, float]:
        started = time.perf_counter()
        response = self.client.post(
            "/api/v1/query",
            {"question": question, "mode": "fast", "top_k": 8, "collections": [self.docs.collection]},
            content_type="application/json",
        )
        ms = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            sys.exit(f"{self.docs.name}: HTTP {response.status_code} for {question!r}: {response.content[:300]}")
        return response.json(), ms


def run_manual(name: str, workers: dict[str, Worker], limit: int | None) -> dict:
    from tqdm import tqdm

    from pipeline.evaluation import answer_score, run_summary

    manual = Manual(name)
    questions = manual.questions[:limit] if limit else manual.questions
    rows = {runtime: [] for runtime in RUNTIMES}
    for i, q in enumerate(tqdm(questions, desc=name, unit="q", leave=False)):
        for runtime in RUNTIMES if i % 2 == 0 else RUNTIMES[::-1]:
            body, ms = workers[runtime].ask(name, q["question"])
            score = answer_score(
                text=body["answer"], stated=bool(body["found"]), gold=q["gold"] if q["answerable"] else None
            )
            rows[runtime].append({"id": q["id"], "answer": body["answer"], "score": score, "ms": ms,
                                  "stages": body["timings_ms"]})  # fmt: skip
    result = {"questions": len(questions)}
    same = sum(a["answer"] == b["answer"] for a, b in zip(rows["torch"], rows["openvino"], strict=True))
    result["identical_answers"] = same
    result["identical_share"] = round(same / max(1, len(questions)), 4)
    for runtime in RUNTIMES:
        summary = run_summary(scores=[r["score"] for r in rows[runtime]], latencies_ms=[r["ms"] for r in rows[runtime]])
        stages = {s: [r["stages"].get(s, 0.0) for r in rows[runtime]] for s in STAGES}
        verify = [r["stages"].get("verify", 0.0) for r in rows[runtime]]
        rest = [r["stages"].get("total", 0.0) - v for r, v in zip(rows[runtime], verify, strict=True)]
        result[runtime] = summary | {
            "stage_p50_ms": {s: round(statistics.median(v), 1) for s, v in stages.items()},
            "stage_p95_ms": {s: round(percentile(v, 95), 1) for s, v in stages.items()},
            "verify_to_rest": round(statistics.median(verify) / max(1e-9, statistics.median(rest)), 2),
        }
    result["changed"] = [
        {"id": a["id"], "torch": a["answer"][:200], "openvino": b["answer"][:200]}
        for a, b in zip(rows["torch"], rows["openvino"], strict=True) if a["answer"] != b["answer"]
    ]  # fmt: skip
    result["_latencies"] = {runtime: [r["ms"] for r in rows[runtime]] for runtime in RUNTIMES}
    return result


def pooled(results: dict) -> dict:
    out = {"questions": sum(r["questions"] for r in results.values())}
    out["identical_share"] = round(sum(r["identical_answers"] for r in results.values()) / max(1, out["questions"]), 4)
    for runtime in RUNTIMES:
        answerable = sum(r[runtime]["answerable"] for r in results.values())
        unanswerable = sum(r[runtime]["unanswerable"] for r in results.values())
        latencies = [ms for r in results.values() for ms in r["_latencies"][runtime]]
        out[runtime] = {
            "gold_stated_rate": round(sum(r[runtime]["gold_stated"] for r in results.values()) / max(1, answerable), 4),
            "not_found_rate": round(
                sum(r[runtime]["not_found_unanswerable"] for r in results.values()) / max(1, unanswerable), 4
            ),
            "p50_ms": round(percentile(latencies, 50), 1),
            "p95_ms": round(percentile(latencies, 95), 1),
        }
    return out


def plot(results: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    fig, ax = plt.subplots(figsize=(12, 4.8))
    colours = dict(zip(STAGES, plt.get_cmap("tab10").colors, strict=False))
    for shift, runtime, hatch in ((-0.2, "torch", ""), (0.2, "openvino", "//")):
        bottom = [0.0] * len(names)
        for stage in STAGES:
            values = [results[n][runtime]["stage_p50_ms"][stage] for n in names]
            ax.bar([i + shift for i in range(len(names))], values, 0.38, bottom=bottom, color=colours[stage],
                   hatch=hatch, edgecolor="white", label=stage if runtime == "torch" else None)  # fmt: skip
            bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    ax.set_xticks(range(len(names)), [f"{n}\nPyTorch | OpenVINO" for n in names], fontsize=7)
    ax.set_ylabel("ms (p50 of each stage)")
    ax.axhline(300, color="black", linestyle="dashed", linewidth=1)
    ax.set_title("Where a fast answer's time goes, per stage: PyTorch (plain) against OpenVINO (hatched)", fontsize=10)
    ax.legend(fontsize=8, ncol=4)
    fig.tight_layout()
    fig.savefig(RESULTS / "runtime.png", dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", action="append", choices=MANUALS, help="A manual (repeat; default: all nine).")
    parser.add_argument("--limit", type=int, help="At most this many questions of each manual.")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("CAIRN_THROTTLE_QUERY", "100000/minute")  # a benchmark, not a user
    django_setup()
    if args.worker:
        worker()
        return
    workers = {runtime: Worker(runtime) for runtime in RUNTIMES}
    results = {name: run_manual(name, workers, args.limit) for name in args.set or MANUALS}
    for runtime_worker in workers.values():
        runtime_worker.close()
    summary = pooled(results)
    for name, r in results.items():
        t, o = r["torch"], r["openvino"]
        print(f"{name:8s} identical {r['identical_share']:.1%}  gold stated {t['gold_stated_rate']:.1%} -> "
              f"{o['gold_stated_rate']:.1%}  not found {t['not_found_rate']:.1%} -> {o['not_found_rate']:.1%}  "
              f"p50 {t['p50_ms']:.0f} -> {o['p50_ms']:.0f} ms  p95 {t['p95_ms']:.0f} -> "
              f"{o['p95_ms']:.0f} ms  verify/rest {t['verify_to_rest']} -> {o['verify_to_rest']}")  # fmt: skip
    print("pooled", json.dumps(summary))
    for r in results.values():
        r.pop("_latencies")
        for runtime in RUNTIMES:
            r[runtime].pop("scores", None)
    write_result("runtime", {"pooled": summary, "manuals": results})
    plot(results)


if __name__ == "__main__":
    main()
