"""Reads of recorded answers."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Prefetch

from corpus.selectors import user_is_curator
from pipeline.models import Answer, Evidence


def answer_get(*, user: AbstractBaseUser, response_id) -> Answer | None:
    """The recorded answer with its evidence, if `user` asked it or is a curator; else None."""
    answers = Answer.objects.prefetch_related(
        Prefetch("evidence", queryset=Evidence.objects.select_related("chunk").order_by("n"))
    )
    if not user_is_curator(user):
        answers = answers.filter(user=user)
    return answers.filter(response_id=response_id).first()
