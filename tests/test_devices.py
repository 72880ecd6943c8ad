"""CAIRN_DEVICE: one resolution for the embedder, the verifiers and training; torch's view of
the GPU is patched, so every case runs on any machine."""

import pytest
import torch
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from corpus.devices import torch_device


@pytest.mark.parametrize(
    ("setting", "gpu", "device"),
    [
        ("cpu", True, "cpu"),
        ("cpu", False, "cpu"),
        ("auto", True, "cuda"),
        ("auto", False, "cpu"),
        ("cuda", True, "cuda"),
    ],
)
def test_the_setting_resolves_to_a_torch_device(monkeypatch, setting, gpu, device):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu)
    with override_settings(CAIRN_DEVICE=setting):
        assert torch_device() == device


def test_asking_for_cuda_without_a_gpu_is_an_error_naming_the_setting(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with override_settings(CAIRN_DEVICE="cuda"), pytest.raises(ImproperlyConfigured, match="CAIRN_DEVICE"):
        torch_device()
