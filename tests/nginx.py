"""What the shipped reverse proxy (deploy/nginx.conf) makes of a client's request, read from the file
itself, so that tests follow the configuration people install: the headers it sets replace the
ones the client sent, and one it sets to "" is dropped."""

from __future__ import annotations

import re
from pathlib import Path

NGINX_CONF = Path(__file__).resolve().parent.parent / "deploy" / "nginx.conf"
NGINX_ADDRESS = "127.0.0.1"  # nginx on the web host itself, as deploy/nginx.conf's upstream has it
_SET = re.compile(r"^\s*proxy_set_header\s+(\S+)\s+(\"[^\"]*\"|\S+)\s*;", re.MULTILINE)


def proxy_headers() -> dict[str, str]:
    """The headers deploy/nginx.conf sets on what it forwards, by name, quotes removed."""
    return {name: value.strip('"') for name, value in _SET.findall(NGINX_CONF.read_text())}


def forwarded(client: str, sent: dict[str, str] | None = None, *, scheme: str = "https") -> dict[str, str]:
    """The headers that reach Cairn when `client` sends `sent` (name: value) through the proxy."""
    headers = {name.lower(): value for name, value in (sent or {}).items()}
    for name, value in proxy_headers().items():
        if name.lower() in ("host", "connection"):
            continue  # the HTTP client's own business
        headers.pop(name.lower(), None)
        value = value.replace("$remote_addr", client).replace("$scheme", scheme)
        if value:
            headers[name.lower()] = value
    return headers


def forwarded_meta(client: str, sent: dict[str, str] | None = None) -> dict[str, str]:
    """`forwarded` as Django's test client takes it: HTTP_* keys, nginx the peer."""
    meta = {"HTTP_" + name.upper().replace("-", "_"): value for name, value in forwarded(client, sent).items()}
    return {**meta, "REMOTE_ADDR": NGINX_ADDRESS}
