"""An MCP tool called through Django's test client: one JSON-RPC message posted to /mcp, as an MCP
client posts it (stateless: no handshake needed first), for the tests that run in-process."""

import json

from django.test import Client
from rest_framework.authtoken.models import Token

PROTOCOL = "2025-11-25"  # a handshake-era version: the SDK's stateless path serves it without a session


def mcp_post(user, message: dict, *, scheme: str = "Bearer"):
    """The raw response to `message` posted as `user` (None: no credentials)."""
    headers = {"HTTP_ACCEPT": "application/json, text/event-stream", "HTTP_MCP_PROTOCOL_VERSION": PROTOCOL}
    if user is not None:
        headers["HTTP_AUTHORIZATION"] = f"{scheme} {Token.objects.get_or_create(user=user)[0].key}"
    return Client().post("/mcp", json.dumps(message), content_type="application/json", **headers)


def mcp_tool(user, name: str, arguments: dict) -> dict:
    """The tool's CallToolResult as JSON (content, structuredContent, isError)."""
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    response = mcp_post(user, message)
    assert response.status_code == 200, response.content[:2000]
    return response.json()["result"]
