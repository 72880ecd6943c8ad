"""A website: a start URL (crawled through the links of its HTML pages, within the URL prefix of
the start page's folder) or a sitemap.xml. robots.txt is honoured, requests are spaced by
CAIRN_SOURCES_CRAWL_DELAY (or the site's Crawl-delay, if longer), and every page already known is
asked for conditionally (If-None-Match / If-Modified-Since): a 304 reads no body, and the page's
links are the ones kept from when it last changed. A crawl keeps the bodies it read for their items
up to LISTING_KEEPS_BYTES in all; past that, a page's item fetches it again (the memory a crawl
holds is bounded by that and one page, whatever the number of pages)."""

from __future__ import annotations

import hashlib
import time
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import PurePosixPath
from urllib.parse import urldefrag, urljoin, urlparse
from urllib.robotparser import RobotFileParser

from django.conf import settings

from sources.connectors import base
from sources.connectors.base import ConnectorError, Fetched, Item, Known, Listing, reader_name
from sources.outbound import OutboundClient, Outside, Reply

USER_AGENT = "Cairn"
GONE = (404, 410)  # the page is not there: not an error, and not listed
# What a response's type says its reader is (a URL's own suffix is used for the rest).
SUFFIX_OF_TYPE = {"text/html": ".html", "application/xhtml+xml": ".html", "text/plain": ".txt",
                  "text/markdown": ".md", "application/pdf": ".pdf"}  # fmt: skip


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hrefs: list[str] = []
        self.base: str | None = None

    def handle_starttag(self, tag, attrs):
        values = dict(attrs)
        if tag == "a" and values.get("href"):
            self.hrefs.append(values["href"])
        elif tag == "base" and values.get("href") and self.base is None:
            self.base = values["href"]


def page_links(url: str, body: bytes) -> list[str]:
    parser = _Links()
    parser.feed(body.decode("utf-8", "replace"))
    base = urljoin(url, parser.base) if parser.base else url
    return [urldefrag(urljoin(base, href.strip()))[0] for href in parser.hrefs]


def _name_for(url: str, content_type: str) -> str | None:
    path = PurePosixPath(urlparse(url).path or "/")
    stem = path.stem if path.name else "index"
    suffix = SUFFIX_OF_TYPE.get(content_type.split(";")[0].strip().lower())
    return reader_name(f"{stem}{suffix}") if suffix else reader_name(path.name)


class WebsiteConnector:
    def __init__(self, source) -> None:
        self.start = source.location
        self.is_sitemap = urlparse(self.start).path.endswith(".xml")
        path = urlparse(self.start).path
        self.prefix = urljoin(self.start, path[: path.rfind("/") + 1] or "/")
        self.delay = settings.CAIRN_SOURCES_CRAWL_DELAY
        self.client = OutboundClient(headers={"User-Agent": USER_AGENT})
        self.robots: RobotFileParser | None = None
        self._last_request = 0.0
        self.requests = 0  # for the benchmark and the tests: requests sent, and of them conditional
        self.conditional = 0
        self.kept = 0  # bytes of bodies kept for items (at most base.LISTING_KEEPS_BYTES)

    def _get(self, url: str, known: Known | None = None, *, page: bool = True) -> Reply:
        """GET `url` (a page of the site unless `page` is False: a redirect out of it is not followed)."""
        wait = self._last_request + self.delay - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        headers = {}
        if known is not None and known.etag:
            headers["If-None-Match"] = known.etag
        if known is not None and known.last_modified:
            headers["If-Modified-Since"] = known.last_modified
        self.requests += 1
        self.conditional += bool(headers)
        try:
            return self.client.get(url, headers=headers, follow=self._in_site if page else None)
        finally:
            self._last_request = time.monotonic()

    def _read_robots(self) -> None:
        robots_url = urljoin(self.start, "/robots.txt")
        response = self._get(robots_url, page=False)
        self.robots = RobotFileParser(robots_url)
        if response.status_code >= 500:
            raise ConnectorError(f"{robots_url}: HTTP {response.status_code}")
        # 4xx: no robots.txt, everything allowed (as urllib.robotparser reads it)
        lines = response.content.decode("utf-8", "replace").splitlines() if response.status_code == 200 else []
        self.robots.parse(lines)
        if (crawl_delay := self.robots.crawl_delay(USER_AGENT)) is not None:
            self.delay = max(self.delay, float(crawl_delay))

    def _in_site(self, url: str) -> bool:
        return url.startswith(self.prefix)

    def _allowed(self, url: str) -> bool:
        return self._in_site(url) and self.robots is not None and self.robots.can_fetch(USER_AGENT, url)

    def list(self, known: dict[str, Known]) -> Listing:
        self._read_robots()
        if not self._allowed(self.start) and not self.is_sitemap:
            raise ConnectorError(f"{self.start}: robots.txt does not let {USER_AGENT} read it")
        return self._sitemap(known) if self.is_sitemap else self._crawl(known)

    def _crawl(self, known: dict[str, Known]) -> Listing:
        items, problems = [], []
        queue, seen = [self.start], {self.start}
        deadline = time.monotonic() + settings.CAIRN_SOURCES_SYNC_SECONDS
        while queue:
            if len(items) >= settings.CAIRN_SOURCES_MAX_PAGES:
                problems.append(f"stopped at CAIRN_SOURCES_MAX_PAGES ({settings.CAIRN_SOURCES_MAX_PAGES}) pages")
                break
            if time.monotonic() > deadline:  # a site of slow pages: incomplete, so nothing is retracted
                problems.append(f"stopped at CAIRN_SOURCES_SYNC_SECONDS ({settings.CAIRN_SOURCES_SYNC_SECONDS} s)")
                break
            url = queue.pop(0)
            try:
                item, links = self._page(url, known.get(url))
            except ConnectorError as exc:
                if url == self.start:
                    raise  # the site itself cannot be read
                problems.append(str(exc))
                continue
            if item is not None:
                items.append(item)
            for link in links:
                if link not in seen and self._allowed(link):
                    seen.add(link)
                    queue.append(link)
        return Listing(items=items, complete=not problems, problems=problems)

    def _page(self, url: str, known: Known | None) -> tuple[Item | None, list[str]]:
        """The item at `url` (None when gone or unreadable as a document) and its links."""
        try:
            response = self._get(url, known)
        except Outside:
            return None, []  # redirected out of the site
        if response.status_code == 304 and known is not None:
            state = dict(known.state)
            return Item(key=url, version=known.version, name=state.get("name", ""), uri=url, state=state), state.get(
                "links", []
            )
        if response.status_code in GONE:
            return None, []
        if response.status_code != 200:
            raise ConnectorError(f"{url}: HTTP {response.status_code}")
        final, body = response.url, response.content
        content_type = response.headers.get("Content-Type", "")
        name = _name_for(url, content_type)
        links = page_links(final, body) if name and name.endswith(".html") else []
        state = {
            "etag": response.headers.get("ETag", ""),
            "last_modified": response.headers.get("Last-Modified", ""),
            "links": links,
            "name": name or "",
        }
        if name is None:
            return None, links
        version = state["etag"] or state["last_modified"] or hashlib.sha256(body).hexdigest()
        keep = self.kept + len(body) <= base.LISTING_KEEPS_BYTES
        self.kept += len(body) if keep else 0
        return Item(key=url, version=version, name=name, uri=url, data=body if keep else None, state=state), links

    def _sitemap(self, known: dict[str, Known]) -> Listing:
        response = self._get(self.start, page=False)
        if response.status_code != 200:
            raise ConnectorError(f"{self.start}: HTTP {response.status_code}")
        try:
            root = ET.fromstring(response.content)
        except ET.ParseError as exc:
            raise ConnectorError(f"{self.start}: not a sitemap ({exc})") from exc
        namespace = root.tag.split("}")[0] + "}" if root.tag.startswith("{") else ""
        items = []
        for entry in root.iter(f"{namespace}url"):
            url = (entry.findtext(f"{namespace}loc") or "").strip()
            if not url or not self._allowed(url):
                continue
            name = _name_for(url, "text/html" if not PurePosixPath(urlparse(url).path).suffix else "")
            if name is None:
                continue
            # lastmod, when the site gives it, spares a request; without it the version is unknown
            # (""), and the page is asked for conditionally (fetch): a 304 costs no body.
            lastmod = (entry.findtext(f"{namespace}lastmod") or "").strip()
            items.append(Item(key=url, version=lastmod, name=name, uri=url))
        return Listing(items=items, complete=True)

    def fetch(self, item: Item, known: Known | None) -> Fetched:
        response = self._get(item.key, known)
        if response.status_code == 304:
            return Fetched(None)
        if response.status_code != 200:
            raise ConnectorError(f"{item.key}: HTTP {response.status_code}")
        state = {"etag": response.headers.get("ETag", ""), "last_modified": response.headers.get("Last-Modified", "")}
        return Fetched(response.content, state=state)
