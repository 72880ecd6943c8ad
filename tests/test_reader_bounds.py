"""The readers of hostile files are bounded: LibreOffice runs with none of Cairn's environment, in
limited memory and with no way onto the network; OCR counts in a PDF's time budget and a PDF of
more scanned pages than CAIRN_OCR_MAX_PAGES is refused at once; an e-mail reads a few of its
attachments in one budget; the view of a deck or a workbook reads its file once; and a model
server's error body never reaches the asker. The hostile files are built here, LibreOffice's by
LibreOffice itself, and every server is a real one on loopback."""

import email.message
import io
import json
import logging
import re
import subprocess
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.test import override_settings
from openpyxl import Workbook

from corpus.models import Document
from corpus.originals import view_name
from readers import legacy, office
from readers.extract import ExtractionError, extract_bytes
from tests import loopback
from tests.conftest import client_for
from tests.documents import pdf_file
from tests.test_office import post_file
from tests.test_originals import deck, signed_in, workbook
from tests.test_pdf import ARCHIVE, page_image

pytestmark = pytest.mark.django_db

QUESTION = "who got the first nobel prize in physics"


# --- LibreOffice ------------------------------------------------------------------------------------


class Listener:
    """A loopback HTTP server that answers anything and records every request, whatever its method
    (LibreOffice asks OPTIONS and HEAD before it GETs)."""

    def __init__(self):
        self.requests: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def handle_one_request(self):
                self.raw_requestline = self.rfile.readline(65537)
                if not self.raw_requestline or not self.parse_request():
                    return
                outer.requests.append(f"{self.command} {self.path}")
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def hostile_doc(folder: Path, url: str) -> bytes:
    """A Word 97-2003 document whose picture is linked, not embedded: an INCLUDEPICTURE field that
    LibreOffice, as it comes, fetches from `url` when it opens the file. Written by LibreOffice
    from an OpenDocument text."""
    program = legacy.soffice()
    if program is None:
        pytest.skip("LibreOffice is not installed (apt-get install libreoffice-writer-nogui)")
    source = folder / "parking.fodt"
    source.write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
 xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
 xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"
 xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"
 xmlns:xlink="http://www.w3.org/1999/xlink"
 office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.text">
<office:body><office:text>
<text:p>Bay B7 is reserved for visitors on Fridays.</text:p>
<text:p><draw:frame draw:name="map" svg:width="2cm" svg:height="2cm" text:anchor-type="as-char">
<draw:image xlink:href="{url}/map.png" xlink:type="simple" xlink:show="embed" xlink:actuate="onLoad"/>
</draw:frame></text:p>
</office:text></office:body></office:document>""")
    subprocess.run(
        [program, f"-env:UserInstallation={(folder / 'profile').as_uri()}", "--headless", "--convert-to", "doc",
         "--outdir", str(folder / "out"), str(source)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    data = (folder / "out" / "parking.doc").read_bytes()
    assert f"{url}/map.png".encode() in data  # the link itself, in the INCLUDEPICTURE field
    return data


def test_a_linked_picture_in_a_legacy_file_fetches_nothing(tmp_path):
    with Listener() as listener:
        data = hostile_doc(tmp_path, listener.url)
        assert listener.requests  # LibreOffice with its own settings fetched it, writing the file
        listener.requests.clear()
        (document,) = extract_bytes("parking.doc", data, source="test:parking")
        assert "Bay B7 is reserved for visitors on Fridays." in document.text
    assert listener.requests == []


def test_libreoffice_sees_none_of_cairns_environment_and_has_limited_memory(tmp_path, monkeypatch, settings):
    """Read from /proc while the conversion runs: each of LibreOffice's processes (the shell that
    starts it, its launcher, soffice.bin), their environment and their address-space limit."""
    monkeypatch.setenv("CAIRN_OPENAI_API_KEY", "sk-never-for-libreoffice")
    settings.CAIRN_LIBREOFFICE_MEMORY_BYTES = 1536 * 1024**2
    with Listener() as listener:
        data = hostile_doc(tmp_path, listener.url)
    seen: dict[int, tuple[str, bytes, str]] = {}
    done = threading.Event()

    def watch():
        while not done.is_set():
            for proc in Path("/proc").iterdir():
                if not proc.name.isdigit() or int(proc.name) in seen:
                    continue
                try:
                    command = (proc / "cmdline").read_bytes()
                    if b"cairn-soffice-" in command:
                        seen[int(proc.name)] = (
                            command.decode(),
                            (proc / "environ").read_bytes(),
                            (proc / "limits").read_text(),
                        )
                except OSError:
                    continue  # gone already
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        extract_bytes("parking.doc", data, source="test:parking")
    finally:
        done.set()
        watcher.join()
    office_processes = [(environ, limits) for command, environ, limits in seen.values() if "soffice.bin" in command]
    assert office_processes, seen
    for command, environ, _ in seen.values():
        variables = dict(entry.decode().split("=", 1) for entry in environ.split(b"\0") if entry)
        assert not [name for name in variables if name.startswith("CAIRN_")], (command, variables)
        assert "sk-never-for-libreoffice" not in environ.decode()
        assert "/cairn-soffice-" in variables["HOME"] and variables["TMPDIR"] == variables["HOME"]
    for _, limits in office_processes:  # the shell that starts it is seen before it sets the limit
        address_space = next(line for line in limits.splitlines() if line.startswith("Max address space"))
        assert address_space.split()[3:5] == [str(1536 * 1024**2)] * 2, address_space


# --- OCR --------------------------------------------------------------------------------------------


def ocr_bomb(pages: int) -> bytes:
    """A PDF of `pages` letter pages, each drawing one and the same scanned image (one XObject):
    tens of kilobytes that ask for `pages` OCR runs."""
    image = page_image(ARCHIVE).resize((1275, 1650))
    pixels = zlib.compress(image.tobytes(), 9)
    content = b"q 612 0 0 792 0 0 cm /Scan Do Q"
    kids = b" ".join(b"%d 0 R" % (5 + i) for i in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
        b"<< /Type /XObject /Subtype /Image /Width 1275 /Height 1650 /ColorSpace /DeviceGray "
        b"/BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n" % len(pixels) + pixels + b"\nendstream",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
    ]
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /XObject << /Scan 3 0 R >> >> >>"
    return pdf_file(objects + [page] * pages)


def test_an_ocr_bomb_is_refused_before_any_page_is_read_by_ocr(settings):
    pages = settings.CAIRN_OCR_MAX_PAGES + 1
    data = ocr_bomb(pages)
    assert len(data) < 200_000
    started = time.monotonic()
    with pytest.raises(ExtractionError, match=rf"{pages} scanned pages to read by OCR, more than CAIRN_OCR_MAX_PAGES"):
        extract_bytes("bomb.pdf", data, source="test:bomb")
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("where", ["main thread", "web request thread"])
def test_ocr_counts_in_the_pdfs_time_budget(settings, where):
    settings.CAIRN_PDF_SECONDS = 1.5
    data = ocr_bomb(12)  # fewer than CAIRN_OCR_MAX_PAGES: read until the budget is spent
    failed: list[Exception] = []

    def read():
        try:
            extract_bytes("bomb.pdf", data, source="test:bomb")
        except ExtractionError as exc:
            failed.append(exc)

    started = time.monotonic()
    if where == "main thread":  # the ingest command and the worker: a timer stops a page mid-read
        read()
    else:  # a request: the budget is checked between steps, and Tesseract runs under what is left
        thread = threading.Thread(target=read)
        thread.start()
        thread.join()
    assert time.monotonic() - started < 4
    assert [str(exc) for exc in failed] == ["reading it took more than 1.5 s (CAIRN_PDF_SECONDS): a pathological or very large PDF"]  # fmt: skip


# --- E-mail -----------------------------------------------------------------------------------------


def test_an_email_reads_a_few_of_its_thousand_attachments_and_names_the_rest(settings):
    message = email.message.EmailMessage()
    message["From"], message["To"], message["Subject"] = "dana@example.org", "all@example.org", "Notes"
    message.set_content("The notes of every meeting are attached.")
    for n in range(1000):
        message.add_attachment(f"Meeting {n}: the boiler was serviced.".encode(), "text", "plain",
                               filename=f"meeting-{n:04}.txt")  # fmt: skip
    started = time.monotonic()
    (document,) = extract_bytes("notes.eml", message.as_bytes(), source="test:notes")
    assert time.monotonic() - started < 3
    most = settings.CAIRN_EMAIL_MAX_ATTACHMENTS
    assert document.metadata["attachments_read"] == [f"meeting-{n:04}.txt" for n in range(most)]
    unread = document.metadata["attachments_unread"]
    assert len(unread) == 1000 - most and f"meeting-{most:04}.txt" in unread
    assert set(unread.values()) == {
        f"not read: only the first {most} documents attached are read (CAIRN_EMAIL_MAX_ATTACHMENTS)"
    }
    assert "Meeting 0:" in document.text and f"Meeting {most}:" not in document.text
    assert len(document.metadata["attachments"]) == 1000


def test_an_email_and_all_its_attachments_share_one_time_budget(settings):
    settings.CAIRN_EMAIL_SECONDS = 1.5
    message = email.message.EmailMessage()
    message["From"], message["Subject"] = "dana@example.org", "Scans"
    message.set_content("Three scans of the archive notice.")
    bomb = ocr_bomb(12)
    for n in range(3):
        message.add_attachment(bomb, "application", "pdf", filename=f"scan-{n}.pdf")
    started = time.monotonic()
    (document,) = extract_bytes("scans.eml", message.as_bytes(), source="test:scans")
    assert time.monotonic() - started < 4
    unread = document.metadata["attachments_unread"]
    assert re.match(r"reading it took more than the 1\.\d s left", unread["scan-0.pdf"]), unread
    budget = "not read: the message and its attachments had 1.5 s (CAIRN_EMAIL_SECONDS)"
    assert unread["scan-1.pdf"] == unread["scan-2.pdf"] == budget
    assert document.text == "Three scans of the archive notice."


# --- The view of a deck or a workbook ---------------------------------------------------------------


@pytest.fixture
def reads(monkeypatch):
    """How often the Office readers read a file: each wrapped, counting, and doing its work."""
    counted = {"read_pptx": 0, "read_xlsx": 0}
    for name in counted:
        reader = getattr(office, name)

        def counting(data, _reader=reader, _name=name):
            counted[_name] += 1
            return _reader(data)

        monkeypatch.setattr(office, name, counting)
    return counted


def test_the_view_of_a_deck_reads_the_file_once_and_keeps_it_beside_the_original(bob, reads, originals_dir):
    assert post_file(bob, "bounds.pptx", deck()).status_code == 201
    document = Document.objects.get(source="upload:bounds.pptx")
    reads["read_pptx"] = 0  # the upload read it
    url = f"/documents/{document.id}/original/view"
    first = signed_in(bob).get(f"{url}?slide=3")
    assert first.status_code == 200 and "90,000 euros" in first.content.decode()
    assert reads["read_pptx"] == 1
    second = signed_in(bob).get(f"{url}?slide=2")
    assert second.status_code == 200 and "Four engineers" in second.content.decode()
    assert signed_in(bob).get(f"{url}?slide=4").status_code == 404
    assert reads["read_pptx"] == 1
    assert (originals_dir / view_name(document.original.sha256)).is_file()


def test_the_view_of_a_workbook_reads_the_file_once_and_its_copy_goes_with_the_original(
    bob, reads, originals_dir, django_capture_on_commit_callbacks
):
    assert post_file(bob, "bounds.xlsx", workbook()).status_code == 201
    document = Document.objects.get(source="upload:bounds.xlsx")
    reads["read_xlsx"] = 0
    url = f"/documents/{document.id}/original/view"
    for query in ("sheet=Prices&row=4", "sheet=Summary", "sheet=Prices&row=2&to=3"):
        assert signed_in(bob).get(f"{url}?{query}").status_code == 200
    assert reads["read_xlsx"] == 1
    kept = originals_dir / view_name(document.original.sha256)
    assert kept.is_file()

    kept.write_bytes(kept.read_bytes()[:20])  # a write cut short: read again, and kept whole
    page = signed_in(bob).get(f"{url}?sheet=Prices&row=4").content.decode()
    assert '<tr id="row-4" class="cited">' in page and reads["read_xlsx"] == 2
    assert signed_in(bob).get(f"{url}?sheet=Prices").status_code == 200 and reads["read_xlsx"] == 2

    changed = Workbook()
    changed.active.append(["Quarter", "Revenue"])
    out = io.BytesIO()
    changed.save(out)
    with django_capture_on_commit_callbacks(execute=True):  # a changed file: the old original goes, its view too
        assert post_file(bob, "bounds.xlsx", out.getvalue()).status_code == 200  # the document, updated
    assert Document.objects.get(source="upload:bounds.xlsx").original.sha256 != document.original.sha256
    assert not kept.exists()


# --- A model server's error body ----------------------------------------------------------------------

SECRET = "upstream refused key sk-live-7f3a9c of tenant acme-prod at 10.20.4.7"


def asked(user, generator: str) -> dict:
    response = client_for(user).post(
        "/api/v1/query", {"question": QUESTION, "mode": "standard", "generator": generator}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.parametrize(
    "reply, note",
    [
        ((500, {"error": {"message": SECRET}}), "openai server answered HTTP 500"),
        ((401, SECRET.encode()), "openai server answered HTTP 401"),
        ((200, f'data: {{"error": {{"message": "{SECRET}"}}}}\n\n'.encode()), "the model server reported an error"),
        ((200, f"data: {SECRET}\n\n".encode()), "the model server sent what is not a chat-completions event"),
    ],
)
def test_an_openai_servers_error_body_goes_to_the_log_not_to_the_asker(charlie, caplog, reply, note):
    with (
        loopback.LoopbackServer(lambda method, path, query, body: reply) as server,
        override_settings(CAIRN_OPENAI_BASE_URL=server.url, CAIRN_OPENAI_MODEL="any"),
        caplog.at_level(logging.WARNING, logger="pipeline.generators"),
    ):
        body = asked(charlie, "openai")
    assert body["generator"] == "extractive" and "Röntgen" in body["answer"]
    assert f"openai unavailable, answered extractively instead: {note}" in body["notes"]
    assert "sk-live" not in json.dumps(body) and "acme-prod" not in json.dumps(body)
    assert "sk-live-7f3a9c" in caplog.text


def test_an_ollama_servers_error_body_goes_to_the_log_not_to_the_asker(charlie, caplog):
    with (
        loopback.LoopbackServer(lambda method, path, query, body: (500, {"error": SECRET})) as server,
        override_settings(OLLAMA_HOST=server.url),
        caplog.at_level(logging.WARNING, logger="pipeline.generators"),
    ):
        body = asked(charlie, "ollama")
    assert body["generator"] == "extractive" and "Röntgen" in body["answer"]
    assert "ollama unavailable, answered extractively instead: Ollama (llama3.2:3b) answered HTTP 500" in body["notes"]
    assert "sk-live" not in json.dumps(body)
    assert "sk-live-7f3a9c" in caplog.text
