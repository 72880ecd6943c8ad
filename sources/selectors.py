"""Reads of sources, their items and their syncs, scoped to the collections a user curates."""

from __future__ import annotations

from django.db.models import QuerySet

from corpus.selectors import User, collections_curated_by
from sources.models import SecretGrant, Source, SyncRun


def sources_curated_by(*, user: User) -> QuerySet[Source]:
    """The sources of the collections `user` curates (corpus.selectors.collections_curated_by)."""
    return Source.objects.filter(collection__in=collections_curated_by(user=user)).select_related("collection", "owner")


def runs_of(*, source: Source, limit: int = 10) -> list[SyncRun]:
    return list(source.runs.order_by("-started_at", "-id")[:limit])


def secrets_granted_for(*, user: User) -> QuerySet[SecretGrant]:
    """The secrets an operator granted to the collections `user` curates: all a source of theirs may name."""
    return SecretGrant.objects.filter(collection__in=collections_curated_by(user=user)).select_related("collection")
