from django.db import models


class RateWindow(models.Model):
    """Requests counted for one throttle key in one fixed window (accounts/throttling.py)."""

    key = models.CharField(max_length=200)
    window = models.BigIntegerField(help_text="The window's start, in seconds since the epoch.")
    hits = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["key", "window"], name="rate_window_key_window")]

    def __str__(self) -> str:
        return f"{self.key} @ {self.window}: {self.hits}"
