"""Word, PowerPoint and Excel files and CSV/TSV tables are read into sections and blocks: a heading
heads its chunks, a table row keeps its header, a slide's notes are marked. The files are built
here with the libraries that read them. A damaged package, a lying suffix or a zip bomb is a 400
naming the file, never a 500."""

import io
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from docx import Document as WordDocument
from openpyxl import Workbook
from pptx import Presentation
from pptx.util import Inches

from corpus.models import Chunk, Document, Upload
from readers import blocks, locations, office
from readers.blocks import parse_blocks
from readers.extract import ExtractedDocument, ExtractionError, extract_bytes
from readers.formats import FORMATS
from tests.conftest import client_for

pytestmark = pytest.mark.django_db

DOCX = FORMATS[".docx"].mime_type


def word_file() -> bytes:
    document = WordDocument()
    document.add_heading("Facilities handbook", 0)  # the Title style
    document.add_paragraph("This handbook covers keys, rooms and parking.")
    document.add_heading("Archive room", 1)
    document.add_paragraph("The Harbour Street archive room opens with door code 4471.")
    document.add_paragraph("Sign the archive log on entry", style="List Bullet")
    document.add_heading("Room owners", 1)
    table = document.add_table(rows=3, cols=2)
    for row, cells in zip(
        table.rows, [("Room", "Owner"), ("4.12", "Dana Whitlock"), ("4.14", "Eli Moss")], strict=True
    ):
        row.cells[0].text, row.cells[1].text = cells
    document.sections[0].header.paragraphs[0].text = "INTERNAL HEADER LINE"
    document.sections[0].footer.paragraphs[0].text = "Page footer line"
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def slides_file() -> bytes:
    presentation = Presentation()
    first = presentation.slides.add_slide(presentation.slide_layouts[1])  # title and content
    first.shapes.title.text = "Quarterly results"
    first.placeholders[1].text_frame.text = "Revenue grew twelve percent in the north region."
    first.notes_slide.notes_text_frame.text = "Thank the Lisbon team for the launch."
    second = presentation.slides.add_slide(presentation.slide_layouts[6])  # blank: no title
    table = second.shapes.add_table(2, 2, Inches(1), Inches(1), Inches(4), Inches(1)).table
    for (r, c), text in {(0, 0): "Region", (0, 1): "Sales", (1, 0): "North", (1, 1): "40 units"}.items():
        table.cell(r, c).text = text
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def workbook_file() -> bytes:
    workbook = Workbook()
    staff = workbook.active
    staff.title = "Staff"
    staff.append([])  # the header is the first row with text, not row 1
    staff.append(["Name", "Desk", "Total"])
    staff.append(["Dana Whitlock", "4.12", "=1+2"])  # openpyxl stores no cached value for a formula
    staff.append(["Eli Moss", 7.0, 5])
    workbook.create_sheet("Parking").append(["Bay", "Holder"])
    workbook["Parking"].append(["B7", "Eli Moss"])
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def zip_file(entries: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return out.getvalue()


def extracted(name: str, data: bytes) -> ExtractedDocument:
    (document,) = extract_bytes(name, data, source=f"test:{name}")
    assert isinstance(document, ExtractedDocument)
    return document


def post_file(user, name: str, data: bytes, content_type: str = "application/octet-stream"):
    upload = SimpleUploadedFile(name, data, content_type=content_type)
    return client_for(user).post("/api/v1/documents", {"collection": "demo", "file": upload}, format="multipart")


@pytest.fixture
def small_chunks(settings):
    """Chunks of 32 tokens: each small section of these small files starts a chunk of its own."""
    settings.CAIRN_CHUNK_TOKENS, settings.CAIRN_CHUNK_OVERLAP_TOKENS = 32, 8


def chunks_of(source: str) -> list[Chunk]:
    return list(Document.objects.get(source=source).chunks.order_by("ordinal"))


def chunk_with(chunks: list[Chunk], words: str) -> Chunk:
    found = [chunk for chunk in chunks if words in chunk.text]
    assert found, f"{words!r} in none of {[c.text for c in chunks]}"
    return found[0]


def test_word_headings_head_their_chunks_and_table_rows_keep_their_header(bob, small_chunks):
    response = post_file(bob, "handbook.docx", word_file(), content_type=DOCX)
    assert response.status_code == 201, response.content
    assert response.json()["documents"][0]["title"] == "Facilities handbook"
    document = Document.objects.get(source="upload:handbook.docx")
    assert document.mime_type == DOCX
    chunks = chunks_of("upload:handbook.docx")
    assert chunk_with(chunks, "door code 4471").heading == "Facilities handbook › Archive room"
    assert "Sign the archive log on entry" in chunk_with(chunks, "archive log").text
    row = chunk_with(chunks, "Dana Whitlock")
    assert row.heading == "Facilities handbook › Room owners"
    assert "Room: 4.12; Owner: Dana Whitlock" in row.text
    everything = " ".join(c.text for c in chunks)
    assert "INTERNAL HEADER LINE" not in everything and "footer" not in everything


def test_slides_are_sections_with_their_tables_and_marked_notes(bob, small_chunks):
    response = post_file(bob, "results.pptx", slides_file())
    assert response.status_code == 201, response.content
    chunks = chunks_of("upload:results.pptx")
    revenue = chunk_with(chunks, "Revenue grew")
    assert revenue.heading == "Quarterly results"  # the first slide's title is the presentation's
    assert "Notes: Thank the Lisbon team for the launch." in chunk_with(chunks, "Lisbon").text
    table = chunk_with(chunks, "North")
    assert table.heading == "Quarterly results › Slide 2" and "Region: North; Sales: 40 units" in table.text


def test_each_sheet_is_a_section_its_header_over_its_rows_and_an_uncached_formula_is_empty(bob, small_chunks):
    response = post_file(bob, "desks.xlsx", workbook_file())
    assert response.status_code == 201, response.content
    chunks = chunks_of("upload:desks.xlsx")
    dana = chunk_with(chunks, "Dana Whitlock")
    assert dana.heading == "desks › Staff"
    assert "Name: Dana Whitlock; Desk: 4.12" in dana.text and "=1+2" not in dana.text
    assert "Name: Eli Moss; Desk: 7; Total: 5" in chunk_with(chunks, "Desk: 7").text
    bay = chunk_with(chunks, "B7")
    assert bay.heading == "desks › Parking" and "Bay: B7; Holder: Eli Moss" in bay.text


def test_csv_and_tsv_rows_are_written_under_their_header(bob):
    csv_data = b'Item,Limit\nidentifier length,"63 bytes, plain ASCII"\nrows per table,unbounded\n'
    response = post_file(bob, "limits.csv", csv_data, content_type="text/csv")
    assert response.status_code == 201, response.content
    text = " ".join(c.text for c in chunks_of("upload:limits.csv"))
    assert "Item: identifier length; Limit: 63 bytes, plain ASCII" in text
    assert "Item: rows per table; Limit: unbounded" in text
    tsv = extracted("codes.tsv", b"Door\tCode\nArchive\t4471\n")
    assert tsv.mime_type == "text/tab-separated-values" and tsv.title == "codes"
    assert tsv.text == "\n".join(
        [locations.sheet("codes", 1), "| Door | Code |", "|---|---|", locations.sheet("codes", 2), "| Archive | 4471 |"]
    )


def test_a_long_csv_has_its_rows_numbered_as_a_spreadsheet_numbers_its_records():
    rows = "".join(f"Desk {n},Floor {n % 4}\n" for n in range(1, 121))
    text = extracted("desks.csv", f"Desk,Floor\n{rows}".encode()).text
    assert [locations.parse(line) for line in text.split("\n") if line.startswith(locations.MARK)] == [
        {"sheet": "desks", "rows": [n, n]} for n in range(1, 122)
    ]
    assert text.count("| Desk | Floor |") == 1  # one header: parse_blocks keeps it across the markers
    rows_read = [b.text for b in parse_blocks(text) if b.kind == "row"]
    assert len(rows_read) == 120 and rows_read[-1] == "Desk: Desk 120; Floor: Floor 0"


def test_cell_text_cannot_break_the_table_or_open_structure():
    # A pipe in a cell is not a column; a short row is padded to the widest; empty rows go.
    assert blocks.table_lines([["a|b"], [], [None, None], ["1", "2"]]) == ["| a/b |  |", "|---|---|", "| 1 | 2 |"]
    assert blocks.plain_line("# not a heading") == "not a heading"
    assert blocks.plain_line("```python") == "python"


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("notes.docx", b"Plain text saved with a .docx name.\n", "not a Word document"),
        ("broken.docx", b"PK\x03\x04" + bytes(60), "a damaged ZIP archive"),
        ("other.docx", zip_file({"readme.txt": b"hello"}), "no [Content_Types].xml"),
        (
            "sheet.pptx",
            workbook_file(),
            "not a PowerPoint presentation (it holds no presentationml part): it is an Excel workbook, upload it as .xlsx",
        ),
        (
            "damaged.docx",
            zip_file({"[Content_Types].xml": b"<Types>wordprocessingml</Types>", "word/document.xml": b"<w:document"}),
            "cannot read a Word document",
        ),
    ],
)
def test_a_file_that_is_not_the_package_its_name_claims_is_a_400_naming_it(bob, name, data, reason):
    response = post_file(bob, name, data)
    assert response.status_code == 400, response.content
    message = response.json()["file"][0]
    assert message.startswith(f"{name}: ") and reason in message
    assert Upload.objects.get(name=name).status == Upload.Status.FAILED
    assert not Document.objects.filter(source=f"upload:{name}").exists()


def test_a_zip_bomb_is_refused_from_its_directory_before_anything_unpacks(bob, monkeypatch):
    bomb = zip_file({"[Content_Types].xml": b"wordprocessingml", "word/document.xml": b"\x00" * 3_000_000})
    assert len(bomb) < 20_000
    monkeypatch.setattr(office, "MAX_ZIP_UNCOMPRESSED_BYTES", 1_000_000)
    response = post_file(bob, "bomb.docx", bomb)
    assert response.status_code == 400
    message = response.json()["file"][0]
    assert message.startswith("bomb.docx: the ZIP archive unpacks to 3000") and "zip bomb" in message
    monkeypatch.setattr(office, "MAX_ZIP_ENTRIES", 5)
    many = zip_file({f"part{n}.xml": b"x" for n in range(6)})
    with pytest.raises(ExtractionError, match="holds 6 entries; the limit is 5"):
        extract_bytes("many.xlsx", many, source="test")


def test_a_question_about_a_word_document_is_answered_from_it(tmp_path, charlie):
    path = tmp_path / "handbook.docx"
    path.write_bytes(word_file())
    call_command("ingest", str(path), collection="office", public=True, verbosity=0)
    response = client_for(charlie).post(
        "/api/v1/query",
        {"question": "What is the door code of the Harbour Street archive room?", "mode": "fast", "top_k": 5,
         "collections": ["office"]},
        format="json",
    )  # fmt: skip
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["found"] and "4471" in body["answer"]
    cited = [e for e in body["evidence"] if e["cited"]]
    assert cited and all(e["source"].endswith("handbook.docx") for e in cited)


def test_a_sheet_whose_cells_sit_far_apart_is_refused_not_padded_for_minutes(bob):
    workbook = Workbook()
    for sheet in [workbook.active, *(workbook.create_sheet(f"Far {n}") for n in range(3))]:
        sheet["A1"], sheet["XFD1048576"] = "Header", "far away"  # a million empty rows, 16,384 columns
    out = io.BytesIO()
    workbook.save(out)
    assert len(out.getvalue()) < 10_000
    response = post_file(bob, "far.xlsx", out.getvalue())
    assert response.status_code == 400
    assert response.json()["file"][0] == (
        f"far.xlsx: the workbook holds more than {office.MAX_WORKBOOK_CELLS} cells (empty ones counted)"
    )


# --- Word details: tracked changes, notes, outline levels --------------------------------------

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def word_with_changes_and_notes() -> bytes:
    """A Word file with a tracked insertion and deletion, a footnote and an endnote (their parts
    added through python-docx's package API, as Word lays them out), a paragraph whose own outline
    level makes it a heading and one whose custom style's outline level does."""
    from docx.enum.style import WD_STYLE_TYPE
    from docx.opc.constants import CONTENT_TYPE as CT
    from docx.opc.constants import RELATIONSHIP_TYPE as RT
    from docx.opc.packuri import PackURI
    from docx.opc.part import Part
    from docx.oxml import parse_xml

    document = WordDocument()
    changed = document.add_paragraph("The archive opens at ")
    changed._p.append(
        parse_xml(
            f'<w:ins xmlns:w="{W}" w:id="1" w:author="Eli" w:date="2026-11-20T10:00:00Z"><w:r><w:t>nine</w:t></w:r></w:ins>'
        )
    )
    changed._p.append(
        parse_xml(
            f'<w:del xmlns:w="{W}" w:id="2" w:author="Eli" w:date="2026-11-20T10:00:00Z">'
            "<w:r><w:delText>eight</w:delText></w:r></w:del>"
        )
    )
    changed.add_run(" on weekdays.")
    chapter = document.styles.add_style("Chapter", WD_STYLE_TYPE.PARAGRAPH)
    chapter.element.get_or_add_pPr().append(parse_xml(f'<w:outlineLvl xmlns:w="{W}" w:val="0"/>'))
    document.add_paragraph("Keys and badges", style="Chapter")
    outlined = document.add_paragraph("Lost badges")
    outlined._p.get_or_add_pPr().append(parse_xml(f'<w:outlineLvl xmlns:w="{W}" w:val="1"/>'))
    cited = document.add_paragraph("A lost badge is blocked within the hour")
    cited._p.append(parse_xml(f'<w:r xmlns:w="{W}"><w:footnoteReference w:id="1"/></w:r>'))
    cited.add_run(" and replaced the next day")
    cited._p.append(parse_xml(f'<w:r xmlns:w="{W}"><w:endnoteReference w:id="1"/></w:r>'))
    cited.add_run(".")
    document.add_paragraph("Badges are blue on Fridays.")
    for kind, content_type, reltype, text in [
        ("footnote", CT.WML_FOOTNOTES, RT.FOOTNOTES, "Call security on extension 5100."),
        ("endnote", CT.WML_ENDNOTES, RT.ENDNOTES, "Replacement badges cost ten euros."),
    ]:
        xml = (
            f'<w:{kind}s xmlns:w="{W}"><w:{kind} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r>'
            f'</w:p></w:{kind}><w:{kind} w:id="1"><w:p><w:r><w:{kind}Ref/></w:r><w:r><w:t xml:space="preserve"> '
            f"{text}</w:t></w:r></w:p></w:{kind}></w:{kind}s>"
        )
        part = Part(PackURI(f"/word/{kind}s.xml"), content_type, xml.encode(), document.part.package)
        document.part.relate_to(part, reltype)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_word_tracked_changes_read_as_accepted_notes_follow_their_paragraph_and_outline_levels_head():
    text = extracted("badges.docx", word_with_changes_and_notes()).text
    assert "The archive opens at nine on weekdays." in text and "eight" not in text
    assert "# Keys and badges" in text and "## Lost badges" in text
    assert (
        "A lost badge is blocked within the hour[1] and replaced the next day[1].\n\n"
        "Footnote 1: Call security on extension 5100.\n\n"
        "Endnote 1: Replacement badges cost ten euros.\n\n"
        "Badges are blue on Fridays."
    ) in text


def test_a_workbook_title_line_is_a_heading_and_the_header_is_the_row_below_it(bob, small_chunks):
    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Prices"
    sheet["A2"] = "Price list 2026"
    sheet.merge_cells("A2:C2")
    sheet.append(["Item", "Price", "Unit"])
    for n in range(1, 61):
        sheet.append([f"Item {n}", n * 2, "each"])
    sheet.append([])
    sheet.append(["Item 61", 122, "box"])  # after an empty row: still the table's, at its real row
    out = io.BytesIO()
    workbook.save(out)
    text = extracted("prices.xlsx", out.getvalue()).text
    assert "# Prices\n\n## Price list 2026" in text
    found = [locations.parse(line) for line in text.split("\n") if line.startswith(locations.MARK)]
    numbers = [n for n in range(3, 66) if n != 64]  # the header is row 3; row 64 is empty
    assert found == [{"sheet": "Prices"}, *({"sheet": "Prices", "rows": [n, n]} for n in numbers)]
    response = post_file(bob, "prices.xlsx", out.getvalue())
    assert response.status_code == 201, response.content
    last = chunk_with(chunks_of("upload:prices.xlsx"), "Item 61")
    assert "Item: Item 61; Price: 122; Unit: box" in last.text
    assert last.location["sheet"] == "Prices" and last.location["rows"][1] == 65


def test_the_header_row_is_the_first_filled_row_that_is_not_all_numbers():
    assert office.header_row([["Report"], ["2024", "2025", "2026"], ["Region", "Sales", "Growth"]]) == 2
    assert office.header_row([["Name", "Desk"], ["Dana", "4.12"]]) == 0
    assert office.header_row([["Totals by quarter"], ["", "Q1", "Q2"], ["North", "4", "5"]]) == 1
