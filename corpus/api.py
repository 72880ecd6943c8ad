"""REST endpoints for documents, chunks and uploads. Views validate, call one selector or service, serialise."""

import re
from functools import partial

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import transaction
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import (
    OpenApiRequest,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import serializers, status
from rest_framework.generics import ListAPIView
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from common.exceptions import CairnError
from common.fields import StrictCharField, StrictSlugField
from common.schema import NOT_BLANK, error
from corpus.lifecycle import document_move, document_restore, document_retract
from corpus.models import Collection, Document, Upload
from corpus.originals import place
from corpus.permissions import IsCurator
from corpus.selectors import (
    chunks_readable_by,
    collections_curated_by,
    collections_readable_by,
    document_list,
    document_with_original,
    documents_curated_by,
    uploads_visible_to,
)
from corpus.services import RESERVED_SOURCE, WRITEBACK_SOURCE_PREFIX, upload_ingest, upload_receive
from corpus.tasks import upload_ingest_enqueue
from corpus.views import original_response
from readers.extract import ExtractionError


class SourceNameField(StrictCharField):
    """A document's source; the reserved prefix is a pattern, so that the schema says it too."""

    def __init__(self, **kwargs):
        reserved = RegexValidator(rf"^(?!{re.escape(WRITEBACK_SOURCE_PREFIX)}){NOT_BLANK[1:]}", RESERVED_SOURCE)
        help_text = "Names the document; re-posting the same source replaces it."
        super().__init__(max_length=1000, required=False, help_text=help_text, validators=[reserved], **kwargs)


class DocumentOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    collection = serializers.CharField(source="collection.slug")
    title = serializers.CharField()
    source = serializers.CharField()
    sha256 = serializers.CharField()
    mime_type = serializers.CharField()
    origin = serializers.CharField()
    status = serializers.CharField()
    metadata = serializers.JSONField()
    chunk_count = serializers.IntegerField()
    original_url = serializers.SerializerMethodField(
        help_text="The file it was read from (`GET /documents/{id}/original`); null when none is kept."
    )
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()

    def get_original_url(self, document) -> str | None:
        return reverse("document-original-api", args=[document.id]) if document.original_id else None


class ChunkOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    document_id = serializers.IntegerField()
    document_title = serializers.CharField(source="document.title")
    ordinal = serializers.IntegerField()
    text = serializers.CharField()
    token_count = serializers.IntegerField()
    location = serializers.JSONField(help_text='Where it sits in the original file: {"page": 12}, {"slide": 4}, ...')
    location_label = serializers.SerializerMethodField(help_text='"page 12", "slide 4", "sheet Prices, rows 2–41"')
    original_url = serializers.SerializerMethodField(help_text="The original opened at that place; null when none.")

    def get_location_label(self, chunk) -> str:
        return place(chunk)["location_label"]

    def get_original_url(self, chunk) -> str | None:
        return place(chunk)["original_url"]


class IngestedDocumentSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="document.id")
    title = serializers.CharField(source="document.title")
    source = serializers.CharField(source="document.source")
    result = serializers.ChoiceField(choices=["added", "updated", "unchanged", "retracted"], source="outcome")
    chunks = serializers.IntegerField(help_text="Chunks written (0 when unchanged).")


class IngestFailureSerializer(serializers.Serializer):
    name = serializers.CharField()
    reason = serializers.CharField()


class IngestOutputSerializer(serializers.Serializer):
    added = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()
    retracted = serializers.IntegerField(help_text="Sources of retracted documents: left retracted (restore them).")
    documents = IngestedDocumentSerializer(many=True, source="outcomes")
    failed = IngestFailureSerializer(many=True)


class UploadProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField(source="documents_done", help_text="Documents ingested so far.")
    total = serializers.IntegerField(
        source="documents_total", allow_null=True, help_text="Documents in the upload, once extracted."
    )


class UploadOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    collection = serializers.CharField(source="collection.slug")
    name = serializers.CharField(help_text="The file's name, or the title of a text.")
    size = serializers.IntegerField()
    sha256 = serializers.CharField()
    uploader = serializers.CharField(source="uploader.username", allow_null=True)
    status = serializers.ChoiceField(choices=Upload.Status.choices)
    progress = UploadProgressSerializer(source="*")
    counts = serializers.DictField(
        child=serializers.IntegerField(), help_text="When done: added, updated, unchanged, retracted, failed, chunks."
    )
    error = serializers.CharField(help_text="When failed: why, naming the file.")
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


FILE_PART = {
    "contentType": "text/plain",
    "headers": {
        "Content-Disposition": {
            "description": "The file's name: its suffix names a format Cairn reads (readers/formats.py).",
            "schema": {"type": "string", "example": 'form-data; name="file"; filename="notes.txt"'},
        }
    },
}


# A form's parts, with the examples a client generating a multipart body from the schema fills in
# (without them, an empty collection, which is no slug, or a PNG image named notes.txt).
@extend_schema_field({"type": "string", "pattern": "^[-a-zA-Z0-9_]+$", "example": "handbook"})
class CollectionPartField(StrictSlugField):
    pass


@extend_schema_field({"type": "string", "format": "binary", "minLength": 1, "example": "The canteen opens at 8 am."})
class FilePartField(serializers.FileField):
    pass


class DocumentListApi(ListAPIView):
    """List the active documents the caller may read; curators may add documents."""

    @property
    def max_body_bytes(self) -> int:  # a JSON upload carries the document's text (common/parsers.py)
        return settings.CAIRN_MAX_UPLOAD_BYTES + 64 * 1024

    class DocumentFilterSerializer(serializers.Serializer):
        collection = serializers.SlugField(required=False)

    class DocumentInputSerializer(serializers.Serializer):
        collection = StrictSlugField()
        title = StrictCharField(max_length=500, required=False)
        text = StrictCharField(required=False, trim_whitespace=True)
        file = serializers.FileField(required=False)
        source = SourceNameField()
        metadata = serializers.DictField(required=False, default=dict)

        def validate(self, data):
            if ("text" in data) == ("file" in data):
                raise serializers.ValidationError({"text": ["Send exactly one of 'text' (with 'title') or 'file'."]})
            if "text" in data and not data.get("title"):
                raise serializers.ValidationError({"title": ["A title is required with 'text'."]})
            return data

    # The two bodies the input above reads: a text as JSON, or a file (multipart/form-data).
    TextInput = inline_serializer("DocumentTextInput", {
        "collection": StrictSlugField(), "title": StrictCharField(max_length=500),
        "text": StrictCharField(trim_whitespace=True), "source": SourceNameField(),
        "metadata": serializers.DictField(required=False),
    })  # fmt: skip
    FileInput = inline_serializer("DocumentFileInput", {
        "collection": CollectionPartField(), "file": FilePartField(), "title": StrictCharField(max_length=500, required=False),
        "source": SourceNameField(),
    })  # fmt: skip

    serializer_class = DocumentOutputSerializer

    @property
    def throttle_scope(self) -> str | None:
        return "upload" if self.request.method == "POST" else None  # reading the list is not limited

    def get_permissions(self):
        return [IsAuthenticated(), IsCurator()] if self.request.method == "POST" else [IsAuthenticated()]

    def get_queryset(self):
        filters = self.DocumentFilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)
        return document_list(user=self.request.user, collection_slug=filters.validated_data.get("collection"))

    @extend_schema(parameters=[DocumentFilterSerializer])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        request={
            "application/json": TextInput,
            # The part's name gives its format (readers/formats.py: .txt, .md, .pdf, .docx, ...).
            "multipart/form-data": OpenApiRequest(FileInput, encoding={"file": FILE_PART}),
        },
        responses={
            200: IngestOutputSerializer,
            201: IngestOutputSerializer,
            202: UploadOutputSerializer,
            400: error("A field at fault, or a file whose bytes are not text in the format its name claims."),
            403: error("Not a curator, or not of this collection."),
            404: error("No collection by that name that you may read."),
        },
        description="Up to CAIRN_SYNC_UPLOAD_BYTES the document is ingested in the request (201 when added, "
        "200 otherwise); a larger one is queued for the worker: 202 with the upload's status, whose Location "
        "is `GET /uploads/{id}`. A file whose bytes are not text in the format its name claims is a 400.",
    )
    def post(self, request):
        _reject_oversized(request)
        data = self.DocumentInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        payload = data.validated_data
        collection = _collection_to_upload_to(request.user, payload["collection"])
        name, content, options = _upload_from_input(payload)
        try:
            upload = upload_receive(
                uploader=request.user, collection=collection, name=name, data=content, options=options
            )
            if upload.status == Upload.Status.QUEUED:
                transaction.on_commit(partial(upload_ingest_enqueue, upload.id))
                return Response(
                    UploadOutputSerializer(upload).data,
                    status=status.HTTP_202_ACCEPTED,
                    headers={"Location": reverse("upload-detail", args=[upload.id])},
                )
            report = upload_ingest(upload=upload, data=content)
        except ExtractionError as exc:  # the message names the file (never a server path)
            raise CairnError("file", str(exc)) from exc
        return Response(
            IngestOutputSerializer(report).data,
            status=status.HTTP_201_CREATED if report.added else status.HTTP_200_OK,
        )


def _collection_to_upload_to(user, slug: str) -> Collection:
    collection = collections_curated_by(user=user).filter(slug=slug).first()
    if collection is None:
        if collections_readable_by(user=user).filter(slug=slug).exists():
            raise CairnError(
                "collection", f"you do not curate collection {slug!r}", status_code=status.HTTP_403_FORBIDDEN
            )
        raise CairnError("collection", f"unknown collection {slug!r}", status_code=status.HTTP_404_NOT_FOUND)
    return collection


def _reject_oversized(request) -> None:
    # DRF's JSON parser reads the stream itself, past Django's DATA_UPLOAD_MAX_MEMORY_SIZE check.
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > settings.CAIRN_MAX_UPLOAD_BYTES:
        raise CairnError(
            "file" if request.content_type.startswith("multipart/") else "text",
            f"the request is {length} bytes; the limit is {settings.CAIRN_MAX_UPLOAD_BYTES} (CAIRN_MAX_UPLOAD_BYTES)",
            status_code=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )


def _upload_from_input(payload: dict) -> tuple[str, bytes, dict]:
    """The upload's name, bytes and options (what the worker needs besides the bytes)."""
    shared = {"source": payload.get("source", ""), "metadata": payload["metadata"], "title": payload.get("title", "")}
    if "text" in payload:
        return payload["title"], payload["text"].encode("utf-8"), {**shared, "kind": "text"}
    upload = payload["file"]
    if upload.size > settings.CAIRN_MAX_UPLOAD_BYTES:
        raise CairnError(
            "file",
            f"the file is {upload.size} bytes; the limit is {settings.CAIRN_MAX_UPLOAD_BYTES}",
            status_code=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    # The charset its sender declared in the part's Content-Type: what its text is decoded as
    # (Django's multipart parser hands it over as bytes).
    charset = upload.charset.decode("ascii", "replace") if isinstance(upload.charset, bytes) else upload.charset
    return upload.name, upload.read(), {**shared, "kind": "file", "charset": charset or ""}


class UploadDetailApi(APIView):
    """An upload's status: for its uploader, the curators of its collection and superusers."""

    @extend_schema(responses=UploadOutputSerializer)
    def get(self, request, upload_id: int):
        upload = get_object_or_404(uploads_visible_to(user=request.user), id=upload_id)
        return Response(UploadOutputSerializer(upload).data)


class DocumentDetailApi(APIView):
    @extend_schema(responses=DocumentOutputSerializer)
    def get(self, request, document_id: int):
        document = get_object_or_404(document_list(user=request.user), id=document_id)
        return Response(DocumentOutputSerializer(document).data)


class DocumentOriginalApi(APIView):
    """The file a document was read from: a PDF inline, anything else as an attachment; 404 for
    a document the caller may not read or one that keeps no file (text posted as JSON, a .jsonl's
    lines). Chunks and citations give `original_url`, the page at the place they came from."""

    def perform_content_negotiation(self, request, force=False):
        return super().perform_content_negotiation(request, force=True)  # a file, whatever Accept says

    # The file in its own media type: a PDF, a Word file, a text file as uploaded.
    @extend_schema(responses={(200, "*/*"): OpenApiResponse(bytes, description="The original file, as it was read.")})
    def get(self, request, document_id: int):
        document = document_with_original(user=request.user, document_id=document_id)
        if document is None:
            raise Http404("No such original.")
        return original_response(document)


class ChunkDetailApi(APIView):
    @extend_schema(responses=ChunkOutputSerializer)
    def get(self, request, chunk_id: int):
        chunks = chunks_readable_by(user=request.user).select_related("document__original")
        chunk = get_object_or_404(chunks, id=chunk_id)
        return Response(ChunkOutputSerializer(chunk).data)


def _curated_document(user, document_id: int) -> Document:
    """A document of a collection `user` curates; outside them "not found", whatever its status."""
    return get_object_or_404(documents_curated_by(user=user), id=document_id)


class ReasonInputSerializer(serializers.Serializer):
    """Why a curator retracts, restores or moves a document: it goes into the audit row."""

    reason = StrictCharField(required=False, allow_blank=True, max_length=2000, default="")


class RetractOutputSerializer(serializers.Serializer):
    documents = serializers.ListField(child=serializers.IntegerField(), help_text="Retracted, the cascade included.")
    writebacks = serializers.ListField(child=serializers.IntegerField(), help_text="Write-backs retracted with them.")


class DocumentRetractApi(APIView):
    """Curators: retract a document and, transitively, every write-back resting on it."""

    permission_classes = [IsCurator]

    @extend_schema(
        request=ReasonInputSerializer,
        responses={200: RetractOutputSerializer, 409: error("The document is retracted already.")},
    )
    def post(self, request, document_id: int):
        data = ReasonInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        document = _curated_document(request.user, document_id)
        if document.status != Document.Status.ACTIVE:
            raise CairnError(
                "document", f"document {document_id} is already {document.status}", status_code=status.HTTP_409_CONFLICT
            )
        result = document_retract(document, actor=request.user, reason=data.validated_data["reason"])
        return Response(
            {"documents": [d.id for d in result["documents"]], "writebacks": [w.id for w in result["writebacks"]]}
        )


class RestoreOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()


class DocumentRestoreApi(APIView):
    """Curators: undo a retraction (what it cascaded to stays retracted, for review)."""

    permission_classes = [IsCurator]

    @extend_schema(
        request=ReasonInputSerializer,
        responses={
            200: RestoreOutputSerializer,
            409: error("The document is not retracted, or is a published answer whose write-back is not published."),
        },
    )
    def post(self, request, document_id: int):
        data = ReasonInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        document = _curated_document(request.user, document_id)
        restored = document_restore(document, actor=request.user, reason=data.validated_data["reason"])
        return Response(RestoreOutputSerializer(restored).data)


class MoveOutputSerializer(RestoreOutputSerializer):
    collection = serializers.CharField()


class DocumentMoveApi(APIView):
    """Curators of both collections: move a document (audited; what rests on it goes back to review)."""

    permission_classes = [IsCurator]

    class MoveInputSerializer(ReasonInputSerializer):
        collection = serializers.SlugField(help_text="The collection to move it to.")

    @extend_schema(
        request=MoveInputSerializer,
        responses={
            200: MoveOutputSerializer,
            404: error("No document by that id you curate, or no collection by that name you curate."),
            409: error("The document is in that collection already, or it has a document from the same source."),
        },
    )
    def post(self, request, document_id: int):
        data = self.MoveInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        document = _curated_document(request.user, document_id)
        target = collections_curated_by(user=request.user).filter(slug=data.validated_data["collection"]).first()
        if target is None:
            slug = data.validated_data["collection"]
            raise CairnError("collection", f"you curate no collection {slug!r}", status_code=status.HTTP_404_NOT_FOUND)
        moved = document_move(document, target, actor=request.user, reason=data.validated_data["reason"])
        return Response(MoveOutputSerializer({"id": moved.id, "status": moved.status, "collection": target.slug}).data)
