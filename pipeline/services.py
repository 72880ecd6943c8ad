"""Answering questions: resolve what the asker may read, then run the pipeline."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser

from config.exceptions import CairnError
from corpus.selectors import collections_readable_by
from pipeline.models import Answer
from pipeline.stages import QueryState, pipeline_run


def question_answer(**kwargs) -> QueryState:
    """Answer a question (query_state's arguments): the state of the finished run."""
    return pipeline_run(query_state(**kwargs))


def query_state(
    *,
    user: AbstractBaseUser,
    question: str,
    top_k: int = 8,
    collections: list[str] | None = None,
    mode: str = Answer.Mode.STANDARD,
    generator: str | None = None,
) -> QueryState:
    """A question ready to answer from the chunks `user` may read, optionally within some collections
    (pipeline_run or pipeline_events answers it); a CairnError when the request cannot be answered.

    `mode`: fast (gate + extractive), standard (gate + CAIRN_GENERATOR or the `generator` asked
    for, when CAIRN_GENERATOR_OVERRIDE allows), deep (the retroactive loop, on the LLM).
    """
    if generator and not settings.CAIRN_GENERATOR_OVERRIDE:
        raise CairnError(
            "generator", "this server does not let a query choose its generator (CAIRN_GENERATOR_OVERRIDE)"
        )
    if generator and mode != Answer.Mode.STANDARD:
        raise CairnError("generator", f"mode {mode!r} fixes its generator; choose one only with mode 'standard'")
    collection_ids = None
    if collections:
        found = dict(collections_readable_by(user=user).filter(slug__in=collections).values_list("slug", "id"))
        unknown = [slug for slug in collections if slug not in found]
        if unknown:
            # Unreadable and nonexistent look alike: a reader learns nothing about hidden collections.
            raise CairnError("collections", f"unknown collection(s): {', '.join(unknown)}")
        collection_ids = list(found.values())
    return QueryState(
        user=user, question=question, top_k=top_k, mode=mode, generator=generator or "", collection_ids=collection_ids
    )
