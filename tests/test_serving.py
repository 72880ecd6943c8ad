"""The servers as they run in production and in the demo, as real processes: gunicorn through
`manage.py serve` (graceful SIGTERM under load, connections bounded, no version in Server), the
refusal to start with the demo's secrets, the development server that no longer keeps a
connection per request thread, and `check --deploy` clean with deploy/cairn.env.

They run against a database of their own on the same Postgres, so the servers see committed data
without touching the test database."""

import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.db import connection

from tests.loopback import free_port
from tests.nginx import NGINX_ADDRESS, forwarded

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parent.parent
DATABASE = "test_cairn_serving"
SECRET = "a-long-random-test-key-0123456789-abcdefghijklmnopqrstuvwxyz-ABCDEF"
DOCUMENTS = [
    {"id": "1", "title": "Cafeteria", "text": "The cafeteria opens at 8 am and closes at 3 pm on weekdays."},
    {"id": "2", "title": "Parking", "text": "Staff park in lot B; visitors park in lot A by the main entrance."},
    {"id": "3", "title": "Travel", "text": "Employees may claim a per diem of 85 euros for overnight travel."},
]


def env(**extra) -> dict:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    return {**base, "DJANGO_SETTINGS_MODULE": "config.settings", "CAIRN_DB_NAME": DATABASE,
            "CAIRN_SECRET_KEY": SECRET, **extra}  # fmt: skip


def manage(*args, check=True, input=None, **extra) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env(**extra), input=input,
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert not check or result.returncode == 0, result.stderr[-3000:]
    return result


def request(url: str, *, token: str | None = None, body: dict | None = None, timeout=120):
    """(status, headers, parsed JSON) of one HTTP request; HTTP errors are answers too."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Token {token}"
    data = json.dumps(body).encode() if body is not None else None
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=timeout) as r:
            return r.status, r.headers, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, error.headers, json.loads(error.read() or b"null")


class Server:
    """`manage.py serve` (one gunicorn worker, no django-q2 worker, no access log) on `port` as a
    child process. Its output is read as it comes, so a talkative server never blocks on a full pipe,
    and kept for the message of a test that fails."""

    def __init__(self, port: int, **extra):
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--bind", f"127.0.0.1:{port}", "--no-worker"],
            cwd=ROOT, env=env(CAIRN_WEB_WORKERS="1", CAIRN_ACCESS_LOG="", PYTHONFAULTHANDLER="1", **extra),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        self.lines: list[str] = []
        self.reader = threading.Thread(target=lambda: self.lines.extend(self.process.stdout), daemon=True)
        self.reader.start()

    def workers_stacks(self) -> str:
        """Every thread's stack in the web workers (faulthandler, on SIGSEGV: gunicorn handles SIGABRT itself), for a failure message:
        what a worker that stopped answering was doing."""
        children = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = stat.read_text().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        arbiters = children.get(self.process.pid, [])
        for worker in [w for arbiter in arbiters for w in children.get(arbiter, [])]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker, signal.SIGSEGV)
        time.sleep(2)
        return self.output()

    def output(self) -> str:
        """What the server printed (all of it once it has exited)."""
        if self.process.poll() is not None:
            self.reader.join(timeout=10)
        return "".join(self.lines)


@contextlib.contextmanager
def served(**extra):
    """A healthy `Server` on a free port: yields its base URL and stops it on the way out."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = Server(port, **extra)
    try:
        wait_healthy(base, server)
        yield base
    finally:
        server.process.terminate()
        server.process.wait(timeout=90)


def wait_healthy(base: str, server: Server, seconds=180) -> None:
    """Until health answers 200 with the embedder loaded; a failure says what health last answered
    and what the server printed."""
    deadline, last = time.monotonic() + seconds, None
    while time.monotonic() < deadline:
        assert server.process.poll() is None, server.output()[-3000:]
        try:
            status, _, body = request(f"{base}/api/v1/health", timeout=5)
            if status == 200 and body["embedder"] == "up":
                return
            last = (status, body)
        except OSError as exc:
            last = exc
        time.sleep(0.5)
    raise AssertionError(
        f"the server did not become healthy in {seconds} s; health last answered {last!r}; it printed, "
        "then its workers' stacks:\n" + server.workers_stacks()[-12000:]
    )


def health_answered(base: str, process: subprocess.Popen, seconds=60) -> tuple:
    """(status, headers, body) of the first answer health gives a server started without warming its
    models: any answer, once it listens; it must not exit or take longer than `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return request(f"{base}/api/v1/health", timeout=5)
        except OSError:
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.3)


def connections_of(application: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")  # a transaction otherwise sees its first snapshot
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [application])
        return cursor.fetchone()[0]


@pytest.fixture(scope="module")
def served_database(tmp_path_factory, django_db_blocker):
    """A migrated database with three public documents and a reader with a token."""
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
    manage("migrate", "--noinput")
    corpus = tmp_path_factory.mktemp("corpus") / "handbook.jsonl"
    corpus.write_text("\n".join(json.dumps(d) for d in DOCUMENTS))
    manage("ingest", str(corpus), "--collection", "handbook", "--public")
    manage("reader", "erin")
    token = manage("drf_create_token", "erin").stdout.split()[2]
    return token


def test_serve_finishes_in_flight_requests_on_sigterm_and_bounds_its_connections(served_database):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = Server(port, CAIRN_WEB_THREADS="3")
    try:
        wait_healthy(base, server)
        status, headers, _ = request(f"{base}/api/v1/health")
        assert headers["Server"] == "gunicorn"  # no version of anything
        assert (
            "default-src 'self'"
            in request(f"{base}/api/v1/documents", token=served_database)[1]["Content-Security-Policy"]
        )

        results, peak = [], [0]
        question = {"question": "when does the cafeteria open", "mode": "fast"}

        def ask():
            results.append(request(f"{base}/api/v1/query", token=served_database, body=question)[0])

        def sample():
            while len(results) < 6:
                peak[0] = max(peak[0], connections_of("cairn-web"))
                time.sleep(0.02)
            connection.close()  # this thread's own

        askers = [threading.Thread(target=ask) for _ in range(6)]
        sampler = threading.Thread(target=sample)
        for thread in [*askers, sampler]:
            thread.start()
        time.sleep(0.3)  # the requests are accepted and in flight
        server.process.send_signal(signal.SIGTERM)
        for thread in [*askers, sampler]:
            thread.join(timeout=120)
        assert results == [200] * 6  # none dropped
        assert 1 <= peak[0] <= 3  # one worker x three threads, never more
        assert server.process.wait(timeout=90) == 0
        assert "stopped: gunicorn 0" in server.output()
        assert connections_of("cairn-web") == 0
    finally:
        if server.process.poll() is None:
            server.process.kill()


def test_a_production_server_refuses_the_development_key_with_a_message_naming_the_fix(served_database):
    refused = manage("serve", check=False, CAIRN_SECRET_KEY="cairn-insecure-development-key-change-me")
    assert refused.returncode == 1
    assert "CAIRN_SECRET_KEY is the development key" in refused.stderr
    # gunicorn started directly (the systemd unit) refuses too: its worker cannot boot.
    gunicorn = subprocess.run(
        [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py", "--bind", f"127.0.0.1:{free_port()}"],
        cwd=ROOT, env=env(CAIRN_SECRET_KEY="cairn-insecure-development-key-change-me", CAIRN_WEB_WORKERS="1"),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert gunicorn.returncode != 0
    assert "CAIRN_SECRET_KEY is the development key" in gunicorn.stderr


def form_sign_in(port: int, source: str, username: str, password: str, headers: dict) -> int:
    """Cairn's sign-in form as a browser at `source` (an address of this host) uses it: fetch it, post
    it back with its CSRF token; the answer's status (302 signed in, 200 refused, 429 locked out)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(source, 0))
    try:
        connection.request("GET", "/accounts/login/", headers=headers)
        page = connection.getresponse()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.read().decode()).group(1)
        cookies = SimpleCookie()
        for header in page.msg.get_all("Set-Cookie") or []:
            cookies.load(header)
        form = urlencode({"username": username, "password": password, "csrfmiddlewaretoken": token})
        connection.request("POST", "/accounts/login/", body=form, headers={
            **headers, "Cookie": f"csrftoken={cookies['csrftoken'].value}", "Referer": f"https://127.0.0.1:{port}/",
            "Content-Type": "application/x-www-form-urlencoded",
        })  # fmt: skip
        answer = connection.getresponse()
        answer.read()
        return answer.status
    finally:
        connection.close()


def test_behind_the_proxy_lockouts_follow_the_client_and_a_direct_client_cannot_choose_its_address(
    served_database,
):
    """Attack, against gunicorn as deploy/ runs it (CAIRN_PROXY_COUNT=1, nginx on the same host):
    failures from one client used to lock a user name out for everyone, and a client that reached
    gunicorn directly chose a fresh address for every guess with X-Forwarded-For."""
    for name in ("admin", "dora"):
        manage("reader", name, "--password-stdin", input=f"{name}-pebble-larch-71\n")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py", "--bind", f"127.0.0.1:{port}"],
        cwd=ROOT, env=env(CAIRN_PROXY_COUNT="1", CAIRN_LOGIN_FAILURE_LIMIT="3", CAIRN_THROTTLE_ANON="3/hour",
                          CAIRN_WEB_WORKERS="1", CAIRN_WARM_MODELS="false", CAIRN_ACCESS_LOG=""),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        health_answered(f"http://127.0.0.1:{port}", server)
        # Through nginx (the peer 127.0.0.1, a trusted proxy): each client has its own count.
        mallory, alice = forwarded("198.51.100.7"), forwarded("198.51.100.8")
        for _ in range(3):
            form_sign_in(port, NGINX_ADDRESS, "admin", "guess", mallory)
        assert form_sign_in(port, NGINX_ADDRESS, "admin", "admin-pebble-larch-71", mallory) == 429
        assert form_sign_in(port, NGINX_ADDRESS, "admin", "admin-pebble-larch-71", alice) == 302
        # Straight to gunicorn from 127.0.0.2 (not a trusted proxy): its X-Forwarded-For is its own claim.
        for guess in range(3):
            spoofed = {"X-Forwarded-For": f"203.0.113.{guess}, 192.0.2.1"}
            form_sign_in(port, "127.0.0.2", "dora", "guess", spoofed)
        spoofed = {"X-Forwarded-For": "203.0.113.99, 192.0.2.1"}
        assert form_sign_in(port, "127.0.0.2", "dora", "dora-pebble-larch-71", spoofed) == 429
        schema = []  # the API's anonymous budget, likewise
        # The server's own clock counts the windows: start where the hour has a minute left at least,
        # so that no window ends between the four requests.
        if (left := 3600 - time.time() % 3600) < 60:
            time.sleep(left)
        for guess in range(4):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=("127.0.0.2", 0))
            connection.request("GET", "/api/schema/", headers={"X-Forwarded-For": f"198.51.100.{guess}"})
            schema.append(connection.getresponse().status)
            connection.close()
        assert schema == [200, 200, 200, 429]
    finally:
        server.terminate()
        server.wait(timeout=60)


def test_selfcheck_refuses_the_placeholder_key_that_deploy_cairn_env_ships(served_database):
    shipped = next(
        line.partition("=")[2]
        for line in (ROOT / "deploy" / "cairn.env").read_text().splitlines()
        if line.startswith("CAIRN_SECRET_KEY=")
    )
    refused = manage("selfcheck", check=False, CAIRN_SECRET_KEY=shipped)
    assert refused.returncode == 1 and "CAIRN_SECRET_KEY is still a placeholder" in refused.stderr


def test_the_development_server_keeps_no_connection_per_request_thread(served_database):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=ROOT, env=env(CAIRN_DEMO="true", CAIRN_WARM_MODELS="false"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _, headers, _ = health_answered(base, server)
        assert "Python" not in headers["Server"]
        for _ in range(20):  # each in a new thread, as the development server runs them
            assert request(f"{base}/api/v1/documents", token=served_database)[0] == 200
        time.sleep(0.5)
        assert connections_of("cairn-runserver") == 0  # 20 with a CONN_MAX_AGE of 60
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_check_deploy_is_clean_with_the_documented_production_settings():
    settings = {}
    for line in (ROOT / "deploy" / "cairn.env").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, value = line.partition("=")
            settings[name] = value
    clean = manage("check", "--deploy", "--fail-level", "WARNING", **settings, check=False)
    assert clean.returncode == 0, clean.stderr
    assert "no issues" in clean.stdout
    # And without them, the warnings the issue found are there to see.
    bare = manage("check", "--deploy", check=False, CAIRN_SECRET_KEY="cairn-insecure-development-key-change-me")
    for warning in ("W004", "W008", "W009", "W012", "W016"):
        assert warning in bare.stderr


CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOTS = ROOT / "var" / "screenshots"  # not committed (var/ is ignored)
EXPENSES = (
    "Receipts for travel must be submitted within 30 days of the trip. Claims are paid with the next monthly "
    "salary. A hotel above 150 euros a night needs a manager's approval. Taxis are refunded only after 10 pm "
    "or when carrying equipment."
)
# The README's screenshots, committed: the browser test writes them when CAIRN_DOCS_SCREENSHOTS=1
# (`CAIRN_DOCS_SCREENSHOTS=1 make test`), so an ordinary run leaves the working tree as it was.
DOCS_IMAGES = ROOT / "docs" / "images"


def fast_answer(base: str, token: str, question: str) -> dict:
    """A question asked through the API in fast mode (the browser test's `request` is pytest's)."""
    status, _, body = request(f"{base}/api/v1/query", token=token, body={"question": question, "mode": "fast"})
    assert status == 200, body
    return body


# Time-stamps what the ask page shows as it happens: progress lines, streamed text, the final answer.
WATCH = """
window.__seen = [];
new MutationObserver(() => {
  const progress = document.querySelector("#progress li.done");
  const answer = document.querySelector("#answer");
  const actions = document.querySelector("#actions");
  if (progress && !window.__seen.some((s) => s.kind === "progress")) window.__seen.push({kind: "progress", at: performance.now()});
  if (answer && answer.checkVisibility() && answer.textContent && !window.__seen.some((s) => s.kind === "text")) window.__seen.push({kind: "text", at: performance.now()});
  if (actions && actions.checkVisibility() && !window.__seen.some((s) => s.kind === "answer")) window.__seen.push({kind: "answer", at: performance.now()});
  for (const li of document.querySelectorAll("#progress li")) window.__seen.push({kind: "line", text: li.textContent});
}).observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
"""


def sign_in(page, base: str, username: str, password: str) -> None:
    """Sign in on Cairn's own page, wherever the browser stands (signed out)."""
    page.goto(f"{base}/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")


def chromium(playwright):
    """Debian's Chromium, headless, kept off the network this machine cannot reach (its background
    services would otherwise try, and fail, at every start)."""
    return playwright.chromium.launch(
        executable_path=str(CHROMIUM),
        args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    )  # fmt: skip


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (.ci/run installs it)")
def test_a_reader_asks_watches_it_stream_opens_a_source_gives_feedback_and_finds_it_in_history(
    served_database, request, tmp_path
):
    """The ask page in a real browser against the production server (gunicorn): sign in, ask, watch
    progress and the answer stream in, open a citation's card and its document, thumbs down with a
    reason, find it in "my questions", a phone's width without sideways scrolling, and not one
    request outside the server's own origin on the ask page, the admin or the API docs; then a
    curator's review queue of write-backs. The ask page and the queue are the README's pictures."""
    from playwright.sync_api import sync_playwright

    shots = SCREENSHOTS / request.node.name
    shutil.rmtree(shots, ignore_errors=True)  # this run's steps only
    shots.mkdir(parents=True)
    manage("reader", "erin", "--password-stdin", input="pebble-larch-quarry-71\n")
    violations, elsewhere, errors = [], [], []
    with served() as base:
        with sync_playwright() as playwright:
            browser = chromium(playwright)
            page = browser.new_page()
            page.add_init_script(WATCH)
            page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: None if r.url.startswith((base, "data:")) else elsewhere.append(r.url))
            step = iter(range(1, 100))

            def shot(name: str, docs: str | None = None) -> None:
                path = shots / f"{next(step):02d}-{name}.png"
                page.screenshot(path=str(path), full_page=True)
                if docs and os.environ.get("CAIRN_DOCS_SCREENSHOTS") == "1":  # also the README's picture
                    DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, DOCS_IMAGES / docs)

            page.goto(f"{base}/")
            assert page.url.startswith(f"{base}/accounts/login/")
            page.fill("#id_username", "erin")
            page.fill("#id_password", "pebble-larch-quarry-71")
            shot("sign-in")
            page.click("button[type=submit]")
            page.wait_for_url(f"{base}/")

            # Ask: the button is disabled at once, progress shows, then the answer streams in.
            page.fill("#question", "when does the cafeteria open")
            page.select_option("#mode", "fast")
            page.click("#ask-button")
            assert page.is_disabled("#ask-button")
            page.wait_for_selector("#actions:not([hidden])", timeout=60_000)
            shot("answered", docs="ask.png")
            seen = page.evaluate("window.__seen")
            at = {s["kind"]: s["at"] for s in reversed(seen) if "at" in s}
            lines = {s["text"] for s in seen if s["kind"] == "line"}
            assert {"Question received", "Checked 3 passages: 1 verified"} <= lines, lines
            # Streamed, not buffered by the server: progress came well before the finished answer.
            assert at["progress"] < at["text"] <= at["answer"] and at["answer"] - at["progress"] > 30, at
            assert not page.is_disabled("#ask-button")
            assert "8 am" in page.inner_text("#answer")
            assert page.inner_text("#headline") == "Answered from 1 verified source"
            assert re.fullmatch(r"Confidence \d{1,3}%", page.inner_text("#confidence"))  # how sure, in words
            assert page.is_hidden("#details-list")  # the machinery is behind "Details"
            assert "CORRECT" not in page.inner_text("#result")

            # A citation opens its source card, the cited sentence marked; the card opens the document.
            page.click("#answer a.cite")
            assert page.url.endswith("#source-1")
            card = page.locator("#sources li:target")
            assert "8 am" in card.locator("mark").inner_text() and "Handbook" in card.inner_text()
            shot("source-card")
            card.locator(".card-title a").click()
            page.wait_for_url(f"{base}/documents/*")
            assert page.inner_text("article h2") == "Cafeteria"
            assert "8 am" in page.inner_text("section.passage:target")
            document_path = page.evaluate("document.location.pathname")
            shot("document")
            page.go_back()
            page.wait_for_selector("#actions:not([hidden])")

            # Thumbs down with a reason.
            page.click("#actions button[data-thumbs='0']")
            page.wait_for_selector("#reason:not([hidden])")
            page.fill("#reason-text", "the weekend hours are missing")
            page.click("#reason button[type=submit]")
            page.locator("#feedback-state", has_text="reason").wait_for()
            shot("feedback")

            # A follow-up: answered as the question it means, the turn before listed above the form;
            # "New conversation" starts afresh.
            page.fill("#question", "and when does it close?")
            page.click("#ask-button")
            page.wait_for_selector("#answered:not([hidden])", timeout=60_000)
            answered = page.inner_text("#answered")
            assert answered.startswith("Answered: When does it close? (when does the cafeteria open"), answered
            assert "3 pm" in page.inner_text("#answer") and page.input_value("#question") == ""
            assert "when does the cafeteria open" in page.inner_text("#turns")
            shot("follow-up")
            page.click("#new-conversation")
            assert page.is_hidden("#thread") and page.is_hidden("#new-conversation") and page.is_hidden("#result")

            # My questions: there, searchable, re-openable.
            page.click("nav >> text=my questions")
            page.wait_for_url(f"{base}/history")
            assert "when does the cafeteria open" in page.inner_text("ol.history")
            assert "you found it not useful" in page.inner_text("ol.history")
            page.fill("#q", "zebra")
            page.click("form.search button")
            assert "None of your questions" in page.inner_text("ol.history")
            page.fill("#q", "cafeteria")
            page.click("form.search button")
            shot("history")
            page.click("ol.history a")
            page.wait_for_selector("#actions:not([hidden])")
            assert "8 am" in page.inner_text("#answer")

            # A bad question: its error at the top, in place of the answer.
            page.fill("#question", "   ")
            page.click("#ask-button")
            page.wait_for_selector("#error:not([hidden])")
            assert "question" in page.inner_text("#error") and page.is_hidden("#result")
            shot("error")

            # A phone: nothing wider than the screen, on every page.
            page.set_viewport_size({"width": 390, "height": 844})
            for path in ("/", "/history", document_path):
                page.goto(f"{base}{path}")
                if path == "/":
                    page.fill("#question", "when does the cafeteria open")
                    page.press("#question", "Enter")  # the keyboard asks too
                    page.wait_for_selector("#actions:not([hidden])", timeout=60_000)
                    page.click("#details summary")
                overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
                assert overflow <= 0, (path, overflow)
                shot(f"phone-{path.strip('/').split('/')[0] or 'ask'}")

            page.set_viewport_size({"width": 1280, "height": 900})
            page.goto(f"{base}/admin/")
            page.wait_for_load_state("networkidle")
            page.goto(f"{base}/api/docs/")
            page.wait_for_selector(".swagger-ui .info .title", timeout=30_000)
            assert "Cairn API" in page.inner_text(".swagger-ui .info .title")

            page.goto(f"{base}/")
            page.click("nav button.link")  # sign out
            page.wait_for_url(f"{base}/accounts/login/")

            # Found answers are write-back candidates. A curator asks two questions of a collection
            # only curators read (so the other tests' readers never see it); validated as the worker
            # would, the candidates wait in the review queue with their scores beside the reader's.
            policies = tmp_path / "policies.jsonl"
            policies.write_text(json.dumps({"id": "1", "title": "Expenses", "text": EXPENSES}))
            manage("ingest", str(policies), "--collection", "policies", "--group", "curators")
            cora = manage("demo_user", "--username", "cora", "--password", "gravel-fern-beacon-38").stdout.split()[-1]
            for question in ("how soon must travel receipts be submitted", "when are taxis refunded"):
                assert fast_answer(base, cora, question)["found"]
            manage("validate_pending")
            sign_in(page, base, "cora", "gravel-fern-beacon-38")
            page.set_viewport_size({"width": 1440, "height": 900})
            page.goto(f"{base}/admin/writeback/writeback/")
            page.click("#toggle-nav-sidebar")  # the queue's columns, not the admin's menu
            queue = page.inner_text("#result_list")
            assert "when does the cafeteria open" in queue and "pending review" in queue, queue
            assert "pending validation" not in queue, queue
            shot("review-queue", docs="review-queue.png")
            browser.close()
        assert violations == [] and errors == [] and elsewhere == []


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (.ci/run installs it)")
def test_the_ask_page_shows_a_real_models_answer_as_the_output_gate_passes_it(served_database, request):
    """Standard mode with the LLM (SmolLM2 on llama.cpp's OpenAI-compatible server) under the
    production server: the answer arrives a checked sentence at a time, carries no prompt markup,
    its headline counts the sources its shown sentences cite, and Details says what was left out."""
    from playwright.sync_api import sync_playwright

    from tests.llama_server import CONTEXT, LlamaServer
    from tests.test_llm import completions_served

    shots = SCREENSHOTS / request.node.name
    shutil.rmtree(shots, ignore_errors=True)
    shots.mkdir(parents=True)
    manage("reader", "fern", "--password-stdin", input="moss-cedar-harbour-52\n")
    errors = []
    with (
        LlamaServer(log=shots / "llama.log") as llm,
        served(CAIRN_GENERATOR="openai", CAIRN_OPENAI_BASE_URL=llm.url, CAIRN_OPENAI_MODEL=llm.model,
               CAIRN_OPENAI_CONTEXT=str(CONTEXT)) as base,
        sync_playwright() as playwright,
    ):  # fmt: skip
        browser = chromium(playwright)
        page = browser.new_page()
        page.add_init_script(WATCH)
        page.on("pageerror", lambda e: errors.append(str(e)))
        sign_in(page, base, "fern", "moss-cedar-harbour-52")
        for asked, question in enumerate(("when does the cafeteria open", "where do visitors park"), start=1):
            page.fill("#question", question)
            page.select_option("#mode", "standard")
            page.click("#ask-button")
            page.wait_for_selector("#actions:not([hidden])", timeout=120_000)
            page.eval_on_selector("#details", "details => { details.open = true; }")
            page.screenshot(path=str(shots / f"{question.split()[-1]}.png"), full_page=True)
            seen = page.evaluate("window.__seen")
            at = {s["kind"]: s["at"] for s in reversed(seen) if "at" in s}
            assert at["progress"] < at["text"] <= at["answer"], at
            text, headline = page.inner_text("#answer"), page.inner_text("#headline")
            details = page.inner_text("#details-list")
            assert "<<<" not in text and ">>" not in text
            # The headline counts what the shown sentences cite. (The model may also say it cannot
            # answer: critiques of earlier answers in this database reach its prompt as warnings.)
            cited = len(set(re.findall(r"\[(\d+)\]", text)))
            if headline == "Cairn could not confirm an answer; these passages look closest":
                assert cited  # no claim: the passages to look at, cited
            elif cited:
                assert headline == f"Answered from {cited} verified source{'s' if cited != 1 else ''}"
            else:
                assert headline == "Not in the knowledge base", headline
            written_by = re.search(r"Written by\s+(\w+)", details).group(1)
            assert written_by in ("openai", "extractive")
            assert completions_served(llm) >= asked  # the model wrote this answer, whoever's was shown
            checked = page.inner_text("#checked") if page.is_visible("#checked") else ""
            if written_by == "extractive":  # the gate withheld the model's answer: said so
                assert checked.startswith("The model's answer was not supported") and "Left out" in details
            elif checked:
                assert re.fullmatch(r"\d+ sentences? left out: the sources do not support (it|them)\.", checked)
                assert details.count("Left out") == int(checked.split()[0])
        browser.close()
    assert errors == []


VISITORS = (
    "Visitors park in lot A by the main entrance. Lot A opens at 7 am on weekdays and at 9 am on Saturdays. "
    "A visitor's permit is issued at reception on arrival. Overnight parking is not allowed in lot A."
)


@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (.ci/run installs it)")
def test_a_reader_marks_with_the_keyboard_the_sentence_that_answered_and_then_that_none_did(
    served_database, request, tmp_path
):
    """Where the answer was, on the ask page in a real browser against the production server: a card
    has one "this answers it" button, however many sentences it holds. The reader tabs from a
    source's title to its chosen sentence, chooses the next with an arrow key, tabs to the button
    and presses Enter; the button shows pressed, the card thanks them, and the Mark row holds that
    sentence. A click on another sentence and one on the button move the mark. Then "None of these
    sources answers it" replaces it, on the page as in the row, and a reload still shows it."""
    from playwright.sync_api import sync_playwright

    shots = SCREENSHOTS / request.node.name
    shutil.rmtree(shots, ignore_errors=True)
    shots.mkdir(parents=True)
    # A passage of several sentences, in a collection only gwen reads (the other tests' answers stay).
    grounds = tmp_path / "grounds.jsonl"
    grounds.write_text(json.dumps({"id": "visitors", "title": "Visitors", "text": VISITORS}))
    manage("ingest", str(grounds), "--collection", "grounds")
    manage("reader", "gwen", "--password-stdin", "--collection", "grounds", input="tern-willow-basalt-19\n")
    errors = []

    def stored(response_id: str) -> dict:
        script = (
            f"import json; from writeback.models import Mark; m = Mark.objects.get(response_id={response_id!r}); "
            "print(json.dumps({'user': m.user.username, 'n': m.evidence_n, 'sentence': m.sentence}))"
        )
        return json.loads(manage("shell", "-c", script).stdout.strip().splitlines()[-1])

    def active(script: str):
        return page.evaluate(f"(element => {script})(document.activeElement)")

    with served() as base, sync_playwright() as playwright:
        browser = chromium(playwright)
        page = browser.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        sign_in(page, base, "gwen", "tern-willow-basalt-19")
        page.fill("#question", "where do visitors park")
        page.select_option("#mode", "fast")
        page.press("#question", "Enter")
        page.wait_for_selector("#actions:not([hidden])", timeout=60_000)
        response_id = page.evaluate("new URLSearchParams(location.search).get('answer')")
        assert page.get_attribute("#mark-none", "aria-pressed") == "false"

        # One button per card, not one after each sentence.
        cards = page.locator("#result li.card")
        assert page.locator("#result li.card .sentence").count() > cards.count()  # a card of several sentences
        assert 0 < page.locator("#result button.answers-it").count() <= cards.count()

        # The keyboard alone: from the title of the card of several sentences, Tab reaches its chosen
        # sentence, an arrow key chooses the next, Tab reaches the card's button, Enter marks.
        card = next(c for c in page.locator("#sources li.card").all() if c.locator(".sentence").count() > 1)
        card.locator(".card-title a").focus()
        for _ in range(4):
            page.keyboard.press("Tab")
            if active("element.matches('#sources .sentence[role=radio]')"):
                break
        assert active("element.getAttribute('aria-checked')") == "true", active("element.outerHTML")
        first = active("element.dataset.sentence")
        page.keyboard.press("ArrowRight")
        sentence = active("element.dataset.sentence")
        assert sentence != first and active("element.getAttribute('aria-checked')") == "true"
        page.keyboard.press("Tab")
        button = card.locator("button.answers-it")
        assert active("element.matches('button.answers-it')") and button.get_attribute("data-sentence") == sentence
        assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") != "none"  # focus shows
        assert button.get_attribute("aria-pressed") == "false"
        n = int(button.get_attribute("data-n"))
        assert button.get_attribute("aria-label").startswith(f"This answers it: [{n}] {sentence.split()[0]}")
        page.keyboard.press("Enter")
        card.locator(".mark-note", has_text="Thanks: a curator will review it").wait_for()
        assert button.get_attribute("aria-pressed") == "true"
        assert page.locator("button.answers-it[aria-pressed=true]").count() == 1
        assert card.locator(".sentence.marked").get_attribute("data-sentence") == sentence
        assert page.get_attribute("#mark-none", "aria-pressed") == "false"
        page.screenshot(path=str(shots / "1-sentence-marked.png"), full_page=True)
        assert stored(response_id) == {"user": "gwen", "n": n, "sentence": sentence}

        # Two clicks: a sentence, then the button.
        card.locator(".sentence", has_text=first).click()
        assert button.get_attribute("aria-pressed") == "false"  # chosen, not yet marked
        button.click()
        card.locator(".sentence.marked", has_text=first).wait_for()
        assert stored(response_id) == {"user": "gwen", "n": n, "sentence": first}

        # "None of these sources answers it": one mark at a time, here as on the server.
        page.click("#mark-none")
        page.locator("#mark-state", has_text="Thanks: a curator will review it").wait_for()
        assert page.get_attribute("#mark-none", "aria-pressed") == "true"
        assert page.locator("button.answers-it[aria-pressed=true]").count() == 0
        assert page.locator(".sentence.marked").count() == 0
        assert card.locator(".mark-note").inner_text() == ""
        page.screenshot(path=str(shots / "2-none-marked.png"), full_page=True)
        assert stored(response_id) == {"user": "gwen", "n": None, "sentence": ""}

        page.reload()  # the recorded answer, re-opened, with the reader's mark on it
        page.wait_for_selector("#actions:not([hidden])")
        assert page.get_attribute("#mark-none", "aria-pressed") == "true"

        # A where-to-look answer (this one, recorded as Cairn words it): its headline is not said
        # again in its body, nor a page's heading, its document's title, under the card's title.
        page.evaluate(
            """async (id) => {
              const body = await (await fetch(`/api/v1/answers/${id}`)).json();
              const cited = body.evidence.find((e) => e.n === body.citations[0].n);
              cited.text = `# ${cited.title}\n\n${cited.text}`;
              body.outcome = "where_to_look";
              body.answer = `${WHERE_TO_LOOK}: ${body.answer}`;
              render(body);
            }""",
            response_id,
        )
        assert page.inner_text("#headline") == "Cairn could not confirm an answer; these passages look closest"
        assert not page.inner_text("#answer").startswith("Cairn could not confirm"), page.inner_text("#answer")
        quote = page.locator("#sources li.card.cited blockquote").first
        title = page.locator("#sources li.card.cited .card-title").first.inner_text()
        assert not quote.inner_text().startswith(title), quote.inner_text()
        browser.close()
    assert errors == []
