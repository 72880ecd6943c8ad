from django.contrib import admin

from pipeline.models import Answer, Evidence


class EvidenceInline(admin.TabularInline):
    model = Evidence
    fields = [
        "n",
        "origin",
        "bucket",
        "trust",
        "relevance",
        "consistency",
        "agreement",
        "cited",
        "chunk",
        "source",
        "text",
    ]
    readonly_fields = fields
    raw_id_fields = ["chunk"]
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Answer)
class AnswerAdmin(admin.ModelAdmin):
    list_display = ["question", "mode", "action", "generator", "found", "user", "created_at"]
    list_filter = ["mode", "action", "generator", "found"]
    list_select_related = ["user"]
    search_fields = ["question", "text", "response_id"]
    raw_id_fields = ["user"]
    readonly_fields = [
        "response_id", "user", "question", "text", "found", "mode", "action", "generator", "citations", "external",
        "iterations", "agreement", "notes", "timings_ms", "created_at",
    ]  # fmt: skip
    inlines = [EvidenceInline]

    def has_add_permission(self, request):
        return False
