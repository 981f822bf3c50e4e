"""Exact dynamic programs over segmentations and alignments (paper §4, eq. 5).

Pure tensor code: sees only potentials, imports nothing of segviz.

Notation (docs/design.md §1): ``B`` examples, ``T`` target tokens, ``S = K + 1`` states (record 0 is the
null record), ``L`` the maximum segment length. Tokens are 0-based here: token ``t`` is
``y_{t+1}`` of the paper. Potentials, all log-probabilities:

- ``log_init  (B, S)``       log p(c(s_1) = j)                       (start state, A = 0)
- ``log_trans (B, T, S, S)`` ``[b, t, q, j]`` = log p(c(s_{o+1}) = j | c(s_o) = q, y_<=t)
  for a boundary right after token ``t``                              (eq. 3)
- ``log_emit  (B, T, S)``    ``[b, t, j]`` = log p(y_t | y_<t, r_j)   (generation probability)
- ``log_end   (B, T, S)``    ``[b, t, j]`` = log p($ | y_<=t, r_j)    (end of segment)

The score of a segment covering tokens ``p .. i-1`` (``p < i``, ``i - p <= L``) realising record
``j`` is ``C[i, j] - C[p, j] + log_end[i-1, j]`` with ``C = cumsum(log_emit)`` (``C[0] = 0``).

Forward, log space (eq. 5), with ``i`` and ``p`` counting consumed tokens:

    beta[0, j]  = log_init[j]
    alpha[i, j] = logsumexp_{l=1..min(L,i)} beta[i-l, j] + S(i-l .. i-1, j)
    beta[p, j]  = logsumexp_q alpha[p, q] + log_trans[p-1, q, j]
    log p(y | X) = logsumexp_j alpha[T, j]

Impossible entries should be ``NEG`` (a finite log-zero) rather than ``-inf``, so that
``-inf - -inf`` never reaches the gradients.

The expected number of segments (paper eq. 6, ``E[tau_s]``) is computed alongside the forward
pass with the expectation semiring: ``mu[i, j]`` is the expected number of segments of a path
ending with a segment in state ``j`` at ``i``, given that event; a test proves it equal to
``d log Z / d lambda`` where ``lambda`` is added to every segment score.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

NEG = -1e9  # finite log-zero

__all__ = ["NEG", "Potentials", "forward", "viterbi", "ForwardResult", "Segment", "segment_score_table", "segment_windows"]


class Potentials(NamedTuple):
    """The four potentials of one batch (shapes above), in the order :func:`forward` takes them."""

    log_init: torch.Tensor  # (B, S)
    log_trans: torch.Tensor  # (B, T, S, S)
    log_emit: torch.Tensor  # (B, T, S)
    log_end: torch.Tensor  # (B, T, S)


@dataclass
class ForwardResult:
    log_z: torch.Tensor  # (B,) log p(y | X)
    expected_segments: torch.Tensor  # (B,) E[#segments | y, X]


Segment = tuple[int, int, int]  # (start, end, state): tokens start..end-1 realise state


def segment_score_table(log_emit: torch.Tensor) -> torch.Tensor:
    """``C = cumsum(log_emit)`` with a leading zero row: ``(B, T, S) -> (B, T+1, S)``."""
    B, T, S = log_emit.shape
    zero = log_emit.new_zeros(B, 1, S)
    return torch.cat([zero, log_emit.cumsum(1)], dim=1)


def segment_windows(
    log_emit: torch.Tensor, log_end: torch.Tensor, L: int, lam: torch.Tensor | float = 0.0, ban: torch.Tensor | None = None
) -> torch.Tensor:
    """Scores of every segment, ``(B, T, L', S)`` with ``L' = min(L, T)``: ``[b, i-1, l-1, j]`` is
    the segment of the ``l`` tokens ``i-l .. i-1`` in state ``j`` (``C[i] - C[i-l] + log_end[i-1]
    + lam``); entries with ``l > i`` are 0 and never read. One pass before the recursion.
    ``ban (B, T, S)`` bool: a segment of ``j`` holding a token banned under ``j`` scores ``NEG``
    (counted apart: a ``NEG`` inside ``C`` would cost the other windows their precision)."""
    B, T, S = log_emit.shape
    C = segment_score_table(log_emit)  # (B, T+1, S)
    Cb = None if ban is None else segment_score_table(ban.to(torch.int32))  # banned tokens so far, exact
    rows = []
    for n in range(1, min(L, T) + 1):
        diff = C[:, n:] - C[:, :-n]  # segments of n tokens ending at i = n .. T
        if Cb is not None:
            diff = diff.masked_fill(Cb[:, n:] - Cb[:, :-n] > 0, NEG)
        rows.append(torch.cat([diff.new_zeros(B, n - 1, S), diff], dim=1) if n > 1 else diff)
    lam = torch.as_tensor(lam, dtype=log_emit.dtype, device=log_emit.device)
    lam = lam.reshape(-1, 1, 1, 1) if lam.dim() else lam
    return torch.stack(rows, dim=2) + log_end.unsqueeze(2) + lam


def forward(
    log_init: torch.Tensor,
    log_trans: torch.Tensor,
    log_emit: torch.Tensor,
    log_end: torch.Tensor,
    lengths: torch.Tensor,
    L: int,
    lam: torch.Tensor | float = 0.0,
    ban: torch.Tensor | None = None,
) -> ForwardResult:
    """Log-space forward algorithm (eq. 5) and expected #segments, batched.

    ``lengths (B,)`` are the target lengths; ``alpha`` is read at each example's own length,
    so padding after it never matters. ``lam`` (scalar or ``(B,)``) is added to every segment
    score; its derivative of ``log_z`` is the expected number of segments (tests use this).
    ``ban (B, T, S)`` bool: the sum leaves out every path with a token in a state that bans it
    (``train --anchor``, :mod:`segviz.anchor`; :func:`segment_windows`).
    Cost ``O(T·L·S + T·S²)`` per example.
    """
    B, T, S = log_emit.shape
    seg_rows = segment_windows(log_emit, log_end, L, lam, ban).unbind(1)  # T x (B, L', S)
    trans = log_trans.unbind(1)  # T x (B, S, S): one backward node, no zero-filled slice gradients
    betas = [log_init]  # beta[p], (B, S)
    nus = [torch.zeros_like(log_init)]  # E[#segments before p | beta[p, j]]
    alphas: list[torch.Tensor] = []  # alpha[i] for i = 1..T
    mus: list[torch.Tensor] = []
    for i in range(1, T + 1):
        lo = max(0, i - L)
        x = torch.stack(betas[lo:i][::-1], dim=1) + seg_rows[i - 1][:, : i - lo]  # (B, l, S), l = 1 .. i - lo
        alpha = torch.logsumexp(x, dim=1)  # (B, S)
        mu = (torch.softmax(x, dim=1) * (torch.stack(nus[lo:i][::-1], dim=1) + 1.0)).sum(1)  # (B, S)
        alphas.append(alpha)
        mus.append(mu)
        if i < T:
            y = alpha.unsqueeze(2) + trans[i - 1]  # (B, S_q, S_j)
            betas.append(torch.logsumexp(y, dim=1))
            nus.append(torch.bmm(mu.unsqueeze(1), torch.softmax(y, dim=1)).squeeze(1))
    alpha_all = torch.stack(alphas, dim=1)  # (B, T, S)
    mu_all = torch.stack(mus, dim=1)
    idx = (lengths - 1).clamp(min=0).view(B, 1, 1).expand(B, 1, S)
    alpha_T = alpha_all.gather(1, idx).squeeze(1)  # (B, S)
    mu_T = mu_all.gather(1, idx).squeeze(1)
    log_z = torch.logsumexp(alpha_T, dim=1)
    expected = (torch.softmax(alpha_T, dim=1) * mu_T).sum(1)
    return ForwardResult(log_z, expected)


@torch.no_grad()
def viterbi(pot: Potentials, lengths: torch.Tensor, L: int) -> tuple[torch.Tensor, list[list[Segment]]]:
    """Best segmentation and alignment (max-plus version of :func:`forward`) under ``pot``.

    Returns ``(best_score (B,), paths)``; ``paths[b]`` is a list of ``(start, end, state)``
    covering tokens ``0 .. lengths[b]-1`` in order.
    """
    log_init, log_trans, log_emit, log_end = pot
    B, T, S = log_emit.shape
    C = segment_score_table(log_emit)
    betas = [log_init]
    back_l: list[torch.Tensor] = []  # (B, S): best segment length ending at i in state j
    back_q: list[torch.Tensor] = [torch.zeros(B, S, dtype=torch.long, device=log_emit.device)]  # best previous state
    alphas = []
    for i in range(1, T + 1):
        lo = max(0, i - L)
        beta_win = torch.stack(betas[lo:i], dim=1)  # (B, l, S)
        x = beta_win + C[:, i : i + 1] - C[:, lo:i] + log_end[:, i - 1 : i]
        alpha, arg = x.max(dim=1)  # arg indexes p = lo + arg
        back_l.append(i - (lo + arg))
        alphas.append(alpha)
        if i < T:
            beta, q = (alpha.unsqueeze(2) + log_trans[:, i - 1]).max(dim=1)
            betas.append(beta)
            back_q.append(q)
    best = torch.empty(B, dtype=log_emit.dtype, device=log_emit.device)
    paths = []
    for b in range(B):
        i = int(lengths[b])
        if i == 0:
            best[b] = 0.0
            paths.append([])
            continue
        score, j = alphas[i - 1][b].max(0)
        best[b] = score
        j = int(j)
        path: list[Segment] = []
        while i > 0:
            p = i - int(back_l[i - 1][b, j])
            path.append((p, i, j))
            if p > 0:
                j = int(back_q[p][b, j])
            i = p
        paths.append(path[::-1])
    return best, paths
