"""The verified forward path end to end through the API: real retrieval, the shipped verifiers,
django's real database; SearxNG and Ollama are loopback servers speaking their real protocols."""

from django.test import override_settings

from corpus.models import Document
from corpus.services import collection_get_or_create, documents_ingest
from pipeline.models import Answer
from readers.extract import ExtractedDocument
from tests import loopback
from tests.conftest import client_for
from tests.loopback import free_port
from writeback.models import WriteBack

QUESTION = "who got the first nobel prize in physics"
NONSENSE = "zorbly quantum marmalade tariffs for velociraptor shipyards"


def ask(user, **payload):
    response = client_for(user).post("/api/v1/query", {"top_k": 5, **payload}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def searx_results(query):
    return [
        {"title": "Nobel Prize in Physics 1901", "url": "https://www.nobelprize.org/physics/1901",
         "content": "Wilhelm Conrad Röntgen received the first Nobel Prize in Physics in 1901 for the discovery of X-rays.",
         "engine": "wikipedia"},
        {"title": "Recipes", "url": "https://example.com/jam", "content": "Marmalade is made from bitter oranges."},
    ]  # fmt: skip


def test_a_correct_retrieval_is_answered_from_verified_evidence_without_searching(charlie):
    with (
        loopback.searxng(searx_results) as searx,
        override_settings(CAIRN_SEARCH_PROVIDER="searxng", CAIRN_SEARCH_URL=searx.url),
    ):
        body = ask(charlie, question=QUESTION, mode="fast")
    assert searx.calls == [] and body["external"] == {}
    assert body["action"] == "CORRECT" and body["found"] and body["generator"] == "extractive"
    assert "Röntgen" in body["answer"]
    cited = [e for e in body["evidence"] if e["cited"]]
    assert cited and all(e["bucket"] == "VERIFIED" for e in cited)
    assert all(any(s["kept"] for s in e["strips"]) for e in cited)


def test_an_incorrect_retrieval_searches_externally_and_labels_what_it_uses(charlie):
    with (
        loopback.searxng(searx_results) as searx,
        override_settings(
            CAIRN_SEARCH_PROVIDER="searxng", CAIRN_SEARCH_URL=searx.url, CAIRN_SEARCH_TRUSTED_DOMAINS=["nobelprize.org"]
        ),
    ):
        body = ask(charlie, question=NONSENSE, mode="fast")
    assert body["action"] == "INCORRECT"
    assert len(searx.calls) == 1 and searx.calls[0]["query"]["q"] == [
        "zorbly quantum marmalade tariffs velociraptor shipyards"
    ]
    assert body["external"] == {"provider": "searxng", "query": searx.calls[0]["query"]["q"][0], "results": 2}
    external = [e for e in body["evidence"] if e["origin"] == "external"]
    assert [e["source"] for e in external] == ["https://www.nobelprize.org/physics/1901", "https://example.com/jam"]
    assert all(e["chunk_id"] is None for e in external)
    assert not any(e["bucket"] == "VERIFIED" for e in body["evidence"] if e["origin"] == "corpus")


def test_nothing_verified_and_no_external_source_is_an_explicit_not_found(charlie):
    body = ask(charlie, question=NONSENSE, mode="fast")
    assert body["action"] == "INCORRECT" and not body["found"] and body["citations"] == []
    assert body["answer"].startswith("Not found in the knowledge base")
    assert all(e["bucket"] != "VERIFIED" for e in body["evidence"])


def test_an_ambiguous_retrieval_is_reported_as_such(charlie):
    # Thresholds no chunk can clear and every chunk clears: the middle band, whatever the scores.
    with override_settings(CAIRN_RELEVANCE_UPPER=1.01, CAIRN_RELEVANCE_LOWER=0.0):
        body = ask(charlie, question=QUESTION, mode="fast")
    assert body["action"] == "AMBIGUOUS"


def test_the_ollama_generator_answers_with_citations_through_the_real_client(charlie):
    def chat(messages, options):
        assert "[1]" in messages[1]["content"]  # the verified evidence, numbered
        return "Wilhelm Conrad Röntgen received it in 1901 [1]."

    with loopback.ollama(chat) as server, override_settings(OLLAMA_HOST=server.url):
        body = ask(charlie, question=QUESTION, generator="ollama")
    assert body["generator"] == "ollama" and body["answer"] == "Wilhelm Conrad Röntgen received it in 1901 [1]."
    assert [c["n"] for c in body["citations"]] == [1] and body["notes"] == []
    assert [c["path"] for c in server.calls] == ["/api/chat"]


def test_ollama_down_falls_back_to_extractive_and_says_so(charlie):
    with override_settings(OLLAMA_HOST=f"http://127.0.0.1:{free_port()}", CAIRN_OLLAMA_TIMEOUT=2):
        body = ask(charlie, question=QUESTION, generator="ollama")
    assert body["generator"] == "extractive" and "Röntgen" in body["answer"]
    assert any("ollama unavailable" in note for note in body["notes"])


def test_deep_mode_loops_until_the_two_answers_agree(charlie):
    rounds = {"chat": 0}

    def chat(messages, options):
        rounds["chat"] += 1
        if rounds["chat"] <= 2 and options["temperature"] > 0.5:  # the first pair disagrees
            return "Albert Einstein won the first physics prize [1]."
        return "Wilhelm Conrad Röntgen won the first Nobel Prize in Physics [1]."

    def generate(prompt, options):
        if prompt.startswith("From the evidence"):
            return "Wilhelm Conrad Röntgen was awarded the first Nobel Prize in Physics in 1901. [1]"
        return "Röntgen Nobel Prize Physics 1901"

    with loopback.ollama(chat, generate) as server, override_settings(OLLAMA_HOST=server.url):
        body = ask(charlie, question=QUESTION, mode="deep")
    assert body["mode"] == "deep" and body["generator"] == "ollama"
    assert body["iterations"] == 1 and body["agreement"] >= 0.7
    assert body["answer"] == "Wilhelm Conrad Röntgen won the first Nobel Prize in Physics [1]."
    assert [c["path"] for c in server.calls].count("/api/generate") == 2  # inferences, follow-up query
    assert [c["path"] for c in server.calls].count("/api/chat") == 4  # two answers per round


def test_a_recorded_answer_is_readable_by_its_asker_and_curators_only(charlie, alice, bob):
    body = ask(charlie, question=QUESTION, mode="fast")
    url = f"/api/v1/answers/{body['response_id']}"
    mine = client_for(charlie).get(url)
    assert mine.status_code == 200 and mine.json() == body
    assert client_for(bob).get(url).status_code == 200
    assert client_for(alice).get(url).status_code == 404
    assert Answer.objects.get(response_id=body["response_id"]).evidence.count() == len(body["evidence"])


def test_a_manual_answers_what_it_states_and_not_what_it_never_mentions(charlie):
    from pathlib import Path

    from django.core.management import call_command

    page = Path(__file__).parent / "fixtures" / "manual" / "config.html"
    call_command("ingest", str(page), collection="manual", public=True, verbosity=0)
    stated = ask(charlie, question="What is the default wal_level?", mode="fast", collections=["manual"])
    assert stated["found"] and "replica" in stated["answer"]
    assert "char dbname" not in stated["answer"]  # code is never an answer sentence
    # The relevance evaluator finds the WAL chunk relevant to any database setting; the corpus's
    # own term weights notice that innodb_buffer_pool_size appears nowhere in it.
    absent = ask(charlie, question="What is the default innodb_buffer_pool_size?", mode="fast", collections=["manual"])
    assert not absent["found"] and absent["action"] == "INCORRECT"
    assert not any(e["bucket"] == "VERIFIED" for e in absent["evidence"])
    assert any("innodb" in note for e in absent["evidence"] for note in e["notes"])
    # A made-up setting whose words the manual uses ("to" is a stop word, "wal" is everywhere).
    made_up = ask(charlie, question="What does to_wal default to?", mode="fast", collections=["manual"])
    assert not made_up["found"] and made_up["action"] == "INCORRECT"
    # A dotted name is one token in Postgres's index ("harbor.forcecheckpoint"); asked for, it is
    # found whole, not taken for an unknown "forcecheckpoint". One the manual never writes is not.
    dotted = ask(charlie, question="When does harbor.forcecheckpoint() return?", mode="fast", collections=["manual"])
    assert dotted["found"] and "flushed to disk" in dotted["answer"]
    unknown = ask(charlie, question="When does harbor.forcevacuum() return?", mode="fast", collections=["manual"])
    assert not unknown["found"] and unknown["action"] == "INCORRECT"


def test_passages_that_contradict_each_other_on_the_answer_are_both_quoted_with_their_provenance(charlie, settings):
    """A planted passage that the NLI model finds contradicting the true one is not stated as the
    answer, nor does it silence the true one: the answer says the sources disagree and quotes both."""
    rumours, _ = collection_get_or_create(slug="rumours", public=True)
    documents_ingest(collection=rumours, documents=[ExtractedDocument(
        "Physics prizes", "Albert Einstein, not Wilhelm Conrad Röntgen, received the first Nobel Prize in Physics in 1901.",
        "rumours/physics.md", "text/markdown",
    )])  # fmt: skip
    body = ask(charlie, question=QUESTION, mode="fast")
    assert body["answer"].startswith("Sources disagree: ") and body["found"] is False
    assert "Albert Einstein" in body["answer"] and "Röntgen" in body["answer"]
    cited = [e for e in body["evidence"] if e["cited"]]
    assert {e["collection"] for e in cited} == {"Rumours", "Demo"} and all(e["document_added"] for e in cited)
    assert "sources disagree on the answer" in body["notes"]
    assert not WriteBack.objects.filter(response_id=body["response_id"]).exists()  # never proposed

    settings.CAIRN_DISPUTE_PREFER = "newer"  # the planted document is the newer one
    body = ask(charlie, question=QUESTION, mode="fast")
    assert body["answer"].startswith("Sources disagree: the newer source says Albert Einstein, not Wilhelm")
    assert body["answer"].index("Einstein") < body["answer"].index("Röntgen")

    # A file's own "modified" property says when its content changed, not when Cairn read it: a
    # document last edited in 1999 and loaded today is the older source.
    Document.objects.filter(source="rumours/physics.md").update(metadata={"modified": "1999-05-01T09:00:00"})
    body = ask(charlie, question=QUESTION, mode="fast")
    assert body["answer"].startswith("Sources disagree: the newer source says ")
    assert body["answer"].index("Röntgen") < body["answer"].index("Einstein")
