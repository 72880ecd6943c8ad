"""What Cairn knows: collections (and who may read them), documents, and their chunks."""

from django.contrib.auth.models import Group
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from pgvector.django import HnswIndex, VectorField

EMBEDDING_DIM = 384  # all-MiniLM-L6-v2; another model size needs a migration
TEXT_SEARCH_CONFIG = "english"  # baked into the generated column; queries must use the same


class Collection(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    groups = models.ManyToManyField(
        Group, blank=True, related_name="collections", help_text="Groups whose members may read this collection."
    )
    is_public = models.BooleanField(default=False, help_text="Readable by every signed-in user.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Document(models.Model):
    class Origin(models.TextChoices):
        SOURCE = "source", "Source"
        GENERATED = "generated", "Generated"

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        RETRACTED = "retracted", "Retracted"

    collection = models.ForeignKey(Collection, on_delete=models.PROTECT, related_name="documents")
    title = models.CharField(max_length=500)
    source = models.CharField(max_length=1000, help_text="URI or path; unique within its collection.")
    sha256 = models.CharField(max_length=64, help_text="SHA-256 of the extracted text.")
    mime_type = models.CharField(max_length=100)
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.SOURCE)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["collection", "source"], name="document_source_unique_in_collection")
        ]
        indexes = [models.Index(fields=["collection", "status"])]

    def __str__(self) -> str:
        return self.title

    @property
    def is_active(self) -> bool:
        return self.status == self.Status.ACTIVE


class Chunk(models.Model):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField(help_text="Position of the chunk within its document, from 0.")
    heading = models.CharField(max_length=500, blank=True, help_text="The document title when it was chunked.")
    text = models.TextField()
    token_count = models.PositiveIntegerField()
    consistency = models.FloatField(
        default=1.0, help_text="Internal consistency in [0, 1], scored at ingestion (corpus/consistency.py)."
    )
    embedding = VectorField(dimensions=EMBEDDING_DIM)
    # Maintained by Postgres from the row itself (a generated column, declared here, no trigger):
    # the heading weighs more than the body in ts_rank_cd.
    search_vector = models.GeneratedField(
        expression=SearchVector("heading", weight="A", config=TEXT_SEARCH_CONFIG)
        + SearchVector("text", weight="B", config=TEXT_SEARCH_CONFIG),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    class Meta:
        ordering = ["document_id", "ordinal"]
        constraints = [models.UniqueConstraint(fields=["document", "ordinal"], name="chunk_ordinal_unique")]
        indexes = [
            HnswIndex(
                name="chunk_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
            GinIndex(fields=["search_vector"], name="chunk_search_vector_gin"),
        ]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.ordinal}"
