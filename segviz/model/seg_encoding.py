"""What the segment model's decoder reads from one input, gathered once (docs/design.md §1):
:class:`SegEncoding`, the per-record :class:`RecordTables` of decoding, and the potentials of
the dynamic program (:class:`SegPotentials`). Letters as in :mod:`segviz.model`."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from segviz import dp
from segviz.model.common import NEG


def _one_row(d: torch.Tensor, b: torch.Tensor | None) -> bool:
    """One hypothesis of input 0: decoding reads :attr:`RecordTables.one` (no padding)."""
    return d.size(0) == 1 and (b is None or not b.any())


@dataclass
class RecordTables:
    """What decoding under record ``k`` reads, gathered once per input: O(N_k) work per step.

    Padded stacks for hypotheses in different records / inputs, indexed ``[b, k]``:
    ``key, h (B, S, R, H)``; ``vproj (B, S, R, V)``; ``ext, pos (B, S, R)`` extended ids and
    source positions; ``bias (B, S, R)`` 0 / NEG; ``valid (B, S, R)``; ``any (B, S)``.
    And for one hypothesis of input 0 (greedy decoding), exact-length views per record, no
    padding: ``one[k] = (key^T (H, N_k), h (N_k, H), vproj (N_k, V), ext (1, N_k), pos (1, N_k))``.
    """

    key: torch.Tensor
    h: torch.Tensor
    vproj: torch.Tensor
    ext: torch.Tensor
    pos: torch.Tensor
    bias: torch.Tensor
    valid: torch.Tensor
    any: torch.Tensor
    one: list

    @classmethod
    def build(cls, enc: SegEncoding) -> RecordTables:
        pos, valid = enc.rec_idx, enc.rec_valid  # (B, S, R)
        bi = torch.arange(pos.size(0), device=pos.device).view(-1, 1, 1)
        one = []
        for k in range(pos.size(1)):
            p = pos[0, k][valid[0, k]]
            one.append(
                (
                    enc.key[0, p].t().contiguous(),
                    enc.h[0, p].contiguous(),
                    enc.vproj[0, p].contiguous(),
                    enc.src_ext[0, p].unsqueeze(0),
                    p.unsqueeze(0),
                )
                if len(p)
                else None
            )
        return cls(
            key=enc.key[bi, pos],
            h=enc.h[bi, pos],
            vproj=enc.vproj[bi, pos],
            ext=enc.src_ext[bi, pos],
            pos=pos,
            bias=torch.zeros(valid.shape, dtype=enc.h.dtype, device=valid.device).masked_fill(~valid, NEG),
            valid=valid,
            any=valid.any(2),
            one=one,
        )


@dataclass
class SegEncoding:
    """Everything the segment model's decoder reads from the input, per example.

    h (B, N, H) token states; key (B, N, H) = W_a h; vproj (B, N, V) = W2 h (docs/design.md §1);
    f (B, S, E) record representations; member (B, S, N) token i belongs to record k;
    has_tok (B, S); rec_mask (B, S); src_ext (B, N); state0 = (h0, c0) each (B, H).
    """

    h: torch.Tensor
    key: torch.Tensor
    vproj: torch.Tensor
    f: torch.Tensor
    member: torch.Tensor
    has_tok: torch.Tensor
    rec_mask: torch.Tensor
    src_ext: torch.Tensor
    state0: tuple[torch.Tensor, torch.Tensor]
    rec_idx: torch.Tensor  # (B, S, R) positions of each record's tokens, padded with 0
    rec_valid: torch.Tensor  # (B, S, R) which of those are real
    _tables: RecordTables | None = None  # decoding tables, built on first use

    @property
    def tables(self) -> RecordTables:
        """Per-record decoding tables (:class:`RecordTables`), built once per input."""
        if self._tables is None:
            self._tables = RecordTables.build(self)
        return self._tables


@dataclass
class SegPotentials:
    """Potentials of the dynamic program (shapes in :mod:`segviz.dp`) plus attention."""

    log_init: torch.Tensor  # (B, S)
    log_trans: torch.Tensor  # (B, T, S, S)
    log_emit: torch.Tensor  # (B, T, S)
    log_end: torch.Tensor  # (B, T, S)
    alpha: torch.Tensor  # (B, T, S, N) attention of token t under record k

    @property
    def chain(self) -> dp.Potentials:
        """The four potentials :func:`segviz.dp.viterbi` and :func:`segviz.posterior.marginals` read."""
        return dp.Potentials(self.log_init, self.log_trans, self.log_emit, self.log_end)
