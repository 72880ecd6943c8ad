"""The ingest command and service: every format, idempotent re-runs, edits replace chunks,
bad files are reported and skipped while the rest is kept."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corpus.models import Chunk, Collection, Document
from tests.documents import write_corpus

pytestmark = pytest.mark.django_db


def ingest(*paths, collection="office", **options):
    out, err = StringIO(), StringIO()
    call_command("ingest", *map(str, paths), collection=collection, verbosity=0, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


def chunk_ids(collection="office"):
    return set(Chunk.objects.filter(document__collection__slug=collection).values_list("id", flat=True))


def test_it_ingests_every_format_and_reports_bad_files_by_name(tmp_path):
    out, err = ingest(write_corpus(tmp_path))
    titles = set(Document.objects.filter(collection__slug="office").values_list("title", flat=True))
    assert titles == {"handbook", "Onboarding guide", "Parking rules", "Safety manual", "Wi-Fi", "Canteen"}
    assert "6 added, 0 updated, 0 unchanged, 4 failed" in out
    assert "broken.pdf: cannot read PDF" in err
    assert "diagram.png: unsupported file type '.png'" in err
    assert "faq.jsonl:3: invalid JSON" in err and "faq.jsonl:4: missing or empty 'text'" in err
    chunk = Chunk.objects.get(document__title="Parking rules")
    assert chunk.heading == "Parking rules" and "courtyard" in chunk.text and len(chunk.embedding) == 384
    assert chunk.token_count > 0


def test_the_collection_is_created_private_unless_asked_otherwise(tmp_path):
    write_corpus(tmp_path)
    out, _ = ingest(tmp_path / "handbook.txt", collection="private-one")
    assert "private" in out
    assert not Collection.objects.get(slug="private-one").is_public
    ingest(tmp_path / "handbook.txt", collection="hr", group=["hr-team"])
    assert list(Collection.objects.get(slug="hr").groups.values_list("name", flat=True)) == ["hr-team"]


def test_a_rerun_changes_nothing(tmp_path):
    ingest(write_corpus(tmp_path))
    before = chunk_ids()
    out, _ = ingest(tmp_path)
    assert "0 added, 0 updated, 6 unchanged" in out
    assert chunk_ids() == before


def test_an_edited_file_replaces_its_chunks_and_keeps_the_others(tmp_path):
    ingest(write_corpus(tmp_path))
    handbook = Document.objects.get(title="handbook")
    old_handbook_chunks = set(handbook.chunks.values_list("id", flat=True))
    others = chunk_ids() - old_handbook_chunks
    (tmp_path / "handbook.txt").write_text("The office now opens at nine. Visitors use the side entrance.\n")
    out, _ = ingest(tmp_path)
    assert "0 added, 1 updated, 5 unchanged" in out
    handbook.refresh_from_db()
    new_chunks = list(handbook.chunks.all())
    assert [c.text for c in new_chunks] == ["The office now opens at nine. Visitors use the side entrance."]
    assert not old_handbook_chunks & {c.id for c in new_chunks}
    assert not Chunk.objects.filter(id__in=old_handbook_chunks).exists()
    assert others <= chunk_ids()
    assert Document.objects.filter(title="handbook").count() == 1


def test_a_long_document_becomes_overlapping_chunks_in_order(tmp_path):
    sentences = [f"Rule {i} says that form {i} must be filed by the {i}th day of the quarter." for i in range(120)]
    (tmp_path / "rules.txt").write_text(" ".join(sentences))
    ingest(tmp_path / "rules.txt")
    chunks = list(Chunk.objects.filter(document__title="rules").order_by("ordinal"))
    assert [c.ordinal for c in chunks] == list(range(len(chunks))) and len(chunks) > 5
    assert all(c.token_count <= 200 for c in chunks)
    for first, second in zip(chunks, chunks[1:]):
        assert first.text.split(". ")[-1].rstrip(".") in second.text  # overlap carries the last sentence


def test_nothing_to_ingest_is_a_command_error_naming_the_path(tmp_path):
    with pytest.raises(CommandError, match="nowhere.txt: no such file or folder"):
        ingest(tmp_path / "nowhere.txt")
