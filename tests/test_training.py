"""The training loop: its batching (pure, no model), and one step of adapting a shipped model
(the only test that trains: two pairs, a few seconds)."""

import json
import random
from pathlib import Path

from django.conf import settings
from safetensors import safe_open

from judges.relevance_data import RELEVANCE_LABELS
from judges.training import TrainingConfig, _length_grouped_batches, train_classifier


def test_batches_cover_every_pair_once_group_by_length_and_repeat_on_resume():
    pairs = [("word " * random.Random(i).randint(1, 200), "hypothesis", 0) for i in range(1000)]
    batches = _length_grouped_batches(pairs, 32, random.Random(5))
    assert sorted(i for batch in batches for i in batch) == list(range(1000))
    assert all(len(batch) <= 32 for batch in batches)
    assert batches == _length_grouped_batches(pairs, 32, random.Random(5))  # a resumed run sees the same batches
    spread = [max(len(pairs[i][0]) for i in b) - min(len(pairs[i][0]) for i in b) for b in batches]
    assert sum(spread) / len(spread) < 100  # random batches would span most of the 1,000-character range


PAIRS = [
    ("when did the eiffel tower open", "It opened to the public in 1889.", 1),
    ("when did the eiffel tower open", "The Statue of Liberty stands in New York Harbor.", 0),
]


def test_adapting_a_shipped_half_precision_model_trains_in_float32(tmp_path):
    config = TrainingConfig(
        base=str(settings.CAIRN_RELEVANCE_MODEL), output=str(tmp_path / "adapted"), labels=RELEVANCE_LABELS,
        epochs=1, batch_size=2, checkpoint_every=1,
    )  # fmt: skip
    result = train_classifier(config, PAIRS)
    assert result["finished"] and result["steps"] == 1
    # The checkpoint holds the weights as trained; float16 steps on a CPU would lose the update.
    checkpoint = tmp_path / "adapted" / "checkpoint" / "model.safetensors"
    assert _dtypes(checkpoint) == {"torch.float32"}
    # The step moved the weights: the head and the first layer are no longer the shipped ones.
    shipped = Path(settings.CAIRN_RELEVANCE_MODEL) / "model.safetensors"
    for name in ("classifier.weight", "bert.encoder.layer.0.attention.self.query.weight"):
        before, after = _tensor(shipped, name).float(), _tensor(checkpoint, name)
        assert before.shape == after.shape
        moved = float((after - before).abs().max())
        assert moved > 1e-6, f"{name} moved by {moved}"
    # The shipped artefact is half precision again, and says where it started from.
    assert _dtypes(tmp_path / "adapted" / "model.safetensors") == {"torch.float16"}
    record = json.loads((tmp_path / "adapted" / "training.json").read_text())
    assert record["base"] == "models/relevance"  # named by its place in the project, not this machine's path


def _tensor(path, name: str):
    with safe_open(path, "pt") as weights:
        return weights.get_tensor(name)


def _dtypes(path) -> set[str]:
    with safe_open(path, "pt") as weights:
        return {str(weights.get_tensor(name).dtype) for name in weights.keys()}  # noqa: SIM118 (not a dict: no __iter__)
