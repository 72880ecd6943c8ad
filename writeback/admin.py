"""The curators' review queue (write-backs, each decided through writeback.review as the API's
decisions are) and the experience store (critiques, the experience log), read only."""

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe

from common.exceptions import CairnError
from corpus.admin import CuratedAdmin
from writeback.models import Critique, ExperienceLog, WriteBack
from writeback.review import writeback_approve, writeback_dismiss
from writeback.selectors import critiques_curated_by, writeback_siblings, writebacks_curated_by


class ScoreBandFilter(admin.SimpleListFilter):
    """Where grounding falls against its threshold: what a curator sorts a queue by."""

    title = "grounding"
    parameter_name = "grounding_band"

    def lookups(self, request, model_admin):
        return [("clear", "clears the threshold by 0.02+"), ("near", "within 0.02 of the threshold"),
                ("below", "below the threshold")]  # fmt: skip

    def queryset(self, request, queryset):
        threshold = settings.CAIRN_GROUNDING_THRESHOLD
        return {
            "clear": lambda: queryset.filter(grounding__gte=threshold + 0.02),
            "near": lambda: queryset.filter(grounding__gte=threshold, grounding__lt=threshold + 0.02),
            "below": lambda: queryset.filter(grounding__lt=threshold),
        }.get(self.value(), lambda: queryset)()


class ReviewForm(forms.ModelForm):
    decision = forms.ChoiceField(
        choices=[("", "decide later"), ("approve", "approve (edits are validated again first)"), ("reject", "reject")],
        required=False,
    )
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}), required=False, help_text="Required to reject: it becomes a critique."
    )

    class Meta:
        model = WriteBack
        fields = ["answer"]

    def clean(self):
        data = super().clean()
        if data.get("decision") == "reject" and not (data.get("reason") or "").strip():
            self.add_error("reason", "Say why: the reason becomes a critique later answers see.")
        if data.get("decision") != "approve" and "answer" in self.changed_data:
            self.add_error("answer", "An edited answer is saved only by approving it (it is validated again).")
        return data


@admin.register(WriteBack)
class WriteBackAdmin(CuratedAdmin):
    """The curators' review queue. Every decision goes through writeback.review, as the API's do."""

    form = ReviewForm
    list_display = ["id", "short_question", "asked", "status", "collection", "grounding", "attribution", "novelty",
                    "relevance", "held", "created_at"]  # fmt: skip
    ordering = ["-asked", "-created_at"]  # the most-asked first: what most people would read
    list_filter = ["status", "collection", ScoreBandFilter, ("created_at", admin.DateFieldListFilter)]
    list_select_related = ["collection"]
    search_fields = ["question", "answer"]
    date_hierarchy = "created_at"
    actions = ["approve", "reject"]
    readonly_fields = ["status", "question", "asked", "askings_list", "siblings", "text", "scores",
                       "sentences_against_evidence", "nearest_existing", "critique",
                       "held", "collection", "document", "response_id", "reviewer", "review_note", "versions",
                       "created_at", "validated_at", "reviewed_at", "published_at", "retracted_at"]  # fmt: skip
    fieldsets = [
        (None, {"fields": ["status", "question", "answer", "text", "decision", "reason"]}),
        ("Asked", {"fields": ["asked", "askings_list", "siblings"]}),
        ("Validation", {"fields": ["scores", "sentences_against_evidence", "nearest_existing", "critique", "held"]}),
        ("Provenance", {"fields": ["collection", "document", "response_id", "reviewer", "review_note", "versions",
                                   "created_at", "validated_at", "reviewed_at", "published_at", "retracted_at"]}),
    ]  # fmt: skip

    def curated(self, request, queryset):
        return queryset.filter(pk__in=writebacks_curated_by(user=request.user).values("pk"))

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="question")
    def short_question(self, obj):
        return obj.question[:80]

    @admin.display(description="questions that asked it")
    def askings_list(self, obj):
        return format_html_join(
            mark_safe("<br>"), "{} — {}",
            ((f"{a.asked_at:%Y-%m-%d %H:%M}", a.question) for a in obj.askings.all()[:50]),
        )  # fmt: skip

    def get_object(self, request, object_id, from_field=None):
        obj = super().get_object(request, object_id, from_field)
        if obj is not None:
            obj.viewer = request.user  # what the page may show beside it depends on who looks (siblings)
        return obj

    @admin.display(description="other answers to the same question")
    def siblings(self, obj):
        others = writeback_siblings(obj, user=obj.viewer)
        rows = format_html_join(
            "", '<tr><td><a href="{}">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>',
            ((reverse("admin:writeback_writeback_change", args=[w.id]), w.id, w.status, w.asked, w.answer[:600])
             for w in others[:10]),
        )  # fmt: skip
        if not rows:
            return "—"
        return format_html("<table><tr><th>id</th><th>status</th><th>asked</th><th>answer</th></tr>{}</table>", rows)

    @admin.display(description="scores against thresholds")
    def scores(self, obj):
        rows = [("grounding", obj.grounding, settings.CAIRN_GROUNDING_THRESHOLD),
                ("attribution", obj.attribution, settings.CAIRN_ATTRIBUTION_THRESHOLD),
                ("novelty", obj.novelty, settings.CAIRN_NOVELTY_THRESHOLD),
                ("relevance", obj.relevance, settings.CAIRN_ANSWER_THRESHOLD)]  # fmt: skip
        return format_html_join(
            mark_safe("<br>"), "{}: {} (threshold {}) {}",
            ((name, "—" if value is None else f"{value:.3f}", f"{limit:.3f}",
              "" if value is None else ("✓" if value >= limit else "✗")) for name, value, limit in rows),
        )  # fmt: skip

    @admin.display(description="answer sentences against the evidence")
    def sentences_against_evidence(self, obj):
        evidence = {e["n"]: e for e in obj.evidence}
        rows = format_html_join(
            "", "<tr><td>{}</td><td>{}</td><td>{}</td><td>[{}] {}</td></tr>",
            ((s["sentence"], s["cited"], f"{s['entailment']:.3f}", s["best_n"],
              (evidence.get(s["best_n"]) or {}).get("text", "")[:600]) for s in obj.sentences),
        )  # fmt: skip
        listed = format_html_join(
            "", "<li>[{}] <b>{}</b>: {}</li>", ((e["n"], e["title"], e["text"][:600]) for e in obj.evidence)
        )
        return format_html(
            '<table><tr><th>sentence</th><th>cites</th><th>entailment</th><th>best evidence</th></tr>{}</table>'
            "<p>All evidence:</p><ul>{}</ul>", rows, listed,
        )  # fmt: skip

    @admin.display(description="nearest existing text")
    def nearest_existing(self, obj):
        if not obj.nearest:
            return "—"
        n = obj.nearest
        shown = format_html("{} {} (similarity {}): {}", n["kind"], n["id"], n["similarity"], n["text"])
        if gain := n.get("question"):  # why a quote of the corpus may still be new (validation.question_gain)
            shown += format_html("<br>closeness to its question: this answer {}, the nearest existing text {}",
                                 gain["this"], gain["existing"])  # fmt: skip
        return shown

    def save_model(self, request, obj, form, change):
        """Nothing is saved directly: the decision runs the review service (or nothing)."""
        decision = form.cleaned_data.get("decision")
        try:
            if decision == "approve":
                result = writeback_approve(obj, actor=request.user, answer=form.cleaned_data["answer"])
                self.message_user(request, f"Write-back {obj.id}: {result.status}.")
                if overridden := ", ".join(item["check"] for item in result.critique):
                    self.message_user(request, f"Published over failed checks (advice): {overridden}; grounding "
                                      f"{result.grounding}.", level=messages.WARNING)  # fmt: skip
            elif decision == "reject":
                writeback_dismiss(obj, actor=request.user, reason=form.cleaned_data["reason"])
        except CairnError as exc:
            self.message_user(request, f"Write-back {obj.id}: {exc.message}", level=messages.ERROR)

    def save_related(self, request, form, formsets, change):
        pass  # the review services own every write

    @admin.action(description="Approve selected write-backs")
    def approve(self, request, queryset):
        self.apply_each(
            request, queryset, lambda w: writeback_approve(w, actor=request.user), done="published", noun="write-back"
        )

    @admin.action(description="Reject selected write-backs (asks for a reason)")
    def reject(self, request, queryset):
        reason = (request.POST.get("reason") or "").strip()
        if "apply" in request.POST and reason:
            self.apply_each(
                request, queryset, lambda w: writeback_dismiss(w, actor=request.user, reason=reason),
                done="rejected", noun="write-back",
            )  # fmt: skip
            return None
        return TemplateResponse(
            request, "admin/writeback_reject.html",
            {**self.admin_site.each_context(request), "writebacks": queryset, "opts": self.model._meta,
             "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME, "missing_reason": "apply" in request.POST},
        )  # fmt: skip


@admin.register(Critique)
class CritiqueAdmin(CuratedAdmin):
    list_display = ["created_at", "source", "warns", "text"]
    list_filter = ["source", "warns"]
    search_fields = ["question", "text"]
    readonly_fields = ["writeback", "source", "question", "text", "checks", "collections", "warns", "created_by",
                       "created_at"]  # fmt: skip
    exclude = ["embedding"]

    def curated(self, request, queryset):
        return queryset.filter(pk__in=critiques_curated_by(user=request.user).values("pk"))

    def has_add_permission(self, request):
        return False


@admin.register(ExperienceLog)
class ExperienceLogAdmin(CuratedAdmin):
    def curated(self, request, queryset):
        return queryset.filter(writeback__in=writebacks_curated_by(user=request.user).values("pk"))

    list_display = ["created_at", "accepted", "question"]
    list_filter = ["accepted"]
    search_fields = ["question"]
    readonly_fields = ["writeback", "question", "accepted", "scores", "created_at"]
    exclude = ["embedding"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
