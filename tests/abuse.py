"""Crafted text for every entry point that reads a user's or a document's text: the table of inputs
and the entry points that tests/test_abuse.py bounds and benchmarks/abuse.py times.

An input is a run of a character some pattern gives meaning to, or a shape that made one of them
backtrack (an unclosed comment, a heading whose closing hashes never come, a sentence stop before
a word that never starts). Each entry point calls the real functions a request or an upload calls,
in the order they call them, up to the models and the database, on the text as it arrives: a
file's bytes (a PDF's are many more than its text's), a question's or an answer's characters.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

# Every character a pattern in corpus/ or pipeline/ gives meaning to.
SIGNIFICANT = "#*_[]()<>!-.`~|\\: \t\n"


def inputs(size: int) -> dict[str, str]:
    """Name -> a crafted text of about `size` characters."""
    cases = {f"run of {c!r}": c * size for c in SIGNIFICANT}
    shapes = {
        "unclosed comments": "<!--",
        "images never closed": "![](",
        "links never closed": "[a](",
        "code spans never closed": "`a",
        "strong never closed": "**a ",
        "escapes": "\\[",
        "dot-space": ". ",
        "quotes nested": "> ",
        "citations": "[1] ",
        "abbreviations": "Dr. A ",
        "opened parentheses": "(a. B ",
        "tabbed lines": "\t\n",
        "blank-ish lines": " \n",
        "list markers": "- ",
        "table cells": "| ",
        "entities": "&amp;",
        "inline tags": "<a ",
        "elements nested": "<p>",
    }
    cases |= {name: unit * (size // len(unit)) for name, unit in shapes.items()}
    half = size // 2
    cases |= {
        "heading never closed": "# a" + " " * size + "b",
        "brackets nested": "[" * half + "]" * half,
        "parentheses nested": "(" * half + ")" * half,
        "stops before no sentence": "a" + "." * size + " b",
        "a word before its stop": "a" * size + " . B",
        "spaces before a citation": "a" + " " * size + "[1] x",
        "key and spaces": "| Key:" + " " * size + ";",
        "front matter title": "---\ntitle: a" + " " * size + "b\n---\nText.",
        "item of tabs": "-" + "\t" * size + "x [1]",
    }
    return cases


def _tokens() -> tuple[Callable, Callable]:
    from corpus.embedder import get_embedder

    embedder = get_embedder()
    return embedder.count_tokens, embedder.split_tokens


def document_read(text: str) -> None:
    """What ingestion does with a document's text before embedding it (corpus.services)."""
    from corpus.chunking import chunk_text
    from corpus.consistency import consistency_score
    from corpus.instructions import addresses_a_model
    from corpus.services import chunk_heading

    count_tokens, split_tokens = _tokens()
    for piece in chunk_text(text, count_tokens=count_tokens, split_tokens=split_tokens):
        consistency_score(piece.text)
        addresses_a_model(piece.text)
        chunk_heading("Abuse", piece.section)


def pdf_bytes(text: str) -> bytes:
    """A one-page PDF whose text layer holds `text` (tests.documents.write_pdf, in memory)."""
    from pathlib import Path
    from tempfile import TemporaryDirectory

    from tests.documents import write_pdf

    lines = [line[i : i + 1000] for line in text.split("\n") for i in range(0, len(line), 1000) or [0]]
    with TemporaryDirectory() as folder:
        return write_pdf(Path(folder) / "abuse.pdf", lines).read_bytes()


def upload(name: str, data: bytes) -> None:
    """An uploaded file: extracted as its name says (corpus.extract), then read as a document."""
    from corpus.extract import ExtractedDocument, ExtractionError, extract_bytes

    try:
        items = extract_bytes(name, data, source=f"upload:{name}")
    except ExtractionError:
        return  # refused, with a reason: a 400, not a hang
    for item in items:
        if isinstance(item, ExtractedDocument):
            document_read(item.text)


def question_asked(question: str) -> None:
    """The request path's text functions over the question, before and between the models."""
    from corpus.instructions import addresses_a_model
    from corpus.selectors import DOTTED, SNAKE_CASE
    from judges.nli_data import claim_from
    from judges.verifiers import asking_sentence
    from pipeline.extractive import content_terms
    from pipeline.gate import without_echo, written_as_name
    from pipeline.search import keyword_query

    asking_sentence(question)
    content_terms(question)
    keyword_query(question)
    claim_from(question, "Wilhelm Conrad Röntgen")
    without_echo(question, ORDINARY_PASSAGE)
    addresses_a_model(question)
    SNAKE_CASE.findall(question)
    DOTTED.findall(question)
    for word in sorted(set(question.split()))[:20]:
        written_as_name(question, word)


def writeback_edit(answer: str) -> None:
    """A curator's edited answer: split into cited sentences and made into what would be published."""
    from corpus.citations import citation_numbers, keep_citations, without_citations
    from judges.grounding import answer_sentences, verbatim_in
    from writeback.validation import attribution_score, proposed_text

    sentences = answer_sentences(answer)
    proposed_text("Who got the first Nobel Prize in Physics?", sentences, [{"n": 1, "title": "Nobel"}])
    attribution_score(sentences, {1})
    for sentence, _ in sentences[:50]:
        verbatim_in(sentence, [{"text": ORDINARY_PASSAGE}])
    citation_numbers(answer)
    without_citations(answer)
    keep_citations(answer, {1})


def critique_reason(reason: str) -> None:
    """A curator's reason for rejecting a write-back, as later answers are warned with it."""
    from pipeline.generators import answer_prompt
    from writeback.validation import critique_text

    answer_prompt("When did it open?", [], warnings=[critique_text([{"check": "curator", "reason": reason}])])


def search_result(text: str) -> None:
    """An external search result's text, cut into strips and judged without the question's echo."""
    from corpus.strips import strips_of
    from pipeline.extractive import content_terms
    from pipeline.gate import without_echo

    for strip in strips_of(text):
        content_terms(strip)
    without_echo(ORDINARY_QUESTION, text)


def generated_answer(reply: str) -> None:
    """An LLM's reply (which may repeat a document's text): citations checked, streamed, inferred."""
    from pipeline.generators import answer_pieces, parse_answer
    from pipeline.retro import inferred_statements

    parse_answer(reply, {1, 2}, "ollama")
    answer_pieces(reply)
    inferred_statements(reply)


ORDINARY_QUESTION = "Who got the first Nobel Prize in Physics?"
ORDINARY_PASSAGE = (
    "The first Nobel Prize in Physics was awarded in 1901 to Wilhelm Conrad Röntgen, of Germany, who "
    "received 150,782 SEK. It honoured his discovery of the remarkable rays subsequently named after him."
)


def _jsonl(text: str) -> bytes:
    return json.dumps({"title": "Abuse", "text": text}).encode()


@dataclass(frozen=True)
class EntryPoint:
    read: Callable  # what the entry point does with what arrives
    arrives: Callable[[str], str | bytes] = lambda text: text  # a crafted text as it arrives (a file's bytes)
    # Times the CPU bound per 10 KB it is held to. A PDF's layout is read from every glyph's box and
    # font: five times the bound was set when pdfminer took about 25 µs a glyph; PDFium takes about
    # 4 (2026-11-26). A backtracking pattern still misses the bound by orders of magnitude.
    cost: float = 1.0


def _file(name: str, encode: Callable[[str], bytes] = str.encode, cost: float = 1.0) -> EntryPoint:
    return EntryPoint(lambda data: upload(name, data), encode, cost)


ENTRY_POINTS: dict[str, EntryPoint] = {
    "question": EntryPoint(question_asked),
    "upload .txt": _file("abuse.txt"),
    "upload .md": _file("abuse.md"),
    "upload .html": _file("abuse.html"),
    "upload .jsonl": _file("abuse.jsonl", _jsonl),
    "upload .pdf": _file("abuse.pdf", pdf_bytes, cost=5.0),
    "write-back edit": EntryPoint(writeback_edit),
    "critique reason": EntryPoint(critique_reason),
    "search result": EntryPoint(search_result),
    "generated answer": EntryPoint(generated_answer),
}
