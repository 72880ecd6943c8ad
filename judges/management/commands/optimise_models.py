"""python manage.py optimise_models [--check]

Builds (or finds) the OpenVINO graph of every model Cairn runs, compiles it for this CPU and runs
it once, so that no web process's first question pays for it. --check also holds each to
PyTorch's output in float32 (where PyTorch is installed): what a model retrained or set by a
setting must pass before it serves."""

from pathlib import Path

import numpy as np
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from corpus.devices import model_runtime
from corpus.embedder import bundled_model_path, runs_on_openvino
from corpus.encoders import OpenVinoBert, is_bert

PAIRS = [
    ("How do I rotate the logs?", "Use logrotate with a weekly schedule to rotate the server's logs."),
    ("what is x", "x"),
    ("Which directive allows overrides?", "AllowOverride controls which directives .htaccess files may hold. " * 30),
]
CHECK_TOLERANCE = 1e-3  # float32 on both sides: measured within 2e-6 on the shipped models


class Command(BaseCommand):
    help = "Build and compile the OpenVINO graph of the embedder and the three judges (cached by checksum)."

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="Also compare each with PyTorch in float32.")

    def handle(self, *args, check, **options):
        if model_runtime() != "openvino":
            self.stdout.write("CAIRN_MODEL_RUNTIME resolves to torch here: nothing to build.")
            return
        models = {
            "embedder": (Path(settings.CAIRN_EMBEDDING_MODEL or bundled_model_path()), "mean"),
            "nli": (Path(settings.CAIRN_NLI_MODEL), "classifier"),
            "relevance": (Path(settings.CAIRN_RELEVANCE_MODEL), "classifier"),
            "answer": (Path(settings.CAIRN_ANSWER_MODEL), "classifier"),
        }
        for name, (directory, head) in models.items():
            supported = runs_on_openvino(str(directory)) if head == "mean" else is_bert(directory)
            if not supported:
                self.stdout.write(f"{name}: {directory} is not a BERT the graph computes; it runs on PyTorch")
                continue
            max_length = settings.CAIRN_VERIFIER_MAX_LENGTH if head == "classifier" else 256
            dtype = settings.CAIRN_VERIFIER_DTYPE if head == "classifier" else "float32"
            model = OpenVinoBert(directory, head, max_length=max_length, dtype=dtype)
            texts = PAIRS if head == "classifier" else [q for q, _ in PAIRS]
            model.run(texts)
            line = f"{name}: {model.graph.name}, {model.precision}"  # the file is named by the weights' checksum
            if check:
                line += f", max |difference| from PyTorch {self.difference(directory, head, texts):.1e}"
            self.stdout.write(line)

    def difference(self, directory: Path, head: str, texts: list) -> float:
        try:
            import torch
            from sentence_transformers import CrossEncoder, SentenceTransformer
        except ImportError:
            raise CommandError("--check compares with PyTorch: pip install -r requirements-train.txt") from None
        ours = OpenVinoBert(directory, head, max_length=256, dtype="float32").run(texts)
        if head == "mean":
            theirs = SentenceTransformer(str(directory), device="cpu").encode(texts, normalize_embeddings=True)
        else:
            model = CrossEncoder(str(directory), device="cpu", max_length=256, model_kwargs={"dtype": torch.float32})
            theirs = model.predict(texts, activation_fn=torch.nn.Identity(), convert_to_numpy=True)
        difference = float(np.abs(ours.reshape(theirs.shape) - theirs).max())
        if difference > CHECK_TOLERANCE:
            raise CommandError(f"{directory}: OpenVINO's output differs from PyTorch's by {difference:.1e}")
        return difference
