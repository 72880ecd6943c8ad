"""The OpenVINO runtime (corpus/encoders.py) computes what PyTorch computes: the same token ids,
the same logits and vectors in float32, for every model Cairn ships, padded and truncated; its
graphs are cached by the weights' checksum; and serving loads no PyTorch at all."""

import json
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from corpus import encoders
from corpus.devices import model_runtime
from corpus.embedder import OpenVinoEmbedder, SentenceTransformerEmbedder, bundled_model_path, runs_on_openvino

LONG = "The committee reviewed the proposal in full, line by line, and approved its budget. " * 30
PAIRS = [
    ("How do I rotate the logs?", "Use logrotate with a weekly schedule to rotate the server's logs."),
    ("what is x", "x"),  # the shortest pair: the others pad to their length
    ("Which directive allows overrides in .htaccess files?", LONG),  # past 256 tokens: truncated
    (LONG, "AllowOverride controls which directives .htaccess files may hold."),  # the question truncated
]
JUDGES = ["nli", "relevance", "answer"]


@pytest.mark.parametrize("name", JUDGES)
def test_each_judge_gives_pytorchs_logits_in_float32(name):
    from sentence_transformers import CrossEncoder

    directory = Path(settings.BASE_DIR) / "models" / name
    import torch

    torch_model = CrossEncoder(str(directory), device="cpu", max_length=256, model_kwargs={"dtype": torch.float32})
    expected = torch_model.predict(PAIRS, batch_size=len(PAIRS), activation_fn=lambda x: x, convert_to_numpy=True)
    model = encoders.OpenVinoBert(directory, "classifier", max_length=256, dtype="float32")
    encoded = torch_model.tokenizer(
        [q for q, _ in PAIRS], [p for _, p in PAIRS], padding=True, truncation=True, max_length=256, return_tensors="np"
    )
    features = model.features(PAIRS)
    length = encoded["input_ids"].shape[1]
    assert (
        features["input_ids"].shape[1] % encoders.LENGTH_BUCKET == 0
        and not features["attention_mask"][:, length:].any()
    )
    for key in ("input_ids", "attention_mask", "token_type_ids"):
        assert (features[key][:, :length] == encoded[key]).all(), key
    got = model.run(PAIRS)
    assert np.abs(got.reshape(expected.shape) - expected).max() < 1e-4


def test_the_embedder_gives_sentence_transformers_vectors():
    texts = ["who got the first nobel prize in physics", "A", LONG, "padding partner"]
    torch_embedder = SentenceTransformerEmbedder(str(bundled_model_path()))
    embedder = OpenVinoEmbedder(str(bundled_model_path()), batch_size=3)  # two batches, longest first
    assert np.abs(embedder.embed(texts) - torch_embedder.embed(texts)).max() < 1e-5
    assert embedder.count_tokens(texts) == torch_embedder.count_tokens(texts)
    assert embedder.split_tokens(LONG, 50) == torch_embedder.split_tokens(LONG, 50)
    assert embedder.embed([]).shape == (0, 384)


def test_the_graph_is_built_once_and_rebuilt_for_new_weights(tmp_path):
    directory = tmp_path / "judge"
    directory.mkdir()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
        (directory / name).write_bytes((Path(settings.BASE_DIR) / "models" / "relevance" / name).read_bytes())
    first = encoders.cached_graph(directory, "classifier")
    built = first.stat().st_mtime_ns
    assert encoders.cached_graph(directory, "classifier") == first and first.stat().st_mtime_ns == built
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps(config | {"layer_norm_eps": 1e-6}))  # retrained, say
    assert encoders.cached_graph(directory, "classifier") != first


def test_a_model_the_graph_does_not_compute_runs_on_pytorch(tmp_path):
    directory = tmp_path / "other"
    directory.mkdir()
    config = json.loads((Path(settings.BASE_DIR) / "models" / "nli" / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps(config | {"model_type": "deberta-v2"}))
    assert not encoders.is_bert(directory) and encoders.is_bert(Path(settings.BASE_DIR) / "models" / "nli")
    assert runs_on_openvino(str(bundled_model_path())) and not runs_on_openvino(str(directory))
    with pytest.raises(ValueError, match="not a BERT"):
        encoders.bert_graph(directory, "classifier")


def test_the_runtime_setting():
    assert model_runtime() == "openvino"  # installed here, and no GPU
    with override_settings(CAIRN_MODEL_RUNTIME="torch"):
        assert model_runtime() == "torch"
    with override_settings(CAIRN_MODEL_RUNTIME="openvino"):
        original = encoders.runtime_available
        encoders.runtime_available = lambda: False
        try:
            with pytest.raises(ImproperlyConfigured, match="CAIRN_MODEL_RUNTIME is openvino"):
                model_runtime()
        finally:
            encoders.runtime_available = original


def test_threads_calling_one_model_at_once_get_their_own_answers():
    model = encoders.OpenVinoBert(Path(settings.BASE_DIR) / "models" / "answer", "classifier", max_length=256)
    alone = [model.run([pair]) for pair in PAIRS]
    results: dict[int, list] = {}

    def work(i: int) -> None:
        results[i] = [model.run([PAIRS[(i + j) % len(PAIRS)]]) for j in range(12)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i, got in results.items():
        for j, logits in enumerate(got):
            assert np.array_equal(logits, alone[(i + j) % len(PAIRS)])


SERVING = """
import sys
for name in ("torch", "transformers", "sentence_transformers"):
    sys.modules[name] = None  # importing any of them now fails, as on a host that never installed them
import django
django.setup()
import config.urls, pipeline.stages, pipeline.api, judges.grounding, corpus.services, writeback.lessons  # noqa
from corpus.embedder import get_embedder
from judges.verifiers import get_answer_judge, get_entailment_model, get_relevance_model
print(get_embedder().embed(["how do I rotate the logs?"]).shape)
print(get_entailment_model().predict([("A man plays a guitar.", "A man plays music.")]).argmax())
print(round(float(get_relevance_model().score("when did it open?", ["It opened in 1889."])[0]), 2) > 0.5)
print(round(float(get_answer_judge().score("when did it open?", ["It opened in 1889."])[0]), 2) > 0.5)
"""


def test_serving_runs_the_models_without_pytorch(tmp_path):
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env |= {"DJANGO_SETTINGS_MODULE": "config.settings", "CAIRN_DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", SERVING], cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["(1,", "384)", "0", "True", "True"]


def test_optimise_models_builds_every_graph_and_holds_it_to_pytorch():
    import re
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("optimise_models", "--check", stdout=out)
    lines = out.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines] == ["embedder", "nli", "relevance", "answer"]
    for line in lines:
        assert float(re.search(r"from PyTorch ([0-9.e+-]+)", line).group(1)) < 1e-4, line
    with override_settings(CAIRN_MODEL_RUNTIME="torch"):
        out = StringIO()
        call_command("optimise_models", stdout=out)
        assert "nothing to build" in out.getvalue()
