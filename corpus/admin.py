from django.contrib import admin
from django.db.models import Count

from corpus.lineage import document_retract
from corpus.models import AuditEvent, Chunk, Collection, Document


@admin.register(Collection)
class CollectionAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "is_public", "document_count", "created_at"]
    list_filter = ["is_public"]
    search_fields = ["slug", "name", "description"]
    prepopulated_fields = {"slug": ["name"]}
    filter_horizontal = ["groups"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(document_count=Count("documents"))

    @admin.display(ordering="document_count")
    def document_count(self, obj):
        return obj.document_count


class ChunkInline(admin.TabularInline):
    model = Chunk
    fields = ["ordinal", "token_count", "text"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["title", "collection", "origin", "status", "mime_type", "updated_at"]
    list_filter = ["collection", "origin", "status", "mime_type"]
    list_select_related = ["collection"]
    search_fields = ["title", "source", "sha256"]
    raw_id_fields = ["collection"]
    # Status changes only through the retract action: it cascades to what rests on the document
    # and leaves audit rows, which a bare field edit would not.
    readonly_fields = ["sha256", "mime_type", "origin", "status", "requires_collections", "created_at", "updated_at"]
    inlines = [ChunkInline]
    actions = ["retract"]

    @admin.action(description="Retract selected documents (and every write-back resting on them)")
    def retract(self, request, queryset):
        documents = writebacks = 0
        for document in queryset.filter(status=Document.Status.ACTIVE):
            result = document_retract(document, actor=request.user, reason=f"retracted in the admin by {request.user}")
            documents += len(result["documents"])
            writebacks += len(result["writebacks"])
        self.message_user(request, f"Retracted {documents} document(s) and {writebacks} write-back(s).")


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
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
class AuditEventAdmin(admin.ModelAdmin):
    """Read-only: the trail is append-only (the model and a database trigger refuse changes)."""

    list_display = ["created_at", "actor_name", "action", "object_type", "object_id", "summary"]
    list_filter = ["action", "object_type", "actor_name", ("created_at", admin.DateFieldListFilter)]
    search_fields = ["summary", "object_id", "actor_name"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
