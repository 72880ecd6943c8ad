"""/mcp: the Model Context Protocol's streamable HTTP transport on Cairn's own server.

Cairn is served by gunicorn (WSGI); the SDK's transport is an ASGI application. Each request is a
whole exchange here: the SDK's stateless mode (no session to keep between requests, so any worker
of any process can answer any request) with JSON responses (one body, no open stream to hold a
worker thread), run for this one request with asgiref's async_to_sync. DRF does what it does for
every API view first: the caller's token (`Bearer <key>` as MCP clients send it, or `Token <key>`),
and the query API's throttle on each tool call. The body is bounded as the JSON API bounds it.

Origin: the SDK's DNS-rebinding check is left off. It guards servers a browser reaches with
ambient credentials; /mcp takes only a token in the Authorization header, which a page of another
origin cannot send on its reader's behalf, and Django's ALLOWED_HOSTS still applies."""

from __future__ import annotations

import json

import anyio
from asgiref.sync import async_to_sync
from django.conf import settings
from django.http import HttpResponse
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import ParseError
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from accounts.authentication import BearerTokenAuthentication
from common.parsers import BodyTooLarge, json_depth
from integrations.mcp_server import server_for

# Headers of the exchange the SDK has no use for: the token stays with DRF.
WITHHELD = {"authorization", "cookie"}


class JsonAnswers(BaseContentNegotiation):
    """Every answer of /mcp is JSON (the SDK's, or DRF's refusals: 401, 405, 413, 429), whatever the
    client accepts: a client's GET asks for an event stream, and its answer is the spec's 405, not a 406."""

    def select_parser(self, request, parsers):
        return None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class McpApi(APIView):
    """The MCP endpoint: POST a JSON-RPC message, get the JSON-RPC answer."""

    # Tokens only: a signed-in browser's session cookie is no credential here (and needs no CSRF check).
    authentication_classes = [BearerTokenAuthentication, TokenAuthentication]  # a 401 asks for Bearer
    throttle_scope = "query"  # a tool call costs what a question costs; shared with /api/v1/query
    parser_classes: list = []  # the SDK reads the body
    renderer_classes = [JSONRenderer]
    content_negotiation_class = JsonAnswers
    schema = None  # not a REST resource: left out of the OpenAPI document

    def get_throttles(self):
        # Listing tools, the handshake and notifications cost nothing: only tool calls count, as questions.
        return super().get_throttles() if self.message(self.request).get("method") == "tools/call" else []

    def body(self, request) -> bytes:
        """The request body, read once, no further than one byte past CAIRN_MAX_REQUEST_BYTES."""
        if not hasattr(self, "_body"):
            limit = settings.CAIRN_MAX_REQUEST_BYTES
            stream = request.stream
            self._body = stream.read(limit + 1) if stream is not None else b""
            if len(self._body) > limit:
                raise BodyTooLarge(f"The request body is larger than {limit} bytes (CAIRN_MAX_REQUEST_BYTES).")
        return self._body

    def message(self, request) -> dict:
        """The JSON-RPC message posted, or {} when the body is not one (the SDK answers that)."""
        try:
            message = json.loads(self.body(request) or b"null")
        except ValueError:
            return {}
        if json_depth(message) > settings.CAIRN_JSON_MAX_DEPTH:
            raise ParseError(f"JSON parse error - nested deeper than {settings.CAIRN_JSON_MAX_DEPTH} levels.")
        return message if isinstance(message, dict) else {}

    def post(self, request):
        self.message(request)  # the bounds, whether or not the throttle looked
        status, headers, body = async_to_sync(exchange)(request, self.body(request))
        response = HttpResponse(body, status=status)
        for name, value in headers:
            if name.lower() != "content-length":
                response[name] = value
        return response

    # POST alone: the transport's GET (a stream for messages the server starts) would hold a worker
    # thread for as long as a client stays connected, and a stateless server has no session to
    # DELETE. The spec's answer to both is 405, which DRF gives any method a view does not define.


async def exchange(request, body: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
    """One request through the SDK's streamable HTTP transport: (status, headers, body)."""
    manager = StreamableHTTPSessionManager(
        server_for(request.user), stateless=True, json_response=True,
        max_request_body_size=settings.CAIRN_MAX_REQUEST_BYTES,
    )  # fmt: skip
    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in request.headers.items()
        if name.lower() not in WITHHELD
    ]
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": request.method,
        "scheme": request.scheme, "path": request.path, "raw_path": request.path.encode(), "root_path": "",
        "query_string": request.META.get("QUERY_STRING", "").encode("latin-1"), "headers": headers,
        "server": (request.get_host().rsplit(":", 1)[0], int(request.get_port())),
        "client": (request.META.get("REMOTE_ADDR", ""), 0),
    }  # fmt: skip
    answer = {"status": 500, "headers": [], "body": b""}
    delivered = False

    async def receive():
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()  # the client stays until the answer is sent (nothing listens past it)

    async def send(message):
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            answer["headers"] = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers", [])]
        elif message["type"] == "http.response.body":
            answer["body"] += message.get("body", b"")

    async with manager.run():
        await manager.handle_request(scope, receive, send)
    return answer["status"], answer["headers"], answer["body"]
