"""The way back to the original file: kept on every path that ingests a file (stored once by its
bytes, replaced when it changes), served to the readers of its collection only (a PDF inline, the
rest as downloads), and opened at the cited place: a PDF at #page=N, a slide or a sheet's rows in
Cairn's view of the stored file. The files are built here with the libraries that read them."""

import io
import json

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test import Client
from openpyxl import Workbook
from pptx import Presentation

from corpus.lifecycle import document_retract
from corpus.models import Document, Original
from corpus.services import collection_get_or_create
from tests.conftest import client_for
from tests.documents import pdf_bytes
from tests.test_office import post_file

pytestmark = pytest.mark.django_db

PAGES = [
    ["Harbour Street office guide.", "The front desk is staffed from eight until six on weekdays."],
    ["The boiler room key hangs in cabinet seven beside the loading dock."],
    ["Visitors sign the register and wear a yellow badge at all times."],
]


def deck() -> bytes:
    presentation = Presentation()
    for title, body, notes in [
        ("Welcome", "Agenda for the quarterly review.", ""),
        ("Hiring", "Four engineers joined the platform team.", ""),
        ("Budget", "The travel budget rises to 90,000 euros next year.", "Confirm the figure with finance."),
    ]:
        slide = presentation.slides.add_slide(presentation.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text_frame.text = body
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def workbook() -> bytes:
    book = Workbook()
    book.active.title = "Summary"
    book.active.append(["Quarter", "Revenue"])
    book.active.append(["Q1", "1.2 million"])
    prices = book.create_sheet("Prices")
    prices.append(["Item", "Price"])
    for item, price in [("Coffee", "2 euros"), ("Tea", "1 euro"), ("Harbour sandwich", "6 euros"), ("Soup", "4 euros")]:
        prices.append([item, price])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


@pytest.fixture
def small_chunks(settings):
    """Chunks of a page or a few rows, with no overlap: each page of these files is its own chunk."""
    settings.CAIRN_CHUNK_TOKENS, settings.CAIRN_CHUNK_OVERLAP_TOKENS = 24, 0


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def stored(document: Document) -> bytes:
    with document.original.file.open("rb") as handle:
        return handle.read()


def test_an_uploaded_file_is_kept_and_a_pdf_is_served_inline_at_its_page(bob, charlie, small_chunks):
    data = pdf_bytes(PAGES, title="Office guide")
    assert post_file(bob, "office-guide.pdf", data).status_code == 201
    document = Document.objects.get(source="upload:office-guide.pdf")
    assert stored(document) == data and document.original.mime_type == "application/pdf"
    assert document.original.file.name.startswith(f"{document.original.sha256[:2]}/{document.original.sha256[2:4]}/")

    response = signed_in(charlie).get(f"/documents/{document.id}/original")  # the demo collection is public
    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    assert response["Content-Disposition"] == 'inline; filename="office-guide.pdf"'
    assert b"".join(response.streaming_content) == data
    api = client_for(charlie).get(f"/api/v1/documents/{document.id}/original", HTTP_ACCEPT="application/pdf")
    assert api.status_code == 200 and b"".join(api.streaming_content) == data

    # Each chunk knows its page; the API's chunk and the document page open the PDF there.
    chunk = next(c for c in document.chunks.all() if "boiler room" in c.text)
    assert chunk.location == {"page": 2}
    body = client_for(charlie).get(f"/api/v1/chunks/{chunk.id}").json()
    assert body["location_label"] == "page 2"
    assert body["original_url"] == f"/documents/{document.id}/original#page=2"
    assert client_for(charlie).get(f"/api/v1/documents/{document.id}").json()["original_url"] == (
        f"/api/v1/documents/{document.id}/original"
    )
    page = signed_in(charlie).get(f"/documents/{document.id}").content.decode()
    assert f'<a href="/documents/{document.id}/original#page=2">page 2</a>' in page


def test_the_admin_links_a_document_to_its_original_and_each_chunk_to_its_page(bob, small_chunks):
    assert post_file(bob, "office-guide.pdf", pdf_bytes(PAGES, title="Office guide")).status_code == 201
    document = Document.objects.get(source="upload:office-guide.pdf")
    admin = signed_in(User.objects.create_superuser("root", password="root-pw"))
    page = admin.get(f"/admin/corpus/document/{document.id}/change/").content.decode()
    assert f'<a href="/documents/{document.id}/original">office-guide.pdf</a>' in page
    assert f'<a href="/documents/{document.id}/original#page=2">page 2</a>' in page
    typed = client_for(bob).post(
        "/api/v1/documents", {"collection": "demo", "title": "Typed", "text": "Typed text has no file."}, format="json"
    )
    assert typed.status_code == 201
    page = admin.get(f"/admin/corpus/document/{Document.objects.get(title='Typed').id}/change/").content.decode()
    assert "not kept (text posted as such" in page


def test_text_posted_as_json_and_the_lines_of_a_jsonl_have_no_original(bob):
    response = client_for(bob).post(
        "/api/v1/documents", {"collection": "demo", "title": "Typed", "text": "Typed text has no file."}, format="json"
    )
    assert response.status_code == 201
    lines = b'{"title": "A line", "text": "A line of a jsonl file is a document without a file."}\n'
    assert post_file(bob, "lines.jsonl", lines).status_code == 201
    for document in Document.objects.filter(title__in=["Typed", "A line"]):
        assert document.original is None
        assert signed_in(bob).get(f"/documents/{document.id}/original").status_code == 404
    assert client_for(bob).get(f"/api/v1/documents/{document.id}").json()["original_url"] is None


def test_ingest_copies_the_file_stores_nothing_new_when_unchanged_and_replaces_a_changed_one(
    tmp_path, originals_dir, small_chunks, django_capture_on_commit_callbacks
):
    path = tmp_path / "guide.pdf"
    path.write_bytes(pdf_bytes(PAGES))
    call_command("ingest", str(path), collection="cli-originals", public=True, verbosity=0)
    document = Document.objects.get(collection__slug="cli-originals")
    first = document.original
    assert stored(document) == path.read_bytes()

    # Unchanged: the same original, and no new row or file.
    before = (Original.objects.count(), sorted(p.name for p in originals_dir.rglob("*") if p.is_file()))
    call_command("ingest", str(path), collection="cli-originals", verbosity=0)
    document.refresh_from_db()
    assert document.original_id == first.id
    assert (Original.objects.count(), sorted(p.name for p in originals_dir.rglob("*") if p.is_file())) == before
    # A file lost from the storage (a folder restored from an older copy) is written again.
    first.file.storage.delete(first.file.name)
    call_command("ingest", str(path), collection="cli-originals", verbosity=0)
    assert stored(document) == path.read_bytes()

    # Changed: the new file replaces the old, whose row and file go once nothing points at them.
    changed = pdf_bytes([*PAGES, ["A fourth page on parking permits."]])
    path.write_bytes(changed)
    with django_capture_on_commit_callbacks(execute=True):
        call_command("ingest", str(path), collection="cli-originals", verbosity=0)
    document.refresh_from_db()
    assert document.original_id != first.id and stored(document) == changed
    assert not Original.objects.filter(id=first.id).exists()
    assert not first.file.storage.exists(first.file.name)


def test_a_file_whose_text_reads_the_same_is_still_the_new_original(tmp_path):
    path = tmp_path / "rota.md"
    path.write_text("# Rota\n\nThe night shift starts at ten.\n")
    call_command("ingest", str(path), collection="rota", verbosity=0)
    path.write_text("# Rota\n\nThe night shift starts at ten.\n\n\n")  # re-saved: the same text
    call_command("ingest", str(path), collection="rota", verbosity=0)
    document = Document.objects.get(collection__slug="rota")
    assert stored(document) == path.read_bytes() and document.original.mime_type == "text/markdown"
    response = signed_in(User.objects.create_superuser("root", password="root-pw")).get(
        f"/documents/{document.id}/original"
    )
    assert response["Content-Disposition"] == 'attachment; filename="rota.md"'  # never rendered from this origin


def test_the_same_bytes_in_two_collections_are_stored_once_and_a_shared_one_stays(
    tmp_path, django_capture_on_commit_callbacks
):
    path = tmp_path / "guide.pdf"
    path.write_bytes(pdf_bytes(PAGES))
    call_command("ingest", str(path), collection="copies-a", verbosity=0)
    call_command("ingest", str(path), collection="copies-b", verbosity=0)
    a, b = (Document.objects.get(collection__slug=slug) for slug in ("copies-a", "copies-b"))
    assert a.original_id == b.original_id
    path.write_bytes(pdf_bytes([["Rewritten."], *PAGES]))
    with django_capture_on_commit_callbacks(execute=True):
        call_command("ingest", str(path), collection="copies-a", verbosity=0)
    b.refresh_from_db()
    assert stored(b) == pdf_bytes(PAGES)  # still pointed at by the other collection's document


def test_only_readers_of_the_collection_get_the_original_and_a_retracted_one_is_gone(alice, charlie, bob, tmp_path):
    collection, _ = collection_get_or_create(slug="finance-files", group_names=["finance"])
    path = tmp_path / "budget.pptx"
    path.write_bytes(deck())
    call_command("ingest", str(path), collection=collection.slug, verbosity=0)
    document = Document.objects.get(collection=collection)
    for url in (f"/documents/{document.id}/original", f"/documents/{document.id}/original/view?slide=1"):
        assert signed_in(alice).get(url).status_code == 200
        assert signed_in(charlie).get(url).status_code == 404
    assert client_for(charlie).get(f"/api/v1/documents/{document.id}/original").status_code == 404
    response = client_for(alice).get(f"/api/v1/documents/{document.id}/original")
    assert response.status_code == 200 and response["Content-Disposition"] == 'attachment; filename="budget.pptx"'
    assert response["Content-Type"] == Document.objects.get(id=document.id).mime_type

    document_retract(document, actor=bob, reason="superseded")
    assert signed_in(alice).get(f"/documents/{document.id}").status_code == 404  # as the document page
    assert signed_in(alice).get(f"/documents/{document.id}/original").status_code == 404


def test_a_slide_is_shown_from_the_stored_deck_with_its_title_text_and_notes(bob, small_chunks):
    assert post_file(bob, "review.pptx", deck()).status_code == 201
    document = Document.objects.get(source="upload:review.pptx")
    chunk = next(c for c in document.chunks.all() if "travel budget" in c.text)
    assert chunk.location == {"slide": 3}
    url = client_for(bob).get(f"/api/v1/chunks/{chunk.id}").json()["original_url"]
    assert url == f"/documents/{document.id}/original/view?slide=3"
    page = signed_in(bob).get(url).content.decode()
    assert "Budget" in page and "90,000 euros" in page and "Confirm the figure with finance." in page
    assert "Four engineers" not in page  # slide 2's text is not on slide 3's page
    assert f'href="/documents/{document.id}/original"' in page  # the download
    assert signed_in(bob).get(f"/documents/{document.id}/original/view?slide=4").status_code == 404


def test_a_sheet_is_shown_from_the_stored_workbook_with_the_cited_rows_marked(bob, small_chunks):
    assert post_file(bob, "canteen.xlsx", workbook()).status_code == 201
    document = Document.objects.get(source="upload:canteen.xlsx")
    chunk = next(c for c in document.chunks.all() if "Harbour sandwich" in c.text)
    assert chunk.location["sheet"] == "Prices" and chunk.location["rows"][0] <= 4 <= chunk.location["rows"][1]
    first, last = chunk.location["rows"]
    url = client_for(bob).get(f"/api/v1/chunks/{chunk.id}").json()["original_url"]
    expected = f"row={first}&to={last}" if last != first else f"row={first}"
    assert url == f"/documents/{document.id}/original/view?sheet=Prices&{expected}#row-{first}"
    page = signed_in(bob).get(url).content.decode()
    assert '<tr id="row-4" class="cited">' in page and "Harbour sandwich" in page
    assert '<tr id="row-1">' in page  # the header, not cited
    assert "1.2 million" not in page  # the other sheet's rows
    assert signed_in(bob).get(f"/documents/{document.id}/original/view?sheet=Nope").status_code == 404
    assert signed_in(bob).get(f"/documents/{document.id}/original/view?sheet=Prices&row=x").status_code == 404


def test_a_pdf_has_no_view_and_an_answer_s_citations_say_where_and_link_there(bob, small_chunks):
    data = pdf_bytes(PAGES)
    assert post_file(bob, "harbour-guide.pdf", data).status_code == 201
    document = Document.objects.get(source="upload:harbour-guide.pdf")
    assert signed_in(bob).get(f"/documents/{document.id}/original/view?slide=1").status_code == 404

    body = client_for(bob).post(
        "/api/v1/query", {"question": "where does the boiler room key hang", "mode": "fast"}, format="json"
    )
    assert body.status_code == 200, body.content
    answer = body.json()
    cited = next(c for c in answer["citations"] if c["chunk_id"] in set(document.chunks.values_list("id", flat=True)))
    expected = {"location": {"page": 2}, "location_label": "page 2", "original_url": f"/documents/{document.id}/original#page=2"}  # fmt: skip
    assert {k: cited[k] for k in expected} == expected
    evidence = next(e for e in answer["evidence"] if e["n"] == cited["n"])
    assert {k: evidence[k] for k in expected} == expected
    # Re-opened later, the recorded answer says the same.
    again = client_for(bob).get(f"/api/v1/answers/{answer['response_id']}").json()
    assert json.dumps(again["citations"]) == json.dumps(answer["citations"])


# --- In a browser: a citation opens the original at its place ----------------------------------

BROWSER_DATABASE = "test_cairn_originals"


@pytest.fixture(scope="module")
def served_files(tmp_path_factory, django_db_blocker):
    """A database of its own (as tests/test_serving.py's) holding a PDF, a deck and a workbook in a
    public collection, chunked a page, a slide or a few rows apiece, their originals in a folder of
    this test's; and a reader."""
    from tests.test_serving import manage

    folder = tmp_path_factory.mktemp("served-files")
    extra = {"CAIRN_DB_NAME": BROWSER_DATABASE, "CAIRN_ORIGINALS_DIR": str(folder / "originals")}
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {BROWSER_DATABASE} WITH (FORCE)")
    manage("migrate", "--noinput", **extra)
    (folder / "office-guide.pdf").write_bytes(pdf_bytes(PAGES, title="Office guide"))
    (folder / "quarterly-review.pptx").write_bytes(deck())
    (folder / "canteen-prices.xlsx").write_bytes(workbook())
    manage("ingest", *(str(folder / name) for name in ("office-guide.pdf", "quarterly-review.pptx",
           "canteen-prices.xlsx")), "--collection", "files", "--public",
           CAIRN_CHUNK_TOKENS="24", CAIRN_CHUNK_OVERLAP_TOKENS="0", **extra)  # fmt: skip
    manage("reader", "erin", "--password-stdin", input="pebble-larch-quarry-71\n", **extra)
    yield extra
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {BROWSER_DATABASE} WITH (FORCE)")


def test_a_citation_opens_the_pdf_at_its_page_and_a_slide_or_rows_in_cairns_view(served_files):
    """In Chromium against gunicorn: ask, and from the cited passage's card open the original at the
    place: the PDF itself at #page=2, the deck's slide 3 (its text and notes), the workbook's later
    sheet with the cited row marked and scrolled to."""
    from playwright.sync_api import sync_playwright

    from tests.test_serving import CHROMIUM, chromium, served, sign_in

    if not CHROMIUM.exists():
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    errors = []
    with served(**served_files) as base:
        with sync_playwright() as playwright:
            browser = chromium(playwright)
            page = browser.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))
            sign_in(page, base, "erin", "pebble-larch-quarry-71")

            def ask(question: str, place: str):
                """Ask in quick mode; the cited card's link to the original at `place`."""
                page.goto(f"{base}/")
                page.fill("#question", question)
                page.select_option("#mode", "fast")
                page.click("#ask-button")
                page.wait_for_selector("#actions:not([hidden])", timeout=60_000)
                link = page.locator("#sources li.cited a.original", has_text=place)
                assert link.count() == 1, page.inner_text("#sources")
                return link

            # The PDF: opened itself, in the browser's viewer, at the page (viewers honour #page=2).
            link = ask("where does the boiler room key hang", "page 2")
            with page.expect_response(lambda r: "/original" in r.url) as opened:
                link.click()
            response = opened.value
            assert response.status == 200 and response.headers["content-type"] == "application/pdf"
            assert response.headers["content-disposition"].startswith("inline")
            page.wait_for_url("**/original#page=2")
            assert page.url.startswith(f"{base}/documents/") and page.url.endswith("/original#page=2")
            # What the viewer shows is the file as it was ingested, byte for byte.
            assert page.request.get(page.url).body() == pdf_bytes(PAGES, title="Office guide")

            # The deck: Cairn's view of the stored file at slide 3.
            ask("how large is the travel budget next year", "slide 3").click()
            page.wait_for_url("**/original/view?slide=3")
            assert page.inner_text("section.slide h3") == "Budget"
            assert "90,000 euros" in page.inner_text("section.slide")
            assert "Confirm the figure with finance." in page.inner_text("aside.notes")
            assert page.locator("a.download").count() == 1

            # The workbook: its later sheet, the cited row marked and scrolled to.
            ask("what does the harbour sandwich cost", "sheet Prices").click()
            page.wait_for_url("**/original/view?sheet=Prices*")
            assert "#row-" in page.url
            assert "Harbour sandwich" in " ".join(page.locator("table.sheet tr.cited").all_inner_texts())
            target = page.locator("table.sheet tr:target")
            assert target.get_attribute("class") == "cited"
            assert 0 <= target.evaluate("row => row.getBoundingClientRect().top") < page.viewport_size["height"]
            browser.close()
        assert errors == []
