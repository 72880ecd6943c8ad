"""OpenDocument, RTF, e-mail and legacy Office files are read into the same sections, lists, tables,
slides and sheets as Word, PowerPoint and Excel files; hostile files are refused fast, by name.

Every file is real: built here with python-docx, python-pptx, openpyxl and the standard library's
email package, then (for .odt .ods .odp .rtf .doc .ppt .xls) converted by LibreOffice itself.
LibreOffice (the Debian -nogui packages) is a test requirement: without it these tests skip, and
under CAIRN_CI=1 a skip fails the run."""

import io
import subprocess
import time
import zipfile
from email.message import EmailMessage
from pathlib import Path

import pytest
from docx import Document as WordDocument
from openpyxl import Workbook
from pptx import Presentation
from pptx.util import Inches

from corpus.models import Chunk, Document, Upload
from readers import legacy, locations
from readers.extract import ExtractedDocument, ExtractionError, content_problem, extract_bytes
from readers.formats import FORMATS
from tests.documents import Text, write_pdf_pages
from tests.test_office import post_file, zip_file

pytestmark = pytest.mark.django_db


# --- Files built with the Office libraries, converted by LibreOffice ---------------------------


def handbook_docx() -> bytes:
    document = WordDocument()
    document.core_properties.author = "Dana Whitlock"
    document.add_heading("Facilities handbook", 0)
    document.add_paragraph("This handbook covers keys, rooms and parking.")
    document.add_heading("Archive room", 1)
    document.add_paragraph("The Harbour Street archive room opens with door code 4471.")
    document.add_heading("Visiting hours", 2)
    document.add_paragraph("Visitors may enter between nine and four.")
    document.add_paragraph("Sign the archive log on entry", style="List Bullet")
    document.add_paragraph("Return the key to reception", style="List Bullet")
    document.add_heading("Room owners", 1)
    table = document.add_table(rows=3, cols=2)
    for row, cells in zip(table.rows, [("Room", "Owner"), ("4.12", "Dana Whitlock"), ("4.14", "Eli Moss")]):
        row.cells[0].text, row.cells[1].text = cells
    document.sections[0].header.paragraphs[0].text = "INTERNAL HEADER LINE"
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def deck_pptx() -> bytes:
    presentation = Presentation()
    first = presentation.slides.add_slide(presentation.slide_layouts[1])
    first.shapes.title.text = "Quarterly results"
    first.placeholders[1].text_frame.text = "Revenue grew twelve percent in the north region."
    first.notes_slide.notes_text_frame.text = "Thank the Lisbon team for the launch."
    second = presentation.slides.add_slide(presentation.slide_layouts[5])  # title only
    second.shapes.title.text = "Sales by region"
    table = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for (r, c), text in {(0, 0): "Region", (0, 1): "Sales", (1, 0): "North", (1, 1): "40 units"}.items():
        table.cell(r, c).text = text
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def prices_xlsx(rows: int = 120) -> bytes:
    """A sheet titled by a merged cell, its header on row 3, `rows` items below it (rows 4 on)."""
    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Prices"
    sheet["A1"] = "Price list 2026"
    sheet.merge_cells("A1:C1")
    sheet.append([])
    sheet.append(["Item", "Price", "Unit"])
    for n in range(1, rows + 1):
        sheet.append([f"Item {n}", n * 2, "each"])
    workbook.create_sheet("Parking").append(["Bay", "Holder"])
    workbook["Parking"].append(["B7", "Eli Moss"])
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def libreoffice_convert(folder: Path, name: str, data: bytes, target: str) -> bytes:
    """`data` (a file called `name`) as LibreOffice saves it in the format `target`."""
    program = legacy.soffice()
    if program is None:
        pytest.skip("LibreOffice is not installed (apt-get install libreoffice-writer-nogui ...)")
    source = folder / name
    source.write_bytes(data)
    subprocess.run(
        [program, f"-env:UserInstallation={(folder / 'profile').as_uri()}", "--headless", "--convert-to", target,
         "--outdir", str(folder / "out"), str(source)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return (folder / "out" / f"{source.stem}.{target.split(':')[0]}").read_bytes()


@pytest.fixture(scope="session")
def converted(tmp_path_factory) -> dict[str, bytes]:
    """Each source file as LibreOffice saves it: .odt .rtf .doc from Word, .odp .ppt from PowerPoint,
    .ods .xls from Excel. Converted once for the module (each conversion starts LibreOffice)."""
    folder = tmp_path_factory.mktemp("libreoffice")
    sources = {"handbook.docx": handbook_docx(), "results.pptx": deck_pptx(), "prices.xlsx": prices_xlsx()}
    targets = {
        "handbook.docx": ["odt", "rtf", "doc"],
        "results.pptx": ["odp", "ppt"],
        "prices.xlsx": ["ods", "xls"],
    }
    files = {}
    for name, kinds in targets.items():
        for kind in kinds:
            files[f"{Path(name).stem}.{kind}"] = libreoffice_convert(folder, name, sources[name], kind)
    return files


def extracted(name: str, data: bytes) -> ExtractedDocument:
    (document,) = extract_bytes(name, data, source=f"test:{name}")
    assert isinstance(document, ExtractedDocument)
    return document


def markers(text: str) -> list[dict]:
    return [found for line in text.split("\n") if (found := locations.parse(line))]


# --- OpenDocument -----------------------------------------------------------------------------


def test_an_odt_keeps_headings_at_their_outline_level_lists_tables_and_its_properties(bob, converted):
    response = post_file(bob, "handbook.odt", converted["handbook.odt"])
    assert response.status_code == 201, response.content
    document = Document.objects.get(source="upload:handbook.odt")
    assert document.title == "Facilities handbook" and document.mime_type == FORMATS[".odt"].mime_type
    assert document.metadata["author"] == "Dana Whitlock"
    assert document.metadata["created"].startswith("20") and document.metadata["modified"].startswith("20")
    text = extracted("handbook.odt", converted["handbook.odt"]).text
    assert "# Archive room" in text and "## Visiting hours" in text
    assert "- Sign the archive log on entry\n\n- Return the key to reception" in text
    assert "| Room | Owner |\n|---|---|\n| 4.12 | Dana Whitlock |" in text
    assert "INTERNAL HEADER LINE" not in text
    chunks = list(document.chunks.all())
    row = next(c for c in chunks if "Dana Whitlock" in c.text)
    assert "Room: 4.12; Owner: Dana Whitlock" in row.text


def test_each_odp_slide_is_a_section_with_its_marker_and_its_notes(converted):
    reading = extracted("results.odp", converted["results.odp"])
    assert reading.title == "Quarterly results" and reading.located
    assert markers(reading.text) == [{"slide": 1}, {"slide": 2}]
    assert "# Quarterly results" in reading.text and "Revenue grew twelve percent" in reading.text
    assert "Notes: Thank the Lisbon team for the launch." in reading.text
    assert "# Sales by region" in reading.text and "| North | 40 units |" in reading.text


def test_each_ods_sheet_is_a_section_its_title_line_a_heading_its_rows_in_numbered_groups(converted):
    reading = extracted("prices.ods", converted["prices.ods"])
    text = reading.text
    assert "# Prices\n\n## Price list 2026" in text
    assert markers(text) == [
        {"sheet": "Prices"},
        *({"sheet": "Prices", "rows": [n, n]} for n in range(3, 124)),
        {"sheet": "Parking"},
        {"sheet": "Parking", "rows": [1, 1]},
        {"sheet": "Parking", "rows": [2, 2]},
    ]
    assert "| Item | Price | Unit |" in text and "| Item 120 | 240 | each |" in text


def test_ods_rows_keep_their_header_across_row_markers_into_chunks(bob, converted, settings):
    settings.CAIRN_CHUNK_TOKENS, settings.CAIRN_CHUNK_OVERLAP_TOKENS = 64, 8
    response = post_file(bob, "prices.ods", converted["prices.ods"])
    assert response.status_code == 201, response.content
    chunks = list(Document.objects.get(source="upload:prices.ods").chunks.order_by("ordinal"))
    late = next(c for c in chunks if "Item: Item 110;" in c.text)
    assert "Item: Item 110; Price: 220; Unit: each" in late.text
    first, last = late.location["rows"]
    assert late.location["sheet"] == "Prices" and first <= 113 <= last  # Item 110 is on the sheet's row 113
    assert all(f"Item: Item {n - 3};" in late.text for n in range(first, last + 1))  # exactly the rows it holds
    assert late.heading == "prices › Price list 2026"  # the sheet is named as the file: one heading


# --- RTF and e-mail ---------------------------------------------------------------------------


def test_rtf_is_read_as_paragraphs_items_and_a_table(converted):
    reading = extracted("handbook.rtf", converted["handbook.rtf"])
    assert reading.mime_type == "application/rtf"
    assert "The Harbour Street archive room opens with door code 4471." in reading.text
    assert "- Sign the archive log on entry" in reading.text
    assert "| Room | Owner |\n|---|---|\n| 4.12 | Dana Whitlock |" in reading.text
    assert "rtf1" not in reading.text and "fonttbl" not in reading.text


def reply_message() -> bytes:
    message = EmailMessage()
    message["Subject"] = "Re: Archive room keys"
    message["From"] = "Dana Whitlock <dana@example.org>"
    message["To"] = "Eli Moss <eli@example.org>, facilities@example.org"
    message["Date"] = "Thu, 26 Nov 2026 09:30:00 +0100"
    message.set_content(
        "The archive room key now hangs in the red cabinet.\n"
        "Sign for it at reception.\n\n"
        "- cabinet code 2210\n- return by 17:00\n\n"
        "On Wed, 25 Nov 2026 at 16:02, Eli Moss <eli@example.org>\nwrote:\n"
        "> Where is the archive room key kept now?\n> The old hook is empty.\n"
    )
    message.add_attachment(b"%PDF-1.4 ...", maintype="application", subtype="pdf", filename="key-log.pdf")
    return message.as_bytes()


def test_an_email_is_its_subject_its_senders_and_its_own_words_without_the_quoted_reply(bob):
    response = post_file(bob, "keys.eml", reply_message(), content_type="message/rfc822")
    assert response.status_code == 201, response.content
    document = Document.objects.get(source="upload:keys.eml")
    assert document.title == "Re: Archive room keys"
    assert document.metadata["from"] == "Dana Whitlock <dana@example.org>"
    assert "eli@example.org" in document.metadata["to"] and "facilities@example.org" in document.metadata["to"]
    assert document.metadata["date"] == "2026-11-26T09:30:00+01:00"
    assert document.metadata["attachments"] == ["key-log.pdf"]
    text = extracted("keys.eml", reply_message()).text
    assert text.startswith("The archive room key now hangs in the red cabinet. Sign for it at reception.")
    assert "- cabinet code 2210\n\n- return by 17:00" in text
    assert "old hook" not in text and "wrote:" not in text and "Where is" not in text


def test_an_outlook_reply_loses_the_original_message_and_an_html_only_mail_is_read_as_html():
    outlook = EmailMessage()
    outlook["Subject"], outlook["From"] = "RE: Parking", "facilities@example.org"
    outlook.set_content(
        "Bay B7 is yours from Monday.\n\n________________________________\n"
        "From: Eli Moss <eli@example.org>\nSent: Tuesday, 24 November 2026 10:00\nTo: Facilities\n"
        "Subject: Parking\n\nCan I have a parking bay?\n"
    )
    assert extracted("parking.eml", outlook.as_bytes()).text == "Bay B7 is yours from Monday."
    forwarded = EmailMessage()
    forwarded["Subject"] = "FW: Badges"
    forwarded.set_content("Badges are blue on Fridays.\n\n-----Original Message-----\nFrom: HR\nOld news.\n")
    assert extracted("badges.eml", forwarded.as_bytes()).text == "Badges are blue on Fridays."
    html = EmailMessage()
    html["Subject"] = "Lunch"
    html.set_content(
        "<html><body><h1>Canteen</h1><p>The canteen opens at noon.</p>"
        '<blockquote type="cite">When does it open?</blockquote></body></html>',
        subtype="html",
    )
    text = extracted("lunch.eml", html.as_bytes()).text
    assert "# Canteen" in text and "The canteen opens at noon." in text and "When does" not in text


def test_the_documents_attached_to_an_email_are_read_into_it_and_a_broken_one_is_named(bob, tmp_path, settings):
    message = EmailMessage()
    message["Subject"], message["From"] = "Handbook and budget", "dana@example.org"
    message.set_content("Both files are attached. The budget closes on Friday.\n")
    budget = write_pdf_pages(tmp_path / "budget.pdf", [[
        Text(72, 72, "Travel budget", 16),
        Text(72, 110, "Each team may spend 4,200 euros on travel this quarter."),
    ]])  # fmt: skip
    message.add_attachment(budget.read_bytes(), maintype="application", subtype="pdf", filename="budget.pdf")
    message.add_attachment(handbook_docx(), maintype="application", subtype="octet-stream", filename="handbook.docx")
    message.add_attachment(b"\x89PNG\r\n\x1a\n", maintype="image", subtype="png", filename="logo.png")
    message.add_attachment(b"%PDF-1.4 cut short", maintype="application", subtype="pdf", filename="minutes.pdf")
    forwarded = EmailMessage()
    forwarded["Subject"], forwarded["From"] = "Parking", "eli@example.org"
    forwarded.set_content("Bay B7 is free from Monday.\n")
    message.add_attachment(forwarded)

    document = extracted("handbook.eml", message.as_bytes())
    blocks = document.text.split("\n\n")
    assert blocks[:4] == [
        "Both files are attached. The budget closes on Friday.",
        "# Attachment: budget.pdf",
        "## Travel budget",  # the attachment's own headings one level down
        "Each team may spend 4,200 euros on travel this quarter.",
    ]
    assert "# Attachment: handbook.docx" in blocks and "## Facilities handbook" in blocks
    assert "The Harbour Street archive room opens with door code 4471." in blocks
    assert blocks[-2:] == ["# Attachment: Parking.eml", "Bay B7 is free from Monday."]
    assert not document.located and locations.without_markers(document.text) == document.text
    assert document.metadata["attachments"] == [
        "budget.pdf",
        "handbook.docx",
        "logo.png",
        "minutes.pdf",
        "message/rfc822",
    ]
    assert document.metadata["attachments_read"] == ["budget.pdf", "handbook.docx", "Parking.eml"]
    assert list(document.metadata["attachments_unread"]) == ["minutes.pdf"]
    assert "cannot read PDF" in document.metadata["attachments_unread"]["minutes.pdf"]

    settings.CAIRN_CHUNK_TOKENS, settings.CAIRN_CHUNK_OVERLAP_TOKENS = 32, 8  # a chunk per section here
    response = post_file(bob, "handbook.eml", message.as_bytes(), content_type="message/rfc822")
    assert response.status_code == 201, response.content
    chunk = Chunk.objects.get(document__source="upload:handbook.eml", text__contains="4,200 euros")
    assert chunk.heading == "Handbook and budget › Attachment: budget.pdf › Travel budget"


# --- Legacy Office files, through LibreOffice --------------------------------------------------


def test_doc_ppt_and_xls_are_converted_by_libreoffice_and_read_as_their_office_forms(bob, converted):
    response = post_file(bob, "handbook.doc", converted["handbook.doc"], content_type="application/msword")
    assert response.status_code == 201, response.content
    document = Document.objects.get(source="upload:handbook.doc")
    assert document.title == "Facilities handbook" and document.mime_type == "application/msword"
    assert document.metadata["converted_by"] == "LibreOffice" and document.metadata["author"] == "Dana Whitlock"
    text = extracted("handbook.doc", converted["handbook.doc"]).text
    assert "# Archive room" in text and "## Visiting hours" in text and "| 4.12 | Dana Whitlock |" in text
    deck = extracted("results.ppt", converted["results.ppt"])
    assert markers(deck.text)[:2] == [{"slide": 1}, {"slide": 2}]
    assert "Notes: Thank the Lisbon team for the launch." in deck.text
    sheet = extracted("prices.xls", converted["prices.xls"])
    assert {"sheet": "Prices", "rows": [53, 53]} in markers(sheet.text) and "## Price list 2026" in sheet.text


def test_without_libreoffice_a_legacy_file_says_what_to_install(converted, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # a machine where LibreOffice is not installed
    with pytest.raises(ExtractionError, match=r"install LibreOffice \(libreoffice-writer-nogui\) to read \.doc files"):
        extract_bytes("handbook.doc", converted["handbook.doc"], source="test")
    with pytest.raises(ExtractionError, match=r"libreoffice-calc-nogui\) to read \.xls files"):
        extract_bytes("prices.xls", converted["prices.xls"], source="test")


def test_ole2_bytes_are_read_under_a_legacy_name_only(converted):
    assert content_problem("handbook.doc", converted["handbook.doc"]) is None
    assert "an OLE2 file" in content_problem("handbook.txt", converted["handbook.doc"])
    assert "upload it as .doc" in content_problem("handbook.xls", converted["handbook.doc"])
    assert "upload it as .doc" in content_problem("handbook.docx", converted["handbook.doc"])


# --- Macro-enabled files ----------------------------------------------------------------------


def test_macro_enabled_files_are_read_and_their_macros_never_run(converted, tmp_path):
    docm = libreoffice_convert(tmp_path, "handbook.docx", handbook_docx(), "docm:MS Word 2007 XML VBA")
    reading = extracted("handbook.docm", docm)
    assert reading.metadata["macros"] == "not run" and "door code 4471" in reading.text
    xlsm = libreoffice_convert(tmp_path, "prices.xlsx", prices_xlsx(3), "xlsm:Calc MS Excel 2007 VBA XML")
    sheet = extracted("prices.xlsm", xlsm)
    assert sheet.metadata["macros"] == "not run" and "| Item 3 | 6 | each |" in sheet.text
    pptm = libreoffice_convert(tmp_path, "results.pptx", deck_pptx(), "pptm:Impress MS PowerPoint 2007 XML VBA")
    assert extracted("results.pptm", pptm).metadata["macros"] == "not run"


# --- Hostile files: refused in under a second, by name and reason ------------------------------

_LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa">'
    + b"".join(f'<!ENTITY {chr(98 + n)} "{("&" + chr(97 + n) + ";") * 10}">'.encode() for n in range(9))
    + b"]>"
)  # entity j expands to 10^10 characters


def with_entities(package: bytes, part: bytes | str, marker: bytes) -> bytes:
    """`package` with an entity-expansion bomb declared in `part`, the text `marker` replaced by it."""
    source = zipfile.ZipFile(io.BytesIO(package))
    entries = {name: source.read(name) for name in source.namelist()}
    xml = entries[part]
    body = xml[xml.index(b"?>") + 2 :] if xml.startswith(b"<?xml") else xml
    entries[part] = _LAUGHS + body.replace(marker, b"&j;", 1)
    return zip_file(entries)


def encrypted_docx() -> bytes:
    from msoffcrypto.format.ooxml import OOXMLFile

    out = io.BytesIO()
    OOXMLFile(io.BytesIO(handbook_docx())).encrypt("s3cret", out)
    return out.getvalue()


def hostile_files(converted) -> list[tuple[str, bytes, str]]:
    odt, docx = converted["handbook.odt"], handbook_docx()
    odf_bomb = zip_file({"mimetype": FORMATS[".odt"].mime_type.encode(), "content.xml": b"\x00" * 30_000_000})
    odf_manifest = (
        b'<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
        b'<manifest:file-entry manifest:full-path="content.xml"><manifest:encryption-data/></manifest:file-entry>'
        b"</manifest:manifest>"
    )
    locked_odt = zip_file(
        {
            "mimetype": FORMATS[".odt"].mime_type.encode(),
            "META-INF/manifest.xml": odf_manifest,
            "content.xml": b"\x9c\x11",
        }
    )
    return [
        ("laughs.docx", with_entities(docx, "word/document.xml", b"Archive room"), "entity-expansion"),
        ("laughs.odt", with_entities(odt, "content.xml", b"Archive room"), "entity-expansion"),
        ("bomb.odt", odf_bomb, "more than 100:1 (a zip bomb?)"),
        ("bomb.xlsx", zip_file({"[Content_Types].xml": b"spreadsheetml", "xl/a.xml": b" " * 30_000_000}), "zip bomb"),
        ("locked.docx", encrypted_docx(), "password-protected Word document: remove the password and upload it again"),
        ("locked.odt", locked_odt, "password-protected OpenDocument text: remove the password"),
        ("report.docx", b"%PDF-1.7\n" + bytes(200), "not a Word document: the content is a PDF document"),
        ("handbook.odt", docx, "not an OpenDocument text (no application/vnd.oasis.opendocument.text mimetype entry): "
         "it is a Word document, upload it as .docx"),
        ("cut.docx", docx[: len(docx) // 2], "not a Word document: a damaged ZIP archive, cut short"),
        ("cut.ods", converted["prices.ods"][:4000], "not an OpenDocument spreadsheet: a damaged ZIP archive"),
        ("cut.doc", converted["handbook.doc"][:3000], "not a Word 97-2003 document: a damaged OLE2 compound file"),
        ("sheet.doc", prices_xlsx(3), "not a Word 97-2003 document: the content is a ZIP package"),
        ("deck.xls", converted["results.ppt"], "it is a PowerPoint 97-2003 presentation, upload it as .ppt"),
        ("letter.eml", b"Dear Dana,\nthe keys are ready.\n", "not an e-mail message"),
        ("letter.rtf", b"Plain text with an .rtf name.\n", "not an RTF document"),
    ]  # fmt: skip


def test_every_hostile_file_is_refused_in_under_a_second_naming_the_reason(converted):
    for name, data, reason in hostile_files(converted):
        started = time.perf_counter()
        with pytest.raises(ExtractionError) as refused:
            extract_bytes(name, data, source=f"test:{name}")
        elapsed = time.perf_counter() - started
        assert reason in str(refused.value), (name, str(refused.value))
        assert elapsed < 1.0, f"{name} took {elapsed:.2f} s to refuse"


def test_a_password_protected_upload_is_a_400_naming_the_file(bob):
    started = time.perf_counter()
    response = post_file(bob, "budget.docx", encrypted_docx())
    assert response.status_code == 400, response.content
    assert time.perf_counter() - started < 1.0
    assert response.json()["file"][0] == (
        "budget.docx: password-protected Word document: remove the password and upload it again"
    )
    assert Upload.objects.get(name="budget.docx").status == Upload.Status.FAILED
    assert not Document.objects.filter(source="upload:budget.docx").exists()
