"""The output gate on a real model: SmolLM2-135M-Instruct (llama.cpp's OpenAI-compatible server,
started here on loopback) through Cairn's `openai` generator, `standard` mode, held-out NQ.

    CAIRN_DB_NAME=cairn_nq .venv/bin/python benchmarks/output_gate.py --part report --questions 223
    CAIRN_DB_NAME=cairn_nq .venv/bin/python benchmarks/output_gate.py --part fresh --questions 200
    .venv/bin/python benchmarks/output_gate.py --score

The questions are NQ's (below: Parts), asked within collection `nq`, top_k 8. For
each, the forward path runs once up to generation, then from the same VERIFIED evidence:
- extractive: the fast path's answer;
- LLM without the gate: the model's answer as a reader saw it before the gate (citations to
  evidence it was not given removed, nothing else);
- LLM with the gate: the same stream through pipeline/output_gate.py, as the pipeline runs it:
  the sentences that passed, or the extractive answer when the gate withheld the whole answer.
Reported: gold string in the shown answer for each, how often the gate fell back, the gate's own
time per answer and the time to the first shown sentence and to the model's first token.

Whether a shown sentence is supported is judged by reading, not by Cairn: every sentence either
version shows goes into benchmarks/output_gate/sheet.jsonl with only the question and the
passages it cites (all passages where it cites none), shuffled, with no scores and no sign of
which version showed it. benchmarks/output_gate/labels.jsonl holds the labels, made from the
sheet alone (how: benchmarks/output_gate/README.md). `--score` joins them: the share of shown
sentences their cited evidence does not support, with and without the gate (an uncited sentence
has no cited evidence: unsupported; also reported as judged against all the evidence).

Parts: `report` (the headline's 200 are its first 200) and `calibration` are NQ's held-out
split; `fresh` is 200 NQ train-part questions, asked after the gate's rules were fixed, so its
figure is the one no choice was made on (the NLI model did train on claims of that part).
Writes benchmarks/results/output_gate.json and output_gate.png.
"""

from __future__ import annotations

import argparse
import json
import random
import time

from _common import RESULTS, ROOT, django_setup, has_gold, nq_corpus, nq_rows, percentile, write_result

HERE = ROOT / "benchmarks" / "output_gate"
RECORDS = HERE / "records.jsonl"  # one line a question: what each version showed, and timings
SHEET = HERE / "sheet.jsonl"
LABELS = HERE / "labels.jsonl"
VERSIONS = ("extractive", "llm", "gated")
PARTS = ("report", "calibration", "fresh")


def ask(args) -> None:
    django_setup()
    from django.test import override_settings
    from tqdm import tqdm

    from judges.grounding import answer_sentences
    from judges.nli_data import HELD_OUT, SPLIT_SEED, calibration_split, split
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

    collection, user, _gold = nq_corpus()
    rows = nq_rows()
    _train, held_out = split(list(range(len(rows))), held_out=HELD_OUT["nq"], seed=SPLIT_SEED)
    calibration, report = calibration_split(held_out)
    fresh = random.Random(SPLIT_SEED).sample(list(_train), len(_train))
    questions = {"report": report, "calibration": calibration, "fresh": fresh}[args.part][: args.questions]
    done = {json.loads(line)["index"] for line in RECORDS.read_text().splitlines()} if RECORDS.exists() else set()
    HERE.mkdir(exist_ok=True)

    with (
        LlamaServer(log=RESULTS / "cache" / "llama_server.log") as server,
        override_settings(
            CAIRN_OPENAI_BASE_URL=server.url, CAIRN_OPENAI_MODEL=server.model, CAIRN_OPENAI_CONTEXT=CONTEXT
        ),  # fmt: skip
        RECORDS.open("a") as out,
    ):
        llm = get_generator("openai")
        for index in tqdm([i for i in questions if i not in done], desc="asking", unit="q"):
            row = rows[index]
            state = query_state(user=user, question=row["question"], top_k=8, collections=[collection.slug],
                                mode="standard", generator="openai")  # fmt: skip
            for stage in STAGES[: STAGES.index(generate)]:
                stage(state)
            evidence = evidence_texts(state.verified)
            record = {"index": index, "part": args.part, "question": row["question"], "answers": row["answers"],
                      "evidence": [{"n": e.n, "text": e.text} for e in evidence]}  # fmt: skip
            if not evidence:
                out.write(json.dumps(record | {"verified": 0}) + "\n")
                continue
            extractive = ExtractiveGenerator().generate(row["question"], evidence)
            raw, clock = [], {"llm_ms": 0.0}
            started = time.perf_counter()

            shown_pieces, sentences, withheld = [], [], ""
            try:
                stream = gated(
                    row["question"], evidence, relayed(llm.stream(row["question"], evidence), raw, clock, started)
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
    """(key, item to label) for each sentence `version` showed: the question, the sentence and the
    passages it cites (all of them where it cites none)."""
    passages = {e["n"]: e["text"] for e in record.get("evidence", [])}
    items = []
    for k, s in enumerate(record.get(version, {}).get("sentences", [])):
        cited = [n for n in s["cited"] if n in passages]
        item = {"question": record["question"], "sentence": s["sentence"],
                "passages": [passages[n] for n in (cited or sorted(passages))]}  # fmt: skip
        items.append((f"{record['index']}:{version}:{k}", item))
    return items


def content(item: dict) -> str:
    return json.dumps([item["question"], item["sentence"], item["passages"]], ensure_ascii=False)


def sheet(seed: int = 7) -> None:
    """Add to the labelling sheet every sentence either LLM version showed that it lacks, shuffled,
    numbered after those already there (whose labels stay valid: an item is its content)."""
    rows = [json.loads(line) for line in SHEET.read_text().splitlines()] if SHEET.exists() else []
    known = {content(row) for row in rows}
    new: dict[str, dict] = {}
    for record in map(json.loads, RECORDS.read_text().splitlines()):
        for version in ("llm", "gated"):
            for _key, item in shown_items(record, version):
                if content(item) not in known:
                    new.setdefault(content(item), item)
    added = list(new.values())
    random.Random(seed + len(rows)).shuffle(added)
    with SHEET.open("a") as out:
        for i, item in enumerate(added, start=len(rows) + 1):
            out.write(json.dumps({"id": i} | item, ensure_ascii=False) + "\n")
    print(f"{len(added)} new sentences to label in {SHEET} (ids {len(rows) + 1}..{len(rows) + len(added)})")


def labelled() -> dict[str, bool]:
    """Each labelled item's content -> supported."""
    labels = {label["id"]: label["supported"] for label in map(json.loads, LABELS.read_text().splitlines())}
    rows = map(json.loads, SHEET.read_text().splitlines())
    return {content(row): labels[row["id"]] for row in rows if row["id"] in labels}


def figures(records: list[dict], supported: dict[str, bool]) -> dict:
    """The report for some questions' records, with the labels by sentence key."""
    asked = [r for r in records if "error" not in r]
    answered = [r for r in asked if r.get("verified")]
    result = {
        "questions": len(records),
        "model_errors": len(records) - len(asked),
        "with_verified_evidence": len(answered),
    }
    for version in VERSIONS:
        shown = [r for r in answered if r[version]["found"]]
        result[f"{version}_gold_in_shown_answer"] = sum(
            has_gold(r[version]["text"], r["answers"]) for r in shown
        ) / len(asked)
    fell_back = [r for r in answered if r["gated"]["fallback"]]
    result["gate_fell_back_to_extractive"] = len(fell_back) / max(1, len(answered))
    result["gate_fallback_reasons"] = {reason: sum(r["gated"]["fallback"] == reason for r in fell_back)
                                       for reason in sorted({r["gated"]["fallback"] for r in fell_back})}  # fmt: skip
    checked = [s for r in answered for s in r["gated"]["checked"]]
    result["gate_sentences_checked"] = len(checked)
    result["gate_sentences_left_out"] = sum(s["verdict"] != "shown" for s in checked) / max(1, len(checked))
    for version in ("llm", "gated"):
        sentences = [
            (f"{r['index']}:{version}:{k}", s) for r in answered for k, s in enumerate(r[version]["sentences"])
        ]
        labelled = [(key, s) for key, s in sentences if key in supported]
        result[f"{version}_shown_sentences"] = len(sentences)
        result[f"{version}_labelled"] = len(labelled)
        result[f"{version}_uncited"] = sum(not s["cited"] for _, s in sentences)
        result[f"{version}_unsupported_by_cited_evidence"] = sum(
            not s["cited"] or not supported[key] for key, s in labelled
        ) / max(1, len(labelled))
        result[f"{version}_unsupported_by_any_evidence"] = sum(not supported[k] for k, _ in labelled) / max(
            1, len(labelled)
        )
    ms = [r["ms"] for r in answered]
    result["latency_ms"] = {
        "gate_p50": percentile([m["gate"] for m in ms], 50), "gate_p95": percentile([m["gate"] for m in ms], 95),
        "first_token_p50": percentile([m["first_token_ms"] for m in ms if "first_token_ms" in m], 50),
        "first_shown_p50": percentile([m["first_shown_ms"] for m in ms if "first_shown_ms" in m], 50),
        "answer_p50": percentile([m["total"] for m in ms], 50),
    }  # fmt: skip
    return result


def score() -> None:
    records = [json.loads(line) for line in RECORDS.read_text().splitlines()]
    by_content = labelled()
    supported = {key: by_content[content(item)] for r in records for version in ("llm", "gated")
                 for key, item in shown_items(r, version) if content(item) in by_content}  # fmt: skip
    part = {name: [r for r in records if r["part"] == name] for name in PARTS}
    result = {
        "report_200": figures(part["report"][:200], supported),
        "report_all": figures(part["report"], supported),
        "held_out_all": figures(part["report"] + part["calibration"], supported),
        "fresh_200": figures(part["fresh"], supported),
    }
    print(json.dumps(result, indent=1))
    plot(result)
    print(f"wrote {write_result('output_gate', result)} and {RESULTS / 'output_gate.png'}")


def plot(result: dict) -> None:
    """Gold in the shown answer, and unsupported shown sentences, on the report part and the fresh set."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    parts = [("report_200", "held-out report part"), ("fresh_200", "fresh (no gate choice made on it)")]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    x, width = np.arange(len(parts)), 0.25
    for i, (version, label, colour) in enumerate(
        [("extractive", "extractive", "#888"), ("llm", "LLM, no gate", "#c66"), ("gated", "LLM, gated", "#4a8")]
    ):
        left.bar(x + (i - 1) * width, [100 * result[p][f"{version}_gold_in_shown_answer"] for p, _ in parts],
                 width, label=label, color=colour)  # fmt: skip
    right_bars = [("llm_unsupported_by_cited_evidence", "no gate: by its citations", "#c66"),
                  ("llm_unsupported_by_any_evidence", "no gate: by any evidence", "#e99"),
                  ("gated_unsupported_by_cited_evidence", "gated", "#4a8")]  # fmt: skip
    for i, (key, label, colour) in enumerate(right_bars):
        right.bar(x + (i - 1) * width, [100 * result[p][key] for p, _ in parts], width, label=label, color=colour)
    right.axhline(2, color="k", linestyle="--", linewidth=1, label="floor 2%")
    for axis, title in ((left, "gold string in the shown answer (% of questions)"),
                        (right, "shown sentences not supported (% , hand-labelled)")):  # fmt: skip
        axis.set_xticks(x, [name for _, name in parts])
        axis.set_title(title, fontsize=10)
        axis.legend(fontsize=8)
    fig.suptitle("SmolLM2-135M through the OpenAI-compatible path, standard mode, 200 NQ questions each")
    fig.tight_layout()
    fig.savefig(RESULTS / "output_gate.png", dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=200, help="Questions of the part to ask.")
    parser.add_argument(
        "--part", choices=PARTS, default="report",
        help="Held-out NQ part: report (223 questions) or calibration (148; calibrate_gate chose the NLI and "
        "answer-judge thresholds the gate uses on it); or fresh: NQ train-part questions in a fixed random "
        "order, on which no choice about the gate was made (the NLI model trained on claims and passages "
        "of that part).",
    )  # fmt: skip
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
