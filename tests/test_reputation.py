"""Reputation (the Retrieval Reputation Layer): the statistics, the one-statement update on the real Postgres under
concurrency, feedback through the API, and ranking by what has proved useful."""

import threading
import uuid
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.db import connection, connections
from django.utils import timezone

from corpus.embedder import get_embedder
from corpus.models import AuditEvent, Chunk, Collection
from corpus.services import collection_get_or_create, documents_ingest
from pipeline.services import question_answer
from readers.extract import ExtractedDocument
from reputation.models import Credit, Feedback, Reputation
from reputation.ranking import hits_rank
from reputation.scoring import Signals, credit_shares, decayed, decisiveness, increments, outcome, trust
from reputation.selectors import standings
from reputation.services import credits_record, feedback_submit, reputation_reset
from tests.conftest import client_for
from tests.threads import committed


@pytest.fixture(autouse=True)
def no_decay(settings):
    settings.CAIRN_REPUTATION_GAMMA = 1.0  # exact sums; decay has its own tests


def test_outcome_weights_the_present_signals_and_the_verifier_overrides():
    assert outcome(Signals(thumbs=1)) == 1.0 and outcome(Signals(thumbs=0)) == 0.0
    mixed = outcome(Signals(thumbs=1, behaviour="abandoned"))  # (0.10·0.5 + 0.45·(0.1 - 0.5)) / 0.55 + 0.5
    assert mixed == pytest.approx(0.5 + (0.05 - 0.18) / 0.55)
    assert outcome(Signals(thumbs=1, behaviour="kept", judge=0.9, verifier=0.0)) == 0.0
    assert decisiveness(0.5) == 0.0 and decisiveness(0.0) == decisiveness(1.0) == 1.0
    d_alpha, d_beta, d_a, d_b = increments(0.75, 0.5)
    assert (d_alpha, d_beta) == pytest.approx((0.5 * 0.5 * 0.75, 0.5 * 0.5 * 0.25)) and d_a == pytest.approx(
        0.25 * d_alpha
    )


def test_positive_behaviour_is_capped_and_distrusted_users_sound_undecided():
    assert outcome(Signals(behaviour="kept")) == 0.75  # 0.9 capped
    assert outcome(Signals(behaviour="regenerated")) == pytest.approx(0.1)  # rejections are trusted fully
    assert trust(fooled=0, verified=0) == 1.0 and trust(fooled=1, verified=1) == 0.5
    assert outcome(Signals(thumbs=1), trust=0.5) == 0.75


def test_decay_pulls_toward_the_prior_and_credit_shares_sum_to_one():
    assert decayed(3.0, 0.5, 1) == 2.0 and decayed(3.0, 0.5, 2) == 1.5 and decayed(1.0, 0.5, 10) == 1.0
    assert decayed(3.0, 0.5, -1) == 3.0  # clock skew never inflates
    shares = credit_shares([0.9, 0.5, 0.1, -0.2])
    assert sum(shares) == pytest.approx(1.0) and shares == sorted(shares, reverse=True) and shares[-1] > 0


@pytest.fixture
def chunks(db):
    collection, _ = collection_get_or_create(slug="rep", public=True)
    documents_ingest(
        collection=collection,
        documents=[ExtractedDocument(f"Doc {i}", f"Fact number {i} about the reputation layer.", f"rep/{i}", "text/plain")
                   for i in range(3)],
    )  # fmt: skip
    return list(Chunk.objects.filter(document__collection=collection).order_by("id"))


def answer_for(user, chunks, similarities=(0.8, 0.6, 0.4)) -> uuid.UUID:
    response_id = uuid.uuid4()
    credits_record(response_id=response_id, user=user, credited=[(c.id, s) for c, s in zip(chunks, similarities)])
    return response_id


def counters(chunk) -> tuple:
    r = Reputation.objects.get(chunk=chunk)
    return r.alpha, r.beta, r.long_alpha, r.long_beta, r.fooled, r.verified


def verifier(user):
    """`user` as a service account that checks answers (CAIRN_VERIFIER_GROUP): it may send ground truth."""
    user.groups.add(Group.objects.get_or_create(name=settings.CAIRN_VERIFIER_GROUP)[0])
    return user


def test_the_verifier_overrides_and_the_liar_counter_lowers_trust(chunks, charlie):
    verifier(charlie)
    feedback_submit(user=charlie, response_id=answer_for(charlie, chunks), thumbs=1, verifier=0.0)
    share = Credit.objects.get().shares[0]["share"]
    alpha, beta, _, long_beta, fooled, verified = counters(chunks[0])
    assert alpha == pytest.approx(1.0) and beta == pytest.approx(1 + share)  # y = 0: all failure
    assert long_beta == pytest.approx(1 + 0.25 * share) and (fooled, verified) == (1.0, 1.0)
    assert standings([chunks[0].id])[chunks[0].id].trust == 0.5

    before = counters(chunks[0])[0]
    feedback_submit(user=charlie, response_id=answer_for(charlie, chunks), thumbs=1)
    # A fooled chunk hears its users at half strength: y = 0.75, kappa = 0.5 (full trust: y = 1, kappa = 1).
    assert counters(chunks[0])[0] - before == pytest.approx(0.5 * share * 0.75)


def test_one_feedback_per_user_and_response_a_second_replaces_the_first(chunks, charlie):
    response_id = answer_for(charlie, chunks)
    feedback_submit(user=charlie, response_id=response_id, thumbs=1)
    feedback_submit(user=charlie, response_id=response_id, thumbs=0, comment="changed my mind")
    share = Credit.objects.get().shares[0]["share"]
    alpha, beta, long_alpha, long_beta, *_ = counters(chunks[0])
    assert (alpha, beta) == pytest.approx((1.0, 1 + share)) and (long_alpha, long_beta) == pytest.approx(
        (1.0, 1 + 0.25 * share)
    )
    assert Feedback.objects.count() == 1 and Reputation.objects.get(chunk=chunks[0]).feedback_count == 1


def test_the_update_decays_lazily_in_the_same_statement(chunks, charlie, settings):
    settings.CAIRN_REPUTATION_GAMMA = 0.5
    settings.CAIRN_REPUTATION_DECAY_UNIT = 86400.0
    Reputation.objects.filter(chunk=chunks[0]).delete()
    Reputation.objects.create(chunk=chunks[0], alpha=5.0, beta=3.0, last_updated=timezone.now() - timedelta(days=2))
    now = timezone.now()
    feedback_submit(user=charlie, response_id=answer_for(charlie, chunks), thumbs=1, now=now)
    share = Credit.objects.get().shares[0]["share"]
    alpha, beta, *_ = counters(chunks[0])
    assert alpha == pytest.approx(1 + 4 * 0.25 + share, rel=1e-4) and beta == pytest.approx(1 + 2 * 0.25, rel=1e-4)
    assert Reputation.objects.get(chunk=chunks[0]).last_updated == now


def test_feedback_runs_as_prepared_generic_plans_and_the_same_unprepared(chunks, charlie):
    """The point of preparing: parsed and planned once per connection, then run on the generic plan.
    With preparing off (CAIRN_DB_PREPARE=0, for a transaction-mode pooler) the same statement runs
    unprepared and moves the counters the same."""

    def generic_runs() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT coalesce(sum(generic_plans), 0) FROM pg_prepared_statements "
                           "WHERE statement LIKE %s", [f"%{Feedback._meta.db_table}%"])  # fmt: skip
            return cursor.fetchone()[0]

    def alpha_gain() -> float:
        response_id = answer_for(charlie, chunks)
        before = counters(chunks[0])[0]
        feedback_submit(user=charlie, response_id=response_id, thumbs=1)
        return counters(chunks[0])[0] - before

    connection.ensure_connection()
    runs = generic_runs()
    gains = [alpha_gain() for _ in range(3)]
    assert generic_runs() == runs + 3
    connection.connection.prepare_threshold = None  # what CAIRN_DB_PREPARE=0 sets
    try:
        gains.append(alpha_gain())
        assert generic_runs() == runs + 3
    finally:
        connection.connection.prepare_threshold = 5
    share = Credit.objects.first().shares[0]["share"]
    assert gains == pytest.approx([share] * 4)  # thumbs up at full trust: y = 1, kappa = 1


def test_feedback_api_checks_its_input_and_is_idempotent(chunks, charlie, alice):
    response_id = answer_for(charlie, chunks)
    post = lambda user, body: client_for(user).post("/api/v1/feedback", body, format="json")  # noqa: E731
    assert post(charlie, {"response_id": str(uuid.uuid4()), "thumbs": 1}).status_code == 404
    foreign = post(alice, {"response_id": str(response_id), "thumbs": 1})
    assert foreign.status_code == 404 and "response_id" in foreign.json()
    for bad in ({"thumbs": 2}, {"verifier": 1.5}, {"behaviour": "loved"}, {}):
        response = post(charlie, {"response_id": str(response_id), **bad})
        assert response.status_code == 400, bad
        assert set(response.json()) & {"thumbs", "verifier", "behaviour"}
    ok = post(charlie, {"response_id": str(response_id), "thumbs": 1, "behaviour": "copied"})
    assert ok.status_code == 200 and ok.json()["outcome"] == pytest.approx(0.5 + (0.05 + 0.45 * 0.25) / 0.55)
    assert ok.json()["chunks"] == len(chunks)  # counters moved, not characters of the jsonb text
    again = post(charlie, {"response_id": str(response_id), "thumbs": 1, "behaviour": "copied"})
    assert again.status_code == 200 and Feedback.objects.count() == 1
    assert counters(chunks[0])[0] == pytest.approx(
        1 + ok.json()["kappa"] * Credit.objects.get().shares[0]["share"] * ok.json()["outcome"]
    )


def committed_answers(slug: str, users: int, answers_each: int) -> tuple[list[int], list[int], list[list]]:
    """Three committed chunks, `users` users, and `answers_each` answers per user crediting all
    three chunks with the same shares: (chunk ids, user ids, response ids per user)."""

    def setup():
        collection, _ = collection_get_or_create(slug=slug, public=True)
        documents_ingest(collection=collection, documents=[
            ExtractedDocument(f"C{i}", f"Concurrency fact {i}.", f"{slug}/{i}", "text/plain") for i in range(3)])  # fmt: skip
        chunk_ids = list(
            Chunk.objects.filter(document__collection=collection).order_by("id").values_list("id", flat=True)
        )
        user_ids, responses = [], []
        for t in range(users):
            user = User.objects.create_user(f"{slug}-{t}", is_staff=True)  # staff may send verifier results
            user_ids.append(user.id)
            responses.append([uuid.uuid4() for _ in range(answers_each)])
            for response_id in responses[-1]:
                credits_record(
                    response_id=response_id, user=user, credited=[(c, 0.9 - 0.2 * k) for k, c in enumerate(chunk_ids)]
                )
        return chunk_ids, user_ids, responses

    return committed(setup)


def committed_cleanup(slug: str, chunk_ids: list[int], user_ids: list[int]) -> None:
    def cleanup():
        Feedback.objects.filter(user_id__in=user_ids).delete()
        Credit.objects.filter(user_id__in=user_ids).delete()
        Reputation.objects.filter(chunk_id__in=chunk_ids).delete()
        collection = Collection.objects.get(slug=slug)
        collection.documents.all().delete()
        collection.delete()
        User.objects.filter(id__in=user_ids).delete()

    committed(cleanup)


def run_threads(target, count: int) -> None:
    errors = []

    def run(t):
        try:
            target(t)
        except Exception as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)
        finally:
            connections.close_all()

    workers = [threading.Thread(target=run, args=(t,)) for t in range(count)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []


def expected_counters(chunk_ids: list[int], shares: list[float], outcomes: list[tuple[float, bool]]) -> dict:
    """[alpha, beta, A, B, verified] per chunk after feedbacks with outcomes (y, carried a verifier)."""
    expected = {c: [1.0, 1.0, 1.0, 1.0, 0.0] for c in chunk_ids}
    for y, verified in outcomes:
        for chunk_id, share in zip(chunk_ids, shares):
            for k, d in enumerate(increments(y, share)):
                expected[chunk_id][k] += d
            expected[chunk_id][4] += 1.0 if verified else 0.0
    return expected


def assert_counters(chunk_ids: list[int], expected: dict, feedback_count: int) -> None:
    for row in Reputation.objects.filter(chunk_id__in=chunk_ids):
        got = [row.alpha, row.beta, row.long_alpha, row.long_beta, row.verified]
        assert got == pytest.approx(expected[row.chunk_id], rel=1e-9), row.chunk_id
        assert row.feedback_count == feedback_count


@pytest.mark.django_db
def test_eight_threads_of_feedback_lose_no_update():
    threads, per_thread, slug = 8, 200, "rep-concurrency"
    signal_cycle = [{"thumbs": 1}, {"thumbs": 0}, {"behaviour": "kept"}, {"behaviour": "edited", "thumbs": 1},
                    {"verifier": 1.0}, {"behaviour": "abandoned"}]  # fmt: skip
    chunk_ids, user_ids, responses = committed_answers(slug, threads, per_thread)
    plan = [
        [(r, signal_cycle[(t + i) % len(signal_cycle)]) for i, r in enumerate(responses[t])] for t in range(threads)
    ]
    try:

        def feed(t):
            user = User.objects.get(id=user_ids[t])
            for response_id, signals in plan[t]:
                feedback_submit(user=user, response_id=response_id, **signals)

        run_threads(feed, threads)
        shares = [item["share"] for item in Credit.objects.filter(user_id=user_ids[0]).first().shares]  # as frozen
        outcomes = [(outcome(Signals(**signals)), "verifier" in signals) for steps in plan for _, signals in steps]
        assert_counters(chunk_ids, expected_counters(chunk_ids, shares, outcomes), threads * per_thread)
    finally:
        committed_cleanup(slug, chunk_ids, user_ids)


@pytest.mark.django_db
def test_racing_feedbacks_on_the_same_answers_count_each_answer_once():
    """Four clients of one user post different feedback on the same answers at once: whichever
    lands last is the answer's feedback, and the counters hold its effect and no one else's."""
    threads, answers, slug = 4, 60, "rep-race"
    chunk_ids, user_ids, responses = committed_answers(slug, 1, answers)
    signals = [{"thumbs": 1}, {"thumbs": 0}, {"verifier": 1.0}, {"behaviour": "edited", "thumbs": 0}]
    together = threading.Barrier(threads, timeout=120)
    try:

        def feed(t):
            user = User.objects.get(id=user_ids[0])
            try:
                for response_id in responses[0]:
                    together.wait()  # all four on the same answer at the same moment
                    feedback_submit(user=user, response_id=response_id, **signals[t])
            except Exception:
                together.abort()  # the others stop waiting; the error is reported
                raise

        run_threads(feed, threads)
        finals = list(Feedback.objects.filter(user_id=user_ids[0]))
        assert len(finals) == answers
        shares = [item["share"] for item in Credit.objects.filter(user_id=user_ids[0]).first().shares]
        ys = [outcome(Signals(thumbs=f.thumbs, behaviour=f.behaviour or None, verifier=f.verifier)) for f in finals]
        expected = expected_counters(chunk_ids, shares, [(y, f.verifier is not None) for y, f in zip(ys, finals)])
        assert_counters(chunk_ids, expected, answers)
        for y, f in zip(ys, finals):  # each stored feedback records exactly what it added
            assert f.applied[str(chunk_ids[0])][:4] == pytest.approx(increments(y, shares[0]), rel=1e-9)
    finally:
        committed_cleanup(slug, chunk_ids, user_ids)


def test_a_chunk_with_a_good_history_overtakes_a_slightly_more_similar_one_with_a_bad_history(charlie):
    question = "who got the first nobel prize in physics"
    before = question_answer(user=charlie, question=question, mode="fast", top_k=5)
    first, second = before.hits[0], before.hits[1]
    for signals, hit in (({"thumbs": 0}, first), ({"thumbs": 1}, second)):
        for _ in range(3):
            response_id = uuid.uuid4()
            credits_record(response_id=response_id, user=charlie, credited=[(hit.chunk_id, hit.similarity)])
            feedback_submit(user=charlie, response_id=response_id, **signals)
    after = question_answer(user=charlie, question=question, mode="fast", top_k=5)
    order = [h.chunk_id for h in after.hits]
    assert order[0] == second.chunk_id and (first.chunk_id not in order or order.index(first.chunk_id) > 0)
    evidence = {e.chunk_id: e for e in after.record.evidence.all()}
    assert evidence[second.chunk_id].reputation > 0.5
    assert evidence.get(first.chunk_id) is None or evidence[first.chunk_id].reputation < 0.5
    ranked = hits_rank([first, second], explore=False)
    assert ranked[0].hit.chunk_id == second.chunk_id


def test_a_record_counts_for_questions_like_the_ones_it_came_from_and_not_for_unrelated_ones(charlie):
    """Feedback earned on a rewording of the question re-orders its hits; the same record is
    ignored for an unrelated question (no recurrence: reputation must not cost it what retrieval found)."""
    question = "who got the first nobel prize in physics"
    rewording, unrelated = "who was the first winner of the nobel prize for physics", "how do I reset my password"
    q, r, u = get_embedder().embed([question, rewording, unrelated])
    first, second = question_answer(user=charlie, question=question, mode="fast", top_k=5).hits[:2]
    for signals, hit in (({"thumbs": 0}, first), ({"thumbs": 1}, second)):
        for _ in range(3):
            response_id = uuid.uuid4()
            credits_record(response_id=response_id, user=charlie, credited=[(hit.chunk_id, hit.similarity)],
                           question_vector=r)  # fmt: skip
            feedback_submit(user=charlie, response_id=response_id, **signals)
    assert standings([first.chunk_id], question_vector=q)[first.chunk_id].affinity > 0.9
    assert abs(standings([first.chunk_id], question_vector=u)[first.chunk_id].affinity) < 0.3
    assert [x.hit.chunk_id for x in hits_rank([first, second], explore=False, question_vector=q)][0] == second.chunk_id
    assert [x.hit.chunk_id for x in hits_rank([first, second], explore=False, question_vector=u)][0] == first.chunk_id
    after = question_answer(user=charlie, question=question, mode="fast", top_k=5)  # the pipeline passes its question
    assert after.hits[0].chunk_id == second.chunk_id
    assert after.record.evidence.get(chunk_id=second.chunk_id).reputation_weight == 1.0
    reputation_reset([first.chunk_id], actor=None)
    assert Reputation.objects.get(chunk_id=first.chunk_id).questions is None


def test_reputation_never_makes_an_unreadable_chunk_readable(finance, charlie, alice):
    question = "What per diem may employees claim for overnight business travel?"
    (policy,) = Chunk.objects.filter(document__collection=finance)
    response_id = uuid.uuid4()
    credits_record(response_id=response_id, user=alice, credited=[(policy.id, 0.9)])
    feedback_submit(user=verifier(alice), response_id=response_id, thumbs=1, verifier=1.0)
    assert policy.id in [h.chunk_id for h in question_answer(user=alice, question=question, mode="fast").hits]
    assert policy.id not in [h.chunk_id for h in question_answer(user=charlie, question=question, mode="fast").hits]


def test_a_found_answer_credits_its_verified_evidence(charlie):
    state = question_answer(user=charlie, question="who got the first nobel prize in physics", mode="fast", top_k=5)
    credit = Credit.objects.get(response_id=state.record.response_id)
    verified = [c.hit.chunk_id for c in state.verified]
    assert [s["chunk_id"] for s in credit.shares] == verified and verified
    assert sum(s["share"] for s in credit.shares) == pytest.approx(1.0, abs=1e-5)


def test_a_reset_returns_counters_to_the_prior_with_an_audit_row(chunks, charlie, bob, client):
    feedback_submit(user=charlie, response_id=answer_for(charlie, chunks), thumbs=1)
    assert reputation_reset([chunks[0]], actor=bob, reason="chunk rewritten") == 1
    assert counters(chunks[0]) == (1.0, 1.0, 1.0, 1.0, 0.0, 0.0)
    event = AuditEvent.objects.get(action="reputation.reset", object_id=str(chunks[0].id))
    assert event.actor_name == "bob" and event.before["alpha"] > 1.0 and event.after["alpha"] == 1.0
    client.force_login(bob)
    for url in ("/admin/reputation/reputation/", "/admin/reputation/reputation/?attention=low",
                "/admin/reputation/documentreputation/"):  # fmt: skip
        assert client.get(url).status_code == 200, url
