"""The gate's upper relevance threshold fitted to one collection's own text (calibrate_gate
--collection): questions written from its headings against the same questions about words it never
holds, stored on the collection with an audit row, and used for questions asked of it."""

import random

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from corpus.models import AuditEvent, Collection
from corpus.selectors import calibrated_relevance_upper
from judges.collection_calibration import absent_word, calibration_questions
from pipeline.gate import Action, Bucket, action_for, bucket_for

HANDBOOK = """# Operations handbook

## Backup schedule

Full backups of the ledger database run every Sunday at 02:00. Incremental backups run nightly.
Backups are kept for ninety days in the eastern data centre.

## Password rotation

Service account passwords are rotated every sixty days by the security team. Rotation is announced
one week ahead on the operations channel.

## Incident severity

A severity one incident stops payments for all customers. It pages the on-call engineer at once.
Severity two incidents degrade a single service and are handled in working hours.

## Settings

max_connections
: The largest number of client connections the ledger accepts. The default is 200.

audit_retention
: How long audit records are kept before archiving. The default is seven years.
"""


def test_an_absent_word_is_a_scramble_the_collection_never_holds():
    held = {"backup", "kpuabc"}.__contains__
    scrambled = absent_word("backup", lambda w: held(w.lower()), random.Random(1))
    assert scrambled and sorted(scrambled) == sorted("backup") and scrambled.lower() not in {"backup", "kpuabc"}
    assert absent_word("aaaa", lambda w: False, random.Random(1)) is None  # no other order exists


def test_the_upper_threshold_is_a_parameter_of_the_gate_decisions():
    assert action_for([0.55], upper=0.5) is Action.CORRECT
    assert action_for([0.55], upper=0.6) is Action.AMBIGUOUS
    assert bucket_for(0.9, 0.55, upper=0.5) is Bucket.VERIFIED
    assert bucket_for(0.9, 0.55, upper=0.6) is Bucket.UNCERTAIN


@pytest.mark.django_db
def test_a_collection_is_calibrated_from_its_own_headings_and_its_threshold_answers_its_questions(tmp_path, alice):
    from corpus.services import collection_get_or_create
    from pipeline.stages import QueryState, embed_query, rank, retrieve, verify

    (tmp_path / "handbook.md").write_text(HANDBOOK)
    call_command("ingest", str(tmp_path), collection="handbook", verbosity=0)
    collection, _ = collection_get_or_create(slug="handbook", group_names=["finance"])  # alice reads it

    asked = calibration_questions(collection, limit=10)
    assert asked and all(q.absent != q.question for q in asked)
    assert any(q.question == "What is backup schedule?" for q in asked)

    call_command("calibrate_gate", collection="handbook", questions=10, verbosity=0)
    collection.refresh_from_db()
    fitted = collection.gate_calibration
    assert settings.CAIRN_RELEVANCE_LOWER <= fitted["relevance_upper"] <= 1.0
    assert fitted["questions"] == len(asked)
    assert 0.0 <= fitted["at_relevance_upper"]["positives_below"] <= 1.0
    event = AuditEvent.objects.get(action="collection.calibrate_gate", object_id=str(collection.pk))
    assert event.before == {"relevance_upper": None} and event.after == {"relevance_upper": fitted["relevance_upper"]}

    def gate_upper(collection_ids):
        state = QueryState(user=alice, question="When do full backups run?", top_k=4, mode="fast",
                           collection_ids=collection_ids)  # fmt: skip
        for stage in (embed_query, retrieve, rank, verify):
            stage(state)
        return state.gate.upper

    assert gate_upper([collection.id]) == fitted["relevance_upper"]
    root = User.objects.create_superuser("root", "root@example.com", "pw")
    admin_page = Client()
    admin_page.force_login(root)
    shown = admin_page.get(f"/admin/corpus/collection/{collection.pk}/change/").content.decode()
    assert f"{fitted['relevance_upper']} (fitted {fitted['calibrated_at']}" in shown

    call_command("calibrate_gate", collection="handbook", clear=True, verbosity=0)
    collection.refresh_from_db()
    assert collection.gate_calibration == {} and gate_upper([collection.id]) == settings.CAIRN_RELEVANCE_UPPER
    assert AuditEvent.objects.filter(action="collection.calibrate_gate").count() == 2


@pytest.mark.django_db
def test_several_collections_use_the_lowest_fit_and_any_unfitted_one_means_the_global_threshold(alice, finance):
    from corpus.services import collection_get_or_create

    other, _ = collection_get_or_create(slug="handbook", group_names=["finance"])
    both = [finance.id, other.id]
    assert calibrated_relevance_upper(user=alice, collection_ids=both) is None
    Collection.objects.filter(pk=finance.pk).update(gate_calibration={"relevance_upper": 0.6})
    assert calibrated_relevance_upper(user=alice, collection_ids=[finance.id]) == 0.6
    assert calibrated_relevance_upper(user=alice, collection_ids=both) is None  # the handbook has no fit
    Collection.objects.filter(pk=other.pk).update(gate_calibration={"relevance_upper": 0.55})
    assert calibrated_relevance_upper(user=alice, collection_ids=both) == 0.55
    assert calibrated_relevance_upper(user=alice, collection_ids=[]) is None  # nothing searched: the global one


@pytest.mark.django_db
def test_calibrating_an_unknown_or_unstructured_collection_is_a_clear_error(tmp_path, finance):
    with pytest.raises(CommandError, match="no collection 'nowhere'"):
        call_command("calibrate_gate", collection="nowhere")
    with pytest.raises(CommandError, match="--questions must be at least 10"):
        call_command("calibrate_gate", collection="finance", questions=3)
    with pytest.raises(CommandError, match="'finance' has no headings or definition terms"):
        call_command("calibrate_gate", collection="finance", questions=10)
