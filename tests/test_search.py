"""External search providers against loopback servers speaking their protocols; the deterministic
keyword rewrite; trusted domains first; failures reported, not raised into the answer."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from pipeline.search import ExternalResult, SearchError, get_search_provider, keyword_query, trusted_first
from tests import loopback
from tests.loopback import LoopbackServer


def test_keyword_query_keeps_phrases_and_content_words_in_order():
    assert keyword_query('Who wrote the "travel expense policy" for the Oslo office?') == (
        '"travel expense policy" wrote Oslo office'
    )
    assert len(keyword_query(" ".join(f"word{i}" for i in range(20))).split()) == 8


def test_trusted_domains_come_first_and_subdomains_count():
    results = [
        ExternalResult("a", "https://blog.example.com/x", "a"),
        ExternalResult("b", "https://docs.intra.net/y", "b"),
    ]
    assert [r.title for r in trusted_first(results, ["intra.net"])] == ["b", "a"]


def test_searxng_provider_asks_for_json_and_caps_results():
    results = [{"title": f"t{i}", "url": f"https://e.org/{i}", "content": f"text {i}"} for i in range(9)]
    with (
        loopback.searxng(lambda q: results) as server,
        override_settings(CAIRN_SEARCH_PROVIDER="searxng", CAIRN_SEARCH_URL=server.url),
    ):
        found = get_search_provider().search("oslo office", limit=3)
    assert [r.url for r in found] == ["https://e.org/0", "https://e.org/1", "https://e.org/2"]
    assert server.calls[0]["query"] == {"q": ["oslo office"], "format": ["json"]}


def test_http_json_provider_maps_fields_and_sends_the_auth_header():
    def handle(method, path, query, body):
        return 200, {"data": {"hits": [{"name": "Policy", "link": "https://intra/p", "snippet": "Per diem 85 euros."}]}}

    with (
        LoopbackServer(handle) as server,
        override_settings(
            CAIRN_SEARCH_PROVIDER="http-json",
            CAIRN_SEARCH_URL=server.url + "/find?query={query}",
            CAIRN_SEARCH_AUTH_HEADER="Authorization: Bearer s3cret",
            CAIRN_SEARCH_FIELDS=["results=data.hits", "title=name", "url=link", "text=snippet"],
        ),
    ):
        found = get_search_provider().search("per diem", limit=5)
    assert found == [ExternalResult("Policy", "https://intra/p", "Per diem 85 euros.")]
    assert server.calls[0]["query"] == {"query": ["per diem"]}
    assert server.calls[0]["headers"]["Authorization"] == "Bearer s3cret"


def test_failures_are_search_errors_and_a_missing_url_is_a_config_error():
    with (
        LoopbackServer(lambda *a: (500, {"error": "down"})) as server,
        override_settings(CAIRN_SEARCH_PROVIDER="searxng", CAIRN_SEARCH_URL=server.url),
        pytest.raises(SearchError, match="searxng search failed"),
    ):
        get_search_provider().search("x", limit=1)
    with (
        override_settings(CAIRN_SEARCH_PROVIDER="searxng", CAIRN_SEARCH_URL=""),
        pytest.raises(ImproperlyConfigured, match="CAIRN_SEARCH_URL"),
    ):
        get_search_provider()
