"""The dynamic program against brute-force enumeration of all segmentations and alignments."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from segviz.dp import NEG, Potentials, forward, viterbi


def compositions(T: int, L: int):
    """All ways to cut T tokens into segments of length 1..L: lists of (start, end)."""
    if T == 0:
        yield []
        return
    for first in range(1, min(L, T) + 1):
        for rest in compositions(T - first, L):
            yield [(0, first)] + [(s + first, e + first) for s, e in rest]


def enumerate_paths(log_init, log_trans, log_emit, log_end, T, L):
    """Yield (score, segments) for every segmentation x state sequence of one example."""
    S = log_emit.shape[1]
    for cuts in compositions(T, L):
        for states in itertools.product(range(S), repeat=len(cuts)):
            score = log_init[states[0]]
            for o, ((s, e), j) in enumerate(zip(cuts, states, strict=True)):
                score = score + log_emit[s:e, j].sum() + log_end[e - 1, j]
                if o + 1 < len(cuts):
                    score = score + log_trans[e - 1, j, states[o + 1]]
            yield score, [(s, e, j) for (s, e), j in zip(cuts, states, strict=True)]


def random_potentials(B, T, S, dtype=torch.float64, seed=0, mask_self=True):
    g = torch.Generator().manual_seed(seed)
    log_init = torch.log_softmax(torch.randn(B, S, generator=g, dtype=dtype), -1)
    trans = torch.randn(B, T, S, S, generator=g, dtype=dtype)
    if mask_self:
        trans = trans + torch.eye(S, dtype=dtype) * NEG
    log_trans = torch.log_softmax(trans, -1)
    log_emit = torch.randn(B, T, S, generator=g, dtype=dtype) - 1.0
    log_end = torch.nn.functional.logsigmoid(torch.randn(B, T, S, generator=g, dtype=dtype))
    return log_init, log_trans, log_emit, log_end


CASES = [(T, S, L) for T in (1, 2, 4, 6) for S in (1, 2, 4) for L in (1, 2, 3)]


@pytest.mark.parametrize("T,S,L", CASES)
def test_forward_equals_enumeration(T, S, L):
    pots = random_potentials(1, T, S, seed=T * 100 + S * 10 + L, mask_self=S > 1)
    res = forward(*pots, torch.tensor([T]), L)
    scores = torch.stack([sc for sc, _ in enumerate_paths(*(p[0] for p in pots), T, L)])
    assert res.log_z[0].item() == pytest.approx(torch.logsumexp(scores, 0).item(), abs=1e-9)


@pytest.mark.parametrize("T,S,L", CASES)
def test_viterbi_equals_enumerated_max(T, S, L):
    pots = random_potentials(1, T, S, seed=7 + T * 100 + S * 10 + L, mask_self=S > 1)
    best, paths = viterbi(Potentials(*pots), torch.tensor([T]), L)
    enum = list(enumerate_paths(*(p[0] for p in pots), T, L))
    top_score, _ = max(enum, key=lambda x: x[0].item())
    assert best[0].item() == pytest.approx(top_score.item(), abs=1e-9)
    # the returned path scores to the max and covers the text
    path_score = dict((tuple(p), s) for s, p in enum)[tuple(paths[0])]
    assert path_score.item() == pytest.approx(best[0].item(), abs=1e-9)
    assert paths[0][0][0] == 0 and paths[0][-1][1] == T
    assert all(a[1] == b[0] for a, b in zip(paths[0], paths[0][1:], strict=False))
    assert all(1 <= e - s <= L for s, e, _ in paths[0])


@pytest.mark.parametrize("T,S,L", [(4, 3, 2), (6, 4, 3), (5, 2, 3), (3, 4, 3)])
def test_expected_segments_equals_enumeration_and_derivative(T, S, L):
    pots = random_potentials(1, T, S, seed=3 + T + S + L)
    res = forward(*pots, torch.tensor([T]), L)
    enum = list(enumerate_paths(*(p[0] for p in pots), T, L))
    scores = torch.stack([s for s, _ in enum])
    probs = torch.softmax(scores, 0)
    n_seg = torch.tensor([len(p) for _, p in enum], dtype=torch.float64)
    assert res.expected_segments[0].item() == pytest.approx((probs * n_seg).sum().item(), abs=1e-9)
    # d log Z / d lambda (autograd) and a central finite difference
    lam = torch.zeros((), dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(forward(*pots, torch.tensor([T]), L, lam=lam).log_z.sum(), lam)
    assert grad.item() == pytest.approx(res.expected_segments[0].item(), abs=1e-9)
    h = 1e-5
    fd = (
        forward(*pots, torch.tensor([T]), L, lam=h).log_z - forward(*pots, torch.tensor([T]), L, lam=-h).log_z
    ) / (2 * h)
    assert fd.item() == pytest.approx(res.expected_segments[0].item(), abs=1e-6)


def test_padded_batch_equals_single_examples():
    """Ragged lengths and padded (masked) records give the same numbers as one-at-a-time runs."""
    B, T, S, L = 3, 6, 4, 3
    pots = list(random_potentials(B, T, S, seed=11))
    lengths = torch.tensor([6, 3, 5])
    n_states = [4, 2, 3]  # example b uses only its first n_states[b] states
    for b, n in enumerate(n_states):
        pots[0][b, n:] = NEG
        pots[1][b, :, :, n:] = NEG
        pots[2][b, :, n:] = NEG
    batch = forward(*pots, lengths, L)
    best, paths = viterbi(Potentials(*pots), lengths, L)
    for b in range(B):
        t, n = int(lengths[b]), n_states[b]
        single = [pots[0][b : b + 1, :n], pots[1][b : b + 1, :t, :n, :n]]
        single += [pots[2][b : b + 1, :t, :n], pots[3][b : b + 1, :t, :n]]
        one = forward(*single, torch.tensor([t]), L)
        assert batch.log_z[b].item() == pytest.approx(one.log_z[0].item(), abs=1e-9)
        assert batch.expected_segments[b].item() == pytest.approx(one.expected_segments[0].item(), abs=1e-9)
        best1, paths1 = viterbi(Potentials(*single), torch.tensor([t]), L)
        assert best[b].item() == pytest.approx(best1[0].item(), abs=1e-9)
        assert paths[b] == paths1[0]


def test_gradcheck_float64():
    B, T, S, L = 2, 4, 3, 2
    pots = [p.clone().requires_grad_(True) for p in random_potentials(B, T, S, seed=5, mask_self=False)]
    lengths = torch.tensor([4, 3])

    def f(*p):
        r = forward(*p, lengths, L)
        return r.log_z, r.expected_segments

    assert torch.autograd.gradcheck(f, pots, eps=1e-6, atol=1e-5)


def test_no_nan_with_fully_masked_records():
    """Padded records (all potentials NEG) give finite values and finite gradients."""
    B, T, S, L = 2, 5, 4, 3
    pots = [p.float() for p in random_potentials(B, T, S, seed=9)]
    pots[0][1, 2:] = NEG
    pots[1][1, :, :, 2:] = NEG
    pots[2][1, :, 2:] = NEG
    pots = [p.clone().requires_grad_(True) for p in pots]
    res = forward(*pots, torch.tensor([5, 2]), L)
    (res.log_z.sum() + res.expected_segments.sum()).backward()
    assert torch.isfinite(res.log_z).all() and torch.isfinite(res.expected_segments).all()
    for p in pots:
        assert torch.isfinite(p.grad).all()
    # the masked states receive no gradient from the likelihood
    assert pots[2].grad[1, :, 2:].abs().max().item() < 1e-6


def test_probabilities_normalise_over_all_texts():
    """With locally normalised potentials (emission over a 2-word vocabulary incl. end), the
    probability of all texts of length <= T under a single state sums correctly: a sanity check
    that segment scores are assembled as p(words) x p($)."""
    # One state, one token type; emission prob a, end prob e -> p(text of length T) telescopes.
    a, e = 0.6, 0.3
    T, L = 3, 3
    log_init = torch.zeros(1, 1, dtype=torch.float64)
    log_trans = torch.zeros(1, T, 1, 1, dtype=torch.float64)
    log_emit = torch.full((1, T, 1), math.log(a), dtype=torch.float64)
    log_end = torch.full((1, T, 1), math.log(e), dtype=torch.float64)
    res = forward(log_init, log_trans, log_emit, log_end, torch.tensor([T]), L)
    # compositions of 3: (3), (1,2), (2,1), (1,1,1) -> a^3 (e + 2 e^2 + e^3)
    expected = a**3 * (e + 2 * e**2 + e**3)
    assert res.log_z.item() == pytest.approx(math.log(expected), abs=1e-12)
