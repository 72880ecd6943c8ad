"""BERT encoders on OpenVINO: the embedder and the three judges without PyTorch.

Every model Cairn runs is a BERT encoder (the bundled MiniLM and the judges fine-tuned from it),
so the ONNX graph is written here from the model's own config.json and safetensors weights rather
than exported through torch, and compiled by OpenVINO for the CPU it runs on: a serving host that
never installs PyTorch builds it in a second. The graph is BERT as transformers computes it
(absolute positions, erf GELU, post-layer-norm), with the query, key and value projections packed
into one matrix product; the embedder's head is sentence-transformers' masked mean and L2
normalisation, a classifier's the pooler and its linear layer. tests/test_encoders.py holds it to PyTorch's outputs.

The graph is cached under CAIRN_DATA_DIR/models, named by the checksum of the files it was built
from, so a retrained model is rebuilt and a stale one never read. Why OpenVINO, and not int8:
benchmarks/HISTORY.md, "Model runtime" (measured by benchmarks/runtime.py).

Tokenizers stay the models' own: their tokenizer.json, read by the same Rust `tokenizers` library
that transformers' fast tokenizers wrap.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import numpy as np
from django.conf import settings

OPSET = 17  # LayerNormalization is an operator from 17 on
# Input lengths are padded to a multiple of this (OpenVinoBert.features): fewer shapes to compile
# kernels for, and an AMX tile holds 16 rows (measured: benchmarks/HISTORY.md, "Model runtime").
LENGTH_BUCKET = 16
FORMAT = 2  # bump when the graph written here changes, so cached graphs are rebuilt


def runtime_available() -> bool:
    try:
        import onnx  # noqa: F401
        import openvino  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        return False
    return True


def is_bert(directory: Path) -> bool:
    """Whether the graph written here computes the model in `directory`."""
    try:
        config = json.loads((Path(directory) / "config.json").read_text())
    except (OSError, ValueError):
        return False
    files = all((Path(directory) / name).exists() for name in ("model.safetensors", "tokenizer.json"))
    absolute = config.get("position_embedding_type", "absolute") == "absolute"
    return files and config.get("model_type") == "bert" and absolute and config.get("hidden_act") == "gelu"


def weights_checksum(directory: Path) -> str:
    """What the graph is built from: the weights, the config and the format of this module."""
    digest = hashlib.sha256(f"cairn-onnx-{FORMAT}".encode())
    for name in ("config.json", "model.safetensors"):
        with open(directory / name, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


def bert_graph(directory: Path, head: str):
    """The ONNX model of the BERT in `directory`, with `head` "mean" (a sentence embedding: masked
    mean, L2-normalised) or "classifier" (pooler + linear layer: one logit per label)."""
    from onnx import TensorProto, helper, numpy_helper
    from safetensors.numpy import load_file

    if not is_bert(directory):
        raise ValueError(
            f"{directory} is not a BERT with absolute positions and erf GELU (or lacks model.safetensors or "
            "tokenizer.json); run it on PyTorch (CAIRN_MODEL_RUNTIME)"
        )
    config = json.loads((directory / "config.json").read_text())
    raw = load_file(str(directory / "model.safetensors"))
    prefix = "bert." if any(name.startswith("bert.") for name in raw) else ""
    weights = {name.removeprefix(prefix): array.astype(np.float32) for name, array in raw.items()}
    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    eps = float(config["layer_norm_eps"])

    nodes, initializers, named = [], [], set()

    def const(name: str, array) -> str:
        if name not in named:
            named.add(name)
            initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(op: str, inputs: list[str], output: str, **attributes) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attributes))
        return output

    def linear(x: str, name: str, out: str) -> str:
        weight = const(f"{name}.weight", weights[f"{name}.weight"].T.copy())
        product = node("MatMul", [x, weight], f"{out}.matmul")
        return node("Add", [product, const(f"{name}.bias", weights[f"{name}.bias"])], out)

    def layer_norm(x: str, name: str, out: str) -> str:
        scale, bias = const(f"{name}.weight", weights[f"{name}.weight"]), const(f"{name}.bias", weights[f"{name}.bias"])
        return node("LayerNormalization", [x, scale, bias], out, axis=-1, epsilon=eps)

    # Embeddings: word + position + token type, normalised.
    length = node("Gather", [node("Shape", ["input_ids"], "shape"), const("one", np.array(1, np.int64))], "length")
    positions = node("Range", [const("zero", np.array(0, np.int64)), length, "one"], "positions")
    words = node("Gather", [const("word", weights["embeddings.word_embeddings.weight"]), "input_ids"], "words")
    where = node("Gather", [const("pos", weights["embeddings.position_embeddings.weight"]), positions], "where")
    kinds = node(
        "Gather", [const("type", weights["embeddings.token_type_embeddings.weight"]), "token_type_ids"], "kinds"
    )
    summed = node("Add", [node("Add", [words, where], "words_where"), kinds], "embedded")
    x = layer_norm(summed, "embeddings.LayerNorm", "x0")

    # Padding: a large negative added to the scores of padded keys, as transformers' extended mask.
    mask = node("Cast", ["attention_mask"], "mask", to=TensorProto.FLOAT)
    keys = node("Unsqueeze", [mask, const("axes_1_2", np.array([1, 2], np.int64))], "mask_keys")
    padded = node("Sub", [const("ones", np.array(1.0, np.float32)), keys], "padded")
    bias = node("Mul", [padded, const("lowest", np.array(np.finfo(np.float32).min, np.float32))], "mask_bias")

    size = hidden // heads
    split_heads = const("split_heads", np.array([0, 0, heads, size], np.int64))
    merge_heads = const("merge_heads", np.array([0, 0, hidden], np.int64))
    scale = const("scale", np.array(1.0 / np.sqrt(size), np.float32))
    for i in range(config["num_hidden_layers"]):
        at = f"encoder.layer.{i}"
        packed = np.concatenate([weights[f"{at}.attention.self.{p}.weight"] for p in ("query", "key", "value")]).T
        packed_bias = np.concatenate([weights[f"{at}.attention.self.{p}.bias"] for p in ("query", "key", "value")])
        qkv = node(
            "Add",
            [node("MatMul", [x, const(f"{at}.qkv.weight", packed.copy())], f"{at}.qkv.matmul"),
             const(f"{at}.qkv.bias", packed_bias)],
            f"{at}.qkv",
        )  # fmt: skip
        thirds = const(f"{at}.thirds", np.array([hidden] * 3, np.int64))
        nodes.append(helper.make_node("Split", [qkv, thirds], [f"{at}.q", f"{at}.k", f"{at}.v"], axis=-1))

        def per_head(t: str, perm: list[int], at=at) -> str:
            """q, k or v as (batch, heads, tokens, size): k transposed for the scores' product."""
            split = node("Reshape", [f"{at}.{t}", split_heads], f"{at}.{t}4")
            return node("Transpose", [split], f"{at}.{t}h", perm=perm)

        scores = node("MatMul", [per_head("q", [0, 2, 1, 3]), per_head("k", [0, 2, 3, 1])], f"{at}.scores")
        scores = node("Add", [node("Mul", [scores, scale], f"{at}.scaled"), bias], f"{at}.masked")
        probabilities = node("Softmax", [scores], f"{at}.attention", axis=-1)
        context = node("MatMul", [probabilities, per_head("v", [0, 2, 1, 3])], f"{at}.context")
        context = node("Reshape", [node("Transpose", [context], f"{at}.context_t", perm=[0, 2, 1, 3]), merge_heads],
                       f"{at}.merged")  # fmt: skip
        attended = linear(context, f"{at}.attention.output.dense", f"{at}.attended")
        x = layer_norm(node("Add", [attended, x], f"{at}.residual1"), f"{at}.attention.output.LayerNorm", f"{at}.x1")
        inner = linear(x, f"{at}.intermediate.dense", f"{at}.inner")
        erf = node("Erf", [node("Mul", [inner, const("root_half", np.array(2**-0.5, np.float32))], f"{at}.erf_in")],
                   f"{at}.erf")  # fmt: skip
        gelu = node("Mul", [node("Mul", [inner, const("half", np.array(0.5, np.float32))], f"{at}.half"),
                            node("Add", [erf, "ones"], f"{at}.erf1")], f"{at}.gelu")  # fmt: skip
        out = linear(gelu, f"{at}.output.dense", f"{at}.out")
        x = layer_norm(node("Add", [out, x], f"{at}.residual2"), f"{at}.output.LayerNorm", f"{at}.x2")

    if head == "mean":
        weight = node("Unsqueeze", [mask, const("axis_2", np.array([2], np.int64))], "token_weight")
        tokens_axis = const("axis_1", np.array([1], np.int64))
        total = node("ReduceSum", [node("Mul", [x, weight], "weighted"), tokens_axis], "total", keepdims=0)
        count = node("Clip", [node("ReduceSum", [weight, tokens_axis], "count", keepdims=0),
                              const("tiny", np.array(1e-9, np.float32))], "count_clipped")  # fmt: skip
        mean = node("Div", [total, count], "mean")
        norm = node("ReduceL2", [mean], "norm", axes=[-1], keepdims=1)
        norm = node("Clip", [norm, const("eps", np.array(1e-12, np.float32))], "norm_clipped")
        output, width = node("Div", [mean, norm], "embedding"), hidden
    elif head == "classifier":
        cls = node("Gather", [x, const("cls_index", np.array(0, np.int64))], "cls", axis=1)
        pooled = node("Tanh", [linear(cls, "pooler.dense", "pooler")], "pooled")
        output, width = linear(pooled, "classifier", "logits"), weights["classifier.bias"].shape[0]
    else:
        raise ValueError(f"unknown head {head!r}")

    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
              for name in ("input_ids", "attention_mask", "token_type_ids")]  # fmt: skip
    outputs = [helper.make_tensor_value_info(output, TensorProto.FLOAT, ["batch", width])]
    graph = helper.make_graph(nodes, f"cairn-bert-{head}", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="cairn")
    model.ir_version = 8
    return model


def cached_graph(directory: Path, head: str) -> Path:
    """The graph file for the model in `directory`, built on first use (manage.py optimise_models
    builds them ahead, so that no request waits for it)."""
    import onnx

    path = Path(settings.CAIRN_DATA_DIR) / "models" / f"bert-{head}-{weights_checksum(directory)}.onnx"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.partial")
    onnx.save(bert_graph(directory, head), str(partial))
    partial.replace(path)  # atomic: another process building the same graph reads one whole file
    return path


def precision(choice: str) -> str:
    """OpenVINO's inference precision for CAIRN_VERIFIER_DTYPE: "auto" computes in bfloat16 where
    the CPU has AMX tiles and float32 elsewhere, as the PyTorch path does (judges/verifiers.py)."""
    if choice == "auto":
        import openvino

        capabilities = openvino.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
        choice = "bfloat16" if "BF16" in capabilities and amx() else "float32"
    return {"bfloat16": "bf16", "float32": "f32"}[choice]


def amx() -> bool:
    """Whether this CPU has AMX tiles (Linux reports them in /proc/cpuinfo): only there does
    bfloat16 beat float32 (measured in judges/verifiers.py's inference_dtype)."""
    try:
        return " amx_tile" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


_COMPILING = threading.Lock()


class OpenVinoBert:
    """One BERT compiled by OpenVINO for this CPU: texts (or (text, text) pairs) in, the head's
    output out, tokenised by the model's own tokenizer.json. Each thread runs its own inference
    request on the one compiled model, so the web server's threads may call it at once."""

    def __init__(
        self, directory: Path, head: str, *, max_length: int, threads: int = 0, dtype: str = "float32"
    ) -> None:
        import openvino
        from tokenizers import Tokenizer

        self.directory = Path(directory)
        self.config = json.loads((self.directory / "config.json").read_text())
        self.graph = cached_graph(self.directory, head)
        with _COMPILING:  # one compilation at a time in a process: nothing to gain from two at once
            self.precision = precision(dtype)
            properties = {"INFERENCE_PRECISION_HINT": self.precision, "PERFORMANCE_HINT": "LATENCY"}
            if threads:
                properties["INFERENCE_NUM_THREADS"] = threads
            if threads and threads < (os.cpu_count() or 1):
                # A share of the cores (config/gunicorn.py gives each web worker one): left unpinned,
                # or every worker process pins its threads to the same first cores and the rest idle.
                properties["ENABLE_CPU_PINNING"] = False
            self.compiled = openvino.Core().compile_model(str(self.graph), "CPU", properties)
        self.max_length = min(max_length, self.config.get("max_position_embeddings", max_length))
        self.tokenizer = Tokenizer.from_file(str(self.directory / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()  # count_tokens and split_tokens see every token
        self._truncating = Tokenizer.from_file(str(self.directory / "tokenizer.json"))
        self._truncating.no_padding()
        self._truncating.enable_truncation(self.max_length, strategy="longest_first")
        self._requests = threading.local()

    def features(self, texts: list) -> dict[str, np.ndarray]:
        """Token ids of texts (or of pairs), as transformers' tokenizer(..., padding=True,
        truncation=True, max_length=...) gives them, padded further to a multiple of
        LENGTH_BUCKET: OpenVINO compiles kernels for each input shape it meets, and a question's
        batches would bring new lengths for hours (masked, the padding changes no output)."""
        encodings = self._truncating.encode_batch(texts)
        longest = -(-max(len(encoding.ids) for encoding in encodings) // LENGTH_BUCKET) * LENGTH_BUCKET
        ids = np.zeros((len(encodings), longest), np.int64)
        kinds = np.zeros_like(ids)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n], kinds[row, :n], mask[row, :n] = encoding.ids, encoding.type_ids, 1
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": kinds}

    def run(self, texts: list) -> np.ndarray:
        request = getattr(self._requests, "request", None)
        if request is None:
            request = self._requests.request = self.compiled.create_infer_request()
        return request.infer(self.features(texts))[0].copy()  # copied: the request reuses its buffer
