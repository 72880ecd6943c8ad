from django.contrib import admin

from pipeline.models import Answer, Evidence


class EvidenceInline(admin.TabularInline):
    model = Evidence
    fields = ["rank", "chunk", "cited", "fused_score", "vector_distance", "text_rank", "text"]
    readonly_fields = fields
    raw_id_fields = ["chunk"]
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Answer)
class AnswerAdmin(admin.ModelAdmin):
    list_display = ["question", "user", "created_at"]
    list_select_related = ["user"]
    search_fields = ["question", "text", "response_id"]
    raw_id_fields = ["user"]
    readonly_fields = ["response_id", "user", "question", "text", "citations", "timings_ms", "created_at"]
    inlines = [EvidenceInline]

    def has_add_permission(self, request):
        return False
