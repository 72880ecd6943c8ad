"""The one rule for every request a source makes (website pages, robots.txt, sitemaps, Confluence,
git over http(s)): the host is resolved once, every address it resolves to must be one a source
may reach, and the request goes to the address that was checked (no second lookup a DNS answer
could change in between). Loopback, link-local, private, multicast, reserved and unspecified
addresses, IPv4-mapped and IPv4-embedding IPv6 forms included, are refused unless an operator
allows their network (CAIRN_SOURCES_ALLOW_NETWORKS): a curator's source cannot reach the
server's own ports, a cloud metadata service or the intranet behind it."""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
import zlib
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy

import httpx
from django.conf import settings

from sources.connectors.base import ConnectorError
from sources.origins import origin_of


class OutboundRefused(ConnectorError):
    """A request the outbound rule refuses, before anything is sent."""


def _forbidden(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour or (address.teredo or (None, None))[1]
        if embedded is None and address in ipaddress.ip_network("64:ff9b::/96"):  # NAT64
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None and _forbidden(embedded):
            return True
    return (
        address.is_loopback
        or address.is_link_local
        or address.is_private
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or not address.is_global
    )


def address_allowed(address: str) -> bool:
    """May a source connect to `address` (an IP address as text)?"""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if any(ip in network for network in settings.CAIRN_SOURCES_ALLOW_NETWORKS):
        return True
    return not _forbidden(ip)


def checked_address(host: str, port: int) -> str:
    """The address to connect to for `host`:`port`: the first the host resolves to, once every
    address it resolves to passed the rule (one bad answer refuses the host: a name that resolves
    to both a public and an internal address is not a name to trust). Raise OutboundRefused,
    naming the rule and the host, never what is there."""
    name = host.strip("[]")
    try:
        found = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ConnectorError(f"{host}: the name does not resolve") from exc
    addresses = list(dict.fromkeys(info[4][0] for info in found))
    if not addresses:
        raise ConnectorError(f"{host}: the name does not resolve")
    for address in addresses:
        if not address_allowed(address):
            raise OutboundRefused(
                f"{host}: refused: it is a loopback, private, link-local or otherwise internal address, which a "
                "source may reach only in networks an operator allows (CAIRN_SOURCES_ALLOW_NETWORKS)"
            )
    return addresses[0]


MAX_REDIRECTS = 5


class Outside(OutboundRefused):
    """A redirect to a URL the caller does not read (out of a website source's prefix): not followed."""


@dataclass
class Reply:
    url: str  # the URL that answered, after redirects
    status_code: int
    headers: httpx.Headers
    content: bytes = b""  # read for a 2xx only


class _Deadline:
    """The whole request's time. The read timeout is per read, so a server dripping a byte now and
    then holds a read forever; past the deadline every connection the request opened is shut down,
    which ends the read under way, whatever phase it is in (headers, body, a TLS handshake)."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.ends = seconds, time.monotonic() + seconds
        self.passed = threading.Event()
        self.sockets: list[socket.socket] = []
        self.timer = threading.Timer(seconds, self.cut)
        self.timer.daemon = True

    def trace(self, event: str, info: dict) -> None:
        """httpcore's trace extension: keep each new connection's socket (a duplicate: TLS takes the
        original over)."""
        if event == "connection.connect_tcp.complete":
            self.sockets.append(info["return_value"].get_extra_info("socket").dup())
            if self.passed.is_set():
                self.cut()

    def cut(self) -> None:
        self.passed.set()
        for sock in list(self.sockets):
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def over(self) -> bool:
        return self.passed.is_set() or time.monotonic() >= self.ends

    def error(self, where: str) -> ConnectorError:
        return ConnectorError(f"{where}: took longer than CAIRN_SOURCES_REQUEST_SECONDS ({self.seconds:g} s)")

    def __enter__(self) -> _Deadline:
        self.timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self.timer.cancel()
        self.timer.join()  # no shutdown may race the closing below
        for sock in self.sockets:
            sock.close()


class OutboundClient:
    """The HTTP client every connector request goes through. Before anything is sent, each hop (the
    URL asked for, then each redirect, at most MAX_REDIRECTS) must be http(s) and resolve to
    addresses the rule allows, and each redirect must pass `follow` when the caller gives one. The
    request goes to the address checked, the name in its Host header and, for https, in SNI and
    the certificate check. Bodies are read streamed and stopped past CAIRN_SOURCES_MAX_BYTES
    (decoded bytes: a small gzip body may unpack to gigabytes), and the whole request, body
    included, ends by CAIRN_SOURCES_REQUEST_SECONDS. `secret_headers` (an Authorization) go only to
    hops at `secret_origin` (scheme, host, port: a redirect to http, or to another port, of the same
    host never carries them). Proxies from the environment are not used: the address
    checked is the one connected to."""

    def __init__(
        self,
        *,
        headers: dict | None = None,
        secret_headers: dict | None = None,
        secret_origin: tuple[str, str, int] | None = None,
    ) -> None:
        self.secret_headers, self.secret_origin = secret_headers or {}, secret_origin
        # A new connection per request (each to an address just checked, with its own name for
        # TLS), and no cookies kept: one host's would go to every host that shares its address.
        self.client = httpx.Client(
            headers={"Accept-Encoding": "gzip", **(headers or {})},
            timeout=settings.CAIRN_SOURCES_TIMEOUT,
            cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])),
            transport=httpx.HTTPTransport(limits=httpx.Limits(max_keepalive_connections=0)),
        )

    def get(self, url: str, *, params: dict | None = None, headers: dict | None = None,
            follow: Callable[[str], bool] | None = None) -> Reply:  # fmt: skip
        """GET `url`, following redirects. Raise ConnectorError (OutboundRefused for a hop the rule
        refuses, Outside for one `follow` refuses) naming why."""
        try:
            hop = httpx.URL(url).copy_merge_params(params) if params else httpx.URL(url)
        except httpx.InvalidURL as exc:
            raise ConnectorError(f"{url}: {exc}") from exc
        with _Deadline(settings.CAIRN_SOURCES_REQUEST_SECONDS) as deadline:
            for redirects in range(MAX_REDIRECTS + 1):
                where = url if not redirects else f"{url} (redirected to {hop})"
                try:
                    # `follow` judges redirects: what the caller asks for it has judged itself
                    with self._send(hop, where, headers or {}, follow if redirects else None, deadline) as response:
                        if not response.has_redirect_location:
                            content = self._body(response, where, deadline) if response.is_success else b""
                            return Reply(str(hop), response.status_code, response.headers, content)
                        hop = hop.join(response.headers["Location"])
                except httpx.HTTPError as exc:
                    if deadline.over():
                        raise deadline.error(where) from exc
                    raise ConnectorError(f"{where}: {exc.__class__.__name__}: {exc}") from exc
                except httpx.InvalidURL as exc:
                    raise ConnectorError(f"{where}: redirected to an invalid URL ({exc})") from exc
                if deadline.over():
                    raise deadline.error(where)
        raise ConnectorError(f"{url}: more than {MAX_REDIRECTS} redirects")

    def _send(self, hop: httpx.URL, where: str, headers: dict, follow, deadline: _Deadline):
        if hop.scheme not in ("http", "https"):
            raise OutboundRefused(f"{where}: only http and https are followed")
        name = hop.raw_host.decode("ascii")
        try:
            address = checked_address(name, hop.port or (443 if hop.scheme == "https" else 80))
        except ConnectorError as exc:
            raise type(exc)(f"{where}: {exc}") from exc
        if follow and not follow(str(hop)):
            raise Outside(f"{where}: outside what the source reads")
        headers = {**headers, "Host": hop.netloc.decode("ascii")}
        if self.secret_headers and origin_of(str(hop)) == self.secret_origin:
            headers |= self.secret_headers
        extensions = {"trace": deadline.trace} | ({"sni_hostname": name} if hop.scheme == "https" else {})
        return self.client.stream("GET", hop.copy_with(host=address), headers=headers, extensions=extensions)

    @staticmethod
    def _body(response: httpx.Response, where: str, deadline: _Deadline) -> bytes:
        """The body, decoded, read until it ends, passes CAIRN_SOURCES_MAX_BYTES or outlives the deadline."""
        limit = settings.CAIRN_SOURCES_MAX_BYTES
        encoding = response.headers.get("Content-Encoding", "").strip().lower() or "identity"
        if encoding not in ("identity", "gzip", "x-gzip"):
            raise ConnectorError(f"{where}: Content-Encoding {encoding}, which was not asked for")
        gzip = zlib.decompressobj(zlib.MAX_WBITS | 16) if encoding != "identity" else None
        body = bytearray()
        try:
            for chunk in response.iter_raw():
                if deadline.over():
                    raise deadline.error(where)
                while chunk:
                    if gzip is None:
                        piece, chunk = chunk, b""
                    else:  # at most one byte past the limit at a time: a bomb is never unpacked whole
                        piece, chunk = gzip.decompress(chunk, limit - len(body) + 1), gzip.unconsumed_tail
                    body += piece
                    if len(body) > limit:
                        raise ConnectorError(f"{where}: larger than CAIRN_SOURCES_MAX_BYTES ({limit} bytes)")
        except zlib.error as exc:
            raise ConnectorError(f"{where}: the gzip body is corrupt ({exc})") from exc
        if deadline.over():  # cut short by the deadline, a body without a length looks complete
            raise deadline.error(where)
        return bytes(body)
