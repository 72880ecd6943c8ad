"""Internal consistency: a documented score of a chunk's own defects, computed at ingestion."""

import pytest

from corpus.consistency import consistency_score
from corpus.models import Chunk

CLEAN = "The travel policy allows a per diem of 85 euros for overnight business trips."


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (CLEAN, 1.0),
        ("It allows a per diem of 85 euros for overnight business trips.", 0.75),  # dangling opener
        ("As mentioned above, the per diem is 85 euros for overnight trips.", 0.75),
        ("allows a per diem of 85 euros for overnight business trips", 0.5),  # cut at both ends
        ("Cookie policy · Privacy policy · Terms of use · Sign in to continue reading.", 0.6),
        ("12.5 | 13.7 | 99.1 | 42.0 | 17.3 | 88.8 | 10.1.", 0.6),  # numbers, not prose
        ("Per diem: 85 euros.", 0.7),
        ("", 0.0),
        # Blocks: a heading, a term, a row and code are neither truncation nor debris.
        ("## Settings\n\nwal_level (enum)\n\n: The default value is replica.\n\n```\nx = {1: [2, 3]}\n```", 1.0),
        ("| Item: identifier length; Upper limit: 63 bytes, or more", 1.0),
    ],
)
def test_each_defect_costs_its_documented_penalty(text, expected):
    assert consistency_score(text) == pytest.approx(expected)


@pytest.mark.django_db
def test_ingested_chunks_carry_their_score():
    scores = list(Chunk.objects.filter(document__collection__slug="demo").values_list("consistency", flat=True))
    assert scores and all(0.0 <= s <= 1.0 for s in scores) and len(set(scores)) > 1
