"""Where tensors live: ``--device {auto,cpu,cuda}`` for every command, and loading checkpoints
onto a device whatever device trained them (weights are stored on the host, in safetensors).

    from segviz.device import resolve_device, load_checkpoint
    dev = resolve_device("auto")            # CUDA when present, else the CPU
    c = load_checkpoint("checkpoints/e2e-seg", dev)
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import torch

DEVICES = ("auto", "cpu", "cuda")


class DeviceError(ValueError):
    """A device was asked for that this machine does not have."""


def resolve_device(name: str | torch.device | None = "auto", local_rank: int | None = None) -> torch.device:
    """``auto`` -> ``cuda`` when a GPU is visible, else ``cpu``; ``cuda`` without a GPU raises
    :class:`DeviceError`. On CUDA, ``local_rank`` (default ``$LOCAL_RANK``, set by ``torchrun``)
    picks the GPU of this process."""
    if isinstance(name, torch.device):
        return name
    name = (name or "auto").lower()
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise DeviceError("--device cuda: no CUDA GPU is visible to PyTorch (torch.cuda.is_available() is False)")
        if name == "cuda":
            rank = int(os.environ.get("LOCAL_RANK", 0)) if local_rank is None else local_rank
            return torch.device("cuda", rank % max(1, torch.cuda.device_count()))
        return torch.device(name)
    if name != "cpu":
        raise DeviceError(f"unknown device {name!r}; choose one of {DEVICES}")
    return torch.device("cpu")


def load_checkpoint(path: Path | str, device: str | torch.device = "cpu"):
    """:func:`segviz.checkpoint.load` onto ``device`` (the weights are read on the host, so a
    checkpoint trained on a GPU loads on a CPU-only machine and the reverse)."""
    from segviz import checkpoint as ckpt

    return ckpt.load(path, device)


def on_device(device: str | torch.device):
    """Context in which new tensors are created on ``device`` (nothing changes for the CPU): lets
    the decoding code, which builds its small per-step tensors without naming a device, run
    with a model on CUDA."""
    device = resolve_device(device)
    return contextlib.nullcontext() if device.type == "cpu" else torch.device(device)
