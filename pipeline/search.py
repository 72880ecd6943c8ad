"""External knowledge for the corrective step (CRAG): a `SearchProvider` behind one setting.

Providers (CAIRN_SEARCH_PROVIDER):
- `none` (default): no external source; AMBIGUOUS / INCORRECT retrievals rely on the corpus alone.
- `searxng`: a SearxNG instance's JSON API (CAIRN_SEARCH_URL is its base URL; the instance must
  allow `format=json`).
- `http-json`: any intranet search endpoint that answers JSON: CAIRN_SEARCH_URL with a `{query}`
  placeholder (or `q` is added), CAIRN_SEARCH_AUTH_HEADER ("Name: value"), and
  CAIRN_SEARCH_FIELDS mapping Cairn's names to the endpoint's ("results=hits,title=name,url=link,text=snippet").

Every call has a timeout (CAIRN_SEARCH_TIMEOUT) and a result cap (CAIRN_SEARCH_MAX_RESULTS); a
failure is reported, never raised into the answer. Results from CAIRN_SEARCH_TRUSTED_DOMAINS come
first. What comes back is verified like any chunk before it can be used, is labelled external in
the response, and never enters the corpus or the reputation counters by this path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import quote_plus, urlparse

import httpx
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from pipeline.extractive import STOPWORDS


@dataclass(frozen=True)
class ExternalResult:
    title: str
    url: str
    text: str


class SearchError(Exception):
    """The external source failed (unreachable, timed out, bad reply): the answer goes on without it."""


class SearchProvider(Protocol):
    name: str

    def search(self, query: str, *, limit: int) -> list[ExternalResult]: ...


class NoSearch:
    name = "none"

    def search(self, query: str, *, limit: int) -> list[ExternalResult]:
        return []


class _HttpSearch:
    name = "http"

    def __init__(self, url: str, *, timeout: float, headers: dict[str, str] | None = None) -> None:
        if not url:
            raise ImproperlyConfigured(f"CAIRN_SEARCH_PROVIDER={self.name} needs CAIRN_SEARCH_URL.")
        self.url = url
        self.timeout = timeout
        self.headers = headers or {}

    def _get(self, url: str, params: dict | None = None):
        try:
            response = httpx.get(url, params=params, headers=self.headers, timeout=self.timeout)
            response.raise_for_status()
            return response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise SearchError(f"{self.name} search failed: {exc}") from exc


class SearxngSearch(_HttpSearch):
    name = "searxng"

    def search(self, query: str, *, limit: int) -> list[ExternalResult]:
        payload = self._get(self.url.rstrip("/") + "/search", {"q": query, "format": "json"})
        return [
            ExternalResult(str(r.get("title", "")), str(r.get("url", "")), str(r.get("content", "")))
            for r in payload.get("results", [])
            if r.get("content")
        ][:limit]


class HttpJsonSearch(_HttpSearch):
    name = "http-json"

    def __init__(self, url: str, *, timeout: float, headers: dict[str, str], fields: dict[str, str]) -> None:
        super().__init__(url, timeout=timeout, headers=headers)
        self.fields = {"results": "results", "title": "title", "url": "url", "text": "text"} | fields

    def search(self, query: str, *, limit: int) -> list[ExternalResult]:
        if "{query}" in self.url:
            payload = self._get(self.url.replace("{query}", quote_plus(query)))
        else:
            payload = self._get(self.url, {"q": query})
        results = _dig(payload, self.fields["results"])
        if not isinstance(results, list):
            raise SearchError(f"http-json search: no list at {self.fields['results']!r} in the reply")
        found = []
        for item in results:
            text = _dig(item, self.fields["text"])
            if text:
                found.append(
                    ExternalResult(
                        str(_dig(item, self.fields["title"]) or ""),
                        str(_dig(item, self.fields["url"]) or ""),
                        str(text),
                    )
                )
        return found[:limit]


def _dig(data, path: str):
    """Follow a dotted path ("data.hits") through nested dicts."""
    for key in path.split(".") if path else []:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def trusted_first(results: list[ExternalResult], trusted: list[str]) -> list[ExternalResult]:
    """Stable order with results from a trusted domain (or its subdomains) first."""

    def is_trusted(result: ExternalResult) -> bool:
        host = (urlparse(result.url).hostname or "").lower()
        return any(host == d or host.endswith("." + d) for d in trusted)

    return sorted(results, key=lambda r: not is_trusted(r))


_QUOTED = re.compile(r'"([^"]+)"')
_TOKEN = re.compile(r"[\w'-]+")


def keyword_query(question: str, *, max_terms: int = 8) -> str:
    """A deterministic search query: quoted phrases kept, stopwords and question words dropped,
    original order and case, at most `max_terms` terms. Used when no LLM rewrites the query."""
    phrases = [f'"{p}"' for p in _QUOTED.findall(question)]
    rest = _QUOTED.sub(" ", question)
    words = [w for w in _TOKEN.findall(rest) if w.lower() not in STOPWORDS and len(w) > 1]
    return " ".join(list(dict.fromkeys([*phrases, *words]))[:max_terms])


def get_search_provider() -> SearchProvider:
    provider = settings.CAIRN_SEARCH_PROVIDER
    timeout = settings.CAIRN_SEARCH_TIMEOUT
    if provider == "none":
        return NoSearch()
    if provider == "searxng":
        return SearxngSearch(settings.CAIRN_SEARCH_URL, timeout=timeout)
    headers = {}
    if settings.CAIRN_SEARCH_AUTH_HEADER:
        name, _, value = settings.CAIRN_SEARCH_AUTH_HEADER.partition(":")
        headers[name.strip()] = value.strip()
    fields = dict(item.split("=", 1) for item in settings.CAIRN_SEARCH_FIELDS if "=" in item)
    return HttpJsonSearch(settings.CAIRN_SEARCH_URL, timeout=timeout, headers=headers, fields=fields)
