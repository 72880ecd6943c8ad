"""The answer's confidence: its features, the calibrator and its training, and the three outcomes
of the extractive answer (answered, where to look, not found), with the real answer judge."""

import json

import pytest
from django.conf import settings
from django.test import override_settings

from judges.confidence import Calibrator, get_calibrator
from judges.confidence_training import Sample, fit, model_json, out_of_fold, threshold_for
from pipeline.confidence import Passage, Quoted, answer_features, named_subjects, question_kind
from pipeline.extractive import Sentence, said_once
from pipeline.generators import (
    ANSWERED,
    WHERE_TO_LOOK,
    WHERE_TO_LOOK_OUTCOME,
    EvidenceText,
    ExtractiveGenerator,
    _cited,
)

PORTS = [
    EvidenceText(1, "-p port, --port=port: Specifies the TCP port on which the server listens for connections.", "pg_dump"),
    EvidenceText(2, "-p port, --port=port: Specifies the TCP port on which the server listens for connections.", "psql"),
    EvidenceText(3, "The server listens on TCP port 5432 unless another port is configured.", "port"),
]  # fmt: skip


def features(question: str, text: str, label: str = "", score: float = 0.9) -> dict:
    return answer_features(
        question, [Quoted(text, score, label)], lead_scores=[score, 0.1], other_scores=[0.2],
        lead=Passage(0.8, 0.5, 1.0), lead_rank=0, verified=3, switched=False, cited=1,
    )  # fmt: skip


def test_question_kinds_say_what_kind_of_thing_is_asked():
    assert question_kind("What is the default value of work_mem?") == "default"
    assert question_kind("How many arguments does it take?") == "number"
    assert question_kind("Which option turns on verbose output?") == "which"
    assert question_kind("Does rsync follow symlinks?") == "yes_no"
    assert question_kind("What is a closure?") == "what"


def test_the_subject_is_the_name_a_question_gives_else_its_content_words():
    assert named_subjects("What does os.path.expanduser() return?") == {"os.path.expanduser"}
    assert named_subjects("What is the default of max_connections?") == {"max_connections"}
    assert "--port" in named_subjects("What does --port set?")
    # No code-ish name: the content words, less those that only say what kind of thing is asked.
    assert named_subjects("What is the default timeout of the proxy?") == {"timeout", "proxy"}


def test_an_answer_quoting_the_subjects_own_entry_differs_from_one_that_only_mentions_it():
    question = "What is the default of max_connections?"
    own = features(question, "The default is typically 100 connections.", label="max_connections (integer)")
    other = features(question, "Must be larger than max_connections.", label="superuser_reserved_connections")
    assert own["subject_in_label"] == 1.0 and other["subject_in_label"] == 0.0
    assert other["subject_in_text"] == 1.0
    assert own["kind_stated"] == 1.0 and own["has_number"] == 1.0


def test_the_calibrator_is_a_logistic_regression_written_as_plain_weights(tmp_path):
    samples = [Sample("a", {"x": float(i)}, i >= 5) for i in range(10)]
    samples += [Sample("b", {"x": float(i) + 0.5}, i >= 4) for i in range(10)]
    model = fit(samples, ["x"])
    assert model.probability({"x": 9.0}) > 0.9 > 0.1 > model.probability({"x": 0.0})
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model_json(model, 0.7, {})))
    assert Calibrator.from_file(path).probability({"x": 4.5}) == pytest.approx(model.probability({"x": 4.5}))


def test_out_of_fold_scores_a_group_with_a_model_that_never_saw_it():
    # Group "b" has the opposite relation: scored by a model fitted on "a" alone, it comes out wrong.
    samples = [Sample("a", {"x": float(i)}, i >= 5) for i in range(10)]
    samples += [Sample("b", {"x": float(i)}, i < 5) for i in range(10)]
    scores = out_of_fold(samples, ["x"])
    b = scores[10:]
    assert b[9] > b[0]  # the model from "a" ranks b's high x high, although b's answers there are wrong


def test_the_threshold_is_the_lowest_that_reaches_the_target_precision():
    scores = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    right = [True, True, True, False, True, False]
    assert threshold_for(scores, right, target=1.0) == 0.7
    assert threshold_for(scores, right, target=0.8) == 0.5
    assert threshold_for([0.9, 0.8], [False, False], target=0.8) == 0.9  # never reached: the surest only


def test_equal_scores_are_stated_together_or_not_at_all():
    assert threshold_for([0.9, 0.5, 0.5], [True, True, False], target=0.9) == 0.9


@pytest.fixture
def calibrator(tmp_path):
    """A calibrator that trusts the judge's best score alone, at a threshold the test sets."""

    def make(threshold: float):
        model = Calibrator(("judge_best",), (0.0,), (1.0,), (1.0,), 0.0)  # P = sigmoid(logit(best)) = best
        path = tmp_path / "model.json"
        path.write_text(json.dumps(model_json(model, threshold, {})))
        get_calibrator.cache_clear()
        return override_settings(CAIRN_CONFIDENCE_MODEL=path, CAIRN_ANSWER_CONFIDENCE=threshold)

    yield make
    get_calibrator.cache_clear()


def test_an_answer_cairn_is_sure_of_is_stated_with_its_confidence(calibrator):
    with calibrator(0.1):
        generation = ExtractiveGenerator().generate("Which TCP port does the server listen on?", PORTS[2:])
    assert generation.outcome == ANSWERED and generation.found
    assert "5432" in generation.text and 0.1 <= generation.confidence <= 1.0
    assert generation.features["judge_best"] == pytest.approx(
        __import__("math").log(generation.confidence / (1 - generation.confidence)), abs=1e-3
    )


def test_an_answer_below_the_threshold_points_to_the_closest_passages_instead(calibrator):
    with calibrator(0.999):
        generation = ExtractiveGenerator().generate("Which TCP port does the server listen on?", PORTS)
    assert generation.outcome == WHERE_TO_LOOK_OUTCOME and not generation.found
    assert generation.text.startswith(WHERE_TO_LOOK)
    assert generation.confidence < 0.999
    # One sentence per passage, cited; the same sentence on two pages is offered once.
    assert generation.text.count("Specifies the TCP port") == 1
    assert 3 in generation.cited and len(generation.cited) == 2


def test_without_a_calibrator_an_answer_is_stated_as_the_judge_alone_decides(tmp_path):
    get_calibrator.cache_clear()
    with override_settings(CAIRN_CONFIDENCE_MODEL=tmp_path / "absent.json"):
        generation = ExtractiveGenerator().generate("Which TCP port does the server listen on?", PORTS[2:])
    get_calibrator.cache_clear()
    assert generation.found and generation.confidence is None


def test_a_sentence_two_pages_repeat_is_stated_once_and_cites_both():
    # The PostgreSQL manual's "-p port" entry is on each program's page; the answer said it twice.
    chosen = [
        Sentence(0, "-p port, --port=port: Specifies the TCP port on which the server is listening.", 0.9, 1),
        Sentence(0, "-p port, --port=port: Specifies the TCP port on which the server is listening for connections.", 0.9, 2),
        Sentence(1, "The server listens on port 5432 by default.", 0.8, 3),
    ]  # fmt: skip
    kept, also = said_once(chosen)
    assert [s.n for s in kept] == [1, 3] and also == {0: (2,)}
    assert _cited(kept[0].text, 1, also=also[0]).endswith("listening. [1] [2]")


def test_the_shipped_calibrator_reads_the_features_cairn_computes():
    get_calibrator.cache_clear()
    shipped = get_calibrator()
    assert shipped is not None, f"{settings.CAIRN_CONFIDENCE_MODEL} is missing"
    assert set(shipped.features) <= set(features("What is x?", "x is y."))  # a selection of them
    assert 0.0 < settings.CAIRN_ANSWER_CONFIDENCE < 1.0
