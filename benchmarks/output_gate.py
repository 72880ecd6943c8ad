"""The output gate on a real model: SmolLM2-135M-Instruct (llama.cpp's OpenAI-compatible server,
started here on loopback) through Cairn's `openai` generator, `standard` mode.

    .venv/bin/python benchmarks/output_gate.py --part unread --questions 400   # ask (resumes), add to the sheet
    .venv/bin/python benchmarks/output_gate.py --part manuals --questions 40
    .venv/bin/python benchmarks/output_gate.py --part boolq --questions 30
    .venv/bin/python benchmarks/output_gate.py --score   # once the sheet is labelled

For each question (below: Parts; top_k 8, within its collection) the forward path runs once up to
generation, then from the same VERIFIED evidence:
- extractive: the fast path's answer;
- LLM without the gate: the model's answer as a reader saw it before the gate (citations to
  evidence it was not given removed, nothing else);
- LLM with the gate: the same stream through pipeline/output_gate.py, as the pipeline runs it:
  the sentences that passed, or the extractive answer when the gate withheld the whole answer.
Reported: gold string in the shown answer for each, how often the gate fell back, the gate's own
time per answer and the time to the first shown sentence and to the model's first token.

Whether a shown sentence is supported is judged by reading, not by Cairn. The sheet
(benchmarks/output_gate/sheet.jsonl) holds every sentence the gate showed and a fixed share
(UNGATED_SHARE) of those the model wrote without it, each as the question, the
sentence with its citation markers taken out, and all the passages the model was given, numbered,
shuffled: a gated sentence and an ungated one look alike (the gated ones cite a passage, the model's
own mostly cite none; shown as they were, the passages would tell them apart). A sentence both
versions showed is one item. benchmarks/output_gate/labels.jsonl holds the labels, made from the
sheet alone (how: benchmarks/output_gate/README.md): supported by the passages, and which passages
state it on their own. `--score` joins them: the share of shown sentences the evidence does not
support (with its 95% Wilson interval), and the share no passage the sentence cites states.

Parts, none of whose questions was read for a choice about the gate (its rules came from reading
NQ's held-out answers, its thresholds from NQ's calibration part):
- `unread`: NQ train-part questions 201 to 600 of a fixed random order, asked first on 2026-12-06
  (`fresh` is the first 200, asked on 2026-11-26 after the rules were fixed). The NLI model trained
  on claims and passages of NQ's training split, so the gate may judge these better than text it
  never saw.
- `manuals`: the nine manuals' questions (benchmarks/docs_qa.py's sets, both parts, 534) in a fixed
  random order; `boolq`: BoolQ's dev questions (yes or no over Wikipedia passages; no gold string),
  400 in a fixed random order whose passages make its collection. SmolLM2 rarely writes a sentence the gate can show on these, so they show how often it
  falls back rather than yield sentences to label.
`report` and `calibration` are NQ's held-out split (the gate's last two rules were written after
reading the report part's labels; calibrate_gate chose the thresholds on the calibration part).
Writes benchmarks/results/output_gate.json and output_gate.png.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import time

from _common import (
    RESULTS,
    ROOT,
    django_setup,
    has_gold,
    nq_corpus,
    nq_parts,
    nq_rows,
    percentile,
    shared,
    write_result,
)

HERE = ROOT / "benchmarks" / "output_gate"
RECORDS = HERE / "records.jsonl"  # one line a question: what each version showed, and timings
SHEET = HERE / "sheet.jsonl"
LABELS = HERE / "labels.jsonl"
VERSIONS = ("extractive", "llm", "gated")
PARTS = ("unread", "manuals", "boolq", "report", "calibration", "fresh")
BOOLQ_QUESTIONS = 400
SAMPLE_SEED = 7
UNGATED_SHARE = 0.15  # of the sentences the model wrote without the gate, labelled (sampled())


def part_questions(part: str) -> list[dict]:
    """The part's questions in asking order: index (a manual question's id, an NQ row's number),
    question, gold answers, and the collection and reader it is asked in and as."""
    if part == "manuals":
        from docs_qa import SETS, manual_reader

        questions = []
        for docs in SETS.values():
            collection, user, asked = manual_reader(docs)
            questions += [{"index": q["id"], "question": q["question"], "answers": q["gold"] if q["answerable"] else [],
                           "collection": collection.slug, "user": user} for q in asked]  # fmt: skip
        # In a fixed random order, so that the first N asked are a sample of every manual.
        return random.Random(SAMPLE_SEED).sample(questions, len(questions))
    if part == "boolq":
        collection, user, rows = boolq_corpus()
        return [{"index": f"bq-{i}", "question": row["question"], "answers": [], "collection": collection.slug,
                 "user": user} for i, row in rows]  # fmt: skip
    from judges.nli_data import SPLIT_SEED

    collection, user, _gold = nq_corpus()
    rows = nq_rows()
    train, calibration, report = nq_parts(rows)
    fresh = random.Random(SPLIT_SEED).sample(list(train), len(train))
    indices = {"report": report, "calibration": calibration, "fresh": fresh[:200], "unread": fresh[200:]}[part]
    return [{"index": i, "question": rows[i]["question"], "answers": rows[i]["answers"], "collection": collection.slug,
             "user": user} for i in indices]  # fmt: skip


def boolq_corpus():
    """BOOLQ_QUESTIONS of BoolQ's dev set in a fixed random order (row number, row), their passages
    ingested into collection `boolq` (a re-run skips what is there), and a reader of it."""
    from django.contrib.auth.models import User
    from tqdm import tqdm

    from corpus.services import collection_get_or_create, documents_ingest
    from readers.extract import ExtractedDocument

    rows = [json.loads(line) for line in shared("qa_extra", "boolq_dev", "dev.jsonl").read_text().splitlines()]
    chosen = random.Random(SAMPLE_SEED).sample(list(enumerate(rows)), BOOLQ_QUESTIONS)
    passages = {row["passage"]: row["title"] for _i, row in chosen}
    collection, _ = collection_get_or_create(slug="boolq", group_names=["boolq-readers"])
    with tqdm(total=len(passages), desc="ingesting BoolQ passages", unit="doc") as bar:
        documents_ingest(
            collection=collection,
            documents=[
                ExtractedDocument(title, text, f"boolq-{hashlib.sha256(text.encode()).hexdigest()[:12]}", "text/plain")
                for text, title in passages.items()
            ],  # fmt: skip
            on_progress=lambda docs, chunks: bar.update(docs),
        )
    user, _ = User.objects.get_or_create(username="boolq-reader")
    user.groups.add(*collection.groups.all())
    return collection, user, chosen


def records() -> list[dict]:
    """Each question's last record (a question whose model failed is asked again by a re-run)."""
    lines = RECORDS.read_text().splitlines() if RECORDS.exists() else []
    return list({(r["part"], r["index"]): r for r in map(json.loads, lines)}.values())


def done() -> set:
    return {r["index"] for r in records() if "error" not in r}


def ask(args) -> None:
    django_setup()
    from django.test import override_settings
    from tqdm import tqdm

    from judges.grounding import answer_sentences
    from pipeline.generators import (
        ExtractiveGenerator,
        GeneratorUnavailable,
        evidence_texts,
        get_generator,
        parse_answer,
    )
    from pipeline.output_gate import SHOWN, Withheld, gated
    from pipeline.services import query_state
    from pipeline.stages import STAGES, generate
    from tests.llama_server import CONTEXT, LlamaServer

    questions = [q for q in part_questions(args.part)[: args.questions] if q["index"] not in done()]
    HERE.mkdir(exist_ok=True)

    with (
        LlamaServer(log=RESULTS / "cache" / "llama_server.log") as server,
        override_settings(
            CAIRN_OPENAI_BASE_URL=server.url, CAIRN_OPENAI_MODEL=server.model, CAIRN_OPENAI_CONTEXT=CONTEXT
        ),  # fmt: skip
        RECORDS.open("a") as out,
    ):
        llm = get_generator("openai")
        for q in tqdm(questions, desc=f"asking {args.part}", unit="q"):
            state = query_state(user=q["user"], question=q["question"], top_k=8, collections=[q["collection"]],
                                mode="standard", generator="openai")  # fmt: skip
            for stage in STAGES[: STAGES.index(generate)]:
                stage(state)
            evidence = evidence_texts(state.verified)
            record = {"index": q["index"], "part": args.part, "question": q["question"], "answers": q["answers"],
                      "evidence": [{"n": e.n, "text": e.text} for e in evidence]}  # fmt: skip
            if not evidence:
                out.write(json.dumps(record | {"verified": 0}) + "\n")
                continue
            extractive = ExtractiveGenerator().generate(q["question"], evidence)
            raw, clock = [], {"llm_ms": 0.0}
            started = time.perf_counter()

            shown_pieces, sentences, withheld = [], [], ""
            try:
                stream = gated(
                    q["question"], evidence, relayed(llm.stream(q["question"], evidence), raw, clock, started)
                )
                while True:
                    try:
                        shown_pieces.append(next(stream))
                    except StopIteration as finished:
                        result = finished.value
                        break
                    clock.setdefault("first_shown_ms", (time.perf_counter() - started) * 1000)
                sentences = result.sentences
            except Withheld as exc:
                result, withheld, sentences = extractive, exc.reason, exc.sentences
            except GeneratorUnavailable as exc:
                out.write(json.dumps(record | {"error": str(exc)}) + "\n")
                continue
            total = (time.perf_counter() - started) * 1000
            ungated = parse_answer("".join(raw), {e.n for e in evidence}, "openai")
            record |= {
                "verified": len(evidence),
                "extractive": {"text": extractive.text, "found": extractive.found},
                "llm": {"text": ungated.text, "found": ungated.found,
                        "sentences": [{"sentence": s, "cited": c} for s, c in answer_sentences(ungated.text)]
                        if ungated.found else []},
                "gated": {"text": result.text, "found": result.found, "fallback": withheld,
                          "sentences": [{"sentence": s["sentence"], "cited": s["shown_cited"]} for s in sentences
                                        if s["verdict"] == SHOWN] if not withheld else [],
                          "checked": sentences},
                "ms": {"total": total, "gate": total - clock["llm_ms"], **clock},
            }  # fmt: skip
            out.write(json.dumps(record) + "\n")
            out.flush()


def relayed(stream, raw: list[str], clock: dict, started: float):
    """The model's stream, timed: its first token, and the time spent waiting on it."""
    while True:
        began = time.perf_counter()
        try:
            piece = next(stream)
        except StopIteration as finished:
            clock["llm_ms"] += (time.perf_counter() - began) * 1000
            return finished.value
        clock["llm_ms"] += (time.perf_counter() - began) * 1000
        clock.setdefault("first_token_ms", (time.perf_counter() - started) * 1000)
        raw.append(piece)
        yield piece


def shown_items(record: dict, version: str) -> list[tuple[str, dict]]:
    """(key, item to label) for each sentence `version` showed: the question, the sentence (its
    citations taken out) and every passage the model was given, whatever the sentence cites."""
    passages = [{"n": e["n"], "text": e["text"]} for e in record.get("evidence", [])]
    return [
        (
            f"{record['index']}:{version}:{k}",
            {"question": record["question"], "sentence": s["sentence"], "passages": passages},
        )
        for k, s in enumerate(record.get(version, {}).get("sentences", []))
    ]


def content(item: dict) -> str:
    return json.dumps([item["question"], item["sentence"], item["passages"]], ensure_ascii=False)


def sampled(item: dict) -> bool:
    """Is this sentence of the model's, shown without the gate, in the labelled sample? A fixed share
    by the hash of its content, so the sample grows with the records and never changes."""
    return int(hashlib.sha256(content(item).encode()).hexdigest()[:8], 16) < UNGATED_SHARE * 16**8


def sheet(seed: int = SAMPLE_SEED) -> None:
    """Add to the labelling sheet what it lacks: every sentence the gate showed and the sampled ones
    the model wrote without it; shuffled, numbered after the items already there (whose labels stay
    valid: an item is its content)."""
    rows = [json.loads(line) for line in SHEET.read_text().splitlines()] if SHEET.exists() else []
    known = {content(row) for row in rows}
    new: dict[str, dict] = {}
    for r in records():
        if not r.get("verified") or "error" in r:
            continue
        for item in [item for _k, item in shown_items(r, "gated")] + [
            item for _k, item in shown_items(r, "llm") if sampled(item)
        ]:
            if content(item) not in known:
                new.setdefault(content(item), item)
    added = list(new.values())
    random.Random(seed + len(rows)).shuffle(added)
    with SHEET.open("a") as out:
        for i, item in enumerate(added, start=len(rows) + 1):
            out.write(json.dumps({"id": i} | item, ensure_ascii=False) + "\n")
    print(f"{len(added)} new sentences to label in {SHEET} (ids {len(rows) + 1}..{len(rows) + len(added)})")


def labelled() -> dict[str, dict]:
    """Each labelled item's content -> its label: supported, and the passages that state it alone."""
    labels = (
        {label["id"]: label for label in map(json.loads, LABELS.read_text().splitlines())} if LABELS.exists() else {}
    )
    rows = map(json.loads, SHEET.read_text().splitlines()) if SHEET.exists() else []
    return {content(row): labels[row["id"]] for row in rows if row["id"] in labels}


def wilson(hits: int, n: int, z: float = 1.96) -> list[float]:
    """The 95% Wilson score interval of hits / n."""
    if not n:
        return [0.0, 1.0]
    p = hits / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return [(centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)]


def figures(records: list[dict], labels: dict[str, dict]) -> dict:
    """The report for some questions' records, with the labels by sentence key."""
    asked = [r for r in records if "error" not in r]
    answered = [r for r in asked if r.get("verified")]
    with_gold = [r for r in asked if r["answers"]]
    result = {
        "questions": len(records),
        "model_errors": len(records) - len(asked),
        "with_verified_evidence": len(answered),
        "with_gold_answers": len(with_gold),
    }
    for version in VERSIONS:  # None where the questions have no gold strings (BoolQ: yes or no)
        result[f"{version}_gold_in_shown_answer"] = (
            None
            if not with_gold
            else sum(
                bool(r.get("verified")) and r[version]["found"] and has_gold(r[version]["text"], r["answers"])
                for r in with_gold
            )
            / len(with_gold)
        )
    fell_back = [r for r in answered if r["gated"]["fallback"]]
    result["gate_fell_back_to_extractive"] = len(fell_back) / max(1, len(answered))
    result["gate_fallback_reasons"] = {reason: sum(r["gated"]["fallback"] == reason for r in fell_back)
                                       for reason in sorted({r["gated"]["fallback"] for r in fell_back})}  # fmt: skip
    checked = [s for r in answered for s in r["gated"]["checked"]]
    result["gate_sentences_checked"] = len(checked)
    result["gate_sentences_left_out"] = sum(s["verdict"] != "shown" for s in checked) / max(1, len(checked))
    for version in ("llm", "gated"):
        shown = [
            (s, item) for r in answered for s, (_key, item) in zip(r[version]["sentences"], shown_items(r, version))
        ]
        judged = [(s, labels[content(item)]) for s, item in shown if content(item) in labels]
        unsupported = sum(not label["supported"] for _, label in judged)
        # Not stated by a passage it cites: uncited, or none of its citations states it on its own.
        uncited_or_unstated = sum(not set(s["cited"]) & set(label["by"]) for s, label in judged)
        result[version] = {
            "shown_sentences": len(shown), "labelled": len(judged), "uncited": sum(not s["cited"] for s, _ in shown),
            "unsupported": unsupported, "unsupported_share": unsupported / max(1, len(judged)),
            "unsupported_interval": wilson(unsupported, len(judged)),
            "not_stated_by_a_cited_passage": uncited_or_unstated,
            "not_stated_by_a_cited_passage_share": uncited_or_unstated / max(1, len(judged)),
            "not_stated_by_a_cited_passage_interval": wilson(uncited_or_unstated, len(judged)),
        }  # fmt: skip
    ms = [r["ms"] for r in answered]

    def p(key: str, q: int) -> float | None:  # None where no answer has it (nothing shown by the gate)
        values = [m[key] for m in ms if key in m]
        return percentile(values, q) if values else None

    result["latency_ms"] = {"gate_p50": p("gate", 50), "gate_p95": p("gate", 95), "first_token_p50": p("first_token_ms", 50),
                            "first_shown_p50": p("first_shown_ms", 50), "answer_p50": p("total", 50)}  # fmt: skip
    return result


def score() -> None:
    labels = labelled()
    result = {part: figures(rows, labels) for part in PARTS if (rows := [r for r in records() if r["part"] == part])}
    print(json.dumps(result, indent=1))
    plot(result)
    print(f"wrote {write_result('output_gate', result)} and {RESULTS / 'output_gate.png'}")


def plot(result: dict) -> None:
    """Gold in the shown answer, and unsupported shown sentences with their intervals, by part."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    parts = list(result)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    x, width = np.arange(len(parts)), 0.25
    for i, (version, label, colour) in enumerate(
        [("extractive", "extractive", "#888"), ("llm", "LLM, no gate", "#c66"), ("gated", "LLM, gated", "#4a8")]
    ):
        left.bar(x + (i - 1) * width, [100 * (result[p][f"{version}_gold_in_shown_answer"] or 0) for p in parts],
                 width, label=label, color=colour)  # fmt: skip
    for i, (version, key, label, colour) in enumerate(
        [("llm", "unsupported", "no gate: by the evidence", "#c66"),
         ("llm", "not_stated_by_a_cited_passage", "no gate: by a cited passage", "#e99"),
         ("gated", "unsupported", "gated: by the evidence", "#4a8")]
    ):  # fmt: skip
        shares = [100 * result[p][version][f"{key}_share"] for p in parts]
        low, high = zip(*[[100 * v for v in result[p][version][f"{key}_interval"]] for p in parts], strict=True)
        errors = [np.subtract(shares, low), np.subtract(high, shares)]
        right.bar(x + (i - 1) * width, shares, width, yerr=errors, capsize=3, label=label, color=colour)
    right.axhline(2, color="k", linestyle="--", linewidth=1, label="floor 2%")
    for axis, title in ((left, "gold string in the shown answer (% of questions with one)"),
                        (right, "shown sentences not supported (%, labelled blind; 95% interval)")):  # fmt: skip
        axis.set_xticks(x, [f"{p} ({result[p]['gated']['labelled']} gated)" for p in parts])
        axis.set_title(title, fontsize=10)
        axis.legend(fontsize=8)
    fig.suptitle("SmolLM2-135M through the OpenAI-compatible path, standard mode")
    fig.tight_layout()
    fig.savefig(RESULTS / "output_gate.png", dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=None, help="Ask only the part's first N questions.")
    parser.add_argument("--part", choices=PARTS, default="manuals", help="Which questions (see Parts above).")
    parser.add_argument("--sheet", action="store_true", help="Write the labelling sheet from the records.")
    parser.add_argument("--score", action="store_true", help="Join the labels and report.")
    args = parser.parse_args()
    if args.score:
        score()
    elif args.sheet:
        sheet()
    else:
        ask(args)
        sheet()


if __name__ == "__main__":
    main()
