"""Website and Confluence sources against a curator who points them where they must not go, and
servers that answer to hurt. Each test is the attack: a source at the server's own loopback ports,
a cloud metadata service or the intranet (by address, by name, by odd spellings of an address, by a
redirect, by a name whose address changes between lookups); a credential sent to a host it was not
granted for; a body too large to hold, a gzip bomb, a server that drips a byte at a time. A guard
fails any test whose code so much as tries to connect outside loopback, and a resolver gives the
attacks' names their addresses, so nothing here ever leaves this machine."""

from __future__ import annotations

import errno
import functools
import itertools
import socket
import threading
import time
import tracemalloc
import zlib
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import ip_address, ip_network
from urllib.parse import urlsplit

import pytest
from django.core.management import call_command

from corpus.models import Document
from corpus.services import collection_get_or_create
from sources.connectors import connector_for
from sources.connectors.base import ConnectorError, Item
from sources.models import SecretGrant, Source
from sources.services import source_create, source_sync
from tests.conftest import client_for
from tests.loopback import LoopbackServer, free_port

pytestmark = pytest.mark.django_db

MB = 1024 * 1024
PUBLIC = "93.184.215.14"  # a global address: were it ever connected to, the guard would say so
NAMES = {
    "metadata.test": ["169.254.169.254"],
    "intranet.test": ["10.1.2.3"],
    "mapped.test": ["::ffff:127.0.0.1"],
    "loop.test": ["127.0.0.1"],
    "public-and-private.test": [PUBLIC, "10.0.0.1"],
    "wiki.test": ["127.0.0.1"],
    "evil.test": ["127.0.0.1"],
}
RULE = "refused: it is a loopback, private, link-local or otherwise internal address"
TEXT = "The ferry to the island leaves the harbour at seven in the morning and returns at noon every day."


@pytest.fixture(autouse=True)
def connections_stay_on_loopback(monkeypatch):
    """Fail the test on any attempt to connect outside 127.0.0.0/8 and ::1, and stop the attempt."""
    attempts: list = []

    def check(address, resolve: bool) -> None:
        if not isinstance(address, tuple):  # a Unix socket
            return
        try:
            ips = [ip_address(address[0].split("%")[0])]
        except ValueError:  # a name: create_connection connects to each of its addresses through connect
            if not resolve:
                return
            ips = [ip_address(info[4][0].split("%")[0]) for info in socket.getaddrinfo(address[0], address[1])]
        if any(not (ip in ip_network("127.0.0.0/8") or ip == ip_address("::1")) for ip in ips):
            attempts.append(address)
            raise OSError(errno.ENETUNREACH, f"this test forbids connecting to {address}")

    def guarded(original):
        def connect(sock, address, *args):
            check(address, resolve=True)
            return original(sock, address, *args)

        return connect

    def create_connection(address, *args, **kwargs):
        check(address, resolve=False)
        return real_create_connection(address, *args, **kwargs)

    real_create_connection = socket.create_connection
    monkeypatch.setattr(socket.socket, "connect", guarded(socket.socket.connect))
    monkeypatch.setattr(socket.socket, "connect_ex", guarded(socket.socket.connect_ex))
    monkeypatch.setattr(socket, "create_connection", create_connection)
    yield
    assert not attempts, f"connections were attempted outside loopback: {attempts}"


@pytest.fixture(autouse=True)
def resolver(monkeypatch):
    """NAMES resolve to their addresses; `rebind.test` to 127.0.0.2, then 127.0.0.1, by turns (DNS
    rebinding); every other name (and address) goes to the real resolver."""
    real = socket.getaddrinfo
    rebinding = itertools.cycle(["127.0.0.2", "127.0.0.1"])

    def getaddrinfo(host, port, family=0, type=0, proto=0, flags=0):
        name = host.decode() if isinstance(host, bytes) else host
        addresses = [next(rebinding)] if name == "rebind.test" else NAMES.get(name)
        if addresses is None:
            return real(host, port, family, type, proto, flags)
        port = int(port or 0)
        return [
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (a, port, 0, 0)) if ":" in a
            else (socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in addresses
        ]  # fmt: skip

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture(autouse=True)
def outbound_settings(settings):
    settings.CAIRN_SOURCES_ALLOW_NETWORKS = []  # the default, whatever the environment sets
    settings.CAIRN_SOURCES_CRAWL_DELAY = 0
    return settings


class Server:
    """A loopback HTTP server for what LoopbackServer cannot send: bodies made lazily as they are
    read (huge, dripping, a gzip bomb) and an address of its own (127.0.0.2). `routes` maps a path
    to a callable giving (status, headers, body), body bytes or an iterator of bytes; status None:
    the iterator is the whole raw reply. Records each request (path, headers), when each path was
    last asked for and the bytes each path sent before it ended or the client hung up."""

    def __init__(self, routes: dict, host: str = "127.0.0.1", port: int = 0) -> None:
        self.routes, self.calls, self.arrived, self.sent = routes, [], {}, Counter()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                path = urlsplit(self.path).path
                outer.calls.append((path, dict(self.headers)))
                outer.arrived[path] = time.monotonic()
                status, headers, body = outer.routes.get(path, lambda: (404, {}, b"not here"))()
                try:
                    if status is not None:
                        self.send_response(status)
                        for name, value in headers.items():
                            self.send_header(name, value)
                        if isinstance(body, bytes):
                            self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                    for piece in [body] if isinstance(body, bytes) else body:
                        self.wfile.write(piece)
                        outer.sent[path] += len(piece)
                except OSError:  # the client hung up
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://{host}:{self.port}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def paths(self) -> list[str]:
        return [path for path, _ in self.calls]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve():
    """Start a Server (`serve(routes, host=..., port=...)`); all are shut down after the test."""
    servers: list[Server] = []

    def start(routes: dict, **where) -> Server:
        servers.append(Server(routes, **where))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def loopback():
    """Start a LoopbackServer (`loopback(handle)`); all are shut down after the test."""
    servers: list[LoopbackServer] = []

    def start(handle) -> LoopbackServer:
        servers.append(LoopbackServer(handle).__enter__())
        return servers[-1]

    yield start
    for server in servers:
        server.__exit__()


def page(title: str, links: list[str] = ()) -> bytes:
    nav = "".join(f'<a href="{link}">{link}</a>' for link in links)
    return f"<html><head><title>{title}</title></head><body><h1>{title}</h1><p>{TEXT}</p>{nav}</body></html>".encode()


def html(body) -> tuple:
    return 200, {"Content-Type": "text/html"}, body


def redirect(location: str) -> tuple:
    return 302, {"Location": location}, b""


def sitemap(*urls: str) -> tuple:
    entries = "".join(f"<url><loc>{url}</loc></url>" for url in urls)
    body = f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'.encode()
    return 200, {"Content-Type": "application/xml"}, body


def huge(start: bytes = b"<html><body><p>", total: int = 300 * MB):
    """`total` bytes, made only as they are read."""
    piece = b"harbour " * 8192
    yield start
    for _ in range(total // len(piece)):
        yield piece


def gzip_bomb(total: int = 300 * MB):
    """`total` zero bytes gzipped (about a thousandth of that on the wire), compressed as read."""
    compressor, zeros = zlib.compressobj(6, zlib.DEFLATED, zlib.MAX_WBITS | 16), bytes(MB)
    for _ in range(total // MB):
        if out := compressor.compress(zeros):
            yield out
    yield compressor.flush()


def drip(start: bytes = b"<html><body><p>", seconds: float = 15.0):
    """`start`, then a byte every 0.2 s for `seconds` (a bound, so that even a client that never
    gives up is let go)."""
    yield start
    ends = time.monotonic() + seconds
    while time.monotonic() < ends:
        time.sleep(0.2)
        yield b"a"


def website(location: str, name: str = "site") -> Source:
    """A curator's website source (no operator's say-so) in a collection of its own."""
    collection, _ = collection_get_or_create(slug=f"{name}-docs")
    return source_create(operator=False, collection=collection, name=name, kind="website", location=location)


def titles(source: Source) -> set[str]:
    return set(Document.objects.filter(collection=source.collection).values_list("title", flat=True))


# --- Internal addresses ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "location",
    [
        "http://127.0.0.1:{port}/latest/meta-data/iam/security-credentials/",
        "http://loop.test:{port}/latest/meta-data/",
        "http://metadata.test:{port}/latest/meta-data/",
        "http://metadata.test/latest/meta-data/",
        "http://intranet.test:{port}/",
        "http://mapped.test:{port}/",
        "http://public-and-private.test:{port}/",
        "http://[::1]:{port}/",
        "http://[::ffff:127.0.0.1]:{port}/",
        "http://2130706433:{port}/",
        "http://0x7f.1:{port}/",
        "http://127.1:{port}/",
    ],
)
def test_a_curator_s_website_source_at_an_internal_address_is_refused_before_any_connection(location, serve):
    credentials = b'{"AccessKeyId": "AKIA-NOT-FOR-YOU"}'
    metadata = serve({"/robots.txt": lambda: (404, {}, b""), "/latest/meta-data/": lambda: html(credentials)})
    source = website(location.format(port=metadata.port))
    run = source_sync(source=source, inline=True)
    assert run.status == "failed" and RULE in run.error and "CAIRN_SOURCES_ALLOW_NETWORKS" in run.error, run.error
    assert metadata.calls == []
    assert not Document.objects.filter(collection=source.collection).exists()


def test_a_closed_internal_port_reads_the_same_as_an_open_one(serve):
    """Refused before connecting, an internal address's error cannot tell which ports listen."""
    errors = []
    for name, port in (("open", serve({}).port), ("closed", free_port())):
        run = source_sync(source=website(f"http://127.0.0.1:{port}/", name=name), inline=True)
        errors.append(run.error.replace(str(port), "PORT"))
    assert errors[0] == errors[1] and RULE in errors[0]


# --- Redirects ------------------------------------------------------------------------------------


@pytest.fixture
def outside_and_inside(serve, outbound_settings):
    """Only 127.0.0.2 is allowed: a site there (`outside`), an internal server on 127.0.0.1 at the
    same port (`inside`: what a redirect or a rebinding name would reach), recording every request."""
    outbound_settings.CAIRN_SOURCES_ALLOW_NETWORKS = [ip_network("127.0.0.2/32")]
    for _ in range(20):  # the port must be free on both addresses
        outside = serve({}, host="127.0.0.2")
        try:
            inside = serve({}, host="127.0.0.1", port=outside.port)
            break
        except OSError:
            continue
    else:
        pytest.fail("no port free on both 127.0.0.1 and 127.0.0.2")
    inside.routes.update({path: lambda: html(page("Internal secrets")) for path in ("/secret", "/docs/b.html")})
    inside.routes["/sitemap.xml"] = lambda: sitemap(f"{outside.url}/docs/a.html")
    return outside, inside


def test_a_crawl_never_follows_a_redirect_inside_or_out_of_the_site(outside_and_inside):
    outside, inside = outside_and_inside
    outside.routes.update({
        "/site/index.html": lambda: html(page("Index", ["inside.html", "off-site.html", "moved.html", "loop.html"])),
        "/site/inside.html": lambda: redirect(f"{inside.url}/secret"),  # the internal server
        "/site/off-site.html": lambda: redirect("/private/x.html"),  # allowed host, outside the site
        "/private/x.html": lambda: html(page("Private")),
        "/site/moved.html": lambda: redirect("/site/new.html"),  # within the site: followed
        "/site/new.html": lambda: html(page("New")),
        "/site/loop.html": lambda: redirect("/site/loop.html"),
    })  # fmt: skip
    source = website(f"{outside.url}/site/index.html")
    run = source_sync(source=source, inline=True)
    assert inside.calls == []
    assert "/private/x.html" not in outside.paths()
    assert outside.paths().count("/site/loop.html") == 6  # the request and five redirects, no more
    assert f"{outside.url}/site/inside.html (redirected to {inside.url}/secret): 127.0.0.1: {RULE}" in run.error
    assert "more than 5 redirects" in run.error
    assert titles(source) == {"Index", "New"}


def test_a_sitemap_never_leads_inside_by_redirect_or_by_listing(outside_and_inside):
    outside, inside = outside_and_inside
    outside.routes.update({
        "/docs/sitemap.xml": lambda: sitemap(f"{outside.url}/docs/a.html", f"{inside.url}/docs/b.html",
                                             f"{outside.url}/docs/c.html"),
        "/docs/a.html": lambda: redirect(f"{inside.url}/secret"),
        "/docs/c.html": lambda: html(page("Kept")),
        "/moved/sitemap.xml": lambda: redirect(f"{inside.url}/sitemap.xml"),  # the sitemap itself
    })  # fmt: skip
    source = website(f"{outside.url}/docs/sitemap.xml")
    run = source_sync(source=source, inline=True)
    assert (run.status, run.added, run.failed) == ("succeeded", 1, 1), (run.error, run.errors)
    assert RULE in run.errors[f"{outside.url}/docs/a.html"]
    assert titles(source) == {"Kept"}
    moved = source_sync(source=website(f"{outside.url}/moved/sitemap.xml", name="moved"), inline=True)
    assert moved.status == "failed" and RULE in moved.error
    assert inside.calls == []


def test_a_name_whose_address_changes_between_lookups_is_checked_at_every_connection(outside_and_inside):
    """rebind.test answers 127.0.0.2 (allowed), then 127.0.0.1: the request goes to the address
    checked, and the second lookup is checked again, never connected to."""
    outside, inside = outside_and_inside
    outside.routes["/docs/sitemap.xml"] = lambda: sitemap(f"http://rebind.test:{outside.port}/docs/c.html")
    outside.routes["/docs/c.html"] = lambda: html(page("Kept"))
    run = source_sync(source=website(f"http://rebind.test:{outside.port}/docs/sitemap.xml"), inline=True)
    assert run.status == "failed" and RULE in run.error, run.error
    assert outside.paths() == ["/robots.txt"] and inside.calls == []
    assert [headers["Host"] for _, headers in outside.calls] == [f"rebind.test:{outside.port}"]


# --- Credentials ----------------------------------------------------------------------------------


FERRIES_PAGE = {
    "id": "1",
    "title": "Ferries",
    "version": {"number": 1},
    "body": {"storage": {"value": f"<p>{TEXT}</p>"}},
}


def confluence_space(redirects: dict[str, str]):
    """Confluence's API for a space of one page, Ferries, whose attachments NAME.txt (ids 90, 91, …)
    download by a redirect to `redirects[NAME]`, as Cloud sends downloads to a media host."""
    attachments = [{"id": f"9{n}", "title": f"{name}.txt", "version": {"number": 1},
                    "_links": {"download": f"/download/attachments/1/{name}.txt"}}
                   for n, name in enumerate(redirects)]  # fmt: skip

    def handle(method, path, query, body):
        if path == "/wiki/rest/api/content":
            return 200, {"results": [FERRIES_PAGE], "_links": {}}
        if path == "/wiki/rest/api/content/1":
            return 200, FERRIES_PAGE
        if path == "/wiki/rest/api/content/1/child/attachment":
            return 200, {"results": attachments, "_links": {}}
        name = path.removeprefix("/wiki/download/attachments/1/").removesuffix(".txt")
        if name in redirects:
            return 302, None, {"Location": redirects[name]}
        return 404, {"message": "not found"}

    return handle


def test_a_granted_credential_goes_to_its_host_alone(loopback, outbound_settings, monkeypatch):
    outbound_settings.CAIRN_SOURCES_ALLOW_NETWORKS = [ip_network("127.0.0.0/8")]
    monkeypatch.setenv("CAIRN_SOURCE_WIKI_TOKEN", "pat-secret-1")
    evil = loopback(lambda method, path, query, body: (200, TEXT.encode()))
    evil_port = evil.url.rsplit(":", 1)[1]

    wiki = loopback(confluence_space({"elsewhere": f"http://evil.test:{evil_port}/media/elsewhere.txt",
                                      "metadata": "http://metadata.test/latest/meta-data/"}))  # fmt: skip
    collection, _ = collection_get_or_create(slug="wiki-docs")
    SecretGrant.objects.create(name="CAIRN_SOURCE_WIKI_TOKEN", collection=collection, scheme="http", host="wiki.test",
                               port=int(wiki.url.rsplit(":", 1)[1]))  # fmt: skip
    source = source_create(operator=False, collection=collection, name="wiki", kind="confluence",
                           location=f"http://wiki.test:{wiki.url.rsplit(':', 1)[1]}/wiki/spaces/ENG",
                           credentials="CAIRN_SOURCE_WIKI_TOKEN")  # fmt: skip
    run = source_sync(source=source, inline=True)
    assert (run.added, run.failed) == (2, 1), (run.error, run.errors)
    assert RULE in run.errors["attachment:91"]
    assert {call["headers"].get("Authorization") for call in wiki.calls} == {"Bearer pat-secret-1"}
    assert [call["path"] for call in evil.calls] == ["/media/elsewhere.txt"]
    assert "Authorization" not in evil.calls[0]["headers"]

    # However the location came to name another host, the secret is not sent there.
    Source.objects.filter(pk=source.pk).update(location=f"http://evil.test:{evil_port}/wiki/spaces/ENG")
    source.refresh_from_db()
    run = source_sync(source=source, inline=True)
    assert run.status == "failed" and "CAIRN_SOURCE_WIKI_TOKEN are not granted" in run.error, run.error
    assert [call["path"] for call in evil.calls] == ["/media/elsewhere.txt"]
    assert not any("Authorization" in call["headers"] for call in evil.calls)


def test_a_grant_is_for_one_scheme_and_port_so_a_changed_source_never_sends_it_in_clear_text(
    loopback, outbound_settings, monkeypatch, hr, dana, django_capture_on_commit_callbacks
):
    """The token was granted for https://wiki.test. dana's source there is changed to
    http://wiki.test:PORT: the same host, so the bearer token went over plain http to whatever
    listened at that port. Refused when changed; a source changed by another road fails its sync
    before anything is sent; and a redirect from the granted origin to another port of its host
    is followed without the token."""
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", True)
    outbound_settings.CAIRN_SOURCES_ALLOW_NETWORKS = [ip_network("127.0.0.0/8")]
    monkeypatch.setenv("CAIRN_SOURCE_WIKI_TOKEN", "pat-secret-1")
    elsewhere = loopback(lambda method, path, query, body: (200, TEXT.encode()))
    other_port = elsewhere.url.rsplit(":", 1)[1]

    wiki = loopback(confluence_space({"times": f"http://wiki.test:{other_port}/media/times.txt"}))  # another port
    port = wiki.url.rsplit(":", 1)[1]
    call_command("sources", "grant-secret", "CAIRN_SOURCE_WIKI_TOKEN", "--collection", "hr", "--host", "wiki.test",
                 verbosity=0)  # fmt: skip
    api = client_for(dana)
    body = {"name": "hr-wiki", "kind": "confluence", "location": "https://wiki.test/wiki/spaces/HR",
            "collection": "hr", "credentials": "CAIRN_SOURCE_WIKI_TOKEN"}  # fmt: skip
    assert api.post("/api/v1/sources", body, format="json").status_code == 201
    clear = f"http://wiki.test:{port}/wiki/spaces/HR"
    for location in (clear, "https://wiki.test:8443/wiki/spaces/HR", "http://wiki.test/wiki/spaces/HR"):
        moved = api.patch("/api/v1/sources/hr-wiki", {"location": location}, format="json")
        assert moved.status_code == 403 and moved.json()["credentials"] == [
            f"CAIRN_SOURCE_WIKI_TOKEN is granted for https://wiki.test only, not for {location.split('/wiki/')[0]}"
        ], moved.json()
    Source.objects.filter(name="hr-wiki").update(location=clear)  # changed by another road
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post("/api/v1/sources/hr-wiki/sync").status_code == 202
    (run,) = api.get("/api/v1/sources/hr-wiki").json()["runs"]
    assert run["status"] == "failed" and f"not granted to collection hr for http://wiki.test:{port}:" in run["error"]
    assert wiki.calls == []  # nothing was sent, the token least of all

    # Granted for the http origin by the operator: sent there, and not to the other port a redirect names.
    call_command("sources", "grant-secret", "CAIRN_SOURCE_WIKI_TOKEN", "--collection", "hr", "--host",
                 f"http://wiki.test:{port}", verbosity=0)  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post("/api/v1/sources/hr-wiki/sync").status_code == 202
    run = api.get("/api/v1/sources/hr-wiki").json()["runs"][0]
    assert (run["status"], run["counts"]["added"]) == ("succeeded", 2), run
    assert {call["headers"].get("Authorization") for call in wiki.calls} == {"Bearer pat-secret-1"}
    assert [call["path"] for call in elsewhere.calls] == ["/media/times.txt"]
    assert "Authorization" not in elsewhere.calls[0]["headers"]


# --- Bodies: too large, bombs, drips --------------------------------------------------------------


def test_a_huge_page_and_a_gzip_bomb_are_cut_at_the_limit_and_the_next_page_is_read(serve, outbound_settings):
    outbound_settings.CAIRN_SOURCES_ALLOW_NETWORKS = [ip_network("127.0.0.0/8")]
    outbound_settings.CAIRN_SOURCES_MAX_BYTES = MB
    site = serve({
        "/docs/sitemap.xml": lambda: sitemap(*(f"{site.url}/docs/{n}.html" for n in ("huge", "bomb", "ok"))),
        "/docs/huge.html": lambda: html(huge()),
        "/docs/bomb.html": lambda: (200, {"Content-Type": "text/html", "Content-Encoding": "gzip"}, gzip_bomb()),
        "/docs/ok.html": lambda: html(page("Ferries")),
    })  # fmt: skip
    source = website(f"{site.url}/docs/sitemap.xml")
    run = source_sync(source=source, inline=True)
    assert (run.added, run.failed) == (1, 2) and titles(source) == {"Ferries"}, run.errors
    for name in ("huge", "bomb"):
        assert f"larger than CAIRN_SOURCES_MAX_BYTES ({MB} bytes)" in run.errors[f"{site.url}/docs/{name}.html"]
    assert site.arrived["/docs/bomb.html"] - site.arrived["/docs/huge.html"] < 5  # cut, not read to the end
    assert site.arrived["/docs/ok.html"] - site.arrived["/docs/bomb.html"] < 5
    assert site.sent["/docs/huge.html"] < 50 * MB

    # What the bomb unpacks to is never held: at most the limit, however much it would make.
    tracemalloc.start()
    try:
        with pytest.raises(ConnectorError, match="CAIRN_SOURCES_MAX_BYTES"):
            connector_for(source).fetch(Item(key=f"{site.url}/docs/bomb.html", version="", name="bomb.html"), None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 * MB, peak


def test_robots_txt_a_sitemap_and_confluence_replies_are_bounded_too(serve, outbound_settings):
    outbound_settings.CAIRN_SOURCES_ALLOW_NETWORKS = [ip_network("127.0.0.0/8")]
    outbound_settings.CAIRN_SOURCES_MAX_BYTES = MB
    server = serve({
        "/robots.txt": lambda: (200, {"Content-Type": "text/plain"}, huge(b"User-agent: *\n")),
        "/big/sitemap.xml": lambda: (200, {"Content-Type": "application/xml"}, huge(b"<urlset>")),
        "/wiki/rest/api/content": lambda: (200, {"Content-Type": "application/json"}, huge(b'{"results": ["')),
    })  # fmt: skip
    robots = website(f"{server.url}/docs/index.html", name="robots")
    collection, _ = collection_get_or_create(slug="wiki-docs")
    space = source_create(operator=False, collection=collection, name="wiki", kind="confluence",
                          location=f"{server.url}/wiki/spaces/ENG")  # fmt: skip
    for source in (robots, space):
        run = source_sync(source=source, inline=True)
        assert run.status == "failed" and "CAIRN_SOURCES_MAX_BYTES" in run.error, run.error
    server.routes["/robots.txt"] = lambda: (404, {}, b"")
    run = source_sync(source=website(f"{server.url}/big/sitemap.xml", name="big-sitemap"), inline=True)
    assert run.status == "failed" and "CAIRN_SOURCES_MAX_BYTES" in run.error, run.error
    assert all(sent < 50 * MB for sent in server.sent.values()), server.sent


def test_a_slow_drip_ends_at_the_deadline_and_the_next_page_is_read(serve, outbound_settings):
    outbound_settings.CAIRN_SOURCES_ALLOW_NETWORKS = [ip_network("127.0.0.0/8")]
    outbound_settings.CAIRN_SOURCES_REQUEST_SECONDS = 1
    site = serve({
        "/docs/sitemap.xml": lambda: sitemap(*(f"{site.url}/docs/{n}.html" for n in ("drip", "headers", "ok"))),
        "/docs/drip.html": lambda: html(drip()),  # the body, a byte at a time
        "/docs/headers.html": lambda: (None, {}, drip(b"HTTP/1.0 200 OK\r\nX-Slow: ")),  # a header, likewise
        "/docs/ok.html": lambda: html(page("Ferries")),
    })  # fmt: skip
    source = website(f"{site.url}/docs/sitemap.xml")
    run = source_sync(source=source, inline=True)
    assert (run.added, run.failed) == (1, 2) and titles(source) == {"Ferries"}, run.errors
    for name in ("drip", "headers"):
        assert "took longer than CAIRN_SOURCES_REQUEST_SECONDS (1 s)" in run.errors[f"{site.url}/docs/{name}.html"]
    # each let go within the deadline and a little: the next request came soon after
    assert site.arrived["/docs/headers.html"] - site.arrived["/docs/drip.html"] < 3
    assert site.arrived["/docs/ok.html"] - site.arrived["/docs/headers.html"] < 3


def test_a_sitemap_of_slow_pages_holds_a_sync_no_longer_than_its_time_and_the_next_begins_with_the_rest(
    serve, outbound_settings
):
    """A sitemap without lastmod lists pages whose version is unknown, so every sync asks for each:
    10,000 slow ones held the workers for hours on every sync. A sync now ends at its time; the items
    it did not begin are left for the next, which takes them first, so every page is read in turn."""
    outbound_settings.CAIRN_SOURCES_ALLOW_NETWORKS = [ip_network("127.0.0.0/8")]
    outbound_settings.CAIRN_SOURCES_SYNC_SECONDS = 2
    names = [f"page{n}" for n in range(8)]

    def slow(name: str) -> tuple:
        time.sleep(0.7)
        return html(page(name.title()))

    site = serve({
        "/docs/sitemap.xml": lambda: sitemap(*(f"{site.url}/docs/{n}.html" for n in names)),
        **{f"/docs/{n}.html": functools.partial(slow, n) for n in names},
    })  # fmt: skip
    source = website(f"{site.url}/docs/sitemap.xml")
    read: list[set[str]] = []
    for _ in range(3):
        before, started = titles(source), time.monotonic()
        run = source_sync(source=source, inline=True)
        assert time.monotonic() - started < 2 + 0.7 + 1.5  # its time, one request begun before it ran out
        left = {key for key, note in run.errors.items() if "left for the next sync" in note}
        assert run.failed == len(left) > 0 and "CAIRN_SOURCES_SYNC_SECONDS (2 s)" in next(iter(run.errors.values()))
        read.append(titles(source) - before)
        assert read[-1], "each sync reads pages no sync read before"
    assert titles(source) == {n.title() for n in names}, read


# --- Memory: a crawl of many large pages ---------------------------------------------------------


def test_a_crawl_keeps_a_bounded_number_of_page_bytes_whatever_the_site_s_size(
    serve, outbound_settings, monkeypatch, capsys
):
    """Every page body of a crawl was held in its listing, then written in one go: a worker's memory
    grew with the site (100 pages of 1.9 MB: 552 MB to 2.2 GB). Here 64 pages of 128 KiB (8 MiB) against a
    1 MiB bound: the listing keeps at most the bound, and its peak is that and a page or so in
    flight, not the site; the pages it let go are fetched by their items, and all are ingested."""
    from sources.connectors import base

    outbound_settings.CAIRN_SOURCES_ALLOW_NETWORKS = [ip_network("127.0.0.0/8")]
    monkeypatch.setattr(base, "LISTING_KEEPS_BYTES", MB)
    pages, size = 64, 128 * 1024
    links = [f"p{n}.html" for n in range(pages)]  # each page leads to the next
    padding = b"<!-- " + b"harbour " * (size // 8) + b" -->"  # bytes on the wire, no text to ingest

    def pier(n: int) -> tuple:
        return html(page(f"Pier {n}", links[n + 1 : n + 2]).replace(b"</body>", padding + b"</body>"))

    site = serve({"/docs/index.html": lambda: html(page("Piers", links[:1])),
                  **{f"/docs/p{n}.html": functools.partial(pier, n) for n in range(pages)}})  # fmt: skip
    source = website(f"{site.url}/docs/index.html")
    connector_for(source).list({})  # once untraced: what is loaded on first use is no part of the peak
    tracemalloc.start()
    try:
        listing = connector_for(source).list({})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    kept = [item for item in listing.items if item.data is not None]
    assert len(listing.items) == pages + 1 and 0 < sum(len(item.data) for item in kept) <= MB
    assert peak < 3 * MB, peak  # kept bodies, links, a page or so in flight; unbounded, over 8 MiB
    site.calls.clear()
    call_command("sync", "site")
    assert f"{pages + 1} added" in capsys.readouterr().out
    asked = Counter(site.paths())
    assert all(asked[f"/docs/{name}"] == 1 + (f"{site.url}/docs/{name}" not in {i.key for i in kept})
               for name in links)  # fmt: skip
    assert len(titles(source)) == pages + 1
