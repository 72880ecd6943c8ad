"""The backward path's records. Write-backs: answers proposed as corpus additions, each with the
answers that asked for it again (WriteBackAsking). The experience store: how each validated answer fared
(ExperienceLog) and why rejected ones were rejected (Critique: later answers to similar questions
are warned by it). Learning from misses: a reader's mark of where the answer was, and the curators'
decisions on what went unanswered: lessons (a question and the sentence of a passage that answers
it) and gaps (a question the collection does not cover yet).

A mark and a lesson name their answer by its response id (pipeline.Answer.response_id) like
reputation's feedback does: writeback stands below pipeline and never imports it."""

from django.conf import settings
from django.db import models
from pgvector.django import HnswIndex, VectorField

from corpus.models import EMBEDDING_DIM, Chunk, Collection, Document


class WriteBack(models.Model):
    """An answer proposed as a corpus addition (Bidirectional RAG): validated in the background, reviewed by
    curators (or auto-published by policy), published as a GENERATED document linked to the
    documents it rests on, and retracted with them."""

    class Status(models.TextChoices):
        PENDING_VALIDATION = "PENDING_VALIDATION", "pending validation"
        REJECTED = "REJECTED", "rejected"
        PENDING_REVIEW = "PENDING_REVIEW", "pending review"
        PUBLISHED = "PUBLISHED", "published"
        RETRACTED = "RETRACTED", "retracted"

    # The answer it came from: pipeline.Answer.response_id (writeback does not import pipeline).
    response_id = models.UUIDField(unique=True)
    asked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    question = models.TextField()
    answer = models.TextField(help_text="The answer with its [n] citations; curators may edit it (re-validated).")
    text = models.TextField(
        blank=True,
        help_text="What it would publish: each answer sentence as the claim it makes, citations resolved to titles.",
    )
    collection = models.ForeignKey(
        Collection, on_delete=models.PROTECT, related_name="writebacks", help_text="Where it is published."
    )
    evidence = models.JSONField(
        default=list,
        help_text="Snapshot of the evidence the answer was written from: [{n, chunk_id, document_id, title, text}].",
    )
    evidence_documents = models.ManyToManyField(
        Document, blank=True, related_name="supported_writebacks", help_text="Lineage: what it rests on."
    )
    gate_claims = models.JSONField(
        default=dict, blank=True,
        help_text="The output gate's entailment of each claim it showed, by evidence number: validation reuses it.",
    )  # fmt: skip
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING_VALIDATION)
    grounding = models.FloatField(null=True, blank=True)
    attribution = models.FloatField(null=True, blank=True)
    novelty = models.FloatField(null=True, blank=True)
    relevance = models.FloatField(null=True, blank=True, help_text="Does the answer address its question?")
    sentences = models.JSONField(
        default=list, blank=True, help_text="Per answer sentence: its claim, best entailment and which evidence."
    )
    nearest = models.JSONField(default=dict, blank=True, help_text="The most similar existing chunk or write-back.")
    critique = models.JSONField(default=list, blank=True, help_text="Machine-readable: which check failed and why.")
    held = models.CharField(max_length=200, blank=True, help_text="Why it waits (the generated-content cap).")
    versions = models.JSONField(default=dict, blank=True, help_text="Generator, prompt and verifier versions.")
    embedding = VectorField(dimensions=EMBEDDING_DIM, null=True, blank=True)
    question_embedding = VectorField(
        dimensions=EMBEDDING_DIM, null=True, blank=True, help_text="Finds the same question asked again."
    )
    asked = models.PositiveIntegerField(
        default=1, help_text="Answers merged into it: the question asked again (or reworded), answered the same."
    )
    document = models.OneToOneField(
        Document, null=True, blank=True, on_delete=models.SET_NULL, related_name="writeback"
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    review_note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    validated_at = models.DateTimeField(null=True, blank=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)
    published_at = models.DateTimeField(null=True, blank=True)
    retracted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "corpus_writeback"  # created as corpus's (writeback migration 0005 moved it)
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "collection"])]

    def __str__(self) -> str:
        return f"write-back {self.id}: {self.question[:60]}"


class WriteBackAsking(models.Model):
    """One answer that proposed a write-back: the first, and each later answer to the same question
    (asked again or reworded) with the same answer, merged into it instead of becoming a duplicate."""

    writeback = models.ForeignKey(WriteBack, on_delete=models.CASCADE, related_name="askings")
    response_id = models.UUIDField(unique=True)
    question = models.TextField()
    asked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    asked_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "corpus_writebackasking"
        ordering = ["asked_at", "id"]

    def __str__(self) -> str:
        return f"{self.question[:60]} ({self.asked_at:%Y-%m-%d})"


class Mark(models.Model):
    """The asker's word on one of their answers: this sentence of its evidence answers it, or none
    of the sources does (`sentence` empty). One per answer: a second replaces the first. A mark
    changes nobody's answer until a curator confirms it."""

    response_id = models.UUIDField(unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    question = models.TextField()
    evidence_n = models.PositiveIntegerField(null=True, blank=True, help_text="The [n] of the passage marked.")
    chunk = models.ForeignKey(Chunk, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    document = models.ForeignKey(Document, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    collection = models.ForeignKey(Collection, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    sentence = models.TextField(blank=True, help_text="The sentence marked; empty: none of the sources answers it.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return f"{self.response_id}: {self.sentence[:60] or 'none of the sources'}"

    @property
    def none_answers(self) -> bool:
        return not self.sentence


class Lesson(models.Model):
    """A confirmed (question, chunk, sentence): near questions of readers who may read the chunk get
    that passage verified and that sentence stated (pipeline.stages). It follows its chunk: retracted
    with its document, re-checked when the chunk's text changes (writeback.lessons.lessons_recheck)."""

    class Status(models.TextChoices):
        ACTIVE = "active", "active: reaches answers"
        RECHECK = "recheck", "to re-check: its sentence is gone from the document"
        RETRACTED = "retracted", "retracted"

    class Origin(models.TextChoices):
        MARK = "mark", "a reader's mark, confirmed"
        PICKED = "picked", "picked by a curator from a search"
        WRITTEN = "written", "written by a curator (a published write-back)"

    question = models.TextField(help_text="The question it answers, as the group's first asker put it.")
    embedding = VectorField(dimensions=EMBEDDING_DIM, help_text="Of the question: near questions find it.")
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="lessons")
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="lessons")
    chunk = models.ForeignKey(
        Chunk, null=True, blank=True, on_delete=models.SET_NULL, related_name="lessons",
        help_text="Empty when a re-ingest replaced it: the next re-check finds the sentence again or asks a curator.",
    )  # fmt: skip
    sentence = models.TextField(help_text="The sentence that answers, as its passage's card shows it.")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE)
    origin = models.CharField(max_length=10, choices=Origin.choices)
    writeback = models.ForeignKey(WriteBack, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    response_ids = models.JSONField(default=list, blank=True, help_text="The answers it settled (their questions).")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            HnswIndex(
                name="lesson_embedding_hnsw", fields=["embedding"], m=16, ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
            models.Index(fields=["collection", "status"]),
        ]  # fmt: skip

    def __str__(self) -> str:
        return f"{self.question[:50]} → {self.sentence[:50]}"


class LessonQuestion(models.Model):
    """One way a lesson's question was asked: its own, and those of the answers it settled (a group of
    misses is several people's words for one need). A question near any of them reaches the lesson."""

    lesson = models.ForeignKey(Lesson, on_delete=models.CASCADE, related_name="phrasings")
    question = models.TextField()
    embedding = VectorField(dimensions=EMBEDDING_DIM)

    class Meta:
        indexes = [
            HnswIndex(
                name="lesson_question_hnsw", fields=["embedding"], m=16, ef_construction=64,
                opclasses=["vector_cosine_ops"],
            )
        ]  # fmt: skip

    def __str__(self) -> str:
        return self.question[:80]


class Gap(models.Model):
    """A question a curator marked "not covered": a page to write. It settles its answers on the
    list; closing it (the page written) is the curator's."""

    question = models.TextField()
    embedding = VectorField(dimensions=EMBEDDING_DIM)
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="gaps")
    note = models.TextField(blank=True, help_text="What the page should say, for whoever writes it.")
    response_ids = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"gap: {self.question[:60]}"


class Adaptation(models.Model):
    """What a collection's lessons taught Cairn about its own answers: how far its answers' calibrated
    confidence is off on this collection (a shift of the log-odds, fitted on the answers its lessons
    settled, pipeline/adaptation.py). It serves only when it predicts held-out lessons better than
    no shift; otherwise the figures are kept for the curator and the shipped calibration stays."""

    collection = models.OneToOneField(Collection, on_delete=models.CASCADE, related_name="adaptation")
    confidence_shift = models.FloatField(default=0.0, help_text="Added to the log-odds of an answer quoted from it.")
    serving = models.BooleanField(default=False, help_text="Passed its held-out check: answers use the shift.")
    figures = models.JSONField(
        default=dict, blank=True, help_text="Answers, right, held-out log loss with and without."
    )
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.collection}: {self.confidence_shift:+.2f} ({'serving' if self.serving else 'not serving'})"


class JudgeVersion(models.Model):
    """The answer judge and relevance evaluator adapted to one collection (pipeline/judge_adaptation.py),
    one row a run. A judge serves the collection only when it beat the shipped one on the held-out part
    of its questions; the newest serving version answers, and retiring it goes back to the one before
    (or to the shipped judges). Its files are under CAIRN_DATA_DIR, which every web host must see."""

    class Status(models.TextChoices):
        SERVING = "serving", "serving"
        KEPT_BACK = "kept_back", "kept back: not better than the shipped judges"
        RETIRED = "retired", "retired"

    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="judge_versions")
    version = models.PositiveIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices)
    answer_model = models.CharField(max_length=500, blank=True, help_text="Adapted answer judge; blank: shipped.")
    relevance_model = models.CharField(max_length=500, blank=True, help_text="Adapted evaluator; blank: shipped.")
    figures = models.JSONField(default=dict, blank=True, help_text="Teacher, questions, held-out scores, why.")
    created_at = models.DateTimeField(auto_now_add=True)
    status_changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["collection", "version"], name="judge_version_once")]
        ordering = ["collection", "-version"]

    def __str__(self) -> str:
        return f"{self.collection} v{self.version}: {self.status}"


class ExperienceLog(models.Model):
    """One validated answer, accepted or not, with its scores: the record the experience store keeps."""

    writeback = models.OneToOneField(WriteBack, on_delete=models.CASCADE, related_name="experience")
    question = models.TextField()
    accepted = models.BooleanField(help_text="Passed validation (PENDING_REVIEW or published).")
    scores = models.JSONField(default=dict)
    embedding = VectorField(dimensions=EMBEDDING_DIM)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "pipeline_experiencelog"  # its table from before the model moved here

    def __str__(self) -> str:
        return f"{'accepted' if self.accepted else 'rejected'}: {self.question[:60]}"


class Critique(models.Model):
    """Why an answer was rejected, by the validator or a curator. Critiques of answers to similar
    questions are passed to the generator as warnings, to readers of all of `collections` only."""

    class Source(models.TextChoices):
        VALIDATION = "validation"
        CURATOR = "curator"

    writeback = models.ForeignKey(WriteBack, null=True, on_delete=models.SET_NULL, related_name="critiques")
    source = models.CharField(max_length=12, choices=Source.choices)
    question = models.TextField()
    text = models.TextField(help_text="The warning, in words, as the generator receives it.")
    checks = models.JSONField(default=list, help_text="Machine-readable: the failed checks and their details.")
    collections = models.ManyToManyField(Collection, blank=True, related_name="+")
    warns = models.BooleanField(default=True, help_text="Passed to generators (a duplicate alone teaches nothing).")
    embedding = VectorField(dimensions=EMBEDDING_DIM, help_text="Of the question: similar questions find it.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "pipeline_critique"  # its table from before the model moved here
        ordering = ["-created_at"]
        indexes = [
            HnswIndex(
                name="critique_embedding_hnsw", fields=["embedding"], m=16, ef_construction=64,
                opclasses=["vector_cosine_ops"],
            )
        ]  # fmt: skip

    def __str__(self) -> str:
        return f"{self.source}: {self.text[:80]}"
