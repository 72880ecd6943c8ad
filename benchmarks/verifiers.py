"""Verifier quality and speed, on data the models were not trained on.

    .venv/bin/python benchmarks/verifiers.py [--nli DIR]

NLI accuracy on the held-out part of SNLI dev and of the MNLI sample (pipeline.nli_data's fixed
split), and on SICK train/trial and ANLI R1/R2 (non-commercial: evaluation only, never trained
on). Grounding on the held-out part of the HaluEval shared split: P(entailment) of the claim
"question + answer" against the knowledge passage, right vs hallucinated answers: ROC-AUC, and
the threshold that accepts at most 5% of hallucinated answers with the share of right answers it
accepts. Speed: pairs/s for (sentence, ~160-token chunk) and (question, ~50-token strip) pairs.
Writes benchmarks/results/verifiers.json.
"""

from __future__ import annotations

import argparse
import csv
import random
import time

from _common import SHARED_DATA, django_setup, write_result


def accuracy(model, pairs) -> float:
    import numpy as np

    probabilities = model.predict([(p.premise, p.hypothesis) for p in pairs])
    return float(np.mean(probabilities.argmax(axis=1) == np.array([p.label for p in pairs])))


def read_sick(path):
    from pipeline.nli_data import LABELS, Pair

    with path.open() as fh:
        return [
            Pair(r["sentence_A"], r["sentence_B"], LABELS.index(r["entailment_label"].strip().lower()), "sick")
            for r in csv.DictReader(fh, delimiter="\t")
        ]


def read_anli(path):
    from pipeline.nli_data import Pair

    labels = {"e": 0, "n": 1, "c": 2}
    with path.open() as fh:
        return [Pair(r["context"], r["statement"], labels[r["gold_label"]], "anli") for r in csv.DictReader(fh)]


def roc_auc(positives, negatives) -> float:
    import numpy as np

    scores = np.concatenate([positives, negatives])
    ranks = scores.argsort().argsort() + 1
    return float(
        (ranks[: len(positives)].sum() - len(positives) * (len(positives) + 1) / 2) / (len(positives) * len(negatives))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nli", help="NLI model directory (default: CAIRN_NLI_MODEL)")
    parser.add_argument("--sample", type=int, default=1000, help="Pairs per evaluation-only set (speed on 2 cores).")
    args = parser.parse_args()
    django_setup()
    import numpy as np
    from django.conf import settings

    from pipeline.nli_data import claim_from, shared_splits
    from pipeline.verifiers import CrossEncoderEntailment

    path = args.nli or str(settings.CAIRN_NLI_MODEL)
    model = CrossEncoderEntailment(path, batch_size=32, max_length=settings.CAIRN_VERIFIER_MAX_LENGTH)
    splits = shared_splits(SHARED_DATA)
    rng = random.Random(1)
    nli = {
        "snli_held_out": splits["snli"][1],
        "mnli_held_out": splits["mnli"][1],
        "sick_train_trial (eval only)": rng.sample(
            read_sick(SHARED_DATA / "nli" / "sick" / "SICK_train_trial.txt"), args.sample
        ),
        "anli_r1 (eval only)": read_anli(SHARED_DATA / "nli" / "anli_dev" / "ANLI_analysis_r1_dev.csv")[: args.sample],
        "anli_r2 (eval only)": read_anli(SHARED_DATA / "nli" / "anli_dev" / "ANLI_analysis_r2_dev.csv")[: args.sample],
    }
    result = {"model": path, "nli_accuracy": {}}
    for name, pairs in nli.items():
        result["nli_accuracy"][name] = accuracy(model, pairs)
        print(f"{name:30s} {len(pairs):5d} pairs  accuracy {result['nli_accuracy'][name]:.3f}")

    held = splits["halueval"][1]
    right = model.predict([(r["knowledge"], claim_from(r["question"], r["right_answer"])) for r in held])[:, 0]
    wrong = model.predict([(r["knowledge"], claim_from(r["question"], r["hallucinated_answer"])) for r in held])[:, 0]
    threshold = float(np.quantile(wrong, 0.95))
    result["grounding"] = {
        "rows": len(held),
        "roc_auc": roc_auc(right, wrong),
        "threshold_far_5pct": threshold,
        "hallucinated_accepted": float(np.mean(wrong > threshold)),
        "right_accepted": float(np.mean(right > threshold)),
    }
    print("grounding", {k: round(v, 3) for k, v in result["grounding"].items()})

    chunk = " ".join(["The committee reviewed the annual budget and approved funding for the new library wing."] * 12)
    strip = " ".join(["The committee approved funding for the new library wing."] * 5)
    model_tokens = model._model.tokenizer
    speed = {}
    for name, pair in (("sentence_vs_160_token_chunk", ("The library wing was funded.", chunk)),
                       ("question_vs_50_token_strip", ("Who funded the library wing?", strip))):  # fmt: skip
        tokens = len(model_tokens(*pair)["input_ids"])
        model.predict([pair] * 16)
        started = time.perf_counter()
        model.predict([pair] * 256)
        speed[name] = {"tokens": tokens, "pairs_per_s": 256 / (time.perf_counter() - started)}
        print(f"{name}: {tokens} tokens, {speed[name]['pairs_per_s']:.1f} pairs/s")
    result["speed"] = speed
    print(f"wrote {write_result('verifiers', result)}")


if __name__ == "__main__":
    main()
