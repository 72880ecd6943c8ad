"""The runs of `manage.py evaluate` in the admin, read-only: their figures over time, and each run's
questions. A run is shown to superusers and to curators of every collection it asked."""

from django.contrib import admin
from django.db.models import QuerySet
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from corpus.admin import ReadOnlyAdmin
from corpus.selectors import collections_curated_by, user_is_curator
from pipeline.evaluation import RATES
from pipeline.models import EvaluationRun

HISTORY_RUNS = 30  # bars in a run's history chart


def evaluation_runs_curated_by(*, user) -> QuerySet[EvaluationRun]:
    """The runs `user` may see: every one for a superuser; for a curator, those whose collections
    they all curate. A run that named no collection asked everything its user reads: superusers only."""
    if not user_is_curator(user):
        return EvaluationRun.objects.none()
    if user.is_superuser:
        return EvaluationRun.objects.all()
    curated = list(collections_curated_by(user=user).values_list("slug", flat=True))
    return EvaluationRun.objects.exclude(collections=[]).filter(collections__contained_by=curated)


def percent(rate: float | None) -> str:
    return "–" if rate is None else f"{rate * 100:.1f}%"


@admin.register(EvaluationRun)
class EvaluationRunAdmin(ReadOnlyAdmin):
    list_display = [
        "started_at", "file_name", "collections_asked", "gold_stated", "not_found", "latency", "passed",
        "commit_short",
    ]  # fmt: skip
    list_filter = ["passed", "mode"]
    list_select_related = ["user"]
    search_fields = ["questions_file", "questions_sha256", "commit"]
    raw_id_fields = ["user", "previous"]
    date_hierarchy = "started_at"
    fields = [
        "questions_file", "questions_sha256", "collections", "user", "mode", "top_k", "started_at", "finished_at",
        "commit", "passed", "figures", "previous", "compared", "history", "questions",
    ]  # fmt: skip
    readonly_fields = fields

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if request.user.is_superuser:
            return queryset
        return queryset.filter(pk__in=evaluation_runs_curated_by(user=request.user).values("pk"))

    # Curators see their collections' runs whatever the model permissions their group was given.
    def has_module_permission(self, request):
        return user_is_curator(request.user)

    def has_view_permission(self, request, obj=None):
        return user_is_curator(request.user)

    @admin.display(description="file", ordering="questions_file")
    def file_name(self, run: EvaluationRun) -> str:
        return run.questions_file.rsplit("/", 1)[-1]

    @admin.display(description="collections")
    def collections_asked(self, run: EvaluationRun) -> str:
        return ", ".join(run.collections) or "(all the user reads)"

    @admin.display(description="gold stated")
    def gold_stated(self, run: EvaluationRun) -> str:
        t = run.totals
        return f"{percent(t.get('gold_stated_rate'))} ({t.get('gold_stated')}/{t.get('answerable')})"

    @admin.display(description="unanswerable refused")
    def not_found(self, run: EvaluationRun) -> str:
        t = run.totals
        return f"{percent(t.get('not_found_rate'))} ({t.get('not_found_unanswerable')}/{t.get('unanswerable')})"

    @admin.display(description="p50 / p95")
    def latency(self, run: EvaluationRun) -> str:
        t = run.totals
        if t.get("p50_ms") is None:
            return "–"
        return f"{t['p50_ms']:.0f} / {t['p95_ms']:.0f} ms"

    @admin.display(description="commit", ordering="commit")
    def commit_short(self, run: EvaluationRun) -> str:
        return run.commit[:10]

    @admin.display(description="figures")
    def figures(self, run: EvaluationRun) -> str:
        t = run.totals
        return format_html(
            "answerable: gold in a stated answer {}; stated {}, gold withheld {}<br>"
            "unanswerable: not found {}<br>latency p50 / p95: {}; questions asked {}, errors {}",
            self.gold_stated(run), t.get("stated"), t.get("gold_unstated"), self.not_found(run), self.latency(run),
            t.get("asked"), t.get("errors"),
        )  # fmt: skip

    @admin.display(description="comparison")
    def compared(self, run: EvaluationRun) -> str:
        comparison = run.comparison
        if run.previous_id is None and not comparison.get("previous_run"):
            return "No earlier run of this file, collections, mode and top_k."
        rows = format_html_join(
            "",
            "<li>{}: {} → {} ({} points){}</li>",
            (
                (RATES.get(rate, rate), percent(c["before"]), percent(c["now"]), f"{c['change_points']:+.1f}",
                 " — fell more than the margin" if c["fell"] else "")
                for rate, c in comparison.get("rates", {}).items()
            ),
        )  # fmt: skip
        changed = format_html_join(
            "",
            "<li>{}: {}</li>",
            ((said, ", ".join(comparison[key])) for said, key in (("now wrong", "now_wrong"), ("now right", "now_right"))
             if comparison.get(key)),
        )  # fmt: skip
        return format_html(
            "Margin {} points.<ul>{}{}</ul>", f"{comparison.get('margin_points', run.margin_points):g}", rows, changed
        )

    @admin.display(description="gold stated over time")
    def history(self, run: EvaluationRun) -> str:
        """A bar per run of the same file, collections, mode and top_k (the runs compared with each
        other), oldest first: its gold-stated share; green passed, red failed, outlined: this run.
        An inline SVG of attributes only: the Content-Security-Policy allows no inline style."""
        runs = list(
            EvaluationRun.objects.filter(
                questions_sha256=run.questions_sha256, collections=run.collections, mode=run.mode, top_k=run.top_k,
                started_at__lte=run.started_at,
            )
            .order_by("-started_at")
            .values("id", "started_at", "passed", "totals")[:HISTORY_RUNS]
        )[::-1]  # fmt: skip
        height, step = 80, 14
        bars = format_html_join(
            "",
            '<rect x="{}" y="{}" width="10" height="{}" fill="{}" stroke="{}" stroke-width="2">'
            "<title>{} {}: {}</title></rect>",
            (
                (
                    i * step + 1, height - (h := round(r["totals"].get("gold_stated_rate", 0) * height)), max(h, 1),
                    "#5a9e6f" if r["passed"] else "#c44e52", "#222" if r["id"] == run.id else "none",
                    f"run {r['id']}", f"{r['started_at']:%Y-%m-%d %H:%M}", percent(r["totals"].get("gold_stated_rate")),
                )
                for i, r in enumerate(runs)
            ),
        )  # fmt: skip
        return format_html(
            '<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" role="img" aria-label="{}">'
            '<line x1="0" y1="{}" x2="{}" y2="{}" stroke="#999"/>{}</svg><br>{} run(s), the last {} at most; '
            "bar height: gold stated, 0–100%.",
            len(runs) * step + 2, height + 1, "gold stated over the runs", height, len(runs) * step + 2, height, bars,
            len(runs), HISTORY_RUNS,
        )  # fmt: skip

    @admin.display(description="questions")
    def questions(self, run: EvaluationRun) -> str:
        answers = reverse("admin:pipeline_answer_changelist")
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            (
                (
                    r.get("line", ""), "" if r.get("id") is None else r["id"], r["question"],
                    "answerable" if r.get("answerable") else "unanswerable", r["outcome"],
                    "right" if r["right"] else "WRONG", r["latency_ms"],
                    format_html('<a href="{}?q={}">{}</a>', answers, r["response_id"], str(r["response_id"])[:8])
                    if r.get("response_id") else "",
                )
                for r in run.results
            ),
        )  # fmt: skip
        return format_html(
            "<table><thead><tr><th>line</th><th>id</th><th>question</th><th>kind</th><th>outcome</th>"
            "<th>right</th><th>ms</th><th>answer</th></tr></thead><tbody>{}</tbody></table>",
            rows,
        )
