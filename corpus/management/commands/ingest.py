"""python manage.py ingest PATH... --collection SLUG"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from corpus.originals import OriginalFile, originals_for
from corpus.services import collection_get_or_create, documents_ingest
from readers.extract import ExtractedDocument, ExtractionError, ExtractionFailure, discover_files, extract_file
from readers.formats import FORMATS


class Command(BaseCommand):
    help = f"Ingest files (folders recursively) into a collection: {', '.join(sorted(FORMATS))}."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", type=Path)
        parser.add_argument("--collection", required=True, help="Collection slug; created if it does not exist.")
        parser.add_argument("--public", action="store_true", help="Make the collection readable by every user.")
        parser.add_argument("--group", action="append", default=[], help="A group that may read it (repeatable).")
        parser.add_argument(
            "--curators", action="append", default=[], metavar="GROUP",
            help="A group whose curators curate it (repeatable; default for a new collection: every curator).",
        )  # fmt: skip

    def handle(self, *args, paths, collection, public, group, curators, verbosity, **options):
        collection_obj, created = collection_get_or_create(
            slug=collection, public=public, group_names=group, curator_group_names=curators
        )
        if created and not (public or group):
            self.stdout.write(
                f"Created collection {collection!r}: private (superusers only) until groups are added in the "
                "admin or the command is re-run with --public or --group."
            )
        files, failures = discover_files(paths)
        if not files and failures:
            raise CommandError("; ".join(f"{f.name}: {f.reason}" for f in failures))

        documents: list[ExtractedDocument] = []
        originals: dict[str, OriginalFile] = {}  # each document's file, copied into the originals storage
        reading = tqdm(files, desc="reading", unit="file", disable=verbosity == 0)
        scanned = 0  # PDF pages read by OCR (seconds each): shown as they are read

        def on_page(number: int, count: int, ocr: bool) -> None:
            nonlocal scanned
            scanned += ocr
            if ocr or number == count or number % 50 == 0:
                reading.set_postfix(page=f"{number}/{count}", ocr_pages=scanned)

        for path in reading:
            try:
                for item in extract_file(path, on_page=on_page):
                    (failures if isinstance(item, ExtractionFailure) else documents).append(item)
                    if isinstance(item, ExtractedDocument):
                        originals.update(originals_for(path.name, [item.source], path=path))
            except ExtractionError as exc:
                failures.append(ExtractionFailure(str(path), str(exc)))
            except OSError as exc:
                failures.append(ExtractionFailure(str(path), f"cannot read: {exc.strerror or exc}"))

        with tqdm(total=len(documents), desc="ingesting", unit="doc", disable=verbosity == 0) as bar:
            chunk_total = 0

            def on_progress(doc_count: int, chunk_count: int) -> None:
                nonlocal chunk_total
                chunk_total += chunk_count
                bar.update(doc_count)
                bar.set_postfix(chunks=chunk_total)

            report = documents_ingest(
                collection=collection_obj, documents=documents, on_progress=on_progress, originals=originals
            )
        failures += report.failed

        self.stdout.write(
            f"{collection}: {report.added} added, {report.updated} updated, {report.unchanged} unchanged, "
            f"{len(failures)} failed; {report.chunks} chunks written."
            + (f" {scanned} scanned PDF pages read by OCR." if scanned else "")
        )
        for document in documents:
            if low := document.metadata.get("low_confidence_pages"):
                self.stdout.write(f"  low OCR confidence: {document.source} pages {', '.join(map(str, low))}")
        for outcome in report.outcomes:
            if outcome.outcome == "retracted":
                self.stdout.write(
                    f"  retracted: {outcome.document.source} (document {outcome.document.id}) stays retracted; "
                    "restore it to use it again"
                )
        for failure in failures:
            self.stderr.write(f"  failed: {failure.name}: {failure.reason}")
