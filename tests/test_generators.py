"""Generators: extractive numbering, the Ollama client against a loopback server speaking the
Ollama HTTP API, honest citations, and a clear failure when Ollama is down."""

import socket

import ollama
import pytest

from pipeline.generators import (
    NOT_FOUND,
    EvidenceText,
    ExtractiveGenerator,
    GeneratorUnavailable,
    OllamaGenerator,
    parse_answer,
)
from tests import loopback

EVIDENCE = [
    EvidenceText(2, "The museum opened in 1889. It is closed on Mondays.", "Museum"),
    EvidenceText(5, "The museum café serves lunch from noon.", "Café", "external"),
]


def test_extractive_cites_evidence_by_its_response_number():
    generation = ExtractiveGenerator().generate("When did the museum open?", EVIDENCE)
    assert generation.text.startswith("The museum opened in 1889. [2]")  # numbered 2 and 5, not 1 and 2
    assert "noon. [5]" in generation.text and generation.cited == [2, 5]
    assert not ExtractiveGenerator().generate("Who won the cup final?", EVIDENCE).found


def test_extractive_uses_the_gates_strip_scores_when_every_evidence_has_them(settings):
    settings.CAIRN_ANSWER_SENTENCES = 1
    scored = [
        EvidenceText(2, "The museum opened in 1889. It is closed on Mondays.", "Museum",
                     strips=(("The museum opened in 1889.", 0.4), ("It is closed on Mondays.", 0.9))),
        EvidenceText(5, "The museum café serves lunch from noon.", "Café", "external",
                     strips=(("The museum café serves lunch from noon.", 0.2),)),
    ]  # fmt: skip
    generation = ExtractiveGenerator().generate("When can I visit the museum?", scored)
    assert (generation.text, generation.cited) == ("It is closed on Mondays. [2]", [2])
    lexical = ExtractiveGenerator().generate("When can I visit the museum?", EVIDENCE)  # no scores: word overlap
    assert lexical.text == "The museum opened in 1889. [2]"


def test_ollama_generator_sends_numbered_evidence_and_keeps_only_real_citations():
    seen = {}

    def chat(messages, options):
        seen["messages"], seen["options"] = messages, options
        return "The museum opened in 1889 [2]. Lunch is served from noon [5][9]."

    with loopback.ollama(chat) as server:
        generation = OllamaGenerator(server.url, "llama3.2:3b", timeout=5).generate(
            "When did the museum open?", EVIDENCE, warnings=["Do not guess opening hours."], temperature=0.0
        )
    prompt = seen["messages"][1]["content"]
    assert "[2] Museum: The museum opened in 1889." in prompt and "[5] Café (external):" in prompt
    assert "Do not guess opening hours." in prompt and seen["options"]["temperature"] == 0.0
    assert "only the numbered evidence" in seen["messages"][0]["content"]
    assert generation.text == "The museum opened in 1889 [2]. Lunch is served from noon [5]."
    assert generation.cited == [2, 5] and "[9]" in generation.notes[0]


def test_the_loopback_server_streams_like_ollama():
    with loopback.ollama(lambda messages, options: "streamed reply here", lambda prompt, options: "a b") as server:
        client = ollama.Client(host=server.url)
        parts = [
            p.message.content for p in client.chat(model="m", messages=[{"role": "user", "content": "hi"}], stream=True)
        ]
        assert "".join(parts) == "streamed reply here" and len(parts) > 2
        assert client.generate(model="m", prompt="x", stream=False).response == "a b"


def test_not_found_reply_and_unreachable_server():
    assert parse_answer("NOT_FOUND", {1}, "ollama").text == NOT_FOUND
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(GeneratorUnavailable):
        OllamaGenerator(f"http://127.0.0.1:{port}", "llama3.2:3b", timeout=2).generate("q?", EVIDENCE)
