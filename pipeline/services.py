"""Answering questions: resolve what the asker may read, then run the pipeline."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from config.exceptions import CairnError
from corpus.selectors import collections_readable_by
from pipeline.stages import QueryState, pipeline_run


def question_answer(
    *, user: AbstractBaseUser, question: str, top_k: int = 8, collections: list[str] | None = None
) -> QueryState:
    """Answer `question` from the chunks `user` may read, optionally within some collections."""
    collection_ids = None
    if collections:
        found = dict(collections_readable_by(user=user).filter(slug__in=collections).values_list("slug", "id"))
        unknown = [slug for slug in collections if slug not in found]
        if unknown:
            # Unreadable and nonexistent look alike: a reader learns nothing about hidden collections.
            raise CairnError("collections", f"unknown collection(s): {', '.join(unknown)}")
        collection_ids = list(found.values())
    return pipeline_run(QueryState(user=user, question=question, top_k=top_k, collection_ids=collection_ids))
