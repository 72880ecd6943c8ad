"""Who the client is: the one address that sign-in lockouts (django-axes), API rate limits and log
lines count by.

Behind CAIRN_PROXY_COUNT proxies, each of which appends the address it received the request from
to X-Forwarded-For (deploy/nginx.conf replaces the header with the client's address, which is the
same thing for one proxy), the client is the entry the outermost of them wrote: the
CAIRN_PROXY_COUNT-th from the right; anything left of it is what the client itself sent. The header
is believed only when the request comes straight from a proxy Cairn trusts
(CAIRN_FORWARDED_ALLOW_IPS, the list gunicorn believes forwarded headers from too): anyone else
who can reach the server directly would otherwise pick a fresh address for every guess, or lock
out someone else's. From anyone else the socket's peer address is the client."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from functools import lru_cache

from django.conf import settings


@lru_cache(maxsize=16)
def _networks(specs: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] | None:
    """The networks `specs` names (None: "*", any address). Checked once at start by the settings."""
    if "*" in specs:
        return None
    return tuple(ipaddress.ip_network(spec, strict=False) for spec in specs)


def address_in(address: str, specs: Iterable[str]) -> bool:
    """Whether `address` is one of `specs` (addresses, networks, or "*" for any)."""
    networks = _networks(tuple(specs))
    try:
        peer = ipaddress.ip_address(address)
    except ValueError:
        return False
    return networks is None or any(peer in network for network in networks)


def client_address(request) -> str:
    """The client's address: the socket's peer, or, from a trusted proxy, the one it forwarded."""
    peer = request.META.get("REMOTE_ADDR", "")
    count = settings.CAIRN_PROXY_COUNT
    if not count or not address_in(peer, settings.CAIRN_FORWARDED_ALLOW_IPS):
        return peer
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    if not hops:
        return peer  # the proxy's host itself (a health probe), not a request it forwarded
    forwarded = hops[-min(count, len(hops))]
    try:
        return str(ipaddress.ip_address(forwarded))
    except ValueError:
        return peer  # not an address: the proxy is misconfigured, and the client cannot choose its own


def untrusted_forwarded_proto_dropped(get_response):
    """Middleware, first in line: X-Forwarded-Proto is believed (SECURE_PROXY_SSL_HEADER) only from
    CAIRN_FORWARDED_ALLOW_IPS, as X-Forwarded-For is. From anyone else it is dropped, so a client
    that reaches the server directly cannot claim https (secure cookies, no HTTPS redirect)."""

    def middleware(request):
        if not address_in(request.META.get("REMOTE_ADDR", ""), settings.CAIRN_FORWARDED_ALLOW_IPS):
            request.META.pop("HTTP_X_FORWARDED_PROTO", None)
        return get_response(request)

    return middleware
