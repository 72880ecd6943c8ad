"""Where the models run (CAIRN_DEVICE) and what runs them (CAIRN_MODEL_RUNTIME), resolved in one
place for the embedder, the verifiers and training."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

# Batch sizes given for the CPU are multiplied by this on a GPU: there a batch costs little more
# than one pair until the GPU is busy, where the CPU's batches are sized against padding.
GPU_BATCH_SCALE = 8


def torch_device() -> str:
    """ "cuda" or "cpu": `auto` takes the GPU when torch sees one."""
    if settings.CAIRN_DEVICE == "cpu":
        return "cpu"
    try:
        import torch  # heavy: imported here so that migrate, check and the admin never load it
    except ImportError:  # a serving install (requirements.txt): OpenVINO on the CPU
        if settings.CAIRN_DEVICE == "cuda":
            raise ImproperlyConfigured(
                "CAIRN_DEVICE is cuda, but PyTorch is not installed: a GPU runs the models through PyTorch "
                "(pip install -r requirements-train.txt)."
            ) from None
        return "cpu"

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


def model_runtime() -> str:
    """ "openvino" or "torch": auto takes OpenVINO on the CPU when it is installed (measured faster
    there, and it needs no PyTorch: benchmarks/runtime.py), PyTorch on a GPU."""
    from corpus.encoders import runtime_available

    choice = settings.CAIRN_MODEL_RUNTIME
    if settings.CAIRN_DEVICE == "cuda":  # a GPU runs the models through PyTorch
        if choice == "openvino":
            raise ImproperlyConfigured(
                "CAIRN_DEVICE is cuda, but CAIRN_MODEL_RUNTIME is openvino, which runs on the CPU: set one of them to auto."
            )
        torch_device()  # the error naming CAIRN_DEVICE where torch sees no GPU
        choice = "torch"
    if choice == "auto":
        # torch is imported to look for a GPU only where one could be: loading it costs a web process
        # a second and hundreds of megabytes it would not use.
        gpu = settings.CAIRN_DEVICE != "cpu" and Path("/dev/nvidiactl").exists() and torch_device() == "cuda"
        choice = "openvino" if runtime_available() and not gpu else "torch"
    if choice == "openvino" and not runtime_available():
        raise ImproperlyConfigured(
            "CAIRN_MODEL_RUNTIME is openvino, but openvino, onnx or tokenizers is not installed (pip install -r "
            "requirements.txt), or set CAIRN_MODEL_RUNTIME to torch."
        )
    if choice == "torch":
        try:
            import torch  # noqa: F401
        except ImportError:
            raise ImproperlyConfigured(
                "Neither OpenVINO nor PyTorch is installed to run the models: pip install -r requirements.txt."
            ) from None
    return choice
