"""The training formulation of the segment model's loss (fused emission table, context never
materialised, faster recursion) against the first formulation (:meth:`loss_reference`)."""

from __future__ import annotations

import pytest
import torch
from conftest import make_model

from segviz.data import collate, encode


@pytest.mark.parametrize("reg_weight", [0.0, 5.0])
def test_fast_loss_and_gradients_equal_the_reference(vocab, examples, reg_weight):
    batch = collate([encode(vocab, e.records, e.target) for e in examples], len(vocab))
    model = make_model("seg", vocab, reg_weight=reg_weight).double()
    ref, st_ref = model.loss_reference(batch)
    g_ref = torch.autograd.grad(ref, list(model.parameters()))
    fast, st = model.loss(batch)
    g = torch.autograd.grad(fast, list(model.parameters()))
    assert fast.item() == pytest.approx(ref.item(), rel=1e-12)
    for key in ("nll", "exp_seg", "K", "tokens", "n"):
        assert st[key] == pytest.approx(st_ref[key], rel=1e-12)
    for (name, _), a, b in zip(model.named_parameters(), g, g_ref, strict=True):
        assert torch.allclose(a, b, rtol=1e-9, atol=1e-12), name


def test_fast_loss_float32_close_to_reference_with_oov_and_padding(vocab, examples):
    # examples of different K and T in one batch: padded records and tokens; copy-only words
    batch = collate([encode(vocab, e.records, e.target) for e in examples[:5]], len(vocab))
    model = make_model("seg", vocab)
    assert batch.n_oov > 0
    ref, _ = model.loss_reference(batch)
    fast, _ = model.loss(batch)
    assert fast.item() == pytest.approx(ref.item(), rel=1e-5)
