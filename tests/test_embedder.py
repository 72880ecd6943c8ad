"""The embedder: one instance per process, and a query fast path that agrees with batched encoding."""

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from corpus.devices import model_runtime, torch_device
from corpus.embedder import OpenVinoEmbedder, SentenceTransformerEmbedder, bundled_model_path, get_embedder


def test_the_single_text_fast_path_matches_batched_embeddings():
    embedder = get_embedder()
    texts = [
        "who got the first nobel prize in physics",
        "A",
        "The committee reviewed the proposal in full and approved its budget. "
        * 40,  # past 256 tokens: truncated alike
    ]
    batched = embedder.embed(texts + ["padding partner"])[: len(texts)]
    for text, expected in zip(texts, batched):
        single = embedder.embed([text])[0]
        assert single.shape == (384,)
        assert float(single @ expected) > 0.99999


def test_the_embedder_runs_on_the_configured_runtime_and_device(monkeypatch):
    import torch

    embedder = get_embedder()
    assert isinstance(embedder, OpenVinoEmbedder) == (model_runtime() == "openvino")
    assert embedder.batch_size == settings.CAIRN_EMBEDDING_BATCH_SIZE
    with override_settings(CAIRN_MODEL_RUNTIME="torch"):
        embedder = SentenceTransformerEmbedder(str(bundled_model_path()))
    parameter = next(embedder._model.parameters())
    assert parameter.device.type == embedder.device == torch_device()
    if embedder.device == "cpu":  # as before CAIRN_DEVICE: float32, the traced query path
        assert parameter.dtype == torch.float32 and embedder._traced is not None
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with override_settings(CAIRN_DEVICE="cuda"), pytest.raises(ImproperlyConfigured, match="CAIRN_DEVICE"):
        SentenceTransformerEmbedder(str(bundled_model_path()))
