"""Threshold choice for a target error rate, and the calibration file the settings read."""

import numpy as np
import pytest
from django.core.exceptions import ImproperlyConfigured

from common.env import calibration_read
from judges.calibration import (
    relevance_stack_fit,
    relevance_stacked,
    threshold_for_false_acceptance,
    threshold_for_false_rejection,
    upper_threshold,
    write_calibration,
)


def test_false_acceptance_threshold_admits_at_most_the_rate():
    negatives = np.linspace(0, 1, 100)
    threshold = threshold_for_false_acceptance(negatives, 0.05)
    assert np.mean(negatives > threshold) == pytest.approx(0.05)
    assert np.mean(negatives > threshold_for_false_acceptance(negatives, 0.0)) == 0.0
    ties = np.array([0.9] * 10 + [0.1] * 90)  # a tie at the cut is refused, not half-admitted
    assert np.mean(ties > threshold_for_false_acceptance(ties, 0.05)) <= 0.05


def test_false_rejection_threshold_drops_at_most_the_rate():
    positives = np.linspace(0, 1, 100)
    threshold = threshold_for_false_rejection(positives, 0.05)
    assert np.mean(positives <= threshold) == pytest.approx(0.05)


def test_calibration_file_round_trips_and_a_broken_one_names_the_setting(tmp_path):
    path = tmp_path / "calibration.json"
    assert calibration_read(path) == {}
    write_calibration(path, {"grounding_threshold": 0.8})
    assert calibration_read(path) == {"grounding_threshold": 0.8}
    path.write_text("{not json")
    with pytest.raises(ImproperlyConfigured, match="CAIRN_CALIBRATION_FILE"):
        calibration_read(path)


def test_thresholds_sit_between_tied_scores_so_float32_comparisons_hold():
    coarse = np.repeat(np.array([0.1, 0.5, 0.9], dtype=np.float32), [50, 45, 5])  # bfloat16-like ties
    threshold = threshold_for_false_acceptance(coarse, 0.05)
    assert 0.5 < threshold < 0.9 and np.mean(coarse > threshold) == pytest.approx(0.05)
    low = threshold_for_false_rejection(coarse, 0.05)
    assert np.mean(coarse <= low) == 0.0  # the 50 tied lowest scores cannot be half-rejected


def test_the_relevance_stack_learns_which_signal_separates_and_is_class_balanced():
    rng = np.random.default_rng(0)
    labels = np.array([1] * 50 + [0] * 450)  # 1 relevant passage in 10, as among retrieved chunks
    similarity = np.where(labels == 1, 0.65, 0.35) + rng.normal(0, 0.08, len(labels))
    evaluator = rng.uniform(0.01, 0.99, len(labels))  # noise: it should earn no weight
    stack = relevance_stack_fit(evaluator, similarity, labels)
    assert stack["similarity"] > 10 and abs(stack["evaluator"]) < 0.5
    # Balanced: the midpoint between the classes sits near 0.5, not near the 10% base rate (an
    # unweighted fit puts it at about 0.1).
    assert 0.25 < relevance_stacked(0.5, 0.5, stack) < 0.75
    assert relevance_stacked(0.5, 0.7, stack) > 0.9 > 0.1 > relevance_stacked(0.5, 0.3, stack)
    assert relevance_stacked(0.42, 0.9, None) == 0.42  # no stack calibrated: the evaluator alone
    with pytest.raises(ValueError, match="relevant and irrelevant"):
        relevance_stack_fit([0.5, 0.6], [0.1, 0.2], [1, 1])


def test_the_upper_threshold_keeps_to_the_false_acceptance_rate_unless_the_search_budget_forbids():
    negatives = np.linspace(0, 1, 1000)  # 5% of them lie above 0.95
    easy = np.linspace(0.96, 1.0, 400)  # every answerable question's best passage clears 0.95
    assert upper_threshold(negatives, easy, far=0.05, search_budget=0.10) == pytest.approx(0.95, abs=1e-3)
    hard = np.linspace(0.5, 1.0, 400)  # at 0.95, 90% of them would search: the budget sets it
    upper = upper_threshold(negatives, hard, far=0.05, search_budget=0.10)
    searching = np.mean(hard < upper)
    # 10% less one standard error (1.5 points at 400 questions), so the budget holds on new questions.
    assert 0.08 < searching < 0.09
    assert np.mean(negatives > upper) > 0.05  # the price: more hard negatives clear it
