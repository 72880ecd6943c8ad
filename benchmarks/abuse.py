"""Crafted text and crafted files against every entry point: the worst input and its CPU time per 10 KB.

    .venv/bin/python benchmarks/abuse.py [--size 100000] [--repeats 3]

The inputs and entry points are tests/abuse.py's (tests/test_abuse.py bounds the same calls): runs
of every character a pattern in corpus/ or pipeline/ gives meaning to, and the shapes that made
those patterns backtrack (an unclosed "<!--", "[" x N, "# a" + spaces + "b", …), read by what a
question, an upload of each format, a write-back edit, a critique reason, a search result and an
LLM's reply go through, up to the models and the database. An upload of each other format (Word,
PowerPoint, Excel and their macro-enabled forms, CSV, TSV, OpenDocument, RTF, e-mail, the legacy
.doc .xls .ppt that LibreOffice converts) also reads crafted files of `--size` bytes in the shapes
its reader walks (elements nested, tiny runs, many cells or slides or parts, quoting). Each call's
CPU time (LibreOffice's child process's with it) is the best of `--repeats`, per 10 KB of what
arrives (a file's bytes; a question's or an answer's characters); a call still running after
STOP_SECONDS of CPU is stopped and reported as at least that. The worst input is timed again at a
quarter of the size, and the ratio says how time grows (4: linear, 16: quadratic). Floors: the
worst input costs at most 50 ms per 10 KB at every entry point (times the entry point's cost: a
PDF's 2; a legacy file's LibreOffice start, tests.abuse.LIBREOFFICE_START, halved, on top), and a
2,000-character question built to backtrack (the API's limit) costs no more than an ordinary
question of the same length. No database. Writes benchmarks/results/abuse.json.
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import time
from functools import partial

from _common import ROOT, write_result

FLOOR_MS_PER_10KB = 50.0
LEGACY_UPLOADS = ("upload .doc", "upload .xls", "upload .ppt")
QUESTION_CHARS = 2000  # the most the query API takes
STOP_SECONDS = 10.0  # of CPU: a call still running then is stopped (an exponential reader runs for hours)


class Stopped(BaseException):
    """Raised inside a call by the CPU timer; a BaseException, so no `except Exception` swallows it."""


def timed(call, repeats: int) -> tuple[float, bool]:
    """The least CPU time of `repeats` calls (children's included: LibreOffice's), the garbage
    collector off while each runs (as timeit), and whether a call was stopped after STOP_SECONDS."""
    from tests.abuse import cpu_time

    def stop(_signum, _frame):
        raise Stopped

    previous = signal.signal(signal.SIGVTALRM, stop)
    best = float("inf")
    try:
        for _ in range(repeats):
            gc.disable()
            started = cpu_time()
            signal.setitimer(signal.ITIMER_VIRTUAL, STOP_SECONDS)
            try:
                call()
            except Stopped:
                return cpu_time() - started, True
            finally:
                signal.setitimer(signal.ITIMER_VIRTUAL, 0)
                best = min(best, cpu_time() - started)
                gc.enable()
    finally:
        signal.signal(signal.SIGVTALRM, previous)
    return best, False


def cpu_seconds(call, repeats: int) -> float:
    return timed(call, repeats)[0]


def reading(read, arrived) -> tuple:
    """(a call of `read` with what arrives, its length)."""
    return partial(read, arrived), len(arrived)


def ordinary_long_questions() -> dict[str, str]:
    """Questions as long as the API takes, as people ask them: prose that sets the scene (demo
    passages), a pasted log, a pasted settings list."""
    import json

    passages = [json.loads(line)["text"] for line in (ROOT / "demo" / "corpus" / "nq_passages.jsonl").open()]
    log = "".join(
        f"2026-11-26 02:{i:02d}:17 ERROR q-worker-{i % 4} task import_batch({i}) failed: connection reset by peer\n"
        for i in range(40)
    )
    settings = "".join(f"- CAIRN_SETTING_{i}: value {i} (see the manual, section {i}.{i})\n" for i in range(60))
    return {
        "prose": " ".join(passages[:5]),
        "log": f"Since the upgrade the nightly import fails. The worker prints:\n{log}",
        "settings": f"Our settings file reads:\n\n{settings}",
    }


def end_to_end_ms(questions: dict[str, str], repeats: int) -> dict[str, float]:
    """Median wall time of each question asked in `fast` mode of the demo corpus (question_answer:
    the embedder, retrieval, the gate's models, the extractive answer, the record), as the query API
    asks it. Uses the benchmark database (benchmarks/_common.py), the demo corpus ingested first."""
    from _common import django_setup

    django_setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command

    from pipeline.services import question_answer

    call_command("ingest", str(ROOT / "demo" / "corpus"), collection="demo", public=True, verbosity=0)
    user, _ = User.objects.get_or_create(username="abuse-bench")
    question_answer(user=user, question="Who got the first Nobel Prize in Physics?", mode="fast")  # models load
    timings = {}
    for name, question in questions.items():
        runs = []
        for _ in range(repeats):
            started = time.perf_counter()
            question_answer(user=user, question=question, mode="fast")
            runs.append(1000 * (time.perf_counter() - started))
        timings[name] = round(sorted(runs)[len(runs) // 2], 1)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000, help="characters of each crafted text")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--end-to-end", action="store_true",
                        help="also ask the 2,000-character questions of the demo corpus (database, models)")  # fmt: skip
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("CAIRN_LOG_LEVEL", "WARNING")
    if args.end_to_end:
        os.environ.setdefault("CAIRN_DB_NAME", "cairn_bench")  # _common.django_setup's, before settings load
    import django

    django.setup()
    from tqdm import tqdm

    from tests.abuse import (
        ENTRY_POINTS,
        LIBREOFFICE_START,
        ORDINARY_PASSAGE,
        ORDINARY_QUESTION,
        files,
        inputs,
        legacy_files,
        question_asked,
        upload,
    )

    for entry in ENTRY_POINTS.values():  # the tokenizer loads here, outside any timing
        entry.read(entry.arrives(ORDINARY_PASSAGE))

    def crafted_calls(size: int) -> dict[str, dict[str, tuple]]:
        """Entry point -> input -> (the call, how many bytes or characters arrive) at `size`."""
        calls: dict[str, dict[str, tuple]] = {}
        for name, entry in ENTRY_POINTS.items():
            for case, text in inputs(size).items():
                calls.setdefault(name, {})[case] = reading(entry.read, entry.arrives(text))
        for suffix, shapes in {**files(size), **legacy_files(size)}.items():
            for shape, data in shapes.items():
                calls.setdefault(f"upload {suffix}", {})[shape] = reading(partial(upload, f"abuse{suffix}"), data)
        return calls

    at_size = crafted_calls(args.size)
    per_10kb: dict[str, dict[str, float]] = {name: {} for name in at_size}
    stopped: dict[str, list[str]] = {}
    crashed: dict[str, dict[str, str]] = {}
    with tqdm(total=sum(map(len, at_size.values())), desc="crafted inputs", unit="call") as bar:
        for name, calls in at_size.items():
            for case, (call, arrived) in calls.items():
                bar.update()
                try:
                    seconds, stop = timed(call, args.repeats)
                except Exception as exc:  # noqa: BLE001 - not refused but crashed (a 500): reported, not timed
                    crashed.setdefault(name, {})[case] = f"{type(exc).__name__}: {exc}"[:200]
                    continue
                per_10kb[name][case] = round(1000 * seconds * 10_000 / arrived, 3)
                if stop:
                    stopped.setdefault(name, []).append(case)

    def floor_ms(name: str, arrived: int) -> float:
        cost = ENTRY_POINTS[name].cost if name in ENTRY_POINTS else 1.0
        start = LIBREOFFICE_START / 2 if name in LEGACY_UPLOADS else 0.0  # a legacy file's conversion starts
        return cost * FLOOR_MS_PER_10KB + 1000 * start * 10_000 / arrived

    entry_points, over_floor = {}, {}
    at_quarter = crafted_calls(args.size // 4)
    for name, timings in per_10kb.items():
        worst = max(timings, key=timings.get)
        small, large = at_quarter[name][worst][0], at_size[name][worst][0]
        if worst in stopped.get(name, []):
            growth = None  # stopped at the full size: its growth is not measured
        else:
            growth = round(cpu_seconds(large, args.repeats) / max(cpu_seconds(small, args.repeats), 1e-6), 1)
        over = {case: ms for case, ms in timings.items() if ms > floor_ms(name, at_size[name][case][1])}
        if over:
            over_floor[name] = over
        entry_points[name] = {
            "worst": worst,
            "ms_per_10kb": timings[worst],
            "stopped_after_s": STOP_SECONDS if worst in stopped.get(name, []) else None,
            "median_ms_per_10kb": sorted(timings.values())[len(timings) // 2],
            "growth_at_4x_size": growth,
            "all_ms_per_10kb": timings,
        }

    # The question at the API's limit: each crafted input cut (or repeated) to 2,000 characters, against
    # ordinary questions of that length (prose that sets the scene, a pasted log, a pasted settings
    # list) and an everyday one.
    cases = inputs(args.size)
    crafted = {
        case: (text * (1 + QUESTION_CHARS // max(len(text), 1)))[:QUESTION_CHARS] for case, text in cases.items()
    }
    crafted["heading never closed"] = "# a" + " " * (QUESTION_CHARS - 4) + "b"
    ordinary = {name: text[: QUESTION_CHARS - 1] + "?" for name, text in ordinary_long_questions().items()}
    repeats = max(args.repeats, 7)

    def ten_times(question: str) -> None:
        for _ in range(10):  # a question takes about a millisecond: ten per timing
            question_asked(question)

    question_ms = {}
    for case, text in {**crafted, **ordinary, "everyday": ORDINARY_QUESTION}.items():
        question_ms[case] = 1000 * cpu_seconds(lambda: ten_times(text), repeats) / 10  # noqa: B023
    worst_question = max(crafted, key=question_ms.get)
    dearest_ordinary = max(ordinary, key=question_ms.get)
    question = {
        "everyday_ms": round(question_ms["everyday"], 3),
        "ordinary_2000_chars_ms": {name: round(question_ms[name], 3) for name in ordinary},
        "worst_crafted_2000_chars": worst_question,
        "worst_crafted_2000_chars_ms": round(question_ms[worst_question], 3),
        "crafted_2000_chars_ms": {case: round(question_ms[case], 3) for case in crafted},
    }

    floors = {
        "worst_ms_per_10kb_at_most_50": not over_floor,
        "no_input_crashes": not crashed,
        "crafted_question_no_dearer_than_ordinary_of_its_length": question_ms[worst_question]
        <= question_ms[dearest_ordinary],
    }
    if args.end_to_end:
        asked = {"everyday": ORDINARY_QUESTION, **ordinary, worst_question: crafted[worst_question],
                 "heading never closed": crafted["heading never closed"]}  # fmt: skip
        question["end_to_end_ms"] = end_to_end_ms(asked, args.repeats)
        seconds = question["end_to_end_ms"]
        floors["crafted_question_end_to_end_no_dearer_than_ordinary"] = max(
            seconds[worst_question], seconds["heading never closed"]
        ) <= max(seconds[name] for name in ordinary)
    result = {
        "size": args.size,
        "repeats": args.repeats,
        "floors": floors,
        "over_floor": over_floor,
        "crashed": crashed,
        "question": question,
    }
    path = write_result("abuse", {**result, "entry_points": entry_points})
    width = max(map(len, entry_points))
    print(f"\n{'entry point':{width}}  worst input (ms per 10 KB, growth at 4x size)")
    for name, e in entry_points.items():
        growth = f"x{e['growth_at_4x_size']}" if e["stopped_after_s"] is None else f"stopped after {STOP_SECONDS:g} s"
        print(f"{name:{width}}  {e['worst']}: {e['ms_per_10kb']:.2f} ms, {growth}")
    print(
        f"question: everyday {question_ms['everyday']:.3f} ms; 2,000 characters: ordinary "
        + ", ".join(f"{name} {question_ms[name]:.3f} ms" for name in ordinary)
        + f"; worst crafted ({worst_question}) {question_ms[worst_question]:.3f} ms"
    )
    if args.end_to_end:
        print(
            "asked end to end (fast mode, ms): " + ", ".join(f"{k} {v}" for k, v in question["end_to_end_ms"].items())
        )
    for name, over in over_floor.items():
        print(f"over the floor at {name}: " + ", ".join(f"{case} {ms:.0f} ms" for case, ms in over.items()))
    for name, errors in crashed.items():
        print(f"crashed at {name}: " + "; ".join(f"{case}: {error}" for case, error in errors.items()))
    print(f"floors: {floors}\nwrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
