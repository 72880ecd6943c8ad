"""`manage.py evaluate`: an organisation's own questions asked through the pipeline the API uses,
scored by pipeline/evaluation.py (as benchmarks/docs_qa.py scores a manual's), stored, compared
with the run before, failing on a fall; and the runs in the admin, to those who curate them."""

import json
import re
from io import StringIO

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone

from corpus.lifecycle import document_retract
from corpus.models import Document
from pipeline.evaluation import Score, answer_score, has_gold, run_compare, run_summary
from pipeline.models import EvaluationRun
from tests.conftest import client_for

pytestmark = pytest.mark.django_db

# From demo/questions.jsonl (its "answers" are the gold): three the demo corpus answers with a gold
# string and one it answers without one; and two it cannot answer. Extra keys ("part") are ignored.
QUESTIONS = [
    {"id": "nq-0", "question": "who got the first nobel prize in physics", "answerable": True,
     "gold": ["Wilhelm Conrad Röntgen"], "part": "demo"},
    {"id": "nq-4", "question": "how many episodes are there in dragon ball z", "answerable": True,
     "gold": ["291 episodes", "291"]},
    {"id": "nq-57", "question": "who is the guy who walked across the twin towers", "answerable": True,
     "gold": ["Philippe Petit"]},
    {"id": "nq-41", "question": "what is the job of justice of the peace", "answerable": True,
     "gold": ["dispense summary justice"]},
    {"question": "what per diem may employees claim for overnight business travel", "answerable": False},
    {"id": "nonsense", "question": "the of and", "answerable": False},
]  # fmt: skip
FIGURES = ["asked", "errors", "answerable", "gold_stated", "gold_unstated", "stated", "gold_stated_rate",
           "unanswerable", "not_found_unanswerable", "not_found_rate"]  # fmt: skip


@pytest.fixture
def questions_file(tmp_path):
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS) + "\n")
    return path


def evaluate(path, *args) -> str:
    out = StringIO()
    call_command("evaluate", str(path), *args, stdout=out, verbosity=0)
    return out.getvalue()


def asked_through_the_api(user) -> dict:
    """The questions asked one by one as docs_qa.py asks them (POST /api/v1/query, fast, top_k 8, the
    collection), scored by pipeline.evaluation."""
    client, scores, outcomes = client_for(user), [], []
    for q in QUESTIONS:
        body = client.post(
            "/api/v1/query",
            {"question": q["question"], "mode": "fast", "top_k": 8, "collections": ["demo"]},
            format="json",
        ).json()
        scores.append(answer_score(text=body["answer"], stated=body["found"], gold=q.get("gold")))
        outcomes.append(body["outcome"])
    return run_summary(scores=scores, latencies_ms=[0.0] * len(scores)) | {"outcomes": outcomes}


def test_a_run_scores_as_asking_each_question_through_the_api_does_and_is_stored(charlie, questions_file):
    api = asked_through_the_api(charlie)
    report = evaluate(questions_file, "--collection", "demo")

    run = EvaluationRun.objects.get()
    assert {k: run.totals[k] for k in FIGURES} == {k: api[k] for k in FIGURES}
    assert (run.totals["asked"], run.totals["answerable"], run.totals["unanswerable"]) == (6, 4, 2)
    assert run.totals["gold_stated"] == 3 and run.totals["not_found_unanswerable"] == 2  # the demo's, today
    assert run.totals["p50_ms"] > 0 and run.totals["p95_ms"] >= run.totals["p50_ms"]
    assert [r["outcome"] for r in run.results] == api["outcomes"]
    assert [(r["id"], r["line"], r["answerable"]) for r in run.results] == [
        (q.get("id"), n, q["answerable"]) for n, q in enumerate(QUESTIONS, start=1)
    ]
    assert [r["right"] for r in run.results][:4] == [True, True, True, False]
    assert all(r["latency_ms"] > 0 and r["response_id"] for r in run.results)
    assert (run.collections, run.mode, run.top_k, run.user.username) == (["demo"], "fast", 8, "cairn-evaluator")
    assert run.questions_file == str(questions_file) and len(run.questions_sha256) == 64
    assert len(run.commit) in (0, 40) and run.passed and run.previous is None
    assert "gold in a stated answer 3/4 (75.0%)" in report and "not found 2/2 (100.0%)" in report
    assert not run.user.has_usable_password()


def test_a_second_run_is_compared_with_the_first_and_passes(questions_file):
    evaluate(questions_file, "--collection", "demo")
    report = evaluate(questions_file, "--collection", "demo")

    first, second = EvaluationRun.objects.order_by("started_at")
    assert second.previous == first and second.passed
    assert second.comparison["previous_run"] == first.id and second.comparison["fell"] == []
    assert {rate: c["change_points"] for rate, c in second.comparison["rates"].items()} == {
        "gold_stated_rate": 0.0, "not_found_rate": 0.0,
    }  # fmt: skip
    assert f"against run {first.id}" in report and "passed" in report
    # The file changed: another question set, compared with no run of the old one.
    questions_file.write_text(questions_file.read_text() + json.dumps(QUESTIONS[0]) + "\n")
    evaluate(questions_file, "--collection", "demo")
    assert EvaluationRun.objects.order_by("started_at").last().previous is None


def test_a_run_whose_gold_stated_share_falls_exits_non_zero_and_is_stored(questions_file):
    evaluate(questions_file, "--collection", "demo")
    document_retract(Document.objects.get(collection__slug="demo", title="Philippe Petit"), reason="superseded")

    with pytest.raises(CommandError, match=r"fell more than 2 points below run \d+: answerable: gold in a stated"):
        evaluate(questions_file, "--collection", "demo")

    failed = EvaluationRun.objects.order_by("started_at").last()
    assert not failed.passed and failed.comparison["fell"] == ["gold_stated_rate"] and failed.margin_points == 2.0
    assert failed.totals["gold_stated"] == 2 and failed.comparison["now_wrong"] == ["nq-57"]
    assert failed.comparison["rates"]["gold_stated_rate"]["change_points"] == -25.0
    assert failed.comparison["rates"]["not_found_rate"]["fell"] is False


def test_a_fall_within_the_margin_passes(questions_file, settings):
    evaluate(questions_file, "--collection", "demo")
    document_retract(Document.objects.get(collection__slug="demo", title="Philippe Petit"), reason="superseded")
    settings.CAIRN_EVALUATE_MARGIN = 1.0  # --margin wins over the setting
    evaluate(questions_file, "--collection", "demo", "--margin", "25")
    run = EvaluationRun.objects.order_by("started_at").last()
    assert run.passed and run.comparison["rates"]["gold_stated_rate"]["change_points"] == -25.0


def test_a_question_that_fails_is_stored_as_an_error_and_fails_the_run(questions_file, monkeypatch):
    from pipeline.management.commands import evaluate as command

    answer = command.question_answer

    def failing(*, question, **asking):
        if question == "the of and":
            raise RuntimeError("the pipeline broke")
        return answer(question=question, **asking)

    monkeypatch.setattr(command, "question_answer", failing)
    with pytest.raises(CommandError, match="1 question\\(s\\) got no answer"):
        evaluate(questions_file, "--collection", "demo")
    run = EvaluationRun.objects.get()
    assert not run.passed and run.totals["errors"] == 1 and run.totals["asked"] == 5
    assert run.results[-1]["outcome"] == "error" and run.results[-1]["right"] is False


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('{"question": "who", "answerable": true', "not JSON"),
        ('["who", true]', "expected an object"),
        ('{"question": "", "answerable": false}', '"question" must be'),
        ('{"question": "who wrote it", "answerable": "yes"}', '"answerable" must be'),
        ('{"question": "who wrote it", "answerable": true}', 'needs "gold"'),
        ('{"question": "who wrote it", "answerable": true, "gold": [" "]}', 'needs "gold"'),
        ('{"question": "who wrote it", "answerable": false, "id": ["x"]}', '"id" must be'),
    ],
)  # fmt: skip
def test_a_malformed_line_is_a_command_error_naming_the_file_and_the_line(tmp_path, line, said):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(QUESTIONS[0]) + "\n\n" + line + "\n")
    with pytest.raises(CommandError, match=rf"{re.escape(str(path))}, line 3: .*{re.escape(said)}"):
        evaluate(path, "--collection", "demo")
    assert not EvaluationRun.objects.exists()


def test_what_cannot_be_asked_is_a_command_error(tmp_path, questions_file, finance, charlie):
    for path, args, said in [
        (tmp_path / "missing.jsonl", [], "missing.jsonl: cannot read it"),
        (questions_file, ["--collection", "nowhere"], "no collection nowhere"),
        (questions_file, ["--collection", "finance", "--user", "charlie"], "may not read collection"),
        (questions_file, ["--user", "nobody"], "no user 'nobody'"),
        (questions_file, ["--top-k", "0"], "--top-k"),
    ]:
        with pytest.raises(CommandError, match=said):
            evaluate(path, *args)
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(CommandError, match="no questions"):
        evaluate(tmp_path / "empty.jsonl")


def test_the_evaluator_reads_a_private_collection_asked_as_its_readers_do(tmp_path, finance):
    path = tmp_path / "finance.jsonl"
    path.write_text(json.dumps({"question": "what per diem may employees claim for overnight business travel",
                                "answerable": True, "gold": ["85 euros"]}) + "\n")  # fmt: skip
    evaluate(path, "--collection", "finance")
    run = EvaluationRun.objects.get()
    assert run.user.groups.filter(name="finance").exists()
    assert run.totals["gold_stated"] == 1 and run.results[0]["outcome"] == "answered"


# --- The figures themselves (plain functions) ------------------------------------------------------


def test_gold_counts_only_in_a_stated_answer_and_refusing_is_right_when_unanswerable():
    assert has_gold("Philippe PETIT walked", ["philippe petit "]) and not has_gold("anything", ["", " "])
    assert answer_score(text="291 episodes", stated=True, gold=["291"]).right
    withheld = answer_score(text="Sources disagree: 291 or 292", stated=False, gold=["291"])
    assert withheld.quoted and not withheld.right
    assert answer_score(text="Not found", stated=False, gold=None).right
    assert not answer_score(text="It is 85 euros", stated=True, gold=None).right
    totals = run_summary(scores=[withheld, Score(True, True, True), Score(False, False)], latencies_ms=[1, 2, 3, 4],
                         errors=1)  # fmt: skip
    assert (totals["asked"], totals["gold_stated"], totals["gold_unstated"], totals["gold_stated_rate"]) == (
        3,
        1,
        1,
        0.5,
    )
    assert (totals["not_found_rate"], totals["p50_ms"], totals["errors"]) == (1.0, 2.5, 1)


def test_a_fall_of_exactly_the_margin_passes_and_one_past_it_fails():
    def totals(gold_stated_rate):
        return {"answerable": 50, "gold_stated_rate": gold_stated_rate, "unanswerable": 0, "not_found_rate": 0.0}

    assert run_compare(previous=totals(0.50), current=totals(0.48), margin_points=2.0)["fell"] == []
    assert run_compare(previous=totals(0.50), current=totals(0.46), margin_points=2.0)["fell"] == ["gold_stated_rate"]
    assert run_compare(previous=None, current=totals(0.0), margin_points=2.0)["fell"] == []
    assert "not_found_rate" not in run_compare(previous=totals(0.5), current=totals(0.5), margin_points=2.0)["rates"]


# --- The admin --------------------------------------------------------------------------------------


def stored_run(collections: list[str], **fields) -> EvaluationRun:
    now = timezone.now()
    row = {
        "questions_file": "/srv/hr-questions.jsonl", "questions_sha256": "a" * 64, "collections": collections,
        "mode": "fast", "top_k": 8, "margin_points": 2.0, "started_at": now, "finished_at": now, "passed": True,
        "commit": "b" * 40,
        "totals": {"asked": 1, "errors": 0, "answerable": 1, "gold_stated": 1, "gold_unstated": 0, "stated": 1,
                   "gold_stated_rate": 1.0, "unanswerable": 0, "not_found_unanswerable": 0, "not_found_rate": 0.0,
                   "p50_ms": 412.0, "p95_ms": 498.0},
        "results": [{"line": 1, "id": "q1", "question": "when are <salary> bands reviewed", "answerable": True,
                     "outcome": "answered", "right": True, "latency_ms": 412.0, "response_id": None}],
    }  # fmt: skip
    return EvaluationRun.objects.create(**row | fields)


def admin_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_run_is_shown_to_superusers_and_to_curators_of_every_collection_it_asked(hr, finance, bob, dana):
    root = User.objects.create_superuser("root", password="root-pw")
    hr_run, both_run, everything_run = stored_run(["hr"]), stored_run(["finance", "hr"]), stored_run([])
    finance_run = stored_run(["finance"])
    seen = {
        user.username: {r for r in (hr_run, both_run, everything_run, finance_run)
                        if admin_client(user).get(f"/admin/pipeline/evaluationrun/{r.id}/change/").status_code == 200}
        for user in (root, bob, dana)
    }  # fmt: skip
    assert seen == {"root": {hr_run, both_run, everything_run, finance_run}, "bob": {finance_run},
                    "dana": {hr_run, both_run, finance_run}}  # fmt: skip
    listing = admin_client(bob).get("/admin/pipeline/evaluationrun/").content.decode()
    assert "hr-questions.jsonl" in listing and "100.0% (1/1)" in listing and "412 / 498 ms" in listing
    outsider = User.objects.create_user("erin", password="erin-pw", is_staff=True)
    outsider.groups.add(Group.objects.get(name="hr"))
    assert admin_client(outsider).get("/admin/pipeline/evaluationrun/").status_code == 403


def test_a_runs_page_shows_its_questions_and_its_history_and_changes_nothing(hr, dana):
    first = stored_run(["hr"])
    second = stored_run(["hr"], previous=first, passed=False)
    page = admin_client(dana).get(f"/admin/pipeline/evaluationrun/{second.id}/change/").content.decode()
    assert "when are &lt;salary&gt; bands reviewed" in page and "<salary>" not in page
    assert page.count("<rect ") == 2 and "#c44e52" in page
    assert admin_client(dana).post(f"/admin/pipeline/evaluationrun/{second.id}/delete/").status_code == 403
