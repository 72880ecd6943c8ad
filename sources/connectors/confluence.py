"""A Confluence space, Cloud or Data Center, through its REST API: the space's pages with their
version numbers and read restrictions, each changed page's storage-format body (read as HTML,
fetched by its item, so a listing holds no bodies), and each page's attachments (read by the
format readers). The location is the space's URL
(https://example.atlassian.net/wiki/spaces/ENG, https://wiki.example.com/display/ENG).

A page with read restrictions, its own or an ancestor's, is readable by only some people; Cairn
would show it to every reader of the collection, so it is never indexed: it is listed as
restricted and reported, until Cairn can mirror Confluence permissions."""

from __future__ import annotations

import base64
import html
import json
import re
from urllib.parse import parse_qs, urlparse

from sources.connectors.base import ConnectorError, Fetched, Item, Known, Listing, reader_name, source_secret
from sources.origins import origin_of
from sources.outbound import OutboundClient, Reply

PAGE_SIZE = 50
# The listing reads no page's body: a space's bodies held at once grow a worker's memory with the
# space, and an unchanged page's body is never needed. A changed page's item fetches its own.
RESTRICTIONS = "restrictions.read.restrictions.user,restrictions.read.restrictions.group"
EXPAND = f"version,ancestors,{RESTRICTIONS}"
_SPACE = re.compile(r"^(?P<base>.*?)/(?:spaces|display)/(?P<space>[^/?#]+)")


def space_of(location: str) -> tuple[str, str]:
    """(REST base URL, space key) of a space URL; ValueError when it names no space."""
    parsed = urlparse(location)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError("not an http(s) URL")
    if space := parse_qs(parsed.query).get("spaceKey"):
        return f"{parsed.scheme}://{parsed.netloc}{parsed.path.split('/rest/')[0].rstrip('/')}", space[0]
    if match := _SPACE.match(location):
        return match["base"].rstrip("/"), match["space"]
    raise ValueError("names no space: give the space's URL (…/spaces/KEY or …/display/KEY)")


def _restricted(content: dict) -> bool:
    read = (content.get("restrictions") or {}).get("read", {}).get("restrictions", {})
    return bool(read.get("user", {}).get("results") or read.get("group", {}).get("results"))


class ConfluenceConnector:
    def __init__(self, source) -> None:
        try:
            self.base, self.space = space_of(source.location)
        except ValueError as exc:
            raise ConnectorError(f"{source.location}: {exc}") from exc
        secret = source_secret(source, self.base)
        authorization = {}
        if ":" in secret:  # Cloud: email:api-token, HTTP basic
            authorization["Authorization"] = "Basic " + base64.b64encode(secret.encode()).decode()
        elif secret:  # Data Center: a personal access token
            authorization["Authorization"] = f"Bearer {secret}"
        # The secret goes to the space's origin alone (its scheme, host and port), never to where it
        # redirects (an attachment's download often goes to a media host, whose link carries its own token).
        self.client = OutboundClient(
            headers={"Accept": "application/json"}, secret_headers=authorization, secret_origin=origin_of(self.base)
        )

    def _get(self, url: str, **params) -> Reply:
        response = self.client.get(url, params=params or None)
        if response.status_code != 200:
            raise ConnectorError(f"{url}: HTTP {response.status_code}")
        return response

    def _pages(self, path: str, **params):
        """Every result of a paged listing, following _links.next (start + limit)."""
        url, query = f"{self.base}{path}", {**params, "start": 0, "limit": PAGE_SIZE}
        while True:
            try:
                body = json.loads(self._get(url, **query).content)
            except ValueError as exc:
                raise ConnectorError(f"{url}: the reply is not JSON") from exc
            yield from body.get("results", [])
            following = (body.get("_links") or {}).get("next")
            if not following or not body.get("results"):
                return
            url, query = f"{self.base}{following}", {}

    def list(self, known: dict[str, Known]) -> Listing:
        pages = list(self._pages("/rest/api/content", spaceKey=self.space, type="page", expand=EXPAND))
        restricted = {page["id"] for page in pages if _restricted(page)}
        items = []
        for page in pages:
            hidden = page["id"] in restricted or any(a.get("id") in restricted for a in page.get("ancestors", []))
            webui = (page.get("_links") or {}).get("webui", f"/pages/viewpage.action?pageId={page['id']}")
            items.append(Item(
                key=f"page:{page['id']}", version=str(page["version"]["number"]), name=f"{page['id']}.html",
                uri=f"{self.base}{webui}", title=page.get("title", ""), restricted=hidden,
                state={"page": page["id"]},
            ))  # fmt: skip
            if hidden:
                continue
            for attachment in self._pages(f"/rest/api/content/{page['id']}/child/attachment", expand="version"):
                if (name := reader_name(attachment.get("title", ""))) is None:
                    continue
                links = attachment.get("_links") or {}
                items.append(Item(
                    key=f"attachment:{attachment['id']}", version=str(attachment["version"]["number"]), name=name,
                    uri=f"{self.base}{links.get('webui', links.get('download', ''))}",
                    state={"download": links.get("download", "")},
                ))  # fmt: skip
        return Listing(items=items, complete=True)

    def fetch(self, item: Item, known: Known | None) -> Fetched:
        if page_id := item.state.get("page"):
            return Fetched(self._page(page_id))
        download = item.state.get("download")
        if not download:
            raise ConnectorError(f"{item.key}: no download link")
        return Fetched(self._get(f"{self.base}{download}").content)

    def _page(self, page_id: str) -> bytes:
        """The page as an HTML document (its title over its storage-format body). One restricted since
        the listing is not read (its ancestors' restrictions are the next listing's to see)."""
        url = f"{self.base}/rest/api/content/{page_id}"
        try:
            page = json.loads(self._get(url, expand=f"version,body.storage,{RESTRICTIONS}").content)
        except ValueError as exc:
            raise ConnectorError(f"{url}: the reply is not JSON") from exc
        if _restricted(page):
            raise ConnectorError(f"page:{page_id}: restricted since it was listed, so not indexed")
        title = html.escape(page.get("title", ""))
        body = (page.get("body") or {}).get("storage", {}).get("value", "")
        return f"<html><head><title>{title}</title></head><body><h1>{title}</h1>{body}</body></html>".encode()
