"""The one interface every source kind implements: list what is there, each item with a version
stamp, and fetch one item's bytes. A new kind is one module beside this one, named in KINDS
(sources/connectors/__init__.py)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Protocol
from urllib.parse import urlsplit

from readers.formats import FORMATS
from sources.origins import origin_of, origin_text

# Formats read as plain text under a .txt name (their markup is light enough to read as prose).
READ_AS_TEXT = {".adoc", ".asciidoc", ".text"}
# A .jsonl file holds many documents; a source item is one document.
_NOT_ONE_DOCUMENT = {".jsonl"}


class ConnectorError(Exception):
    """The source cannot be read (down, unreachable, refused): the message says why."""


# Most bytes of bodies one listing keeps for its items (Item.data). A crawl reads every page for its
# links; keeping each body spares the item task a second request, but a site of 10,000 pages of
# 50 MiB would be held whole. Past this, a body is let go once its links are read, and its item
# task fetches it again.
LISTING_KEEPS_BYTES = 32 * 1024 * 1024


@dataclass
class Item:
    key: str  # stable within the source: a relative path, a URL, "page:123"
    version: str  # changes whenever the content may have: size-mtime, blob id, ETag, version number
    name: str  # the file name its reader goes by (its suffix picks the reader)
    uri: str = ""  # the document's source: where a reader finds the original
    title: str = ""  # a title the source gives (a Confluence page's), else the reader's
    data: bytes | None = None  # bytes the listing already read (a crawled page), else fetched later
    state: dict = field(default_factory=dict)  # kept once ingested: etag, last_modified, links
    restricted: bool = False  # readable only by some: never indexed into the collection


@dataclass
class Listing:
    items: list[Item]
    complete: bool  # False: cut short (errors, a page limit): nothing may be retracted on it
    problems: list[str] = field(default_factory=list)  # why it is incomplete


@dataclass
class Fetched:
    data: bytes | None  # None: not modified since the validators in `known` (no body was read)
    state: dict = field(default_factory=dict)


@dataclass
class Known:
    """What the last sync kept of an item: its version and the connector's state."""

    version: str
    etag: str = ""
    last_modified: str = ""
    state: dict = field(default_factory=dict)


class Connector(Protocol):
    def list(self, known: dict[str, Known]) -> Listing: ...

    def fetch(self, item: Item, known: Known | None) -> Fetched: ...


def reader_name(name: str) -> str | None:
    """The name the format readers should see for a file called `name`, or None when no reader
    reads it (images, archives): such files are not items."""
    path = PurePosixPath(name)
    suffix = path.suffix.lower()
    if suffix in READ_AS_TEXT:
        return str(path.with_suffix(".txt"))
    if suffix in FORMATS and suffix not in _NOT_ONE_DOCUMENT:
        return name
    return None


def host_of(url: str) -> str:
    """The host a URL (or git's user@host:path) names, lower case, without port or brackets; "" for none."""
    if "://" not in url and (match := re.match(r"^[^@/\s]+@([^:/\s]+):", url)):
        return match[1].lower()
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def source_secret(source, url: str) -> str:
    """The secret `source`'s credentials name, for a request to `url`: "" when it names none.
    Raise ConnectorError (naming the reference, never the secret) unless an operator granted that
    secret to the source's collection for `url`'s scheme, host and port (manage.py sources
    grant-secret): a source pointed elsewhere, by whoever changed it, never carries the secret there,
    nor to its own host in clear text (http where https was granted) or at another port."""
    from sources.models import SecretGrant

    reference = source.credentials
    if not reference:
        return ""
    origin = origin_of(url)
    granted = origin is not None and SecretGrant.objects.filter(
        name=reference, collection_id=source.collection_id, scheme=origin[0], host=origin[1], port=origin[2]
    )
    if not granted or not granted.exists():
        where = origin_text(*origin) if origin else repr(url)
        raise ConnectorError(
            f"the credentials {reference} are not granted to collection {source.collection.slug} for {where}: "
            "an operator grants them (manage.py sources grant-secret)"
        )
    return _secret_read(reference)


def _secret_read(reference: str) -> str:
    """The secret a credentials reference names: a file's content when it is a path, else the
    environment variable's value. Raise ConnectorError naming the reference (never the secret)."""
    if "/" in reference:
        try:
            return Path(reference).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConnectorError(f"cannot read the credentials file {reference}: {exc.strerror or exc}") from exc
    value = os.environ.get(reference, "").strip()
    if not value:
        raise ConnectorError(f"the credentials variable {reference} is not set")
    return value
