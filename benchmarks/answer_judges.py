"""Could any judge Cairn has tell a write-back that answers its question from one that does not?

    .venv/bin/python benchmarks/answer_judges.py [--writeback benchmarks/results/writeback.json]

Why: in the write-back benchmark, validation alone publishes NQ answers of which 13.8% hold no
gold answer. They are grounded: the extractive generator quotes evidence, so every sentence is
entailed. They are on topic: "when is the new tappan zee bridge going to be finished" answered
with "Tappan Zee Constructors began construction in 2013." Only a judge of whether the text
answers the question can stop them, and this script measures the candidates for that judge on
the benchmark's own candidates (no new runs of the pipeline).

Candidates: the distinct (question, answer) write-backs of the "cairn" runs whose answer has a
sentence that stands alone (validation judges relevance only on those), labelled right when the
answer holds a gold answer string (NQ) or was the right replay (HaluEval), as the benchmark
labels them. Each judge's ROC-AUC, right vs wrong, over all candidates and over those validation
published:
- evaluator, whole answer: the relevance evaluator on the standalone sentences joined (validation's
  check until 2026-11-23, when the answer judge replaced it);
- evaluator, best sentence: each standalone sentence scored alone, as a strip, the max;
- question-answer cosine: the embedder on the question and the standalone text;
- stacked: the gate's passage stack (models/calibration.json) over the two;
- grounding: the score validation recorded (NLI over the evidence).

- answer judge: validation's relevance check (judges.grounding.answer_relevance), the answer
  judge (models/answer) on each standalone sentence, the max (and the whole answer when it cites
  several sources). Also, over the candidates that pass validation's other checks as recorded
  (grounding, attribution, novelty), how many and what share of them are wrong, with and without
  the judge at CAIRN_ANSWER_THRESHOLD.

And the root cause, on the NQ report part (never trained or calibrated on): the evaluator and the
answer judge on each gold passage's sentences, those holding a gold answer vs those that do not
(what the extractive generator chooses between), as a ROC-AUC and as the share of questions whose
best-scored sentence holds the answer. Then both models on the answer judge's report part
(judges/answer_data.py: SQuAD 2.0, XQuAD and QNLI articles and NQ/HaluEval rows never trained or
calibrated on), with the share of answers and of other sentences the calibrated threshold accepts.

    .venv/bin/python benchmarks/answer_judges.py [--card]   # --card: models/answer's metrics and card

Writes benchmarks/results/answer_judges.json and answer_judges.png.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from _common import RESULTS, SHARED_DATA, django_setup, has_gold, roc_auc, shared_data_splits, write_result

JUDGES = ("evaluator_whole", "evaluator_best_sentence", "cosine", "stacked", "grounding", "answer_judge")


def candidates(writeback: dict, dataset: str) -> list[dict]:
    from judges.grounding import SHORT_ANSWER_WORDS, answer_sentences

    seen, found = set(), []
    for run in writeback["runs"]:
        if run["system"] != "cairn" or run["dataset"] != dataset:
            continue
        for c in run["candidate_scores"]:
            standalone = [s for s, _ in answer_sentences(c["answer"]) if len(s.split()) > SHORT_ANSWER_WORDS]
            if standalone and (c["question"], c["answer"]) not in seen:
                seen.add((c["question"], c["answer"]))
                found.append({**c, "standalone": standalone})
    return found


def judge(rows: list[dict]) -> dict:
    import numpy as np
    from django.conf import settings

    from corpus.embedder import cosine_similarities, get_embedder
    from judges.calibration import relevance_stacked
    from judges.grounding import answer_relevance, answer_sentences
    from judges.verifiers import get_relevance_model

    evaluator = get_relevance_model()
    vectors = get_embedder().embed([r["question"] for r in rows] + [" ".join(r["standalone"]) for r in rows])
    questions, answers = vectors[: len(rows)], vectors[len(rows) :]
    scores = {name: [] for name in JUDGES}
    for row, question, answer in zip(rows, questions, answers, strict=True):
        *by_sentence, whole = evaluator.score(
            row["question"], [*row["standalone"], " ".join(row["standalone"])]
        ).tolist()
        cosine = float(cosine_similarities([answer], question)[0])
        scores["evaluator_whole"].append(whole)
        scores["evaluator_best_sentence"].append(max(by_sentence))
        scores["cosine"].append(cosine)
        scores["stacked"].append(relevance_stacked(whole, cosine, settings.CAIRN_RELEVANCE_STACK))
        scores["grounding"].append(row["scores"]["grounding"] or 0.0)
        scores["answer_judge"].append(answer_relevance(row["question"], answer_sentences(row["answer"])))
    right = np.array([not r["hallucinated"] for r in rows])
    published = np.array([r["published"] for r in rows])
    result = {"candidates": len(rows), "right": int(right.sum()), "published": int(published.sum()),
              "published_right": int((right & published).sum())}  # fmt: skip
    others = np.array([(r["scores"]["grounding"] or 0.0) >= settings.CAIRN_GROUNDING_THRESHOLD
                       and (r["scores"]["attribution"] or 0.0) >= settings.CAIRN_ATTRIBUTION_THRESHOLD
                       and (r["scores"]["novelty"] or 0.0) >= settings.CAIRN_NOVELTY_THRESHOLD for r in rows])  # fmt: skip
    accepted = np.asarray(scores["answer_judge"]) >= settings.CAIRN_ANSWER_THRESHOLD
    for name, chosen in (("pass_other_checks", others), ("and_the_answer_judge", others & accepted)):
        result[name] = {"candidates": int(chosen.sum()),
                        "wrong_share": round(float(np.mean(~right[chosen])), 3) if chosen.any() else None}  # fmt: skip
    for name, values in scores.items():
        values = np.asarray(values, dtype=np.float64)
        for part, chosen in (("all", np.ones(len(rows), bool)), ("published", published)):
            positives, negatives = values[chosen & right], values[chosen & ~right]
            auc = roc_auc(positives, negatives) if len(positives) and len(negatives) else None
            result.setdefault(name, {})[part] = None if auc is None else round(auc, 3)
    return result


def same_passage(splits: dict, model) -> dict:
    """`model` (a RelevanceModel) on NQ report-part gold passages: answer sentences vs the rest."""
    import numpy as np

    from corpus.chunking import split_sentences
    from judges.grounding import SHORT_ANSWER_WORDS
    from judges.nli_data import calibration_split
    from judges.relevance_data import nq_examples

    _, report = calibration_split(splits["nq"][1])
    positives, negatives, answer_first = [], [], []
    for example in nq_examples(report):
        sentences = [s for s in split_sentences(example.passage) if len(s.split()) > SHORT_ANSWER_WORDS]
        holding = [s for s in sentences if has_gold(s, example.answers)]
        others = [s for s in sentences if not has_gold(s, example.answers)]
        if not holding or not others:
            continue
        scores = model.score(example.question, holding + others)
        positives += list(scores[: len(holding)])
        negatives += list(scores[len(holding) :])
        answer_first.append(max(scores[: len(holding)]) > max(scores[len(holding) :]))
    return {
        "questions": len(answer_first), "answer_sentences": len(positives), "other_sentences": len(negatives),
        "roc_auc": round(roc_auc(np.array(positives), np.array(negatives)), 3),
        "answer_sentence_scored_first": round(float(np.mean(answer_first)), 3),
    }  # fmt: skip


HELD_OUT_PARTS = {
    "qnli_squad_xquad": ("qnli", "squad2", "squad2-unanswerable", "xquad"),
    "qnli": ("qnli",),
    "squad2": ("squad2", "squad2-unanswerable"),
    "xquad": ("xquad",),
    "nq_gold_passages": ("nq",),
    "halueval_knowledge": ("halueval",),
}


def held_out_pairs(splits: dict, models: dict) -> dict:
    """Each model on the report part of the answer judge's held-out pairs (judges/answer_data.py:
    SQuAD/XQuAD/QNLI articles and NQ/HaluEval rows never trained on, nor calibrated on): ROC-AUC,
    accuracy at 0.5, and at the calibrated threshold the share of answers and of other sentences
    accepted, per part."""
    import numpy as np
    from django.conf import settings

    from judges.answer_data import answer_judge_sets
    from judges.relevance_data import score_pairs

    pairs = answer_judge_sets(SHARED_DATA, splits)["report"]
    labels = np.array([p.label for p in pairs])
    sources = np.array([p.source for p in pairs])
    result = {"pairs": len(pairs)}
    for name, model in models.items():
        scores = score_pairs(model, pairs)
        for part, members in HELD_OUT_PARTS.items():
            chosen = np.isin(sources, members)
            positives, negatives = scores[chosen & (labels == 1)], scores[chosen & (labels == 0)]
            figures = {
                "roc_auc": round(roc_auc(positives, negatives), 3),
                "accuracy": round(float(np.mean((scores[chosen] > 0.5) == labels[chosen])), 3),
            }
            if name == "answer_judge" and settings.CAIRN_ANSWER_THRESHOLD is not None:
                figures["answers_accepted"] = round(float(np.mean(positives >= settings.CAIRN_ANSWER_THRESHOLD)), 3)
                figures["others_accepted"] = round(float(np.mean(negatives >= settings.CAIRN_ANSWER_THRESHOLD)), 3)
            result.setdefault(part, {"pairs": int(chosen.sum())})[name] = figures
    return result


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, dataset in zip(axes, ("nq", "halueval"), strict=True):
        found = result["judges"][dataset]
        for offset, part in ((-0.2, "all"), (0.2, "published")):
            values = [found[name][part] if found[name][part] is not None else float("nan") for name in JUDGES]
            ax.bar([i + offset for i in range(len(JUDGES))], values, width=0.4, label=f"{part} candidates")
        ax.axhline(0.5, color="grey", linestyle="--", linewidth=1)
        ax.set_xticks(range(len(JUDGES)), [n.replace("_", "\n") for n in JUDGES], fontsize=8)
        ax.set_title(f"{dataset}: {found['right']} right of {found['candidates']} ({found['published']} published)")
    axes[0].set_ylabel("ROC-AUC, right vs wrong answer")
    axes[0].set_ylim(0, 1)
    axes[0].legend(fontsize=8)
    fig.suptitle("Judges of whether a write-back answers its question (0.5: chance)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writeback", type=Path, default=RESULTS / "writeback.json")
    parser.add_argument("--card", action="store_true", help="Write the answer judge's metrics.json and model card.")
    args = parser.parse_args()
    splits = shared_data_splits()  # before the judges run: a missing data folder stops here
    django_setup()
    from django.conf import settings

    from judges.model_card import write_model_card
    from judges.verifiers import get_answer_judge, get_relevance_model

    models = {"evaluator": get_relevance_model(), "answer_judge": get_answer_judge()}
    writeback = json.loads(args.writeback.read_text())
    result = {
        "writeback_results": os.path.relpath(args.writeback, RESULTS.parent.parent),
        "writeback_measured_at": writeback["measured_at"],
        "judges": {dataset: judge(candidates(writeback, dataset)) for dataset in ("nq", "halueval")},
        "same_passage_sentences_nq_report": {name: same_passage(splits, model) for name, model in models.items()},
        "answer_judge_held_out": held_out_pairs(splits, models),
    }
    if args.card:
        held_out, nq = result["answer_judge_held_out"], result["same_passage_sentences_nq_report"]["answer_judge"]
        metrics = {f"{part}_{measure}": held_out[part]["answer_judge"][measure]
                   for part in HELD_OUT_PARTS for measure in ("roc_auc", "accuracy")}  # fmt: skip
        metrics["nq_report_answer_sentence_scored_first"] = nq["answer_sentence_scored_first"]
        metrics["nq_report_same_passage_roc_auc"] = nq["roc_auc"]
        (settings.CAIRN_ANSWER_MODEL / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
        print(f"wrote {write_model_card(settings.CAIRN_ANSWER_MODEL, 'answer')}")
    path = write_result("answer_judges", result)
    plot(result, RESULTS / "answer_judges.png")
    print(json.dumps(result, indent=2))
    print(f"wrote {path} and {RESULTS / 'answer_judges.png'}")


if __name__ == "__main__":
    main()
