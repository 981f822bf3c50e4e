"""The exact posterior over segmentations and alignments of a given text (forward-backward).

For a text ``y`` and input records ``X``, the segment model defines a distribution over every
segmentation of ``y`` and every record assignment of its segments; :func:`segviz.dp.forward`
sums it exactly (``log Z = log p(y | X)``). Its gradients are the posterior marginals
(docs/design.md §1): every potential enters the score of a path at most once, so

- ``d log Z / d log_emit[t, j]`` = P(token ``t`` lies in a segment of state ``j`` | y, X)
  (``log_emit[t, j]`` is part of every segment of state ``j`` that covers ``t``), and
- ``d log Z / d log_end[t, j]`` = P(a segment of state ``j`` ends right after token ``t`` | y, X).

So one backward pass through the forward algorithm is the backward recursion. State 0 is the
null record, states 1..K the input records. Unlike attention (where the decoder looked while
writing one word), these are probabilities of *which record the text realises*, given the whole
text: rows sum to 1, and they can be computed for any text, whoever wrote it.

Pure tensor code in :func:`marginals`; :func:`text_posterior` runs a
:class:`~segviz.model.SegmentModel` on one text (``model.potentials``) and returns plain lists.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from segviz import dp

__all__ = ["Marginals", "marginals", "TextPosterior", "text_posterior", "TokenExplanation", "token_explanation"]


@dataclass
class Marginals:
    """Posterior marginals of a batch; positions at or after an example's length are 0."""

    state: torch.Tensor  # (B, T, S) P(token t lies in a segment of state j)
    start: torch.Tensor  # (B, T)    P(a segment starts at token t); 1 at t = 0
    end: torch.Tensor  # (B, T, S)   P(a segment of state j ends right after token t)
    log_z: torch.Tensor  # (B,)      log p(y | X)


def marginals(pot: dp.Potentials, lengths: torch.Tensor, L: int) -> Marginals:
    """Posterior marginals from the gradient of ``log Z`` (shapes as in :mod:`segviz.dp`).

    Runs in float64 on detached copies, so it never touches a model's graph and works under
    ``torch.no_grad()`` callers."""
    with torch.enable_grad():
        pots = [p.detach().to(torch.float64) for p in pot]
        emit, end = pots[2].requires_grad_(True), pots[3].requires_grad_(True)
        log_z = dp.forward(pots[0], pots[1], emit, end, lengths, L).log_z
        g_emit, g_end = torch.autograd.grad(log_z.sum(), (emit, end))
    B, T, _ = g_emit.shape
    valid = torch.arange(T, device=g_emit.device).unsqueeze(0) < lengths.to(g_emit.device).unsqueeze(1)  # (B, T)
    state = g_emit * valid.unsqueeze(2)
    end_m = g_end * valid.unsqueeze(2)
    start = torch.cat([torch.ones_like(state[:, :1, 0]), end_m[:, :-1].sum(2)], dim=1) * valid
    return Marginals(state.clamp(0.0, 1.0), start.clamp(0.0, 1.0), end_m.clamp(0.0, 1.0), log_z.detach())


@dataclass
class TextPosterior:
    """The posterior of one tokenised text under one input (plain lists, JSON-friendly).

    ``probs[t][j]``: P(token ``t`` lies in a segment of state ``j``), ``j = 0`` null, ``1..K``
    the records (each row sums to 1); ``start[t]``: P(a new segment starts at token ``t``);
    ``viterbi``: the most probable segmentation ``(start, end, record 1..K | None)``;
    ``log_prob``: ``log p(text | records)`` summed over all segmentations (``<eos>`` included).
    """

    tokens: list[str]
    states: list[str]  # "null", then the record labels
    probs: list[list[float]]
    start: list[float]
    viterbi: list[tuple[int, int, int | None]]
    log_prob: float
    elapsed_ms: float = 0.0

    def argmax(self) -> list[int]:
        """The most probable state of every token (its own marginal, not the Viterbi path)."""
        return [max(range(len(row)), key=row.__getitem__) for row in self.probs]


@torch.no_grad()
def text_posterior(model, vocab, records, tokens: list[str]) -> TextPosterior:
    """The segment model's exact posterior for ``tokens`` (lower-case, as :func:`segviz.records.tokenize`
    gives them) under ``records``. The ``<eos>`` the model reads after the text belongs to the last
    segment and is dropped from the rows."""
    from segviz.data import collate, encode  # the model side (pure tensors above)

    t0 = time.perf_counter()
    states = ["null"] + [r.label for r in records]
    if not tokens:
        return TextPosterior([], states, [], [], [], 0.0)
    model.eval()
    batch = collate([encode(vocab, records, list(tokens))], len(vocab))
    pot = model.potentials(batch)
    L = model.cfg.max_seg_len
    m = marginals(pot.chain, batch.tgt_len, L)
    _, paths = dp.viterbi(pot.chain, batch.tgt_len, L)
    T = len(tokens)
    viterbi = [(s, min(e, T), j if j > 0 else None) for s, e, j in paths[0] if min(e, T) > s]
    probs = m.state[0, :T, : len(states)]
    probs = probs / probs.sum(1, keepdim=True).clamp_min(1e-12)  # exact up to float rounding
    return TextPosterior(
        tokens=list(tokens),
        states=states,
        probs=probs.tolist(),
        start=m.start[0, :T].tolist(),
        viterbi=viterbi,
        log_prob=float(m.log_z[0]),
        elapsed_ms=(time.perf_counter() - t0) * 1000,
    )


@dataclass
class TokenExplanation:
    """Why the segment model wrote token ``t`` under record ``record`` (0 = null): its
    probability split into generating from the vocabulary and copying from the record's tokens,
    its log-probability, and the most probable words at that point (the model's own
    distribution, before any decoding rule)."""

    t: int
    token: str
    record: int
    p_generate: float  # p_gen, the weight of the vocabulary distribution (1 for the null record)
    p_from_vocab: float  # p_gen * p_vocab(token)
    p_from_copy: float  # (1 - p_gen) * attention on the record's copies of the token
    log_prob: float  # log p(token | y_<t, record)
    top: list[tuple[str, float]]  # the 5 most probable words, with their probabilities


@torch.no_grad()
def token_explanation(model, vocab, records, tokens: list[str], t: int, record: int, top: int = 5) -> TokenExplanation:
    """:class:`TokenExplanation` of ``tokens[t]`` under record ``record`` (1..K, 0 = null)."""
    from segviz.data import collate, encode
    from segviz.model import extended_scatter

    if not 0 <= t < len(tokens):
        raise IndexError(f"token {t} is outside the text (0..{len(tokens) - 1})")
    model.eval()
    ex = encode(vocab, records, list(tokens))
    batch = collate([ex], len(vocab))
    enc = model.encode(batch)
    d = model.decode_states(enc, batch.tgt_in)[:, t : t + 1]  # (1, 1, H)
    log_pv, logit_gen, alpha, _ = model.generation(enc, d)
    k = record
    pv, lg, al = log_pv[0, 0, k].exp().unsqueeze(0), logit_gen[0, 0, k].view(1), alpha[0, 0, k].unsqueeze(0)
    logp = extended_scatter(pv, lg, al, batch.src_ext[:1], len(ex.oov))[0]  # (V + n_oov,)
    y = int(batch.tgt[0, t])
    p_gen = float(torch.sigmoid(lg)[0])
    in_vocab = y < len(vocab)
    from_vocab = p_gen * float(pv[0, y]) if in_vocab else 0.0
    from_copy = (1 - p_gen) * float(al[0][batch.src_ext[0] == y].sum())
    words = vocab.itos + ex.oov
    best = torch.topk(logp.exp(), min(top, logp.numel()))
    return TokenExplanation(
        t=t, token=tokens[t], record=k, p_generate=p_gen, p_from_vocab=from_vocab, p_from_copy=from_copy,
        log_prob=float(logp[y]), top=[(words[int(i)], float(p)) for p, i in zip(best.values, best.indices, strict=True)],
    )
