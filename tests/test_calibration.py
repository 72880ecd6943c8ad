"""Threshold choice for a target error rate, and the calibration file the settings read."""

import numpy as np
import pytest
from django.core.exceptions import ImproperlyConfigured

from pipeline.calibration import (
    read_calibration,
    threshold_for_false_acceptance,
    threshold_for_false_rejection,
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
    assert read_calibration(path) == {}
    write_calibration(path, {"grounding_threshold": 0.8})
    assert read_calibration(path) == {"grounding_threshold": 0.8}
    path.write_text("{not json")
    with pytest.raises(ImproperlyConfigured, match="CAIRN_CALIBRATION_FILE"):
        read_calibration(path)


def test_thresholds_sit_between_tied_scores_so_float32_comparisons_hold():
    coarse = np.repeat(np.array([0.1, 0.5, 0.9], dtype=np.float32), [50, 45, 5])  # bfloat16-like ties
    threshold = threshold_for_false_acceptance(coarse, 0.05)
    assert 0.5 < threshold < 0.9 and np.mean(coarse > threshold) == pytest.approx(0.05)
    low = threshold_for_false_rejection(coarse, 0.05)
    assert np.mean(coarse <= low) == 0.0  # the 50 tied lowest scores cannot be half-rejected
