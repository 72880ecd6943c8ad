"""A follow-up as the standalone question it means.

"How do I rotate the logs?" then "and on Windows?": the second cannot be retrieved, verified or
answered alone. Before retrieval, a follow-up becomes a question that stands alone, and that is the
question Cairn answers and shows ("Answered: …"). Only the earlier *questions* (and, for an LLM,
the gist of earlier answers) go into it: they help read the follow-up. Evidence is retrieved and
verified for the standalone question as for any other; an earlier answer is never evidence.

Two ways, by what answers the question:
- an LLM (the answer is an LLM's) rewrites it from the turns before; what it writes is kept only if
  it looks like a question about the follow-up (one line, a sane length, the follow-up's own words
  in it), else the rules below stand in;
- otherwise, rules: a follow-up (it opens with "and", "what about" …, points back with "it",
  "that", "them" …, or is a short question close in meaning to the one before) keeps its own words
  first and carries the questions it follows in brackets, back to the last one that stood alone:
  "Keep only the last 5 files? (How can I rotate Apache's access log?)". The follow-up's words lead,
  so retrieval and the judges weigh what is new, and the reader sees what was understood.

A rewritten question is stored with its answer, where that answer's curators read it, and may be
proposed as a write-back. So a turn is carried only when every collection it drew on is one the
follow-up is asked within (turns_within): a question asked in hr, and its answer's words, never
reach an answer asked within the public handbook; the follow-up then stands alone. The answer is
recorded in the collections of the turns it carried as well (pipeline.stages.record), so that only
curators of those read it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.extractive import STOPWORDS

# A question that opens like this continues the one before it.
OPENERS = re.compile(
    r"^\s*(?:and|or|but|also|so|then|plus|what about|how about|what if|same (?:question )?for|instead|"
    r"in that case|if so)\b[\s,]*",
    re.IGNORECASE,
)
# Words that point back at something said before.
BACK_REFERENCES = frozenset(
    [
        "it",
        "its",
        "it's",
        "itself",
        "that",
        "those",
        "these",
        "this",
        "them",
        "they",
        "their",
        "theirs",
        "there",
        "then",
        "one",
        "ones",
        "such",
        "same",
        "former",
        "latter",
        "above",
        "previous",
        "instead",
        "too",
        "either",
        "neither",
        "both",
        "another",
        "other",
    ]
)
NUMERAL_OR_PRONOUN = frozenset(["one", "ones"])  # "to remove one?" points back; "one IP address" does not
WORD = re.compile(r"[A-Za-z0-9_][\w.'/-]*")
QUESTION_WORDS = frozenset(
    [
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "can",
        "could",
        "should",
        "would",
        "will",
        "is",
        "are",
    ]
)
# A question of at least this many content words, with no opener and nothing pointing back, stands alone.
SELF_CONTAINED_WORDS = 6
# A shorter question without such cues follows on only if it is about what was asked before: the
# cosine of the two questions' embeddings (MiniLM: unrelated questions sit near 0.1, rewordings
# above 0.6). Set by design between the two, not fitted.
SAME_TOPIC = 0.3
CARRIED_TURNS = 2  # earlier questions carried in brackets, newest last
LLM_TURNS = 3  # earlier turns an LLM reads to rewrite
MAX_LENGTH = 1000


@dataclass(frozen=True)
class Turn:
    """An earlier turn as the rewrite sees it: what was typed, the question answered, its answer."""

    asked: str
    question: str
    answer: str = ""
    stood_alone: bool = True  # it needed no earlier turn
    embedding: np.ndarray | None = None  # of `question`, as recorded
    collections: frozenset[int] = frozenset()  # what its answer drew on (Answer.collections)


@dataclass(frozen=True)
class Rewrite:
    question: str  # the standalone question
    by: str  # "" unchanged, "rules" or "llm"
    carried: tuple[Turn, ...] = ()  # the earlier turns that went into it

    @property
    def collections(self) -> set[int]:
        return {c for turn in self.carried for c in turn.collections}


def turns_within(earlier: Sequence[Turn], collection_ids: set[int]) -> list[Turn]:
    """The latest of `earlier` whose answers drew on `collection_ids` alone, back to the first that
    did not: what a follow-up asked within those collections may carry."""
    kept: list[Turn] = []
    for turn in reversed(earlier):
        if not turn.collections <= collection_ids:
            break
        kept.insert(0, turn)
    return kept


def content_words(text: str) -> list[str]:
    return [w for w in (m.lower().strip(".'") for m in WORD.findall(text)) if w and w not in STOPWORDS
            and w not in QUESTION_WORDS]  # fmt: skip


def follows_on(question: str, previous: Turn | None, embed=None) -> bool:
    """Whether `question` needs the turns before it to be understood."""
    if previous is None:
        return False
    if OPENERS.match(question):
        return True
    words = [m.lower() for m in WORD.findall(question)]
    if any(points_back(words, i) for i in range(len(words))):
        return True
    if len(content_words(question)) >= SELF_CONTAINED_WORDS:
        return False
    if embed is None or previous.embedding is None:
        return True
    return float(np.dot(embed(question), previous.embedding)) >= SAME_TOPIC


def points_back(words: list[str], i: int) -> bool:
    if words[i] not in BACK_REFERENCES:
        return False
    return words[i] not in NUMERAL_OR_PRONOUN or i + 1 == len(words) or words[i + 1] in STOPWORDS


def rules_rewrite(question: str, earlier: Sequence[Turn]) -> str:
    """The follow-up, its opener dropped, then the questions it follows in brackets: back to the
    last that stood alone, at most CARRIED_TURNS of them, oldest first."""
    body = OPENERS.sub("", question.strip(), count=1).strip() or question.strip()
    body = body[0].upper() + body[1:]
    carried = [turn.asked.strip() for turn in rules_carried(earlier)]
    context = " ".join(q if q.endswith(("?", ".", "!")) else f"{q}?" for q in carried)
    return f"{body} ({context})"[:MAX_LENGTH]


def rules_carried(earlier: Sequence[Turn]) -> list[Turn]:
    """The turns the rules carry: back to the last that stood alone, at most CARRIED_TURNS."""
    carried: list[Turn] = []
    for turn in reversed(earlier):
        carried.insert(0, turn)
        if turn.stood_alone or len(carried) == CARRIED_TURNS:
            break
    return carried


LLM_PROMPT = """Rewrite the user's last question so that it can be understood without the conversation.
Keep its meaning and its words; add only what it refers to. Reply with the rewritten question alone.

{turns}
Last question: {question}
Rewritten question:"""


def llm_rewrite(question: str, earlier: Sequence[Turn], llm) -> str | None:
    """The LLM's standalone question, or None when it fails or writes something that is not one."""
    from pipeline.generators import GeneratorUnavailable

    turns = "\n".join(
        f"Question: {t.asked}\nAnswer: {' '.join(t.answer.split())[:300]}" for t in earlier[-LLM_TURNS:]
    )  # fmt: skip
    try:
        written = llm.complete(LLM_PROMPT.format(turns=turns, question=question))
    except GeneratorUnavailable:
        return None
    return rewrite_checked(question, written, earlier)


def rewrite_checked(question: str, written: str, earlier: Sequence[Turn]) -> str | None:
    """What an LLM wrote as the standalone `question`, if it is one: a single question of a sane
    length that keeps a word of the follow-up's own and repeats no earlier question. A small model
    often answers instead of rewriting ("You can use piped logs …"): that is refused."""
    lines = [line.strip().strip('"') for line in (written or "").splitlines() if line.strip()]
    if len(lines) != 1:
        return None
    rewritten = re.sub(r"^(rewritten question|question)\s*:\s*", "", lines[0], flags=re.IGNORECASE).strip()
    if not 8 <= len(rewritten) <= MAX_LENGTH or not rewritten.endswith("?"):
        return None  # empty, runaway, or not a question
    own = set(content_words(OPENERS.sub("", question, count=1)))
    if own and not own & set(content_words(rewritten)):
        return None  # about something else than what was asked
    if any(rewritten.lower() == t.question.lower() for t in earlier):
        return None  # the question before, repeated
    return rewritten


def standalone(question: str, earlier: Sequence[Turn], *, embed=None, llm=None) -> Rewrite:
    """The standalone question `question` means after the `earlier` turns (oldest first). `embed`
    (text -> unit vector) tells a short question on the same topic from a new one; `llm`, when the
    answer is an LLM's, rewrites."""
    previous = earlier[-1] if earlier else None
    if not follows_on(question, previous, embed):
        return Rewrite(question, "")
    if llm is not None and (rewritten := llm_rewrite(question, earlier, llm)):
        return Rewrite(rewritten, "llm", tuple(earlier[-LLM_TURNS:]))
    return Rewrite(rules_rewrite(question, earlier), "rules", tuple(rules_carried(earlier)))
