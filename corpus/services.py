"""Writes to the corpus: collections, ingestion, the curators role."""

from __future__ import annotations

import hashlib
import itertools
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth.models import Group, Permission
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from corpus.audit import audit
from corpus.chunking import chunk_text
from corpus.consistency import consistency_score
from corpus.embedder import Embedder, get_embedder
from corpus.instructions import addresses_a_model
from corpus.lifecycle import documents_changed
from corpus.models import Chunk, Collection, Document, Upload
from corpus.originals import OriginalFile, originals_for, originals_keep
from corpus.signals import collection_text_changed
from readers import locations
from readers.extract import ExtractedDocument, ExtractionError, ExtractionFailure, content_problem, extract_bytes

logger = logging.getLogger(__name__)


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
    """Create the curators group with the admin permissions it needs (idempotent): the store's,
    the answers', reputation's, the sources', and of the writeback app the review queue and the
    experience store (write-backs, critiques, the experience log; its lessons, gaps and marks are
    decided by user_is_curator)."""
    group, _ = Group.objects.get_or_create(name=settings.CAIRN_CURATORS_GROUP)
    permissions = Permission.objects.filter(
        Q(content_type__app_label__in=["corpus", "pipeline", "reputation", "sources"])
        | Q(
            content_type__app_label="writeback",
            content_type__model__in=["writeback", "writebackasking", "critique", "experiencelog"],
        )
    )
    group.permissions.add(*permissions)
    return group


def collection_gate_calibration_save(*, collection: Collection, calibration: dict, actor=None) -> Collection:
    """Store the gate thresholds fitted to `collection` (judges.collection_calibration; {} clears
    them: the global ones apply again), with an audit row of the old and new upper threshold."""
    before = collection.gate_calibration.get("relevance_upper")
    collection.gate_calibration = calibration
    collection.save(update_fields=["gate_calibration"])
    after = calibration.get("relevance_upper")
    audit("collection.calibrate_gate", collection, actor=actor,
          summary=f"upper relevance threshold {before} -> {after} ({calibration.get('questions', 0)} questions)",
          before={"relevance_upper": before}, after={"relevance_upper": after})  # fmt: skip
    return collection


# Bumped when the chunks of an unchanged text would come out differently (their windows, section
# paths or headings): a re-ingest then rewrites every document once, keeping the ids, and so the
# reputation, of the chunks whose text reappears. 2: a heading path names the page once however
# its title is spaced (DocBook's "4.&nbsp;Memcheck"), a title loses its site suffix whatever its
# case, and a period inside parentheses or after "eg"/"ie" ends no sentence. 3: a definition list
# breaks between entries as a page between sections, each chunk headed by its first entry's term.
# 4: "a.k.a." ends no sentence. 5: a section's small last subsection ("See also") ends that
# section's chunk instead of opening (and naming) the next section's. 6: a chunk's overlap never
# opens with a sentence that leans on the one before it ("This lets you…").
CHUNKING_VERSION = 6
# A published answer's document is named by its write-back ("writeback:12"): no other may take the
# name, or publishing that write-back would write over it (and an upload over a published answer).
WRITEBACK_SOURCE_PREFIX = "writeback:"
RESERVED_SOURCE = f"source names beginning {WRITEBACK_SOURCE_PREFIX!r} are reserved for published answers"


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def documents_ingest(
    *,
    collection: Collection,
    documents: Iterable[ExtractedDocument],
    embedder: Embedder | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    origin: str = Document.Origin.SOURCE,
    upload: Upload | None = None,
    originals: Mapping[str, OriginalFile] | None = None,
) -> IngestReport:
    """Add new documents, replace changed ones, skip unchanged ones (by SHA-256 of the text).

    Works in batches: one embedding call and one transaction per batch, so an interrupted run
    keeps every finished batch and a re-run resumes where it stopped. `on_progress(documents,
    chunks)` is called after each batch with the counts it handled. `upload` is recorded on each
    document it adds or changes. `originals` names the file each source was read from: it is kept
    as the document's original (corpus.originals), a changed file's replacing the old one, also
    where the text did not change.
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
            elif doc.source.startswith(WRITEBACK_SOURCE_PREFIX) and origin != Document.Origin.GENERATED:
                report.failed.append(ExtractionFailure(doc.source, RESERVED_SOURCE))
            else:
                seen_sources.add(doc.source)
                unique.append(doc)
        chunk_count = _ingest_batch(
            collection=collection, batch=unique, embedder=embedder, report=report, origin=origin, upload=upload
        )
        if originals:
            files = {doc.source: originals[doc.source] for doc in unique if doc.source in originals}
            originals_keep(collection=collection, files=files)
        if on_progress:
            on_progress(len(batch), chunk_count)
    if report.added or report.updated:
        collection_text_changed.send(sender=Collection, collection=collection)
    return report


def _ingest_batch(
    *,
    collection: Collection,
    batch: list[ExtractedDocument],
    embedder: Embedder | None,
    report: IngestReport,
    origin: str,
    upload: Upload | None,
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
        elif known is not None and (known.sha256, known.title, known.chunked_by) == (
            hashes[doc.source],
            doc.title,
            CHUNKING_VERSION,
        ):
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
            document.chunked_by = CHUNKING_VERSION
            document.mime_type, document.metadata, document.upload = doc.mime_type, doc.metadata, upload
            changed.append(document)
    with transaction.atomic():
        kept = _chunks_kept(
            changed, {doc.source: [p.text for p in doc_pieces] for doc, doc_pieces in zip(todo, pieces)}
        )
        Document.objects.bulk_update(
            changed, ["title", "sha256", "chunked_by", "mime_type", "metadata", "upload", "updated_at"]
        )
        if changed:
            documents_changed.send(sender=Document, documents=changed, actor=None, why="changed")
        created = Document.objects.bulk_create(
            Document(
                collection=collection,
                title=doc.title,
                source=doc.source,
                sha256=hashes[doc.source],
                chunked_by=CHUNKING_VERSION,
                mime_type=doc.mime_type,
                metadata=doc.metadata,
                origin=origin,
                upload=upload,
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
                    chunk.location = piece.location
                    moved.append(chunk)
                    continue
                rows.append(
                    Chunk(
                        document=document,
                        ordinal=ordinal,
                        heading=heading,
                        location=piece.location,
                        text=piece.text,
                        token_count=piece.token_count,
                        consistency=consistency_score(piece.text),
                        addresses_a_model=addresses_a_model(piece.text),
                        embedding=vector,
                    )
                )
        Chunk.objects.bulk_create(rows, batch_size=500)
        Chunk.objects.bulk_update(moved, ["ordinal", "heading", "location", "embedding"], batch_size=500)
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


def _nul_free(value):
    """Postgres text and jsonb cannot hold NUL characters; a stray one must not fail the write."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {_nul_free(k): _nul_free(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nul_free(v) for v in value]
    return value


def _without_nul(document: ExtractedDocument) -> ExtractedDocument:
    text = _nul_free(document.text)
    return ExtractedDocument(
        title=_nul_free(document.title),
        text=text if document.located else locations.strip_markers(text),
        located=document.located,
        source=_nul_free(document.source),
        mime_type=document.mime_type,
        metadata=_nul_free(document.metadata),
    )


# --- Uploads: every document posted to the API, who sent it and what became of it -------------


def upload_receive(*, uploader, collection: Collection, name: str, data: bytes, options: dict) -> Upload:
    """Record an upload and audit its receipt. Bytes that are not text in the format `name` claims
    are refused before anything reads them: the upload is failed and ExtractionError, naming the
    file, raised. One larger than CAIRN_SYNC_UPLOAD_BYTES keeps its bytes on the row, queued for
    the worker; a smaller one is ingesting, in the request (upload_ingest)."""
    problem = None if options.get("kind") == "text" else content_problem(name, data, charset=options.get("charset"))
    for_worker = problem is None and len(data) > settings.CAIRN_SYNC_UPLOAD_BYTES
    with transaction.atomic():
        upload = Upload.objects.create(
            uploader=uploader,
            collection=collection,
            name=_nul_free(name)[:500],
            size=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            options=_nul_free(options),
            data=data if for_worker else None,
            status=Upload.Status.QUEUED if for_worker else Upload.Status.INGESTING,
        )
        audit(
            "upload.receive",
            upload,
            actor=uploader,
            summary=f"{upload.name} ({len(data)} bytes) for {collection.slug}",
            after={"status": upload.status, "sha256": upload.sha256},
        )
    if problem:
        upload_fail(upload=upload, reason=f"{name}: {problem}")
        raise ExtractionError(f"{name}: {problem}")
    return upload


def upload_claim(*, upload_id: int) -> Upload | None:
    """Mark a queued upload ingesting and return it; None when it is already finished. One still
    `ingesting` is claimed again: its worker died, and ingestion skips what it had finished."""
    claimed = Upload.objects.filter(id=upload_id, status__in=[Upload.Status.QUEUED, Upload.Status.INGESTING]).update(
        status=Upload.Status.INGESTING, documents_done=0
    )
    return Upload.objects.select_related("collection", "uploader").get(id=upload_id) if claimed == 1 else None


def upload_ingest(*, upload: Upload, data: bytes, embedder: Embedder | None = None) -> IngestReport:
    """Extract `data` (the upload's bytes) and ingest it into the upload's collection, keeping the
    row's progress, then its counts and status, and audit the outcome. Raise ExtractionError, its
    message naming the file, when nothing in it can be ingested (the upload is then failed)."""
    try:
        items = _upload_items(upload, data)
        failures = [item for item in items if isinstance(item, ExtractionFailure)]
        documents = [item for item in items if isinstance(item, ExtractedDocument)]
        if not documents:
            raise ExtractionError(
                "; ".join(f"{f.name}: {f.reason}" for f in failures) or f"{upload.name}: no document found"
            )
        Upload.objects.filter(pk=upload.pk).update(documents_total=len(documents))

        def on_progress(done: int, _chunks: int) -> None:
            Upload.objects.filter(pk=upload.pk).update(documents_done=F("documents_done") + done)

        # Text posted as JSON has no file behind it; a file's bytes are its documents' original.
        kept = (
            {}
            if upload.options.get("kind") == "text"
            else originals_for(upload.name, [d.source for d in documents], data=data)
        )
        report = documents_ingest(
            collection=upload.collection, documents=documents, embedder=embedder, on_progress=on_progress,
            upload=upload, originals=kept,
        )  # fmt: skip
    except ExtractionError as exc:
        upload_fail(upload=upload, reason=str(exc))
        raise
    except Exception:
        upload_fail(upload=upload, reason="ingestion stopped on an internal error (see the server log)")
        raise
    report.failed[:0] = failures  # extraction failures first, in file order
    counts = {
        "added": report.added,
        "updated": report.updated,
        "unchanged": report.unchanged,
        "retracted": report.retracted,
        "failed": len(report.failed),
        "chunks": report.chunks,
    }
    with transaction.atomic():
        _upload_finish(upload, status=Upload.Status.DONE, counts=counts)
        summary = ", ".join(f"{n} {k}" for k, n in counts.items())
        audit("upload.ingest", upload, actor=upload.uploader, summary=summary, after=counts)
    return report


def upload_fail(*, upload: Upload, reason: str) -> None:
    """Mark an upload failed for `reason` (which names the file) and audit it."""
    with transaction.atomic():
        _upload_finish(upload, status=Upload.Status.FAILED, error=reason)
        audit("upload.fail", upload, actor=upload.uploader, summary=reason[:2000])


def _upload_finish(upload: Upload, *, status: str, counts: dict | None = None, error: str = "") -> None:
    # The bytes go: the corpus holds the text now, and a failed file is fixed and sent again.
    upload.status, upload.counts, upload.error, upload.data = status, counts or {}, error, None
    upload.finished_at = timezone.now()
    upload.save(update_fields=["status", "counts", "error", "data", "finished_at"])
    upload.refresh_from_db(fields=["documents_done", "documents_total"])


def _upload_items(upload: Upload, data: bytes) -> list[ExtractedDocument | ExtractionFailure]:
    options = upload.options
    if options.get("kind") == "text":  # JSON `title` + `text`: a string already, checked by the API
        return [
            ExtractedDocument(
                title=options["title"],
                text=data.decode("utf-8"),
                source=options.get("source") or f"api:{options['title']}",
                mime_type="text/plain",
                metadata=options.get("metadata", {}),
            )
        ]

    def on_page(number: int, count: int, ocr: bool) -> None:  # OCR takes seconds a page: say where it is
        if ocr:
            logger.info("upload %s (%s): page %d of %d read by OCR", upload.pk, upload.name, number, count)

    try:
        items = extract_bytes(
            upload.name,
            data,
            source=options.get("source") or f"upload:{upload.name}",
            charset=options.get("charset"),
            on_page=on_page,
        )
    except ExtractionError as exc:
        raise ExtractionError(f"{upload.name}: {exc}") from exc
    documents = [item for item in items if isinstance(item, ExtractedDocument)]
    for document in documents:
        document.metadata = {**document.metadata, **options.get("metadata", {})}
    if len(documents) == 1 and options.get("title"):  # a title names one document, not a .jsonl's lines
        documents[0].title = options["title"]
    return items


def embedding_input(heading: str, text: str) -> str:
    """What the embedder sees for a chunk: its heading (the document title and section path), then
    its text (the heading often carries the subject the text leaves implicit)."""
    return f"{heading}\n\n{text}" if heading else text


HEADING_PART_CHARS = 80  # a section path part (an API signature can be 200 characters) is cut here


def chunk_heading(title: str, section: tuple[str, ...]) -> str:
    """ "Title › Chapter › Section": where a chunk sits, stored on it, shown with it and embedded
    with it. A section whose heading repeats the title (a page's own h1) is not repeated, whatever
    spaces either is written with: DocBook writes "4.&nbsp;Memcheck" in the h1 and the title, and
    every chunk of a Valgrind or PostgreSQL manual page was headed "4. Memcheck › 4. Memcheck › …"."""
    title, section = " ".join(title.split()), tuple(" ".join(s.split()) for s in section)  # NBSP too
    parts = [title, *(s for i, s in enumerate(section) if not (i == 0 and s.casefold() == title.casefold()))]
    parts = [p if len(p) <= HEADING_PART_CHARS else p[: HEADING_PART_CHARS - 1] + "…" for p in parts if p]
    return " › ".join(parts)[:500]
