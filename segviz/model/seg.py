"""The segment model of Shen et al. (2020, §4): potentials of the dynamic program, the exact
objective (eq. 5 and 6) and the decoding steps of :mod:`segviz.decode.search`. Letters as in
:mod:`segviz.model`."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from segviz import dp
from segviz.data import EOSEG_ID, Batch
from segviz.model.common import (
    NEG,
    EncoderDecoder,
    ModelConfig,
    _host_stats,
    extended_scatter,
    mixture_logprob,
)
from segviz.model.seg_encoding import SegEncoding, SegPotentials, _one_row


class _PickLogSoftmax(torch.autograd.Function):
    """``log softmax(alpha_t^k W2 h + W1 d_t)`` read at two ids per ``(b, t)``, for every record ``k``.

    ``flat (B, T·S, N)`` attention weights, ``vproj (B, N, V)`` = ``W2 h``, ``od (B, T, V)`` =
    ``W1 d_t + b``, ``ids (B, T, 2)`` -> ``(B, T, S, 2)``.

    The ``B·T·S·V`` logits (about 100 MB for a batch of 64 E2E texts) are the bulk of a step's
    memory traffic, and all that is read from them is a normaliser and two entries per row. So
    they are formed a few examples at a time (a cache-sized block), reduced at once, and never
    stored: the backward pass forms each block again and turns it into the gradient in place
    (``softmax · (-sum g)`` plus ``g`` at the picked ids). Exact: the same sums, in blocks.
    """

    BLOCK = 1 << 20  # floats per block and thread (4 MB: a share of this machine's L3 cache)

    @staticmethod
    def _blocks(B: int, row: int):
        c = max(1, min(B, _PickLogSoftmax.BLOCK * torch.get_num_threads() // max(row, 1)))
        return [(i, min(B, i + c)) for i in range(0, B, c)]

    @staticmethod
    def _logits(flat, vproj, od, i, j, S):
        x = torch.bmm(flat[i:j], vproj[i:j])  # (c, T·S, V)
        x = x.view(j - i, od.size(1), S, -1)
        x += od[i:j].unsqueeze(2)
        return x

    @staticmethod
    def forward(ctx, flat, vproj, od, ids):
        B, TS, _ = flat.shape
        T, V = od.size(1), vproj.size(2)
        S = TS // T
        dt = vproj.dtype
        flat_, od_ = flat.to(dt), od.to(dt)
        out = torch.empty(
            B, T, S, ids.size(2), dtype=torch.promote_types(dt, torch.float32), device=flat.device
        )
        lse = torch.empty(B, T, S, 1, dtype=out.dtype, device=flat.device)
        for i, j in _PickLogSoftmax._blocks(B, TS * V):
            x = _PickLogSoftmax._logits(flat_, vproj, od_, i, j, S).to(out.dtype)
            out[i:j] = x.gather(3, ids[i:j].unsqueeze(2).expand(j - i, T, S, ids.size(2)))
            m = x.amax(3, keepdim=True)
            lse[i:j] = x.sub_(m).exp_().sum(3, keepdim=True).log_().add_(m)
        out -= lse
        ctx.save_for_backward(flat, vproj, od, ids, lse)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, g):
        flat, vproj, od, ids, lse = ctx.saved_tensors
        B, TS, _ = flat.shape
        T = od.size(1)
        S = TS // T
        dt = vproj.dtype
        flat_, od_ = flat.to(dt), od.to(dt)
        need_flat, need_vproj, need_od = ctx.needs_input_grad[:3]
        g_flat = torch.empty_like(flat) if need_flat else None
        g_vproj = torch.empty_like(vproj) if need_vproj else None
        g_od = torch.empty_like(od) if need_od else None
        gsum = g.sum(3, keepdim=True)
        for i, j in _PickLogSoftmax._blocks(B, TS * vproj.size(2)):
            p = _PickLogSoftmax._logits(flat_, vproj, od_, i, j, S).to(lse.dtype)
            p.sub_(lse[i:j]).exp_().mul_(-gsum[i:j])  # softmax · (-sum g)
            p.scatter_add_(3, ids[i:j].unsqueeze(2).expand(j - i, T, S, ids.size(2)), g[i:j].to(p.dtype))
            if need_od:
                g_od[i:j] = p.sum(2)
            pf = p.view(j - i, TS, -1).to(dt)
            if need_flat:
                g_flat[i:j] = torch.bmm(pf, vproj[i:j].transpose(1, 2))
            if need_vproj:
                g_vproj[i:j] = torch.bmm(flat_[i:j].transpose(1, 2), pf)
        return g_flat, g_vproj, g_od, None


class SegmentModel(EncoderDecoder):
    """Joint segmentation and correspondence model (paper §4)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__(cfg)
        H, E, V = cfg.hidden, cfg.emb_dim, cfg.vocab_size
        self.decoder = nn.LSTM(E, H, batch_first=True)
        self.att = nn.Linear(H, H, bias=False)  # W_a: score(h_i, d_t) = d_t^T W_a h_i
        self.out_d = nn.Linear(H, V)  # W1 d_t (+ bias)
        self.out_a = nn.Linear(H, V, bias=False)  # W2 A_t
        self.gen = nn.Linear(2 * H, 1)  # MLP_g([d_t; A_t])
        self.trans_a = nn.Linear(H, E, bias=False)  # M (eq. 3)
        self.trans_d = nn.Linear(H, E, bias=False)  # N (eq. 3)
        self.f_null = nn.Parameter(torch.randn(E) * 0.1)  # f(r_0)

    # ----- input side -------------------------------------------------------------------
    def _records(self, batch: Batch, x: torch.Tensor):
        """``member (B, S, N)``, ``has_tok (B, S)`` and the record representations ``f (B, S, E)``."""
        S = batch.rec_mask.size(1)
        ar = torch.arange(max(batch.src.size(1), S), device=x.device)
        valid = ar[: batch.src.size(1)] < batch.src_len.unsqueeze(1)  # (B, N)
        member = (batch.src_rec.unsqueeze(1) == ar[:S].view(1, S, 1)) & valid.unsqueeze(1)
        member[:, 0] = False  # the null record owns no tokens
        # f(r_k): max-pool over the word embeddings of r_k (paper, after eq. 3); (B, S, E)
        pooled = x.unsqueeze(1).masked_fill(~member.unsqueeze(3), NEG).max(2).values
        has_tok = member.any(2)  # (B, S)
        f = torch.where(has_tok.unsqueeze(2), pooled, torch.zeros_like(pooled))
        f = torch.cat([self.f_null.expand(f.size(0), 1, -1), f[:, 1:]], dim=1)
        return member, has_tok, f

    def encode(self, batch: Batch, training: bool = False) -> SegEncoding:
        """What the decoder reads from ``batch``. ``training`` (:meth:`objective`): the batch's host
        lengths (no device synchronisation) and no per-record token positions (decoding only)."""
        x, h, state0 = self.encoder(batch.src, batch.src_len, batch.host_src_len if training else None)
        member, has_tok, f = self._records(batch, x)
        rec_idx = rec_valid = None
        if not training:  # token positions of every record, for O(N_k) attention when decoding: (B, S, R)
            R = max(1, int(member.sum(2).max()))
            order = member.long().argsort(dim=2, descending=True, stable=True)[:, :, :R]
            rec_valid = member.gather(2, order)
            rec_idx = order * rec_valid
        return SegEncoding(
            h=h, key=self.att(h), vproj=self.out_a(h), f=f, member=member, has_tok=has_tok, rec_mask=batch.rec_mask,
            src_ext=batch.src_ext, state0=state0, rec_idx=rec_idx, rec_valid=rec_valid,
        )  # fmt: skip

    def attention(self, enc: SegEncoding, d: torch.Tensor) -> torch.Tensor:
        """Record-masked attention (paper §4, "Generation Probability").

        ``d (B, T, H)`` -> ``alpha (B, T, S, N)``: a softmax over the tokens of record k only,
        exactly 0 elsewhere; all zeros for the null record (its context is the zero vector).
        """
        scores = torch.einsum("bth,bnh->btn", d, enc.key).unsqueeze(2)  # (B, T, 1, N)
        scores = scores.masked_fill(~enc.member.unsqueeze(1), NEG)  # (B, T, S, N)
        alpha = torch.softmax(scores, dim=3)
        return alpha * enc.has_tok.view(alpha.size(0), 1, -1, 1)

    def generation(self, enc: SegEncoding, d: torch.Tensor):
        """Pointer-generator head for every ``(t, k)``.

        ``d (B, T, H)`` -> ``log p_vocab (B, T, S, V)``, ``logit p_gen (B, T, S)``,
        ``alpha (B, T, S, N)``, ``A (B, T, S, H)``. ``p_vocab = softmax(W1 d_t + W2 A_t^k)``
        with ``W2 A_t^k = sum_i alpha_{t,i} W2 h_i``; ``p_gen = sigma(MLP([d_t; A_t^k]))``, 1 for
        the null record.
        """
        B, T, _ = d.shape
        alpha = self.attention(enc, d)  # (B, T, S, N)
        S, N = alpha.size(2), alpha.size(3)
        flat = alpha.reshape(B, T * S, N)
        A = torch.bmm(flat, enc.h).view(B, T, S, -1)  # (B, T, S, H)
        logits = torch.bmm(flat, enc.vproj).view(B, T, S, -1) + self.out_d(d).unsqueeze(2)  # (B, T, S, V)
        log_pv = torch.log_softmax(logits, dim=3)
        logit_gen = self.gen(torch.cat([d.unsqueeze(2).expand(-1, -1, S, -1), A], dim=3)).squeeze(3)
        logit_gen = logit_gen.masked_fill(~enc.has_tok.unsqueeze(1), 50.0)  # p_gen = 1 for r_0
        return log_pv, logit_gen, alpha, A

    def transition(self, enc: SegEncoding, A: torch.Tensor, d_next: torch.Tensor) -> torch.Tensor:
        """log p(c(s_o) = j | c(s_{o-1}) = q, y_<=t) = log_softmax_j f(r_j)^T (M A_t^q + N d_{t+1})  (eq. 3).

        ``A (B, T, S_q, H)`` the context of token t under each previous record q, ``d_next
        (B, T, H)`` the decoder state that reads the next token -> ``(B, T, S_q, S_j)``, with
        self-transitions (``j = q``, also for ``r_0``) and padded records masked.
        """
        B, T, S, _ = A.shape
        u = self.trans_a(A) + self.trans_d(d_next).unsqueeze(2)  # (B, T, S_q, E)
        scores = torch.bmm(u.view(B, T * S, -1), enc.f.transpose(1, 2)).view(B, T, S, S)
        mask = ~enc.rec_mask.view(B, 1, 1, S) | torch.eye(S, dtype=torch.bool, device=A.device)
        return torch.log_softmax(scores.masked_fill(mask, NEG), dim=-1)

    def transition_step(
        self, enc: SegEncoding, A: torch.Tensor, d_next: torch.Tensor, q: torch.Tensor
    ) -> torch.Tensor:
        """Eq. 3 for one boundary per hypothesis: ``A (M, H)``, ``d_next (M, H)``, ``q (M,)`` ->
        ``(M, S)`` log-probabilities of the next record (``q`` itself and padding masked)."""
        u = self.trans_a(A) + self.trans_d(d_next)  # (M, E)
        if enc.f.size(0) == 1:  # one input, M hypotheses: O(M·S) scores, no copies of enc
            scores = u @ enc.f[0].t()
        else:
            scores = torch.einsum("me,mse->ms", u, enc.f)
        mask = ~enc.rec_mask | F.one_hot(q, enc.f.size(1)).bool()
        return torch.log_softmax(scores.masked_fill(mask, NEG), dim=1)

    def initial(self, enc: SegEncoding, d0: torch.Tensor) -> torch.Tensor:
        """Start distribution over records, from the start state (A = 0): ``(B, S)``."""
        u = self.trans_d(d0)  # (B, E)
        scores = u @ enc.f[0].t() if enc.f.size(0) == 1 else torch.einsum("be,bse->bs", u, enc.f)
        return torch.log_softmax(scores.masked_fill(~enc.rec_mask, NEG), dim=1)

    # ----- training ------------------------------------------------------------------------
    def decode_states(self, enc: SegEncoding, tgt_in: torch.Tensor) -> torch.Tensor:
        """``d_t = LSTM(emb(y_{t-1}), d_{t-1})`` for all t: ``(B, T) -> (B, T, H)``."""
        h0, c0 = enc.state0
        d, _ = self.decoder(
            self.drop(self.dec_emb(tgt_in)), (h0.unsqueeze(0).contiguous(), c0.unsqueeze(0).contiguous())
        )
        return self.drop(d)

    def potentials(self, batch: Batch, enc: SegEncoding | None = None) -> SegPotentials:
        """All potentials of the forward algorithm in one batched pass."""
        enc = enc if enc is not None else self.encode(batch)
        d = self.decode_states(enc, batch.tgt_in)  # (B, T, H)
        B, T, _ = d.shape
        log_pv, logit_gen, alpha, A = self.generation(enc, d)
        S, V = log_pv.size(2), log_pv.size(3)
        # emission g[b, t, k] = log p(y_t | y_<t, r_k)
        y = batch.tgt  # (B, T) extended ids
        in_vocab = y < V
        log_pv_y = log_pv.gather(3, y.clamp(max=V - 1).view(B, T, 1, 1).expand(B, T, S, 1)).squeeze(3)
        log_pv_y = log_pv_y.masked_fill(~in_vocab.unsqueeze(2), NEG)
        match = (enc.src_ext.unsqueeze(1) == y.unsqueeze(2)).to(alpha.dtype)  # (B, T, N)
        copy_y = torch.einsum("btsn,btn->bts", alpha, match)
        log_emit = mixture_logprob(log_pv_y, logit_gen, copy_y)
        # end of segment e[b, t, k] = log p($ | y_<=t, r_k), read from position t + 1
        log_eos = F.logsigmoid(logit_gen) + log_pv[..., EOSEG_ID]  # (B, T, S)
        log_end = torch.cat([log_eos[:, 1:], log_eos.new_zeros(B, 1, S)], dim=1)
        last = torch.arange(T, device=d.device).unsqueeze(0) == (batch.tgt_len - 1).unsqueeze(1)  # (B, T)
        log_end = log_end.masked_fill(last.unsqueeze(2), 0.0)  # the segment holding <eos> ends
        # padded records can never be chosen
        pad = ~batch.rec_mask.unsqueeze(1)
        log_emit = log_emit.masked_fill(pad, NEG)
        # transitions after token t read A_t^q and d_{t+1}
        d_next = torch.cat([d[:, 1:], d.new_zeros(B, 1, d.size(2))], dim=1)  # (B, T, H)
        log_trans = self.transition(enc, A, d_next)  # (B, T, S, S)
        log_init = self.initial(enc, d[:, 0])
        return SegPotentials(log_init, log_trans, log_emit, log_end, alpha)

    def loss_reference(self, batch: Batch) -> tuple[torch.Tensor, dict]:
        """Eq. 6 through :meth:`potentials` (every tensor of the first formulation materialised):
        the reference that :meth:`loss` is tested against."""
        pot = self.potentials(batch)
        res = dp.forward(
            pot.log_init, pot.log_trans, pot.log_emit, pot.log_end, batch.tgt_len, self.cfg.max_seg_len, ban=batch.forbid
        )  # ban: train --anchor (segviz.anchor)
        return _host_stats(*self._finish(batch, -res.log_z, res.expected_segments))

    def _finish(self, batch: Batch, nll: torch.Tensor, exp_seg: torch.Tensor):
        K = batch.n_rec.to(nll.dtype)
        reg = torch.clamp((exp_seg - K).abs(), min=self.cfg.reg_gamma)
        loss = (nll + self.cfg.reg_weight * reg).mean()
        stats = {
            "nll": nll.detach().sum(),
            "tokens": batch.tgt_len.sum(),
            "exp_seg": exp_seg.detach().mean(),
            "K": K.mean(),
            "n": batch.size,
        }
        return loss, stats

    def objective(self, batch: Batch) -> tuple[torch.Tensor, dict]:
        """Paper eq. 6: ``-log p(y|X) + w max(|E[#seg] - K|, gamma)``, averaged over examples.

        Returns the loss and stats as 0-dim tensors (no host synchronisation): summed ``nll``,
        ``tokens``, mean ``exp_seg`` and ``K``, and ``n``. The same quantity as
        :meth:`loss_reference`, computed for training:

        - the context ``A_t^k`` (``B·T·S·H``) is never materialised: it enters the model only
          linearly (``W2 A``, ``MLP_g``, ``M A`` in eq. 3), so those products are taken against
          the ``N`` token states once (``h W``) and mixed by the attention weights afterwards;
        - the vocabulary softmax of every ``(t, k)`` is one fused pass
          (:class:`_PickLogSoftmax`): the ``B·T·S·V`` logits are written once and only the log
          probabilities of ``y_t`` and ``$`` are read out;
        - the dynamic program runs in float32 at least (float64 stays float64).
        """
        enc = self.encode(batch, training=True)
        h, f, has_tok = enc.h, enc.f, enc.has_tok
        d = self.decode_states(enc, batch.tgt_in)  # (B, T, H)
        B, T, H = d.shape
        S, V = f.size(1), self.cfg.vocab_size
        alpha = self.attention(enc, d)  # (B, T, S, N)
        flat = alpha.reshape(B, T * S, -1)
        y = batch.tgt
        ids = torch.stack([y.clamp(max=V - 1), torch.full_like(y, EOSEG_ID)], dim=2)  # (B, T, 2)
        picked = _PickLogSoftmax.apply(flat, enc.vproj, self.out_d(d), ids)  # (B, T, S, 2)
        # h-side products: [MLP_g's A-half, (f_j M) for every j] -> (B, N, 1 + S), mixed by alpha
        w_d, w_a = self.gen.weight[0, :H], self.gen.weight[0, H:]
        g_a = f @ self.trans_a.weight  # (B, S, H): f_j^T M
        g_d = f @ self.trans_d.weight  # (B, S, H): f_j^T N
        hx = torch.cat([(h @ w_a).unsqueeze(2), torch.bmm(h, g_a.transpose(1, 2))], dim=2)
        ax = torch.bmm(flat, hx.to(flat.dtype)).view(B, T, S, S + 1)
        logit_gen = ((d @ w_d).unsqueeze(2) + ax[..., 0] + self.gen.bias).masked_fill(
            ~has_tok.unsqueeze(1), 50.0
        )
        dscore = torch.bmm(d, g_d.transpose(1, 2))  # (B, T, S): f_j^T N d_t
        # everything below is the dynamic program's input: float32 at least
        ft = torch.promote_types(flat.dtype, torch.float32)
        picked, logit_gen, ax, dscore, alpha = (t.to(ft) for t in (picked, logit_gen, ax, dscore, alpha))
        in_vocab = y < V
        log_pv_y = picked[..., 0].masked_fill(~in_vocab.unsqueeze(2), NEG)
        match = (enc.src_ext.unsqueeze(1) == y.unsqueeze(2)).to(ft)  # (B, T, N)
        copy_y = torch.einsum("btsn,btn->bts", alpha, match)
        log_emit = mixture_logprob(log_pv_y, logit_gen, copy_y).masked_fill(~batch.rec_mask.unsqueeze(1), NEG)
        log_eos = F.logsigmoid(logit_gen) + picked[..., 1]  # (B, T, S)
        log_end = torch.cat([log_eos[:, 1:], log_eos.new_zeros(B, 1, S)], dim=1)
        last = torch.arange(T, device=d.device).unsqueeze(0) == (batch.tgt_len - 1).unsqueeze(1)
        log_end = log_end.masked_fill(last.unsqueeze(2), 0.0)
        # eq. 3 after token t: f_j^T (M A_t^q + N d_{t+1}); initial: f_j^T N d_0
        dnext = torch.cat([dscore[:, 1:], dscore.new_zeros(B, 1, S)], dim=1)
        scores = ax[..., 1:] + dnext.unsqueeze(2)  # (B, T, S_q, S_j)
        mask = ~batch.rec_mask.view(B, 1, 1, S) | torch.eye(S, dtype=torch.bool, device=d.device)
        log_trans = torch.log_softmax(scores.masked_fill(mask, NEG), dim=-1)
        log_init = torch.log_softmax(dscore[:, 0].masked_fill(~batch.rec_mask, NEG), dim=1)
        with torch.autocast(d.device.type, enabled=False):  # --amp: the networks only, never the DP
            res = dp.forward(log_init, log_trans, log_emit, log_end, batch.tgt_len, self.cfg.max_seg_len, ban=batch.forbid)
        return self._finish(batch, -res.log_z, res.expected_segments)

    # ----- single steps (decoding) ------------------------------------------------------------
    def step(self, y_prev: torch.Tensor, state):
        """One decoder step: ``y_prev (M,)`` vocab ids -> ``d (M, H)``, new state."""
        r = self.decoder  # the same weights as the batched nn.LSTM, as one fused cell step
        h, c = torch.lstm_cell(
            self.dec_emb(y_prev), state, r.weight_ih_l0, r.weight_hh_l0, r.bias_ih_l0, r.bias_hh_l0
        )
        return h, (h, c)

    def attend_record(
        self, enc: SegEncoding, d: torch.Tensor, k: torch.Tensor, b: torch.Tensor | None = None
    ):
        """Attention over the tokens of record ``k`` only (scores + context): O(N_k) per step.

        ``d (M, H)``, ``k (M,)``, ``b (M,)`` the input of each row (default: input 0).
        Returns source positions ``pos (M, R)``, weights ``a (M, R)`` (zero on padding and for
        ``r_0``) and the context ``A (M, H)`` (zero for ``r_0``). With one row, ``R = N_k``.
        """
        t = enc.tables
        if _one_row(d, b):
            one = t.one[int(k)]
            if one is None:  # r_0: no attention, zero context
                return t.pos[0, :1, :0], d.new_zeros(1, 0), torch.zeros_like(d)
            keyT, h, _, _, pos = one
            a = torch.softmax(torch.mm(d, keyT), dim=1)  # (1, N_k)
            return pos, a, torch.mm(a, h)
        b = torch.zeros_like(k) if b is None else b
        scores = torch.bmm(t.key[b, k], d.unsqueeze(2)).squeeze(2) + t.bias[b, k]  # (M, R)
        a = torch.softmax(scores, dim=1) * t.valid[b, k]
        return t.pos[b, k], a, torch.bmm(a.unsqueeze(1), t.h[b, k]).squeeze(1)

    def token_dist(
        self, enc: SegEncoding, d: torch.Tensor, k: torch.Tensor, n_oov: int, b: torch.Tensor | None = None
    ):
        """Next-word distribution under record ``k`` only, for decoding: cost O(N_k) attention.

        ``d (M, H)``, ``k (M,)`` (``b (M,)``: input of each row, default 0) -> ``log p (M, V +
        n_oov)`` over the extended vocabulary (``$`` included), the record's attention ``pos,
        a (M, R)`` (see :meth:`attend_record`) and the context ``A (M, H)``. Equal to
        :meth:`generation` at ``k``: ``p_vocab = softmax(W1 d + sum_i a_i W2 h_i)``.
        """
        t = enc.tables
        pos, a, A = self.attend_record(enc, d, k, b)
        logits = self.out_d(d)
        if a.size(1) == 0:  # r_0 alone: p_gen = 1, nothing to copy
            logp = torch.log_softmax(logits, dim=1)
            return (F.pad(logp, (0, n_oov), value=math.log(1e-30)) if n_oov else logp), pos, a, A
        if _one_row(d, b):
            _, _, vproj, ext, _ = t.one[int(k)]
            logits = torch.addmm(logits, a, vproj)  # W1 d + W2 A
            logit_gen = self.gen(torch.cat([d, A], dim=1)).squeeze(1)
        else:
            b = torch.zeros_like(k) if b is None else b
            logits = logits + torch.bmm(a.unsqueeze(1), t.vproj[b, k]).squeeze(1)
            logit_gen = (
                self.gen(torch.cat([d, A], dim=1)).squeeze(1).masked_fill(~t.any[b, k], 50.0)
            )  # p_gen = 1 for r_0
            ext = t.ext[b, k]
        return extended_scatter(torch.softmax(logits, dim=1), logit_gen, a, ext, n_oov), pos, a, A

    def full_attention(self, enc: SegEncoding, pos: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        """Record-local weights ``pos, a (R,)`` of input 0 -> a row over all source tokens ``(N,)``."""
        return torch.zeros(enc.h.size(1), dtype=a.dtype, device=a.device).index_add_(0, pos, a)
