"""OpenAI's chat-completions API in front of Cairn: any chat front-end that speaks it (Open WebUI,
LibreChat, an `openai` client) asks Cairn with a base URL (`https://cairn.example/v1`) and a Cairn
token as the API key.

The last user message is the question; the messages before it are the conversation it follows on
from, rewritten into a standalone question as for /api/v1/query (pipeline/conversations.py). The
earlier assistant messages only help read the question; they are never evidence. A system message
is ignored: what answers comes from the verified documents, and no prompt changes how it is
checked. Sampling parameters (temperature, max_tokens, …) are accepted and ignored for the same
reason. The answer is the one /api/v1/query gives the same user for the same question, with the
same access rules, throttle and limits: its text with its [n] citations, the sources listed under
it, and the whole recorded answer in an extra `cairn` field.

Models: `cairn` asks every collection the caller reads; `cairn/<slug>` asks one of them.
Conversations: the chat is matched to the caller's own stored conversation whose turns are its
earlier user messages, so a thread in a chat front-end is one conversation in Cairn too.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator

from django.http import StreamingHttpResponse
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView, exception_handler

from common.exceptions import CairnError, api_exception_handler
from common.sse import MEDIA_TYPE as EVENT_STREAM
from common.sse import STREAM_HEADERS, EventStreamRenderer
from corpus.selectors import collections_readable_by
from pipeline.api import QueryApi, recorded_answer
from pipeline.conversations import Turn, follows_on
from pipeline.models import Answer
from pipeline.selectors import conversations_of
from pipeline.services import query_state
from pipeline.stages import QueryState, pipeline_events

log = logging.getLogger(__name__)

MODEL = "cairn"
ROLES = ("system", "developer", "user", "assistant", "tool")
MAX_MESSAGES = 200
MAX_EARLIER_CHARS = 20_000  # an earlier message is read for its gist only
SOURCES = "\n\nSources:\n"
MATCHED_CONVERSATIONS = 20  # the caller's latest conversations a chat is matched against
MAX_QUESTION = QueryApi.QueryInputSerializer().fields["question"].max_length  # as /api/v1/query takes


def openai_error(response: Response | None) -> Response | None:
    """DRF's error answer in OpenAI's shape ({"error": {"message", "type", "param", "code"}}), which
    OpenAI's clients read: the message names the field at fault."""
    if response is None:
        return None
    body = response.data
    param = None
    if isinstance(body, dict) and "detail" not in body and body:
        param = next(iter(body))
        messages = body[param] if isinstance(body[param], list) else [body[param]]
        message = f"{param}: {' '.join(str(m) for m in messages)}"
    else:
        message = str(body.get("detail", body)) if isinstance(body, dict) else str(body)
    kind = {401: "authentication_error", 403: "permission_error", 404: "not_found_error",
            429: "rate_limit_error"}.get(response.status_code, "invalid_request_error")  # fmt: skip
    response.data = {"error": {"message": message, "type": kind, "param": param, "code": None}}
    return response


def openai_exception_handler(exc, context):
    return openai_error(api_exception_handler(exc, context) or exception_handler(exc, context))


class OpenAIView(APIView):
    renderer_classes = [*api_settings.DEFAULT_RENDERER_CLASSES, EventStreamRenderer]

    def get_exception_handler(self):
        return openai_exception_handler


class MessageSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=ROLES)
    content = serializers.JSONField(help_text="A string, or a list of parts of which the text ones are read.")

    def validate_content(self, content) -> str:
        if content is None:
            return ""
        if isinstance(content, str):
            return content
        if isinstance(content, list) and all(isinstance(p, dict) for p in content):
            return "\n".join(str(p.get("text", "")) for p in content if p.get("type") == "text")
        raise serializers.ValidationError("a string or a list of content parts")


class ChatInputSerializer(serializers.Serializer):
    model = serializers.CharField(max_length=200)
    messages = MessageSerializer(many=True, allow_empty=False, max_length=MAX_MESSAGES)
    stream = serializers.BooleanField(default=False)
    # Cairn's own, as extra body fields: as /api/v1/query takes them (QueryApi.QueryInputSerializer).
    mode = serializers.ChoiceField(choices=Answer.Mode.choices, default=Answer.Mode.STANDARD)
    top_k = serializers.IntegerField(min_value=1, max_value=50, default=8)

    def validate_messages(self, messages: list[dict]) -> list[dict]:
        if messages[-1]["role"] != "user":
            raise serializers.ValidationError("the last message must be the user's question")
        question = messages[-1]["content"].strip()
        if not question:
            raise serializers.ValidationError("the last user message has no text")
        if len(question) > MAX_QUESTION:
            raise serializers.ValidationError(f"the question may have at most {MAX_QUESTION} characters")
        if any(len(m["content"]) > MAX_EARLIER_CHARS for m in messages):
            raise serializers.ValidationError(f"a message may have at most {MAX_EARLIER_CHARS} characters")
        return messages


def collections_of_model(user, model: str) -> list[str] | None:
    """The collections a model name asks: None for `cairn` (all the caller reads), [slug] for
    `cairn/<slug>`; an unknown model (a collection the caller cannot read included) is a 404."""
    if model == MODEL:
        return None
    prefix, _, slug = model.partition("/")
    if prefix == MODEL and slug and collections_readable_by(user=user).filter(slug=slug).exists():
        return [slug]
    raise CairnError("model", f"no model {model!r} for you: see GET /v1/models", status_code=status.HTTP_404_NOT_FOUND)


def earlier_turns(messages: list[dict]) -> list[Turn]:
    """The user's earlier questions, each with the assistant's reply to it (its sources left off),
    oldest first."""
    turns: list[Turn] = []
    for message, after in zip(messages[:-1], messages[1:]):
        if message["role"] != "user" or not (asked := message["content"].strip()):
            continue
        reply = after["content"].split(SOURCES)[0] if after["role"] == "assistant" else ""
        stood_alone = not follows_on(asked, turns[-1] if turns else None)
        turns.append(Turn(asked=asked, question=asked, answer=reply, stood_alone=stood_alone))
    return turns


def conversation_matched(user, turns: list[Turn]):
    """The caller's conversation whose turns, as typed, are the chat's earlier user messages."""
    if not turns:
        return None
    asked = [t.asked for t in turns]
    # A conversation's title is its first question as typed (pipeline.stages.record).
    candidates = conversations_of(user=user).filter(turn_count=len(turns), title=asked[0][:200])
    for conversation in candidates[:MATCHED_CONVERSATIONS]:
        if [a.asked or a.question for a in conversation.turns.order_by("created_at")] == asked:
            return conversation
    return None


def chat_state(request, data: dict) -> QueryState:
    collections = collections_of_model(request.user, data["model"])
    turns = earlier_turns(data["messages"])
    conversation = conversation_matched(request.user, turns)
    state = query_state(
        user=request.user, question=data["messages"][-1]["content"].strip(), top_k=data["top_k"],
        collections=collections, mode=data["mode"],
        conversation_id=conversation.conversation_id if conversation else None,
    )  # fmt: skip
    if conversation is None:
        state.earlier = turns  # a chat Cairn has not seen: its messages are the turns
    return state


def content_of(answer: dict, site: str) -> str:
    """The answer as a chat shows it: what it was answered as (a follow-up), the text with its [n]
    citations, then the cited sources."""
    return answered_line(answer) + answer["answer"] + sources_of(answer, site)


def answered_line(answer: dict) -> str:
    return f"Answered: {answer['question']}\n\n" if answer["rewritten_by"] else ""


def sources_of(answer: dict, site: str) -> str:
    """The cited sources, one a line: title, place, and a link on Cairn (`site`: its origin) to the
    original at that place, else to the document's page; a web result links to itself."""
    evidence = {e["n"]: e for e in answer["evidence"]}
    lines = []
    for citation in answer["citations"]:
        item = evidence.get(citation["n"], {})
        where = f", {citation['location_label']}" if citation["location_label"] else ""
        if citation["original_url"]:
            link = site + citation["original_url"]
        elif item.get("document_id"):
            link = site + reverse("document-page", args=[item["document_id"]])
        else:
            link = item.get("source", "")
        lines.append(f"[{citation['n']}] {item.get('title', '')}{where}" + (f" ({link})" if link else ""))
    return SOURCES + "\n".join(lines) if lines else ""


def completion(answer: dict, model: str, site: str) -> dict:
    return {
        "id": f"chatcmpl-{answer['response_id']}", "object": "chat.completion", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content_of(answer, site)},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        "cairn": answer,
    }  # fmt: skip


def chunk(stream_id: str, model: str, delta: dict, finish: str | None = None, **extra) -> bytes:
    body = {"id": stream_id, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}  # fmt: skip
    return f"data: {json.dumps(body, ensure_ascii=False, default=str)}\n\n".encode()


def completion_chunks(state: QueryState, model: str, site: str) -> Iterator[bytes]:
    """The answer as OpenAI's stream: the role, what a follow-up was answered as, the text as the
    pipeline writes it, the sources, then a last chunk with the recorded answer in `cairn`; the
    pieces join to the content of the answer unstreamed. A generator that fails part-way cannot
    take back what a chat client has shown: a line says the text above is withdrawn, and the
    answer from the sources follows."""
    stream_id = f"chatcmpl-{id(state):x}{int(time.time() * 1000):x}"
    yield chunk(stream_id, model, {"role": "assistant", "content": ""})
    try:
        spaces = ""  # the space after a sentence goes out with the next one: none trails the answer
        for progress in pipeline_events(state):
            if progress.kind == "stage" and progress.data["stage"] == "rewrite" and state.rewritten_by:
                yield chunk(stream_id, model, {"content": f"Answered: {state.question}\n\n"})
            elif progress.kind == "text":
                text = progress.data.get("text")
                if text is None:  # a restart
                    text, spaces = "\n\n(Withdrawn: the text above did not pass the check. From the sources:)\n\n", ""
                stripped = text.rstrip()
                if stripped:
                    yield chunk(stream_id, model, {"content": spaces + stripped})
                    spaces = text[len(stripped) :]
                else:
                    spaces += text
        answer = recorded_answer(state)
        yield chunk(stream_id, model, {"content": sources_of(answer, site)})
        yield chunk(stream_id, model, {}, "stop", cairn=answer)
    except Exception:  # noqa: BLE001 - the status line has gone out: the stream itself must say it failed
        log.exception("a chat completion failed: %r", state.question[:200])
        error = {"message": "Answering failed on the server (it is logged). Please ask again.", "type": "server_error"}
        yield f"data: {json.dumps({'error': error})}\n\n".encode()
    yield b"data: [DONE]\n\n"


@extend_schema(exclude=True)  # OpenAI's API, documented by OpenAI and in docs/integrations.md
class ChatCompletionsApi(OpenAIView):
    throttle_scope = "query"

    def post(self, request):
        data = ChatInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        state = chat_state(request, data.validated_data)  # refusals are an error answer before any chunk
        model, site = data.validated_data["model"], request.build_absolute_uri("/").rstrip("/")
        if data.validated_data["stream"] or request.accepted_renderer.media_type == EVENT_STREAM:
            return StreamingHttpResponse(
                completion_chunks(state, model, site), content_type=EVENT_STREAM, headers=STREAM_HEADERS
            )
        for _ in pipeline_events(state):
            pass
        return Response(completion(recorded_answer(state), model, site))


@extend_schema(exclude=True)
class ModelsApi(OpenAIView):
    def get(self, request):
        slugs = collections_readable_by(user=request.user).order_by("slug").values_list("slug", flat=True)
        models = [MODEL, *(f"{MODEL}/{slug}" for slug in slugs)]
        return Response(
            {
                "object": "list",
                "data": [{"id": m, "object": "model", "created": 0, "owned_by": "cairn"} for m in models],
            }
        )
