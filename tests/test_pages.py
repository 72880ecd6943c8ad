"""The reader's pages beside the ask page: a document opened from a source card, and "my questions"."""

import pytest
from django.test import Client

from corpus.models import Document
from corpus.selectors import document_passages
from corpus.services import documents_ingest
from readers.extract import ExtractedDocument
from tests.conftest import client_for

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_document_page_shows_the_whole_text_once_with_each_chunk_anchored(alice, finance):
    sentences = [f"Rule {i} of the handbook says that form {i} goes to office {i} before noon." for i in range(60)]
    report = documents_ingest(
        collection=finance,
        documents=[ExtractedDocument(title="Long handbook", text="# Forms\n\n" + " ".join(sentences),
                                     source="handbook.md", mime_type="text/markdown")],
    )  # fmt: skip
    document = report.outcomes[0].document
    chunks = list(document.chunks.order_by("ordinal"))
    assert len(chunks) > 2  # long enough that chunking overlapped sentences
    passages = document_passages(document)
    shown = " ".join(text for p in passages for kind, text in p.blocks if kind == "paragraph")
    assert all(shown.count(sentence) == 1 for sentence in sentences)  # every sentence once: no overlap shown
    assert passages[0].blocks[0] == ("heading", "Forms")

    page = signed_in(alice).get(f"/documents/{document.id}")
    assert page.status_code == 200
    html = page.content.decode()
    assert all(f'id="chunk-{chunk.id}"' in html for chunk in chunks) and "Long handbook" in html


def test_a_document_page_is_404_for_those_who_may_not_read_it_and_after_retraction(alice, charlie, bob, finance):
    document = Document.objects.get(collection=finance)
    assert signed_in(alice).get(f"/documents/{document.id}").status_code == 200
    assert signed_in(charlie).get(f"/documents/{document.id}").status_code == 404  # not in finance
    assert signed_in(charlie).get("/documents/999999").status_code == 404  # the same answer as hidden
    anonymous = Client().get(f"/documents/{document.id}")
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    document.status = Document.Status.RETRACTED
    document.save(update_fields=["status"])
    assert signed_in(alice).get(f"/documents/{document.id}").status_code == 404


def test_my_questions_lists_only_my_own_answers_searchable_with_my_thumbs(alice, charlie):
    asked = (
        client_for(charlie)
        .post("/api/v1/query", {"question": "who got the first nobel prize in physics", "mode": "fast"}, format="json")
        .json()
    )
    client_for(alice).post("/api/v1/query", {"question": "what is the capital of guyana", "mode": "fast"},
                           format="json")  # fmt: skip
    client_for(charlie).post("/api/v1/feedback", {"response_id": asked["response_id"], "thumbs": 0}, format="json")

    page = signed_in(charlie).get("/history").content.decode()
    assert "who got the first nobel prize in physics" in page and "guyana" not in page  # alice's is not mine
    assert f"?answer={asked['response_id']}" in page and "you found it not useful" in page
    assert "nobel" in signed_in(charlie).get("/history", {"q": "Röntgen"}).content.decode()  # the answer's text
    assert "None of your questions" in signed_in(charlie).get("/history", {"q": "zebra"}).content.decode()
    assert "guyana" in signed_in(alice).get("/history").content.decode()


def test_passages_keep_code_whole_show_block_kinds_and_drop_a_repeat_that_opens_a_block():
    from corpus.selectors import _unrepeated
    from readers.blocks import parse_blocks

    previous = (
        "functools.cmp_to_key(func)\n\n: Transform an old-style comparison function to a key function. "
        "This function is primarily used as a transition tool."
    )
    text = ": This function is primarily used as a transition tool. A comparison function compares two values.\n\n- one"
    assert _unrepeated(previous, text) == ": A comparison function compares two values.\n\n- one"
    assert _unrepeated(previous, ": This function is primarily used as a transition tool.\n\n| a | b") == "\n\n| a | b"
    assert _unrepeated("Nothing shared here.", text) == text
    code = "# Caching\n\n```\nclass DataSet:\n\n    def mean(self): ...\n```\n\n: New in version 3.8."
    assert [(b.kind, b.text) for b in parse_blocks(code)] == [
        ("heading", "Caching"),
        ("code", "class DataSet:\n\n    def mean(self): ..."),  # a blank line inside code does not end it
        ("definition", "New in version 3.8."),
    ]
    # The repeat matched with its block mark on both sides: the rest of the block keeps its kind.
    assert _unrepeated(
        "Intro.\n\n: Decorator to wrap a function.", ": Decorator to wrap a function. It saves time."
    ) == (": It saves time.")
