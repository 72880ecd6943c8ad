"""The torch device the models run on (CAIRN_DEVICE), resolved in one place for the embedder,
the verifiers and training."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

# Batch sizes given for the CPU are multiplied by this on a GPU: there a batch costs little more
# than one pair until the GPU is busy, where the CPU's batches are sized against padding.
GPU_BATCH_SCALE = 8


def torch_device() -> str:
    """ "cuda" or "cpu": `auto` takes the GPU when torch sees one."""
    if settings.CAIRN_DEVICE == "cpu":
        return "cpu"
    import torch  # heavy: imported here so that migrate, check and the admin never load it

    if torch.cuda.is_available():
        return "cuda"
    if settings.CAIRN_DEVICE == "cuda":
        raise ImproperlyConfigured(
            "CAIRN_DEVICE is cuda, but torch sees no CUDA GPU on this machine (no GPU, no driver, or a "
            "CPU-only torch). Set CAIRN_DEVICE to auto or cpu."
        )
    return "cpu"


def device_batch(size: int, device: str) -> int:
    """A batch size given for the CPU, on `device`."""
    return size * GPU_BATCH_SCALE if device == "cuda" else size
