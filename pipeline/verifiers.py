"""The verifier models: NLI (does the evidence entail this sentence?) and relevance (does this
passage help answer this question?), each behind a small interface, loaded once per process.

The backend is a sentence-transformers CrossEncoder loaded from a local directory named by a
setting (CAIRN_NLI_MODEL, CAIRN_RELEVANCE_MODEL), so a larger model such as
cross-encoder/nli-deberta-v3-base is a settings change. NLI models disagree on label order
(DeBERTa's is contradiction, entailment, neutral); it is read from the model's config and every
EntailmentModel answers in Cairn's order: entailment, neutral, contradiction.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Protocol

import numpy as np
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from pipeline.nli_data import LABELS


class EntailmentModel(Protocol):
    def predict(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """Return an (n, 3) array of probabilities (entailment, neutral, contradiction) per (premise, hypothesis)."""


class RelevanceModel(Protocol):
    def score(self, query: str, passages: list[str]) -> np.ndarray:
        """Return one score in [0, 1] per passage: how much it helps answer `query`."""


def _load_cross_encoder(path: str, *, setting: str, max_length: int):
    import torch  # heavy: imported here so that migrate, check and the admin never load it
    from sentence_transformers import CrossEncoder

    if settings.CAIRN_TORCH_THREADS:
        torch.set_num_threads(settings.CAIRN_TORCH_THREADS)
    if not Path(path).is_dir():
        raise ImproperlyConfigured(f"{setting} points at {path!r}, which is not a model directory on this machine.")
    try:
        return CrossEncoder(path, device="cpu", local_files_only=True, max_length=max_length)
    except (OSError, ValueError) as exc:
        raise ImproperlyConfigured(f"Cannot load the model in {setting} ({path!r}): {exc}") from exc


def label_order(id2label: dict[int, str], fallback: tuple[str, ...]) -> list[int]:
    """Column indices of (entailment, neutral, contradiction) in a model's output.

    Names are matched case-insensitively by prefix ("ENTAILMENT", "entail", "Contradiction");
    models whose labels are anonymous (LABEL_0...) use `fallback`, the order they were trained in.
    """
    names = [str(id2label[i]).lower() for i in range(len(id2label))]
    order = [next((i for i, name in enumerate(names) if name.startswith(label[:6])), None) for label in LABELS]
    if None in order:
        order = [fallback.index(label) for label in LABELS]
    return order


class CrossEncoderEntailment:
    def __init__(self, path: str, *, batch_size: int = 32, max_length: int = 256) -> None:
        self._model = _load_cross_encoder(path, setting="CAIRN_NLI_MODEL", max_length=max_length)
        if self._model.num_labels != 3:
            raise ImproperlyConfigured(f"CAIRN_NLI_MODEL ({path!r}) has {self._model.num_labels} labels; NLI needs 3.")
        self._order = label_order(self._model.config.id2label, tuple(settings.CAIRN_NLI_LABELS))
        self.batch_size = batch_size

    def predict(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        if not pairs:
            return np.zeros((0, 3), dtype=np.float32)
        probabilities = self._model.predict(
            pairs, batch_size=self.batch_size, apply_softmax=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(probabilities, dtype=np.float32)[:, self._order]


class CrossEncoderRelevance:
    def __init__(self, path: str, *, batch_size: int = 32, max_length: int = 256) -> None:
        self._model = _load_cross_encoder(path, setting="CAIRN_RELEVANCE_MODEL", max_length=max_length)
        if self._model.num_labels not in (1, 2):
            raise ImproperlyConfigured(
                f"CAIRN_RELEVANCE_MODEL ({path!r}) has {self._model.num_labels} labels; relevance needs 1 or 2."
            )
        self.batch_size = batch_size

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        if not passages:
            return np.zeros(0, dtype=np.float32)
        import torch

        logits = self._model.predict(
            [(query, passage) for passage in passages],
            batch_size=self.batch_size,
            activation_fn=torch.nn.Identity(),
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        logits = np.asarray(logits, dtype=np.float32)
        if logits.ndim == 1:  # one logit: sigmoid
            return 1.0 / (1.0 + np.exp(-logits))
        shifted = np.exp(logits - logits.max(axis=1, keepdims=True))  # two: P(relevant) by softmax
        return shifted[:, 1] / shifted.sum(axis=1)


_lock = threading.Lock()
_instances: dict[tuple[type, str], object] = {}


def _loaded(cls: type, path: Path):
    """One instance per model class and directory per process, built on first use."""
    key = (cls, str(path))
    if key not in _instances:
        with _lock:
            if key not in _instances:
                _instances[key] = cls(
                    str(path),
                    batch_size=settings.CAIRN_VERIFIER_BATCH_SIZE,
                    max_length=settings.CAIRN_VERIFIER_MAX_LENGTH,
                )
    return _instances[key]


def get_entailment_model() -> EntailmentModel:
    """Return this process's NLI model (CAIRN_NLI_MODEL), loading it on first call."""
    return _loaded(CrossEncoderEntailment, settings.CAIRN_NLI_MODEL)


def get_relevance_model() -> RelevanceModel:
    """Return this process's relevance model (CAIRN_RELEVANCE_MODEL), loading it on first call."""
    return _loaded(CrossEncoderRelevance, settings.CAIRN_RELEVANCE_MODEL)
