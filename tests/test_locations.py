"""Where a chunk sits in its original file: location markers written by readers, read by the chunker."""

import pytest

from corpus.chunking import chunk_text
from corpus.models import Document
from readers import locations
from readers.blocks import parse_blocks
from tests.conftest import client_for
from tests.test_office import post_file, slides_file


def words(texts: list[str]) -> list[int]:
    return [len(t.split()) for t in texts]


def test_a_label_names_the_place_as_a_reader_would():
    assert locations.label({"page": 12}) == "page 12"
    assert locations.label({"page": 12, "to": 13}) == "pages 12–13"
    assert locations.label({"slide": 4}) == "slide 4"
    assert locations.label({"sheet": "Prices", "rows": [2, 41]}) == "sheet Prices, rows 2–41"
    assert locations.label({"sheet": "Prices", "rows": [7, 7]}) == "sheet Prices, row 7"
    assert locations.label({}) == ""


@pytest.mark.parametrize(
    "line",
    [
        "\x1a{}",
        '\x1a{"page": 0}',
        '\x1a{"page": "3"}',
        '\x1a{"sheet": "A", "rows": [1]}',
        "\x1a[1, 2]",
        "\x1anot json",
        '{"page": 3}',  # no marker character
    ],
)
def test_only_a_well_formed_marker_is_a_location(line):
    assert locations.parse(line) is None


def test_a_chunk_spans_the_places_its_blocks_came_from_and_markers_are_never_text():
    text = "\n\n".join(
        [
            locations.page(3),
            "# Backups",
            "Snapshots are taken every night at two.",
            locations.page(4),
            "They are kept for fourteen days.",
            locations.page(5),
            "# Restores",
            "A restore needs a target volume of the same size.",
        ]
    )
    chunks = chunk_text(text, count_tokens=words, split_tokens=lambda s, n: [s], max_tokens=16, overlap_tokens=2)
    assert [c.location for c in chunks] == [{"page": 3, "to": 4}, {"page": 5}]
    assert all("\x1a" not in c.text and "page" not in c.text for c in chunks)


def test_a_table_keeps_its_header_across_the_row_groups_of_a_sheet():
    text = "\n".join(
        [
            locations.sheet("Prices", 2, 3),
            "| Item | Price |",
            "|---|---|",
            "| Tea | 3 |",
            "| Cake | 4 |",
            locations.sheet("Prices", 4, 4),
            "| Pie | 5 |",
        ]
    )
    blocks = parse_blocks(text)
    assert [b.text for b in blocks] == ["Item: Tea; Price: 3", "Item: Cake; Price: 4", "Item: Pie; Price: 5"]
    chunks = chunk_text(text, count_tokens=words, split_tokens=lambda s, n: [s], max_tokens=8, overlap_tokens=2)
    assert chunks[0].location == {"sheet": "Prices", "rows": [2, 3]}
    assert chunks[-1].location == {"sheet": "Prices", "rows": [4, 4]}


@pytest.mark.django_db
def test_each_slide_chunk_records_its_slide(bob, settings):
    settings.CAIRN_CHUNK_TOKENS, settings.CAIRN_CHUNK_OVERLAP_TOKENS = 32, 8
    assert post_file(bob, "results.pptx", slides_file()).status_code == 201
    chunks = Document.objects.get(source="upload:results.pptx").chunks.order_by("ordinal")
    by_text = {c.text: c.location for c in chunks}
    assert [loc for text, loc in by_text.items() if "Revenue grew" in text] == [{"slide": 1}]
    assert [loc for text, loc in by_text.items() if "North" in text] == [{"slide": 2}]


@pytest.mark.django_db
def test_typed_text_cannot_claim_a_page(bob):
    forged = f"{locations.page(99)}\nThe archive room opens with door code 4471."
    response = client_for(bob).post(
        "/api/v1/documents", {"collection": "demo", "title": "Forged", "text": forged}, format="json"
    )
    assert response.status_code == 201, response.content
    (chunk,) = Document.objects.get(title="Forged").chunks.all()
    assert chunk.location == {} and "\x1a" not in chunk.text and "door code 4471" in chunk.text
