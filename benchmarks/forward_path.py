"""The verified forward path on the NQ shared split: answer accuracy, the gate's action, latency.

    .venv/bin/python benchmarks/forward_path.py [--questions 200] [--records FILE]
    CAIRN_MODEL_RUNTIME=torch .venv/bin/python benchmarks/forward_path.py   # PyTorch's: forward_path_torch.json

The corpus is the split's gold Wikipedia passages in collection `nq` of the `cairn_bench`
database (ingested by retrieval_quality.py's code path; a re-run skips what is there). For the
report part of the held-out NQ questions (judges.nli_data's split: never trained on, and not
the part calibrate_gate chose the thresholds on), each asked through the service the API uses,
mode `fast`, top_k 8:
- accuracy: a gold answer string appears in the answer (and in answers that state one: "no
  passage states the answer" offers related sentences, counted apart);
- padding: answers citing a passage other than the gold one, and those whose other passage holds
  no gold answer string either (a second source stating the answer is not padding);
- action: CORRECT expected when the gold passage was retrieved; then the same question with the
  gold document retracted for that one query (a rolled-back transaction), INCORRECT expected;
- latency of the whole path, query embedding to recorded answer, per stage, and its ratio to
  plain retrieval (embed + retrieve);
- external search calls per 100 queries when the gold passage is present, against a loopback
  SearxNG-format server (what a deployment with a search provider would pay);
- a sweep of the upper relevance threshold: how often the action would be CORRECT with the gold
  passage present and with it removed;
- with it removed, how often an answer still comes back, and how often that answer lacks every
  gold answer string (the cost of a gate that trusts too easily).
Writes benchmarks/results/forward_path.json and forward_path.png; --records FILE also writes what
each question got (action, answer, cited passages; gold present, then removed), one JSON line
each, to compare two versions of the code answer for answer.
"""

from __future__ import annotations

import argparse
import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from _common import RESULTS, django_setup, has_gold, nq_corpus, nq_parts, nq_rows, percentile, write_result


def searx_stub() -> tuple[str, list[int]]:
    """A SearxNG-format server with no results; counts the calls."""
    calls = [0]

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            calls[0] += 1
            body = b'{"query": "", "results": []}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", calls


def candidate_scores(state, answers: list[str]) -> list[tuple[float, bool]]:
    # Unscored (None): the chunk lacks the question's key terms, and never counts for the action.
    return [(c.relevance or 0.0, has_gold(c.text, answers)) for c in state.candidates]


def correct(scores: list[tuple[float, bool]], t: float) -> bool:
    return any(relevance >= t for relevance, _ in scores)


def answered(scores: list[tuple[float, bool]], t: float) -> bool:
    return any(relevance >= t and has_answer for relevance, has_answer in scores)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=200, help="Report-part questions to ask (of 223).")
    parser.add_argument("--records", type=Path, help="Write each question's action, answer and citations here.")
    args = parser.parse_args()
    django_setup()
    from django.conf import settings
    from django.db import transaction
    from django.test import override_settings
    from tqdm import tqdm

    from corpus.citations import citation_numbers
    from corpus.models import Document
    from pipeline.generators import DISAGREE
    from pipeline.services import question_answer

    collection, user, gold = nq_corpus()
    rows = nq_rows()
    _train, _calibration, report = nq_parts(rows)
    questions = report[: args.questions]

    # Asked within the NQ collection: a public collection of the same passages (the demo corpus
    # other benchmarks load) would answer from its copies and read as another passage.
    def ask(index: int):
        return question_answer(
            user=user, question=rows[index]["question"], top_k=8, mode="fast", collections=[collection.slug]
        )

    ask(questions[0])  # load the models before timing
    searx_url, searx_calls = searx_stub()
    present = {"correct_answer": 0, "gold_retrieved": 0, "action_correct_given_gold": 0, "actions": Counter(),
               "stated": 0, "stated_correct": 0, "answered": 0, "other_passage": 0, "other_without_gold": 0,
               "sentences": 0, "disputed": 0}  # fmt: skip
    removed = {"actions": Counter(), "answered": 0, "answered_wrong": 0, "disputed": 0}
    # Per question, each candidate's (relevance, does its text hold a gold answer string): the action
    # rests on the highest relevance; a CORRECT is false when no chunk that cleared the threshold
    # holds the answer (with the gold passage removed, another passage often does).
    scored = {"present": [], "removed": []}
    records = []

    def record(index: int, state, gold_present: bool) -> None:
        cited = sorted(c.hit.chunk_id for c in state.candidates if c.n in state.generation.cited and c.hit)
        records.append({"question": rows[index]["question"], "gold_present": gold_present, "action": state.action,
                        "answer": state.generation.text, "cited_chunks": cited})  # fmt: skip

    timings: dict[str, list[float]] = {}
    with override_settings(CAIRN_SEARCH_PROVIDER="searxng", CAIRN_SEARCH_URL=searx_url):
        for index in tqdm(questions, desc="asking (gold present)", unit="q"):
            state = ask(index)
            record(index, state, gold_present=True)
            scored["present"].append(candidate_scores(state, rows[index]["answers"]))
            for stage, ms in state.timings_ms.items():
                timings.setdefault(stage, []).append(ms)
            answers = rows[index]["answers"]
            present["correct_answer"] += has_gold(state.generation.text, answers)
            present["stated"] += state.generation.found
            present["disputed"] += state.generation.text.startswith(DISAGREE)
            present["stated_correct"] += state.generation.found and has_gold(state.generation.text, answers)
            cited = [c for c in state.candidates if c.n in state.generation.cited]
            if cited:
                others = [c for c in cited if not (c.hit and c.hit.document_id == gold[index])]
                present["answered"] += 1
                present["other_passage"] += bool(others)
                present["other_without_gold"] += any(not has_gold(c.text, answers) for c in others)
                present["sentences"] += len(citation_numbers(state.generation.text))
            present["actions"][state.action] += 1
            if any(h.document_id == gold[index] for h in state.hits):
                present["gold_retrieved"] += 1
                present["action_correct_given_gold"] += state.action == "CORRECT"
        calls_present = searx_calls[0]
        for index in tqdm(questions, desc="asking (gold retracted)", unit="q"):
            with transaction.atomic():
                Document.objects.filter(id=gold[index]).update(status=Document.Status.RETRACTED)
                state = ask(index)
                record(index, state, gold_present=False)
                removed["actions"][state.action] += 1
                # What a user gets when the corpus lost the passage: an answer or "not found".
                removed["answered"] += state.generation.found
                removed["disputed"] += state.generation.text.startswith(DISAGREE)
                removed["answered_wrong"] += state.generation.found and not has_gold(
                    state.generation.text, rows[index]["answers"]
                )
                scored["removed"].append(candidate_scores(state, rows[index]["answers"]))
                transaction.set_rollback(True)

    n = len(questions)
    stages = [s for s in timings if s != "total"]
    plain = [a + b for a, b in zip(timings["embed_query"], timings["retrieve"], strict=True)]
    from corpus.devices import model_runtime, torch_device

    result = {
        "runtime": model_runtime(),  # CAIRN_MODEL_RUNTIME: PyTorch's figures and OpenVINO's are compared
        "device": torch_device(),  # CAIRN_DEVICE: a GPU host's figures are kept apart (forward_path_cuda.json)
        "questions": n,
        "mode": "fast",
        "top_k": 8,
        "answer_accuracy": present["correct_answer"] / n,
        "stated": present["stated"] / n,
        "stated_answer_accuracy": present["stated_correct"] / n,
        "sources_disagree": present["disputed"] / n,
        "sources_disagree_when_gold_removed": removed["disputed"] / n,
        "answers_citing_another_passage": present["other_passage"] / max(1, present["answered"]),
        "answers_citing_another_passage_without_gold": present["other_without_gold"] / max(1, present["answered"]),
        "sentences_per_answer": present["sentences"] / max(1, present["answered"]),
        "gold_retrieved": present["gold_retrieved"] / n,
        "action_correct_when_gold_retrieved": present["action_correct_given_gold"] / max(1, present["gold_retrieved"]),
        "actions_gold_present": dict(present["actions"]),
        "action_incorrect_when_gold_removed": removed["actions"]["INCORRECT"] / n,
        "answered_when_gold_removed": removed["answered"] / n,
        "answered_without_gold_string_when_gold_removed": removed["answered_wrong"] / n,
        "actions_gold_removed": dict(removed["actions"]),
        "external_calls_per_100_gold_present": 100 * calls_present / n,
        "relevance_upper": settings.CAIRN_RELEVANCE_UPPER,
        # Were CAIRN_RELEVANCE_UPPER t: share of questions CORRECT with the gold passage present and
        # with it removed, and the false CORRECTs among them (no chunk at or above t holds a gold
        # answer string). The calibrated t is among them.
        "upper_threshold_sweep": [
            {
                "upper": t,
                "correct_gold_present": sum(correct(c, t) for c in scored["present"]) / n,
                "correct_gold_removed": sum(correct(c, t) for c in scored["removed"]) / n,
                "false_correct_gold_present": sum(correct(c, t) and not answered(c, t) for c in scored["present"]) / n,
                "false_correct_gold_removed": sum(correct(c, t) and not answered(c, t) for c in scored["removed"]) / n,
            }
            for t in sorted({0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, round(settings.CAIRN_RELEVANCE_UPPER, 3)})
        ],  # fmt: skip
        "latency_ms": {
            "total_p50": percentile(timings["total"], 50),
            "total_p95": percentile(timings["total"], 95),
            "plain_retrieval_p50": percentile(plain, 50),
            "ratio_to_plain_retrieval_p50": percentile(timings["total"], 50) / percentile(plain, 50),
            "per_stage_p50": {s: percentile(timings[s], 50) for s in stages},
            "per_stage_p95": {s: percentile(timings[s], 95) for s in stages},
        },
    }
    print({k: v for k, v in result.items() if k not in ("latency_ms", "upper_threshold_sweep")})
    for row in result["upper_threshold_sweep"]:
        print(row)
    print(result["latency_ms"])
    # The shipped runtime's figures in forward_path.json; PyTorch's on the CPU and a GPU's apart.
    name = {"openvino": "forward_path", "torch": "forward_path_torch"}[result["runtime"]]
    name = name if result["device"] == "cpu" else f"forward_path_{result['device']}"
    if name == "forward_path":
        plot(result, stages)
    print(f"wrote {write_result(name, result)}")
    if args.records:
        args.records.write_text("".join(json.dumps(r) + "\n" for r in records))
        print(f"wrote {args.records}")


def plot(result: dict, stages: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right, sweep) = plt.subplots(1, 3, figsize=(16, 4))
    bottom = 0.0
    for stage in stages:
        value = result["latency_ms"]["per_stage_p50"][stage]
        left.bar(["fast path p50"], [value], bottom=bottom, label=f"{stage} {value:.0f} ms")
        bottom += value
    left.axhline(500, color="red", linestyle="--", label="floor p50 500 ms")
    left.set_ylabel("ms")
    left.legend(fontsize=8)
    left.set_title(f"Latency per stage (p95 total {result['latency_ms']['total_p95']:.0f} ms)")
    names = ["answer accuracy", "CORRECT | gold retrieved", "INCORRECT | gold removed"]
    values = [result["answer_accuracy"], result["action_correct_when_gold_retrieved"],
              result["action_incorrect_when_gold_removed"]]  # fmt: skip
    right.barh(names, values)
    right.set_xlim(0, 1)
    right.set_title(f"NQ held-out, {result['questions']} questions, mode fast")
    rows = result["upper_threshold_sweep"]
    sweep.plot([r["upper"] for r in rows], [r["correct_gold_present"] for r in rows], marker="o", label="gold present")
    sweep.plot([r["upper"] for r in rows], [r["correct_gold_removed"] for r in rows], marker="o", label="gold removed")
    for key, label in (("false_correct_gold_present", "false CORRECT, gold present"),
                       ("false_correct_gold_removed", "false CORRECT, gold removed")):  # fmt: skip
        sweep.plot([r["upper"] for r in rows], [r[key] for r in rows], linestyle="--", marker=".", label=label)
    sweep.axvline(result["relevance_upper"], color="gray", linestyle=":", label="calibrated")
    sweep.set_xlabel("upper relevance threshold")
    sweep.set_ylabel("share of questions CORRECT")
    sweep.legend(fontsize=8)
    sweep.set_title("What the CRAG action would say (false: no chunk above t holds the answer)")
    fig.tight_layout()
    fig.savefig(RESULTS / "forward_path.png", dpi=110)


if __name__ == "__main__":
    main()
