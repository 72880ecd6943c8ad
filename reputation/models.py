"""What has proved useful: per-chunk Beta counters, the credit each answer gave each chunk, and
the feedback that moved them (the Retrieval Reputation Layer; the statistics are in reputation/scoring.py)."""

from django.conf import settings
from django.db import models
from django.utils import timezone
from pgvector.django import VectorField

from corpus.models import EMBEDDING_DIM, Chunk, Document


class Reputation(models.Model):
    """A chunk's counters, in their own table: re-embedding or re-ranking never touches them.
    A chunk without a row has the prior (1, 1, 1, 1)."""

    chunk = models.OneToOneField(Chunk, primary_key=True, on_delete=models.CASCADE, related_name="reputation")
    alpha = models.FloatField(default=1.0, help_text="Short-term successes + 1 (decays toward 1).")
    beta = models.FloatField(default=1.0, help_text="Short-term failures + 1 (decays toward 1).")
    long_alpha = models.FloatField(default=1.0, help_text="A: long-term successes + 1 (no decay).")
    long_beta = models.FloatField(default=1.0, help_text="B: long-term failures + 1 (no decay).")
    fooled = models.FloatField(default=0.0, help_text="Users accepted, the verifier failed (the liar counter).")
    verified = models.FloatField(default=0.0, help_text="Feedback that carried a verifier result.")
    feedback_count = models.PositiveIntegerField(default=0)
    last_updated = models.DateTimeField(default=timezone.now)
    questions = VectorField(
        dimensions=EMBEDDING_DIM, null=True, blank=True,
        help_text="Sum of the embeddings of the questions the chunk was credited for: its direction is "
        "theirs, so ranking can tell whether this question is like the ones its record came from.",
    )  # fmt: skip

    class Meta:
        indexes = [models.Index(fields=["last_updated"])]

    def __str__(self) -> str:
        return f"chunk {self.chunk_id}: {self.alpha:.2f}/{self.beta:.2f}"


class Credit(models.Model):
    """The bridge between an answer and its later feedback: each chunk's share r(i), frozen when
    the answer was recorded (what was retrieved then, not what would be retrieved now)."""

    response_id = models.UUIDField(unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    shares = models.JSONField(default=list, help_text="[{chunk_id, share, similarity}], shares summing to 1.")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"credit {self.response_id}"


class Feedback(models.Model):
    """One user's feedback on one answer. A second one replaces the first: its effect on the
    counters is taken back (decayed as the counters were) before the new one is applied."""

    class Behaviour(models.TextChoices):
        KEPT = "kept"
        COPIED = "copied"
        EDITED = "edited"
        REGENERATED = "regenerated"
        ABANDONED = "abandoned"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    response_id = models.UUIDField()
    thumbs = models.PositiveSmallIntegerField(null=True, blank=True, help_text="1 up, 0 down.")
    behaviour = models.CharField(max_length=12, choices=Behaviour.choices, blank=True)
    verifier = models.FloatField(null=True, blank=True, help_text="External ground truth in [0, 1].")
    judge = models.FloatField(null=True, blank=True, help_text="The answer's grounding, from validation.")
    comment = models.TextField(blank=True)
    outcome = models.FloatField(help_text="y at full trust.")
    kappa = models.FloatField(help_text="Decisiveness at full trust: 2|y - 0.5|.")
    applied = models.JSONField(
        default=dict, blank=True, help_text="{chunk_id: [alpha, beta, A, B, fooled, verified]} added to each chunk."
    )
    applied_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "response_id"], name="feedback_once_per_user")]

    def __str__(self) -> str:
        return f"{self.user_id} on {self.response_id}: y={self.outcome:.2f}"


class DocumentReputation(Document):
    """A document seen through its chunks' counters (admin only)."""

    class Meta:
        proxy = True
        verbose_name = "document reputation"
