"""What an intranet deployment relies on, in process: Cairn's own sign-in page for every employee,
sign-in attempt limiting with an audit row, API rate limits, JSON errors under /api/, a bounded
JSON depth, health that tells strangers only up or down, a strict Content-Security-Policy with
every asset served by Cairn itself, the refusal to serve with the demo's secrets, and the reader
command."""

import re
import secrets
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client, override_settings
from rest_framework.settings import api_settings
from rest_framework.test import APIClient

from accounts.throttling import hit
from common.env import parse_rate
from config.safety import unsafe_start_reasons
from corpus.models import AuditEvent, Collection
from tests.conftest import client_for
from tests.nginx import forwarded_meta, proxy_headers

pytestmark = pytest.mark.django_db
QUESTION = "who got the first nobel prize in physics"


def rates(**overrides):
    """REST_FRAMEWORK with some throttle rates replaced."""
    from django.conf import settings

    return {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {**api_settings.DEFAULT_THROTTLE_RATES, **overrides}}


# --- Sign-in -------------------------------------------------------------------------------------


def test_a_reader_signs_in_on_cairns_own_page_asks_and_signs_out(charlie):
    client = Client()
    page = client.get("/")
    assert page.status_code == 302 and page.url.startswith("/accounts/login/")
    form = client.get(page.url)
    assert form.status_code == 200 and b'name="password"' in form.content

    wrong = client.post("/accounts/login/", {"username": "charlie", "password": "nope"})
    assert wrong.status_code == 200 and b"correct username and password" in wrong.content

    signed_in = client.post("/accounts/login/", {"username": "charlie", "password": "charlie-pw", "next": "/"})
    assert signed_in.status_code == 302 and signed_in.url == "/"
    ask = client.get("/")
    assert ask.status_code == 200 and b"charlie" in ask.content
    assert b"/admin/" not in ask.content  # no admin link for a reader
    # The admin's own sign-in still admits staff only.
    assert Client().post("/admin/login/", {"username": "charlie", "password": "charlie-pw"}).status_code == 200

    assert client.get("/accounts/logout/").status_code == 405  # a link cannot sign anyone out
    out = client.post("/accounts/logout/")
    assert out.status_code == 302 and out.url == "/accounts/login/"
    assert client.get("/").status_code == 302


def test_a_reader_changes_their_password(charlie):
    client = Client()
    client.force_login(charlie)
    weak = client.post(
        "/accounts/password/", {"old_password": "charlie-pw", "new_password1": "123", "new_password2": "123"}
    )
    assert weak.status_code == 200 and b"too short" in weak.content
    strong = "larch-pebble-quarry-71"
    changed = client.post(
        "/accounts/password/", {"old_password": "charlie-pw", "new_password1": strong, "new_password2": strong}
    )
    assert changed.status_code == 302 and changed.url == "/accounts/password/done/"
    charlie.refresh_from_db()
    assert charlie.check_password(strong)


def test_repeated_wrong_passwords_lock_the_sign_in_and_leave_an_audit_row(charlie, settings):
    settings.AXES_FAILURE_LIMIT = 3
    client = Client()
    for _ in range(3):
        client.post("/accounts/login/", {"username": "charlie", "password": "guess"})
    locked = client.post("/accounts/login/", {"username": "charlie", "password": "charlie-pw"})
    assert locked.status_code == 429 and b"Too many failed sign-ins" in locked.content
    assert "_auth_user_id" not in client.session  # the right password, too late
    admin = client.post("/admin/login/", {"username": "charlie", "password": "charlie-pw"})
    assert admin.status_code == 429  # the admin's sign-in shares the limit
    event = AuditEvent.objects.get(action="user.locked_out")
    assert event.object_id == "charlie" and event.after["ip_address"] == "127.0.0.1"
    # Another user from the same address is not locked out with charlie.
    User.objects.create_user("dora", password="dora-pw-long")
    other = Client().post("/accounts/login/", {"username": "dora", "password": "dora-pw-long"})
    assert other.status_code == 302


@override_settings(CAIRN_PROXY_COUNT=1, AXES_FAILURE_LIMIT=3)
def test_behind_the_shipped_proxy_lockouts_key_on_the_client_not_on_the_user_name(django_user_model):
    """Attack: behind deploy/nginx.conf, failures from anyone used to lock `admin` out for everyone."""
    django_user_model.objects.create_superuser("admin", password="admin-pw-long-enough")
    mallory, alice = "198.51.100.7", "198.51.100.8"
    for _ in range(3):
        Client().post("/accounts/login/", {"username": "admin", "password": "guess"}, **forwarded_meta(mallory))
    right = {"username": "admin", "password": "admin-pw-long-enough"}
    assert Client().post("/accounts/login/", right, **forwarded_meta(mallory)).status_code == 429
    assert Client().post("/accounts/login/", right, **forwarded_meta(alice)).status_code == 302
    assert AuditEvent.objects.get(action="user.locked_out").after["ip_address"] == mallory


@pytest.mark.parametrize(
    ("peer", "sent", "client"),
    [
        ("127.0.0.1", "198.51.100.7", "198.51.100.7"),  # the proxy's entry
        ("127.0.0.1", "203.0.113.9, 198.51.100.7", "198.51.100.7"),  # what the client sent is left of it
        ("127.0.0.1", "", "127.0.0.1"),  # the proxy's host itself
        ("127.0.0.1", "not-an-address", "127.0.0.1"),
        ("192.0.2.20", "198.51.100.7", "192.0.2.20"),  # not a trusted proxy: its claim is ignored
    ],
)
def test_the_client_address_is_believed_from_a_trusted_proxy_only(settings, peer, sent, client):
    from django.test import RequestFactory

    from accounts.addresses import client_address

    settings.CAIRN_PROXY_COUNT, settings.CAIRN_FORWARDED_ALLOW_IPS = 1, ["127.0.0.1", "::1"]
    assert client_address(RequestFactory().get("/", REMOTE_ADDR=peer, HTTP_X_FORWARDED_FOR=sent)) == client
    settings.CAIRN_PROXY_COUNT = 0
    assert client_address(RequestFactory().get("/", REMOTE_ADDR=peer, HTTP_X_FORWARDED_FOR=sent)) == peer


@pytest.mark.parametrize(("peer", "secure"), [("127.0.0.1", True), ("192.0.2.20", False)])
def test_https_is_believed_from_the_trusted_proxy_only(settings, peer, secure):
    """Attack: a client reaching the server directly said X-Forwarded-Proto: https, and Django believed it."""
    from django.test import RequestFactory

    from accounts.addresses import untrusted_forwarded_proto_dropped

    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    request = RequestFactory().get("/", REMOTE_ADDR=peer, HTTP_X_FORWARDED_PROTO="https")
    assert untrusted_forwarded_proto_dropped(lambda r: r.is_secure())(request) is secure


def test_the_shipped_proxy_replaces_the_client_address_and_drops_identity_headers():
    headers = proxy_headers()
    assert headers["X-Forwarded-For"] == "$remote_addr"  # replaced, never appended to
    assert headers["X-Forwarded-User"] == headers["X-Forwarded-Groups"] == ""  # what a client sent is dropped
    sent = {"X-Forwarded-For": "203.0.113.9", "X-Forwarded-User": "admin", "X-Forwarded-Groups": "kb-editors"}
    assert forwarded_meta("198.51.100.7", sent) == {
        "HTTP_X_FORWARDED_FOR": "198.51.100.7", "HTTP_X_FORWARDED_PROTO": "https", "REMOTE_ADDR": "127.0.0.1"
    }  # fmt: skip


# --- Rate limits ---------------------------------------------------------------------------------


def test_parse_rate_reads_drfs_notation_and_refuses_nonsense():
    assert parse_rate("30/minute") == (30, 60)
    assert parse_rate("5/h") == (5, 3600)
    with pytest.raises(ValueError, match="not a rate"):
        parse_rate("thirty")


def test_a_window_counts_every_hit_and_a_new_window_forgets_the_old_one():
    assert hit("k", period=60, now=120.0)[0] == 1
    assert hit("k", period=60, now=150.0) == (2, 30.0)
    assert hit("k", period=60, now=185.0)[0] == 1  # the next window starts again
    from accounts.models import RateWindow

    assert list(RateWindow.objects.filter(key="k").values_list("window", flat=True)) == [180]


# 20 seconds into a minute, and into an hour: 1_800_000_000 is a whole number of hours.
INSTANT = 1_800_000_020.0


@pytest.fixture
def clock(monkeypatch):
    """The rate windows' clock stands still at INSTANT: every request of a test counts in one window,
    whenever the test runs (on the real clock, a minute could end between two requests)."""
    monkeypatch.setattr("accounts.throttling.clock", lambda: INSTANT)


def test_questions_are_rate_limited_per_user_with_a_json_429(charlie, alice, clock):
    with override_settings(REST_FRAMEWORK=rates(query="2/minute")):
        client = client_for(charlie)
        for _ in range(2):
            assert client.post("/api/v1/query", {"question": "x?", "mode": "fast"}, format="json").status_code == 200
        limited = client.post("/api/v1/query", {"question": "x?", "mode": "fast"}, format="json")
        assert limited.status_code == 429
        assert "throttled" in limited.json()["detail"].lower() and limited["Retry-After"] == "40"  # the minute's rest
        # Another user has a budget of their own, and reading is not limited.
        assert (
            client_for(alice).post("/api/v1/query", {"question": "x?", "mode": "fast"}, format="json").status_code
            == 200
        )
        assert client.get("/api/v1/documents").status_code == 200


def test_feedback_and_uploads_have_their_own_limits(bob, clock):
    with override_settings(REST_FRAMEWORK=rates(feedback="1/minute", upload="1/hour")):
        client = client_for(bob)
        document = {"collection": "demo", "title": "Cafeteria hours", "text": "The cafeteria opens at 8 am."}
        assert client.post("/api/v1/documents", document, format="json").status_code == 201
        refused = client.post("/api/v1/documents", document, format="json")
        assert refused.status_code == 429 and refused["Retry-After"] == "3580"  # the hour's rest
        answer = client.post("/api/v1/query", {"question": QUESTION, "mode": "fast"}, format="json").json()
        feedback = {"response_id": answer["response_id"], "thumbs": 1}
        assert client.post("/api/v1/feedback", feedback, format="json").status_code == 200
        assert client.post("/api/v1/feedback", feedback, format="json").status_code == 429


def test_anonymous_callers_are_limited_per_address_but_health_never_is(clock):
    with override_settings(REST_FRAMEWORK=rates(anon="2/minute")):
        client = APIClient()
        assert [client.get("/api/schema/").status_code for _ in range(3)] == [200, 200, 429]
        assert all(client.get("/api/v1/health").status_code == 200 for _ in range(5))
        # A forged X-Forwarded-For does not buy a fresh budget when no proxy is configured.
        assert client.get("/api/schema/", HTTP_X_FORWARDED_FOR="203.0.113.9").status_code == 429


# --- Errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "code"),
    [
        ("get", "/api/v1/no-such-route", 404),
        ("get", "/api/v1/answers/not-a-uuid", 404),
        ("get", "/api/v1/documents/12abc", 404),
        ("delete", "/api/v1/query", 405),
        ("get", "/api/v1/query", 405),
    ],
)
def test_api_errors_are_json_in_drfs_shape(charlie, method, path, code):
    response = getattr(client_for(charlie), method)(path)
    assert response.status_code == code
    assert response["Content-Type"] == "application/json"
    assert set(response.json()) == {"detail"}


def test_an_unsupported_media_type_is_a_json_415(charlie):
    response = client_for(charlie).post("/api/v1/query", b"<q/>", content_type="application/xml")
    assert response.status_code == 415 and set(response.json()) == {"detail"}


def test_an_unhandled_error_under_api_is_a_json_500_that_leaks_nothing(charlie, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("secret socket /tmp/x")

    monkeypatch.setattr("pipeline.api.pipeline_run", explode)
    client = client_for(charlie)
    client.raise_request_exception = False
    response = client.post("/api/v1/query", {"question": QUESTION}, format="json")
    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    assert "secret" not in response.content.decode() and set(response.json()) == {"detail"}


def test_pages_outside_the_api_keep_html_errors():
    response = Client().get("/no-such-page")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")


def nested(depth: int) -> list:
    """A list `depth` levels deep."""
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("path", "fields", "field"),
    [
        ("/api/v1/query", {}, "question"),
        ("/api/v1/feedback", {"thumbs": 1}, "response_id"),
        ("/api/v1/documents", {"collection": "demo", "text": "Some text."}, "title"),
        ("/api/v1/writebacks/1/reject", {}, "reason"),
    ],
)
def test_deeply_nested_json_is_a_400_on_every_post_endpoint(bob, path, fields, field):
    client = client_for(bob)
    for depth in (33, 1000, 100_000):
        body = "[" * depth + "]" * depth
        response = client.post(path, body, content_type="application/json")
        assert response.status_code == 400, (path, depth)
        assert "nested deeper than 32 levels" in response.json()["detail"]
    # Exactly 32 levels (the object, then 31 in one field) parses, and the endpoint's own validation
    # refuses the field that holds them.
    at_the_limit = {**fields, field: nested(31)}
    response = client.post(path, at_the_limit, format="json")
    assert response.status_code == 400 and list(response.json()) == [field], response.json()


# --- Health, CSP, assets ------------------------------------------------------------------------


def test_health_tells_strangers_up_or_down_and_staff_the_details(bob, charlie):
    anonymous = APIClient().get("/api/v1/health").json()
    assert set(anonymous) == {"status", "database", "vector_extension", "embedder"}
    assert not re.search(r"/|error|\d+\.\d+", str(anonymous))  # no paths, messages or versions
    assert "details" not in client_for(charlie).get("/api/v1/health").json()  # staff only
    details = client_for(bob).get("/api/v1/health").json()["details"]
    assert details["vector_version"].startswith("0.8") and details["database_error"] is None


EXTERNAL = re.compile(rb"""(?:src|href)=["'](?:https?:)?//""")


@pytest.mark.parametrize("path", ["/accounts/login/", "/", "/api/docs/", "/admin/login/"])
def test_pages_load_nothing_from_elsewhere_under_a_strict_csp(charlie, path):
    client = Client()
    client.force_login(charlie)
    response = client.get(path, follow=True)
    assert response.status_code == 200
    csp = response["Content-Security-Policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert not EXTERNAL.search(response.content), path
    assert b"<script>" not in response.content and b"<style>" not in response.content  # nothing inline


def test_swagger_ui_and_its_start_up_script_are_served_by_cairn():
    page = Client().get("/api/docs/").content.decode()
    scripts = re.findall(r'<script src="([^"]+)"', page)
    assert any("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in s for s in scripts)
    for src in scripts:
        response = Client().get(src.replace("&amp;", "&"))
        assert response.status_code == 200, src
        body = b"".join(response.streaming_content) if response.streaming else response.content
        assert len(body) > 100


# --- Refusing an unsafe start, and the reader command ---------------------------------------------


def test_a_web_server_refuses_the_development_key_and_the_demo_password(settings, django_user_model):
    def reasons() -> str:
        return " ".join(unsafe_start_reasons())

    settings.DEBUG = settings.CAIRN_DEMO = False
    settings.SECRET_KEY = settings.DEVELOPMENT_SECRET_KEY
    assert "CAIRN_SECRET_KEY is the development key" in reasons()
    settings.SECRET_KEY = "a-long-random-production-key-0123456789-abcdefghijklmnop"
    assert reasons() == ""  # no demo user: fine
    call_command("demo_user", stdout=StringIO())
    assert "manage.py changepassword demo" in reasons()
    settings.CAIRN_DEMO = True  # `make run`
    assert reasons() == ""
    settings.CAIRN_DEMO = False
    demo = django_user_model.objects.get(username="demo")
    demo.set_password("a-real-password-now")
    demo.save()
    assert reasons() == ""


def test_a_web_server_refuses_the_shipped_placeholder_key_and_obviously_weak_ones(settings):
    """Attack: deploy/cairn.env's CHANGE-ME key, copied as is, used to pass selfcheck and sign sessions."""
    env = (Path(__file__).resolve().parent.parent / "deploy" / "cairn.env").read_text().splitlines()
    shipped = next(line.partition("=")[2] for line in env if line.startswith("CAIRN_SECRET_KEY="))
    settings.DEBUG = settings.CAIRN_DEMO = False
    for weak in (shipped, "short-but-random-Qx7", "ab" * 40, "django-insecure-" + "k3Jx9" * 10):
        settings.SECRET_KEY = weak
        assert "CAIRN_SECRET_KEY" in " ".join(unsafe_start_reasons()), weak
    settings.SECRET_KEY = secrets.token_urlsafe(50)
    assert unsafe_start_reasons() == []


def test_the_reader_command_creates_a_reader_of_a_private_collection(finance):
    out = StringIO()
    call_command("reader", "erin", collection=["finance"], stdout=out)
    password = re.search(r"shown once\): (\S+)", out.getvalue()).group(1)
    erin = User.objects.get(username="erin")
    assert erin.check_password(password) and not erin.is_staff
    assert list(erin.groups.values_list("name", flat=True)) == ["finance-readers"]
    assert Collection.objects.get(slug="finance").groups.filter(name="finance-readers").exists()
    assert "reads: finance" in out.getvalue()
    found = client_for(erin).post(
        "/api/v1/query", {"question": "what is the per diem for business travel"}, format="json"
    )
    assert any(item["title"] == "Travel expense policy" for item in found.json()["evidence"])
    event = AuditEvent.objects.filter(action="user.groups", object_id=str(erin.pk)).get()
    assert event.after == {"groups": ["finance-readers"]}
    with pytest.raises(CommandError, match="--collection: no collection nope"):
        call_command("reader", "erin", collection=["nope"])
