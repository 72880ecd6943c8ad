"""What Cairn knows: collections (and who may read them), documents and their chunks, the files
they were read from, uploads, and the append-only audit trail of every change that matters. What
Cairn proposes to add to it (write-backs) is writeback's."""

from django.conf import settings
from django.contrib.auth.models import Group
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.core.files.storage import storages
from django.core.signals import setting_changed
from django.db import models
from django.dispatch import receiver
from django.utils.functional import LazyObject, empty
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
    curator_groups = models.ManyToManyField(
        Group, blank=True, related_name="curated_collections",
        help_text="Groups whose curators curate this collection (review, retract, upload, see its answers). "
        "A curator is also a member of the curators group, which says what curators may do; these say where.",
    )  # fmt: skip
    created_at = models.DateTimeField(auto_now_add=True)
    # The gate's thresholds fitted to this collection's own text (calibrate_gate --collection): its
    # relevance_upper replaces CAIRN_RELEVANCE_UPPER for questions asked of it, with what the fit saw.
    gate_calibration = models.JSONField(default=dict, db_default={}, blank=True, editable=False)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class OriginalsStorage(LazyObject):
    """The "originals" storage of settings.STORAGES, looked up when first used, and again after
    STORAGES changes (the tests keep their files apart), as Django's default_storage is."""

    def _setup(self):
        self._wrapped = storages["originals"]


_originals_storage = OriginalsStorage()


@receiver(setting_changed)
def _storages_changed(*, setting, **kwargs):
    if setting == "STORAGES":
        _originals_storage._wrapped = empty


def originals_storage():
    """A callable, so that the backend is a setting, not part of a migration."""
    return _originals_storage


class Original(models.Model):
    """A file as it was loaded, kept so that a reader can open it at the cited page. Stored once by
    the SHA-256 of its bytes, however many documents (or collections) were read from it; the
    document points at it, and an original no document points at any more is removed
    (corpus.originals)."""

    sha256 = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the bytes.")
    file = models.FileField(storage=originals_storage, max_length=200, help_text="ab/cd/<sha256><suffix>")
    size = models.PositiveBigIntegerField()
    mime_type = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.file.name


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
    chunked_by = models.PositiveSmallIntegerField(
        default=1, help_text="The version of Cairn's chunking that wrote its chunks (corpus.services.CHUNKING_VERSION)."
    )
    mime_type = models.CharField(max_length=100)
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.SOURCE)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    metadata = models.JSONField(default=dict, blank=True)
    # A write-back rests on evidence from several collections; it must not widen access to any of
    # them, so a reader needs every one of these as well as `collection` (corpus/selectors.py).
    requires_collections = models.ManyToManyField(
        Collection,
        blank=True,
        related_name="+",
        help_text="Readable only by users who can also read all of these (a write-back's evidence collections).",
    )
    # Who wrote the current text (upload.uploader): set when an upload adds or changes the document,
    # not when it re-sends it unchanged. Kept out of `metadata`, which is what the document says.
    upload = models.ForeignKey(
        "Upload", null=True, blank=True, on_delete=models.SET_NULL, related_name="documents",
        help_text="The API upload that last wrote it (none for the CLI and write-backs).",
    )  # fmt: skip
    original = models.ForeignKey(
        Original, null=True, blank=True, on_delete=models.PROTECT, related_name="documents",
        help_text="The file it was read from (none for text posted as JSON, a .jsonl's lines, write-backs).",
    )  # fmt: skip
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
    heading = models.CharField(
        max_length=500,
        blank=True,
        help_text="Where the chunk sits: 'Document title › Chapter › Section' (definition term last).",
    )
    location = models.JSONField(
        default=dict,
        db_default={},
        blank=True,
        help_text='Where it sits in the original file: {"page": 12}, {"slide": 4}, {"sheet": "Prices", '
        '"rows": [2, 41]} (readers/locations.py); empty for formats without pages.',
    )
    text = models.TextField()
    token_count = models.PositiveIntegerField()
    consistency = models.FloatField(
        default=1.0, help_text="Internal consistency in [0, 1], scored at ingestion (corpus/consistency.py)."
    )
    addresses_a_model = models.BooleanField(
        default=False,
        help_text="Holds text aimed at a language model ('ignore previous instructions', role prompts): "
        "for curators to review; its sentences are never used in answers (corpus/instructions.py).",
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


class AppendOnlyQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise PermissionError("audit events are append-only")

    def delete(self):
        raise PermissionError("audit events are append-only")


class AuditEvent(models.Model):
    """One change that matters: who (a user, or the system), what, to which object, before/after.
    Append-only: the model refuses updates and deletes, and so does a database trigger
    (migration 0003), so no path through the app can rewrite history."""

    # No foreign-key constraint: the trail outlives the users it names (actor_name keeps the name).
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
    )
    actor_name = models.CharField(max_length=150, help_text='The username, or "system".')
    action = models.CharField(max_length=64, db_index=True)
    object_type = models.CharField(max_length=64)
    object_id = models.CharField(max_length=64)
    summary = models.TextField(blank=True)
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["object_type", "object_id"])]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor_name} {self.action} {self.object_type}:{self.object_id}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise PermissionError("audit events are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise PermissionError("audit events are append-only")


class Upload(models.Model):
    """One document or file posted to `POST /documents`: who sent it, where, and what became of it.
    A large one waits here, bytes and all, for the worker (corpus.tasks.upload_ingest): the row
    reaches every host the worker may run on, where a file on the web host's disk would not."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        INGESTING = "ingesting", "Ingesting"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    uploader = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="uploads"
    )
    collection = models.ForeignKey(Collection, on_delete=models.CASCADE, related_name="uploads")
    name = models.CharField(max_length=500, help_text="The file's name as uploaded, or the title of a text.")
    size = models.PositiveBigIntegerField(help_text="Bytes received.")
    sha256 = models.CharField(max_length=64, help_text="SHA-256 of the bytes received.")
    options = models.JSONField(
        default=dict,
        blank=True,
        help_text="What the request asked besides the bytes: title, source, metadata, charset.",
    )
    data = models.BinaryField(
        null=True, blank=True, editable=False, help_text="The bytes, kept only until the upload is ingested or fails."
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    documents_done = models.PositiveIntegerField(default=0)
    documents_total = models.PositiveIntegerField(null=True, blank=True, help_text="Known once extracted.")
    counts = models.JSONField(
        default=dict, blank=True, help_text="Documents added, updated, unchanged, retracted and failed."
    )
    error = models.TextField(blank=True, help_text="Why it failed, naming the file.")
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "created_at"])]

    def __str__(self) -> str:
        return f"upload {self.id}: {self.name} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)
