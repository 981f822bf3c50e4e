"""Anchored segments (``train --anchor``, :mod:`segviz.anchor`): which emissions are set to log 0,
when an example keeps the paper's sum, and that the forward algorithm is then the exact sum over
the anchored paths."""

from __future__ import annotations

import pytest
import torch
from conftest import make_model
from test_dp import enumerate_paths, random_potentials

from segviz.anchor import anchors, feasible, forbidden
from segviz.data import Vocab, collate, encode
from segviz.dp import forward
from segviz.records import Record, parse_webnlg_triples

TRIPLES = ["Alan_Bean | birthPlace | Wheeler,_Texas", "Alan_Bean | occupation | Test_pilot"]
TEXT = "alan bean was born in wheeler , texas and worked as a test pilot ."


def _vocab() -> Vocab:
    return Vocab.build([], min_freq=1)


def test_a_value_word_is_anchored_to_its_records_and_a_subject_word_to_none():
    records = parse_webnlg_triples(TRIPLES)
    enc = encode(_vocab(), records, TEXT.split())
    got = {w: sorted(a) for w, a in zip([*TEXT.split(), "<eos>"], anchors(_vocab(), records, enc), strict=True) if a}
    assert got == {"wheeler": [1], "texas": [1], "test": [2], "pilot": [2]}  # "alan bean": the subject
    cut = forbidden(_vocab(), records, enc, L=8)
    t_pilot = TEXT.split().index("pilot")
    assert (t_pilot, 0) in cut and (t_pilot, 1) in cut and (t_pilot, 2) not in cut  # null and record 1 may not say it
    assert len(cut) == 4 * 2  # four anchored words, two states each


def test_an_object_that_is_also_a_subject_is_not_anchored():
    """As ``Dataset.attributable``: the words of an entity of the input that is a subject too say
    the records of that entity as much as their own."""
    records = parse_webnlg_triples(["Julia_Morgan | birthPlace | California", "Asilomar_Conference_Grounds | architect | Julia_Morgan"])
    text = "julia morgan , born in california , designed the asilomar conference grounds .".split()
    enc = encode(_vocab(), records, text)
    got = {w for w, a in zip([*text, "<eos>"], anchors(_vocab(), records, enc), strict=True) if a}
    assert got == {"california"}


@pytest.mark.parametrize(
    ("allowed", "K", "L", "ok"),
    [
        ([{1}] * 3, 1, 3, True),  # one segment of record 1
        ([{1}] * 4, 1, 3, False),  # longer than L: a second segment of 1 would be a self-transition
        ([{1}, set(), {1}, {1}, {1}], 1, 3, True),  # cut by a free word: 1, null, 1
        ([{1}, {2}, {1}], 2, 1, True),  # alternating records
        ([{2}, {1}, {1}, {2}], 2, 1, False),  # L = 1: "1 1" needs a self-transition
    ],
)
def test_feasible_is_a_segmentation_of_allowed_states(allowed, K, L, ok):
    assert feasible([frozenset(a) for a in allowed], K, L) is ok


def test_an_example_with_no_anchored_segmentation_keeps_the_papers_sum():
    records = [Record("name", "Alpha Beta Gamma Delta")]
    text = "alpha beta gamma delta is here .".split()
    enc = encode(_vocab(), records, text)
    assert forbidden(_vocab(), records, enc, L=3) == []  # four value words, L = 3
    assert len(forbidden(_vocab(), records, enc, L=4)) == 4  # null may not say them


def test_anchored_forward_is_the_exact_sum_over_anchored_paths():
    T, S, L = 5, 3, 2
    pots = random_potentials(1, T, S, seed=3)
    ban = torch.zeros(1, T, S, dtype=torch.bool)
    ban[0, 1, [0, 2]] = True  # token 1 only under record 1
    ban[0, 3, [0, 1]] = True  # token 3 only under record 2
    res = forward(*pots, torch.tensor([T]), L, ban=ban)
    kept = [
        sc for sc, path in enumerate_paths(*(p[0] for p in pots), T, L)
        if all(not ban[0, t, j] for s, e, j in path for t in range(s, e))
    ]  # fmt: skip
    assert res.log_z[0].item() == pytest.approx(torch.logsumexp(torch.stack(kept), 0).item(), abs=1e-9)
    full = forward(*pots, torch.tensor([T]), L).log_z[0].item()
    assert res.log_z[0].item() < full  # fewer paths, less mass


def test_anchored_forward_keeps_float32_precision():
    """A log 0 inside the cumulative emission sums would leave float32 windows after it a spacing
    of 64 nats near 1e9; the banned tokens are counted apart."""
    T, S, L = 12, 4, 6
    pots = random_potentials(2, T, S, seed=5)
    ban = torch.zeros(2, T, S, dtype=torch.bool)
    ban[:, 2, 1:] = True
    ban[:, 7, [0, 2]] = True
    z64 = forward(*pots, torch.tensor([T, T - 3]), L, ban=ban).log_z
    z32 = forward(*(p.float() for p in pots), torch.tensor([T, T - 3]), L, ban=ban).log_z
    assert torch.allclose(z32.double(), z64, atol=1e-4), (z32, z64)


def test_the_model_reads_forbid_in_both_formulations(vocab, examples):
    encs = [encode(vocab, e.records, e.target) for e in examples[:3]]
    model = make_model("seg", vocab).double()
    _, plain = model.loss(collate(encs, len(vocab)))
    for e in encs:  # the first word of each target only under record 1
        e.forbid = [(0, s) for s in range(e.n_records + 1) if s != 1]
    batch = collate(encs, len(vocab))
    assert batch.forbid.shape == batch.tgt.shape + (batch.rec_mask.size(1),) and batch.forbid.sum() == sum(len(e.forbid) for e in encs)
    fast, st = model.loss(batch)
    ref, st_ref = model.loss_reference(batch)
    assert fast.item() == pytest.approx(ref.item(), rel=1e-12) and st["nll"] == pytest.approx(st_ref["nll"], rel=1e-12)
    assert st["nll"] > plain["nll"]  # the anchored sum holds fewer paths
