"""What was asked and answered, with the evidence each answer rested on."""

import uuid

from django.conf import settings
from django.db import models

from corpus.models import Chunk


class Answer(models.Model):
    response_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="answers")
    question = models.TextField()
    text = models.TextField()
    citations = models.JSONField(default=list, blank=True)
    timings_ms = models.JSONField(default=dict, blank=True, help_text="Milliseconds spent in each pipeline stage.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.response_id}: {self.question[:60]}"


class Evidence(models.Model):
    answer = models.ForeignKey(Answer, on_delete=models.CASCADE, related_name="evidence")
    # Re-ingesting a changed document replaces its chunks; the snapshot keeps what was shown.
    chunk = models.ForeignKey(Chunk, null=True, on_delete=models.SET_NULL, related_name="+")
    rank = models.PositiveIntegerField(help_text="1 is the best-fused hit.")
    text = models.TextField()
    vector_distance = models.FloatField(null=True, help_text="Cosine distance; empty if only full text found it.")
    text_rank = models.FloatField(null=True, help_text="ts_rank_cd; empty if only the vector search found it.")
    fused_score = models.FloatField(help_text="Reciprocal rank fusion score.")
    cited = models.BooleanField(default=False)

    class Meta:
        ordering = ["answer_id", "rank"]
        constraints = [models.UniqueConstraint(fields=["answer", "rank"], name="evidence_rank_unique")]

    def __str__(self) -> str:
        return f"{self.answer_id}#{self.rank}"
