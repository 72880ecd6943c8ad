"""Answer.collections: the collections an answer's evidence came from, recorded when it is made.

Existing answers get theirs from their evidence chunks. Evidence whose chunk is gone (a re-ingest
replaced it) is matched to documents by its source; evidence matching none could have come from
any collection, so its answer is given every collection: only superusers read it from then on.
"""

from django.db import migrations, models


def backfill(apps, schema_editor):
    Answer = apps.get_model("pipeline", "Answer")
    Evidence = apps.get_model("pipeline", "Evidence")
    Collection = apps.get_model("corpus", "Collection")
    Document = apps.get_model("corpus", "Document")
    Through = Answer.collections.through
    live = Evidence.objects.filter(origin="corpus", chunk__isnull=False)
    pairs = set(live.values_list("answer_id", "chunk__document__collection_id").distinct())
    quoted = live.filter(chunk__document__requires_collections__isnull=False)
    pairs |= set(quoted.values_list("answer_id", "chunk__document__requires_collections").distinct())
    every = list(Collection.objects.values_list("id", flat=True))
    by_source: dict[str, set[int]] = {}
    for answer_id, source in Evidence.objects.filter(origin="corpus", chunk__isnull=True).values_list(
        "answer_id", "source"
    ):
        if source not in by_source:
            documents = Document.objects.filter(source=source)
            ids = set(documents.values_list("collection_id", flat=True))
            ids |= set(documents.filter(requires_collections__isnull=False).values_list("requires_collections", flat=True))
            by_source[source] = ids or set(every)
        pairs |= {(answer_id, c) for c in by_source[source]}
    Through.objects.bulk_create([Through(answer_id=a, collection_id=c) for a, c in pairs], batch_size=5000)


class Migration(migrations.Migration):
    dependencies = [
        ("corpus", "0011_collection_gate_calibration"),
        ("pipeline", "0005_evidence_reputation_weight"),
    ]

    operations = [
        migrations.AddField(
            model_name="answer",
            name="collections",
            field=models.ManyToManyField(
                blank=True,
                help_text="The collections its corpus evidence came from.",
                related_name="+",
                to="corpus.collection",
            ),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
    ]
