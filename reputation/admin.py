from django.contrib import admin
from django.db.models import Avg, Count, F, FloatField, Sum
from django.db.models.functions import Cast

from corpus.admin import CuratedAdmin, SuperuserOnlyAdmin
from reputation.models import Credit, DocumentReputation, Feedback, Reputation
from reputation.services import reputation_reset


class NeedsAttentionFilter(admin.SimpleListFilter):
    """Most-used chunks that feedback says fail: what curators should fix first."""

    title = "attention"
    parameter_name = "attention"

    def lookups(self, request, model_admin):
        return [("low", "used often (3+ feedback), long-term mean below 0.4")]

    def queryset(self, request, queryset):
        if self.value() == "low":
            return queryset.filter(feedback_count__gte=3, long_mean__lt=0.4).order_by("long_mean", "-feedback_count")
        return queryset


@admin.register(Reputation)
class ReputationAdmin(CuratedAdmin):
    curated_document = "chunk__document"
    list_display = ["chunk", "document", "short_mean", "long_mean", "alpha", "beta", "long_alpha", "long_beta",
                    "trust", "fooled", "verified", "feedback_count", "last_updated"]  # fmt: skip
    list_filter = [NeedsAttentionFilter, "chunk__document__collection"]
    list_select_related = ["chunk__document"]
    search_fields = ["chunk__text", "chunk__document__title"]
    readonly_fields = ["chunk", "alpha", "beta", "long_alpha", "long_beta", "fooled", "verified", "feedback_count",
                       "last_updated"]  # fmt: skip
    exclude = ["questions"]  # 384 numbers: what ranking compares questions with, nothing to read or edit
    actions = ["reset"]

    def get_queryset(self, request):
        mean = lambda a, b: Cast(F(a), FloatField()) / (F(a) + F(b))  # noqa: E731
        return super().get_queryset(request).defer("questions").annotate(
            short_mean=mean("alpha", "beta"), long_mean=mean("long_alpha", "long_beta"),
            trust=1 - F("fooled") / (F("verified") + 1),
        )  # fmt: skip

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(ordering="chunk__document__title")
    def document(self, obj):
        return obj.chunk.document

    @admin.display(ordering="short_mean", description="C (short-term, stored)")
    def short_mean(self, obj):
        return round(obj.short_mean, 3)

    @admin.display(ordering="long_mean", description="P = A/(A+B)")
    def long_mean(self, obj):
        return round(obj.long_mean, 3)

    @admin.display(ordering="trust")
    def trust(self, obj):
        return round(obj.trust, 3)

    @admin.action(description="Reset selected counters to the prior (audited)")
    def reset(self, request, queryset):
        count = reputation_reset(list(queryset.values_list("chunk_id", flat=True)), actor=request.user,
                                 reason=f"reset in the admin by {request.user}")  # fmt: skip
        self.message_user(request, f"Reset {count} chunk(s).")


@admin.register(DocumentReputation)
class DocumentReputationAdmin(CuratedAdmin):
    curated_document = "pk"
    list_display = ["title", "collection", "chunks_judged", "mean_short", "mean_long", "feedback"]
    list_filter = ["collection"]
    search_fields = ["title"]
    fields = ["title", "collection"]
    readonly_fields = fields

    def get_queryset(self, request):
        return (
            super().get_queryset(request).select_related("collection")
            .annotate(
                chunks_judged=Count("chunks__reputation"),
                mean_short=Avg(Cast(F("chunks__reputation__alpha"), FloatField())
                               / (F("chunks__reputation__alpha") + F("chunks__reputation__beta"))),
                mean_long=Avg(Cast(F("chunks__reputation__long_alpha"), FloatField())
                              / (F("chunks__reputation__long_alpha") + F("chunks__reputation__long_beta"))),
                feedback=Sum("chunks__reputation__feedback_count"),
            )
        )  # fmt: skip

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(ordering="chunks_judged")
    def chunks_judged(self, obj):
        return obj.chunks_judged

    @admin.display(ordering="mean_short", description="mean C")
    def mean_short(self, obj):
        return None if obj.mean_short is None else round(obj.mean_short, 3)

    @admin.display(ordering="mean_long", description="mean P")
    def mean_long(self, obj):
        return None if obj.mean_long is None else round(obj.mean_long, 3)

    @admin.display(ordering="feedback")
    def feedback(self, obj):
        return obj.feedback


@admin.register(Feedback)
class FeedbackAdmin(SuperuserOnlyAdmin):  # by answer, not by collection: who said what about which answer
    list_display = ["created_at", "user", "response_id", "thumbs", "behaviour", "verifier", "outcome", "kappa"]
    list_filter = ["behaviour", "thumbs"]
    search_fields = ["response_id", "comment"]
    readonly_fields = [f.name for f in Feedback._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(Credit)
class CreditAdmin(SuperuserOnlyAdmin):
    list_display = ["created_at", "response_id", "user"]
    search_fields = ["response_id"]
    readonly_fields = ["response_id", "user", "shares", "created_at"]

    def has_add_permission(self, request):
        return False
