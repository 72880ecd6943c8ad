"""Training and evaluation data for the answer judge: does this sentence state an answer to this
question? Hard negatives from the same passage are the point: the relevance evaluator learned
topic from other passages' sentences and tells a gold passage's answer sentence from its other
sentences with ROC-AUC 0.645 (benchmarks/answer_judges.py).

Sources (../shared/data, licences in their folders):
- SQuAD 2.0 (half of dev) and XQuAD (en): the sentence holding an answer's start is a positive, the
  paragraph's other sentences negatives (the three sharing most words with the question), and an
  unanswerable question's paragraph gives two negatives;
- QNLI (dev): its (question, sentence) pairs as labelled;
- NQ and HaluEval training parts (nli_data.shared_splits): the gold passage's sentences naming a gold
  answer are positives, its other sentences negatives.

SQuAD, XQuAD and QNLI come from the same Wikipedia articles, so they are split together by article,
never by row (a QNLI question found in SQuAD or XQuAD takes its article; the others, whose article
is unknown, are grouped by question). NQ and HaluEval keep nli_data's split: their held-out parts are
never trained on here either.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from corpus.chunking import split_sentences
from judges.nli_data import SPLIT_SEED, calibration_split, shared_path
from judges.relevance_data import halueval_examples, mentions_answer, nq_examples, word_set

ANSWER_LABELS = ("other", "answer")
HELD_OUT_ARTICLES = 0.3  # share of SQuAD/XQuAD/QNLI articles never trained on
HARD_NEGATIVES = 3


@dataclass(frozen=True)
class AnswerPair:
    question: str
    text: str  # the sentence (named like RelevancePair's, so relevance_data.score_pairs scores both)
    label: int  # 1: states an answer to the question
    source: str
    group: str  # the article (or passage) it comes from: the unit of the train/held-out split


def _spans(text: str) -> list[tuple[int, int, str]]:
    """Each sentence of `text` with its character span."""
    spans, cursor = [], 0
    for sentence in split_sentences(text):
        start = text.find(sentence, cursor)
        if start < 0:
            continue
        spans.append((start, start + len(sentence), sentence))
        cursor = start + len(sentence)
    return spans


def _hardest(question: str, sentences: Sequence[str], k: int) -> list[str]:
    asked = word_set(question)
    return sorted(sentences, key=lambda s: -len(asked & word_set(s)))[:k]


def squad_pairs(path: Path, source: str) -> tuple[list[AnswerPair], dict[str, str]]:
    """Pairs from a SQuAD-format file, and each question's article (to place QNLI rows)."""
    pairs, article_of = [], {}
    for article in json.loads(path.read_text())["data"]:
        group = f"article:{article['title']}"
        for paragraph in article["paragraphs"]:
            spans = _spans(paragraph["context"])
            for qa in paragraph["qas"]:
                question = qa["question"].strip()
                article_of[question] = group
                if qa.get("is_impossible") or not qa["answers"]:
                    rng = random.Random(qa["id"])
                    negatives = rng.sample([s for _, _, s in spans], min(2, len(spans)))
                    pairs += [AnswerPair(question, s, 0, f"{source}-unanswerable", group) for s in negatives]
                    continue
                start = qa["answers"][0]["answer_start"]
                answer = next((s for a, b, s in spans if a <= start < b), None)
                if answer is None:
                    continue
                others = [s for _, _, s in spans if s != answer]
                pairs.append(AnswerPair(question, answer, 1, source, group))
                pairs += [AnswerPair(question, s, 0, source, group) for s in _hardest(question, others, HARD_NEGATIVES)]
    return pairs, article_of


def qnli_pairs(path: Path, article_of: dict[str, str]) -> list[AnswerPair]:
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [
        AnswerPair(
            r["question"].strip(),
            r["sentence"].strip(),
            int(r["label"] == "entailment"),
            "qnli",
            article_of.get(r["question"].strip(), f"qnli:{r['question'].strip()}"),
        )  # fmt: skip
        for r in rows
    ]


def gold_passage_pairs(examples, source: str) -> list[AnswerPair]:
    """The gold passage's sentences: those naming a gold answer are positives, the others (the three
    sharing most words with the question) negatives. Passages where no sentence names an answer
    teach nothing and are skipped."""
    pairs = []
    for example in examples:
        sentences = split_sentences(example.passage)
        answers = [s for s in sentences if mentions_answer(s, example.answers)]
        if not answers:
            continue
        others = [s for s in sentences if s not in answers]
        group = f"{source}:{example.question}"
        pairs += [AnswerPair(example.question, s, 1, source, group) for s in answers]
        pairs += [
            AnswerPair(example.question, s, 0, source, group)
            for s in _hardest(example.question, others, HARD_NEGATIVES)
        ]
    return pairs


def _share(group: str, salt: str = "") -> float:
    """Where `group` falls in [0, 1), fixed by SPLIT_SEED (and `salt`, for a second, independent split)."""
    key = f"{SPLIT_SEED}:{salt}:{group}" if salt else f"{SPLIT_SEED}:{group}"
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") / 2**32


def answer_judge_sets(data_dir: Path, splits: dict[str, tuple[list, list]]) -> dict[str, list[AnswerPair]]:
    """{"train", "calibration", "report"}: SQuAD/XQuAD/QNLI by article (HELD_OUT_ARTICLES of them
    held out, and those split again by article, 40% to the report part), NQ/HaluEval by nli_data's
    split and calibration_split, so calibrate_gate picks the judge's threshold on one part and the
    benchmark reports on the other. `splits` is nli_data.shared_splits(data_dir)."""
    squad, article_of = squad_pairs(shared_path(data_dir, "qa_extra", "squad_v2_dev_half", "dev-v2.0.json"), "squad2")
    xquad, xquad_articles = squad_pairs(shared_path(data_dir, "qa_extra", "xquad_en", "xquad.en.json"), "xquad")
    article_of.update(xquad_articles)
    qnli = qnli_pairs(shared_path(data_dir, "qa_extra", "qnli_dev", "dev.tsv"), article_of)
    sets: dict[str, list[AnswerPair]] = {"train": [], "calibration": [], "report": []}
    for pair in squad + xquad + qnli:
        if _share(pair.group) >= HELD_OUT_ARTICLES:
            sets["train"].append(pair)
        else:
            sets["report" if _share(pair.group, "report") < 0.4 else "calibration"].append(pair)
    for name, to_examples in (("nq", nq_examples), ("halueval", halueval_examples)):
        train, held_out = splits[name]
        calibration, report = calibration_split(held_out)
        sets["train"] += gold_passage_pairs(to_examples(train), name)
        sets["calibration"] += gold_passage_pairs(to_examples(calibration), name)
        sets["report"] += gold_passage_pairs(to_examples(report), name)
    return sets
