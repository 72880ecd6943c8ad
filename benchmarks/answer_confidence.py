"""The answer's confidence, trained and measured leaving one manual out, and shipped.

    .venv/bin/python benchmarks/answer_replay.py capture --set python [--set ...]   # once per set
    .venv/bin/python benchmarks/answer_confidence.py [--ship]

Reads the evidence answer_replay.py stored for the nine manuals of docs_qa.py, the calibration part
of held-out NQ ("nq") and its report part ("nq_report"), and replays the real ExtractiveGenerator on
it (the stored answer-judge scores stand in for the model: no model runs), three ways:
- "today": as shipped before the confidence (no threshold, each sentence stated even when another
  passage's sentence says the same): the baseline every figure is compared with;
- "stated": the answer Cairn would state with the threshold at 0, and its features
  (pipeline/confidence.answer_features): a sample, right when a gold string is in it (never for a
  question the manual cannot answer);
- "pointed": the "where to look" passages it would show instead, and whether one holds a gold string.

Leave one manual out: for each manual, the calibrator is fitted on the other eight and NQ's
calibration part, its threshold chosen on their out-of-fold probabilities
(judges/confidence_training.py: the lowest at which they reach TARGET_PRECISION), and both applied
to the manual left out. Reported per manual, against today on the same questions: stated answers
right and wrong, precision, coverage, the gold string stated or in the "where to look" passages,
unanswerable questions never answered; the headline is the worst and mean over left-out manuals.
NQ's report part is judged by the model fitted on everything (it is in no fit). Writes
benchmarks/results/answer_confidence.json and .png (risk against coverage per left-out manual).

--ship fits on every set but nq_report and writes models/confidence/model.json (weights and
threshold), its model card README.md and calibration.png.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import contextmanager
from datetime import UTC, datetime

import numpy as np

from _common import RESULTS, ROOT, django_setup, has_gold, write_result
from answer_replay import cache_path, judged_by, stored_evidence

MANUALS = ("python", "apache", "nodejs", "git", "sqlite", "bash", "postfix", "rust", "django")
TRAINING = (*MANUALS, "nq")
MODEL_DIR = ROOT / "models" / "confidence"


@contextmanager
def today():
    """The extractive answer as shipped before the confidence: every sentence it chose stated."""
    from pipeline import generators

    original = generators.said_once
    generators.said_once = lambda chosen: (chosen, {})
    try:
        yield
    finally:
        generators.said_once = original


@contextmanager
def confidence_of(value: float):
    """Every answer's confidence set to `value`: what it would be stated or shown as at any model."""
    from pipeline import generators

    original = generators.answer_confidence
    generators.answer_confidence = lambda features: value
    try:
        yield
    finally:
        generators.answer_confidence = original


def replayed(record: dict) -> dict:
    """One question replayed: today's answer, the answer it would state and its features, and the
    passages it would point to."""
    from django.test import override_settings

    from pipeline.generators import ExtractiveGenerator

    q = record["question"]
    gold = q["gold"] if q["answerable"] else []
    if "evidence" not in record:  # no verified evidence, or passages that disagree: no generator ran
        return {"today": (record["found"], has_gold(record["answer"], gold)), "stated": None,
                "pointed": has_gold(record["answer"], gold)}  # fmt: skip
    evidence = stored_evidence(record)
    # The passages as the reader's cards show them (older captures: the strips the answer reads).
    by_n = {int(n): text for n, text in record.get("passages", {}).items()} or {
        e.n: " ".join((e.text, *e.sentences)) for e in evidence
    }
    with judged_by(record), override_settings(CAIRN_ANSWER_CONFIDENCE=0.5):
        with confidence_of(1.0):
            with today():
                before = ExtractiveGenerator().generate(q["question"], evidence)
            stated = ExtractiveGenerator().generate(q["question"], evidence)
        with confidence_of(0.0):  # nothing is sure enough: where to look
            pointing = ExtractiveGenerator().generate(q["question"], evidence)
    return {
        "today": (before.found, before.found and has_gold(before.text, gold)),
        "stated": {"features": stated.features, "right": has_gold(stated.text, gold)} if stated.found else None,
        "pointed": any(has_gold(by_n[n], gold) for n in pointing.cited),
    }


def load(names) -> dict[str, list[dict]]:
    from tqdm import tqdm

    missing = [n for n in names if not cache_path(n).exists()]
    if missing:
        sys.exit(f"no stored evidence for {', '.join(missing)}: run answer_replay.py capture --set NAME first")
    sets = {}
    for name in names:
        records = list(json.loads(cache_path(name).read_text()).values())
        sets[name] = [
            {"id": r["question"]["id"], "answerable": r["question"]["answerable"]} | replayed(r)
            for r in tqdm(records, desc=f"replaying {name}", unit="q", leave=False)
        ]
    return sets


def outcomes(rows: list[dict], scores: dict[str, float], threshold: float) -> dict:
    """Today's figures and the calibrated ones for one set, at `threshold`."""
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]

    def answered(r: dict) -> bool:
        return r["stated"] is not None and scores[r["id"]] >= threshold

    right = sum(answered(r) and r["stated"]["right"] for r in answerable)
    stated = sum(answered(r) for r in answerable)
    pointed = sum(not answered(r) and r["pointed"] for r in answerable)
    today_right = sum(r["today"][1] for r in answerable)
    today_stated = sum(r["today"][0] for r in answerable)
    return {
        "answerable": len(answerable),
        "today": {"stated": today_stated, "right": today_right, "wrong": today_stated - today_right,
                  "precision": today_right / max(1, today_stated),
                  "unanswerable_answered": sum(r["today"][0] for r in unanswerable)},
        "answered": stated, "right": right, "wrong": stated - right,
        "precision": right / stated if stated else None,
        "coverage": stated / max(1, len(answerable)),
        "gold_in_where_to_look": pointed,
        "gold_in_where_to_look_share": pointed / max(1, len(answerable) - stated),
        "gold_stated_or_pointed": (right + pointed) / max(1, len(answerable)),
        "unanswerable": len(unanswerable),
        "unanswerable_answered": sum(answered(r) for r in unanswerable),
    }  # fmt: skip


def with_floors(row: dict) -> dict:
    """The issue's floors for one left-out set, met or not."""
    today = row["today"]
    wrong_cut = 1 - row["wrong"] / today["wrong"] if today["wrong"] else 1.0
    right_kept = row["right"] / today["right"] if today["right"] else 1.0
    never = 1 - row["unanswerable_answered"] / row["unanswerable"] if row["unanswerable"] else 1.0
    return row | {"wrong_cut": wrong_cut, "right_kept": right_kept, "unanswerable_never_answered": never}


def samples_of(sets: dict[str, list[dict]], names) -> list:
    from judges.confidence_training import Sample

    return [Sample(name, r["stated"]["features"], r["stated"]["right"]) for name in names
            for r in sets[name] if r["stated"] is not None]  # fmt: skip


def risk_coverage(rows: list[dict], scores: dict[str, float]) -> list[tuple[float, float]]:
    """(coverage, share of stated answers wrong) over the answerable questions as the threshold
    falls (unanswerable ones are counted apart: never answered)."""
    stated = sorted((r for r in rows if r["stated"] is not None and r["answerable"]), key=lambda r: -scores[r["id"]])
    answerable = max(1, sum(r["answerable"] for r in rows))
    curve, right = [], 0
    for i, r in enumerate(stated, start=1):
        right += r["stated"]["right"]
        curve.append((i / answerable, 1 - right / i))
    return curve


def separation(rows: list[dict], scores: dict[str, float]) -> float | None:
    """ROC-AUC of the confidence between right and wrong answers it would state (None: one kind only)."""
    from sklearn.metrics import roc_auc_score

    stated = [r for r in rows if r["stated"]]
    right = [r["stated"]["right"] for r in stated]
    return float(roc_auc_score(right, [scores[r["id"]] for r in stated])) if 0 < sum(right) < len(right) else None


def leave_one_out(sets: dict[str, list[dict]]) -> dict:
    from judges.confidence_training import trained

    names = feature_names(sets)
    result, scores_all, curves = {}, {}, {}
    for held in MANUALS:
        train = samples_of(sets, [n for n in TRAINING if n != held])
        model, threshold = trained(train, names)
        scores = {r["id"]: model.probability(r["stated"]["features"]) for r in sets[held] if r["stated"]}
        scores_all[held] = scores
        result[held] = with_floors(outcomes(sets[held], scores, threshold)) | {
            "threshold": threshold,
            "roc_auc": separation(sets[held], scores),
        }
        curves[held] = risk_coverage(sets[held], scores)
    model, threshold = trained(samples_of(sets, TRAINING), names)
    report = {}
    if "nq_report" in sets:
        scores = {r["id"]: model.probability(r["stated"]["features"]) for r in sets["nq_report"] if r["stated"]}
        report = outcomes(sets["nq_report"], scores, threshold) | {"threshold": threshold}
        curves["nq_report"] = risk_coverage(sets["nq_report"], scores)
    return {"left_out": result, "nq_report": report, "curves": curves, "scores": scores_all,
            "features": names, "shipped": (model, threshold)}  # fmt: skip


def feature_names(sets: dict[str, list[dict]]) -> list[str]:
    first = next(r["stated"]["features"] for rows in sets.values() for r in rows if r["stated"])
    return sorted(first)


def summary(result: dict) -> dict:
    rows = result["left_out"]
    # A manual with no stated answer has no precision: it is counted apart, not as 0 or 1.
    precisions = [r["precision"] for r in rows.values() if r["precision"] is not None]
    return {
        "worst_precision": min(precisions, default=None),
        "mean_precision": float(np.mean(precisions)) if precisions else None,
        "manuals_with_no_stated_answer": [n for n, r in rows.items() if r["precision"] is None],
        "worst_wrong_cut": min(r["wrong_cut"] for r in rows.values()),
        "worst_right_kept": min(r["right_kept"] for r in rows.values()),
        "worst_gold_stated_or_pointed": min(r["gold_stated_or_pointed"] for r in rows.values()),
        "mean_gold_stated_or_pointed": float(np.mean([r["gold_stated_or_pointed"] for r in rows.values()])),
        "pooled_gold_stated_or_pointed": sum(r["gold_stated_or_pointed"] * r["answerable"] for r in rows.values())
        / sum(r["answerable"] for r in rows.values()),
        "unanswerable_never_answered": 1
        - sum(r["unanswerable_answered"] for r in rows.values()) / sum(r["unanswerable"] for r in rows.values()),
        "today_mean_precision": float(np.mean([r["today"]["precision"] for r in rows.values()])),
        "mean_roc_auc": float(np.mean([r["roc_auc"] for r in rows.values() if r["roc_auc"] is not None])),
        "mean_coverage": float(np.mean([r["coverage"] for r in rows.values()])),
    }


def plot(result: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = result["curves"]
    fig, axes = plt.subplots(2, 5, figsize=(16, 6.5), sharex=True, sharey=True)
    for ax, name in zip(axes.flat, [*MANUALS, "nq_report"], strict=False):
        if name not in curves:
            ax.set_visible(False)
            continue
        xs, ys = zip(*curves[name], strict=True) if curves[name] else ((), ())
        ax.plot(xs, ys, color="#4c72b0")
        row = result["left_out"].get(name) or result["nq_report"]
        if row.get("answered"):
            ax.scatter([row["coverage"]], [1 - row["precision"]], color="#c44e52", zorder=3, label="threshold")
        today = row["today"]
        ax.scatter([today["stated"] / max(1, row["answerable"])], [1 - today["precision"]], color="grey",
                   marker="x", zorder=3, label="today")  # fmt: skip
        ax.axhline(0.25, color="black", linestyle=":", linewidth=1)
        ax.set_title(name + (" (left out)" if name in MANUALS else " (never fitted on)"), fontsize=9)
        ax.set_ylim(0, 1)
    axes[0, 0].legend(fontsize=8, loc="upper left")
    fig.supxlabel("coverage: answerable questions with a stated answer")
    fig.supylabel("risk: stated answers without the gold string")
    fig.suptitle("Answer confidence, risk against coverage (dotted: 25% risk, the 75% precision floor)")
    fig.tight_layout()
    fig.savefig(RESULTS / "answer_confidence.png", dpi=110)


def ship(sets: dict[str, list[dict]], result: dict) -> None:
    """Fit on every training set, write the model, its card and its per-manual calibration plot."""
    from judges.confidence_training import TARGET_PRECISION, calibration_table, model_json

    samples = samples_of(sets, TRAINING)
    model, threshold = result["shipped"]  # fitted by leave_one_out on every training set
    left_out_tables = {}
    for held in MANUALS:
        scores = result["scores"][held]
        rows = [r for r in sets[held] if r["stated"]]
        left_out_tables[held] = calibration_table([scores[r["id"]] for r in rows], [r["stated"]["right"] for r in rows])
    counts = {n: sum(s.group == n for s in samples) for n in TRAINING}
    when = datetime.now(UTC).date().isoformat()
    MODEL_DIR.mkdir(parents=True, exist_ok=True)
    data = model_json(model, threshold, {
        "trained_on": counts, "trained_at": when, "target_precision": TARGET_PRECISION,
        "left_out_summary": summary(result), "calibration_left_out": left_out_tables,
    })  # fmt: skip
    (MODEL_DIR / "model.json").write_text(json.dumps(data, indent=1) + "\n")
    plot_calibration(left_out_tables)
    card(data, result)


def plot_calibration(tables: dict[str, list[dict]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 5))
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1)
    for name, table in tables.items():
        ax.plot([b["predicted"] for b in table], [b["observed"] for b in table], marker="o", markersize=3, label=name)
    ax.set_xlabel("confidence (each manual left out of the fit)")
    ax.set_ylabel("share of stated answers holding the gold string")
    ax.set_title("Answer confidence: calibration per left-out manual")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(MODEL_DIR / "calibration.png", dpi=110)


def card(data: dict, result: dict) -> None:
    from judges.confidence_training import REGULARISATION

    s = data["left_out_summary"]
    weights = sorted(zip(data["model"]["features"], data["model"]["weights"], strict=True), key=lambda p: -abs(p[1]))
    lines = [
        "# Cairn answer confidence",
        "",
        "P(the stated answer holds what was asked) for an extractive answer: pipeline/confidence.py computes the",
        "features and judges/confidence.py applies these weights; below `threshold` (CAIRN_ANSWER_CONFIDENCE) Cairn states no answer",
        "and shows where to look. Retrain with `benchmarks/answer_confidence.py --ship` after",
        "`benchmarks/answer_replay.py capture` for every set (a new manual: a docs_qa.py set and its questions).",
        "",
        "## Model",
        "",
        f"- Logistic regression (scikit-learn, C={REGULARISATION}) over {len(weights)} standardised features, "
        "chosen forward by the training manuals' out-of-fold log loss; "
        f"threshold {data['threshold']:.3f}, the lowest at which the training manuals' out-of-fold stated answers "
        f"are right {data['target_precision']:.0%} of the time.",
        f"- Trained {data['trained_at']} on the answers Cairn would state to the questions of nine manuals and the "
        "calibration part of held-out NQ (benchmarks/*_docs/questions.jsonl; labels: a gold string in the answer, "
        "never for an unanswerable question):",
        "",
        "| set | answers |",
        "|---|---|",
        *(f"| {n} | {c} |" for n, c in data["trained_on"].items()),
        "",
        "| feature | weight |",
        "|---|---|",
        *(f"| {n} | {w:+.3f} |" for n, w in weights),
        "",
        "## Left out (each manual judged by a model and threshold fitted without it)",
        "",
        "| manual | today right / wrong | left out right / wrong | precision | coverage | gold stated or pointed |",
        "|---|---|---|---|---|---|",
        *(
            f"| {n} | {r['today']['right']} / {r['today']['wrong']} | {r['right']} / {r['wrong']} | "
            f"{'–' if r['precision'] is None else format(r['precision'], '.0%')} | {r['coverage']:.0%} | "
            f"{r['gold_stated_or_pointed']:.0%} |"
            for n, r in result["left_out"].items()
        ),
        "",
        f"Mean precision {s['mean_precision']:.1%} (today {s['today_mean_precision']:.1%}), worst "
        f"{s['worst_precision']:.1%}; wrong answers cut by at least {s['worst_wrong_cut']:.0%} and right ones kept "
        f"at least {s['worst_right_kept']:.0%} on every manual; unanswerable questions never answered "
        f"{s['unanswerable_never_answered']:.1%}"
        + (
            f"; no answer stated at all on {', '.join(s['manuals_with_no_stated_answer'])}."
            if s["manuals_with_no_stated_answer"]
            else "."
        ),
        "",
        "![Calibration per left-out manual](calibration.png)",
        "",
        "## Limits",
        "",
        "- Trained on software manuals and Wikipedia passages in English; other kinds of documents shift it.",
        "- It judges the extractive answer only: an LLM's answer carries no confidence, and the output gate decides "
        "what of it is shown.",
        f"- It separates right from wrong answers weakly on a manual it never saw (ROC-AUC {s['mean_roc_auc']:.2f} on "
        "the mean over manuals left out): cutting most "
        'wrong answers also withholds most right ones, which the reader then finds under "where to look".',
        "- A gold string is a proxy for a right answer: a right answer worded otherwise counts as wrong.",
    ]
    (MODEL_DIR / "README.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ship", action="store_true", help="Write models/confidence/ from every set.")
    args = parser.parse_args()
    os.environ.setdefault("CAIRN_LOG_LEVEL", "WARNING")
    django_setup()
    names = [*TRAINING, *(["nq_report"] if cache_path("nq_report").exists() else [])]
    sets = load(names)
    result = leave_one_out(sets)
    result["summary"] = summary(result)
    result["date"] = datetime.now(UTC).date().isoformat()
    written = {k: v for k, v in result.items() if k not in ("scores", "shipped")}
    print(write_result("answer_confidence", written | {"shipped_threshold": result["shipped"][1]}))
    print(json.dumps(result["summary"], indent=1))
    for name, row in result["left_out"].items():
        t = row["today"]
        print(f"{name:8} today {t['right']:3}/{t['wrong']:3}  left out {row['right']:3}/{row['wrong']:3}  "
              f"prec {row['precision'] or 0:.2f}  cov {row['coverage']:.2f}  pointed {row['gold_stated_or_pointed']:.2f}  "
              f"unans {row['unanswerable_answered']}/{row['unanswerable']}")  # fmt: skip
    if result["nq_report"]:
        print("nq_report", json.dumps(result["nq_report"]))
    plot(result)
    if args.ship:
        ship(sets, result)


if __name__ == "__main__":
    main()
