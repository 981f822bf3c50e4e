from __future__ import annotations

import torch
from conftest import make_model

from segviz.data import EOSEG_ID, collate, encode
from segviz.model import SegmentModel


def _batch(vocab, examples):
    return collate([encode(vocab, e.records, e.target) for e in examples], len(vocab))


def test_seg_distributions_sum_to_one_and_copy_only_words(vocab, examples):
    model = make_model("seg", vocab)
    ex = examples[1]  # Alimentum: "alimentum" is not in the vocabulary
    enc_ex = encode(vocab, ex.records)
    batch = collate([enc_ex], len(vocab))
    enc = model.encode(batch)
    assert "alimentum" in enc_ex.oov
    oov_id = len(vocab) + enc_ex.oov.index("alimentum")
    d = torch.randn(1, 32)
    S = len(ex.records) + 1
    for k in range(S):
        logp, _, _, _ = model.token_dist(enc, d, torch.tensor([k]), len(enc_ex.oov))
        assert logp.shape == (1, len(vocab) + len(enc_ex.oov))
        assert torch.allclose(logp.exp().sum(), torch.tensor(1.0), atol=1e-5)
        p_oov = logp[0, oov_id].exp().item()
        if k == 1:  # the name record holds "alimentum": reachable only by copying
            assert p_oov > 1e-4
        else:  # other records (and null) cannot copy it, and it is not in the vocabulary
            assert p_oov < 1e-20


def test_seg_attention_is_zero_outside_the_record(vocab, examples):
    model = make_model("seg", vocab)
    batch = _batch(vocab, examples[:3])
    pot = model.potentials(batch)
    alpha = pot.alpha  # (B, T, S, N)
    S = alpha.size(2)
    for b in range(3):
        for k in range(S):
            outside = batch.src_rec[b] != k
            assert alpha[b, :, k][:, outside].abs().max().item() == 0.0
            if k == 0:
                assert alpha[b, :, 0].abs().max().item() == 0.0
            elif k <= int(batch.n_rec[b]):
                assert torch.allclose(alpha[b, :, k].sum(-1), torch.ones(alpha.size(1)), atol=1e-5)


def test_seg_potentials_are_normalised(vocab, examples):
    """Transitions are distributions with no self-transition; padded records are impossible."""
    model = make_model("seg", vocab)
    batch = _batch(vocab, examples[:4])
    pot = model.potentials(batch)
    assert torch.allclose(pot.log_trans.exp().sum(-1), torch.ones(pot.log_trans.shape[:-1]), atol=1e-5)
    diag = torch.diagonal(pot.log_trans, dim1=2, dim2=3)
    assert diag.max().item() < -1e8
    assert torch.allclose(pot.log_init.exp().sum(-1), torch.ones(4), atol=1e-5)
    b = 1  # 3 records, padded to S = 9
    assert pot.log_emit[b, :, 4:].max().item() < -1e8
    assert isinstance(model, SegmentModel) and EOSEG_ID == 4


def test_seg_emission_and_end_share_one_distribution(vocab, examples):
    """At every step and record, the words (emission, summed over the extended vocabulary) and
    "$" (end of segment) share one distribution: it sums to 1, so emission + end <= 1, and the
    forward algorithm's potentials are read from it (emission of y_t and end after y_<t at the
    same decoder state)."""
    model = make_model("seg", vocab, seed=4)
    batch = _batch(vocab, examples[:4])
    with torch.no_grad():
        enc = model.encode(batch)
        pot = model.potentials(batch, enc)
        d = model.decode_states(enc, batch.tgt_in)
        log_pv, logit_gen, alpha, _ = model.generation(enc, d)  # (B, T, S, V), (B, T, S), (B, T, S, N)
    B, T, S, V = log_pv.shape
    N = alpha.size(3)
    n_ext = max(V, int(batch.src_ext.max()) + 1, int(batch.tgt.max()) + 1)
    p_gen = torch.sigmoid(logit_gen.double())
    full = torch.zeros(B, T, S, n_ext, dtype=torch.float64)  # p(w | y_<t, r_j) over the extended vocabulary
    full[..., :V] = p_gen.unsqueeze(3) * log_pv.double().exp()
    copy = (1 - p_gen).unsqueeze(3) * alpha.double()
    full.scatter_add_(3, batch.src_ext.view(B, 1, 1, N).expand(B, T, S, N), copy)
    real = torch.arange(T).view(1, T, 1) < batch.tgt_len.view(B, 1, 1)
    real = real & batch.rec_mask.view(B, 1, S)  # (B, T, S): real steps of real records
    assert real.sum() > 50
    assert torch.allclose(full.sum(3)[real], torch.ones(int(real.sum()), dtype=torch.float64), atol=1e-5)
    words = torch.cat([full[..., :EOSEG_ID], full[..., EOSEG_ID + 1 :]], dim=3)
    emission = torch.logsumexp(words.clamp_min(1e-300).log(), dim=3).exp()  # every word but "$"
    end = full[..., EOSEG_ID]
    assert (emission + end)[real].max() <= 1 + 1e-6
    assert end[real].min() > 0  # "$" is a real option, not a zero padded in
    # the potentials: emission of y_t and end after y_<t both read at decoder state d_t
    y = batch.tgt.view(B, T, 1, 1).expand(B, T, S, 1)
    want_emit = full.gather(3, y).squeeze(3)
    assert torch.allclose(pot.log_emit.double().exp()[real], want_emit[real], rtol=1e-4, atol=1e-9)
    step = real[:, 1:]  # t >= 1: end after y_<t is log_end[t - 1]
    end_prev = pot.log_end[:, :-1].double().exp()
    assert ((pot.log_emit[:, 1:].double().exp() + end_prev)[step]).max() <= 1 + 1e-6
    assert torch.allclose(end_prev[step], end[:, 1:][step], atol=1e-5)


def test_pg_distribution_sums_to_one(vocab, examples):
    model = make_model("pg", vocab)
    enc_ex = encode(vocab, examples[1].records)
    batch = collate([enc_ex], len(vocab))
    enc = model.encode(batch)
    logp, alpha, _ = model.token_dist(enc, torch.tensor([2]), model.start_state(enc), len(enc_ex.oov))
    assert torch.allclose(logp.exp().sum(), torch.tensor(1.0), atol=1e-5)
    assert torch.allclose(alpha.sum(), torch.tensor(1.0), atol=1e-5)
    oov_id = len(vocab) + enc_ex.oov.index("alimentum")
    assert logp[0, oov_id].exp().item() > 1e-4  # reachable by copying


def _overfit(kind, vocab, examples, steps=120):
    model = make_model(kind, vocab, seed=1).train()
    batch = _batch(vocab, examples)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = last = None
    for _ in range(steps):
        loss, st = model.loss(batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        first = st["nll"] if first is None else first
        last = st["nll"]
    return first, last


def test_models_overfit_a_batch_of_eight(vocab, examples):
    assert len(examples) == 8
    for kind in ("seg", "pg"):
        first, last = _overfit(kind, vocab, examples)
        assert last <= 0.1 * first, (kind, first, last)


def test_seg_decoding_step_equals_training_distribution(vocab, examples):
    """token_dist (one-row fast path and a mixed-record batch) matches generation() (eq. 2)."""
    model = make_model("seg", vocab, seed=3).eval()
    ex = examples[1]
    enc_ex = encode(vocab, ex.records)
    enc = model.encode(collate([enc_ex], len(vocab)))
    S, n_oov = len(ex.records) + 1, len(enc_ex.oov)
    d = torch.randn(S, 32)
    with torch.no_grad():
        log_pv, logit_gen, alpha, A = model.generation(enc, d.unsqueeze(0))  # (1, S, S', ·)
        batch_logp, pos_b, a_b, A_b = model.token_dist(enc, d, torch.arange(S), n_oov)
        for k in range(S):
            p_gen = torch.sigmoid(logit_gen[0, k, k])
            p_ref = p_gen * log_pv[0, k, k].exp()
            p_ref = torch.cat([p_ref, torch.zeros(n_oov)]).index_add(0, torch.tensor(enc_ex.src_ext), (1 - p_gen) * alpha[0, k, k])
            one_logp, pos, a, A1 = model.token_dist(enc, d[k : k + 1], torch.tensor([k]), n_oov)
            for logp in (one_logp[0], batch_logp[k]):
                assert torch.allclose(logp.exp(), p_ref, atol=1e-6)
            assert torch.allclose(A1[0], A[0, k, k], atol=1e-6) and torch.allclose(A_b[k], A[0, k, k], atol=1e-6)
            full = model.full_attention(enc, pos[0], a[0])
            assert torch.allclose(full, alpha[0, k, k], atol=1e-6)
            assert torch.allclose(model.full_attention(enc, pos_b[k], a_b[k]), alpha[0, k, k], atol=1e-6)
