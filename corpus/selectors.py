"""Reads from the corpus. Every path to a chunk starts from `chunks_readable_by`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db import connection
from django.db.models import Count, F, Q, QuerySet
from pgvector.django import CosineDistance

from corpus.models import TEXT_SEARCH_CONFIG, Chunk, Collection, Document

User = AbstractBaseUser | AnonymousUser


def user_is_curator(user: User) -> bool:
    if not user.is_authenticated:
        return False
    return user.is_superuser or user.groups.filter(name=settings.CAIRN_CURATORS_GROUP).exists()


def collections_readable_by(*, user: User) -> QuerySet[Collection]:
    """The collections `user` may read: public ones and those shared with one of their groups."""
    if not user.is_authenticated:
        return Collection.objects.none()
    if user.is_superuser:
        return Collection.objects.all()
    return Collection.objects.filter(Q(is_public=True) | Q(groups__user=user)).distinct()


def documents_readable_by(*, user: User) -> QuerySet[Document]:
    """Active documents in collections `user` may read, except those that also require a collection
    they may not (a write-back is readable only by readers of all its evidence)."""
    readable = collections_readable_by(user=user).values("id")
    return Document.objects.filter(status=Document.Status.ACTIVE, collection_id__in=readable).exclude(
        requires_collections__in=Collection.objects.exclude(id__in=readable)
    )


def document_list(*, user: User, collection_slug: str | None = None) -> QuerySet[Document]:
    """Readable documents with their collection and chunk count, oldest first."""
    documents = documents_readable_by(user=user).select_related("collection").annotate(chunk_count=Count("chunks"))
    if collection_slug:
        documents = documents.filter(collection__slug=collection_slug)
    return documents.order_by("id")


def chunks_readable_by(*, user: User) -> QuerySet[Chunk]:
    """The one gate to chunks: those of active documents in collections `user` may read."""
    return Chunk.objects.filter(document__in=documents_readable_by(user=user).values("id"))


@dataclass(frozen=True)
class Hit:
    chunk_id: int
    document_id: int
    collection_id: int
    ordinal: int
    title: str
    source: str
    text: str
    consistency: float  # scored at ingestion (corpus/consistency.py)
    vector_distance: float | None  # cosine distance; None when only full text found the chunk
    text_rank: float | None  # ts_rank_cd; None when only the vector search found the chunk
    vector_position: int | None  # 1-based rank within each leg
    text_position: int | None
    score: float  # reciprocal rank fusion
    similarity: float | None = None  # cosine similarity to the query, for every hit (ranking, credit)


def chunk_search(
    *,
    user: User,
    query_vector: Sequence[float],
    text: str,
    limit: int,
    collection_ids: Sequence[int] | None = None,
    candidates: int | None = None,
    legs: tuple[str, ...] = ("vector", "text"),
) -> list[Hit]:
    """Return the chunks readable by `user` that best match, fused from vector and full text.

    Each leg takes its top `candidates` (HNSW cosine distance; websearch_to_tsquery ranked by
    ts_rank_cd, negated so both legs sort ascending); the legs are fused by reciprocal rank fusion,
    all in one SQL round trip.
    """
    candidates = max(candidates or settings.CAIRN_RETRIEVAL_CANDIDATES, limit)
    base = chunks_readable_by(user=user)
    if collection_ids is not None:
        base = base.filter(document__collection_id__in=list(collection_ids))

    vector_leg = text_leg = None
    if "vector" in legs:
        vector_leg = (
            base.annotate(score=CosineDistance("embedding", list(map(float, query_vector))))
            .order_by("score")  # the distance alone: a tie-breaker would stop the HNSW index scan
            .values("id", "score")[:candidates]
        )
    if "text" in legs and text.strip():
        # websearch_to_tsquery ANDs the words (and honours "phrases", or, -exclusions). Measured on
        # the NQ shared split, OR-ing the question's words instead let common words pull wrong
        # passages up (hybrid recall@1 0.80 with OR, 0.91 with AND, vector alone 0.92): the text
        # leg is there to add exact matches (codes, names, phrases), not noise.
        query = SearchQuery(text, search_type="websearch", config=TEXT_SEARCH_CONFIG)
        text_leg = (
            base.filter(search_vector=query)
            .annotate(score=-SearchRank(F("search_vector"), query, cover_density=True))
            .order_by("score", "id")
            .values("id", "score")[:candidates]
        )
    vec_sql, vec_params = _leg_cte("vec", vector_leg)
    txt_sql, txt_params = _leg_cte("txt", text_leg)

    sql = f"""
        WITH {vec_sql}, {txt_sql},
        fused AS (
            SELECT COALESCE(vec.id, txt.id) AS id, vec.score AS distance, -txt.score AS text_rank,
                   vec.pos AS vpos, txt.pos AS tpos,
                   COALESCE(1.0 / (%s + vec.pos), 0) + COALESCE(1.0 / (%s + txt.pos), 0) AS fused
            FROM vec FULL OUTER JOIN txt ON vec.id = txt.id
            ORDER BY fused DESC, id
            LIMIT %s
        )
        SELECT f.id, c.document_id, d.collection_id, c.ordinal, d.title, d.source, c.text, c.consistency,
               f.distance, f.text_rank, f.vpos, f.tpos, f.fused,
               1 - COALESCE(f.distance, c.embedding <=> %s::vector) AS similarity
        FROM fused f
        JOIN {Chunk._meta.db_table} c ON c.id = f.id
        JOIN {Document._meta.db_table} d ON d.id = c.document_id
        ORDER BY f.fused DESC, f.id
    """
    rrf_k = settings.CAIRN_RRF_K
    with connection.cursor() as cursor:
        cursor.execute(sql, [*vec_params, *txt_params, rrf_k, rrf_k, limit, _vector_literal(query_vector)])
        rows = cursor.fetchall()
    return [
        Hit(
            chunk_id=r[0], document_id=r[1], collection_id=r[2], ordinal=r[3], title=r[4], source=r[5], text=r[6],
            consistency=r[7], vector_distance=r[8], text_rank=r[9], vector_position=r[10], text_position=r[11],
            score=float(r[12]), similarity=float(r[13]),
        )
        for r in rows
    ]  # fmt: skip


def _vector_literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def _leg_cte(name: str, leg: QuerySet | None) -> tuple[str, list]:
    """One search leg as a CTE of (id, score, pos), pos being the 1-based rank by ascending score."""
    if leg is None:
        return f"{name} AS (SELECT NULL::bigint AS id, NULL::float AS score, NULL::bigint AS pos WHERE false)", []
    sql, params = leg.query.sql_with_params()
    return (
        f"{name} AS MATERIALIZED (SELECT id, score, row_number() OVER (ORDER BY score, id) AS pos FROM ({sql}) leg)",
        list(params),
    )
