"""The pointer-generator baseline (See et al., 2017; docs/design.md §1 "PG baseline"). Letters
as in :mod:`segviz.model`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from segviz.data import Batch
from segviz.model.common import NEG, EncoderDecoder, ModelConfig, extended_scatter, mixture_logprob


@dataclass
class PGEncoding:
    h: torch.Tensor  # (B, N, H)
    key: torch.Tensor  # (B, N, H)
    src_mask: torch.Tensor  # (B, N)
    src_ext: torch.Tensor  # (B, N)
    state0: tuple[torch.Tensor, torch.Tensor]


class PGModel(EncoderDecoder):
    """Pointer-generator baseline: attention over all source tokens, input feeding, copy."""

    def __init__(self, cfg: ModelConfig):
        super().__init__(cfg)
        H, E, V = cfg.hidden, cfg.emb_dim, cfg.vocab_size
        self.cell = nn.LSTMCell(E + H, H)  # input feeding: [emb(y_{t-1}); A_{t-1}]
        self.att = nn.Linear(H, H, bias=False)
        self.out = nn.Linear(2 * H, V)  # W1 d_t + W2 A_t
        self.gen = nn.Linear(2 * H + E, 1)  # p_gen from [d_t; A_t; emb(y_{t-1})]

    def encode(self, batch: Batch, training: bool = False) -> PGEncoding:
        """What the decoder reads from ``batch`` (``training``: with the batch's host lengths, no
        device synchronisation)."""
        _, h, state0 = self.encoder(batch.src, batch.src_len, batch.host_src_len if training else None)
        mask = torch.arange(batch.src.size(1), device=h.device) < batch.src_len.unsqueeze(1)
        return PGEncoding(h, self.att(h), mask, batch.src_ext, state0)

    def step(self, enc: PGEncoding, y_prev: torch.Tensor, state):
        """One step. ``state = (h, c, A_prev)``; returns ``d, A, alpha (M, N), emb, state``."""
        h, c, A_prev = state
        e = self.drop(self.dec_emb(y_prev))
        h, c = self.cell(torch.cat([e, A_prev], dim=1), (h, c))
        d = self.drop(h)
        alpha, A = self.attend(enc, d)
        return d, A, alpha, e, (h, c, A)

    def attend(self, enc: PGEncoding, d: torch.Tensor):
        """Attention over all source tokens (scores + context): O(M·N) per step for M records
        of N tokens. ``d (M, H)`` -> ``alpha (M, N_src)``, ``A (M, H)``."""
        if enc.h.size(0) == 1:  # hypotheses of one input (no padding): shared keys, no copies
            if d.size(0) == 1:
                alpha = torch.softmax(torch.mv(enc.key[0], d[0]), dim=0)
                return alpha.unsqueeze(0), torch.mv(enc.h[0].t(), alpha).unsqueeze(0)
            alpha = torch.softmax(d @ enc.key[0].t(), dim=1)
            return alpha, alpha @ enc.h[0]
        scores = torch.einsum("mh,mnh->mn", d, enc.key).masked_fill(~enc.src_mask, NEG)
        alpha = torch.softmax(scores, dim=1)
        return alpha, torch.bmm(alpha.unsqueeze(1), enc.h).squeeze(1)

    def start_state(self, enc: PGEncoding):
        h0, c0 = enc.state0
        return (h0, c0, torch.zeros_like(h0))

    def head(self, d, A, e):
        """``log p_vocab (…, V)`` and ``logit p_gen (…)``."""
        dA = torch.cat([d, A], dim=-1)
        return torch.log_softmax(self.out(dA), dim=-1), self.gen(torch.cat([dA, e], dim=-1)).squeeze(-1)

    def token_dist(self, enc: PGEncoding, y_prev: torch.Tensor, state, n_oov: int):
        """``log p (M, V + n_oov)``, ``alpha (M, N)``, new state."""
        d, A, alpha, e, state = self.step(enc, y_prev, state)
        dA = torch.cat([d, A], dim=-1)
        p_vocab = torch.softmax(self.out(dA), dim=-1)
        logit_gen = self.gen(torch.cat([dA, e], dim=-1)).squeeze(-1)
        src_ext = enc.src_ext.expand(d.size(0), -1) if enc.src_ext.size(0) == 1 else enc.src_ext
        return extended_scatter(p_vocab, logit_gen, alpha, src_ext, n_oov), alpha, state

    def token_logprobs(self, batch: Batch, training: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """``log p(y_t | y_<t, x)`` of every target token, teacher-forced, and the mask of real
        tokens: each ``(B, T)``."""
        enc = self.encode(batch, training=training)
        state = self.start_state(enc)
        T = batch.tgt.size(1)
        ds, As, alphas, es = [], [], [], []
        for t in range(T):
            d, A, alpha, e, state = self.step(enc, batch.tgt_in[:, t], state)
            ds.append(d)
            As.append(A)
            alphas.append(alpha)
            es.append(e)
        d, A, alpha, e = (torch.stack(x, dim=1) for x in (ds, As, alphas, es))  # (B, T, ·)
        log_pv, logit_gen = self.head(d, A, e)  # (B, T, V), (B, T)
        V = log_pv.size(2)
        y = batch.tgt
        log_pv_y = log_pv.gather(2, y.clamp(max=V - 1).unsqueeze(2)).squeeze(2).masked_fill(y >= V, NEG)
        match = (enc.src_ext.unsqueeze(1) == y.unsqueeze(2)).to(alpha.dtype)  # (B, T, N)
        copy_y = (alpha * match).sum(2)
        logp = mixture_logprob(log_pv_y, logit_gen, copy_y)  # (B, T)
        mask = torch.arange(T, device=y.device).unsqueeze(0) < batch.tgt_len.unsqueeze(1)
        return logp, mask

    def objective(self, batch: Batch) -> tuple[torch.Tensor, dict]:
        """Token-level negative log-likelihood (mean over target tokens); stats as tensors."""
        logp, mask = self.token_logprobs(batch, training=True)  # (B, T) each
        B = logp.size(0)
        nll = -(logp * mask).sum()
        tokens = batch.tgt_len.sum()
        stats = {
            "nll": nll.detach(),
            "tokens": tokens,
            "exp_seg": nll.new_full((), math.nan),
            "K": batch.n_rec.float().mean(),
            "n": B,
        }
        return nll / tokens.clamp(min=1), stats
