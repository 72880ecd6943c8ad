"""Cairn as a Model Context Protocol server: the tools of integrations/tools.py for one user, over
streamable HTTP at /mcp (integrations/views.py) or stdio (`manage.py mcp --user NAME`).

The SDK's low-level `Server`, not `MCPServer`: the tools' inputs are checked by the query API's own
serializer (tools.tool_input), so the schemas below only advertise those checks, and a server is
built per caller with the user in its handlers' closure: nothing in a request decides whose
collections are searched but the token the view authenticated (or the command's --user)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import mcp_types as types
from asgiref.sync import sync_to_async
from django.contrib.auth.models import AbstractBaseUser
from mcp.server import Server

from common.exceptions import CairnError
from integrations import tools
from pipeline.models import Answer

log = logging.getLogger(__name__)

SERIALIZER = tools.ToolInputSerializer().fields
INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "question": {
            "type": "string", "minLength": 1, "maxLength": SERIALIZER["question"].max_length,
            "description": "The question, in plain words.",
        },
        "top_k": {
            "type": "integer", "minimum": SERIALIZER["top_k"].min_value, "maximum": SERIALIZER["top_k"].max_value,
            "default": SERIALIZER["top_k"].default, "description": "How many passages to weigh.",
        },
        "collections": {
            "type": "array", "items": {"type": "string", "pattern": "^[-a-zA-Z0-9_]+$"}, "minItems": 1,
            "maxItems": SERIALIZER["collections"].max_length,
            "description": "Collection slugs to search; all you can read when left out.",
        },
        "mode": {
            "type": "string", "enum": list(Answer.Mode.values), "default": SERIALIZER["mode"].default,
            "description": "fast: the gate and an extractive answer; standard: the configured generator; "
            "deep: the retroactive loop on the LLM.",
        },
    },
    "required": ["question"],
    "additionalProperties": False,
}  # fmt: skip
NULLABLE_STRING = {"type": ["string", "null"]}
PASSAGE = {
    "type": "object",
    "properties": {
        "n": {"type": "integer"}, "chunk_id": {"type": "integer"}, "document_id": {"type": "integer"},
        "title": {"type": "string"}, "source": {"type": "string"}, "collection": {"type": "string"},
        "text": {"type": "string"}, "bucket": {"enum": ["VERIFIED", "UNCERTAIN", "REJECTED"]},
        "trust": {"type": "number"}, "relevance": {"type": ["number", "null"]},
        "strips": {"type": "array", "items": {"type": "string"}}, "location_label": {"type": "string"},
        "original_url": NULLABLE_STRING,
    },
    "required": ["n", "title", "source", "collection", "text", "bucket", "trust", "strips"],
}  # fmt: skip
CITATION = {
    "type": "object",
    "properties": {
        "n": {"type": "integer"}, "origin": {"type": "string"}, "chunk_id": {"type": ["integer", "null"]},
        "title": {"type": "string"}, "source": {"type": "string"}, "collection": NULLABLE_STRING,
        "strips": {"type": "array", "items": {"type": "string"}}, "location_label": {"type": "string"},
        "original_url": NULLABLE_STRING,
    },
    "required": ["n", "origin", "title", "source", "strips"],
}  # fmt: skip
SEARCH_OUTPUT = {
    "type": "object",
    "properties": {
        "question": {"type": "string"}, "action": {"type": "string"}, "passages": {"type": "array", "items": PASSAGE},
    },
    "required": ["question", "passages"],
}  # fmt: skip
ASK_OUTPUT = {
    "type": "object",
    "properties": {
        "response_id": {"type": "string"}, "question": {"type": "string"}, "answer": {"type": "string"},
        "outcome": {"enum": list(Answer.Outcome.values)}, "found": {"type": "boolean"},
        "confidence": {"type": ["number", "null"]}, "mode": {"type": "string"},
        "citations": {"type": "array", "items": CITATION},
    },
    "required": ["response_id", "answer", "outcome", "confidence", "citations"],
}  # fmt: skip
TOOLS = [
    types.Tool(
        name="search",
        title="Search Cairn's verified passages",
        description="The passages in the collections you can read that best match a question, ranked, each with "
        "Cairn's verdict (VERIFIED: it answers the question; UNCERTAIN; REJECTED), its trust and relevance, the "
        "sentences kept as relevant, and where it sits in its document. Nothing is recorded.",
        input_schema=INPUT_SCHEMA,
        output_schema=SEARCH_OUTPUT,
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    ),
    types.Tool(
        name="ask",
        title="Ask Cairn",
        description="A verified answer from the collections you can read, with numbered citations [n] and their "
        "sources, as Cairn's /api/v1/query gives it. outcome: answered (stated with confidence), where_to_look (no "
        "claim, the closest passages cited), not_found. Recorded under response_id like any question asked.",
        input_schema=INPUT_SCHEMA,
        output_schema=ASK_OUTPUT,
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
    ),
]
HANDLERS: dict[str, tuple[Callable[[AbstractBaseUser, dict], dict], Callable[[dict], str]]] = {
    "search": (tools.search, tools.search_text),
    "ask": (tools.ask, tools.ask_text),
}
INSTRUCTIONS = (
    "Cairn answers questions from its document collections and verifies what it says. Use `ask` for an answer "
    "with citations, `search` for the passages themselves. You see only the collections your token may read."
)


def error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def server_for(user: AbstractBaseUser) -> Server:
    """An MCP server whose tools answer as `user`."""

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in HANDLERS:
            return error_result(f"unknown tool {params.name!r}; the tools are {', '.join(HANDLERS)}")
        run, text = HANDLERS[params.name]
        try:
            # Django refuses the ORM inside an event loop. thread_sensitive: under the /mcp view the
            # work runs in the very request thread that awaits it (asgiref's async_to_sync), on its
            # database connection, as a DRF view's would; under stdio, in one thread for all calls.
            result: dict[str, Any] = await sync_to_async(run, thread_sensitive=True)(user, params.arguments or {})
        except CairnError as refused:  # a bad input, an unknown or unreadable collection
            return error_result(str(refused))
        except Exception:  # noqa: BLE001 - the caller gets a tool error, never the server's insides
            log.exception("the MCP tool %s failed", params.name)
            return error_result("Answering failed on the server (it is logged). Please ask again.")
        return types.CallToolResult(content=[types.TextContent(text=text(result))], structured_content=result)

    return Server("cairn", title="Cairn", instructions=INSTRUCTIONS, on_list_tools=list_tools, on_call_tool=call_tool)
