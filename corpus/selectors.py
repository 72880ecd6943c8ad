"""Reads from the corpus. Every path to a chunk starts from `chunks_readable_by`."""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db import connection
from django.db.models import Count, F, Q, QuerySet
from pgvector.django import CosineDistance

from corpus.models import TEXT_SEARCH_CONFIG, Chunk, Collection, Document, Upload
from corpus.originals import document_original_url
from readers import locations
from readers.blocks import BLOCK_PREFIX, parse_blocks

User = AbstractBaseUser | AnonymousUser


def user_is_curator(user: User) -> bool:
    """May `user` curate at all (the curators group: what curators may do)? Where they may is
    collections_curated_by."""
    if not user.is_authenticated:
        return False
    return user.is_superuser or user.groups.filter(name=settings.CAIRN_CURATORS_GROUP).exists()


def collections_curated_by(*, user: User) -> QuerySet[Collection]:
    """The collections `user` curates: every one for a superuser; for a curator, those whose curator
    groups they belong to. Every curator surface (admin, write-back queue, answers, retraction,
    uploads, reputation) is scoped through this one function."""
    if not user_is_curator(user):
        return Collection.objects.none()
    if user.is_superuser:
        return Collection.objects.all()
    return Collection.objects.filter(curator_groups__in=user.groups.all()).distinct()


def collections_readable_by(*, user: User) -> QuerySet[Collection]:
    """The collections `user` may read: public ones and those shared with one of their groups."""
    if not user.is_authenticated:
        return Collection.objects.none()
    if user.is_superuser:
        return Collection.objects.all()
    return Collection.objects.filter(Q(is_public=True) | Q(groups__user=user)).distinct()


def calibrated_relevance_upper(*, user: User, collection_ids: list[int] | None = None) -> float | None:
    """The upper relevance threshold fitted to the collections a question searches (those asked
    for, else all `user` may read; calibrate_gate --collection), or None when any of them has none
    (the global CAIRN_RELEVANCE_UPPER applies). Of several, the lowest: none of them then sends
    more of its own answerable questions to external search than its fit allowed."""
    collections = collections_readable_by(user=user)
    if collection_ids is not None:
        collections = collections.filter(id__in=collection_ids)
    uppers = [c.get("relevance_upper") for c in collections.values_list("gate_calibration", flat=True)]
    return min(uppers) if uppers and None not in uppers else None


def documents_within(collections, *, active: bool = True) -> QuerySet[Document]:
    """Documents in `collections` (a queryset or ids), active ones unless `active` is False, except
    those that also require a collection outside them (a write-back is readable only by readers of
    all its evidence)."""
    ids = collections.values("id") if isinstance(collections, QuerySet) else list(collections)
    documents = Document.objects.filter(collection_id__in=ids)
    if active:
        documents = documents.filter(status=Document.Status.ACTIVE)
    return documents.exclude(requires_collections__in=Collection.objects.exclude(id__in=ids))


def documents_readable_by(*, user: User) -> QuerySet[Document]:
    """Active documents `user` may read: documents_within the collections they may read."""
    return documents_within(collections_readable_by(user=user))


def documents_curated_by(*, user: User) -> QuerySet[Document]:
    """Documents of any status `user` curates: documents_within the collections they curate (a
    published answer resting on another collection's evidence needs that one curated too)."""
    return documents_within(collections_curated_by(user=user), active=False)


def collections_quoted_by(documents) -> set[int]:
    """The collections whose text `documents` (a queryset or ids) show: their own, and for a
    published answer (a generated document) the collections it quotes in turn."""
    ids = documents.values("id") if isinstance(documents, QuerySet) else list(documents)
    own = Document.objects.filter(id__in=ids).values_list("collection_id", flat=True)
    quoted = Document.requires_collections.through.objects.filter(document_id__in=ids)
    return set(own) | set(quoted.values_list("collection_id", flat=True))


def document_list(*, user: User, collection_slug: str | None = None) -> QuerySet[Document]:
    """Readable documents with their collection and chunk count, oldest first."""
    documents = documents_readable_by(user=user).select_related("collection").annotate(chunk_count=Count("chunks"))
    if collection_slug:
        documents = documents.filter(collection__slug=collection_slug)
    return documents.order_by("id")


def document_with_original(*, user: User, document_id: int) -> Document | None:
    """A document `user` may read that keeps its original file, with it; None otherwise (a reader of
    another collection, a retracted document, text that had no file: all "not found" alike)."""
    documents = documents_readable_by(user=user).filter(original__isnull=False)
    return documents.select_related("original").filter(id=document_id).first()


def uploads_visible_to(*, user: User) -> QuerySet[Upload]:
    """A user's own uploads and every upload to a collection they curate; to others, "not found"."""
    visible = Q(uploader=user) | Q(collection__in=collections_curated_by(user=user))
    return Upload.objects.filter(visible).select_related("collection", "uploader").defer("data")


@dataclass(frozen=True)
class Passage:
    """A chunk as its document page shows it: the text the chunk before it did not already show,
    in blocks, anchored by the chunk's id."""

    chunk_id: int
    blocks: list[tuple[str, str]]  # (kind, text): readers.blocks.parse_blocks's heading, paragraph, code, ...
    location_label: str = ""  # "page 12": where it sits in the original (readers.locations.label)
    original_url: str | None = None  # the original opened there (corpus.originals.original_url)


def document_passages(document: Document) -> list[Passage]:
    """The document's text, chunk by chunk, without the sentences a chunk repeats from the one
    before it (chunking overlaps them): read in order, the passages are the document."""
    passages, previous = [], ""
    for chunk_id, text, location in document.chunks.order_by("ordinal").values_list("id", "text", "location"):
        blocks = [(b.kind, b.text) for b in parse_blocks(_unrepeated(previous, text))]
        url = document_original_url(document, location) if location else None
        passages.append(Passage(chunk_id, blocks, locations.label(location), url))
        previous = text
    return passages


def _unrepeated(previous: str, text: str) -> str:
    """`text` without the sentences at its start that `previous` ends with. The repeat may open
    a block of its own ("- ", ": ", "| ") where, in `previous`, it ends a longer one; a block that
    goes on past the repeat keeps its kind."""
    prefix = text[:2] if text[:2] in BLOCK_PREFIX.values() else ""
    for body in (text, text[len(prefix) :]) if prefix else (text,):
        for start in range(max(0, len(previous) - len(body)), len(previous)):
            if body.startswith(previous[start:]) and (start == 0 or not previous[start - 1].isalnum()):
                rest = body[len(previous) - start :]
                if rest.startswith("\n") or not rest.strip():
                    return rest
                return prefix + rest.lstrip()
    return text


def chunks_readable_by(*, user: User) -> QuerySet[Chunk]:
    """The one gate to chunks: those of active documents in collections `user` may read."""
    return Chunk.objects.filter(document__in=documents_readable_by(user=user).values("id"))


def chunks_in_scope(*, user: User, collection_ids: Sequence[int] | None = None) -> QuerySet[Chunk]:
    """The chunks a question searches: those `user` may read, within `collection_ids` when given."""
    base = chunks_readable_by(user=user)
    if collection_ids is not None:
        base = base.filter(document__collection_id__in=list(collection_ids))
    return base


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
    heading: str = ""  # "Title › Section › Subsection", where the chunk sits in its document


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
    base = chunks_in_scope(user=user, collection_ids=collection_ids)

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
               1 - COALESCE(f.distance, c.embedding <=> %s::vector) AS similarity, c.heading
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
            score=float(r[12]), similarity=float(r[13]), heading=r[14],
        )
        for r in rows
    ]  # fmt: skip


def chunk_hits(
    *, user: User, chunk_ids: Sequence[int], query_vector: Sequence[float], collection_ids: Sequence[int] | None = None
) -> list[Hit]:
    """The chunks `chunk_ids` as hits of this question, those `user` may read within
    `collection_ids` only: what a lesson brings to a question the search did not find it for (no
    search position, no fused score)."""
    rows = (
        chunks_in_scope(user=user, collection_ids=collection_ids)
        .filter(id__in=list(chunk_ids))
        .annotate(distance=CosineDistance("embedding", list(map(float, query_vector))))
        .values_list(
            "id",
            "document_id",
            "document__collection_id",
            "ordinal",
            "document__title",
            "document__source",
            "text",
            "consistency",
            "distance",
            "heading",
        )  # fmt: skip
    )
    return [
        Hit(chunk_id=r[0], document_id=r[1], collection_id=r[2], ordinal=r[3], title=r[4], source=r[5], text=r[6],
            consistency=r[7], vector_distance=r[8], text_rank=None, vector_position=None, text_position=None,
            score=0.0, similarity=1.0 - r[8], heading=r[9])
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


@dataclass(frozen=True)
class QuestionTerms:
    """The question's search terms (Postgres lexemes, stop words dropped) and how rare each is in
    the chunks the asker may read: the corpus's own inverse document frequency."""

    chunks: int  # readable chunks in scope
    frequency: dict[str, int]  # lexeme -> readable chunks holding it (0: the corpus never says it)
    words: dict[str, str]  # lexeme -> the word as asked ("innodb", "RMAN", "os.quickcopy")

    def weight(self, lexeme: str) -> float:
        """Inverse document frequency: a term few chunks hold says more about what is asked."""
        return math.log((self.chunks + 1) / (self.frequency[lexeme] + 0.5))

    def coverage(self, found: set[str], *, absent_too: bool = False, among: set[str] | None = None) -> float:
        """The share of the weight of the question's terms the corpus uses that a text holding
        `found` covers (1 when there are none). Terms the corpus never uses are left out for its
        own chunks (a paraphrase, "nowadays", is no evidence against one; a name is, and the gate
        reads names apart), counted for a text from outside it (`absent_too`: an external passage).
        With `among`, only those of the question's terms count (the sentence that asks: lexemes_in)."""
        present = [t for t, n in self.frequency.items() if (n > 0 or absent_too) and (among is None or t in among)]
        total = sum(self.weight(t) for t in present)
        return sum(self.weight(t) for t in present if t in found) / total if total > 0 else 1.0

    def lexemes_in(self, text: str) -> set[str]:
        """The question's terms the corpus uses whose words, as asked, `text` holds (a part of it)."""
        lowered = text.lower()
        return {
            t for t, word in self.words.items()
            if self.frequency.get(t) and re.search(rf"(?<!\w){re.escape(word.lower())}(?!\w)", lowered)
        }  # fmt: skip

    # The question's snake_case and dotted names -> chunks holding them as written.
    identifiers: dict[str, int] = field(default_factory=dict)

    def absent(self) -> list[str]:
        """The words of the question no readable chunk holds, as asked. A part of a dotted name
        that chunks hold whole is not absent: Postgres indexes "math.isclose(" as one host name,
        so "isclose" alone is in no chunk's index, though the name is in the manual. Nor is a
        hyphenated compound whose parts chunks hold: Postgres indexes "Brotli-compressing" whole
        as well as its parts, and the manual that says "Brotli" and "compressing" apart does not
        lack the answer."""
        written = {part for name in self._dotted_found() for part in name.split(".")}
        held = {self.words.get(t, t).lower() for t, n in self.frequency.items() if n}
        return [
            self.words[t] for t, n in self.frequency.items()
            if n == 0 and self.words[t].lower() not in written and not _compound_of(self.words[t], held)
        ]  # fmt: skip

    def absent_identifiers(self) -> list[str]:
        """The question's snake_case names (max_concurrency, innodb_buffer_pool_size) that no
        readable chunk holds, though each word of them may be common (the index finds the chunks
        holding the phrase, stop words dropped: "to_julian" is looked for as "julian"; the text
        itself is then searched for the name as written). A dotted name is not one of them: a
        manual writes "SequenceMatcher.ratio()" as "ratio()" under its class."""
        return [name for name, n in self.identifiers.items() if n == 0 and "." not in name]

    def parts_held(self, text: str) -> set[str]:
        """The lexemes a text holds inside the question's dotted names written whole ("math" and
        "isclos" for a text writing math.isclose), which the text's own index does not list apart."""
        lowered = text.lower()
        held = {part for name in self._dotted_found() if name in lowered for part in name.split(".")}
        return {t for t, word in self.words.items() if word.lower() in held}

    def _dotted_found(self) -> list[str]:
        return [name.lower() for name, n in self.identifiers.items() if n and "." in name]


def _compound_of(word: str, held: set[str]) -> bool:
    parts = [p for p in word.lower().split("-") if p]
    return len(parts) > 1 and all(p in held for p in parts)


def question_terms(*, user: User, question: str, collection_ids: Sequence[int] | None = None) -> QuestionTerms:
    """Count, in one round trip, the readable chunks and those holding each of the question's
    lexemes (each a GIN index lookup)."""
    base = chunks_in_scope(user=user, collection_ids=collection_ids)
    scope_sql, scope_params = base.values("id").query.sql_with_params()
    sql = f"""
        WITH scope AS MATERIALIZED ({scope_sql}),
        terms AS (SELECT DISTINCT ON (lexeme) lexeme, d.token
                  FROM ts_debug(%s::regconfig, %s) d, unnest(d.lexemes) AS lexeme
                  ORDER BY lexeme, d.token)
        SELECT NULL, NULL, count(*) FROM scope
        UNION ALL
        SELECT t.lexeme, t.token, (SELECT count(*) FROM {Chunk._meta.db_table} c
                          WHERE c.search_vector @@ quote_literal(t.lexeme)::tsquery AND c.id IN (SELECT id FROM scope))
        FROM terms t
        UNION ALL
        SELECT NULL, i.name, (SELECT count(*) FROM {Chunk._meta.db_table} c
                              WHERE c.search_vector @@ i.query AND c.id IN (SELECT id FROM scope)
                                AND position(lower(i.name) IN lower(c.heading || ' ' || c.text)) > 0)
        FROM (SELECT name, phraseto_tsquery(%s::regconfig, name) AS query FROM unnest(%s::text[]) AS name) i
        WHERE numnode(i.query) > 0
    """
    # "SequenceMatcher.ratio", "DTrace/SystemTap": each part is a term (Postgres would read one
    # host or path name that the text, writing the parts apart, never holds); "3.11" stays whole.
    words = re.sub(r"(?<=[^\W\d])[./](?=[^\W\d])", " ", question)
    identifiers = sorted(set(SNAKE_CASE.findall(question)) | set(DOTTED.findall(question)))
    with connection.cursor() as cursor:
        cursor.execute(sql, [*scope_params, TEXT_SEARCH_CONFIG, words, TEXT_SEARCH_CONFIG, identifiers])
        rows = cursor.fetchall()
    terms = [r for r in rows[1:] if r[0] is not None]
    return QuestionTerms(
        chunks=int(rows[0][2]),
        frequency={lexeme: int(n) for lexeme, _, n in terms},
        words={lexeme: word for lexeme, word, _ in terms},
        identifiers={name: int(n) for lexeme, name, n in rows[1:] if lexeme is None},
    )


SNAKE_CASE = re.compile(r"\b[^\W\d_][^\W_]*(?:_[^\W_]+)+\b")  # max_concurrency, wal_level; not __init__
DOTTED = re.compile(r"\b[^\W\d]\w*(?:\.[^\W\d]\w*)+\b")  # math.isclose, os.path.expanduser; not 3.11


def terms_found(texts: Sequence[str], lexemes: Sequence[str]) -> list[set[str]]:
    """Which of `lexemes` each text holds, stemmed as the search index stems (one round trip)."""
    if not texts or not lexemes:
        return [set() for _ in texts]
    sql = """
        WITH d AS (SELECT i, to_tsvector(%s::regconfig, body) AS v FROM unnest(%s::text[]) WITH ORDINALITY AS u(body, i))
        SELECT d.i, array_remove(array_agg(t.lexeme), NULL)
        FROM d LEFT JOIN unnest(%s::text[]) AS t(lexeme) ON d.v @@ quote_literal(t.lexeme)::tsquery
        GROUP BY d.i ORDER BY d.i
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [TEXT_SEARCH_CONFIG, list(texts), list(lexemes)])
        return [set(found or ()) for _, found in cursor.fetchall()]


def documents_modified(ids: Sequence[int]) -> dict[int, datetime.datetime]:
    """When each document's content last changed: the "modified" its file's properties state (a Word
    or PDF file edited in 2019 and loaded today is from 2019), else when Cairn last stored a change."""
    found = {}
    for pk, stored, stated in Document.objects.filter(id__in=ids).values_list("id", "updated_at", "metadata__modified"):
        try:
            when = datetime.datetime.fromisoformat(stated) if isinstance(stated, str) else None
        except ValueError:
            when = None
        if when is not None and when.tzinfo is None:
            when = when.replace(tzinfo=datetime.UTC)
        found[pk] = when or stored
    return found
