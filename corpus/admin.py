from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import get_fields_from_path
from django.contrib.auth.models import Group
from django.db.models import Count, Q
from django.template.defaultfilters import filesizeformat
from django.template.response import TemplateResponse
from django.utils.html import format_html, format_html_join

from common.exceptions import CairnError
from corpus.lifecycle import document_move, document_restore, document_retract
from corpus.models import AuditEvent, Chunk, Collection, Document, Upload
from corpus.originals import document_original_url, original_filename
from corpus.selectors import collections_curated_by, documents_curated_by
from readers import locations


class CuratedAdmin(admin.ModelAdmin):
    """Lists, shows and changes only the rows of collections the signed-in curator curates
    (corpus.selectors.collections_curated_by); superusers see everything. A row outside them is
    "not found", as it is to the API."""

    curated_through = "collection"  # the lookup from this model to its Collection
    # Or the lookup to its Document: a document may quote other collections too (documents_curated_by).
    curated_document: str | None = None

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        return queryset.filter(pk__in=self.curated(request, self.model.objects.all()).values("pk"))

    def curated(self, request, queryset):
        if self.curated_document is not None:
            return queryset.filter(**{f"{self.curated_document}__in": documents_curated_by(user=request.user)})
        return queryset.filter(**{f"{self.curated_through}__in": collections_curated_by(user=request.user)})

    def apply_each(self, request, items, action, *, done: str, noun: str, label=lambda item: item.id, where="") -> None:
        """`action` on each selected row, a refusal (a CairnError: the wrong status, a cap) stopping
        no other; the curator is told how many were `done`, and why the rest were not."""
        count, refused = 0, []
        for item in items:
            try:
                action(item)
                count += 1
            except CairnError as exc:
                refused.append(f"{label(item)}: {exc.message}")
        self.message_user(request, f"{done.capitalize()} {count} {noun}(s){where}.")
        if refused:
            self.message_user(request, f"Not {done}: " + "; ".join(refused), level=messages.WARNING)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.related_model is Collection:
            kwargs["queryset"] = collections_curated_by(user=request.user)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_list_filter(self, request):
        """A filter on a relation lists every row of the related table (every collection's slug);
        here only those the curator's own rows reach."""
        return [
            (f, admin.RelatedOnlyFieldListFilter)
            if isinstance(f, str) and get_fields_from_path(self.model, f)[-1].is_relation
            else f
            for f in super().get_list_filter(request)
        ]


class SuperuserOnlyAdmin(admin.ModelAdmin):
    """Rows that belong to no one collection (or say who asked what): for superusers only."""

    def has_module_permission(self, request):
        return request.user.is_superuser

    def has_view_permission(self, request, obj=None):
        return request.user.is_superuser


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows only the application writes (the audit trail, uploads): shown, never added, changed or
    deleted here."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Collection)
class CollectionAdmin(CuratedAdmin):
    """Curators change the readers and curators of the collections they curate (each change
    audited by corpus.signals); only superusers create collections."""

    curated_through = "pk"
    list_display = ["slug", "name", "is_public", "document_count", "created_at"]
    list_filter = ["is_public"]
    search_fields = ["slug", "name", "description"]
    prepopulated_fields = {"slug": ["name"]}
    filter_horizontal = ["groups", "curator_groups"]
    readonly_fields = ["relevance_upper"]  # fitted by calibrate_gate --collection, never typed in

    @admin.display(description="upper relevance threshold")
    def relevance_upper(self, obj):
        fitted = obj.gate_calibration
        if not fitted:
            return "global (calibrate_gate --collection fits this collection's own)"
        return f"{fitted['relevance_upper']} (fitted {fitted['calibrated_at']} from {fitted['questions']} questions)"

    def has_add_permission(self, request):
        return request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        """A curator chooses among the groups of the collections they curate and their own: the
        list of every group in the directory is no business of theirs."""
        if db_field.related_model is Group and not request.user.is_superuser:
            curated = collections_curated_by(user=request.user)
            kwargs["queryset"] = Group.objects.filter(
                Q(collections__in=curated) | Q(curated_collections__in=curated) | Q(user=request.user)
            ).distinct()
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(document_count=Count("documents"))

    @admin.display(ordering="document_count")
    def document_count(self, obj):
        return obj.document_count


class ChunkInline(admin.TabularInline):
    model = Chunk
    fields = ["ordinal", "place", "token_count", "text"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    @admin.display(description="Place")
    def place(self, obj):
        """Where the chunk sits in the original ("page 12", "slide 4"), opening the original there."""
        label = locations.label(obj.location)
        url = document_original_url(obj.document, obj.location) if label else None
        return format_html('<a href="{}">{}</a>', url, label) if url else label or "-"

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("document__original")

    def has_add_permission(self, request, obj=None):
        return False


class OcrConfidenceFilter(admin.SimpleListFilter):
    """Scanned PDFs whose OCR a curator should check: pages read below CAIRN_OCR_LOW_CONFIDENCE
    (the reader writes "ocr_pages" and "low_confidence_pages" into the document's metadata)."""

    title = "OCR: low confidence pages"
    parameter_name = "ocr"

    def lookups(self, request, model_admin):
        return [("low", "has low-confidence pages"), ("read", "read by OCR, all pages confident"), ("none", "no OCR")]

    def queryset(self, request, queryset):
        read = Q(metadata__has_key="ocr_pages")
        low = read & Q(metadata__low_confidence_pages__0__isnull=False)
        if self.value() == "low":
            return queryset.filter(low)
        if self.value() == "read":
            return queryset.filter(read).exclude(low)
        if self.value() == "none":
            return queryset.exclude(read)
        return queryset


@admin.register(Document)
class DocumentAdmin(CuratedAdmin):
    curated_document = "pk"
    list_display = ["title", "collection", "origin", "status", "mime_type", "updated_at"]
    list_filter = ["collection", "origin", "status", "mime_type", OcrConfidenceFilter]
    list_select_related = ["collection"]
    search_fields = ["title", "source", "sha256"]
    # Shown, never edited here: title, source and metadata are what the source says (its next ingest
    # writes them again, and the chunks are embedded under the title), and who uploaded it is a fact.
    # Status changes through the retract / restore actions and the collection through move: they
    # cascade to what rests on the document and leave audit rows, which a bare field edit would not.
    fields = ["title", "collection", "source", "origin", "status", "mime_type", "original_file", "ocr_pages",
              "metadata", "upload", "sha256", "requires_collections", "created_at", "updated_at"]  # fmt: skip
    readonly_fields = fields
    inlines = [ChunkInline]
    actions = ["retract", "restore", "move"]

    @admin.display(description="Original")
    def original_file(self, obj):
        """The file as it was loaded, for a curator to check the text against."""
        if obj.original_id is None:
            return "not kept (text posted as such, a .jsonl line, or a file loaded before originals were kept: ingest it again)"
        url = document_original_url(obj)
        name, size = original_filename(obj), filesizeformat(obj.original.size)
        return format_html('<a href="{}">{}</a> ({})', url, name, size) if url else f"{name} ({size}; retracted)"

    @admin.display(description="OCR")
    def ocr_pages(self, obj):
        """Which pages of a scanned PDF were read by OCR, and which of them a curator should check,
        each opening the original at that page."""
        read = obj.metadata.get("ocr_pages") or []
        if not read:
            return "none (text layer)" if obj.mime_type == "application/pdf" else "-"
        low = obj.metadata.get("low_confidence_pages") or []
        pages = f"pages {', '.join(map(str, read))} read by OCR"
        if not low:
            return f"{pages}; all above the confidence threshold"
        links = format_html_join(
            ", ", '<a href="{}">{}</a>', ((document_original_url(obj, {"page": n}), n) for n in low)
        )
        plain = ", ".join(map(str, low))
        return format_html("{}; low confidence, check against the original: pages {}", pages,
                           links if obj.original_id and obj.is_active else plain)  # fmt: skip

    def has_add_permission(self, request):
        return False  # documents come in through ingestion: the API, the CLI or the ask page

    def has_change_permission(self, request, obj=None):
        return False  # the change page is a view; the actions above are the changes

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Retract selected documents (and every write-back resting on them)")
    def retract(self, request, queryset):
        documents = writebacks = 0
        for document in queryset.filter(status=Document.Status.ACTIVE):
            result = document_retract(document, actor=request.user, reason=f"retracted in the admin by {request.user}")
            documents += len(result["documents"])
            writebacks += len(result["writebacks"])
        self.message_user(request, f"Retracted {documents} document(s) and {writebacks} write-back(s).")

    @admin.action(description="Restore selected retracted documents (what they cascaded to stays retracted)")
    def restore(self, request, queryset):
        restored = [
            document_restore(document, actor=request.user, reason=f"restored in the admin by {request.user}")
            for document in queryset.filter(status=Document.Status.RETRACTED)
        ]
        self.message_user(request, f"Restored {len(restored)} document(s).")

    @admin.action(description="Move selected documents to another collection you curate (asks where and why)")
    def move(self, request, queryset):
        """document_move for each, as the API's move: audited, and what rests on a document goes
        back to review. Only into collections the curator curates (the listed ones are theirs)."""
        targets = collections_curated_by(user=request.user).order_by("slug")
        target = targets.filter(slug=request.POST.get("collection") or "").first()
        if "apply" in request.POST and target is not None:
            reason = (request.POST.get("reason") or "").strip() or f"moved in the admin by {request.user}"
            self.apply_each(
                request, queryset, lambda document: document_move(document, target, actor=request.user, reason=reason),
                done="moved", noun="document", label=lambda document: document.title, where=f" to {target.slug}",
            )  # fmt: skip
            return None
        return TemplateResponse(
            request, "admin/document_move.html",
            {**self.admin_site.each_context(request), "documents": queryset, "collections": targets,
             "opts": self.model._meta, "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
             "missing_collection": "apply" in request.POST},
        )  # fmt: skip


@admin.register(Chunk)
class ChunkAdmin(CuratedAdmin):
    curated_document = "document"
    list_display = ["__str__", "document", "ordinal", "token_count", "addresses_a_model"]
    list_select_related = ["document"]
    # "Addresses a model": text aimed at an LLM, for curators to review (and retract the document).
    list_filter = ["addresses_a_model", "document__collection"]
    search_fields = ["text", "document__title"]
    raw_id_fields = ["document"]
    # Text is what the document said; vectors are unreadable: neither is edited here.
    fields = ["document", "ordinal", "heading", "token_count", "addresses_a_model", "text"]
    readonly_fields = fields

    def has_add_permission(self, request):
        return False


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin, SuperuserOnlyAdmin):
    """Read-only: the trail is append-only (the model and a database trigger refuse changes). Its
    rows span every collection: superusers read it."""

    list_display = ["created_at", "actor_name", "action", "object_type", "object_id", "summary"]
    list_filter = ["action", "object_type", "actor_name", ("created_at", admin.DateFieldListFilter)]
    search_fields = ["summary", "object_id", "actor_name"]
    date_hierarchy = "created_at"


@admin.register(Upload)
class UploadAdmin(ReadOnlyAdmin, CuratedAdmin):
    """Read-only: what was uploaded, by whom, and what became of it (the API writes these rows; the
    audit trail has the same story). The bytes themselves are not shown."""

    list_display = ["created_at", "name", "collection", "uploader", "status", "size", "finished_at"]
    list_filter = ["status", "collection"]
    list_select_related = ["collection", "uploader"]
    search_fields = ["name", "sha256", "uploader__username"]
    raw_id_fields = ["uploader", "collection"]
    date_hierarchy = "created_at"
    fields = ["name", "collection", "uploader", "size", "sha256", "status", "documents_done", "documents_total",
              "counts", "error", "options", "created_at", "finished_at"]  # fmt: skip
    readonly_fields = fields
