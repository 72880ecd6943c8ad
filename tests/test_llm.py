"""Generation against a real model server: llama.cpp's OpenAI-compatible server with SmolLM2-135M
(tests/llama_server.py), reached through Cairn's own client, and the output gate on what it writes.
A 135M model is a poor writer, which makes it a good adversary: the cases below are what it
wrote for the demo questions, not scripted replies."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest
from django.conf import settings
from django.test import override_settings

from pipeline.generators import EvidenceText, OpenAIGenerator, prompt_tokens, within_context
from pipeline.output_gate import (
    SHOWN,
    asked_words_missing,
    fragment_sources,
    specifics,
    stated_together,
    unmarked,
    words_found,
)
from tests import loopback
from tests.conftest import client_for
from tests.llama_server import CONTEXT, LlamaServer
from tests.test_streaming import events_of

pytestmark = pytest.mark.django_db


def on(server, **extra):
    return override_settings(
        CAIRN_OPENAI_BASE_URL=server.url,
        CAIRN_OPENAI_MODEL=getattr(server, "model", "any"),
        CAIRN_OPENAI_CONTEXT=CONTEXT,
        **extra,
    )


def asked(user, question: str, **payload) -> dict:
    response = client_for(user).post(
        "/api/v1/query", {"question": question, "mode": "standard", "generator": "openai", **payload}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()


def completions_served(server) -> int:
    """How many chat completions the llama.cpp server has answered (its access log)."""
    return server.log.read_text(errors="replace").count('"POST /v1/chat/completions HTTP/1.1" 200')


def test_a_streamed_answer_from_the_real_model_passes_the_gate_sentence_by_sentence(charlie, smollm2):
    with on(smollm2):
        response = client_for(charlie).post(
            "/api/v1/query",
            {"question": "where did the term spirits for alcohol come from", "mode": "standard",
             "generator": "openai", "stream": True},
            format="json",
        )  # fmt: skip
        events = events_of(response)
    texts = [data["text"] for kind, data in events if kind == "text"]
    body = events[-1][1]
    assert events[-1][0] == "answer" and body["generator"] == "openai" and body["found"]
    assert "Middle Eastern alchemy" in body["answer"]
    assert "".join(texts).strip() == body["answer"]  # what streamed is what was recorded
    shown = [s for s in body["sentences"] if s["verdict"] == SHOWN]
    assert len(texts) == len(shown) >= 1  # released a sentence at a time, each once it passed
    assert all(max(s["scores"][str(n)] for n in s["shown_cited"]) >= settings.CAIRN_GROUNDING_THRESHOLD for s in shown)
    assert {c["n"] for c in body["citations"]} == {n for s in shown for n in s["shown_cited"]}
    assert "output_gate" in body["timings_ms"] and "first_shown" in body["timings_ms"]


# Questions SmolLM2 answered with something of its own (2026-11-26): the House of Representatives
# electing the president, Sophocles born on Crete around 1600 BC, Billy Hill at the "1936 Monterey
# Jazz Festival", "What a Wonderful World" called a classic of the 20th century.
INVENTED = {
    "the group that officially elects the president of the united states is called": "House of Representatives",
    "who wrote antigone and what are the dates of his birth and death": "Crete",
    "who wrote the song the glory of love": "Monterey",
    "what type of song is what a wonderful world": "20th century",
}


def test_what_the_model_made_up_never_reaches_the_reader(charlie, smollm2):
    left_out, before = 0, completions_served(smollm2)
    with on(smollm2):
        for question, invention in INVENTED.items():
            body = asked(charlie, question)
            assert invention not in body["answer"], (question, body["answer"])
            assert "<<<" not in body["answer"] and ">>" not in body["answer"]
            written = [s for s in body["sentences"] if s["verdict"] != SHOWN]
            left_out += len(written)
            if body["generator"] == "extractive" and body["sentences"]:  # withheld whole: said so, and why
                assert any("withheld" in note for note in body["notes"])
            elif written:
                count = len(written)
                assert any(note.startswith(f"{count} sentence") and "left out" in note for note in body["notes"])
    assert left_out >= 2  # the gate had something to do: these answers are not all clean
    assert completions_served(smollm2) - before >= len(INVENTED)  # each answer was the model's to check


def test_deep_mode_runs_its_loop_on_the_openai_compatible_server(charlie, smollm2):
    before = completions_served(smollm2)
    with on(smollm2, CAIRN_LLM="openai", CAIRN_DEEP_MAX_ITERATIONS=1):
        response = client_for(charlie).post(
            "/api/v1/query", {"question": "who got the first nobel prize in physics", "mode": "deep"}, format="json"
        )
    assert response.status_code == 200, response.content
    body = response.json()
    # The loop ran on SmolLM2 (the iterations count is set only once its two answers came back),
    # and what it wrote passed the gate or gave way to the extractive answer.
    assert body["mode"] == "deep" and body["iterations"] is not None
    assert completions_served(smollm2) - before >= 2  # the model wrote (at least) the loop's two answers
    assert body["generator"] in ("openai", "extractive")
    assert all(s["verdict"] != SHOWN or s["sentence"] in body["answer"] for s in body["sentences"])
    assert "<<<" not in body["answer"]


def test_the_validation_reuses_the_gates_scores(charlie, smollm2):
    from judges.grounding import answer_sentences
    from writeback.models import WriteBack
    from writeback.validation import gate_scores

    with on(smollm2):
        body = asked(charlie, "where did the term spirits for alcohol come from")
    assert body["generator"] == "openai"
    writeback = WriteBack.objects.get(response_id=body["response_id"])
    known = gate_scores(writeback, answer_sentences(writeback.answer))
    assert known and all(known), known  # every sentence's support came from the gate's record


def test_a_model_server_that_dies_mid_answer_gives_the_extractive_answer(charlie, monkeypatch):
    with LlamaServer() as server, on(server, CAIRN_OPENAI_MAX_TOKENS=400):
        pieces = OpenAIGenerator._pieces

        def dying(self, *args, **kwargs):
            for i, piece in enumerate(pieces(self, *args, **kwargs)):
                if i == 2:
                    server.kill()  # a crash: the connection is cut with the answer half written
                yield piece

        monkeypatch.setattr(OpenAIGenerator, "_pieces", dying)
        body = asked(charlie, "who got the first nobel prize in physics")
    assert server.process.returncode is not None
    assert body["generator"] == "extractive" and "Röntgen" in body["answer"]
    assert any(note.startswith("openai unavailable") for note in body["notes"])


def test_a_stalled_model_server_times_out_into_the_extractive_answer(charlie):
    with LlamaServer() as server, on(server, CAIRN_OPENAI_TIMEOUT=2):
        server.pause()  # the port still accepts connections; nothing is ever written
        started = time.monotonic()
        body = asked(charlie, "who got the first nobel prize in physics")
        waited = time.monotonic() - started
    assert body["generator"] == "extractive" and "Röntgen" in body["answer"]
    assert any("openai unavailable" in note for note in body["notes"])
    assert waited < 20  # the timeout, not the stall, decided


class Trickle(BaseHTTPRequestHandler):
    """A chat-completions server that writes a valid token every 0.2 s and never finishes on time."""

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        try:
            for _ in range(50):
                event = {"choices": [{"index": 0, "delta": {"content": "Röntgen "}, "finish_reason": None}]}
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
                time.sleep(0.2)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up, as it should

    def log_message(self, *args):
        pass


def test_a_model_still_writing_past_the_timeout_is_cut_off(charlie):
    # The whole answer is bounded, not only the silence between tokens (each gap here is 0.2 s).
    server = ThreadingHTTPServer(("127.0.0.1", 0), Trickle)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with on(SimpleNamespace(url=f"http://127.0.0.1:{server.server_address[1]}"), CAIRN_OPENAI_TIMEOUT=1.5):
            started = time.monotonic()
            body = asked(charlie, "who got the first nobel prize in physics")
            waited = time.monotonic() - started
    finally:
        server.shutdown()
    assert body["generator"] == "extractive" and any("still writing after 1.5 s" in note for note in body["notes"])
    assert waited < 8  # not the 10 s the server would have taken


@pytest.mark.parametrize(
    "reply",
    [
        (200, b"<html><body>502 Bad Gateway</body></html>"),  # a proxy's page, not a stream
        (200, b"data: {not json\n\n"),
        (200, b'data: {"error": {"message": "model overloaded"}}\n\n'),
        (500, {"error": {"message": "CUDA out of memory"}}),
    ],
)
def test_a_model_server_answering_garbage_gives_the_extractive_answer_never_a_500(charlie, reply):
    with loopback.LoopbackServer(lambda method, path, query, body: reply) as server, on(server):
        body = asked(charlie, "who got the first nobel prize in physics")
    assert body["generator"] == "extractive" and "Röntgen" in body["answer"]
    assert any("openai unavailable" in note for note in body["notes"])


def test_the_prompt_fits_the_models_context_by_dropping_the_weakest_evidence():
    evidence = [
        EvidenceText(n, f"Passage {n}. " + "word " * 300, f"Title {n}", relevances=(relevance,))
        for n, relevance in [(1, 0.9), (2, 0.2), (3, 0.7), (4, 0.1)]
    ]
    kept, dropped = within_context("what is it", evidence, [], budget=1400)
    assert [e.n for e in kept] == [1, 3] and dropped == 2
    kept, dropped = within_context("what is it", evidence, [], budget=100)  # not even one fits: the best, cut
    assert [e.n for e in kept] == [1] and dropped == 3 and len(kept[0].text) < len(evidence[0].text)
    kept, dropped = within_context("what is it", evidence, [], budget=10_000)
    assert kept == evidence and dropped == 0
    assert prompt_tokens("x" * 300) >= 100  # counted cautiously: 3 characters a token


def test_the_prompts_own_markup_is_removed_from_what_the_model_wrote():
    evidence = [EvidenceText(1, "…", "Justice of the Peace"), EvidenceText(2, "…", "Fundamental rights in India")]
    assert unmarked("Justice of the Peace>> The job is to keep the peace [1].", evidence).strip() == (
        "The job is to keep the peace [1]."
    )
    assert unmarked("<<<[2] Fundamental rights in India>>>\nRights are listed [2].\n<<<end>>>", evidence).strip() == (
        "Rights are listed [2]."
    )
    assert unmarked("> Quoted as Markdown [1].", evidence) == "Quoted as Markdown [1]."
    assert unmarked("It is > 3 and < 5 [1].", evidence) == "It is > 3 and < 5 [1]."  # comparisons stay


def test_a_claims_names_and_figures_must_come_from_one_sentence_and_its_words_from_the_passage():
    question = "who got the first nobel prize in physics"
    passage = [
        "The first Nobel Prize in Physics was awarded in 1901 to Wilhelm Conrad Röntgen, who received 150,782 SEK.",
        "John Bardeen is the only laureate to win the prize twice.",
    ]
    swapped = specifics("It was awarded to John Bardeen, who received 150,782 SEK.", question)
    assert swapped == {"john", "bardeen", "150,782", "sek"} and not stated_together(swapped, passage)
    assert stated_together(specifics("Wilhelm Conrad Röntgen received it in 1901.", question), passage)
    assert words_found("Röntgen received 150,782 SEK.", question, " ".join(passage)) == 1.0
    assert words_found("It contains the auditory system and the nasal cavity.", question, " ".join(passage)) == 0.0


def test_a_claim_may_not_graft_the_questions_words_onto_another_fact():
    question = "who is the number one ranked golfer in the world right now"
    tennis = "Since 1973, 26 men have been ranked No. 1 by the ATP. The current world number one is Rafael Nadal."
    assert "golfer" in asked_words_missing(
        "The number one ranked golfer in the world right now is Rafael Nadal.", question, tennis
    )
    assert not asked_words_missing("The current world number one is Rafael Nadal.", question, tennis)


def test_an_answer_of_a_few_words_must_come_from_a_sentence_that_answers_the_question():
    question = "who is the founder of el pollo loco"
    sentences = {
        1: ["El Pollo Loco is the name of two independent restaurant chains that are controlled by different "
            "companies, El Pollo Loco, Inc. and El Pollo Loco, S.A. de C.V.",
            "Both companies specialize in Mexican-style grilled chicken and were founded by Juan Francisco Ochoa."],
    }  # fmt: skip
    assert fragment_sources(question, "El Pollo Loco, Inc.", sentences) == set()  # named, not as the founder
    assert fragment_sources(question, "Juan Francisco Ochoa.", sentences) == {1}
    assert fragment_sources(question, "Ray Kroc", sentences) == set()  # in no sentence at all
