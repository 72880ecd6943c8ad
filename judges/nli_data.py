"""Training and evaluation pairs for the verifier models. Pure functions over plain data.

Labels are indices into LABELS. Three sources:
- published NLI pairs (SNLI dev, the MNLI sample), read by `read_snli` / `read_mnli`;
- pairs derived from question answering: a passage entails the claim "question + right answer"
  and contradicts the same claim with a wrong answer (`qa_pairs`);
- synthetic pairs from any corpus in the manner of FactCC (`synthetic_pairs`): a sentence of a
  passage is entailed by it; the sentence with a number, date, entity or negation swapped is
  contradicted; a sentence from an unrelated passage is neutral. This is how a deployment adapts
  the verifier to its own documents (`train_nli --from-corpus SLUG`).
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from corpus.chunking import split_sentences

LABELS = ("entailment", "neutral", "contradiction")
ENTAILMENT, NEUTRAL, CONTRADICTION = range(3)


@dataclass(frozen=True)
class Pair:
    premise: str
    hypothesis: str
    label: int
    source: str  # which generator or data set made it: keeps train/report splits auditable


def read_snli(folder: Path) -> list[Pair]:
    """The e-SNLI copy of SNLI dev: s1.dev, s2.dev, labels.dev, line by line (PTB-tokenised)."""
    premises = (folder / "s1.dev").read_text().splitlines()
    hypotheses = (folder / "s2.dev").read_text().splitlines()
    labels = (folder / "labels.dev").read_text().splitlines()
    return [
        Pair(_detokenise(p), _detokenise(h), LABELS.index(label.strip()), "snli")
        for p, h, label in zip(premises, hypotheses, labels, strict=True)
    ]


def read_mnli(path: Path) -> list[Pair]:
    """The TextFooler MNLI matched sample: label<TAB>premise<TAB>hypothesis."""
    pairs = []
    for line in path.read_text().splitlines():
        label, premise, hypothesis = line.split("\t")[:3]
        pairs.append(Pair(_detokenise(premise), _detokenise(hypothesis), LABELS.index(label.strip()), "mnli"))
    return pairs


def _detokenise(text: str) -> str:
    """Undo PTB tokenisation ("Hello , world .") so training text looks like corpus text."""
    text = re.sub(r" ([.,!?;:%)\]}])", r"\1", text.strip())
    text = re.sub(r"([(\[{$]) ", r"\1", text)
    text = re.sub(r" (n't|'s|'re|'ve|'m|'ll|'d)\b", r"\1", text)
    return text.replace("`` ", '"').replace(" ''", '"')


# --- claims from question + answer ----------------------------------------------------------

_WH_SUBJECT = re.compile(
    r"^(who|what|which)\s+(is|was|are|were|has|had|did|does|do|won|wrote|sang|sings|plays|played|invented|discovered|got|became|founded|created|made)\b(.*)$",
    re.I,
)


def claim_from(question: str, answer: str) -> str:
    """The statement a short answer makes about its question.

    "who got the first nobel prize" + "Röntgen" -> "Röntgen got the first nobel prize."; other
    shapes keep the question and add the answer ("when was X built? 1889."). The same function
    builds claims at validation time, so training and use see the same form.
    """
    question = question.strip().rstrip("?").strip()
    answer = answer.strip().rstrip(".")
    match = _WH_SUBJECT.match(question)
    if match:
        return f"{answer} {match.group(2)}{match.group(3)}."
    return f"{question}? {answer}."


def qa_pairs(
    rows: Iterable[tuple[str, str, str, str | None]], *, source: str, rng: random.Random, wrong_pool: Sequence[str] = ()
) -> list[Pair]:
    """(passage, question, right answer, wrong answer or None) -> an entailed and a contradicted claim.

    Without a wrong answer, one is drawn from `wrong_pool` (other questions' answers).
    """
    pairs = []
    for passage, question, right, wrong in rows:
        pairs.append(Pair(passage, claim_from(question, right), ENTAILMENT, source))
        if wrong is None and wrong_pool:
            wrong = rng.choice(wrong_pool)
            if wrong.lower() in passage.lower() or wrong.lower() == right.lower():
                continue  # might be true after all: no label rather than a wrong one
        if wrong:
            pairs.append(Pair(passage, claim_from(question, wrong), CONTRADICTION, source))
    return pairs


# --- FactCC-style synthetic pairs ------------------------------------------------------------

_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?\b")
_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")  # fmt: skip
_MONTH = re.compile(r"\b(" + "|".join(_MONTHS) + r")\b")
_ENTITY = re.compile(r"\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)\b")
_NEGATABLE = re.compile(r"\b(is|was|are|were|has|have|had|can|will|does|did|should|could|would)\b(?! not\b)")
_NEGATED = re.compile(r"\b(is|was|are|were|has|have|had|does|did|should|could|would) not\b|\b(can)not\b")


def swap_number(sentence: str, rng: random.Random) -> str | None:
    """Change one number (a year by a few years, others by a visible amount)."""
    years = list(_YEAR.finditer(sentence))
    if years:
        match = rng.choice(years)
        replacement = str(int(match.group(0)) + rng.choice([-1, 1]) * rng.randint(2, 30))
    else:
        numbers = [m for m in _NUMBER.finditer(sentence) if "," not in m.group(0) and "." not in m.group(0)]
        if not numbers:
            return None
        match = rng.choice(numbers)
        value = int(match.group(0))
        replacement = str(value + rng.randint(1, 9) if value < 10 else value * rng.choice([2, 3]) + rng.randint(1, 9))
    return sentence[: match.start()] + replacement + sentence[match.end() :]


def swap_month(sentence: str, rng: random.Random) -> str | None:
    match = _MONTH.search(sentence)
    if not match:
        return None
    other = rng.choice([m for m in _MONTHS if m != match.group(0)])
    return sentence[: match.start()] + other + sentence[match.end() :]


def swap_entity(sentence: str, candidates: Sequence[str], rng: random.Random) -> str | None:
    """Replace a capitalised name (not the sentence's first word) with another name from `candidates`."""
    entities = [m for m in _ENTITY.finditer(sentence) if m.start() > 0 and m.group(0) not in _MONTHS]
    if not entities:
        return None
    match = rng.choice(entities)
    others = [c for c in candidates if c != match.group(0) and c not in sentence]
    if not others:
        return None
    return sentence[: match.start()] + rng.choice(others) + sentence[match.end() :]


def negate(sentence: str) -> str | None:
    """Add a "not" after the first auxiliary, or remove an existing one."""
    negated = _NEGATED.search(sentence)
    if negated:
        if negated.group(2):  # "cannot" -> "can"
            return sentence[: negated.start()] + negated.group(2) + sentence[negated.end() :]
        return sentence[: negated.start()] + negated.group(1) + sentence[negated.end() :]
    match = _NEGATABLE.search(sentence)
    if not match:
        return None
    return sentence[: match.end()] + " not" + sentence[match.end() :]


def synthetic_pairs(passages: Sequence[str], *, rng: random.Random, per_passage: int = 2) -> list[Pair]:
    """FactCC-style pairs with each passage as the premise (see the module docstring)."""
    sentences = [[s for s in split_sentences(p) if 6 <= len(s.split()) <= 60] for p in passages]
    entities = sorted({m.group(0) for p in passages for m in _ENTITY.finditer(p) if m.start() > 0})
    pairs: list[Pair] = []
    for index, passage in enumerate(passages):
        if not sentences[index]:
            continue
        for sentence in rng.sample(sentences[index], min(per_passage, len(sentences[index]))):
            pairs.append(Pair(passage, sentence, ENTAILMENT, "synthetic"))
            swaps = [swap_number(sentence, rng), swap_month(sentence, rng), swap_entity(sentence, entities, rng),
                     negate(sentence)]  # fmt: skip
            changed = [s for s in swaps if s and s != sentence]
            if changed:
                pairs.append(Pair(passage, rng.choice(changed), CONTRADICTION, "synthetic"))
            other = rng.randrange(len(passages))
            if other != index and sentences[other]:
                pairs.append(Pair(passage, rng.choice(sentences[other]), NEUTRAL, "synthetic"))
    return pairs


def reversed_contradictions(pairs: Iterable[Pair]) -> list[Pair]:
    """Contradiction is symmetric (if A rules out B, B rules out A); entailment and neutrality are
    not. Reversing SNLI's contradictions adds a third more training signal for free."""
    return [
        Pair(p.hypothesis, p.premise, CONTRADICTION, f"{p.source}-reversed") for p in pairs if p.label == CONTRADICTION
    ]


def split(items: Sequence, *, held_out: float, seed: int) -> tuple[list, list]:
    """Deterministic train / held-out split."""
    order = list(range(len(items)))
    random.Random(seed).shuffle(order)
    cut = int(len(items) * held_out)
    return [items[i] for i in order[cut:]], [items[i] for i in order[:cut]]


# --- the shared data sets, split once for every command and benchmark ----------------------

SHARED_DATA_ENV = "CAIRN_SHARED_DATA"
# ../shared/data beside the checkout, unless CAIRN_SHARED_DATA names another folder. Not part of the
# repository: training, calibration and the benchmarks read it; the tests read tests/fixtures.
DEFAULT_DATA = Path(os.environ.get(SHARED_DATA_ENV) or Path(__file__).resolve().parents[2] / "shared" / "data")
SPLIT_SEED = 20261122
HELD_OUT = {"snli": 0.2, "mnli": 0.5, "halueval": 0.5, "nq": 0.2}  # share never trained on
SHARED_FILES = (  # what shared_splits reads, relative to the data folder
    "nli/snli_dev_esnli/s1.dev", "nli/snli_dev_esnli/s2.dev", "nli/snli_dev_esnli/labels.dev",
    "nli/mnli_textfooler_sample/mnli_matched.tsv", "halueval_qa/qa_data.jsonl", "nq_open_oracle/nq-open-oracle.jsonl",
)  # fmt: skip


class SharedDataMissing(FileNotFoundError):
    """A file of the shared data sets is not there. The one message for every command and benchmark:
    manage.py commands turn it into a CommandError with `explain("--data")`, benchmarks exit with it."""

    def __init__(self, path: Path):
        self.path = Path(path)
        super().__init__(self.explain())

    def explain(self, option: str | None = None) -> str:
        where = f"{option} or {SHARED_DATA_ENV}" if option else SHARED_DATA_ENV
        return (
            f"{self.path}: not found. The shared data sets are not part of the repository (the tests do not "
            f"need them); point {where} at the folder holding nli/, halueval_qa/ and nq_open_oracle/ "
            "(by default ../shared/data beside the checkout)."
        )


def shared_path(data_dir: Path, *parts: str) -> Path:
    """`data_dir`/`parts`; SharedDataMissing when it is not there, naming the outermost missing
    folder (the data folder itself when that is absent)."""
    path = Path(data_dir, *parts)
    if not path.exists():
        missing = path
        while missing != Path(data_dir) and not missing.parent.exists():
            missing = missing.parent
        raise SharedDataMissing(missing)
    return path


def read_jsonl(path: Path) -> list[dict]:
    import json

    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def shared_splits(data_dir: Path) -> dict[str, tuple[list, list]]:
    """(train, held-out) for each shared data set under `data_dir` (../shared/data), by SPLIT_SEED.

    snli and mnli hold Pairs; halueval and nq hold their raw rows (knowledge/question/answers).
    SNLI dev repeats a few pairs; a held-out pair that also occurs in the training part is left
    out of the held-out part, so nothing reported on was trained on. Every file is looked for
    before any is read: a missing one raises SharedDataMissing.
    """
    for relative in SHARED_FILES:
        shared_path(data_dir, relative)
    snli = split(read_snli(data_dir / "nli" / "snli_dev_esnli"), held_out=HELD_OUT["snli"], seed=SPLIT_SEED)
    mnli = split(
        read_mnli(data_dir / "nli" / "mnli_textfooler_sample" / "mnli_matched.tsv"),
        held_out=HELD_OUT["mnli"],
        seed=SPLIT_SEED,
    )
    return {
        "snli": _without_trained(*snli),
        "mnli": _without_trained(*mnli),
        "halueval": split(
            read_jsonl(data_dir / "halueval_qa" / "qa_data.jsonl"), held_out=HELD_OUT["halueval"], seed=SPLIT_SEED
        ),
        "nq": split(
            read_jsonl(data_dir / "nq_open_oracle" / "nq-open-oracle.jsonl"), held_out=HELD_OUT["nq"], seed=SPLIT_SEED
        ),
    }


def _without_trained(train: list[Pair], held_out: list[Pair]) -> tuple[list[Pair], list[Pair]]:
    seen = {(p.premise, p.hypothesis) for p in train}
    return train, [p for p in held_out if (p.premise, p.hypothesis) not in seen]


def calibration_split(held_out: Sequence) -> tuple[list, list]:
    """(calibration, report) parts of a held-out set: calibrate_gate picks thresholds on the first,
    benchmarks report the thresholds' error rates on the second, so neither figure is in-sample."""
    report, calibration = split(held_out, held_out=0.4, seed=SPLIT_SEED)
    return calibration, report


def nli_training_pairs(
    splits: dict[str, tuple[list, list]], *, seed: int, corpus_passages: Sequence[str] = ()
) -> list[Pair]:
    """Every training pair: SNLI (with its contradictions reversed) and MNLI train parts, QA claims
    from the HaluEval train part and half the NQ train part, and synthetic pairs from HaluEval
    knowledge, the other half's NQ passages and `corpus_passages`.

    NQ passages are long (≈150 tokens) and cost most of a CPU epoch, hence half for claims and
    half for synthetic pairs rather than both from all.
    """
    rng = random.Random(seed)
    halueval_train = splits["halueval"][0]
    nq_train = list(splits["nq"][0])
    rng.shuffle(nq_train)
    nq_claims, nq_synthetic = nq_train[: len(nq_train) // 2], nq_train[len(nq_train) // 2 :]
    pairs = [*splits["snli"][0], *reversed_contradictions(splits["snli"][0]), *splits["mnli"][0]]
    pairs += qa_pairs(
        ((r["knowledge"], r["question"], r["right_answer"], r["hallucinated_answer"]) for r in halueval_train),
        source="halueval",
        rng=rng,
    )
    pairs += qa_pairs(
        ((r["ctxs"][0]["text"], r["question"], r["answers"][0], None) for r in nq_claims),
        source="nq",
        rng=rng,
        wrong_pool=[r["answers"][0] for r in nq_train],
    )
    pairs += synthetic_pairs([r["knowledge"] for r in halueval_train], rng=rng, per_passage=2)
    pairs += synthetic_pairs(list(dict.fromkeys(r["ctxs"][0]["text"] for r in nq_synthetic)), rng=rng, per_passage=1)
    pairs += synthetic_pairs(list(corpus_passages), rng=rng, per_passage=2)
    return pairs
