from django.contrib import admin
from django.db.models import Count

from corpus.models import Chunk, Collection, Document


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
    readonly_fields = ["sha256", "mime_type", "origin", "created_at", "updated_at"]
    inlines = [ChunkInline]


@admin.register(Chunk)
class ChunkAdmin(admin.ModelAdmin):
    list_display = ["__str__", "document", "ordinal", "token_count"]
    list_select_related = ["document"]
    list_filter = ["document__collection"]
    search_fields = ["text", "document__title"]
    raw_id_fields = ["document"]
    # Text is what the document said; vectors are unreadable: neither is edited here.
    fields = ["document", "ordinal", "heading", "token_count", "text"]
    readonly_fields = fields

    def has_add_permission(self, request):
        return False
