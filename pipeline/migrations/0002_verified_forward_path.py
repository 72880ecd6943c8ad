import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("pipeline", "0001_initial"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="evidence", name="evidence_rank_unique"),
        migrations.RenameField(model_name="evidence", old_name="rank", new_name="n"),
        migrations.AlterModelOptions(
            name='evidence',
            options={'ordering': ['answer_id', 'n']},
        ),
        migrations.AddField(
            model_name='answer',
            name='action',
            field=models.CharField(blank=True, help_text='CRAG action: CORRECT, AMBIGUOUS or INCORRECT.', max_length=10),
        ),
        migrations.AddField(
            model_name='answer',
            name='agreement',
            field=models.FloatField(blank=True, help_text='Agreement of the two deep-mode answers.', null=True),
        ),
        migrations.AddField(
            model_name='answer',
            name='external',
            field=models.JSONField(blank=True, default=dict, help_text='The external search: provider, query, results, error; empty if none ran.'),
        ),
        migrations.AddField(
            model_name='answer',
            name='found',
            field=models.BooleanField(default=True, help_text='False for the explicit not-found answer.'),
        ),
        migrations.AddField(
            model_name='answer',
            name='generator',
            field=models.CharField(blank=True, help_text='The generator that wrote the answer.', max_length=20),
        ),
        migrations.AddField(
            model_name='answer',
            name='iterations',
            field=models.PositiveIntegerField(blank=True, help_text='Retroactive loop iterations (deep).', null=True),
        ),
        migrations.AddField(
            model_name='answer',
            name='mode',
            field=models.CharField(choices=[('fast', 'fast: gate + extractive'), ('standard', 'standard: gate + configured generator'), ('deep', 'deep: retroactive loop (Ollama)')], default='standard', max_length=10),
        ),
        migrations.AddField(
            model_name='answer',
            name='notes',
            field=models.JSONField(blank=True, default=list, help_text='Fallbacks and corrections, in words.'),
        ),
        migrations.AddField(
            model_name='evidence',
            name='agreement',
            field=models.FloatField(null=True),
        ),
        migrations.AddField(
            model_name='evidence',
            name='bucket',
            field=models.CharField(blank=True, choices=[('VERIFIED', 'Verified'), ('UNCERTAIN', 'Uncertain'), ('REJECTED', 'Rejected')], max_length=10),
        ),
        migrations.AddField(
            model_name='evidence',
            name='consistency',
            field=models.FloatField(null=True),
        ),
        migrations.AddField(
            model_name='evidence',
            name='notes',
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.AddField(
            model_name='evidence',
            name='origin',
            field=models.CharField(choices=[('corpus', 'Corpus'), ('external', 'external (never enters the corpus by this path)'), ('inferred', 'inferred (deep mode, from cited evidence)')], default='corpus', max_length=10),
        ),
        migrations.AddField(
            model_name='evidence',
            name='relevance',
            field=models.FloatField(null=True),
        ),
        migrations.AddField(
            model_name='evidence',
            name='source',
            field=models.CharField(blank=True, help_text='Document source, or the external URL.', max_length=2000),
        ),
        migrations.AddField(
            model_name='evidence',
            name='strips',
            field=models.JSONField(blank=True, default=list, help_text='[{text, relevance, kept}] after refinement.'),
        ),
        migrations.AddField(
            model_name='evidence',
            name='title',
            field=models.CharField(blank=True, max_length=500),
        ),
        migrations.AddField(
            model_name='evidence',
            name='trust',
            field=models.FloatField(help_text="The gate's V score.", null=True),
        ),
        migrations.AlterField(
            model_name='evidence',
            name='chunk',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='corpus.chunk'),
        ),
        migrations.AlterField(
            model_name='evidence',
            name='fused_score',
            field=models.FloatField(help_text='Reciprocal rank fusion score (corpus evidence).', null=True),
        ),
        migrations.AlterField(
            model_name='evidence',
            name='n',
            field=models.PositiveIntegerField(help_text='The evidence number: the [n] citations use.'),
        ),
        migrations.AddConstraint(
            model_name='evidence',
            constraint=models.UniqueConstraint(fields=('answer', 'n'), name='evidence_n_unique'),
        ),
    ]
