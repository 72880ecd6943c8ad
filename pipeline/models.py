"""What was asked and answered, with every piece of evidence weighed, and why. (How past answers
fared in validation and review, and the critiques that steer later ones, are writeback's.)"""

import uuid

from django.conf import settings
from django.db import models
from pgvector.django import VectorField

from corpus.models import EMBEDDING_DIM, Chunk, Collection
from corpus.originals import place


class Conversation(models.Model):
    """A thread of questions one person asked, each turn an Answer. A follow-up is answered as the
    standalone question it means (pipeline/conversations.py); earlier answers help read it, and are
    never evidence. Its asker alone reads it; deleting it deletes its turns."""

    conversation_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations")
    title = models.CharField(max_length=200, help_text="The first question, as asked.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, help_text="When its last turn was asked.")

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.title


class Answer(models.Model):
    class Mode(models.TextChoices):
        FAST = "fast", "fast: gate + extractive"
        STANDARD = "standard", "standard: gate + configured generator"
        DEEP = "deep", "deep: retroactive loop (LLM)"

    # pipeline.generators' ANSWERED, WHERE_TO_LOOK_OUTCOME and NOT_FOUND_OUTCOME.
    class Outcome(models.TextChoices):
        ANSWERED = "answered", "answered: a stated answer"
        WHERE_TO_LOOK = "where_to_look", "where to look: the closest passages, no claim"
        NOT_FOUND = "not_found", "not found: no verified evidence"

    response_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="answers")
    question = models.TextField(help_text="The question answered: a follow-up as its standalone question.")
    conversation = models.ForeignKey(
        Conversation, null=True, blank=True, on_delete=models.CASCADE, related_name="turns",
        help_text="The thread it was asked in; its turns go with it.",
    )  # fmt: skip
    asked = models.TextField(blank=True, help_text="The question as typed, when it was rewritten; else empty.")
    rewritten_by = models.CharField(
        max_length=10, blank=True, help_text="What made the follow-up standalone: rules or llm; empty if unchanged."
    )
    text = models.TextField()
    found = models.BooleanField(default=True, help_text="True for an answered outcome only.")
    outcome = models.CharField(max_length=16, choices=Outcome.choices, default=Outcome.ANSWERED)
    confidence = models.FloatField(
        null=True,
        blank=True,
        help_text="Calibrated P(the stated answer holds what was asked); empty if none was judged.",
    )
    claim = models.TextField(
        blank=True,
        help_text="What the extractive answer stated, or would have stated had it been sure (where to look): what "
        "a lesson's sentence is compared with to tell whether Cairn was right (pipeline/adaptation.py).",
    )
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.STANDARD)
    action = models.CharField(max_length=10, blank=True, help_text="CRAG action: CORRECT, AMBIGUOUS or INCORRECT.")
    generator = models.CharField(max_length=20, blank=True, help_text="The generator that wrote the answer.")
    citations = models.JSONField(default=list, blank=True)
    external = models.JSONField(
        default=dict, blank=True, help_text="The external search: provider, query, results, error; empty if none ran."
    )
    iterations = models.PositiveIntegerField(null=True, blank=True, help_text="Retroactive loop iterations (deep).")
    agreement = models.FloatField(null=True, blank=True, help_text="Agreement of the two deep-mode answers.")
    notes = models.JSONField(default=list, blank=True, help_text="Fallbacks and corrections, in words.")
    sentences = models.JSONField(
        default=list, blank=True,
        help_text="An LLM's sentences as the output gate judged them: claim, support by evidence, verdict.",
    )  # fmt: skip
    warnings = models.JSONField(
        default=list, blank=True, help_text="Critiques of similar past answers, passed to the generator."
    )
    timings_ms = models.JSONField(default=dict, blank=True, help_text="Milliseconds spent in each pipeline stage.")
    embedding = VectorField(
        dimensions=EMBEDDING_DIM, null=True, blank=True,
        help_text="Of the question: the curators' list of misses groups questions by it.",
    )  # fmt: skip
    # Recorded when the answer is made: its evidence quotes these collections whether or not their
    # chunks still exist (a re-ingest replaces them), so who may read it never changes afterwards.
    collections = models.ManyToManyField(
        Collection, blank=True, related_name="+", help_text="The collections its corpus evidence came from."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.response_id}: {self.question[:60]}"

    # What a reader is shown of an answer that drew on a collection they can no longer read: set by
    # pipeline.selectors for that reader (`withheld` as an annotation, `withheld_evidence` numbers).
    WITHHELD = "Withheld: this answer drew on a collection you can no longer read."
    withheld = False
    withheld_evidence: frozenset[int] = frozenset()

    @property
    def shown_text(self) -> str:
        return self.WITHHELD if self.withheld else self.text

    @property
    def evidence_shown(self) -> list["Evidence"]:
        return [evidence for evidence in self.evidence.all() if evidence.n not in self.withheld_evidence]

    @property
    def citations_placed(self) -> list[dict]:
        """The citations, each with where its passage sits in the original and the way to it there
        (corpus.originals.place): from the evidence it cites, whose chunk a re-ingest may have gone."""
        chunks = {evidence.n: evidence.chunk for evidence in self.evidence.all()}
        return [
            {**citation, **place(chunks.get(citation["n"]))}
            for citation in self.citations
            if citation["n"] not in self.withheld_evidence
        ]


class Evidence(models.Model):
    class Origin(models.TextChoices):
        CORPUS = "corpus"
        EXTERNAL = "external", "external (never enters the corpus by this path)"
        INFERRED = "inferred", "inferred (deep mode, from cited evidence)"

    class Bucket(models.TextChoices):
        VERIFIED = "VERIFIED"
        UNCERTAIN = "UNCERTAIN"
        REJECTED = "REJECTED"

    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="evidence")
    n = models.PositiveIntegerField(help_text="The evidence number: the [n] citations use.")
    origin = models.CharField(max_length=10, choices=Origin.choices, default=Origin.CORPUS)
    # Re-ingesting a changed document replaces its chunks; the snapshot keeps what was shown.
    chunk = models.ForeignKey(Chunk, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    title = models.CharField(max_length=500, blank=True)
    source = models.CharField(max_length=2000, blank=True, help_text="Document source, or the external URL.")
    text = models.TextField()
    vector_distance = models.FloatField(null=True, help_text="Cosine distance; empty if only full text found it.")
    text_rank = models.FloatField(null=True, help_text="ts_rank_cd; empty if only the vector search found it.")
    fused_score = models.FloatField(null=True, help_text="Reciprocal rank fusion score (corpus evidence).")
    rank_score = models.FloatField(null=True, help_text="Score after reputation ranking (corpus evidence).")
    reputation = models.FloatField(null=True, help_text="The chunk's short-term reputation mean C when asked.")
    reputation_weight = models.FloatField(
        null=True, help_text="How much of the chunk's record counted for this question (0 none, 1 in full)."
    )
    relevance = models.FloatField(null=True)
    consistency = models.FloatField(null=True)
    agreement = models.FloatField(null=True)
    trust = models.FloatField(null=True, help_text="The gate's V score.")
    bucket = models.CharField(max_length=10, choices=Bucket.choices, blank=True)
    strips = models.JSONField(default=list, blank=True, help_text="[{text, relevance, kept}] after refinement.")
    notes = models.JSONField(default=list, blank=True)
    cited = models.BooleanField(default=False)

    class Meta:
        ordering = ["answer_id", "n"]
        constraints = [models.UniqueConstraint(fields=["answer", "n"], name="evidence_n_unique")]

    def __str__(self) -> str:
        return f"{self.answer_id}#{self.n}"


class EvaluationRun(models.Model):
    """One run of `manage.py evaluate`: an organisation's own questions asked through the pipeline,
    scored by pipeline/evaluation.py, and compared with the previous run of the same question file
    (by content), collections, mode and top_k. Written once, when the run ends; never changed."""

    questions_file = models.CharField(max_length=1000, help_text="The question file, as it was named.")
    questions_sha256 = models.CharField(max_length=64, help_text="Of the file's bytes: runs of the same file.")
    collections = models.JSONField(
        default=list, blank=True, help_text="The slugs of the collections asked, sorted; empty: all the user reads."
    )
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    mode = models.CharField(max_length=10, choices=Answer.Mode.choices)
    top_k = models.PositiveIntegerField()
    margin_points = models.FloatField(help_text="The fall, in percentage points, a rate was allowed.")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField()
    totals = models.JSONField(default=dict, help_text="pipeline.evaluation.run_summary: counts, rates, p50/p95.")
    results = models.JSONField(
        default=list, help_text="Per question: id, question, answerable, outcome, right, latency_ms, response_id."
    )
    commit = models.CharField(max_length=40, blank=True, help_text="git rev-parse HEAD; empty outside a checkout.")
    passed = models.BooleanField(help_text="No rate fell more than the margin and every question was answered.")
    previous = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", help_text="The run compared with."
    )
    comparison = models.JSONField(
        default=dict, blank=True, help_text="pipeline.evaluation.run_compare, and the questions now wrong or right."
    )

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["questions_sha256", "-started_at"], name="evaluationrun_file_idx")]

    def __str__(self) -> str:
        return f"{self.questions_file} at {self.started_at:%Y-%m-%d %H:%M}: {'passed' if self.passed else 'failed'}"
