"""The verifier models: NLI (does the evidence entail this sentence?), relevance (does this
passage help answer this question?) and the answer judge (does this sentence state an answer to
it?), each behind a small interface, loaded once per process.

Each is a cross-encoder in a local directory named by a setting (CAIRN_NLI_MODEL,
CAIRN_RELEVANCE_MODEL, CAIRN_ANSWER_MODEL), run on OpenVINO where it is installed (a BERT:
corpus/encoders.py) and else by sentence-transformers on PyTorch, so a larger model such as
cross-encoder/nli-deberta-v3-base is a settings change (it runs on PyTorch). NLI models disagree on label order
(DeBERTa's is contradiction, entailment, neutral); it is read from the model's config and every
EntailmentModel answers in Cairn's order: entailment, neutral, contradiction.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Protocol

import numpy as np
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from corpus.devices import device_batch, model_runtime, torch_device
from judges.nli_data import LABELS


class EntailmentModel(Protocol):
    def predict(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        """Return an (n, 3) array of probabilities (entailment, neutral, contradiction) per (premise, hypothesis)."""


class RelevanceModel(Protocol):
    def score(self, query: str, passages: list[str]) -> np.ndarray:
        """Return one score in [0, 1] per passage: how much it helps answer `query`."""


def inference_dtype(choice: str, device: str = "cpu"):
    """The torch dtype verifiers compute in. On the CPU bfloat16 only pays where it has AMX tiles
    (measured: MiniLM-L6 at 189 tokens, 85 pairs/s vs 31 in float32 on 2 cores); without them it
    is slower than float32. A GPU computes in float16, the dtype the shipped models are stored in.
    Accuracy is reported for the dtype that runs (benchmarks/verifiers.py)."""
    import torch

    if choice == "auto" and device == "cuda":
        return torch.float16
    if choice == "auto":
        amx = getattr(torch.cpu, "_is_amx_tile_supported", lambda: False)()
        choice = "bfloat16" if amx else "float32"
    return getattr(torch, choice)


class TorchCrossEncoder:
    """A sentence-transformers CrossEncoder on PyTorch (CAIRN_MODEL_RUNTIME=torch, or a GPU)."""

    def __init__(self, path: str, *, setting: str, max_length: int, dtype: str = "auto") -> None:
        import torch  # heavy: imported here so that migrate, check and the admin never load it
        from sentence_transformers import CrossEncoder

        device = torch_device()
        if settings.CAIRN_TORCH_THREADS:
            torch.set_num_threads(settings.CAIRN_TORCH_THREADS)
        try:
            # Load in float32, then convert: asking from_pretrained for another dtype (or letting it use
            # the float16 the weights are stored in) switches torch's process-wide default dtype while
            # it builds the model, and a request thread embedding at that moment gets mismatched tensors.
            model = CrossEncoder(
                path, device=device, local_files_only=True, max_length=max_length, model_kwargs={"dtype": torch.float32}
            )
        except (OSError, ValueError) as exc:
            raise ImproperlyConfigured(f"Cannot load the model in {setting} ({path!r}): {exc}") from exc
        computed = inference_dtype(dtype, device)
        self.model = model.to(computed)
        self.device, self.dtype = device, str(computed).removeprefix("torch.")
        self.max_length = model.max_seq_length or 512
        self.num_labels, self.id2label = model.num_labels, model.config.id2label

    def logits(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        import torch

        logits = self.model.predict(
            pairs, batch_size=len(pairs), activation_fn=torch.nn.Identity(), convert_to_tensor=True,
            show_progress_bar=False,
        )  # fmt: skip
        return logits.float().cpu().numpy()

    def tokens(self, pair: tuple[str, str]) -> int:
        return len(self.model.tokenizer(*pair, truncation=True, max_length=self.max_length)["input_ids"])


class OpenVinoCrossEncoder:
    """The same cross-encoder on OpenVINO (corpus/encoders.py): its logits are PyTorch's within 1e-5
    in float32; in bfloat16 (CPUs with AMX) each rounds its own way, as two libraries do."""

    def __init__(self, path: str, *, setting: str, max_length: int, dtype: str = "auto") -> None:
        from corpus.encoders import OpenVinoBert

        try:
            self.model = OpenVinoBert(
                Path(path), "classifier", max_length=max_length, threads=settings.CAIRN_TORCH_THREADS, dtype=dtype
            )
        except (OSError, ValueError, KeyError) as exc:
            raise ImproperlyConfigured(f"Cannot load the model in {setting} ({path!r}): {exc}") from exc
        self.device, self.max_length = "cpu", self.model.max_length
        self.dtype = {"bf16": "bfloat16", "f32": "float32"}[self.model.precision]
        self.id2label = {int(i): label for i, label in self.model.config.get("id2label", {"0": "LABEL_0"}).items()}
        self.num_labels = len(self.id2label)

    def logits(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        logits = self.model.run(pairs)
        return logits[:, 0] if logits.shape[1] == 1 else logits  # one logit a pair, as CrossEncoder gives it

    def tokens(self, pair: tuple[str, str]) -> int:
        return int(self.model.features([pair])["attention_mask"].sum())


def _load_cross_encoder(path: str, *, setting: str, max_length: int, dtype: str = "auto"):
    """The cross-encoder in `path` on this process's runtime (corpus.devices.model_runtime)."""
    if not Path(path).is_dir():
        raise ImproperlyConfigured(f"{setting} points at {path!r}, which is not a model directory on this machine.")
    from corpus.encoders import is_bert

    openvino = model_runtime() == "openvino" and (is_bert(Path(path)) or settings.CAIRN_MODEL_RUNTIME == "openvino")
    backend = OpenVinoCrossEncoder if openvino else TorchCrossEncoder
    return backend(path, setting=setting, max_length=max_length, dtype=dtype)


# Measured on the Python docs tune questions (relevance of 8 chunks and ~45 strips each, 2 cores):
# 890 ms a question in one padded batch, 715 ms cut where lengths grow by 1.3x (1.1x: more batches
# than the padding saved; 512-token batches without the ratio: 730 ms).
PAD_RATIO = 1.3


def _logits(model, pairs: list[tuple[str, str]], batch_size: int, batch_tokens: int) -> np.ndarray:
    """Raw logits as float32, whatever the compute dtype: probabilities are taken here, not in bf16.

    Pairs are sorted by length and cut into batches of about `batch_tokens` padded tokens (at most
    `batch_size` pairs), and a batch ends where a pair is over PAD_RATIO times the length of the
    batch's shortest: a batch pads every pair to its longest, so a chunk and its one-sentence
    strips in one call would all pad to the chunk, and a manual's strips (30 to 160 tokens) would
    pay for 2.6 times the tokens they hold. Short pairs still run faster in larger batches
    (measured: 59-token pairs 182 pairs/s in batches of 32, 247 in 64; 189-token pairs 85 in 32,
    52 in 64). Logits come back in order."""
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
    groups: list[list[int]] = [[]]
    shortest = 0
    for i in order:
        tokens = min(model.max_length, (len(pairs[i][0]) + len(pairs[i][1])) // 4 + 3)  # ~4 chars a token
        if groups[-1] and (
            len(groups[-1]) == batch_size
            or (len(groups[-1]) + 1) * tokens > batch_tokens
            or tokens > PAD_RATIO * shortest
        ):
            groups.append([])
        if not groups[-1]:
            shortest = tokens
        groups[-1].append(i)
    restored = None
    for group in groups:
        logits = model.logits([pairs[i] for i in group])
        if restored is None:
            restored = np.empty((len(pairs), *logits.shape[1:]), dtype=np.float32)
        restored[group] = logits
    return restored


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


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
    def __init__(
        self, path: str, *, batch_size: int = 128, batch_tokens: int = 6144, max_length: int = 256, dtype: str = "auto"
    ) -> None:
        self._model = _load_cross_encoder(path, setting="CAIRN_NLI_MODEL", max_length=max_length, dtype=dtype)
        if self._model.num_labels != 3:
            raise ImproperlyConfigured(f"CAIRN_NLI_MODEL ({path!r}) has {self._model.num_labels} labels; NLI needs 3.")
        self._order = label_order(self._model.id2label, tuple(settings.CAIRN_NLI_LABELS))
        device = self._model.device
        self.batch_size, self.batch_tokens = device_batch(batch_size, device), device_batch(batch_tokens, device)

    def predict(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        if not pairs:
            return np.zeros((0, 3), dtype=np.float32)
        return _softmax(_logits(self._model, pairs, self.batch_size, self.batch_tokens))[:, self._order]


class CrossEncoderRelevance:
    SETTING = "CAIRN_RELEVANCE_MODEL"

    def __init__(
        self, path: str, *, batch_size: int = 128, batch_tokens: int = 6144, max_length: int = 256, dtype: str = "auto"
    ) -> None:
        self._model = _load_cross_encoder(path, setting=self.SETTING, max_length=max_length, dtype=dtype)
        if self._model.num_labels not in (1, 2):
            raise ImproperlyConfigured(
                f"{self.SETTING} ({path!r}) has {self._model.num_labels} labels; a scoring model needs 1 or 2."
            )
        device = self._model.device
        self.batch_size, self.batch_tokens = device_batch(batch_size, device), device_batch(batch_tokens, device)
        # Recent scores by (query, text): one question's path asks for a strip more than once (the
        # gate judges the best strips for agreement, the extractive answer judges them again).
        self._recent: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._recent_lock = threading.Lock()

    RECENT = 4096

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        return self._scores([query], passages)[query]

    def _scores(self, queries: list[str], passages: list[str]) -> dict[str, np.ndarray]:
        """Each query's scores of `passages`, the pairs not scored recently in one batched call."""
        pairs = [(q, p) for q in queries for p in passages]
        with self._recent_lock:
            known = {pair: self._recent[pair] for pair in pairs if pair in self._recent}
        todo = list(dict.fromkeys(pair for pair in pairs if pair not in known))
        if todo:
            logits = _logits(self._model, todo, self.batch_size, self.batch_tokens)
            # one logit: sigmoid; two: P(relevant)
            scores = 1.0 / (1.0 + np.exp(-logits)) if logits.ndim == 1 else _softmax(logits)[:, 1]
            known |= dict(zip(todo, scores.tolist(), strict=True))
            with self._recent_lock:
                self._recent.update((pair, known[pair]) for pair in todo)
                while len(self._recent) > self.RECENT:
                    self._recent.popitem(last=False)
        return {q: np.array([known[(q, p)] for p in passages], dtype=np.float32) for q in queries}


class CrossEncoderAnswerJudge(CrossEncoderRelevance):
    """P(answer) for (question, sentence): does the sentence state an answer to the question?
    Trained with the passage's other sentences as negatives (judges/answer_data.py).

    A question that sets the scene before it asks ("I want tenants to use only Redirect in their
    .htaccess files. Which directive lets me allow individual directives by name?") is also read
    as its asking sentence alone, and each sentence keeps the better of the two scores: trained on
    one-sentence questions, the judge gave "Use the AllowOverrideList directive to allow individual
    directives by name." 0.03 under the whole question. The whole question still counts, for an
    asking sentence that needs the scene ("How do I make it mask them off?")."""

    SETTING = "CAIRN_ANSWER_MODEL"

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        asked = asking_sentence(query)
        if not asked or not passages:
            return super().score(query, passages)
        scores = self._scores([query, asked], passages)  # both readings in one batched call
        return np.maximum(scores[query], scores[asked])


def asking_sentence(question: str) -> str | None:
    """The last sentence of a question of several that asks something (ends with "?"), when there
    is such a sentence and it is not the whole question."""
    from corpus.chunking import split_sentences

    sentences = split_sentences(question)
    if len(sentences) < 2:
        return None
    return next((s for s in reversed(sentences) if s.rstrip().endswith("?")), None)


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
                    batch_tokens=settings.CAIRN_VERIFIER_BATCH_TOKENS,
                    max_length=settings.CAIRN_VERIFIER_MAX_LENGTH,
                    dtype=settings.CAIRN_VERIFIER_DTYPE,
                )
    return _instances[key]


def get_entailment_model() -> EntailmentModel:
    """Return this process's NLI model (CAIRN_NLI_MODEL), loading it on first call."""
    return _loaded(CrossEncoderEntailment, settings.CAIRN_NLI_MODEL)


# The judges adapted to the collection a question is asked of (answer judge, relevance evaluator;
# blank: the setting's), set around each step of answering it (judges_serving).
_serving: ContextVar[tuple[str, str]] = ContextVar("cairn_serving_judges", default=("", ""))


@contextmanager
def judges_serving(answer_model: str = "", relevance_model: str = "") -> Iterator[None]:
    """Within the block, get_answer_judge and get_relevance_model give these models (a blank path:
    the one serving around the block, by default the shipped one). Each stays loaded once per
    process, like the shipped ones."""
    around = _serving.get()
    token = _serving.set((answer_model or around[0], relevance_model or around[1]))
    try:
        yield
    finally:
        _serving.reset(token)


def get_relevance_model() -> RelevanceModel:
    """Return the relevance model serving now (judges_serving, else CAIRN_RELEVANCE_MODEL), loading it on first call."""
    return _loaded(CrossEncoderRelevance, _serving.get()[1] or settings.CAIRN_RELEVANCE_MODEL)


def get_answer_judge() -> RelevanceModel:
    """Return the answer judge serving now (judges_serving, else CAIRN_ANSWER_MODEL): `score(question,
    sentences)`, one P(the sentence states an answer) each, loading it on first call."""
    return _loaded(CrossEncoderAnswerJudge, _serving.get()[0] or settings.CAIRN_ANSWER_MODEL)


def verifiers_loaded() -> bool:
    """Whether this process has loaded the three judges the request path reads with."""
    wanted = {
        (CrossEncoderEntailment, str(settings.CAIRN_NLI_MODEL)),
        (CrossEncoderRelevance, str(settings.CAIRN_RELEVANCE_MODEL)),
        (CrossEncoderAnswerJudge, str(settings.CAIRN_ANSWER_MODEL)),
    }
    return wanted <= _instances.keys()


def verifiers_warm() -> None:
    """Load the verifiers and the answer judge and run one pair each, so a web process's first
    question does not pay for loading them (config.safety.web_process_start calls it in a thread of
    its own). A missing model is reported by the first question."""
    import logging

    try:
        get_relevance_model().score("warm up", ["the verification gate"])
        get_entailment_model().predict([("warm up", "the verification gate")])
        get_answer_judge().score("warm up", ["the verification gate"])
    except ImproperlyConfigured as exc:
        logging.getLogger(__name__).error("verifier models not loaded: %s", exc)
