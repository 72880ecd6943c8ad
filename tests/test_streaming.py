"""Streamed answers: server-sent events from POST /api/v1/query, ending in the very body a plain
request gets. (Under the production server: tests/test_serving.py's browser test.)"""

import json

import pytest
from django.test import override_settings

from pipeline.stages import Progress
from tests import loopback
from tests.conftest import client_for
from tests.loopback import free_port

pytestmark = pytest.mark.django_db
QUESTION = "who got the first nobel prize in physics"


def events_of(response) -> list[tuple[str, dict]]:
    """Parse a text/event-stream body, streamed or not, the way a browser's reader would:
    blank-line separated blocks."""
    content = b"".join(response.streaming_content) if response.streaming else response.content
    body = content.decode()
    events = []
    for block in body.split("\n\n"):
        if block.strip():
            fields = dict(line.split(": ", 1) for line in block.splitlines())
            events.append((fields["event"], json.loads(fields["data"])))
    return events


def streamed(user, **payload) -> list[tuple[str, dict]]:
    response = client_for(user).post("/api/v1/query", payload | {"stream": True}, format="json")
    assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
    assert response["Cache-Control"] == "no-cache" and response["X-Accel-Buffering"] == "no"
    return events_of(response)


def test_a_streamed_answer_shows_each_stage_then_its_sentences_then_the_recorded_answer(charlie):
    events = streamed(charlie, question=QUESTION, mode="fast", top_k=5)
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "stage" and events[0][1] == {"stage": "asked"}
    stages = [data["stage"] for kind, data in events if kind == "stage"]
    assert stages == ["asked", "rewrite", "embed_query", "retrieve", "rank", "verify", "correct", "refine", "recall", "generate",
                      "record"]  # fmt: skip
    verify = next(data for kind, data in events if kind == "stage" and data["stage"] == "verify")
    assert verify["passages"] == 5 and 1 <= verify["verified"] <= 5 and verify["ms"] > 0
    # The answer text comes before the generate stage is reported finished, and before the record.
    texts = [i for i, (kind, _) in enumerate(events) if kind == "text"]
    generated = next(i for i, (kind, data) in enumerate(events) if kind == "stage" and data["stage"] == "generate")
    assert texts and max(texts) < generated
    assert kinds[-1] == "answer"
    body = events[-1][1]
    assert "".join(data["text"] for kind, data in events if kind == "text").strip() == body["answer"]
    assert "Röntgen" in body["answer"]
    # The final event is the recorded response, exactly what GET (and a plain POST) returns.
    assert client_for(charlie).get(f"/api/v1/answers/{body['response_id']}").json() == body


def test_accept_event_stream_streams_and_a_bad_field_is_a_400_event_naming_it(charlie):
    client = client_for(charlie)
    response = client.post("/api/v1/query", {"question": QUESTION, "mode": "fast"}, format="json",
                           HTTP_ACCEPT="text/event-stream")  # fmt: skip
    assert response.status_code == 200 and events_of(response)[-1][0] == "answer"
    bad = client.post("/api/v1/query", {"question": QUESTION, "top_k": 0}, format="json",
                      HTTP_ACCEPT="text/event-stream")  # fmt: skip
    assert bad.status_code == 400 and bad["Content-Type"].startswith("text/event-stream")
    kind, data = events_of(bad)[0]
    assert kind == "error" and "top_k" in data
    # A plain JSON client asking for a stream with a bad field gets the usual JSON 400.
    plain = client.post("/api/v1/query", {"question": "", "stream": True}, format="json")
    assert plain.status_code == 400 and "question" in plain.json()
    assert client.post("/api/v1/query", {"question": QUESTION, "stream": "sometimes"}, format="json").status_code == 400


def test_an_ollama_answer_streams_a_sentence_at_a_time_as_each_passes_the_output_gate(charlie):
    def chat(messages, options):
        # [9] names no evidence; the second sentence is not in the passage.
        return "Wilhelm Conrad Röntgen received it in 1901 [1] [9]. He was born on the Moon in 1700 [1]."

    with loopback.ollama(chat) as server, override_settings(OLLAMA_HOST=server.url):
        events = streamed(charlie, question=QUESTION, generator="ollama")
    texts = [data["text"] for kind, data in events if kind == "text"]
    assert texts == ["Wilhelm Conrad Röntgen received it in 1901 [1]. "]  # the sentence that passed, whole
    body = events[-1][1]
    assert body["answer"] == "Wilhelm Conrad Röntgen received it in 1901 [1]." and body["generator"] == "ollama"
    assert "1 sentence left out: the sources do not support it" in body["notes"]
    verdicts = {s["sentence"]: s["verdict"] for s in body["sentences"]}
    assert verdicts == {"Wilhelm Conrad Röntgen received it in 1901.": "shown",
                        "He was born on the Moon in 1700.": "unsupported"}  # fmt: skip
    assert [call["body"]["stream"] for call in server.calls] == [True]


def test_ollama_down_falls_back_to_the_extractive_answer_in_the_stream(charlie):
    with override_settings(OLLAMA_HOST=f"http://127.0.0.1:{free_port()}", CAIRN_OLLAMA_TIMEOUT=2):
        events = streamed(charlie, question=QUESTION, generator="ollama")
    body = events[-1][1]
    assert events[-1][0] == "answer" and body["generator"] == "extractive" and "Röntgen" in body["answer"]
    assert "".join(data.get("text", "") for kind, data in events if kind == "text").strip() == body["answer"]


def test_not_found_streams_the_not_found_answer(charlie):
    events = streamed(charlie, question="the of and", mode="fast")
    assert events[-1][0] == "answer" and events[-1][1]["found"] is False
    assert any(kind == "text" and data["text"].startswith("Not found") for kind, data in events)


def test_a_failure_part_way_is_an_error_event_that_leaks_nothing(charlie, monkeypatch):
    def explode(state):
        yield Progress("stage", {"stage": "embed_query", "ms": 1.0})
        raise RuntimeError("secret socket /tmp/x")

    monkeypatch.setattr("pipeline.api.pipeline_events", explode)
    events = streamed(charlie, question=QUESTION, mode="fast")
    assert [kind for kind, _ in events] == ["stage", "stage", "error"]
    assert "secret" not in json.dumps(events) and "ask again" in events[-1][1]["detail"]
