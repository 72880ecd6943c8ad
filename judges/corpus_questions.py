"""Questions a collection answers by its own structure: training pairs that adapt the answer judge
and the relevance evaluator to an organisation's documents without anyone labelling them.

A manual names what each section is about: its heading or the term a definition defines
("os.lstat(path, *, dir_fd=None)", "wal_level", "7.1.2. The String format() Method"). From each
section Cairn writes the questions a reader would ask about that subject, in plain templates:
- "What does os.lstat do?" (an API name) / "What is write ahead log?" (a topic), answered by the
  entry's first sentence (after a change note);
- for an API name, "What is the default for wal_level?", "What does os.lstat return?", "What does
  os.lstat raise?", answered by the entry's first sentence that says so ("The default is replica.").
The answer judge learns from the answering sentence against the chunk's other sentences (the
hard negatives of the same passage, as on SQuAD); the relevance evaluator from the section against
its neighbouring sections of the same page that never mention the subject. Sentences are read as
the gate reads them (pipeline.gate.strips_in_context: under their heading or term), so what is
learnt is what is asked at answer time.

Measured (README, Python docs benchmark): judges adapted this way, on other manuals or on the
collection itself, answered fewer tune questions (29 of 42 against 30-31): a heading's question is
answered by an entry's first sentence, a reader's often by a detail further on. The shipped judges
are not adapted; measure on your own questions before pointing CAIRN_ANSWER_MODEL at one that is.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from corpus.strips import Strip, section_of, strips_in_context

# A heading's numbering ("7.1.2.", "A.") and the object kind Sphinx, JSDoc and Javadoc put before a name.
_NUMBERING = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[A-Z]\.)\s+")
_KIND = re.compile(
    r"^(?:abstract |async )?(?:class|exception|method|function|attribute|data|property|classmethod|"
    r"staticmethod|coroutine|await|module|macro|type|var|event)\s+",
    re.IGNORECASE,
)
_API_NAME = re.compile(r"[\w.:$-]+")  # os.lstat, fs.readFile, Py_BUILD_CORE, --track-origins
MAX_SUBJECT_WORDS = 8  # a longer heading is a sentence, not a subject
# A change note opens many definitions ("History Version: v10.0.0; Changes: ...", "Changed in version
# 3.8: ..."): it says what changed, not what it does. ("Added in: v15.2.0" is a fragment the next
# sentence carries along: that strip still says what it does.)
_CHANGE_NOTE = re.compile(r"^(?:History\b|Version:|Changed in version|Deprecated)")

# (cue, question): the entry's first sentence that matches the cue answers it.
ASPECTS = (
    (re.compile(r"\bdefaults?\b|\bby default\b", re.IGNORECASE), "What is the default for {subject}?"),
    (re.compile(r"\breturns?\b", re.IGNORECASE), "What does {subject} return?"),
    (re.compile(r"\brais(?:es|ed|e)\b|\bthrows?\b", re.IGNORECASE), "What does {subject} raise?"),
)


@dataclass(frozen=True)
class SectionQuestion:
    question: str
    subject: str
    chunk_id: int
    heading: str
    answer: Strip  # the sentence that answers it
    others: tuple[Strip, ...]  # the chunk's other sentences (for an aspect, those that do not state it)


@dataclass(frozen=True)
class SectionChunk:
    id: int
    document_id: int
    heading: str
    text: str


def heading_subject(heading: str) -> str | None:
    """What a heading or definition term names, as a reader writes it: "os.lstat(path, *,
    dir_fd=None)" -> "os.lstat", "class csv.Sniffer" -> "csv.Sniffer", "time.monotonic() → float"
    -> "time.monotonic", "7.1.2. The String format() Method" -> "The String format() Method".
    None for what is no subject (empty, or a sentence-long heading)."""
    subject = _KIND.sub("", _NUMBERING.sub("", heading.strip()))
    subject = re.sub(r"(?<!\s)\s*+(?:→|->).*$", "", subject)  # tried where spaces start, not within: linear
    if call := re.match(r"^([\w.:$]+)\s*\(", subject):  # a signature: the name called
        subject = call.group(1)
    elif option := re.match(r"^--?[\w-]+(?=[=\s\[<]|$)", subject):  # "--cache-sim=<yes|no> [default: no]"
        subject = option.group(0)
    subject = subject.strip(" .:;,")
    if not subject or len(subject.split()) > MAX_SUBJECT_WORDS or not re.search(r"[^\W\d_]", subject):
        return None
    if " " not in subject and subject.istitle():
        return None  # "Example", "Comparisons", "Iterators": a section's kind, too vague to ask about (not "fsync")
    return subject


def is_api_name(subject: str) -> bool:
    """One token written as code: dotted, snake_case, camelCase or an option ("--track-origins")."""
    return bool(_API_NAME.fullmatch(subject)) and bool(re.search(r"[._:$]|^-|[a-z][A-Z]", subject))


def what_question(subject: str) -> str:
    if subject.endswith("?"):
        return subject  # a FAQ's heading is the question
    if is_api_name(subject):
        return f"What does {subject} do?"
    if re.match(r"how to\b", subject, re.IGNORECASE):
        return f"How do I {subject[7:]}?"
    # "Write Ahead Log", "Logging levels" -> lower case; names and acronyms keep theirs ("Unicode HOWTO")
    words = subject.split()
    if subject.istitle():
        words = [w.lower() for w in words]
    elif words[0].istitle() and (len(words) == 1 or words[1].islower()):
        words[0] = words[0].lower()
    return f"What is {' '.join(words)}?"


def section_questions(chunks: Iterable[SectionChunk]) -> list[SectionQuestion]:
    """The questions each section answers: about its heading's subject (asked of its first chunk)
    and about each term its definitions define, one "what" question each, plus one per aspect
    (default, return value, exception) an API name's sentences state. A question's negatives are
    the other sentences of the same chunk, other terms' included."""
    questions: list[SectionQuestion] = []
    asked: set[tuple[int, str]] = set()
    for chunk in chunks:
        section = section_of(chunk.heading)
        strips = strips_in_context(chunk.text, section)
        if not section or len(strips) < 2:
            continue
        by_subject: dict[str, list[Strip]] = {}
        for strip in strips:  # a definition's sentences are about its term, the others about the heading
            if subject := heading_subject(strip.term or section[-1]):
                by_subject.setdefault(subject, []).append(strip)
        for subject, own in by_subject.items():
            for question, answer, others in _questions_about(subject, own, strips):
                if (chunk.document_id, question) not in asked:
                    asked.add((chunk.document_id, question))
                    questions.append(SectionQuestion(question, subject, chunk.id, chunk.heading, answer, others))
    return questions


def _questions_about(subject: str, own: list[Strip], strips: list[Strip]):
    """(question, answering sentence, the chunk's other sentences) about `subject`, whose sentences are `own`."""
    if what := next((s for s in own if not _CHANGE_NOTE.match(s.text)), None):
        yield what_question(subject), what, tuple(s for s in strips if s is not what)
    if not is_api_name(subject):
        return  # "What does Notes on socket timeouts raise?" is no question
    for cue, template in ASPECTS:
        stating = next((s for s in own if cue.search(s.text)), None)
        others = tuple(s for s in strips if not cue.search(s.text))
        if stating and others:
            yield template.format(subject=subject), stating, others


def collection_chunks(slug: str) -> list[SectionChunk]:
    """The active chunks of collection `slug`, in reading order."""
    from corpus.models import Chunk, Document

    rows = (
        Chunk.objects.filter(document__collection__slug=slug, document__status=Document.Status.ACTIVE)
        .order_by("document_id", "ordinal")
        .values_list("id", "document_id", "heading", "text")
    )
    return [SectionChunk(*row) for row in rows]


def answer_pairs(questions: Iterable[SectionQuestion], *, negatives: int = 3, seed: int = 13) -> list[tuple]:
    """(question, sentence, label) for the answer judge: the answering sentence, and up to
    `negatives` of the section's others, read as the judge reads them (Strip.labelled)."""
    rng = random.Random(seed)
    pairs = []
    for q in questions:
        pairs.append((q.question, q.answer.labelled, 1))
        others = list(q.others)
        pairs += [(q.question, s.labelled, 0) for s in rng.sample(others, min(negatives, len(others)))]
    return pairs


def relevance_pairs(
    questions: Iterable[SectionQuestion], chunks: list[SectionChunk], *, negatives: int = 2, seed: int = 13
) -> list[tuple]:
    """(question, text, label) for the relevance evaluator: the section's chunk, and up to
    `negatives` neighbouring sections of the same page (the nearest first) that never mention
    the subject; plus the answering sentence against a sentence of such a neighbour."""
    rng = random.Random(seed)
    by_document: dict[int, list[SectionChunk]] = {}
    for chunk in chunks:
        by_document.setdefault(chunk.document_id, []).append(chunk)
    position = {chunk.id: i for siblings in by_document.values() for i, chunk in enumerate(siblings)}
    by_id = {chunk.id: chunk for chunk in chunks}
    pairs = []
    for q in questions:
        own = by_id[q.chunk_id]
        siblings = by_document[own.document_id]
        here = position[own.id]
        key = q.subject.lower().split(".")[-1]
        neighbours = sorted(
            (c for c in siblings if c.heading != own.heading and key not in f"{c.heading} {c.text}".lower()),
            key=lambda c: abs(position[c.id] - here),
        )[:negatives]
        pairs.append((q.question, own.text, 1))
        pairs.append((q.question, q.answer.judged, 1))
        pairs += [(q.question, c.text, 0) for c in neighbours]
        if neighbours and (strips := strips_in_context(neighbours[0].text, section_of(neighbours[0].heading))):
            pairs.append((q.question, rng.choice(strips).judged, 0))
    return pairs


class NoSectionQuestions(ValueError):
    """A collection with no section to write a question from: nothing to adapt to."""


def collections_training_pairs(
    slugs: Iterable[str], make: Callable[[list[SectionQuestion], list[SectionChunk]], list[tuple]], labels
) -> tuple[list[tuple], Counter]:
    """The pairs `make` writes from each collection's section questions, and their mix as the
    model card counts it ("corpus:SLUG/label")."""
    pairs, counts = [], Counter()
    for slug in slugs:
        chunks = collection_chunks(slug)
        made = make(section_questions(chunks), chunks)
        if not made:
            raise NoSectionQuestions(
                f"--from-corpus {slug}: no section of that collection has a subject and two sentences"
            )
        pairs += made
        counts.update((f"corpus:{slug}", labels[label]) for _, _, label in made)
    return pairs, counts
