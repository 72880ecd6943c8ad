"""Loopback HTTP servers that speak the real protocols of what cannot run on these machines: an
Ollama server with weights and an external search engine. The real clients (the `ollama`
package, httpx) talk to them over TCP; replies are scripted per test."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


def free_port() -> int:
    """A port nothing listens on (a server that is down, or one about to start)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LoopbackServer:
    """Serves `handle(method, path, query, body) -> (status, payload[, headers])`; payload a dict
    (JSON), a list of dicts (NDJSON stream), bytes (an HTML page) or None; headers extra response
    headers (a redirect's Location). The body is JSON, or a dict of lists for a form post. Records
    every request in `calls`."""

    def __init__(self, handle: Callable) -> None:
        self.calls: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self, method: str) -> None:
                url = urlparse(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                form = self.headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded")
                body = parse_qs(raw.decode()) if form else json.loads(raw or b"null") if length else None
                outer.calls.append({"method": method, "path": url.path, "query": parse_qs(url.query), "body": body,
                                    "headers": dict(self.headers)})  # fmt: skip
                status, payload, *extra = handle(method, url.path, parse_qs(url.query), body)
                if isinstance(payload, list):  # a stream: newline-delimited JSON, as Ollama streams
                    data = b"".join(json.dumps(item).encode() + b"\n" for item in payload)
                    content_type = "application/x-ndjson"
                elif isinstance(payload, bytes):  # not JSON at all: a proxy's error page, say
                    data, content_type = payload, "text/html; charset=utf-8"
                else:
                    data = json.dumps(payload).encode()
                    content_type = "application/json"
                self.send_response(status)
                for name, value in (extra[0] if extra else {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._serve("GET")

            def do_POST(self):
                self._serve("POST")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> LoopbackServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def searxng(results_for: Callable[[str], list[dict]]) -> LoopbackServer:
    """SearxNG's JSON API: GET /search?q=...&format=json -> {"query", "results": [{title, url, content}]}."""

    def handle(method, path, query, body):
        if path != "/search" or query.get("format") != ["json"]:
            return 403, {"error": "format not allowed"}  # what SearxNG does without json enabled
        q = query["q"][0]
        return 200, {"query": q, "number_of_results": 0, "results": results_for(q), "answers": [], "suggestions": []}

    return LoopbackServer(handle)


def ollama(
    chat: Callable[[list[dict], dict], str],
    generate: Callable[[str, dict], str] | None = None,
    requests: list[dict] | None = None,
) -> LoopbackServer:
    """Ollama's HTTP API: /api/chat and /api/generate, streamed (NDJSON) or not, plus /api/tags.
    `chat(messages, options)` and `generate(prompt, options)` script the model's replies; each
    request's body is appended to `requests` when given."""

    def meta(model: str) -> dict:
        return {"model": model, "created_at": "2026-11-22T00:00:00Z"}

    def done(model: str) -> dict:
        return meta(model) | {"done": True, "done_reason": "stop", "total_duration": 1000, "eval_count": 1}

    def handle(method, path, query, body):
        if path == "/api/tags":
            return 200, {"models": [{"name": "llama3.2:3b", "model": "llama3.2:3b"}]}
        if requests is not None:
            requests.append(body)
        model = body.get("model", "")
        options = body.get("options") or {}
        if path == "/api/chat":
            text = chat(body["messages"], options)
            piece = lambda content: {"message": {"role": "assistant", "content": content}}  # noqa: E731
        elif path == "/api/generate" and generate is not None:
            text = generate(body["prompt"], options)
            piece = lambda content: {"response": content}  # noqa: E731
        else:
            return 404, {"error": f"unknown path {path}"}
        if body.get("stream", True):
            words = text.split(" ")
            chunks = [meta(model) | piece(w + ("" if i == len(words) - 1 else " ")) | {"done": False}
                      for i, w in enumerate(words)]  # fmt: skip
            return 200, [*chunks, done(model) | piece("")]
        return 200, done(model) | piece(text)

    return LoopbackServer(handle)
