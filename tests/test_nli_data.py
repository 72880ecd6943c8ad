"""Verifier training data: the synthetic swaps, claims from answers, splits, and that nothing held
out for reporting reaches training."""

import random
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from judges.nli_data import (
    CONTRADICTION,
    ENTAILMENT,
    HELD_OUT,
    NEUTRAL,
    SPLIT_SEED,
    Pair,
    SharedDataMissing,
    calibration_split,
    claim_from,
    negate,
    nli_training_pairs,
    qa_pairs,
    read_snli,
    reversed_contradictions,
    shared_splits,
    split,
    swap_entity,
    swap_month,
    swap_number,
    synthetic_pairs,
)

# A miniature of ../shared/data, same layout, a few unedited rows of each file (tests/fixtures/README.md).
FIXTURE_DATA = Path(__file__).parent / "fixtures" / "shared_data"
SENTENCE = "The Eiffel Tower was completed in March 1889 by the company of Gustave Eiffel."


def test_number_swap_changes_a_year_visibly():
    swapped = swap_number(SENTENCE, random.Random(1))
    assert swapped != SENTENCE and "1889" not in swapped
    assert swapped.replace(swapped.split("March ")[1].split(" ")[0], "1889") == SENTENCE
    assert swap_number("No digits here at all.", random.Random(1)) is None


def test_month_swap_and_entity_swap():
    month = swap_month(SENTENCE, random.Random(2))
    assert "March" not in month and month.replace(month.split(" ")[6], "March") == SENTENCE
    entity = swap_entity(SENTENCE, ["Gustave Eiffel", "Alexandre Dumas"], random.Random(3))
    assert entity.endswith("the company of Alexandre Dumas.") or entity.startswith("The Alexandre Dumas")
    assert swap_entity("nothing capitalised here.", ["Paris"], random.Random(3)) is None


def test_negation_adds_or_removes_not():
    assert negate(SENTENCE) == "The Eiffel Tower was not completed in March 1889 by the company of Gustave Eiffel."
    assert negate("Visitors cannot climb the stairs.") == "Visitors can climb the stairs."
    assert negate("The tower is not open at night.") == "The tower is open at night."
    assert negate("Tourists climb it.") is None


def test_claims_put_the_answer_where_the_question_asks():
    assert claim_from("who got the first nobel prize in physics?", "Wilhelm Röntgen") == (
        "Wilhelm Röntgen got the first nobel prize in physics."
    )
    assert claim_from("when was the eiffel tower built", "1889") == "when was the eiffel tower built? 1889."


def test_qa_pairs_label_right_and_wrong_answers_and_skip_doubtful_wrong_ones():
    passage = "The first Nobel Prize in Physics went to Wilhelm Röntgen in 1901. Marie Curie won in 1903."
    rows = [(passage, "who got the first nobel prize in physics", "Wilhelm Röntgen", None)]
    pairs = qa_pairs(rows, source="nq", rng=random.Random(0), wrong_pool=["Albert Einstein"])
    assert [(p.label, p.hypothesis) for p in pairs] == [
        (ENTAILMENT, "Wilhelm Röntgen got the first nobel prize in physics."),
        (CONTRADICTION, "Albert Einstein got the first nobel prize in physics."),
    ]
    doubtful = qa_pairs(rows, source="nq", rng=random.Random(0), wrong_pool=["Marie Curie"])
    assert [p.label for p in doubtful] == [ENTAILMENT]  # the "wrong" answer appears in the passage


def test_synthetic_pairs_have_all_three_labels_and_keep_the_passage_as_premise():
    passages = [
        "The bridge opened in May 1932. It was designed by John Bradfield. It carries eight lanes of traffic.",
        "The library holds 2 million books. Its reading room was restored in 2011 by Anna Smith.",
    ]
    pairs = synthetic_pairs(passages, rng=random.Random(4), per_passage=2)
    assert {p.label for p in pairs} == {ENTAILMENT, NEUTRAL, CONTRADICTION}
    for pair in pairs:
        assert pair.premise in passages
        if pair.label == ENTAILMENT:
            assert pair.hypothesis in pair.premise
        if pair.label == CONTRADICTION:
            assert pair.hypothesis not in pair.premise


def test_split_is_deterministic_and_disjoint():
    items = list(range(100))
    train, held = split(items, held_out=0.2, seed=7)
    assert (train, held) == split(items, held_out=0.2, seed=7)
    assert len(held) == 20 and not set(train) & set(held) and set(train) | set(held) == set(items)


def test_only_contradictions_are_reversed():
    pairs = [Pair("a", "b", CONTRADICTION, "snli"), Pair("c", "d", ENTAILMENT, "snli")]
    assert reversed_contradictions(pairs) == [Pair("b", "a", CONTRADICTION, "snli-reversed")]


def test_calibration_and_report_parts_split_the_held_out_set():
    calibration, report = calibration_split(list(range(350)))
    assert len(calibration) == 140 and len(report) == 210 and not set(calibration) & set(report)


def test_training_pairs_never_contain_held_out_data():
    splits = shared_splits(FIXTURE_DATA)
    # The fixture's SNLI rows hold a pair SNLI dev repeats, one copy on each side of the cut: the
    # held-out copy must go, or the check below would find it among the training pairs.
    cut = split(read_snli(FIXTURE_DATA / "nli" / "snli_dev_esnli"), held_out=HELD_OUT["snli"], seed=SPLIT_SEED)[1]
    assert len(splits["snli"][1]) == len(cut) - 1
    assert all(splits[name][0] and splits[name][1] for name in ("snli", "mnli", "halueval", "nq"))
    pairs = nli_training_pairs(splits, seed=13)
    premises = {p.premise for p in pairs}
    trained = {(p.premise, p.hypothesis) for p in pairs}
    for name in ("snli", "mnli"):
        assert not {(p.premise, p.hypothesis) for p in splits[name][1]} & trained
    assert not {row["knowledge"] for row in splits["halueval"][1]} & premises


def test_missing_shared_data_names_the_path_and_how_to_point_at_it(tmp_path):
    with pytest.raises(SharedDataMissing) as missing:
        shared_splits(tmp_path / "shared" / "data")
    assert missing.value.path == tmp_path / "shared" / "data"
    assert str(tmp_path / "shared" / "data") in str(missing.value) and "CAIRN_SHARED_DATA" in str(missing.value)
    (tmp_path / "partial" / "nli").mkdir(parents=True)
    with pytest.raises(SharedDataMissing) as missing:
        shared_splits(tmp_path / "partial")
    assert missing.value.path == tmp_path / "partial" / "nli" / "snli_dev_esnli"


@pytest.mark.parametrize("command", ["train_nli", "train_relevance", "calibrate_gate"])
def test_training_commands_say_which_shared_data_is_missing(command, tmp_path):
    with pytest.raises(CommandError) as error:
        call_command(command, data=tmp_path / "nowhere")
    assert str(tmp_path / "nowhere") in str(error.value) and "--data" in str(error.value)
