"""Serving under load: the production command (`manage.py serve`: gunicorn, gthread, pooled
connections) against the demo's development server (`make run`: runserver), in the same run.

For each server: 8 concurrent clients × 50 fast-path questions (demo corpus, demo questions), then
8 × 200 feedback posts on their own answers; errors, p50/p95 latency, throughput, the peak of
open database connections held by the server (pg_stat_activity sampled every 50 ms) against its
bound, and each server process's memory. Then, on the production command only, SIGTERM in the
middle of the same mixed load: every request the server accepted must be answered, and every
acknowledged write (an answer, a feedback) must be in the database afterwards.

Each client is its own user (feedback must come from the asker). Rate limits are raised for the
run (CAIRN_THROTTLE_*): this measures capacity, not the limiter. No django-q2 worker runs, so
validation work queues up instead of competing for the cores; the comparison is web serving only.
Runs on a database of its own (cairn_bench_serving) on the app's Postgres; about 5 minutes here.

    .venv/bin/python benchmarks/serving.py [--clients 8] [--questions 50] [--feedback 200]

With --manual NAME it instead serves one of benchmarks/docs_qa.py's manuals (the `cairn_bench`
database) with `make serve` to 1, 4 and 8 clients, once with the models on PyTorch and once on
OpenVINO (CAIRN_MODEL_RUNTIME), each client asking --per-client of the manual's questions:
throughput, p50/p95, errors and the stages' p50 (results/serving_NAME.json and .png).

    .venv/bin/python benchmarks/serving.py --manual python [--per-client 20]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from _common import RESULTS, ROOT, django_setup, free_port, percentile, write_result

DATABASE = "cairn_bench_serving"
SECRET = "benchmark-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz"
UNLIMITED = {f"CAIRN_THROTTLE_{scope}": "1000000/minute" for scope in ("QUERY", "FEEDBACK", "UPLOAD", "ANON")}


def server_env(**extra) -> dict:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    return {**base, "DJANGO_SETTINGS_MODULE": "config.settings", "CAIRN_DB_NAME": DATABASE, "CAIRN_SECRET_KEY": SECRET,
            "CAIRN_LOG_LEVEL": "WARNING", "CAIRN_ACCESS_LOG": "", **UNLIMITED, **extra}  # fmt: skip


class Outcome:
    """One request: status (None when it failed), seconds, and how it failed."""

    __slots__ = ("status", "seconds", "failure", "body")

    def __init__(self, status, seconds, failure=None, body=None):
        self.status, self.seconds, self.failure, self.body = status, seconds, failure, body


def call(port: int, path: str, token: str, body: dict) -> Outcome:
    """POST on a fresh connection. A refused connection was never accepted ("refused"); one that
    connected and then got no answer was dropped ("dropped")."""
    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        conn.connect()
    except OSError:
        return Outcome(None, time.perf_counter() - start, "refused")
    try:
        conn.request(
            "POST", path, json.dumps(body), {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        )
        response = conn.getresponse()
        payload = response.read()
        parsed = json.loads(payload) if response.status == 200 else None
        return Outcome(response.status, time.perf_counter() - start, None, parsed)
    except (OSError, http.client.HTTPException):
        return Outcome(None, time.perf_counter() - start, "dropped")
    finally:
        conn.close()


class Sampler(threading.Thread):
    """Open connections of one application name, every 50 ms, until stopped."""

    def __init__(self, application: str):
        super().__init__(daemon=True)
        self.application, self.samples, self.stopping = application, [], threading.Event()

    def run(self):
        from django.db import connection

        start = time.perf_counter()
        with connection.cursor() as cursor:
            while not self.stopping.is_set():
                cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [self.application])
                self.samples.append((time.perf_counter() - start, cursor.fetchone()[0]))
                time.sleep(0.05)
        connection.close()


def memory_mb(root_pid: int) -> dict[str, float]:
    """Resident memory of the server's processes that serve requests (gunicorn's workers, or runserver)."""
    import psutil

    root = psutil.Process(root_pid)
    processes = [root, *root.children(recursive=True)]
    serving = [p for p in processes if "gunicorn" in " ".join(p.cmdline()) or "runserver" in " ".join(p.cmdline())]
    workers = [p for p in serving if p.parent() and "gunicorn" in " ".join(p.parent().cmdline())] or serving
    return {str(p.pid): round(p.memory_info().rss / 2**20, 1) for p in workers}


def start(kind: str, port: int, **extra) -> subprocess.Popen:
    if kind == "production":
        command = ["manage.py", "serve", "--bind", f"127.0.0.1:{port}", "--no-worker"]
        env = server_env(**extra)
    else:  # what `make run` runs
        command = ["manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"]
        env = server_env(CAIRN_DEMO="true")
    # The development server logs every request to stderr: not worth keeping here.
    process = subprocess.Popen([sys.executable, *command], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL if kind == "development" else None)  # fmt: skip
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"{kind} server exited with {process.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/api/v1/health")
            if json.loads(conn.getresponse().read()).get("embedder") == "up":
                return process
        except (OSError, ValueError, http.client.HTTPException):
            pass
        time.sleep(0.5)
    sys.exit(f"{kind} server did not become healthy")


def run_clients(work, clients: int) -> tuple[list[list[Outcome]], float]:
    results: list[list[Outcome]] = [[] for _ in range(clients)]
    threads = [threading.Thread(target=work, args=(i, results[i])) for i in range(clients)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results, time.perf_counter() - began


def summarise(outcomes: list[Outcome], seconds: float) -> dict:
    ok = [o.seconds * 1000 for o in outcomes if o.status == 200]
    return {
        "requests": len(outcomes),
        "ok": len(ok),
        "errors": len(outcomes) - len(ok),
        "error_kinds": sorted({str(o.status or o.failure) for o in outcomes if o.status != 200}),
        "throughput_per_s": round(len(ok) / seconds, 2),
        "p50_ms": round(percentile(ok, 50), 1) if ok else None,
        "p95_ms": round(percentile(ok, 95), 1) if ok else None,
    }


def load(kind: str, port: int, users, questions, args) -> dict:
    application = "cairn-web" if kind == "production" else "cairn-runserver"
    process = start(kind, port)
    sampler = Sampler(application)
    sampler.start()
    answers: list[list[str]] = [[] for _ in users]

    def ask(i, out):
        rng = random.Random(i)
        for _ in range(args.questions):
            outcome = call(port, "/api/v1/query", users[i][1], {"question": rng.choice(questions), "mode": "fast"})
            out.append(outcome)
            if outcome.status == 200:
                answers[i].append(outcome.body["response_id"])
            print(".", end="", flush=True)

    asked, ask_seconds = run_clients(ask, len(users))
    memory = memory_mb(process.pid)

    def feed(i, out):
        for n in range(args.feedback):
            body = {"response_id": answers[i][n % len(answers[i])], "thumbs": n % 2}
            out.append(call(port, "/api/v1/feedback", users[i][1], body))

    fed, feed_seconds = run_clients(feed, len(users))
    time.sleep(1.0)  # idle: a server that closes its connections holds none now
    sampler.stopping.set()
    sampler.join()
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=120)
    peak = max(count for _, count in sampler.samples)
    print(f"\n{kind}: questions {summarise(sum(asked, []), ask_seconds)}")
    return {
        "questions": summarise(sum(asked, []), ask_seconds),
        "feedback": summarise(sum(fed, []), feed_seconds),
        "connections_peak": peak,
        "connections_when_idle": sampler.samples[-1][1],
        "connections": sampler.samples[:: max(1, len(sampler.samples) // 400)],
        "memory_mb_per_serving_process": memory,
    }


def sigterm_under_load(port: int, users, questions, args) -> dict:
    """Mixed load (half the clients ask, half give feedback); SIGTERM after `--sigterm-after` s."""
    from pipeline.models import Answer
    from reputation.models import Feedback

    process = start("production", port)
    seeds = {}  # an answer per feedback client, to post feedback on
    for i in range(len(users) // 2, len(users)):
        seeds[i] = call(port, "/api/v1/query", users[i][1], {"question": questions[i], "mode": "fast"}).body[
            "response_id"
        ]
    stop_at = time.perf_counter() + 120

    def work(i, out):
        n = 0
        while time.perf_counter() < stop_at:
            if i < len(users) // 2:
                outcome = call(
                    port, "/api/v1/query", users[i][1], {"question": questions[n % len(questions)], "mode": "fast"}
                )
            else:
                outcome = call(port, "/api/v1/feedback", users[i][1], {"response_id": seeds[i], "thumbs": n % 2})
                outcome.body = {"thumbs": n % 2} if outcome.status == 200 else None
            out.append(outcome)
            if outcome.failure == "refused":
                return  # the server has stopped listening
            n += 1

    def terminate():
        time.sleep(args.sigterm_after)
        process.send_signal(signal.SIGTERM)

    killer = threading.Thread(target=terminate)
    killer.start()
    results, seconds = run_clients(work, len(users))
    killer.join()
    code = process.wait(timeout=120)
    outcomes = sum(results, [])
    acknowledged_answers = [o.body["response_id"] for o in sum(results[: len(users) // 2], []) if o.status == 200]
    stored_answers = Answer.objects.filter(response_id__in=acknowledged_answers).count()
    feedback_ok = 0
    for i in range(len(users) // 2, len(users)):
        acked = [o for o in results[i] if o.status == 200]
        row = Feedback.objects.filter(response_id=seeds[i], user__username=users[i][0]).first()
        feedback_ok += bool(acked) and row is not None and row.thumbs == acked[-1].body["thumbs"]
    report = {
        "sigterm_after_s": args.sigterm_after,
        "requests": len(outcomes),
        "acknowledged": sum(o.status == 200 for o in outcomes),
        "refused_after_stop": sum(o.failure == "refused" for o in outcomes),
        "dropped_after_accept": sum(o.failure == "dropped" for o in outcomes),
        "http_errors": sum(o.status not in (None, 200) for o in outcomes),
        "acknowledged_answers": len(acknowledged_answers),
        "acknowledged_answers_stored": stored_answers,
        "feedback_clients_whose_last_acknowledged_feedback_is_stored": feedback_ok,
        "feedback_clients": len(users) - len(users) // 2,
        "server_exit_code": code,
        "seconds": round(seconds, 2),
    }
    print(f"sigterm: {report}")
    return report


def setup(clients: int) -> tuple[list[tuple[str, str]], list[str]]:
    os.environ["CAIRN_DB_NAME"] = DATABASE
    django_setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from rest_framework.authtoken.models import Token

    call_command("ingest", str(ROOT / "demo" / "corpus"), collection="demo", public=True, verbosity=0)
    users = []
    for i in range(clients):
        user, _ = User.objects.get_or_create(username=f"bench-{i}")
        users.append((user.username, Token.objects.get_or_create(user=user)[0].key))
    questions = [json.loads(line)["question"] for line in (ROOT / "demo" / "questions.jsonl").read_text().splitlines()]
    return users, questions


# --- a manual under 1, 4 and 8 clients, on each model runtime (--manual) -------------------------


def manual_setup(name: str, clients: int) -> tuple[list[tuple[str, str]], list[str], str]:
    """Readers of a manual's collection in the `cairn_bench` database benchmarks/docs_qa.py
    ingested, with tokens, and the manual's questions."""
    os.environ["CAIRN_DB_NAME"] = "cairn_bench"
    django_setup()
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    from corpus.models import Collection
    from docs_qa import SETS

    docs = SETS[name]
    collection = Collection.objects.get(slug=docs.collection)
    users = []
    for i in range(clients):
        user, _ = User.objects.get_or_create(username=f"{docs.collection}-serving-{i}")
        user.groups.add(*collection.groups.all())
        users.append((user.username, Token.objects.get_or_create(user=user)[0].key))
    rows = [json.loads(line) for line in (docs.folder / "questions.jsonl").read_text().splitlines() if line.strip()]
    return users, [q["question"] for q in rows], docs.collection


def manual_load(runtime: str, clients: int, port: int, users, questions, collection: str, per_client: int) -> dict:
    """`clients` readers each asking `per_client` of the manual's questions (each client its own
    order) of `make serve` with the models on `runtime`; the stages' p50 from the answers' timings."""
    process = start(
        "production", port, CAIRN_DB_NAME="cairn_bench", CAIRN_MODEL_RUNTIME=runtime, CAIRN_WRITEBACK="false"
    )
    try:
        warm = random.Random(-1)
        for _ in range(4):  # the first questions of a fresh process compile the runtime's kernels
            call(port, "/api/v1/query", users[0][1], {"question": warm.choice(questions), "mode": "fast",
                                                      "collections": [collection]})  # fmt: skip

        def ask(i, out):
            rng = random.Random(i)
            for question in rng.sample(questions, min(per_client, len(questions))):
                out.append(call(port, "/api/v1/query", users[i][1], {"question": question, "mode": "fast",
                                                                     "collections": [collection]}))  # fmt: skip

        asked, seconds = run_clients(ask, clients)
        memory = memory_mb(process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
    outcomes = sum(asked, [])
    timings = [o.body["timings_ms"] for o in outcomes if o.status == 200]
    stages = sorted({stage for t in timings for stage in t})
    report = summarise(outcomes, seconds) | {
        "stage_p50_ms": {stage: round(percentile([t.get(stage, 0.0) for t in timings], 50), 1) for stage in stages},
        "memory_mb_per_serving_process": memory,
    }
    print(f"{runtime}, {clients} clients: {report}")
    return report


def manual_main(name: str, per_client: int) -> None:
    counts = (1, 4, 8)
    users, questions, collection = manual_setup(name, max(counts))
    result = {"manual": name, "questions_per_client": per_client, "runs": {}}
    for clients in counts:
        for runtime in ("torch", "openvino"):
            run = manual_load(runtime, clients, free_port(), users[:clients], questions, collection, per_client)
            result["runs"][f"{runtime}, {clients}"] = run
    write_result(f"serving_{name}", result)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for runtime, colour in (("torch", "#c5d3ea"), ("openvino", "#4c72b0")):
        runs = [result["runs"][f"{runtime}, {c}"] for c in counts]
        axes[0].plot(counts, [r["throughput_per_s"] for r in runs], "o-", color=colour, label=runtime)
        axes[1].plot(counts, [r["p50_ms"] for r in runs], "o-", color=colour, label=f"{runtime} p50")
        axes[1].plot(counts, [r["p95_ms"] for r in runs], "o--", color=colour, label=f"{runtime} p95")
    axes[0].set(title=f"{name}: answers per second", xlabel="clients", xticks=counts)
    axes[1].set(title=f"{name}: latency (ms)", xlabel="clients", xticks=counts)
    for ax in axes:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / f"serving_{name}.png", dpi=110)


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = ["development", "production"]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, phase in zip(axes[:2], ["questions", "feedback"]):
        x = range(len(kinds))
        ax.bar([i - 0.2 for i in x], [result[k][phase]["p50_ms"] for k in kinds], 0.4, label="p50 ms")
        ax.bar([i + 0.2 for i in x], [result[k][phase]["p95_ms"] for k in kinds], 0.4, label="p95 ms")
        for i, k in enumerate(kinds):
            ax.annotate(f"{result[k][phase]['throughput_per_s']}/s, {result[k][phase]['errors']} errors",
                        (i, result[k][phase]["p95_ms"]), ha="center", va="bottom", fontsize=9)  # fmt: skip
        ax.set_xticks(list(x), ["make run (runserver)", "make serve (gunicorn)"])
        ax.set_title(f"{phase}: {result['clients']} clients")
        ax.legend(loc="lower right")
    for k in kinds:
        t, n = zip(*result[k]["connections"])
        axes[2].plot(t, n, label=f"{k} (peak {result[k]['connections_peak']})")
    axes[2].axhline(result["production_connection_bound"], color="grey", ls="--", label="production bound")
    axes[2].set_title("open database connections (pg_stat_activity)")
    axes[2].set_xlabel("seconds")
    axes[2].legend(loc="center left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--questions", type=int, default=50, help="questions per client")
    parser.add_argument("--feedback", type=int, default=200, help="feedback posts per client")
    parser.add_argument("--sigterm-after", type=float, default=8.0, help="seconds into the mixed load")
    parser.add_argument("--sigterm-only", action="store_true", help="only the SIGTERM phase (no result file)")
    parser.add_argument("--manual", help="a manual of docs_qa.py instead: 1, 4 and 8 clients on each model runtime")
    parser.add_argument("--per-client", type=int, default=20, help="with --manual: questions each client asks")
    args = parser.parse_args()
    if args.manual:
        manual_main(args.manual, args.per_client)
        return
    users, questions = setup(args.clients)
    from config.serving import WEB_THREADS, WEB_WORKERS, cores, torch_threads_per_worker

    result = {
        "clients": args.clients,
        "cores": cores(),
        "production_plan": {
            "workers": WEB_WORKERS,
            "threads": WEB_THREADS,
            "torch_threads": torch_threads_per_worker(),
        },
        # The pool's limit: workers x pool size (one per thread). The development server has no
        # configured limit: its connections follow the requests in flight and are closed at their end.
        "production_connection_bound": WEB_WORKERS * WEB_THREADS,
    }
    if args.sigterm_only:
        sigterm_under_load(free_port(), users, questions, args)
        return
    result["development"] = load("development", free_port(), users, questions, args)
    result["production"] = load("production", free_port(), users, questions, args)
    result["sigterm"] = sigterm_under_load(free_port(), users, questions, args)
    dev, prod, term = result["development"], result["production"], result["sigterm"]
    result["floors"] = {
        "zero_errors": all(r[p]["errors"] == 0 for r in (dev, prod) for p in ("questions", "feedback")),
        "production_connections_within_the_pool_limit": prod["connections_peak"]
        <= result["production_connection_bound"],
        "no_connection_kept_when_idle": dev["connections_when_idle"] == 0
        and prod["connections_when_idle"] <= result["production_connection_bound"],
        "production_throughput_not_lower": all(
            prod[p]["throughput_per_s"] >= dev[p]["throughput_per_s"] for p in ("questions", "feedback")
        ),
        "sigterm_nothing_dropped": term["dropped_after_accept"] == 0 and term["http_errors"] == 0,
        "sigterm_acknowledged_writes_stored": term["acknowledged_answers_stored"] == term["acknowledged_answers"]
        and term["feedback_clients_whose_last_acknowledged_feedback_is_stored"] == term["feedback_clients"],
    }
    write_result("serving", result)
    plot(result, RESULTS / "serving.png")
    print(json.dumps(result["floors"], indent=1))
    print(f"p50 question ms: dev {dev['questions']['p50_ms']}, prod {prod['questions']['p50_ms']}; "
          f"memory: {statistics.fmean(prod['memory_mb_per_serving_process'].values()):.0f} MB per gunicorn worker")  # fmt: skip


if __name__ == "__main__":
    main()
