"""The curators' work list of what went unanswered (pipeline.misses) and the admins of what they
decide: lessons, gaps and the readers' marks, each scoped to the collections the curator curates.

Every decision is a POST that calls one service of writeback.lessons (each audits itself, and
refuses a collection the curator does not curate); nothing here edits a row directly. The curators
group holds none of these models' permissions (corpus.services.curators_group_ensure): who may see
these pages is user_is_curator, what they see is collections_curated_by."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.http import url_has_allowed_host_and_scheme

from common.exceptions import CairnError
from corpus.admin import CuratedAdmin
from corpus.models import Chunk, Collection
from corpus.selectors import chunks_in_scope, collections_curated_by, user_is_curator
from pipeline.adaptation import confidence_adapt, confidence_adapt_enqueue
from pipeline.judge_adaptation import judge_version_retire
from pipeline.misses import (
    MissGroup,
    group_phrasings,
    lessons_with_later_askers,
    miss_group_get,
    misses_for,
    passages_for,
)
from pipeline.selectors import answers_curated_by
from writeback.lessons import (
    gap_close,
    gap_record,
    lesson_create,
    lesson_from_mark,
    lesson_retract,
    lesson_written,
    lessons_recheck,
)
from writeback.models import Adaptation, Gap, JudgeVersion, Lesson, Mark

SEARCH_MAX_CHARS = 2000  # the ask API's longest question


class CuratorsAdmin(CuratedAdmin):
    """Rows curators read and never edit here: each change is a decision of writeback.lessons."""

    def has_module_permission(self, request):
        return user_is_curator(request.user)

    def has_view_permission(self, request, obj=None):
        return user_is_curator(request.user)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


# --- The decisions on a group of misses -----------------------------------------------------------


class ConfirmForm(forms.Form):
    mark = forms.IntegerField()


class PickForm(forms.Form):
    chunk = forms.IntegerField()
    sentence = forms.CharField(max_length=20000, strip=False)


class WriteForm(forms.Form):
    answer = forms.CharField(max_length=20000, widget=forms.Textarea)


class GapForm(forms.Form):
    note = forms.CharField(max_length=5000, required=False)


def confirm(request, group: MissGroup, data: dict) -> Lesson:
    mark = next((m for m in group.marks if m.id == data["mark"]), None)
    if mark is None:
        raise CairnError("mark", "no such mark in this group")
    return lesson_from_mark(mark, actor=request.user, response_ids=group.response_ids, phrasings=group_phrasings(group))


def pick(request, group: MissGroup, data: dict) -> Lesson:
    within = chunks_in_scope(user=request.user, collection_ids=[group.collection.id])
    chunk = Chunk.objects.select_related("document__collection").filter(
        id=data["chunk"], id__in=within.values("id")
    ).first()  # fmt: skip
    if chunk is None:
        raise CairnError("chunk", f"no such passage in {group.collection.slug!r}")
    return lesson_create(
        actor=request.user, question=group.question, chunk=chunk, sentence=data["sentence"],
        origin=Lesson.Origin.PICKED, response_ids=group.response_ids, phrasings=group_phrasings(group),
    )  # fmt: skip


def write(request, group: MissGroup, data: dict) -> Lesson:
    return lesson_written(
        actor=request.user, collection=group.collection, question=group.question, answer=data["answer"],
        response_ids=group.response_ids, phrasings=group_phrasings(group),
    )  # fmt: skip


def not_covered(request, group: MissGroup, data: dict) -> Gap:
    return gap_record(
        actor=request.user, collection=group.collection, question=group.question, note=data["note"],
        response_ids=group.response_ids,
    )  # fmt: skip


DECISIONS = {
    "confirm": (ConfirmForm, confirm),
    "pick": (PickForm, pick),
    "write": (WriteForm, write),
    "gap": (GapForm, not_covered),
}


# --- Lessons, and the work list hung on them -----------------------------------------------------


@admin.register(Lesson)
class LessonAdmin(CuratorsAdmin):
    """The lessons curators confirmed, with how the later askers of their question fare; and, at
    unanswered/, the work list of misses the decisions come from."""

    list_display = ["short_question", "short_sentence", "collection", "origin", "status", "created_by",
                    "created_at", "later"]  # fmt: skip
    list_filter = ["status", "origin", "collection"]
    list_select_related = ["collection", "created_by"]
    search_fields = ["question", "sentence"]
    raw_id_fields = ["document", "chunk", "writeback", "created_by"]
    fields = ["question", "sentence", "collection", "document", "chunk", "origin", "status", "writeback",
              "response_ids", "created_by", "created_at", "updated_at", "later"]  # fmt: skip
    readonly_fields = fields
    actions = ["retract"]

    def get_queryset(self, request):
        return lessons_with_later_askers(super().get_queryset(request))

    @admin.display(description="question")
    def short_question(self, obj):
        return obj.question[:120]

    @admin.display(description="sentence")
    def short_sentence(self, obj):
        return obj.sentence[:160]

    @admin.display(description="later askers (answered)")
    def later(self, obj):
        return f"{obj.later_askers} ({obj.later_answered} answered)"

    @admin.action(description="Retract selected lessons (asks for a reason)")
    def retract(self, request, queryset):
        reason = (request.POST.get("reason") or "").strip()
        if "apply" in request.POST and reason:
            self.apply_each(
                request, queryset.exclude(status=Lesson.Status.RETRACTED).select_related("collection"),
                lambda lesson: lesson_retract(lesson, actor=request.user, reason=reason),
                done="retracted", noun="lesson",
            )  # fmt: skip
            return None
        return TemplateResponse(
            request, "admin/lesson_retract.html",
            {**self.admin_site.each_context(request), "lessons": queryset, "opts": self.model._meta,
             "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME, "missing_reason": "apply" in request.POST},
        )  # fmt: skip

    def get_urls(self):
        view = self.admin_site.admin_view
        return [
            path("unanswered/", view(self.unanswered_view), name="writeback_lesson_unanswered"),
            path("unanswered/<int:collection_id>/<uuid:key>/", view(self.group_view),
                 name="writeback_lesson_unanswered_group"),
            path("unanswered/<int:collection_id>/<uuid:key>/<slug:decision>/", view(self.decide_view),
                 name="writeback_lesson_unanswered_decide"),
        ] + super().get_urls()  # fmt: skip

    def unanswered_view(self, request):
        """The groups of misses in the collections the curator curates (or the one chosen), and the
        lessons whose sentence a changed document no longer holds."""
        if not user_is_curator(request.user):
            raise PermissionDenied
        curated = collections_curated_by(user=request.user).order_by("slug")
        chosen = self._chosen(request, curated)
        scope = curated if chosen is None else curated.filter(id=chosen.id)
        lessons_recheck(Lesson.objects.filter(collection__in=scope))
        recheck = Lesson.objects.filter(collection__in=scope, status=Lesson.Status.RECHECK).select_related(
            "collection", "document"
        )
        context = {
            **self.admin_site.each_context(request), "opts": self.model._meta, "title": "Unanswered questions",
            "collections": curated, "chosen": chosen, "groups": misses_for(user=request.user, collection=chosen),
            "recheck": recheck, "min_askers": settings.CAIRN_MISS_MIN_ASKERS,
        }  # fmt: skip
        return TemplateResponse(request, "admin/misses.html", context)

    def group_view(self, request, collection_id: int, key):
        """One group, and a search of its collection to pick the sentence that answers it."""
        group = self._group(request, collection_id, key)
        text = (request.GET.get("q") or group.question).strip()[:SEARCH_MAX_CHARS]
        context = {
            **self.admin_site.each_context(request), "opts": self.model._meta,
            "title": f"Unanswered: {group.question[:80]}", "group": group, "q": text,
            "passages": passages_for(user=request.user, collection=group.collection, text=text) if text else [],
        }  # fmt: skip
        return TemplateResponse(request, "admin/miss_group.html", context)

    def decide_view(self, request, collection_id: int, key, decision: str):
        """A curator's decision on a group: the service's result, or its refusal, as a message."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if decision not in DECISIONS:
            raise Http404
        group = self._group(request, collection_id, key)
        form_class, decide = DECISIONS[decision]
        form = form_class(request.POST)
        back = self._back(request, group)
        if not form.is_valid():
            errors = "; ".join(f"{name}: {' '.join(e)}" for name, e in form.errors.items())
            self.message_user(request, errors, level=messages.ERROR)
            return HttpResponseRedirect(back)
        try:
            done = decide(request, group, form.cleaned_data)
        except CairnError as exc:
            self.message_user(request, exc.message, level=messages.ERROR)
            return HttpResponseRedirect(back)
        if isinstance(done, Lesson):  # the collection's answers may now be judged better
            confidence_adapt_enqueue(done.collection_id)
        opts = done._meta
        link = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[done.id])
        said = (
            format_html('Gap <a href="{}">{}</a> recorded: "{}" is a page to write.', link, done.id, group.question)
            if isinstance(done, Gap)
            else format_html(
                'Lesson <a href="{}">{}</a> recorded: questions like "{}" are answered with "{}".',
                link,
                done.id,
                group.question,
                done.sentence,
            )
        )
        self.message_user(request, said, level=messages.SUCCESS)
        # Back to the list it was decided from (the group's own page is gone: the group is settled).
        listed = back.split("?")[0] == reverse("admin:writeback_lesson_unanswered")
        return HttpResponseRedirect(back if listed else self._list_url(group.collection))

    def _chosen(self, request, curated) -> Collection | None:
        wanted = request.GET.get("collection") or ""
        if not wanted:
            return None
        chosen = curated.filter(id=int(wanted)).first() if wanted.isdigit() else None
        if chosen is None:
            raise Http404("no such collection among those you curate")
        return chosen

    def _group(self, request, collection_id: int, key) -> MissGroup:
        """The group holding the answer `key`, as the curator's list shows it: 404 for a collection
        they do not curate, and for a group they may not see (too few askers, settled)."""
        collection = collections_curated_by(user=request.user).filter(id=collection_id).first()
        group = miss_group_get(user=request.user, collection=collection, response_id=key) if collection else None
        if group is None:
            raise Http404("no such group of unanswered questions")
        return group

    def _list_url(self, collection: Collection) -> str:
        return f"{reverse('admin:writeback_lesson_unanswered')}?collection={collection.id}"

    def _back(self, request, group: MissGroup) -> str:
        wanted = request.POST.get("next") or ""
        safe = url_has_allowed_host_and_scheme(wanted, allowed_hosts={request.get_host()},
                                               require_https=request.is_secure())  # fmt: skip
        return wanted if wanted and safe else self._list_url(group.collection)


class OpenFilter(admin.SimpleListFilter):
    title = "open"
    parameter_name = "open"

    def lookups(self, request, model_admin):
        return [("yes", "open: a page to write"), ("no", "closed")]

    def queryset(self, request, queryset):
        if self.value() in ("yes", "no"):
            return queryset.filter(closed_at__isnull=self.value() == "yes")
        return queryset


@admin.register(Gap)
class GapAdmin(CuratorsAdmin):
    """Questions a curator marked not covered: pages to write. Closing one is audited."""

    list_display = ["short_question", "collection", "short_note", "answers", "created_by", "created_at", "closed_at"]
    list_filter = [OpenFilter, "collection"]
    list_select_related = ["collection", "created_by"]
    search_fields = ["question", "note"]
    raw_id_fields = ["created_by"]
    fields = ["question", "collection", "note", "response_ids", "created_by", "created_at", "closed_at"]
    readonly_fields = fields
    actions = ["close"]

    @admin.display(description="question")
    def short_question(self, obj):
        return obj.question[:120]

    @admin.display(description="note")
    def short_note(self, obj):
        return obj.note[:120]

    @admin.display(description="answers")
    def answers(self, obj):
        return len(obj.response_ids)

    @admin.action(description="Close selected gaps (their page is written)")
    def close(self, request, queryset):
        closed = sum(gap_close(gap, actor=request.user) for gap in queryset.filter(closed_at__isnull=True))
        self.message_user(request, f"Closed {closed} gap(s).")


@admin.register(Mark)
class MarkAdmin(CuratorsAdmin):
    """The readers' marks, as they made them (read-only): a curator confirms one on the work list."""

    list_display = ["response_id", "short_question", "said", "collection", "user", "updated_at"]
    list_filter = ["collection"]
    list_select_related = ["collection", "user"]
    search_fields = ["question", "sentence", "response_id"]
    raw_id_fields = ["user", "chunk", "document", "collection"]
    fields = ["response_id", "user", "question", "evidence_n", "sentence", "chunk", "document", "collection",
              "created_at", "updated_at"]  # fmt: skip
    readonly_fields = fields

    def curated(self, request, queryset):
        """The marks on answers the curator may read (a mark of "none of these" names no collection)."""
        return queryset.filter(response_id__in=answers_curated_by(user=request.user).values("response_id"))

    @admin.display(description="question")
    def short_question(self, obj):
        return obj.question[:120]

    @admin.display(description="marked")
    def said(self, obj):
        return obj.sentence[:160] or "none of these sources"


@admin.register(Adaptation)
class AdaptationAdmin(CuratorsAdmin):
    """What each collection's lessons taught its answers' confidence (pipeline/adaptation.py), with the
    held-out figures that decide whether it serves; refitting is a decision, audited."""

    list_display = ["collection", "confidence_shift", "serving", "answers", "right", "held_out", "updated_at"]
    list_select_related = ["collection"]
    fields = ["collection", "confidence_shift", "serving", "figures", "updated_at"]
    readonly_fields = fields
    actions = ["refit"]

    @admin.display(description="answers")
    def answers(self, obj):
        return obj.figures.get("answers", 0)

    @admin.display(description="right")
    def right(self, obj):
        return obj.figures.get("right", 0)

    @admin.display(description="held-out log loss: shipped → adapted")
    def held_out(self, obj):
        if "held_out_log_loss" not in obj.figures:
            return f"fewer than {obj.figures.get('min_answers', '?')} answers, or all alike"
        return f"{obj.figures['held_out_log_loss']:.3f} → {obj.figures['held_out_log_loss_shifted']:.3f}"

    @admin.action(description="Refit from the lessons now")
    def refit(self, request, queryset):
        for adaptation in queryset.select_related("collection"):
            confidence_adapt(adaptation.collection, actor=request.user)
        self.message_user(request, f"Refitted {queryset.count()} collection(s).")


@admin.register(JudgeVersion)
class JudgeVersionAdmin(CuratorsAdmin):
    """Which judges answer each collection and since when (pipeline/judge_adaptation.py): each
    adaptation run, what the held-out questions said, and why a version was kept back. Retiring the
    serving version goes back to the one before it, or to the shipped judges; audited."""

    list_display = ["collection", "version", "status", "judges", "held_out", "status_changed_at", "created_at"]
    list_filter = ["status"]
    list_select_related = ["collection"]
    fields = ["collection", "version", "status", "answer_model", "relevance_model", "figures", "created_at",
              "status_changed_at"]  # fmt: skip
    readonly_fields = fields
    actions = ["retire"]

    @admin.display(description="adapted")
    def judges(self, obj):
        adapted = [
            name for name, path in (("answer judge", obj.answer_model), ("relevance", obj.relevance_model)) if path
        ]
        return ", ".join(adapted) or "none (shipped)"

    @admin.display(description="held out: shipped → adapted")
    def held_out(self, obj):
        shipped, adapted = obj.figures.get("held_out_shipped"), obj.figures.get("held_out_adapted")
        if not (shipped and adapted):
            return obj.figures.get("why", "")
        return (f"answer top-1 {shipped['answer_top1']:.2f} → {adapted['answer_top1']:.2f}; "
                f"relevance MRR {shipped['relevance_mrr']:.2f} → {adapted['relevance_mrr']:.2f}")  # fmt: skip

    @admin.action(description="Retire: go back to the version before, or the shipped judges")
    def retire(self, request, queryset):
        rows = list(queryset.filter(status=JudgeVersion.Status.SERVING).select_related("collection"))
        for row in rows:
            judge_version_retire(row, actor=request.user)
        self.message_user(request, f"Retired {len(rows)} version(s).")
