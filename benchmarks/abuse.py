"""Crafted text against every entry point: the worst input and its CPU time per 10 KB.

    .venv/bin/python benchmarks/abuse.py [--size 100000] [--repeats 3]

The inputs and entry points are tests/abuse.py's (tests/test_abuse.py bounds the same calls): runs
of every character a pattern in corpus/ or pipeline/ gives meaning to, and the shapes that made
those patterns backtrack (an unclosed "<!--", "[" x N, "# a" + spaces + "b", …), read by what a
question, an upload of each format, a write-back edit, a critique reason, a search result and an
LLM's reply go through, up to the models and the database. Each call's CPU time is the best of
`--repeats`, per 10 KB of what arrives (a file's bytes; a question's or an answer's characters);
the worst input is timed again at a quarter of the size, and the ratio says how time grows (4:
linear, 16: quadratic). Floors: the worst input costs at most 50 ms per 10 KB at every entry
point, and a 2,000-character question built to backtrack (the API's limit) costs no more than an
ordinary question of the same length. No database. Writes benchmarks/results/abuse.json.
"""

from __future__ import annotations

import argparse
import gc
import os
import time

from _common import ROOT, write_result

FLOOR_MS_PER_10KB = 50.0
QUESTION_CHARS = 2000  # the most the query API takes


def cpu_seconds(call, repeats: int) -> float:
    """The least CPU time of `repeats` calls, the garbage collector off while each runs (as timeit)."""
    best = float("inf")
    for _ in range(repeats):
        gc.disable()
        started = time.process_time()
        try:
            call()
        finally:
            best = min(best, time.process_time() - started)
            gc.enable()
    return best


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

    from tests.abuse import ENTRY_POINTS, ORDINARY_PASSAGE, ORDINARY_QUESTION, inputs, question_asked

    for entry in ENTRY_POINTS.values():  # the tokenizer loads here, outside any timing
        entry.read(entry.arrives(ORDINARY_PASSAGE))
    cases = inputs(args.size)
    per_10kb: dict[str, dict[str, float]] = {name: {} for name in ENTRY_POINTS}
    with tqdm(total=len(ENTRY_POINTS) * len(cases), desc="crafted inputs", unit="call") as bar:
        for name, entry in ENTRY_POINTS.items():
            for case, text in cases.items():
                arrived = entry.arrives(text)
                seconds = cpu_seconds(lambda: entry.read(arrived), args.repeats)  # noqa: B023
                per_10kb[name][case] = round(1000 * seconds * 10_000 / len(arrived), 3)
                bar.update()

    entry_points = {}
    quarter = inputs(args.size // 4)
    for name, timings in per_10kb.items():
        ours = timings
        worst = max(ours, key=ours.get)
        entry = ENTRY_POINTS[name]
        small, large = entry.arrives(quarter[worst]), entry.arrives(cases[worst])
        growth = cpu_seconds(lambda: entry.read(large), args.repeats) / max(  # noqa: B023
            cpu_seconds(lambda: entry.read(small), args.repeats),  # noqa: B023
            1e-6,
        )
        entry_points[name] = {
            "worst": worst,
            "ms_per_10kb": ours[worst],
            "median_ms_per_10kb": sorted(ours.values())[len(ours) // 2],
            "growth_at_4x_size": round(growth, 1),
            "all_ms_per_10kb": timings,
        }

    # The question at the API's limit: each crafted input cut (or repeated) to 2,000 characters, against
    # ordinary questions of that length (prose that sets the scene, a pasted log, a pasted settings
    # list) and an everyday one.
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
        "worst_ms_per_10kb_at_most_50": all(e["ms_per_10kb"] <= FLOOR_MS_PER_10KB for e in entry_points.values()),
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
    result = {"size": args.size, "repeats": args.repeats, "floors": floors, "question": question}
    path = write_result("abuse", {**result, "entry_points": entry_points})
    width = max(map(len, entry_points))
    print(f"\n{'entry point':{width}}  worst input (ms per 10 KB, growth at 4x size)")
    for name, e in entry_points.items():
        print(f"{name:{width}}  {e['worst']}: {e['ms_per_10kb']:.2f} ms, x{e['growth_at_4x_size']}")
    print(
        f"question: everyday {question_ms['everyday']:.3f} ms; 2,000 characters: ordinary "
        + ", ".join(f"{name} {question_ms[name]:.3f} ms" for name in ordinary)
        + f"; worst crafted ({worst_question}) {question_ms[worst_question]:.3f} ms"
    )
    if args.end_to_end:
        print(
            "asked end to end (fast mode, ms): " + ", ".join(f"{k} {v}" for k, v in question["end_to_end_ms"].items())
        )
    print(f"floors: {floors}\nwrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
