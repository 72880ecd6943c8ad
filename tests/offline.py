"""Cairn on a host with no network: a resolver that logs every name it is asked, and a run of what a
deployment does (ingestion of every kind of file, a sync of each local and web source, a production
server answering and taking an upload with its worker beside it) that tests/test_offline.py starts
in network and mount namespaces of its own, so that every lookup any of its processes makes, git's,
LibreOffice's and Tesseract's included, reaches the resolver here and nothing reaches a real one.

Run as `python -m tests.offline RESULT.json CORPUS FOLDER REPO` inside those namespaces, with
/etc/resolv.conf naming 127.0.0.1; it writes the names asked and each step's exit status."""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.loopback import LoopbackServer, free_port
from tests.test_serving import request

ROOT = Path(__file__).resolve().parent.parent
# The one host the run configures (a website source): the resolver answers it with loopback.
SITE_HOST = "intranet.example"
RESOLV_CONF = "nameserver 127.0.0.1\noptions attempts:1 timeout:1\n"


class LoggingResolver:
    """A DNS server on 127.0.0.1:53 (UDP) that records each question's name and type, answers the
    names in `answers` (A records) and says NXDOMAIN to every other."""

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, int]] = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 53))
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            query, peer = self.sock.recvfrom(4096)
            try:
                self.sock.sendto(self._reply(query), peer)
            except (IndexError, struct.error):
                continue  # not a DNS question

    def _reply(self, query: bytes) -> bytes:
        (ident, flags), labels, offset = struct.unpack(">HH", query[:4]), [], 12
        while length := query[offset]:
            labels.append(query[offset + 1 : offset + 1 + length].decode("ascii", "replace"))
            offset += 1 + length
        qtype = struct.unpack(">H", query[offset + 1 : offset + 3])[0]
        question = query[12 : offset + 5]
        name = ".".join(labels).lower()
        self.asked.append((name, qtype))
        address = self.answers.get(name)
        answers = b""
        if address and qtype == 1:  # an A record pointing at the name in the question
            answers = b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4) + socket.inet_aton(address)
        rcode = 0 if address else 3
        header = struct.pack(">HHHHHH", ident, 0x8180 | (flags & 0x0100) | rcode, 1, 1 if answers else 0, 0, 0)
        return header + question + answers


# The intranet the website source reads: an index linking two pages.
PAGES = {
    "/docs/index.html": b"<html><head><title>Intranet</title></head><body><h1>Intranet</h1><p>The canteen "
    b'opens at noon.</p><a href="leave.html">Leave</a> <a href="travel.html">Travel</a></body></html>',
    "/docs/leave.html": b"<html><head><title>Leave</title></head><body><p>Staff take 28 days of leave a "
    b"year.</p></body></html>",
    "/docs/travel.html": b"<html><head><title>Travel</title></head><body><p>Trains are booked in second "
    b"class.</p></body></html>",
}


def site_page(method, path, query, body) -> tuple:
    return (200, PAGES[path]) if path in PAGES else (404, b"")


def main(result: Path, corpus: Path, folder: Path, repository: Path) -> None:
    resolver = LoggingResolver({SITE_HOST: "127.0.0.1"})
    with LoopbackServer(site_page) as site:
        steps = run(site.server.server_address[1], corpus, folder, repository)
    result.write_text(json.dumps({"asked": sorted(set(resolver.asked)), "steps": steps}))


def run(site_port: int, corpus: Path, folder: Path, repository: Path) -> dict[str, int | str]:
    """Each step's exit status or HTTP status (and what a failed step said)."""
    steps: dict[str, int | str] = {}

    def manage(step: str, *args: str) -> str:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=600)  # fmt: skip
        steps[step] = done.returncode
        if done.returncode != 0:
            steps[f"{step} said"] = (done.stdout + done.stderr)[-2000:]
        return done.stdout

    manage("migrate", "migrate", "--noinput")
    manage("ingest", "ingest", str(corpus), "--collection", "offline", "--public")
    site_url = f"http://{SITE_HOST}:{site_port}/docs/index.html"
    for name, kind, location in (("site", "website", site_url), ("share", "folder", str(folder)),
                                 ("repo", "git", str(repository))):  # fmt: skip
        manage(f"add {name}", "sources", "add", name, "--kind", kind, "--location", location, "--collection",
               "offline")  # fmt: skip
        manage(f"sync {name}", "sync", name)
    manage("superuser", "createsuperuser", "--noinput", "--username", "root", "--email", "root@example.com")
    token = manage("token", "drf_create_token", "root").split()[2]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, "manage.py", "serve", "--bind", f"127.0.0.1:{port}"], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while True:
            try:
                if request(f"{base}/api/v1/health", timeout=5)[2]["embedder"] == "up":
                    break
            except (OSError, ValueError, TypeError, KeyError):
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("the server did not become healthy")
            time.sleep(0.5)
        for mode in ("fast", "standard", "deep"):
            question = {"question": "How many days of leave do staff take?", "mode": mode}
            steps[f"query {mode}"] = request(f"{base}/api/v1/query", token=token, body=question, timeout=300)[0]
        upload = {"collection": "offline", "title": "Parking", "text": "Visitors park in lot A."}
        steps["upload"] = request(f"{base}/api/v1/documents", token=token, body=upload)[0]
        time.sleep(10)  # the worker validates the answers and proposes them (its tasks run meanwhile)
    finally:
        server.terminate()
        server.wait(timeout=120)
    return steps


if __name__ == "__main__":
    main(*map(Path, sys.argv[1:5]))
