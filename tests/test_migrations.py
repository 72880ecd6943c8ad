"""Models that move between apps lose no row: a database populated at the migrations before
Critique and ExperienceLog moved from pipeline to writeback, and before a write-back kept what the
output gate scored, is migrated forward, and its rows are read through the models as they are now."""

import uuid

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [
    ("corpus", "0013_document_original"),
    ("pipeline", "0011_answer_claim"),
    ("writeback", "0003_lesson_phrasings"),
]


@pytest.mark.django_db(transaction=True)
def test_critiques_and_the_experience_log_survive_their_move_to_writeback():
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE).apps
        collection = old.get_model("corpus", "Collection").objects.create(slug="handbook", name="Handbook")
        writeback = old.get_model("corpus", "WriteBack").objects.create(
            response_id=uuid.uuid4(), question="When does the archive open?", answer="At nine. [1]",
            collection=collection,
        )  # fmt: skip
        critique = old.get_model("pipeline", "Critique").objects.create(
            writeback=writeback, source="curator", question=writeback.question, text="Cite the opening hours page.",
            embedding=[0.1] * 384,
        )  # fmt: skip
        critique.collections.add(collection)
        old.get_model("pipeline", "ExperienceLog").objects.create(
            writeback=writeback, question=writeback.question, accepted=False, scores={"grounding": 0.2},
            embedding=[0.1] * 384,
        )  # fmt: skip
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(latest)

    from corpus.models import WriteBack
    from writeback.models import Critique, ExperienceLog

    moved = Critique.objects.get()
    assert (moved.text, moved.source, moved.writeback_id) == ("Cite the opening hours page.", "curator", writeback.id)
    assert list(moved.collections.values_list("slug", flat=True)) == ["handbook"]
    assert ExperienceLog.objects.get().scores == {"grounding": 0.2}
    assert WriteBack.objects.get().experience.accepted is False
    assert WriteBack.objects.get().gate_claims == {}  # a write-back proposed before: validation scores it itself
