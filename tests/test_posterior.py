"""segviz.posterior: forward-backward marginals against brute-force enumeration."""

from __future__ import annotations

import pytest
import torch
from test_dp import enumerate_paths, random_potentials

from segviz.dp import Potentials
from segviz.posterior import marginals, text_posterior
from segviz.records import parse_e2e_mr, tokenize


def _brute(pots, T, L):
    """P(token t in state j), P(segment starts at t), P(state-j segment ends after t) by enumeration."""
    S = pots[2].shape[2]
    enum = list(enumerate_paths(*(p[0] for p in pots), T, L))
    probs = torch.softmax(torch.stack([s for s, _ in enum]), 0)
    state, start, end = torch.zeros(T, S, dtype=torch.float64), torch.zeros(T, dtype=torch.float64), torch.zeros(T, S, dtype=torch.float64)
    for p, (_, path) in zip(probs, enum, strict=True):
        for s, e, j in path:
            state[s:e, j] += p
            start[s] += p
            end[e - 1, j] += p
    return state, start, end


@pytest.mark.parametrize("T,S,L", [(1, 2, 2), (3, 3, 2), (4, 2, 3), (5, 3, 3), (4, 4, 4)])
def test_marginals_equal_enumeration_and_rows_sum_to_one(T, S, L):
    pots = random_potentials(1, T, S, seed=T * 10 + S + L)
    m = marginals(Potentials(*pots), torch.tensor([T]), L)
    state, start, end = _brute(pots, T, L)
    assert torch.allclose(m.state[0], state, atol=1e-9)
    assert torch.allclose(m.start[0], start, atol=1e-9)
    assert torch.allclose(m.end[0], end, atol=1e-9)
    assert torch.allclose(m.state[0].sum(1), torch.ones(T, dtype=torch.float64), atol=1e-9)
    assert m.start[0, 0].item() == 1.0


def test_padded_positions_are_zero_and_float32_input_works():
    pots = [p.float() for p in random_potentials(2, 5, 3, seed=3)]
    m = marginals(Potentials(*pots), torch.tensor([5, 3]), 2)
    assert m.state.dtype == torch.float64
    assert torch.allclose(m.state[1, :3].sum(1), torch.ones(3, dtype=torch.float64), atol=1e-6)
    assert m.state[1, 3:].abs().max().item() == 0 and m.start[1, 3:].abs().max().item() == 0


def test_text_posterior_on_a_tiny_model(vocab):
    from conftest import make_model

    model = make_model("seg", vocab, seed=1)
    records = parse_e2e_mr("name[The Mill], eatType[pub], near[The Sorrento]")
    tokens = tokenize("The Mill is a pub near The Sorrento.")
    post = text_posterior(model, vocab, records, tokens)
    assert post.tokens == tokens and post.states == ["null"] + [r.label for r in records]
    assert len(post.probs) == len(tokens) and all(len(row) == 4 for row in post.probs)
    assert all(abs(sum(row) - 1) < 1e-9 for row in post.probs)
    assert post.start[0] == pytest.approx(1.0) and all(0 <= p <= 1 for p in post.start)
    # the Viterbi path covers the text in order; log p(y|X) is the forward algorithm's
    assert post.viterbi[0][0] == 0 and post.viterbi[-1][1] == len(tokens)
    assert all(a[1] == b[0] for a, b in zip(post.viterbi, post.viterbi[1:], strict=False))
    from segviz.data import collate, encode
    from segviz.dp import forward

    batch = collate([encode(vocab, records, tokens)], len(vocab))
    with torch.no_grad():
        pot = model.potentials(batch)
        log_z = forward(pot.log_init, pot.log_trans, pot.log_emit, pot.log_end, batch.tgt_len, model.cfg.max_seg_len).log_z
    assert post.log_prob == pytest.approx(log_z.item(), abs=1e-4)
    assert text_posterior(model, vocab, records, []).probs == []


def test_token_explanation_adds_up(vocab):
    import math

    from conftest import make_model

    from segviz.posterior import token_explanation

    model = make_model("seg", vocab, seed=2)
    records = parse_e2e_mr("name[Zizzi], eatType[restaurant], food[Italian]")
    tokens = tokenize("Zizzi is an Italian restaurant .")
    for t, k in [(0, 1), (3, 3), (1, 0), (4, 2)]:
        ex = token_explanation(model, vocab, records, tokens, t, k)
        assert ex.token == tokens[t] and ex.record == k
        # the two routes add up to the token's probability
        assert math.exp(ex.log_prob) == pytest.approx(ex.p_from_vocab + ex.p_from_copy, rel=1e-4, abs=1e-12)
        assert len(ex.top) == 5 and all(a[1] >= b[1] for a, b in zip(ex.top, ex.top[1:], strict=False))
        assert sum(p for _, p in ex.top) <= 1 + 1e-6
    null = token_explanation(model, vocab, records, tokens, 1, 0)
    assert null.p_generate == pytest.approx(1.0) and null.p_from_copy == pytest.approx(0.0, abs=1e-9)
    # "zizzi" is not in the vocabulary: under its own record it can only be copied
    first = token_explanation(model, vocab, records, tokens, 0, 1)
    assert first.p_from_vocab == 0.0 and first.p_from_copy > 0
    # the emission the forward algorithm uses is the same number
    from segviz.data import collate, encode

    batch = collate([encode(vocab, records, tokens)], len(vocab))
    with torch.no_grad():
        pot = model.potentials(batch)
    assert first.log_prob == pytest.approx(pot.log_emit[0, 0, 1].item(), abs=1e-4)
