"""Questions a teacher writes over a collection's own passages: the training pairs that adapt the
answer judge and the relevance evaluator to an organisation's documents, with no one labelling them.

The judges learned Wikipedia QA; on a manual they read the entry that mentions a subject as well as
the entry that is about it, and a definition as well as the sentence with the value. The remedy
retrieval research measured (GPL, InPars, Promptagator) is to have a generator write the questions a
reader would ask over the target corpus and fine-tune on them. Here the generator is the
deployment's own model server, asked under a JSON schema (every reply is data), with a few
examples of what readers ask (values, options, paths, steps: left alone, small models write "What
is the purpose of X?"). The examples are written for a made-up product, so no collection's own
questions steer the teacher.

What the teacher says is checked, not trusted (`validated`): each question must come with a
sentence found word for word in the passage, the sentence is one the gate reads (a strip), a
question that restates its sentence is dropped (it teaches word matching), and a question asked
twice is kept once. The pairs (`answer_pairs`, `relevance_pairs`) put the answering sentence against
the passage's other sentences and against what Cairn's own retrieval brings for the question from
other passages (the entry that mentions the subject: the hard negatives GPL mines), dropping a
negative that states what the answering sentence states.

Without a model server, the generator-free questions of judges/corpus_questions.py are what there
is; they measured worse than no adaptation (README), so adapting then keeps the shipped judges.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from corpus.strips import Strip, section_of, strips_in_context
from judges.corpus_questions import SectionChunk, is_api_name

PROMPT_VERSION = 1  # part of the cache key: a new prompt asks again
QUESTIONS_PER_PASSAGE = 3
MAX_PASSAGE_CHARS = 2400  # about 600 tokens: with the examples and the reply, within a 4k context
MIN_QUESTION_WORDS, MAX_QUESTION_WORDS = 4, 30
# A question whose words leave less than this share of its sentence's words unsaid restates it.
RESTATED = 0.2

SCHEMA = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "minItems": 1,
            "maxItems": QUESTIONS_PER_PASSAGE,
            "items": {
                "type": "object",
                "properties": {"question": {"type": "string"}, "sentence": {"type": "string"}},
                "required": ["question", "sentence"],
            },
        }
    },
    "required": ["questions"],
}

SYSTEM = (
    "You write the questions that readers of an organisation's documentation ask. Given a passage, "
    "write questions that the passage answers, the way a user types them into a search box: about "
    "values, defaults, limits, options, file paths, commands, steps and behaviour. Each question must "
    "make sense without the passage (name what it is about) and must not contain its own answer. "
    "For each question copy, word for word, the one sentence of the passage that answers it."
)

# A made-up product's manual, so that no collection's questions choose what the teacher writes.
EXAMPLES = (
    (
        "Lumen server > Configuration > cache_size",
        "cache_size (integer). Sets the memory the server uses for its page cache. The default is 64MB. "
        "Changing it requires a restart of lumend. See also cache_policy.",
        [
            {"question": "What is the default cache_size in Lumen?", "sentence": "The default is 64MB."},
            {
                "question": "Do I need to restart lumend after changing cache_size?",
                "sentence": "Changing it requires a restart of lumend.",
            },  # fmt: skip
        ],
    ),
    (
        "Lumen server > Backups",
        "Backups are written to /var/lib/lumen/backup unless backup_dir says otherwise. To restore one, "
        "stop the server and run lumenctl restore with the backup's name. Only the last seven backups are kept.",
        [
            {
                "question": "Where does Lumen write its backups?",
                "sentence": "Backups are written to /var/lib/lumen/backup unless backup_dir says otherwise.",
            },
            {
                "question": "How do I restore a Lumen backup?",
                "sentence": "To restore one, stop the server and run lumenctl restore with the backup's name.",
            },
            {"question": "How many backups does Lumen keep?", "sentence": "Only the last seven backups are kept."},
        ],
    ),  # fmt: skip
)


def passage_prompt(heading: str, text: str) -> str:
    return f"Passage under: {heading or '(no heading)'}\n\n{text[:MAX_PASSAGE_CHARS]}"


def teacher_messages(chunk: SectionChunk) -> list[dict]:
    """The chat the teacher is asked: the instructions, the examples as earlier turns, the passage."""
    messages = [{"role": "system", "content": SYSTEM}]
    for heading, text, questions in EXAMPLES:
        messages.append({"role": "user", "content": passage_prompt(heading, text)})
        messages.append({"role": "assistant", "content": json.dumps({"questions": questions})})
    messages.append({"role": "user", "content": passage_prompt(chunk.heading, chunk.text)})
    return messages


@dataclass(frozen=True)
class TeacherQuestion:
    question: str
    chunk_id: int
    answer: Strip  # the passage's sentence that answers it, as the gate reads it
    others: tuple[Strip, ...]  # the passage's other sentences


_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[\w./-]+")
_STOP_WORDS = (
    "a an the is are was were be been of to in on for and or by with at as it its this that what which "
    "how do does did can i you my your when where who why if not no from into than then there"
)
_STOP = frozenset(_STOP_WORDS.split())


def _flat(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u2018": "'", "\u2019": "'", "'": '"', "`": ""})


def _matchable(text: str) -> str:
    """Text as a quote is matched: spacing, case, quotation marks and code ticks aside, which the
    teacher changes when it copies ("the order…" quoted as "The order…")."""
    return _flat(text).translate(_QUOTES).lower().rstrip(".")


# The examples' made-up product: a question that names it copied the example, not the passage.
_EXAMPLE_WORDS = frozenset({"lumen", "lumend", "lumenctl"})


def content_words(text: str) -> set[str]:
    return {w.strip("./-") for w in _WORD.findall(text.lower()) if w.strip("./-") not in _STOP} - {""}


def restates(question: str, sentence: str) -> bool:
    """The question says (nearly) all its sentence says: it can be matched word for word."""
    said = content_words(sentence)
    return bool(said) and len(said - content_words(question)) / len(said) < RESTATED


def question_key(question: str) -> str:
    return " ".join(sorted(content_words(question)))


def _code_names(text: str) -> set[str]:
    """The names written as code in `text` (sqlite3_changes, os.lstat, --summary)."""
    return {w for w in content_words(text) if is_api_name(w)}


def answering_strip(sentence: str, strips: list[Strip]) -> Strip | None:
    """The strip that holds the quoted sentence (or that the sentence holds, when the quote runs
    over a strip's end): the one sharing the most of its words."""
    flat = _matchable(sentence)
    holding = [s for s in strips if flat in _matchable(s.text) or _matchable(s.text) in flat]
    if not holding:
        return None
    words = content_words(flat)
    return max(holding, key=lambda s: len(words & content_words(s.text)))


def validated(reply: object, chunk: SectionChunk, seen: set[str]) -> tuple[list[TeacherQuestion], Counter]:
    """The teacher's questions for `chunk` that hold, and why the others were dropped. `seen` (the
    questions already kept for the collection) grows with each kept question."""
    dropped: Counter = Counter()
    items = reply.get("questions") if isinstance(reply, dict) else None
    if not isinstance(items, list):
        dropped["not the schema"] += 1
        return [], dropped
    strips = strips_in_context(chunk.text, section_of(chunk.heading))
    text = _matchable(chunk.text)
    own_words = content_words(chunk.text)
    kept = []
    for item in items:
        question = _flat(str(item.get("question", ""))) if isinstance(item, dict) else ""
        sentence = _flat(str(item.get("sentence", ""))) if isinstance(item, dict) else ""
        words = len(question.split())
        if not question.endswith("?") or not MIN_QUESTION_WORDS <= words <= MAX_QUESTION_WORDS:
            dropped["not a question"] += 1
        elif not sentence or _matchable(sentence) not in text:
            dropped["sentence not in the passage"] += 1
        elif (_EXAMPLE_WORDS & content_words(question)) - own_words:
            dropped["copied from the examples"] += 1
        elif (answer := answering_strip(sentence, strips)) is None:
            dropped["sentence not one the gate reads"] += 1
        elif not content_words(question) & (content_words(answer.judged) | _code_names(chunk.text)):
            # "What is the default…?" / "A copy of the script is…"; but "What does sqlite3_changes() do?"
            # is answered by "These functions return…" under the code block that names it.
            dropped["sentence about something else"] += 1
        elif restates(question, answer.text):
            dropped["restates its sentence"] += 1
        elif (key := question_key(question)) in seen:
            dropped["asked before"] += 1
        else:
            seen.add(key)
            kept.append(TeacherQuestion(question, chunk.id, answer, tuple(s for s in strips if s is not answer)))
    return kept, dropped


def sampled_chunks(chunks: list[SectionChunk], limit: int, *, seed: int = 13) -> list[SectionChunk]:
    """Up to `limit` passages worth asking about, spread over the collection: passages with at least
    two sentences the gate reads (one to answer, one to stand against it), one a section (heading)
    before a section's second, documents taken in turn so that no long page fills the sample."""
    rng = random.Random(seed)
    by_document: dict[int, list[SectionChunk]] = {}
    for chunk in chunks:
        if len(strips_in_context(chunk.text, section_of(chunk.heading))) >= 2:
            by_document.setdefault(chunk.document_id, []).append(chunk)
    queues = []
    for siblings in by_document.values():
        firsts, rest, headings = [], [], set()
        for chunk in siblings:
            (rest if chunk.heading in headings else firsts).append(chunk)
            headings.add(chunk.heading)
        rng.shuffle(firsts)
        rng.shuffle(rest)
        queues.append(firsts + rest)
    rng.shuffle(queues)
    sample: list[SectionChunk] = []
    while queues and len(sample) < limit:
        for queue in list(queues):
            if len(sample) == limit:
                break
            sample.append(queue.pop(0))
            if not queue:
                queues.remove(queue)
    return sample


def chunk_key(chunk: SectionChunk) -> str:
    """What a cached reply is kept under: the passage's text and heading and the prompt, so an edited
    passage or a new prompt is asked again, and a re-ingested one (new id) is not."""
    return hashlib.sha256(f"{PROMPT_VERSION}\0{chunk.heading}\0{chunk.text}".encode()).hexdigest()[:32]


class TeacherCache:
    """The teacher's raw replies, one JSON line per passage, appended as they come: a run that stops
    resumes where it stopped, and a benchmark re-runs without the teacher."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.replies: dict[str, dict] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                if line.strip():
                    record = json.loads(line)
                    self.replies[record["key"]] = record

    def __contains__(self, chunk: SectionChunk) -> bool:
        return chunk_key(chunk) in self.replies

    def reply(self, chunk: SectionChunk) -> object:
        return self.replies[chunk_key(chunk)]["reply"]

    def add(self, chunk: SectionChunk, reply: object, *, model: str, seconds: float) -> None:
        record = {"key": chunk_key(chunk), "heading": chunk.heading, "model": model, "seconds": round(seconds, 2),
                  "reply": reply}  # fmt: skip
        self.replies[record["key"]] = record
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as out:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


def teacher_questions(chunks: Iterable[SectionChunk], cache: TeacherCache) -> tuple[list[TeacherQuestion], Counter]:
    """The validated questions of every cached reply among `chunks`, and the count of each reason to drop."""
    questions, dropped, seen = [], Counter(), set()
    for chunk in chunks:
        if chunk in cache:
            kept, why = validated(cache.reply(chunk), chunk, seen)
            questions += kept
            dropped.update(why)
    return questions, dropped


def split_held_out(questions: list[TeacherQuestion], share: float, *, seed: int = 13):
    """(training, held out): by passage, so that no held-out question's passage was trained on."""
    passages = sorted({q.chunk_id for q in questions})
    random.Random(seed).shuffle(passages)
    held = set(passages[: max(1, round(len(passages) * share))]) if len(passages) > 1 else set()
    return [q for q in questions if q.chunk_id not in held], [q for q in questions if q.chunk_id in held]


def states_same(negative: str, answer: Strip) -> bool:
    """A retrieved sentence that holds what the answering one says (a copy on another page, a
    summary): no negative."""
    said = content_words(answer.text)
    return bool(said) and len(said & content_words(negative)) / len(said) >= 0.8


def answer_pairs(
    questions: Iterable[TeacherQuestion], retrieved: dict[str, list[Strip]], *, negatives: int = 3, hard: int = 3,
    seed: int = 13,
) -> Iterator[tuple[str, str, int]]:  # fmt: skip
    """(question, sentence, label) for the answer judge, read as it reads them (Strip.labelled): the
    answering sentence; up to `negatives` of its passage's other sentences; up to `hard` sentences
    of other passages that Cairn's retrieval brought for the question (`retrieved[question]`,
    best first)."""
    rng = random.Random(seed)
    for q in questions:
        yield q.question, q.answer.labelled, 1
        for other in rng.sample(q.others, min(negatives, len(q.others))):
            if not states_same(other.text, q.answer):
                yield q.question, other.labelled, 0
        near = [s for s in retrieved.get(q.question, []) if not states_same(s.text, q.answer)]
        for strip in near[:hard]:
            yield q.question, strip.labelled, 0


def relevance_pairs(
    questions: Iterable[TeacherQuestion], chunks: dict[int, SectionChunk], retrieved: dict[str, list[SectionChunk]],
    *, hard: int = 2,
) -> Iterator[tuple[str, str, int]]:  # fmt: skip
    """(question, text, label) for the relevance evaluator: the question's passage and its answering
    sentence (as the gate reads a strip), against up to `hard` other passages Cairn's retrieval
    ranked for it that do not hold the answering sentence."""
    for q in questions:
        yield q.question, chunks[q.chunk_id].text, 1
        yield q.question, q.answer.judged, 1
        answer = _flat(q.answer.text)
        others = [c for c in retrieved.get(q.question, []) if c.id != q.chunk_id and answer not in _flat(c.text)]
        for chunk in others[:hard]:
            yield q.question, chunk.text, 0
