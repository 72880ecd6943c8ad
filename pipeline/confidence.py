"""What the answer's confidence is computed from (judges/confidence.py applies the weights).

The features (`answer_features`), each cheap and defined for any question:
- the judge: its best chosen score, the best sentence of another passage, their margin, the lead's
  runner-up (logits), and how many sentences it accepts;
- the passage: the gate's relevance, similarity and term coverage of the lead, and of the chosen
  strip; its rank; how many passages were verified; whether another passage took the lead;
- the subject: is what the question names (an identifier, option, command or term) the label of
  the entry the answer quotes, or only mentioned in its sentences? A manual's neighbouring entries
  share words, and the answer that quotes the entry mentioning the subject is the usual miss;
- the kind of thing asked (a default, a number, a name, yes or no, a time, a place, a way, a reason)
  and whether the answer states that kind (a number for "how many", "default" for a default).
Which of them the shipped model uses, and with what weight: models/confidence/README.md.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings

from pipeline.extractive import content_terms

# A code-ish name the question gives: snake_case, dotted, a call, an option, a $VARIABLE, CamelCase,
# ALLCAPS, or anything quoted (`...`, "...", '...').
_NAMED = re.compile(
    r"`([^`]+)`|\"([^\"]{2,60})\"|'([^']{2,60})'"
    r"|(--?[A-Za-z][\w-]*|\$\w+|\b\w+(?:[._:/]\w+)+(?:\(\))?|\b\w+\(\)|\b[a-z]+[A-Z]\w*|\b[A-Z]{2,}[A-Z0-9_]*\b)"
)
# Words that say what kind of thing is asked, not what it is about.
_ASKING = frozenset((
    "default", "value", "setting", "option", "command", "function", "method", "directive", "parameter",
    "variable", "file", "name", "use", "used", "using", "set", "get", "does", "mean", "means", "happen",
    "happens", "way", "need", "want", "make", "work", "kind", "type", "return", "returns", "returned",
))  # fmt: skip
QUESTION_KINDS = ("default", "number", "which", "yes_no", "when", "where", "how", "why", "what")
_KIND_PATTERNS = (
    ("default", re.compile(r"\bdefaults?\b|\bby default\b|\bif (?:i|you) (?:don't|do not|never)\b", re.I)),
    ("number", re.compile(r"\bhow (?:many|much|long|big|large|often)\b|\bwhat (?:size|port|number|limit)\b", re.I)),
    ("which", re.compile(r"\bwhich\b|\bwhat (?:\w+ )?(?:option|command|function|method|directive|flag|"
                         r"parameter|variable|file|module|class|exception|keyword|setting|header)\b", re.I)),
    ("yes_no", re.compile(r"^(?:is|are|can|does|do|did|will|should|must|may|could|has|have)\b", re.I)),
    ("when", re.compile(r"\bwhen\b|\bwhat (?:version|year|release)\b", re.I)),
    ("where", re.compile(r"\bwhere\b|\bwhat (?:directory|folder|path)\b", re.I)),
    ("how", re.compile(r"^how\b|\bhow (?:do|can|should|to)\b", re.I)),
    ("why", re.compile(r"\bwhy\b", re.I)),
)  # fmt: skip
_NUMBER = re.compile(r"\b\d+(?:[.,]\d+)?\b|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|zero)\b", re.I)
_DEFAULT = re.compile(r"\bdefaults?\b|\bby default\b|\bunless\b|\bif (?:not|no|none|omitted|unset)\b", re.I)
_CODE = re.compile(r"`|\b\w+(?:[._]\w+)+\b|--?\w|\w\(\)")


def question_kind(question: str) -> str:
    """The first kind whose pattern the question matches ("what" when none does)."""
    return next((kind for kind, pattern in _KIND_PATTERNS if pattern.search(question.strip())), "what")


def code_names(question: str) -> set[str]:
    """The code-ish names the question gives, lower-cased, "()" dropped."""
    named = {next(g for g in m.groups() if g).strip("`'\" ").lower() for m in _NAMED.finditer(question)}
    return {n.removesuffix("()") for n in named if n}


def named_subjects(question: str) -> set[str]:
    """What the question is about: the code-ish names it gives, else its content terms less the
    words that only say what kind of thing is asked."""
    return code_names(question) or (content_terms(question) - _ASKING)


def _share_in(subjects: set[str], text: str) -> float:
    if not subjects:
        return 0.0
    lowered = text.lower()
    terms = content_terms(text)
    return sum((s in lowered) if len(s.split()) > 1 or not s.isalnum() else (s in terms) for s in subjects) / len(
        subjects
    )


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


@dataclass(frozen=True)
class Quoted:
    """A sentence the answer states: its text, the judge's score, the heading or term it sits under."""

    text: str
    score: float
    label: str = ""
    relevance: float = 0.0  # the gate's relevance of its strip: the evaluator's opinion beside the judge's


@dataclass(frozen=True)
class Passage:
    """The gate's view of a verified passage (pipeline.generators.EvidenceText)."""

    relevance: float = 0.0
    similarity: float = 0.0
    coverage: float = 0.0


def answer_features(
    question: str,
    chosen: Sequence[Quoted],
    *,
    lead_scores: Sequence[float],
    other_scores: Sequence[float],
    lead_relevances: Sequence[float] = (),
    lead: Passage,
    lead_rank: int,
    verified: int,
    switched: bool,
    cited: int,
) -> dict[str, float]:
    """The calibrator's inputs for one extractive answer (`chosen`, never empty). `lead_scores`: the
    judge on every sentence of the lead passage; `other_scores`: on the sentences of the other
    passages it read; `lead_relevances`: the gate's relevance of each of the lead's strips;
    `lead_rank`: the lead's place among the verified passages (0: first)."""
    accept = settings.CAIRN_ANSWER_THRESHOLD
    best = max(s.score for s in chosen)
    runner_up = sorted(lead_scores, reverse=True)[1] if len(lead_scores) > 1 else 0.0
    other = max(other_scores, default=0.0)
    text = " ".join(s.text for s in chosen)
    labels = " ".join(dict.fromkeys(s.label for s in chosen if s.label))
    named = code_names(question)
    terms = content_terms(question)
    subjects = named or (terms - _ASKING)  # named_subjects, its parts kept for the features below
    label_terms = content_terms(labels)
    kind = question_kind(question)
    features = {
        "judge_best": _logit(best),
        "judge_other_best": _logit(other),
        "judge_margin": _logit(best) - _logit(other),
        "judge_lead_runner_up": _logit(runner_up),
        # Candidates the judge accepts: one is an answer, many an ambiguous question.
        "judge_accepted": math.log1p(sum(score >= accept for score in (*lead_scores, *other_scores))),
        "strip_relevance": max(s.relevance for s in chosen),
        "strip_relevance_gap": max(lead_relevances, default=0.0) - max(s.relevance for s in chosen),
        "relevance": lead.relevance,
        "similarity": lead.similarity,
        "coverage": lead.coverage,
        "lead_rank": math.log1p(lead_rank),
        "verified": math.log1p(verified),
        "switched": float(switched),
        "cited": float(cited),
        "sentences": float(len(chosen)),
        "subject_in_label": _share_in(subjects, labels),
        "subject_in_text": _share_in(subjects, text),
        "subject_named": float(bool(named)),
        # The entry is the question's: the label's words the question names (0 with no label).
        "label_asked": len(label_terms & terms) / len(label_terms) if label_terms else 0.0,
        "has_label": float(bool(labels)),
        "question_terms": math.log1p(len(terms)),
        "answer_words": math.log1p(len(text.split())),
        "has_number": float(bool(_NUMBER.search(text))),
        "has_default": float(bool(_DEFAULT.search(text))),
        "has_code": float(bool(_CODE.search(text))),
    }
    for k in QUESTION_KINDS:
        features[f"asks_{k}"] = float(kind == k)
    # The kind asked, stated: a number for "how many", a default for "what is the default".
    features["kind_stated"] = float(
        (kind == "number" and features["has_number"] > 0) or (kind == "default" and features["has_default"] > 0)
    )
    return features
