"""Where a request goes, as a secret is granted for it: a scheme, a host and a port (an origin).
Plain functions over URLs, imported by the models and the connectors alike."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# Each scheme's port when a URL names none.
PORTS = {"http": 80, "https": 443, "ssh": 22, "git": 9418}


def origin_of(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) a URL (or git's user@host:path, ssh) connects to: lower case, the
    scheme's port when none is given; None when it names no host, a scheme Cairn does not use or a
    port that is no number. A secret is granted for exactly one such triple."""
    if "://" not in url and (match := re.match(r"^[^@/\s]+@([^:/\s]+):", url)):
        return "ssh", match[1].lower(), PORTS["ssh"]
    try:
        parts = urlsplit(url)
        scheme, host, port = parts.scheme.lower(), (parts.hostname or "").lower(), parts.port
    except ValueError:
        return None
    if not host or scheme not in PORTS:
        return None
    return scheme, host, port or PORTS[scheme]


def origin_text(scheme: str, host: str, port: int) -> str:
    """An origin as it is written: the port only when it is not the scheme's own."""
    named = f"[{host}]" if ":" in host else host
    return f"{scheme}://{named}" + ("" if PORTS.get(scheme) == port else f":{port}")
