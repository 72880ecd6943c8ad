"""Generators: verified evidence in, a cited answer out.

- `extractive` (default, always available, deterministic): the best refined strips, ordered and
  de-duplicated, each sentence cited.
- `ollama`: the official `ollama` client against OLLAMA_HOST (model CAIRN_OLLAMA_MODEL), with a
  prompt that lists the evidence by number, forbids uncited claims and passes the warnings of
  past critiques. Unreachable, timed out or erroring: `GeneratorUnavailable`, and the pipeline
  falls back to extractive and says so.

Both only ever see VERIFIED evidence: the gate decides what reaches this module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

import httpx
from django.conf import settings

from pipeline.extractive import extractive_answer

NOT_FOUND = "Not found in the knowledge base: no verified evidence answers this question."
_NOT_FOUND_MARK = "NOT_FOUND"
CITATION = re.compile(r"\[(\d+)\]")  # an [n] citation; validation reads answers with it too


@dataclass(frozen=True)
class EvidenceText:
    n: int  # the citation number, as the response numbers evidence
    text: str  # refined: the kept strips
    title: str = ""
    origin: str = "corpus"
    strips: tuple[tuple[str, float], ...] = ()  # the kept strips with their relevance, when scored


@dataclass
class Generation:
    text: str
    cited: list[int]
    generator: str
    found: bool = True
    notes: list[str] = field(default_factory=list)


class GeneratorUnavailable(Exception):
    """The generator cannot answer now (server down, timeout, error reply)."""


class Generator(Protocol):
    name: str

    def generate(
        self, question: str, evidence: list[EvidenceText], *, warnings: list[str] = (), temperature: float = 0.0
    ) -> Generation: ...


def not_found(generator: str) -> Generation:
    return Generation(NOT_FOUND, [], generator, found=False)


class ExtractiveGenerator:
    name = "extractive"

    def generate(self, question, evidence, *, warnings=(), temperature=0.0) -> Generation:
        scored = [list(e.strips) for e in evidence] if evidence and all(e.strips for e in evidence) else None
        text, cited = extractive_answer(
            question, [e.text for e in evidence], max_sentences=settings.CAIRN_ANSWER_SENTENCES, scored_strips=scored
        )
        if not text:
            return not_found(self.name)
        numbers = [e.n for e in evidence]  # extractive_answer numbers passages 1..k; map back to n
        text = CITATION.sub(lambda m: f"[{numbers[int(m.group(1)) - 1]}]", text)
        return Generation(text, [numbers[i - 1] for i in cited], self.name)


SYSTEM_PROMPT = (
    "You answer questions for an organisation using only the numbered evidence given to you. "
    "End every sentence with the number of the evidence that supports it, like [1] or [2][3]. "
    "Do not state anything the evidence does not support, and do not use outside knowledge. "
    f"If the evidence does not answer the question, reply with exactly {_NOT_FOUND_MARK}."
)


def answer_prompt(question: str, evidence: list[EvidenceText], warnings: list[str] = ()) -> str:
    lines = ["Evidence:"]
    for e in evidence:
        label = f"{e.title} (external)" if e.origin == "external" else e.title
        lines.append(f"[{e.n}] {label}: {e.text}" if label else f"[{e.n}] {e.text}")
    if warnings:
        lines += ["", "Curators rejected earlier answers to similar questions for these reasons; avoid repeating them:"]
        lines += [f"- {w}" for w in warnings]
    lines += ["", f"Question: {question}", "Answer:"]
    return "\n".join(lines)


class OllamaGenerator:
    name = "ollama"

    def __init__(self, host: str, model: str, *, timeout: float) -> None:
        import ollama

        self.model = model
        self.client = ollama.Client(host=host, timeout=timeout)

    def _call(self, method: str, **kwargs):
        import ollama

        try:
            return getattr(self.client, method)(model=self.model, stream=False, **kwargs)
        except (ollama.ResponseError, httpx.HTTPError, ConnectionError, OSError) as exc:
            raise GeneratorUnavailable(f"Ollama ({self.model}) failed: {exc}") from exc

    def generate(self, question, evidence, *, warnings=(), temperature=0.0) -> Generation:
        reply = self._call(
            "chat",
            messages=[
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": answer_prompt(question, evidence, warnings)},
            ],
            options={"temperature": temperature, "seed": 0},
        )
        return parse_answer(reply.message.content or "", {e.n for e in evidence}, self.name)

    def complete(self, prompt: str, *, temperature: float = 0.0) -> str:
        """One plain completion (/api/generate): query rewriting and the deep loop's helpers."""
        return (self._call("generate", prompt=prompt, options={"temperature": temperature}).response or "").strip()


def parse_answer(text: str, allowed: set[int], generator: str) -> Generation:
    """Keep an LLM's answer honest about its citations: numbers that name no verified evidence are
    removed (and noted); an explicit NOT_FOUND, or an empty reply, is the not-found answer."""
    text = text.strip()
    if not text or text.upper().startswith(_NOT_FOUND_MARK):
        return not_found(generator)
    invalid = sorted({int(n) for n in CITATION.findall(text)} - allowed)
    if invalid:
        text = CITATION.sub(lambda m: m.group(0) if int(m.group(1)) in allowed else "", text)
    cited = sorted({int(n) for n in CITATION.findall(text)})
    notes = [f"removed citations to evidence that was not provided: {invalid}"] if invalid else []
    return Generation(re.sub(r"\s+", " ", text).strip(), cited, generator, notes=notes)


def get_generator(name: str) -> Generator:
    if name == "ollama":
        return OllamaGenerator(settings.OLLAMA_HOST, settings.CAIRN_OLLAMA_MODEL, timeout=settings.CAIRN_OLLAMA_TIMEOUT)
    return ExtractiveGenerator()
