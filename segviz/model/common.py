"""What both models share (docs/design.md §1): the :class:`ModelConfig`, the :class:`Encoder`
(a Bi-LSTM over the flattened record tokens), the pointer-generator mixture and the base
:class:`EncoderDecoder`. Letters as in :mod:`segviz.model`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from segviz import dp

NEG = dp.NEG


@dataclass(frozen=True)
class ModelConfig:
    """Sizes and loss settings; stored in every checkpoint."""

    kind: str = "seg"  # "seg" (segment model) or "pg" (pointer-generator baseline)
    vocab_size: int = 1000  # V, set from the vocabulary
    emb_dim: int = 100  # E, word embeddings (paper: 100)
    hidden: int = 256  # H, decoder size; the Bi-LSTM encoder has H/2 per direction (paper: 512 E2E)
    dropout: float = 0.3  # on embeddings and LSTM outputs (paper: 0.3)
    max_seg_len: int = 8  # L, longest segment in tokens ("customer rating of 5 out of 5" is 7)
    reg_weight: float = 5.0  # w, weight of the granularity regulariser (eq. 6); 0 disables it.
    # The paper's eq. 6 has weight 1 on a per-text NLL; with our sizes that let E[#seg] drift
    # more than 1 above K early in training and on WebNLG, so the default is 5.
    reg_gamma: float = 1.0  # gamma, tolerance of |E[#seg] - eta| (paper: 1), eta = K

    @classmethod
    def from_json(cls, d: dict) -> ModelConfig:
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"unknown model config fields: {sorted(unknown)}")
        return cls(**d)

    def to_json(self) -> dict:
        return asdict(self)


class Dropout(nn.Dropout):
    """:class:`torch.nn.Dropout` with its mask drawn from ``uniform_`` (vectorised) instead of
    ``bernoulli_``, about twice as fast on the CPU; the same distribution, identity in eval mode."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0.0:
            return x
        if self.p >= 1.0:
            return x * 0.0
        keep = torch.empty_like(x).uniform_().ge_(self.p).mul_(1.0 / (1.0 - self.p))
        return x * keep


class Encoder(nn.Module):
    """Embeddings + Bi-LSTM over the record tokens: ``h_i`` for every source token."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.emb = nn.Embedding(cfg.vocab_size, cfg.emb_dim, padding_idx=0)
        self.rnn = nn.LSTM(cfg.emb_dim, cfg.hidden // 2, batch_first=True, bidirectional=True)
        self.drop = Dropout(cfg.dropout)
        self.init_h = nn.Linear(cfg.hidden, cfg.hidden)
        self.init_c = nn.Linear(cfg.hidden, cfg.hidden)

    def forward(self, src: torch.Tensor, src_len: torch.Tensor, host_len: torch.Tensor | None = None):
        """``src (B, N)`` -> ``x (B, N, E)`` embeddings, ``h (B, N, H)``, decoder init ``(h0, c0)``
        each ``(B, H)`` from the mean of ``h`` over the valid tokens."""
        x = self.drop(self.emb(src))  # (B, N, E)
        lengths = (
            (host_len if host_len is not None else src_len).clamp(min=1).cpu()
        )  # host_len: no device sync
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed)
        h, _ = pad_packed_sequence(out, batch_first=True, total_length=src.size(1))  # (B, N, H)
        valid = (torch.arange(src.size(1), device=src.device) < src_len.unsqueeze(1)).unsqueeze(
            2
        )  # (B, N, 1)
        mean = (h * valid).sum(1) / valid.sum(1).clamp(min=1)  # (B, H)
        h = self.drop(h)
        return x, h, (torch.tanh(self.init_h(mean)), torch.tanh(self.init_c(mean)))


def extended_scatter(
    p_vocab: torch.Tensor, logit_gen: torch.Tensor, alpha: torch.Tensor, src_ext: torch.Tensor, n_oov: int
) -> torch.Tensor:
    """Pointer-generator mixture over the extended vocabulary (See et al., 2017).

    ``p(w) = p_gen p_vocab(w) + (1 - p_gen) sum_{i: x_i = w} alpha_i``

    p_vocab (M, V) probabilities, logit_gen (M,), alpha (M, N) weights on the source positions
    ``src_ext (M, N)`` (all of them, or only those of one record) -> log p (M, V + n_oov)
    """
    p_gen = torch.sigmoid(logit_gen).unsqueeze(1)  # (M, 1)
    p = p_vocab * p_gen
    if n_oov:
        p = F.pad(p, (0, n_oov))
    p.scatter_add_(1, src_ext, (1 - p_gen) * alpha)
    return p.clamp_min_(1e-30).log_()


def mixture_logprob(log_pv_y: torch.Tensor, logit_gen: torch.Tensor, copy_y: torch.Tensor) -> torch.Tensor:
    """``log(p_gen p_vocab(y) + (1 - p_gen) copy(y))`` computed stably for gold words ``y``.

    All arguments share one shape; ``copy_y`` is the attention mass on source copies of ``y``.
    """
    return torch.logaddexp(
        F.logsigmoid(logit_gen) + log_pv_y, F.logsigmoid(-logit_gen) + copy_y.clamp_min(1e-30).log()
    )


def _host_stats(loss: torch.Tensor, stats: dict) -> tuple[torch.Tensor, dict]:
    """Stats of :meth:`objective` as Python numbers (one host synchronisation)."""
    return loss, {k: (int(v) if k in ("tokens", "n") else float(v)) for k, v in stats.items()}


class EncoderDecoder(nn.Module):
    """What both models are built from: the config, the :class:`Encoder`, the target word
    embeddings (``E``) and the :class:`Dropout` on embeddings and LSTM outputs."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg)
        self.dec_emb = nn.Embedding(cfg.vocab_size, cfg.emb_dim, padding_idx=0)
        self.drop = Dropout(cfg.dropout)

    def loss(self, batch) -> tuple[torch.Tensor, dict]:
        """:meth:`objective` with the stats as Python numbers."""
        return _host_stats(*self.objective(batch))
