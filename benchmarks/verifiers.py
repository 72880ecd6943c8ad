"""Verifier quality and speed, on data the models were not trained on.

    .venv/bin/python benchmarks/verifiers.py [--nli DIR] [--relevance DIR] [--card]

NLI accuracy on the held-out part of SNLI dev and of the MNLI sample (judges.nli_data's fixed
split), and on SICK train/trial and ANLI R1/R2 (non-commercial: evaluation only, never trained
on). Grounding on the report part of the HaluEval held-out split: P(entailment) of the claim
"question + answer" against the knowledge passage, right vs hallucinated answers: ROC-AUC, and
at the calibrated threshold (CAIRN_GROUNDING_THRESHOLD, chosen by calibrate_gate on the other
part) the share of each accepted. Relevance: accuracy at 0.5 on the report part of NQ and
HaluEval questions, gold passage vs hard negatives from Cairn's hybrid retrieval, for the
evaluator alone, the retrieval's similarity alone and the two stacked as the gate grades
passages (CAIRN_RELEVANCE_STACK, fitted by calibrate_gate on the calibration part). Speed: pairs/s
for (sentence, ~160-token chunk) and (question, ~50-token strip), in the dtype Cairn runs.
Writes benchmarks/results/verifiers.json (+ .png); --card also writes each model's metrics.json
and model card.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import time
from pathlib import Path

from _common import RESULTS, django_setup, roc_auc, shared, shared_data_splits, write_result


def read_sick(path):
    from judges.nli_data import LABELS, Pair

    with path.open() as fh:
        return [
            Pair(r["sentence_A"], r["sentence_B"], LABELS.index(r["entailment_label"].strip().lower()), "sick")
            for r in csv.DictReader(fh, delimiter="\t")
        ]


def read_anli(path):
    from judges.nli_data import Pair

    labels = {"e": 0, "n": 1, "c": 2}
    with path.open() as fh:
        return [Pair(r["context"], r["statement"], labels[r["gold_label"]], "anli") for r in csv.DictReader(fh)]


def pairs_per_second(predict, pair, tokens: int, repeats: int = 7) -> dict:
    """Median of `repeats` timed calls of 256 pairs: this VM's speed drifts by tens of percent."""
    import statistics

    predict([pair] * 16)
    rates = []
    for _ in range(repeats):
        started = time.perf_counter()
        predict([pair] * 256)
        rates.append(256 / (time.perf_counter() - started))
    return {"tokens": tokens, "pairs_per_s": statistics.median(rates), "min": min(rates), "max": max(rates)}


def evaluate_nli(model, splits, sample: int) -> dict:
    import numpy as np

    from judges.nli_data import calibration_split, claim_from

    rng = random.Random(1)
    sets = {
        "snli_held_out": splits["snli"][1],
        "mnli_held_out": splits["mnli"][1],
        "sick_train_trial_eval_only": rng.sample(read_sick(shared("nli", "sick", "SICK_train_trial.txt")), sample),
        "anli_r1_eval_only": read_anli(shared("nli", "anli_dev", "ANLI_analysis_r1_dev.csv"))[:sample],
        "anli_r2_eval_only": read_anli(shared("nli", "anli_dev", "ANLI_analysis_r2_dev.csv"))[:sample],
    }
    metrics = {}
    for name, pairs in sets.items():
        probabilities = model.predict([(p.premise, p.hypothesis) for p in pairs])
        metrics[f"accuracy_{name}"] = float(np.mean(probabilities.argmax(axis=1) == np.array([p.label for p in pairs])))
        print(f"{name:30s} {len(pairs):5d} pairs  accuracy {metrics[f'accuracy_{name}']:.3f}")

    from django.conf import settings

    _calibration, rows = calibration_split(splits["halueval"][1])
    right = model.predict([(r["knowledge"], claim_from(r["question"], r["right_answer"])) for r in rows])[:, 0]
    wrong = model.predict([(r["knowledge"], claim_from(r["question"], r["hallucinated_answer"])) for r in rows])[:, 0]
    threshold = settings.CAIRN_GROUNDING_THRESHOLD
    metrics |= {
        "grounding_rows": len(rows),
        "grounding_roc_auc": roc_auc(right, wrong),
        "grounding_threshold": threshold,
        "grounding_hallucinated_accepted": float(np.mean(wrong > threshold)),
        "grounding_right_accepted": float(np.mean(right > threshold)),
    }
    print("grounding", {k: round(v, 3) for k, v in metrics.items() if k.startswith("grounding")})
    return metrics


def evaluate_relevance(model, splits) -> dict:
    import numpy as np

    from judges.relevance_data import score_pairs, shared_relevance_sets, tqdm_progress

    pairs = shared_relevance_sets(splits, progress=tqdm_progress())["report"]
    scores = score_pairs(model, pairs)
    labels = np.array([p.label for p in pairs])
    kinds = np.array([p.kind for p in pairs])
    metrics = {"relevance_pairs": len(pairs)}
    for kind in ("passage", "strip"):
        chosen = kinds == kind
        metrics[f"relevance_accuracy_{kind}"] = float(np.mean((scores[chosen] > 0.5) == labels[chosen]))
        metrics[f"relevance_roc_auc_{kind}"] = roc_auc(scores[chosen & (labels == 1)], scores[chosen & (labels == 0)])
    metrics["relevance_accuracy_all"] = float(np.mean((scores > 0.5) == labels))
    # What the gate grades passages by: the evaluator stacked with the retrieval's similarity
    # (fitted by calibrate_gate on the calibration part), and the similarity alone.
    from django.conf import settings

    from judges.calibration import relevance_stacked

    passages = kinds == "passage"
    similarity = np.array([p.similarity if p.kind == "passage" else np.nan for p in pairs])
    positive, negative = passages & (labels == 1), passages & (labels == 0)
    metrics["relevance_roc_auc_passage_similarity"] = roc_auc(similarity[positive], similarity[negative])
    if settings.CAIRN_RELEVANCE_STACK:
        stacked = np.array([relevance_stacked(float(e), float(s), settings.CAIRN_RELEVANCE_STACK) if k else np.nan
                            for e, s, k in zip(scores, similarity, passages)])  # fmt: skip
        metrics["relevance_roc_auc_passage_stacked"] = roc_auc(stacked[positive], stacked[negative])
        metrics["relevance_accuracy_passage_stacked"] = float(np.mean((stacked[passages] > 0.5) == labels[passages]))
    print("relevance", {k: round(v, 3) for k, v in metrics.items()})
    return metrics


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    floors = {"accuracy_snli_held_out": 0.80, "accuracy_mnli_held_out": 0.60, "grounding_roc_auc": 0.85,
              "grounding_right_accepted": 0.50, "relevance_accuracy_passage": 0.85}  # fmt: skip
    names = [n for n in floors if n in result["metrics"]] + [n for n in result["metrics"] if "eval_only" in n]
    values = [result["metrics"][n] for n in names]
    left.barh(names, values, color=["tab:blue" if n in floors else "tab:gray" for n in names])
    for i, name in enumerate(names):
        if name in floors:
            left.plot([floors[name]] * 2, [i - 0.4, i + 0.4], color="red")
    left.set_xlim(0, 1)
    left.set_title("Quality on held-out data (red: floor)")
    speeds = result["speed"]
    right.bar(list(speeds), [s["pairs_per_s"] for s in speeds.values()])
    for i, floor in enumerate(s["floor"] for s in speeds.values()):
        right.plot([i - 0.4, i + 0.4], [floor] * 2, color="red")
    right.set_title(f"Pairs/s on this machine ({result['dtype']})")
    right.tick_params(axis="x", labelrotation=15)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nli", help="NLI model directory (default: CAIRN_NLI_MODEL)")
    parser.add_argument("--relevance", help="Relevance model directory (default: CAIRN_RELEVANCE_MODEL)")
    parser.add_argument("--sample", type=int, default=1000, help="Pairs per evaluation-only set.")
    parser.add_argument("--card", action="store_true", help="Write metrics.json and README.md into the model dirs.")
    args = parser.parse_args()
    django_setup()
    from django.conf import settings

    from judges.model_card import write_model_card
    from judges.verifiers import CrossEncoderEntailment, CrossEncoderRelevance

    splits = shared_data_splits()
    options = {
        "batch_size": settings.CAIRN_VERIFIER_BATCH_SIZE,
        "batch_tokens": settings.CAIRN_VERIFIER_BATCH_TOKENS,
        "max_length": settings.CAIRN_VERIFIER_MAX_LENGTH,
        "dtype": settings.CAIRN_VERIFIER_DTYPE,
    }
    paths = {
        "nli": args.nli or str(settings.CAIRN_NLI_MODEL),
        "relevance": args.relevance or str(settings.CAIRN_RELEVANCE_MODEL),
    }
    nli = CrossEncoderEntailment(paths["nli"], **options)
    relevance = CrossEncoderRelevance(paths["relevance"], **options)
    per_model = {"nli": evaluate_nli(nli, splits, args.sample), "relevance": evaluate_relevance(relevance, splits)}

    chunk = " ".join(["The committee reviewed the annual budget and approved funding for the new library wing."] * 12)
    strip = " ".join(["The committee approved funding for the new library wing."] * 5)
    sentence_pair = ("The library wing was funded.", chunk)
    question_pair = ("Who funded the library wing?", strip)
    speed = {
        "nli_sentence_vs_160_token_chunk": pairs_per_second(nli.predict, sentence_pair, nli._model.tokens(sentence_pair)) | {"floor": 60},
        "relevance_question_vs_50_token_strip": pairs_per_second(
            lambda pairs: relevance.score(pairs[0][0], [p for _, p in pairs]), question_pair, relevance._model.tokens(question_pair)
        ) | {"floor": 200},
    }  # fmt: skip
    for name, figures in speed.items():
        print(f"{name}: {figures['tokens']} tokens, {figures['pairs_per_s']:.1f} pairs/s")
    per_model["nli"]["pairs_per_s_sentence_vs_160_token_chunk"] = speed["nli_sentence_vs_160_token_chunk"][
        "pairs_per_s"
    ]
    per_model["relevance"]["pairs_per_s_question_vs_50_token_strip"] = speed["relevance_question_vs_50_token_strip"][
        "pairs_per_s"
    ]

    dtype = nli._model.dtype  # as it runs on this device
    result = {
        "models": paths,
        "dtype": dtype,
        "runtime": type(nli._model).__name__.removesuffix("CrossEncoder"),
        "metrics": per_model["nli"] | per_model["relevance"],
        "speed": speed,
    }
    plot(result, RESULTS / "verifiers.png")
    print(f"wrote {write_result('verifiers', result)} and {RESULTS / 'verifiers.png'}")
    if args.card:
        for kind, path in paths.items():
            (Path(path) / "metrics.json").write_text(json.dumps({"dtype": dtype} | per_model[kind], indent=2) + "\n")
            print(f"wrote {write_model_card(Path(path), kind)}")


if __name__ == "__main__":
    main()
