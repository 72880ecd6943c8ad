"""The verifier backends load any local cross-encoder directory, read its label order, and fail
clearly on a missing model; the shipped models load offline and get obvious cases right. Quality
on held-out data is measured by benchmarks/verifiers.py, not here."""

import numpy as np
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from corpus.embedder import bundled_model_path
from judges import verifiers
from judges.verifiers import CrossEncoderEntailment, CrossEncoderRelevance, label_order

PAIRS = [("A man is playing a guitar on stage.", "A man plays music."), ("The cat sleeps.", "The dog barks loudly.")]


def classifier_dir(path, id2label):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    source = str(bundled_model_path())
    model = AutoModelForSequenceClassification.from_pretrained(
        source, num_labels=len(id2label), id2label=id2label, label2id={v: k for k, v in id2label.items()}
    )
    model.save_pretrained(path)
    AutoTokenizer.from_pretrained(source).save_pretrained(path)
    return str(path)


def test_label_order_reads_names_and_falls_back_for_anonymous_labels():
    deberta = {0: "contradiction", 1: "entailment", 2: "neutral"}
    assert label_order(deberta, ("entailment", "neutral", "contradiction")) == [1, 2, 0]
    assert label_order({0: "ENTAILMENT", 1: "NEUTRAL", 2: "CONTRADICTION"}, ()) == [0, 1, 2]
    anonymous = {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}
    assert label_order(anonymous, ("contradiction", "neutral", "entailment")) == [2, 1, 0]


def test_an_nli_model_in_deberta_order_answers_in_cairns_order(tmp_path):
    path = classifier_dir(tmp_path / "nli", {0: "contradiction", 1: "entailment", 2: "neutral"})
    model = CrossEncoderEntailment(path, dtype="float32")  # exact comparison with the raw output below
    probabilities = model.predict(PAIRS)
    assert probabilities.shape == (2, 3)
    assert np.allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)
    from sentence_transformers import CrossEncoder

    raw = CrossEncoder(path, device="cpu").predict(PAIRS, apply_softmax=True, convert_to_numpy=True)
    assert np.allclose(probabilities[:, 0], raw[:, 1]) and np.allclose(probabilities[:, 2], raw[:, 0])
    assert model.predict([]).shape == (0, 3)


def test_a_relevance_model_with_one_or_two_labels_scores_in_the_unit_interval(tmp_path):
    for labels in ({0: "relevant"}, {0: "irrelevant", 1: "relevant"}):
        model = CrossEncoderRelevance(classifier_dir(tmp_path / str(len(labels)), labels))
        scores = model.score("what does the guitarist play?", [p for p, _ in PAIRS])
        assert scores.shape == (2,) and np.all((scores >= 0) & (scores <= 1))


def test_a_missing_model_is_an_error_naming_the_setting(tmp_path):
    missing = tmp_path / "nowhere"
    with override_settings(CAIRN_NLI_MODEL=missing, CAIRN_RELEVANCE_MODEL=missing):
        with pytest.raises(ImproperlyConfigured, match="CAIRN_NLI_MODEL"):
            verifiers.get_entailment_model()
        with pytest.raises(ImproperlyConfigured, match="CAIRN_RELEVANCE_MODEL"):
            verifiers.get_relevance_model()
    with override_settings(CAIRN_ANSWER_MODEL=missing), pytest.raises(ImproperlyConfigured, match="CAIRN_ANSWER_MODEL"):
        verifiers.get_answer_judge()


def test_a_model_with_the_wrong_head_is_refused(tmp_path):
    with pytest.raises(ImproperlyConfigured, match="NLI needs 3"):
        CrossEncoderEntailment(classifier_dir(tmp_path / "two", {0: "no", 1: "yes"}))


def test_the_shipped_nli_model_loads_offline_and_gets_obvious_pairs_right():
    model = verifiers.get_entailment_model()  # models/nli, from the repository
    premise = "A man is playing a guitar on stage."
    probabilities = model.predict([(premise, "A man is playing an instrument."), (premise, "Nobody is playing music.")])
    assert np.allclose(probabilities.sum(axis=1), 1.0, atol=1e-4)
    assert probabilities[0].argmax() == 0  # entailment
    assert probabilities[1].argmax() == 2  # contradiction


def test_the_shipped_relevance_model_prefers_the_passage_that_answers():
    model = verifiers.get_relevance_model()
    scores = model.score(
        "when did the museum open?",
        ["The museum opened to the public in 1889 after ten years of building.",
         "Tickets for the football final sold out within an hour."],
    )  # fmt: skip
    assert scores[0] > 0.5 > scores[1]


@pytest.mark.parametrize(
    ("question", "sentences", "answer"),
    [
        (
            "How many days of annual leave do employees get?",
            ["Annual leave is booked through the HR portal.", "Employees get 25 days of annual leave per year.",
             "Unused annual leave expires at the end of March."],
            1,
        ),
        (
            "Who stole the Mona Lisa?",
            ["The Mona Lisa is a portrait painted by Leonardo da Vinci.",
             "The Mona Lisa hangs in the Louvre in Paris.",
             "In 1911 the painting was stolen by Vincenzo Peruggia, an Italian handyman at the Louvre."],
            2,
        ),
    ],
)  # fmt: skip
def test_the_shipped_answer_judge_ranks_the_answering_sentence_above_its_neighbours(question, sentences, answer):
    """Its neighbours are on the same topic, and the relevance evaluator rates them all relevant
    (0.96 to 0.99): at its calibrated threshold the judge accepts the one sentence that says the
    answer and none of the others."""
    from django.conf import settings

    scores = verifiers.get_answer_judge().score(question, sentences)  # models/answer, from the repository
    others = [score for i, score in enumerate(scores) if i != answer]
    assert scores[answer] >= settings.CAIRN_ANSWER_THRESHOLD > max(others)


def test_a_question_that_sets_the_scene_is_judged_by_its_asking_sentence_too():
    """Trained on one-sentence questions, the judge rated this answer 0.03 under the whole question."""
    from django.conf import settings

    question = (
        "I want tenants to be able to use only Redirect and RewriteRule in their .htaccess files, not whole "
        "override categories. Which directive lets me allow individual directives by name?"
    )
    assert verifiers.asking_sentence(question) == "Which directive lets me allow individual directives by name?"
    assert verifiers.asking_sentence("Which directive allows directives by name?") is None
    sentences = ["Use the AllowOverrideList directive to allow individual directives by name.",
                 "This is a useful middle ground between full override access and no override access."]  # fmt: skip
    scores = verifiers.get_answer_judge().score(question, sentences)
    assert scores[0] >= settings.CAIRN_ANSWER_THRESHOLD > scores[1]


def test_loading_a_verifier_never_switches_torchs_default_dtype(monkeypatch):
    """from_pretrained with a non-default dtype switches torch's process-wide default while it
    builds the model; a web process embedding a question in another thread at that moment got
    bfloat16 inputs against float32 weights (a 500). Verifiers load in float32 and convert."""
    import torch

    switched = []
    original = torch.set_default_dtype
    monkeypatch.setattr(torch, "set_default_dtype", lambda dtype: (switched.append(dtype), original(dtype))[1])
    with override_settings(CAIRN_MODEL_RUNTIME="torch"):
        model = CrossEncoderEntailment("models/nli", dtype="bfloat16")
    assert all(dtype == torch.float32 for dtype in switched)
    assert next(model._model.model.parameters()).dtype == torch.bfloat16


def test_the_verifiers_run_on_the_configured_device(monkeypatch):
    import torch
    from django.conf import settings

    from corpus.devices import torch_device

    model = verifiers.get_entailment_model()
    assert model._model.device == torch_device()
    if model._model.device == "cpu":  # as before CAIRN_DEVICE: the configured batches
        assert (model.batch_size, model.batch_tokens) == (
            settings.CAIRN_VERIFIER_BATCH_SIZE,
            settings.CAIRN_VERIFIER_BATCH_TOKENS,
        )
    # On that device (in its dtype, logits gathered there), the column of the plain label wins.
    premise = "A man is playing a guitar on stage."
    probabilities = model.predict(
        [(premise, "A man is playing an instrument."), (premise, "The man is a famous musician."),
         (premise, "Nobody is playing music.")]
    )  # fmt: skip
    assert probabilities.argmax(axis=1).tolist() == [0, 1, 2]  # entailment, neutral, contradiction
    relevant, irrelevant = verifiers.get_relevance_model().score(
        "when did the museum open?",
        ["The museum opened to the public in 1889 after ten years of building.",
         "Tickets for the football final sold out within an hour."],
    )  # fmt: skip
    assert relevant > 0.5 > irrelevant  # P(relevant) is the relevant label's column, not the other's
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with override_settings(CAIRN_DEVICE="cuda"), pytest.raises(ImproperlyConfigured, match="CAIRN_DEVICE"):
        CrossEncoderRelevance(str(settings.CAIRN_RELEVANCE_MODEL))
    openvino_on_a_gpu = override_settings(CAIRN_DEVICE="cuda", CAIRN_MODEL_RUNTIME="openvino")
    with openvino_on_a_gpu, pytest.raises(ImproperlyConfigured, match="CAIRN_MODEL_RUNTIME"):
        CrossEncoderRelevance(str(settings.CAIRN_RELEVANCE_MODEL))
