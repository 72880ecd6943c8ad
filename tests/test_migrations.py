"""Models that move between apps lose no row: a database populated at the migrations before
Critique and ExperienceLog moved from pipeline to writeback, before WriteBack and WriteBackAsking
moved from corpus to writeback, and before a write-back kept what the output gate scored, is
migrated forward; its rows are read through the models as they are now, and a permission granted
on a moved model is still granted."""

import contextlib
import uuid

import pytest
from django.conf import settings
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [
    ("corpus", "0013_document_original"),
    ("pipeline", "0011_answer_claim"),
    ("writeback", "0003_lesson_phrasings"),
]


@contextlib.contextmanager
def migrated_back(targets: list[tuple[str, str]]):
    """The database migrated back to `targets`, and the models as they were there (an app registry)
    to fill it; migrated forward to the latest again on the way out, whatever happened."""
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    executor.migrate(targets)
    try:
        yield executor.loader.project_state(targets).apps
    finally:
        MigrationExecutor(connection).migrate(latest)


@pytest.mark.django_db(transaction=True)
def test_the_backward_paths_rows_and_permissions_survive_their_move_to_writeback():
    with migrated_back(BEFORE) as old:
        collection = old.get_model("corpus", "Collection").objects.create(slug="handbook", name="Handbook")
        evidence = old.get_model("corpus", "Document").objects.create(
            collection=collection, title="Archive hours", source="hours.md", sha256="0" * 64
        )
        writeback = old.get_model("corpus", "WriteBack").objects.create(
            response_id=uuid.uuid4(), question="When does the archive open?", answer="At nine. [1]",
            collection=collection,
        )  # fmt: skip
        writeback.evidence_documents.add(evidence)
        old.get_model("corpus", "WriteBackAsking").objects.create(
            writeback=writeback, response_id=writeback.response_id, question=writeback.question
        )
        # The curators' grant on the write-backs, as a database from before the move holds it.
        content_types = old.get_model("contenttypes", "ContentType").objects
        content_types.filter(app_label="writeback", model="writeback").delete()
        before, _ = content_types.get_or_create(app_label="corpus", model="writeback")
        grant, _ = old.get_model("auth", "Permission").objects.get_or_create(
            content_type=before, codename="change_writeback", defaults={"name": "Can change write back"}
        )
        curators, _ = old.get_model("auth", "Group").objects.get_or_create(name=settings.CAIRN_CURATORS_GROUP)
        curators.permissions.set([grant])
        critique = old.get_model("pipeline", "Critique").objects.create(
            writeback=writeback, source="curator", question=writeback.question, text="Cite the opening hours page.",
            embedding=[0.1] * 384,
        )  # fmt: skip
        critique.collections.add(collection)
        old.get_model("pipeline", "ExperienceLog").objects.create(
            writeback=writeback, question=writeback.question, accepted=False, scores={"grounding": 0.2},
            embedding=[0.1] * 384,
        )  # fmt: skip

    from django.contrib.auth.models import Group
    from django.contrib.contenttypes.models import ContentType

    from writeback.models import Critique, ExperienceLog, WriteBack

    moved = Critique.objects.get()
    assert (moved.text, moved.source, moved.writeback_id) == ("Cite the opening hours page.", "curator", writeback.id)
    assert list(moved.collections.values_list("slug", flat=True)) == ["handbook"]
    assert ExperienceLog.objects.get().scores == {"grounding": 0.2}
    assert WriteBack.objects.get().experience.accepted is False
    assert WriteBack.objects.get().gate_claims == {}  # a write-back proposed before: validation scores it itself
    moved_writeback = WriteBack.objects.get()
    assert list(moved_writeback.evidence_documents.values_list("title", flat=True)) == ["Archive hours"]
    assert [a.question for a in moved_writeback.askings.all()] == ["When does the archive open?"]
    ContentType.objects.clear_cache()
    assert ContentType.objects.get_for_model(WriteBack).app_label == "writeback"
    curators = Group.objects.get(name=settings.CAIRN_CURATORS_GROUP)
    assert curators.permissions.filter(content_type__app_label="writeback", codename="change_writeback").exists()
