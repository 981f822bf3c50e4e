"""Devices: ``--device`` resolution, checkpoints across devices, and a CUDA smoke test (marked
``gpu``; skipped where no CUDA GPU is visible)."""

from __future__ import annotations

import pytest
import torch
from conftest import make_model
from test_ddp import SIZES, _tiny_data

from segviz import checkpoint as ckpt
from segviz.data import collate, encode
from segviz.decode import generate_seg
from segviz.device import DeviceError, load_checkpoint, on_device, resolve_device
from segviz.train import TrainConfig, fit, main

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")


def test_resolve_device():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(DeviceError, match="unknown device"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(DeviceError, match="no CUDA GPU"):
            resolve_device("cuda")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_train_device_cuda_without_gpu_is_a_clear_error(tmp_path, capsys):
    assert main(["--device", "cuda", "--out", str(tmp_path / "x")]) == 2
    assert "no CUDA GPU" in capsys.readouterr().err


def test_checkpoint_loads_onto_a_device(tmp_path, vocab, examples):
    model = make_model("seg", vocab)
    ckpt.save(tmp_path / "c", model, vocab, "e2e")
    c = load_checkpoint(tmp_path / "c", "cpu")
    assert next(c.model.parameters()).device.type == "cpu" and not c.model.training
    with on_device("cpu"):
        a = generate_seg(c.model, vocab, examples[2].records, "rm", 2, max_len=12)
    b = generate_seg(model, vocab, examples[2].records, "rm", 2, max_len=12)
    assert a.tokens == b.tokens and a.segments == b.segments


@pytest.mark.gpu
@needs_cuda
@pytest.mark.parametrize("amp", [False, True])
def test_cuda_smoke_train_then_run_on_cpu(tmp_path, vocab, examples, amp):
    data = _tiny_data(tmp_path / "data")
    tcfg = TrainConfig(dataset="e2e", model="seg", epochs=1, batch_size=4, min_freq=1, seed=3)
    hist = fit(tcfg, SIZES, tmp_path / "gpu", data, device="cuda", amp=amp)
    assert hist[0]["device"].startswith("cuda") and hist[0]["train_loss"] == hist[0]["train_loss"]  # not NaN
    on_cpu, on_gpu = ckpt.load(tmp_path / "gpu", "cpu"), ckpt.load(tmp_path / "gpu", "cuda")
    recs = [e.records for e in examples[:3]]
    batch = collate([encode(on_cpu.vocab, e.records, e.target) for e in examples[:3]], len(on_cpu.vocab))
    with torch.no_grad():
        l_cpu, _ = on_cpu.model.loss(batch)
        l_gpu, _ = on_gpu.model.loss(batch.to("cuda"))
    assert l_gpu.item() == pytest.approx(l_cpu.item(), rel=1e-4)
    with on_device("cuda"):
        out = generate_seg(on_gpu.model, on_gpu.vocab, recs[0], "rm", 2, max_len=12)
    assert out.tokens
    peak = torch.cuda.max_memory_allocated() / 2**20
    print(f"CUDA smoke test on {torch.cuda.get_device_name()}: peak {peak:.0f} MiB")


def _cpu_bf16_lstm() -> str | None:
    """Why this CPU cannot run an LSTM under bfloat16 autocast (oneDNN has no such primitive
    without AVX-512, e.g. on an AVX2-only AMD EPYC), or None when it can."""
    try:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            torch.nn.LSTM(2, 2)(torch.zeros(1, 1, 2))
    except RuntimeError as e:
        return str(e).split(".")[0]
    return None


@pytest.mark.parametrize("kind", ["seg", "pg"])
def test_mixed_precision_path_runs_on_cpu_autocast(vocab, examples, kind):
    """What ``--amp`` does on CUDA, exercised with the CPU's bfloat16 autocast: the networks run
    in low precision, the segment model's dynamic program in float32, gradients are finite."""
    if (why := _cpu_bf16_lstm()) is not None:
        pytest.skip(f"this CPU's bfloat16 LSTM: {why}")
    batch = collate([encode(vocab, e.records, e.target) for e in examples], len(vocab))
    model = make_model(kind, vocab).train()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss, _ = model.objective(batch)
    loss.backward()
    ref, _ = model.loss(batch)
    assert loss.item() == pytest.approx(ref.item(), rel=0.02)
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
