"""Answer.outcome and Answer.confidence: answered, where to look, or not found, and how sure.

Existing answers get their outcome from `found` and their text: a found answer was answered; one
that said "No passage states the answer; these look related: …" or "Sources disagree: …" showed
passages without a claim (where to look); any other was not found. Their confidence stays empty:
nothing was judged.
"""

from django.db import migrations, models
from django.db.models import Q

# The texts as they were written before this migration (pipeline.generators' NOT_STATED, DISAGREE).
WHERE_TO_LOOK_TEXTS = ("No passage states the answer", "Sources disagree")


def outcomes_backfill(apps, schema_editor):
    """Found answers keep the field's default, answered."""
    Answer = apps.get_model("pipeline", "Answer")
    unfound = Answer.objects.filter(found=False)
    where_to_look = Q()
    for text in WHERE_TO_LOOK_TEXTS:
        where_to_look |= Q(text__startswith=text)
    unfound.filter(where_to_look).update(outcome="where_to_look")
    unfound.exclude(where_to_look).update(outcome="not_found")


class Migration(migrations.Migration):
    dependencies = [
        ("pipeline", "0007_answer_sentences"),
    ]

    operations = [
        migrations.AddField(
            model_name="answer",
            name="confidence",
            field=models.FloatField(
                blank=True,
                help_text="Calibrated P(the stated answer holds what was asked); empty if none was judged.",
                null=True,
            ),
        ),
        migrations.AddField(
            model_name="answer",
            name="outcome",
            field=models.CharField(
                choices=[
                    ("answered", "answered: a stated answer"),
                    ("where_to_look", "where to look: the closest passages, no claim"),
                    ("not_found", "not found: no verified evidence"),
                ],
                default="answered",
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="answer",
            name="found",
            field=models.BooleanField(default=True, help_text="True for an answered outcome only."),
        ),
        migrations.RunPython(outcomes_backfill, migrations.RunPython.noop),
    ]
