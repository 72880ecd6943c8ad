"""Writes to the corpus: collections, ingestion, the curators role."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth.models import Group, Permission
from django.db import transaction
from django.utils import timezone

from corpus.chunking import chunk_text
from corpus.consistency import consistency_score
from corpus.embedder import Embedder, get_embedder
from corpus.extract import ExtractedDocument, ExtractionFailure
from corpus.instructions import addresses_a_model
from corpus.lineage import writebacks_requeue
from corpus.models import Chunk, Collection, Document


@dataclass(frozen=True)
class DocumentOutcome:
    document: Document
    outcome: str  # "added", "updated", "unchanged", or "retracted" (left as it is until restored)
    chunks: int


@dataclass
class IngestReport:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    retracted: int = 0
    chunks: int = 0
    failed: list[ExtractionFailure] = field(default_factory=list)
    outcomes: list[DocumentOutcome] = field(default_factory=list)


def collection_get_or_create(
    *,
    slug: str,
    name: str = "",
    public: bool = False,
    group_names: Iterable[str] = (),
    curator_group_names: Iterable[str] = (),
) -> tuple[Collection, bool]:
    """Return the collection with `slug`, creating it (private unless `public`) if it does not exist.

    Groups are added, never removed: re-running an ingest must not narrow access set in the admin.
    A new collection without curator groups is curated by the curators group (every curator); a
    curator group given makes it that group's alone.
    """
    curator_group_names = list(curator_group_names)
    with transaction.atomic():
        collection, created = Collection.objects.get_or_create(
            slug=slug, defaults={"name": name or slug.replace("-", " ").title(), "is_public": public}
        )
        if created and not curator_group_names:
            collection.curator_groups.add(curators_group_ensure())
        for group_name in curator_group_names:
            group, _ = Group.objects.get_or_create(name=group_name)
            collection.curator_groups.add(group)
        if public and not collection.is_public:
            collection.is_public = True
            collection.save(update_fields=["is_public"])
        for group_name in group_names:
            group, _ = Group.objects.get_or_create(name=group_name)
            collection.groups.add(group)
    return collection, created


def curators_group_ensure() -> Group:
    """Create the curators group with the corpus admin permissions it needs (idempotent)."""
    group, _ = Group.objects.get_or_create(name=settings.CAIRN_CURATORS_GROUP)
    permissions = Permission.objects.filter(content_type__app_label__in=["corpus", "pipeline", "reputation"])
    group.permissions.add(*permissions)
    return group


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def documents_ingest(
    *,
    collection: Collection,
    documents: Iterable[ExtractedDocument],
    embedder: Embedder | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    origin: str = Document.Origin.SOURCE,
) -> IngestReport:
    """Add new documents, replace changed ones, skip unchanged ones (by SHA-256 of the text).

    Works in batches: one embedding call and one transaction per batch, so an interrupted run
    keeps every finished batch and a re-run resumes where it stopped. `on_progress(documents,
    chunks)` is called after each batch with the counts it handled.
    """
    report = IngestReport()
    documents = map(_without_nul, documents)
    seen_sources: set[str] = set()
    batch_size = settings.CAIRN_INGEST_BATCH_DOCUMENTS
    iterator = iter(documents)
    while batch := list(itertools.islice(iterator, batch_size)):
        unique = []
        for doc in batch:
            if doc.source in seen_sources:
                report.failed.append(ExtractionFailure(doc.source, "the same source appears twice in this run"))
            else:
                seen_sources.add(doc.source)
                unique.append(doc)
        chunk_count = _ingest_batch(
            collection=collection, batch=unique, embedder=embedder, report=report, origin=origin
        )
        if on_progress:
            on_progress(len(batch), chunk_count)
    return report


def _ingest_batch(
    *,
    collection: Collection,
    batch: list[ExtractedDocument],
    embedder: Embedder | None,
    report: IngestReport,
    origin: str,
) -> int:
    hashes = {doc.source: sha256_text(doc.text) for doc in batch}
    existing = {d.source: d for d in Document.objects.filter(collection=collection, source__in=list(hashes))}
    todo = []
    for doc in batch:
        known = existing.get(doc.source)
        if known is not None and known.status == Document.Status.RETRACTED:
            # A curator took it out: ingesting its source again does not bring it back (restore does).
            report.retracted += 1
            report.outcomes.append(DocumentOutcome(known, "retracted", 0))
        elif known is not None and known.sha256 == hashes[doc.source]:
            report.unchanged += 1
            report.outcomes.append(DocumentOutcome(known, "unchanged", 0))
        else:
            todo.append(doc)
    if not todo:
        return 0

    # Tokenising and embedding are the slow part: done before the transaction opens.
    embedder = embedder or get_embedder()
    pieces = [
        chunk_text(
            doc.text,
            count_tokens=embedder.count_tokens,
            split_tokens=embedder.split_tokens,
            max_tokens=settings.CAIRN_CHUNK_TOKENS,
            overlap_tokens=settings.CAIRN_CHUNK_OVERLAP_TOKENS,
        )
        for doc in todo
    ]
    headings = [
        [chunk_heading(doc.title, piece.section) for piece in doc_pieces] for doc, doc_pieces in zip(todo, pieces)
    ]
    inputs = [
        embedding_input(heading, piece.text)
        for doc_pieces, doc_headings in zip(pieces, headings)
        for piece, heading in zip(doc_pieces, doc_headings)
    ]
    vectors = iter(embedder.embed(inputs))

    changed = []
    for doc in todo:
        if (document := existing.get(doc.source)) is not None:
            document.title, document.sha256, document.updated_at = doc.title, hashes[doc.source], timezone.now()
            document.mime_type, document.metadata = doc.mime_type, doc.metadata
            changed.append(document)
    with transaction.atomic():
        kept = _chunks_kept(
            changed, {doc.source: [p.text for p in doc_pieces] for doc, doc_pieces in zip(todo, pieces)}
        )
        Document.objects.bulk_update(changed, ["title", "sha256", "mime_type", "metadata", "updated_at"])
        if changed:
            writebacks_requeue(changed)
        created = Document.objects.bulk_create(
            Document(
                collection=collection,
                title=doc.title,
                source=doc.source,
                sha256=hashes[doc.source],
                mime_type=doc.mime_type,
                metadata=doc.metadata,
                origin=origin,
            )
            for doc in todo
            if doc.source not in existing
        )
        by_source = {d.source: d for d in [*changed, *created]}
        written = [
            DocumentOutcome(by_source[doc.source], "updated" if doc.source in existing else "added", len(doc_pieces))
            for doc, doc_pieces in zip(todo, pieces)
        ]
        rows, moved = [], []
        for doc, doc_pieces, doc_headings in zip(todo, pieces, headings):
            document = by_source[doc.source]
            for ordinal, (piece, heading) in enumerate(zip(doc_pieces, doc_headings)):
                vector = next(vectors)
                if (chunk := kept.get((document.pk, ordinal))) is not None:
                    chunk.ordinal, chunk.heading, chunk.embedding = ordinal, heading, vector
                    moved.append(chunk)
                    continue
                rows.append(
                    Chunk(
                        document=document,
                        ordinal=ordinal,
                        heading=heading,
                        text=piece.text,
                        token_count=piece.token_count,
                        consistency=consistency_score(piece.text),
                        addresses_a_model=addresses_a_model(piece.text),
                        embedding=vector,
                    )
                )
        Chunk.objects.bulk_create(rows, batch_size=500)
        Chunk.objects.bulk_update(moved, ["ordinal", "heading", "embedding"], batch_size=500)
    # Counted only once the batch has committed.
    report.outcomes.extend(written)
    report.added += sum(o.outcome == "added" for o in written)
    report.updated += sum(o.outcome == "updated" for o in written)
    report.chunks += len(rows) + len(moved)
    return len(rows) + len(moved)


def _chunks_kept(documents: list[Document], texts: dict[str, list[str]]) -> dict[tuple[int, int], Chunk]:
    """Before a changed document's new chunks are written: keep each old chunk whose text reappears
    (its id, and so its reputation and the answers citing it, survive a re-ingest or an edit that
    left it alone), delete the others. Returns the kept chunks by (document id, new ordinal), parked
    at ordinals past the new ones so the unique (document, ordinal) constraint holds meanwhile."""
    kept: dict[tuple[int, int], Chunk] = {}
    gone: list[int] = []
    for document in documents:
        wanted: dict[str, list[int]] = {}
        for ordinal, text in enumerate(texts[document.source]):
            wanted.setdefault(text, []).append(ordinal)
        for chunk in Chunk.objects.filter(document=document).only("id", "text", "ordinal").order_by("ordinal"):
            if wanted.get(chunk.text):
                kept[(document.pk, wanted[chunk.text].pop(0))] = chunk
            else:
                gone.append(chunk.pk)
    Chunk.objects.filter(pk__in=gone).delete()
    parked = list(kept.values())
    for offset, chunk in enumerate(parked):
        chunk.ordinal = _PARKED + offset
    Chunk.objects.bulk_update(parked, ["ordinal"], batch_size=500)
    return kept


_PARKED = 1_000_000  # above any real ordinal


def _without_nul(document: ExtractedDocument) -> ExtractedDocument:
    """Postgres text and jsonb cannot hold NUL characters; a stray one must not fail the batch."""

    def clean(value):
        if isinstance(value, str):
            return value.replace("\x00", "")
        if isinstance(value, dict):
            return {clean(k): clean(v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    return ExtractedDocument(
        title=clean(document.title),
        text=clean(document.text),
        source=clean(document.source),
        mime_type=document.mime_type,
        metadata=clean(document.metadata),
    )


def embedding_input(heading: str, text: str) -> str:
    """What the embedder sees for a chunk: its heading (the document title and section path), then
    its text (the heading often carries the subject the text leaves implicit)."""
    return f"{heading}\n\n{text}" if heading else text


HEADING_PART_CHARS = 80  # a section path part (an API signature can be 200 characters) is cut here


def chunk_heading(title: str, section: tuple[str, ...]) -> str:
    """ "Title › Chapter › Section": where a chunk sits, stored on it, shown with it and embedded
    with it. A section whose heading repeats the title (a page's own h1) is not repeated."""
    parts = [title, *(s for i, s in enumerate(section) if not (i == 0 and s == title))]
    parts = [p if len(p) <= HEADING_PART_CHARS else p[: HEADING_PART_CHARS - 1] + "…" for p in parts if p]
    return " › ".join(parts)[:500]
