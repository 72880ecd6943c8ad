"""python manage.py evaluate QUESTIONS.jsonl [--collection SLUG ...] [--user NAME] [--margin POINTS] [--top-k 8] [--mode fast]

Each line of QUESTIONS.jsonl: {"id": ..., "question": ..., "answerable": true, "gold": ["string", ...]}
or {"question": ..., "answerable": false}; the id is optional, other keys are ignored."""

import hashlib
import json
import logging
import subprocess
import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from tqdm import tqdm

from corpus.models import Collection
from corpus.selectors import collections_readable_by
from pipeline.evaluation import RATES, answer_score, results_changed, run_compare, run_summary
from pipeline.models import Answer, EvaluationRun
from pipeline.services import query_state, question_answer
from pipeline.stages import STAGES, pipeline_run, record

log = logging.getLogger(__name__)
EVALUATOR = "cairn-evaluator"
MAX_QUESTION = 2000  # what the API accepts (QueryApi's input serializer)


def questions_read(path: Path) -> tuple[list[dict], str]:
    """The questions of a JSONL file and the sha256 of its bytes; a CommandError naming the file,
    and the line, for anything that is not a question."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CommandError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CommandError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    questions = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}, line {number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CommandError(f"{where}: not JSON ({exc.msg}, column {exc.colno})") from None
        if not isinstance(item, dict):
            raise CommandError(f'{where}: expected an object such as {{"question": ..., "answerable": ...}}')
        question = item.get("question")
        if not isinstance(question, str) or not question.strip():
            raise CommandError(f'{where}: "question" must be a non-empty string')
        if len(question) > MAX_QUESTION:
            raise CommandError(f"{where}: the question is over {MAX_QUESTION} characters (the API refuses it)")
        answerable = item.get("answerable")
        if not isinstance(answerable, bool):
            raise CommandError(f'{where}: "answerable" must be true or false')
        gold = item.get("gold")
        if answerable and not (
            isinstance(gold, list) and gold and all(isinstance(g, str) for g in gold) and any(g.strip() for g in gold)
        ):
            raise CommandError(f'{where}: an answerable question needs "gold", a list of strings the answer must hold')
        identity = item.get("id")
        if identity is not None and not isinstance(identity, str | int):
            raise CommandError(f'{where}: "id" must be a string or a number')
        questions.append(
            {"line": number, "id": identity, "question": question, "answerable": answerable,
             "gold": gold if answerable else None}
        )  # fmt: skip
    if not questions:
        raise CommandError(f"{path}: no questions in it")
    return questions, hashlib.sha256(data).hexdigest()


def git_commit() -> str:
    """The checkout's commit, or empty (no git, not a checkout)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=settings.BASE_DIR, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and len(commit) == 40 else ""


def percent(rate: float) -> str:
    return f"{rate * 100:.1f}%"


class Command(BaseCommand):
    help = (
        "Ask every question of a JSONL file through the pipeline the API uses, score the answers as "
        "benchmarks/docs_qa.py does (pipeline/evaluation.py), store the run, and fail when the share of "
        "answerable questions given a gold string in a stated answer, or of unanswerable ones answered "
        "'not found', falls more than --margin points below the previous run of the same file (by content), "
        "collections, mode and top_k."
    )

    def add_arguments(self, parser):
        parser.add_argument("questions", type=Path, metavar="QUESTIONS.jsonl")
        parser.add_argument(
            "--collection", action="append", default=[], metavar="SLUG", dest="collections",
            help="Ask within this collection (repeatable); none: every collection the user reads.",
        )  # fmt: skip
        parser.add_argument(
            "--user",
            help=f"Ask as this user; default {EVALUATOR!r}, created if missing and given read access to the "
            "collections asked.",
        )
        parser.add_argument(
            "--margin", type=float, metavar="POINTS",
            help="The fall in percentage points a rate may take (default CAIRN_EVALUATE_MARGIN, 2.0).",
        )  # fmt: skip
        parser.add_argument("--top-k", type=int, default=8, help="Passages per question, 1..50 (default 8).")
        parser.add_argument("--mode", choices=Answer.Mode.values, default=Answer.Mode.FAST)

    def handle(self, *args, questions, collections, user, margin, top_k, mode, verbosity, **options):
        if margin is None:
            margin = settings.CAIRN_EVALUATE_MARGIN
        if margin < 0:
            raise CommandError(f"--margin must be 0 or more points, got {margin}")
        if not 1 <= top_k <= 50:
            raise CommandError(f"--top-k must be in 1..50 (as the API's), got {top_k}")
        asked, sha256 = questions_read(questions)
        slugs = sorted(set(collections))
        asker = self._asker(user, slugs)

        started_at = timezone.now()
        self._warm_up(asker, asked[0]["question"], top_k=top_k, collections=slugs or None, mode=mode)
        results, scores, latencies, errors = [], [], [], 0
        for q in tqdm(asked, desc="asking", unit="q", disable=verbosity == 0):
            row = {"line": q["line"], "id": q["id"], "question": q["question"], "answerable": q["answerable"]}
            started = time.perf_counter()
            try:
                state = question_answer(
                    user=asker, question=q["question"], top_k=top_k, collections=slugs or None, mode=mode
                )
            except Exception:  # noqa: BLE001 - one failed question is a result of the run, stored with it
                log.exception("evaluate: question on line %d failed", q["line"])
                latencies.append(ms := (time.perf_counter() - started) * 1000)
                errors += 1
                results.append(
                    row | {"outcome": "error", "right": False, "latency_ms": round(ms, 1), "response_id": None}
                )
                continue
            latencies.append(ms := (time.perf_counter() - started) * 1000)
            answer = state.record
            score = answer_score(text=answer.text, stated=answer.found, gold=q["gold"])
            scores.append(score)
            results.append(
                row | {"outcome": answer.outcome, "right": score.right, "latency_ms": round(ms, 1),
                       "response_id": str(answer.response_id)}
            )  # fmt: skip
        finished_at = timezone.now()

        totals = run_summary(scores=scores, latencies_ms=latencies, errors=errors)
        previous = (
            EvaluationRun.objects.filter(questions_sha256=sha256, collections=slugs, mode=mode, top_k=top_k)
            .order_by("-started_at")
            .first()
        )
        comparison = run_compare(previous=previous and previous.totals, current=totals, margin_points=margin)
        if previous is not None:
            comparison |= {"previous_run": previous.id, "previous_started_at": previous.started_at.isoformat()}
            comparison |= results_changed(previous=previous.results, current=results)
        run = EvaluationRun.objects.create(
            questions_file=str(questions), questions_sha256=sha256, collections=slugs, user=asker, mode=mode,
            top_k=top_k, margin_points=margin, started_at=started_at, finished_at=finished_at, totals=totals,
            results=results, commit=git_commit(), passed=not comparison["fell"] and not errors, previous=previous,
            comparison=comparison,
        )  # fmt: skip
        self._report(run)
        failures = []
        if comparison["fell"]:
            fallen = "; ".join(
                f"{RATES[rate]} {percent(change['before'])} -> {percent(change['now'])} "
                f"({change['change_points']:+.1f} points)"
                for rate, change in comparison["rates"].items()
                if change["fell"]
            )
            failures.append(f"fell more than {margin:g} points below run {previous.id}: {fallen}")
        if errors:
            failures.append(f"{errors} question(s) got no answer (an error, logged)")
        if failures:
            raise CommandError(f"evaluation run {run.id} failed: {'; '.join(failures)}")

    def _warm_up(self, user, question: str, **asking) -> None:
        """Load the models before the clock starts, as docs_qa.py's first question does: otherwise the
        first question's latency is the models' loading. Nothing is recorded (no `record` stage)."""
        try:
            pipeline_run(query_state(user=user, question=question, **asking), [s for s in STAGES if s is not record])
        except Exception:  # noqa: BLE001 - the question itself fails again, and is counted, in the run
            log.exception("evaluate: warming up failed")

    def _asker(self, name: str | None, slugs: list[str]):
        """The user the questions are asked as: `name`, who must exist and read every collection asked;
        else the evaluator, created if missing, given read access to them as a benchmark's reader is."""
        User = get_user_model()
        found = {c.slug: c for c in Collection.objects.filter(slug__in=slugs)}
        if unknown := [s for s in slugs if s not in found]:
            raise CommandError(f"no collection {', '.join(unknown)}")
        if name is not None:
            try:
                user = User.objects.get(username=name)
            except User.DoesNotExist:
                raise CommandError(f"no user {name!r}") from None
        else:
            # With an unusable password: nobody signs in as the evaluator.
            user = User.objects.filter(username=EVALUATOR).first() or User.objects.create_user(EVALUATOR)
            for collection in found.values():
                user.groups.add(*collection.groups.all())
        readable = set(collections_readable_by(user=user).filter(slug__in=slugs).values_list("slug", flat=True))
        if unreadable := [s for s in slugs if s not in readable]:
            raise CommandError(f"user {user.username!r} may not read collection(s) {', '.join(unreadable)}")
        return user

    def _report(self, run: EvaluationRun) -> None:
        t, comparison = run.totals, run.comparison
        lines = [
            f"run {run.id}: {run.questions_file} (sha256 {run.questions_sha256[:12]}), "
            f"collections {', '.join(run.collections) or '(all the user reads)'}, user {run.user.username}, "
            f"mode {run.mode}, top_k {run.top_k}, commit {run.commit[:12] or '(none)'}",
            f"  answerable: gold in a stated answer {t['gold_stated']}/{t['answerable']} "
            f"({percent(t['gold_stated_rate'])}); stated {t['stated']}, gold withheld {t['gold_unstated']}",
            f"  unanswerable: not found {t['not_found_unanswerable']}/{t['unanswerable']} "
            f"({percent(t['not_found_rate'])})",
            f"  latency p50 {t['p50_ms']:.0f} ms, p95 {t['p95_ms']:.0f} ms; errors {t['errors']}",
        ]
        if run.previous_id is None:
            lines.append("  no previous run of this file, collections, mode and top_k: nothing to compare")
        else:
            lines.append(
                f"  against run {run.previous_id} ({comparison['previous_started_at'][:16]}), "
                f"margin {run.margin_points:g} points:"
            )
            for rate, change in comparison["rates"].items():
                lines.append(
                    f"    {RATES[rate]}: {percent(change['before'])} -> {percent(change['now'])} "
                    f"({change['change_points']:+.1f} points){'  FELL' if change['fell'] else ''}"
                )
            for said, key in (("now wrong", "now_wrong"), ("now right", "now_right")):
                if comparison.get(key):
                    lines.append(f"    {said}: {', '.join(comparison[key][:20])}")
        lines.append(f"  {'passed' if run.passed else 'FAILED'}")
        self.stdout.write("\n".join(lines))
