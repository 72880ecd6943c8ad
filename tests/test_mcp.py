"""Cairn's MCP server with the SDK's own client: over streamable HTTP at /mcp on the production
server (gunicorn through `manage.py serve`) and the development server, and over stdio through
`manage.py mcp --user`. Real processes, real models, a database of their own (tests/test_serving.py's).
The throttle and the body's bound are tried in-process, through Django's test client."""

import asyncio
import contextlib
import json
import subprocess
import sys

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.loopback import free_port
from tests.mcp_client import mcp_post, mcp_tool
from tests.test_serving import ROOT, env, health_answered, manage, request, served, served_database  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db
PAYROLL = "The payroll cut-off is the 18th of each month; later changes move to the next month's salary run."
QUESTION = "when does the cafeteria open"


@pytest.fixture(scope="module")
def readers(served_database, tmp_path_factory):  # noqa: F811
    """erin (served_database's) reads the public handbook only; fay also reads the private payroll
    collection. Their tokens."""
    corpus = tmp_path_factory.mktemp("payroll") / "payroll.jsonl"
    corpus.write_text(json.dumps({"id": "1", "title": "Payroll calendar", "text": PAYROLL}))
    manage("ingest", str(corpus), "--collection", "payroll", "--group", "payroll")
    manage("reader", "fay", "--group", "payroll")
    return {"erin": served_database, "fay": manage("drf_create_token", "fay").stdout.split()[2]}


@pytest.fixture(scope="module")
def base(readers):
    # Fast mode without exploration (CAIRN_RANK_EXPLORE_FAST, off by default, said here): the same
    # question ranks its passages the same way through either surface.
    with served(CAIRN_RANK_EXPLORE_FAST="false", CAIRN_THROTTLE_QUERY="1000/minute") as url:
        yield url


@contextlib.asynccontextmanager
async def session(base: str, token: str, scheme: str = "Bearer"):
    """A ClientSession over the SDK's streamable HTTP client, the handshake done."""
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"{scheme} {token}"}, timeout=120) as http,
        streamable_http_client(f"{base}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as mcp,
    ):
        await mcp.initialize()
        yield mcp


def calls(base: str, token: str, *tools: tuple[str, dict], scheme: str = "Bearer") -> list:
    """Each (tool, arguments)'s CallToolResult, in one session."""

    async def main():
        async with session(base, token, scheme) as mcp:
            return [await mcp.call_tool(name, arguments) for name, arguments in tools]

    return asyncio.run(main())


def test_the_tools_are_listed_with_the_query_apis_bounds(base, readers):
    async def main():
        async with session(base, readers["erin"]) as mcp:
            return (await mcp.list_tools()).tools

    tools = {tool.name: tool for tool in asyncio.run(main())}
    assert set(tools) == {"search", "ask"}
    schema = tools["ask"].input_schema
    assert schema["required"] == ["question"] and schema["properties"]["question"]["maxLength"] == 2000
    assert (schema["properties"]["top_k"]["minimum"], schema["properties"]["top_k"]["maximum"]) == (1, 50)
    assert schema["properties"]["mode"]["enum"] == ["fast", "standard", "deep"]
    assert tools["search"].annotations.read_only_hint is True


def test_ask_gives_the_query_apis_answer_and_search_its_passages(base, readers):
    token = readers["erin"]
    status, _, api = request(f"{base}/api/v1/query", token=token, body={"question": QUESTION, "mode": "fast"})
    assert status == 200, api
    # `Token <key>` is accepted as well as `Bearer <key>`.
    asked, searched = calls(base, token, ("ask", {"question": QUESTION, "mode": "fast"}),
                            ("search", {"question": QUESTION, "mode": "fast", "top_k": 3}), scheme="Token")  # fmt: skip
    assert not asked.is_error, asked.content
    answer = asked.structured_content
    assert answer["outcome"] == api["outcome"] == "answered"
    assert answer["answer"] == api["answer"] and "8 am" in answer["answer"]
    assert answer["confidence"] == api["confidence"]
    assert [(c["n"], c["chunk_id"], c["strips"]) for c in answer["citations"]] == [
        (c["n"], c["chunk_id"], c["strips"]) for c in api["citations"]
    ]
    evidence = {e["n"]: e for e in api["evidence"]}
    assert [(c["title"], c["source"], c["collection"]) for c in answer["citations"]] == [
        (evidence[c["n"]]["title"], evidence[c["n"]]["source"], evidence[c["n"]]["collection"])
        for c in api["citations"]
    ]
    assert answer["response_id"] != api["response_id"]  # recorded, as any question asked
    status, _, recorded = request(f"{base}/api/v1/answers/{answer['response_id']}", token=token)
    assert status == 200 and recorded["answer"] == answer["answer"]
    text = asked.content[0].text  # the readable form: the answer, then its sources by number
    assert text.startswith(answer["answer"]) and "[1] Cafeteria" in text

    passages = searched.structured_content["passages"]
    assert 1 <= len(passages) <= 3 and [p["n"] for p in passages] == sorted(p["n"] for p in passages)
    best = passages[0]
    assert (best["title"], best["bucket"], best["collection"]) == ("Cafeteria", "VERIFIED", "Handbook")
    assert "8 am" in " ".join(best["strips"]) and best["trust"] > 0.5
    assert {"source", "text", "relevance", "location_label", "original_url"} <= set(best)


def test_a_reader_never_sees_a_collection_they_cannot_read_through_either_tool(base, readers):
    question = {"question": "when is the payroll cut-off", "mode": "fast"}
    # fay reads payroll: the passage is there to find, so the reader who cannot read it is a real test.
    fay_search, fay_ask = calls(base, readers["fay"], ("search", question), ("ask", question))
    assert any("payroll cut-off" in p["text"] for p in fay_search.structured_content["passages"])
    assert "18th" in fay_ask.structured_content["answer"]
    searched, asked, hidden, missing = calls(
        base, readers["erin"], ("search", question), ("ask", question),
        ("search", {**question, "collections": ["payroll"]}), ("ask", {**question, "collections": ["nosuch"]}),
    )  # fmt: skip
    assert not searched.is_error and not asked.is_error
    assert all(
        p["collection"] != "payroll" and "cut-off" not in p["text"] for p in searched.structured_content["passages"]
    )
    assert "18th" not in asked.structured_content["answer"] and "18th" not in json.dumps(asked.structured_content)
    # A collection one cannot read is refused as one that does not exist.
    assert hidden.is_error and hidden.content[0].text == "collections: unknown collection(s): payroll"
    assert missing.is_error and missing.content[0].text == "collections: unknown collection(s): nosuch"


def test_a_bad_input_is_a_tool_error_naming_the_field(base, readers):
    results = calls(
        base, readers["erin"],
        ("ask", {"question": "x" * 2001}), ("search", {"question": QUESTION, "top_k": 51}),
        ("ask", {"question": QUESTION, "mode": "quick"}), ("search", {"question": QUESTION, "collections": ["a b"]}),
        ("ask", {}), ("search", {"question": QUESTION, "generator": "openai"}), ("lookup", {"question": QUESTION}),
    )  # fmt: skip
    messages = [r.content[0].text for r in results]
    assert all(r.is_error for r in results), messages
    assert [m.split(":")[0] for m in messages[:6]] == ["question", "top_k", "mode", "collections", "question",
                                                       "generator"]  # fmt: skip
    assert "2000 characters" in messages[0] and "less than or equal to 50" in messages[1]
    assert messages[6].startswith("unknown tool 'lookup'")


def test_a_bad_or_missing_token_is_refused(base, readers):
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer not-a-token"}, {"Authorization": f"Basic {readers['erin']}"}):
        response = httpx2.post(f"{base}/mcp", json=initialize, headers={
            **headers, "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25",
        })  # fmt: skip
        assert response.status_code == 401 and response.headers["WWW-Authenticate"] == "Bearer"

    async def main():
        async with session(base, "not-a-token"):
            pass

    with pytest.raises(ExceptionGroup) as refused:  # the SDK's client raises from its task group
        asyncio.run(main())
    assert refused.group_contains(MCPError, match="Server returned an error response", depth=2)


def test_the_development_server_serves_it_too(readers):
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=ROOT, env=env(CAIRN_DEMO="true", CAIRN_WARM_MODELS="false"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        health_answered(f"http://127.0.0.1:{port}", server)
        (asked,) = calls(f"http://127.0.0.1:{port}", readers["erin"], ("ask", {"question": QUESTION, "mode": "fast"}))
        assert asked.structured_content["outcome"] == "answered" and "8 am" in asked.structured_content["answer"]
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_stdio_serves_the_same_tools_as_the_named_user(readers):
    question = {"question": "when is the payroll cut-off", "mode": "fast"}

    async def as_user(name: str):
        parameters = StdioServerParameters(command=sys.executable, args=["manage.py", "mcp", "--user", name],
                                           env=env(), cwd=ROOT)  # fmt: skip
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as mcp:
            await mcp.initialize()
            names = {tool.name for tool in (await mcp.list_tools()).tools}
            return names, await mcp.call_tool("ask", question), await mcp.call_tool("search", question)

    names, asked, searched = asyncio.run(as_user("fay"))
    assert names == {"search", "ask"}
    assert "18th" in asked.structured_content["answer"]
    assert any("cut-off" in p["text"] for p in searched.structured_content["passages"])
    _, asked, searched = asyncio.run(as_user("erin"))
    assert "18th" not in json.dumps(asked.structured_content)
    assert all("cut-off" not in p["text"] for p in searched.structured_content["passages"])

    unknown = manage("mcp", "--user", "nobody", check=False)
    assert unknown.returncode == 1 and "no active user named 'nobody'" in unknown.stderr


# --- in-process: the throttle and the body's bound --------------------------------------------


def test_tool_calls_share_the_query_throttle_and_nothing_else_counts(alice, settings):
    from rest_framework.settings import api_settings

    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK,
                               "DEFAULT_THROTTLE_RATES": {**api_settings.DEFAULT_THROTTLE_RATES, "query": "3/hour"}}  # fmt: skip
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert [mcp_post(alice, listing).status_code for _ in range(5)] == [200] * 5  # not questions
    refused = {"question": "x", "top_k": 0}  # a tool error, but a call all the same
    assert [mcp_tool(alice, "search", refused)["isError"] for _ in range(3)] == [True] * 3
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask", "arguments": refused}}
    assert mcp_post(alice, call).status_code == 429
    from tests.conftest import client_for

    assert client_for(alice).post("/api/v1/query", {"question": "x"}, format="json").status_code == 429


def test_a_body_past_the_request_bound_is_refused_before_the_sdk_reads_it(alice, settings):
    settings.CAIRN_MAX_REQUEST_BYTES = 2048
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "search", "arguments": {"question": "x" * 4096}}}  # fmt: skip
    assert mcp_post(alice, call).status_code == 413
    deep = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": json.loads("[" * 40 + "]" * 40)}}
    assert mcp_post(alice, deep).status_code == 400
    assert mcp_post(alice, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, scheme="Token").status_code == 200


def test_a_get_for_a_server_stream_is_answered_405_and_holds_no_thread(alice):
    from django.test import Client
    from rest_framework.authtoken.models import Token

    token = Token.objects.get_or_create(user=alice)[0].key
    response = Client().get("/mcp", HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_ACCEPT="text/event-stream")
    assert response.status_code == 405 and response["Allow"] == "POST, OPTIONS"
