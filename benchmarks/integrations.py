"""What the integrations cost over the API they wrap: the same questions, by the same reader, in
fast mode, to a served Cairn (`manage.py serve`: gunicorn, one worker), through POST /api/v1/query
and through each integration surface (MCP's `ask` tool at /mcp, the OpenAI-compatible
/v1/chat/completions), one question at a time.

Each question is asked once, unmeasured (the judges keep recent scores: the first asker would pay
for all), then through every surface twice, in alternating order (A B B A, then B A A B for the
next question: no surface is always first or last), after a few warm-up questions; a surface's
latency for the question is the mean of its two. Its overhead is, per question, that latency
minus the API's; the figure is its median (the p50 overhead), with each surface's own p50 and p95
and how many answers matched the API's text. Each surface through its own client on one
kept-alive connection: MCP through the SDK's (httpx2, one session for the run), the API through
the fastest one (see Rest). Fast mode without rank exploration (CAIRN_RANK_EXPLORE_FAST=false):
the same question gets the same passages through either surface. Rate limits are raised for the
run. Floor: every surface's p50 overhead ≤ 20 ms.

Another surface is one more entry in SURFACES: a class with `start`, `ask` (the answer's text) and
`close`. Runs on a database of its own (cairn_bench_integrations); about a minute here. Writes
benchmarks/results/integrations.json and .png.

    .venv/bin/python benchmarks/integrations.py [--questions 30] [--warm 3]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import signal
import subprocess
import sys
import time

from _common import RESULTS, ROOT, django_setup, free_port, percentile, write_result

DATABASE = "cairn_bench_integrations"
SECRET = "benchmark-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz"
UNLIMITED = {f"CAIRN_THROTTLE_{scope}": "1000000/minute" for scope in ("QUERY", "FEEDBACK", "UPLOAD", "ANON")}
FLOOR_MS = 20.0


class Rest:
    """The baseline: POST /api/v1/query on one kept-alive connection (http.client: the request in
    one write). httpx2 took 40-110 ms more here for the API's answer (13 kB against MCP's 2 kB), a
    stall of the client's reads, not the server's work: the fastest client keeps the overhead
    figure an upper bound."""

    def __init__(self, base: str, token: str):
        self.base, self.token = base, token

    async def start(self) -> None:
        host, port = self.base.removeprefix("http://").split(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=300)
        self.headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}

    def post(self, question: str) -> str:
        self.connection.request("POST", "/api/v1/query", json.dumps({"question": question, "mode": "fast"}),
                                self.headers)  # fmt: skip
        response = self.connection.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"{response.status}: {body[:500]!r}")
        return json.loads(body)["answer"]

    async def ask(self, question: str) -> str:
        return await asyncio.to_thread(self.post, question)

    async def close(self) -> None:
        self.connection.close()


class OpenAIChat(Rest):
    """The OpenAI-compatible endpoint, POST /v1/chat/completions, unstreamed, on one kept-alive
    connection as the API (the same fast client: its body carries the recorded answer too)."""

    def post(self, question: str) -> str:
        body = {"model": "cairn", "mode": "fast", "messages": [{"role": "user", "content": question}]}
        self.connection.request("POST", "/v1/chat/completions", json.dumps(body), self.headers)
        response = self.connection.getresponse()
        data = response.read()
        if response.status != 200:
            raise RuntimeError(f"{response.status}: {data[:500]!r}")
        return json.loads(data)["cairn"]["answer"]


class Mcp:
    """The MCP server's `ask` tool, through the SDK's streamable HTTP client and one ClientSession."""

    def __init__(self, base: str, token: str):
        self.base, self.token = base, token

    async def start(self) -> None:
        import httpx2
        from mcp.client.session import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        self.stack = contextlib.AsyncExitStack()
        http = await self.stack.enter_async_context(
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {self.token}"}, timeout=300)
        )
        read, write = await self.stack.enter_async_context(streamable_http_client(f"{self.base}/mcp", http_client=http))
        self.session = await self.stack.enter_async_context(ClientSession(read, write))
        await self.session.initialize()
        await self.session.list_tools()  # the client checks results against the listed output schema

    async def ask(self, question: str) -> str:
        result = await self.session.call_tool("ask", {"question": question, "mode": "fast"})
        if result.is_error:
            raise RuntimeError(result.content[0].text)
        return result.structured_content["answer"]

    async def close(self) -> None:
        await self.stack.aclose()


BASELINE = ("api", Rest)
SURFACES = {"mcp ask": Mcp, "openai chat": OpenAIChat}  # name: surface


def server_env(**extra) -> dict:
    import os

    base = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    return {**base, "DJANGO_SETTINGS_MODULE": "config.settings", "CAIRN_DB_NAME": DATABASE, "CAIRN_SECRET_KEY": SECRET,
            "CAIRN_LOG_LEVEL": "WARNING", "CAIRN_ACCESS_LOG": "", "CAIRN_WEB_WORKERS": "1",
            "CAIRN_RANK_EXPLORE_FAST": "false", **UNLIMITED, **extra}  # fmt: skip


def serve(port: int) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "manage.py", "serve", "--bind", f"127.0.0.1:{port}", "--no-worker"],
                               cwd=ROOT, env=server_env(), stdout=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"the server exited with {process.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/api/v1/ready")
            if conn.getresponse().status == 200:
                return process
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.5)
    sys.exit("the server did not become ready")


def setup() -> tuple[str, list[str]]:
    import os

    os.environ["CAIRN_DB_NAME"] = DATABASE
    django_setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from rest_framework.authtoken.models import Token

    call_command("ingest", str(ROOT / "demo" / "corpus"), collection="demo", public=True, verbosity=0)
    user, _ = User.objects.get_or_create(username="bench-integrations")
    questions = [json.loads(line)["question"] for line in (ROOT / "demo" / "questions.jsonl").read_text().splitlines()]
    return Token.objects.get_or_create(user=user)[0].key, questions


async def measure(base: str, token: str, questions: list[str], warm: int) -> dict:
    from tqdm import tqdm

    surfaces = {BASELINE[0]: BASELINE[1](base, token)} | {name: kind(base, token) for name, kind in SURFACES.items()}
    for surface in surfaces.values():
        await surface.start()
    try:
        for question in questions[-warm:]:  # warm-up: not among those measured
            for surface in surfaces.values():
                await surface.ask(question)
        seconds = {name: [] for name in surfaces}
        answers = {name: [] for name in surfaces}
        order, api = list(surfaces), BASELINE[0]
        for i, question in enumerate(tqdm(questions[: len(questions) - warm], desc="asking", unit="question")):
            # Unmeasured first: the judges keep recent (question, passage) scores, which would
            # otherwise make whichever surface asks a question first pay for all the others.
            await surfaces[api].ask(question)
            took, said = {name: [] for name in surfaces}, {}
            turn = order if i % 2 == 0 else order[::-1]
            for name in turn + turn[::-1]:  # A B B A, then B A A B: no surface always first or last
                started = time.perf_counter()
                said[name] = await surfaces[name].ask(question)
                took[name].append(time.perf_counter() - started)
            for name in surfaces:
                answers[name].append(said[name])
                seconds[name].append(sum(took[name]) / len(took[name]))
    finally:
        for surface in surfaces.values():
            await surface.close()
    result = {api: latency(seconds[api])}
    for name in SURFACES:
        overhead = [(s - b) * 1000 for s, b in zip(seconds[name], seconds[api], strict=True)]
        result[name] = latency(seconds[name]) | {
            "overhead_p50_ms": round(percentile(overhead, 50), 2),
            "overhead_p95_ms": round(percentile(overhead, 95), 2),
            "p50_difference_ms": round((percentile(seconds[name], 50) - percentile(seconds[api], 50)) * 1000, 2),
            "same_answer_as_api": sum(a == b for a, b in zip(answers[name], answers[api], strict=True)),
        }
    return result


def plot(result: dict) -> None:
    """Each surface's p50 and p95 beside the API's, and its p50 overhead against the floor."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [result["baseline"], *(n for n in result if n in SURFACES)]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6))
    for offset, key in ((-0.2, "p50_ms"), (0.2, "p95_ms")):
        left.bar([i + offset for i in range(len(names))], [result[n][key] for n in names], 0.4, label=key[:3])
    left.set_xticks(range(len(names)), names)
    left.set_ylabel("answer latency (ms)")
    left.legend()
    surfaces = names[1:]
    right.bar(surfaces, [result[n]["overhead_p50_ms"] for n in surfaces])
    right.axhline(FLOOR_MS, color="red", linestyle="--", label=f"floor {FLOOR_MS:g} ms")
    right.set_ylabel("p50 overhead over the API (ms)")
    right.legend()
    fig.suptitle(f"Integrations against /api/v1/query ({result[names[0]]['questions']} questions, fast)")
    fig.tight_layout()
    fig.savefig(RESULTS / "integrations.png", dpi=110)


def latency(seconds: list[float]) -> dict:
    ms = [s * 1000 for s in seconds]
    return {"questions": len(ms), "p50_ms": round(percentile(ms, 50), 1), "p95_ms": round(percentile(ms, 95), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=30, help="questions measured")
    parser.add_argument("--warm", type=int, default=3, help="warm-up questions per surface, not measured")
    args = parser.parse_args()
    token, questions = setup()
    port = free_port()
    process = serve(port)
    try:
        result = asyncio.run(measure(f"http://127.0.0.1:{port}", token, questions[: args.questions + args.warm],
                                     args.warm))  # fmt: skip
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
    result = {"mode": "fast", "baseline": BASELINE[0], "floor_overhead_p50_ms": FLOOR_MS, **result}
    result["floors"] = {f"{name} overhead p50 ≤ {FLOOR_MS:g} ms": result[name]["overhead_p50_ms"] <= FLOOR_MS
                        for name in SURFACES}  # fmt: skip
    path = write_result("integrations", result)
    plot(result)
    print(json.dumps({k: result[k] for k in (BASELINE[0], *SURFACES, "floors")}, indent=1))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
