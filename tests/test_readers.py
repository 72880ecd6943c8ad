"""The readers' one table of formats (readers/formats.py): upload, ingestion, an e-mail's
attachments and the sources' connectors consult it alone, so a new format is a reader and a row;
reStructuredText is read that way (docutils), its file-reading directives off."""

import time
from email.message import EmailMessage
from pathlib import Path

import pytest

from corpus.models import Chunk, Document
from readers import restructuredtext
from readers.blocks import parse_blocks
from readers.extract import ExtractionError, content_problem, discover_files, extract_bytes
from readers.formats import FORMATS, Format, text_check
from readers.reading import Reading
from sources.connectors.base import reader_name
from tests.test_office import post_file

pytestmark = pytest.mark.django_db

RUNBOOK = """\
=================
Backup procedures
=================

Nightly backups
===============

The backup job runs at 02:00 and keeps **fourteen days** of archives.

- Archives live in ``/srv/backup``.
- A restore needs an approved change ticket.

Retention
---------

keep_days
   How many days of archives the job keeps.

.. code-block:: sh

   backup --all --verify

.. include:: {secret}

.. raw:: html

   <script>alert("raw")</script>

+--------+-------+
| Tier   | Days  |
+========+=======+
| gold   | 30    |
+--------+-------+
"""


def test_restructuredtext_is_read_as_sections_items_terms_code_and_tables(tmp_path):
    secret = tmp_path / "server-secret.txt"
    secret.write_text("The database password is hunter2.")
    data = RUNBOOK.format(secret=secret).encode()
    (document,) = extract_bytes("runbook.rst", data, source="runbook.rst")
    assert document.title == "Backup procedures" and document.mime_type == "text/x-rst"
    blocks = [(b.kind, b.text) for b in parse_blocks(document.text)]
    assert ("heading", "Nightly backups") in blocks and ("heading", "Retention") in blocks
    assert ("paragraph", "The backup job runs at 02:00 and keeps fourteen days of archives.") in blocks
    assert ("item", "A restore needs an approved change ticket.") in blocks
    assert ("definition", "How many days of archives the job keeps.") in blocks
    assert ("code", "backup --all --verify") in blocks
    assert ("row", "Tier: gold; Days: 30") in blocks
    # The directives that would read a file on the server, or pass markup through, do nothing.
    assert "hunter2" not in document.text and "<script>" not in document.text and "alert" not in document.text


def test_an_rst_upload_is_stored_and_chunked_and_a_binary_one_refused(bob):
    response = post_file(bob, "runbook.rst", RUNBOOK.format(secret="/etc/hostname").encode(), "text/x-rst")
    assert response.status_code == 201, response.content
    document = Document.objects.get(pk=response.json()["documents"][0]["id"])
    assert document.mime_type == "text/x-rst"
    assert Chunk.objects.filter(document=document, text__contains="approved change ticket").exists()
    refused = post_file(bob, "runbook.rst", b"\x89PNG\r\n\x1a\n" + bytes(200), "text/x-rst")
    assert refused.status_code == 400 and "runbook.rst" in str(refused.json()["file"])


def test_no_docutils_configuration_file_turns_file_insertion_back_on(bob, monkeypatch, tmp_path):
    # docutils reads ./docutils.conf (and /etc/docutils.conf, ~/.docutils) over the settings it is
    # given: one in the server's working folder would let an upload include the server's files.
    secret = tmp_path / "server-secret.txt"
    secret.write_text("The database password is hunter2.")
    (tmp_path / "docutils.conf").write_text(
        "[general]\nfile_insertion_enabled: yes\nraw_enabled: yes\ninput_encoding: utf-8\n"
    )
    monkeypatch.chdir(tmp_path)
    response = post_file(bob, "runbook.rst", RUNBOOK.format(secret=secret).encode(), "text/x-rst")
    assert response.status_code == 201, response.content
    document = Document.objects.get(pk=response.json()["documents"][0]["id"])
    stored = " ".join(Chunk.objects.filter(document=document).values_list("text", flat=True))
    assert "approved change ticket" in stored
    assert "hunter2" not in stored and "alert" not in stored


def test_hostile_restructuredtext_is_read_or_refused_within_its_time(monkeypatch):
    # docutils is quadratic on some inputs; it parses in a process of its own, killed at its limit.
    monkeypatch.setattr(restructuredtext, "PARSE_TIMEOUT_SECONDS", 2.0)
    deep = "".join("  " * depth + "- level\n\n" for depth in range(400))
    refused = []
    for text in (deep, "`" * 100_000, ".. " * 50_000, "=\n" * 50_000, "|a|\n" * 20_000):
        started = time.monotonic()
        try:
            extract_bytes("hostile.rst", text.encode(), source="hostile.rst")
        except ExtractionError as exc:
            refused.append(str(exc))
        assert time.monotonic() - started < 3.0
    assert "the reStructuredText parser did not finish within 2 s; it is refused" in refused


def test_a_new_format_is_one_reader_and_one_row(bob, monkeypatch, tmp_path):
    """A format the table gains is read everywhere files come in: an upload, a folder ingested,
    an e-mail's attachment and a source's items, with nothing else changed."""

    def read_org(file) -> Reading:
        title, _, body = file.text.partition("\n")
        return Reading(body.replace("* ", "## "), title.removeprefix("#+TITLE: "))

    org = "#+TITLE: Parking rules\n\n* Visitors\n\nVisitors park on level two and show the ticket at the gate.\n"
    assert reader_name("rules.org") is None and content_problem("rules.org", org.encode()) is not None
    monkeypatch.setitem(FORMATS, ".org", Format("an Org file", "text/org", text_check, read_org))

    assert reader_name("rules.org") == "rules.org" and content_problem("rules.org", org.encode()) is None
    (tmp_path / "rules.org").write_text(org)
    assert discover_files([tmp_path]) == ([tmp_path / "rules.org"], [])
    response = post_file(bob, "rules.org", org.encode(), "text/plain")
    assert response.status_code == 201, response.content
    document = Document.objects.get(pk=response.json()["documents"][0]["id"])
    assert document.title == "Parking rules" and document.mime_type == "text/org"

    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "dana@example.org", "all@example.org", "Parking"
    message.set_content("The new parking rules are attached.")
    message.add_attachment(org.encode(), maintype="text", subtype="plain", filename="rules.org")
    (mail,) = extract_bytes("parking.eml", message.as_bytes(), source="parking.eml")
    assert "# Attachment: rules.org" in mail.text and "level two" in mail.text
    assert mail.metadata["attachments_read"] == ["rules.org"]


def test_every_format_names_itself_and_its_mime_type():
    for suffix, form in FORMATS.items():
        assert suffix.startswith(".") and suffix == suffix.lower()
        assert form.what and "/" in form.mime_type and callable(form.check)
    assert all(FORMATS[s].read is not None for s in FORMATS if s != ".jsonl")
    assert Path("x.RST").suffix.lower() in FORMATS
