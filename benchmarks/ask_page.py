"""The ask page in a real browser: how soon a reader sees something happen, and the answer.

Debian's Chromium (through Playwright) signs in to the production server (`manage.py serve`:
gunicorn) on the demo corpus and asks demo questions on the ask page, in fast mode. For each
question, from the moment Ask is pressed (the submit event, in the page's own clock):

- first progress: the first progress line on screen (the page's own "Asking…", drawn at once);
- first server progress: the first stage the server streamed ("Question received");
- first sentence: the first answer text on screen;
- answer: the finished answer (sources, feedback buttons).

Against it, the non-streamed response time: the same question posted without `stream` from the
same page (fetch, JSON). Each question is asked both ways, in alternating order, once as written
and once with " ?" appended (which way gets which alternates too): the same work, but no answer
is served from the verifiers' caches of the other asking. The floors (issue 22): first progress
≤ 300 ms, first sentence no later than the non-streamed response.

    .venv/bin/python benchmarks/ask_page.py [--questions 40]

A reader's browser runs on another machine than the server; here they share the cores, and
Chromium drawing the progress as it streams took CPU from the server's model calls (the
pipeline ran ~50 ms slower streamed than plain, p50). So the server is pinned to one core (its
torch to one thread) and the browser to the others, for both ways of asking alike.

Runs on a database of its own (cairn_bench_ask_page); about 3 minutes here. Writes
benchmarks/results/ask_page.json and ask_page.png.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

from tqdm import tqdm

from _common import RESULTS, ROOT, django_setup, free_port, percentile, write_result

DATABASE = "cairn_bench_ask_page"
SECRET = "benchmark-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz"
CHROMIUM = "/usr/bin/chromium"
PASSWORD = "bench-page-larch-quarry-71"
# Time-stamps, in the page's clock, what the reader sees (installed before the page's own script).
WATCH = """
window.__t = {};
const mark = (k) => { if (!(k in window.__t)) window.__t[k] = performance.now(); };
document.addEventListener("submit", (e) => { if (e.target.id === "ask") { window.__t = {}; mark("pressed"); } }, true);
new MutationObserver(() => {
  if (!("pressed" in window.__t)) return;
  const progress = document.querySelector("#progress");
  if (progress && !progress.hidden && progress.querySelector("li")) mark("progress");
  if (document.querySelector("#progress li.done")) mark("server_progress");
  const answer = document.querySelector("#answer");
  if (answer && answer.checkVisibility() && answer.textContent.trim()) mark("sentence");
  const actions = document.querySelector("#actions");
  if (actions && actions.checkVisibility()) mark("answer");
}).observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
"""
PLAIN = """async (question) => {
  const started = performance.now();
  const response = await fetch("/api/v1/query", {method: "POST", headers: {"Content-Type": "application/json",
    "X-CSRFToken": document.querySelector("[name=csrfmiddlewaretoken]").value},
    body: JSON.stringify({question, mode: "fast"})});
  const body = await response.json();
  return {status: response.status, ms: performance.now() - started, server: body.timings_ms?.total};
}"""


def server_env(**extra) -> dict:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    return {**base, "DJANGO_SETTINGS_MODULE": "config.settings", "CAIRN_DB_NAME": DATABASE, "CAIRN_SECRET_KEY": SECRET,
            "CAIRN_LOG_LEVEL": "WARNING", "CAIRN_ACCESS_LOG": "", "CAIRN_THROTTLE_QUERY": "1000000/minute",
            **extra}  # fmt: skip


def setup() -> list[str]:
    os.environ["CAIRN_DB_NAME"] = DATABASE
    django_setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command

    call_command("ingest", str(ROOT / "demo" / "corpus"), collection="demo", public=True, verbosity=0)
    user, _ = User.objects.get_or_create(username="bench-reader")
    user.set_password(PASSWORD)
    user.save()
    return [json.loads(line)["question"] for line in (ROOT / "demo" / "questions.jsonl").read_text().splitlines()]


def summary(values: list[float]) -> dict:
    return {
        "p50": round(percentile(values, 50)),
        "p95": round(percentile(values, 95)),
        "mean": round(statistics.mean(values)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=30, help="questions, each asked streamed and plain")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    cores = sorted(os.sched_getaffinity(0))
    server_cores, browser_cores = ({cores[0]}, set(cores[1:])) if len(cores) > 1 else (set(cores), set(cores))
    os.sched_setaffinity(0, browser_cores)  # this process, Playwright's driver and Chromium
    questions = setup()
    random.Random(0).shuffle(questions)
    questions = questions[: args.questions]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--bind", f"127.0.0.1:{port}", "--no-worker"],
        cwd=ROOT, env=server_env(CAIRN_WEB_WORKERS="1", CAIRN_TORCH_THREADS=str(len(server_cores))),
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, preexec_fn=lambda: os.sched_setaffinity(0, server_cores),
    )  # fmt: skip
    streamed, plain, plain_server, failures = [], [], [], 0
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page()
            page.add_init_script(WATCH)
            for _ in range(240):  # the server loads its models before it listens
                try:
                    page.goto(f"{base}/accounts/login/")
                    break
                except Exception:  # noqa: BLE001 - not listening yet
                    page.wait_for_timeout(500)
            page.fill("#id_username", "bench-reader")
            page.fill("#id_password", PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_url(f"{base}/")
            page.fill("#question", "warm-up: who got the first nobel prize in physics")
            page.select_option("#mode", "fast")
            page.click("#ask-button")
            page.wait_for_selector("#actions:not([hidden]), #error:not([hidden])", timeout=120_000)
            for i, question in enumerate(tqdm(questions, desc="each question streamed and plain", unit="q")):
                as_streamed, as_plain = (question, f"{question} ?")[:: 1 if i % 2 else -1]
                seen = {}
                for way in ("streamed", "plain")[:: 1 if i % 4 < 2 else -1]:
                    if way == "plain":
                        outcome = page.evaluate(PLAIN, as_plain)
                        if outcome["status"] == 200:
                            seen["plain"] = round(outcome["ms"], 1)
                            seen["plain_server"] = outcome["server"]
                        continue
                    page.fill("#question", as_streamed)
                    page.click("#ask-button")
                    page.wait_for_selector("#ask-button:not([disabled])", timeout=120_000)
                    t = page.evaluate("window.__t")
                    if "answer" in t:
                        seen["streamed"] = {k: round(v - t["pressed"], 1) for k, v in t.items() if k != "pressed"}
                        seen["streamed"]["server"] = page.evaluate("current.timings_ms.total")
                if len(seen) < 3:
                    failures += 1
                    continue
                streamed.append(seen["streamed"])
                plain.append(seen["plain"])
                plain_server.append(seen["plain_server"])
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=90)

    result = {
        "cores": {"server": sorted(server_cores), "browser": sorted(browser_cores)},
        "questions": {"asked_both_ways": len(streamed), "failed": failures},
        "first_progress_ms": summary([s["progress"] for s in streamed]),
        "first_server_progress_ms": summary([s["server_progress"] for s in streamed]),
        "first_sentence_ms": summary([s["sentence"] for s in streamed]),
        "answer_ms": summary([s["answer"] for s in streamed]),
        "plain_response_ms": summary(plain),
        # The pipeline's own time (timings_ms.total, record excluded), streamed and plain: what the
        # server spent, against what the reader waited.
        "server_pipeline_ms": {"streamed": summary([s["server"] for s in streamed]), "plain": summary(plain_server)},
        # Per question: first sentence streamed minus the plain response (negative: streaming is sooner).
        "first_sentence_minus_plain_ms": summary([s["sentence"] - p for s, p in zip(streamed, plain, strict=True)]),
        "floors": {
            "first_progress_p95_le_300ms": percentile([s["progress"] for s in streamed], 95) <= 300,
            "first_sentence_p50_le_plain_p50": percentile([s["sentence"] for s in streamed], 50)
            <= percentile(plain, 50),
        },
    }
    write_result("ask_page", result)
    plot(streamed, plain, RESULTS / "ask_page.png")
    print(json.dumps(result, indent=2))


def plot(streamed: list[dict], plain: list[float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    series = [
        ("first progress on screen", [s["progress"] for s in streamed]),
        ("first stage from the server", [s["server_progress"] for s in streamed]),
        ("first answer sentence", [s["sentence"] for s in streamed]),
        ("finished answer (streamed)", [s["answer"] for s in streamed]),
        ("non-streamed response", plain),
    ]
    for label, values in series:
        ordered = sorted(values)
        ax.step(ordered, [(i + 1) / len(ordered) for i in range(len(ordered))], where="post", label=label)
    ax.axvline(300, color="grey", linestyle=":", label="300 ms")
    ax.set_xscale("log")
    ax.set_xlabel("ms after pressing Ask (log scale)")
    ax.set_ylabel("share of questions")
    ax.set_title("The ask page in Chromium, demo corpus, fast mode")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
