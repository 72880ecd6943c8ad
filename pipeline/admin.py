from django.contrib import admin

from corpus.admin import CuratedAdmin
from pipeline.models import Answer, Evidence
from pipeline.selectors import answers_curated_by


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
class AnswerAdmin(CuratedAdmin):
    list_display = ["question", "mode", "action", "generator", "outcome", "confidence", "user", "created_at"]
    list_filter = ["outcome", "mode", "action", "generator", "found"]
    list_select_related = ["user"]
    search_fields = ["question", "text", "response_id"]
    raw_id_fields = ["user"]
    # A record, read only, and of this answer alone: a form of all its fields offered its conversation
    # as a choice of every asker's conversation, named by their first questions, and let a curator
    # rewrite the collections that decide who reads it.
    fields = [
        "response_id", "user", "question", "asked", "rewritten_by", "text", "found", "outcome", "confidence", "mode",
        "action", "generator", "citations", "external", "iterations", "agreement", "notes", "timings_ms",
        "created_at",
    ]  # fmt: skip
    readonly_fields = fields
    inlines = [EvidenceInline]

    def curated(self, request, queryset):
        return queryset.filter(pk__in=answers_curated_by(user=request.user).values("pk"))

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        # An answer is its asker's to delete (DELETE /api/v1/conversations/{id}, audited), with what
        # rests on it: the admin's delete left no audit row and took a reader's record from under them.
        return False


from pipeline import evaluation_admin  # noqa: E402,F401 - registers EvaluationRun

from pipeline import misses_admin  # noqa: E402,F401 - registers Lesson, Gap, Mark, the misses  # isort: skip
