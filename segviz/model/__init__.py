"""The segment model of Shen et al. (2020, §4) and the pointer-generator (PG) baseline.

Letters follow the paper and docs/design.md §1: ``B`` batch, ``N`` source tokens, ``T`` target tokens,
``S = K + 1`` states (record 0 is the null record ``r_0``), ``V`` vocabulary, ``H`` hidden size,
``E`` embedding size.

Both models share the :class:`Encoder` (a Bi-LSTM over the flattened record tokens). The segment
model's decoder is a plain LSTM over the target words (no input feeding, the end-of-segment
symbol ``$`` never fed back), so every potential of the dynamic program is computed for all
``(t, k)`` in one batched pass and :mod:`segviz.dp` marginalises over segmentations exactly.


Layout: :mod:`~segviz.model.common` (config, encoder, mixture, base class),
:mod:`~segviz.model.seg_encoding` (what decoding reads), :mod:`~segviz.model.seg` (the segment
model), :mod:`~segviz.model.pg` (the PG baseline). Everything public is importable from
``segviz.model``.
"""

from __future__ import annotations

from segviz.model.common import (
    NEG,
    Dropout,
    Encoder,
    EncoderDecoder,
    ModelConfig,
    extended_scatter,
    mixture_logprob,
)
from segviz.model.pg import PGEncoding, PGModel
from segviz.model.seg import SegmentModel
from segviz.model.seg_encoding import RecordTables, SegEncoding, SegPotentials

MODEL_KINDS = ("seg", "pg")

__all__ = [
    "NEG", "Dropout", "Encoder", "EncoderDecoder", "ModelConfig", "extended_scatter", "mixture_logprob", "PGEncoding",
    "PGModel", "SegmentModel", "RecordTables", "SegEncoding", "SegPotentials", "MODEL_KINDS", "build_model",
]  # fmt: skip


def build_model(cfg: ModelConfig) -> SegmentModel | PGModel:
    if cfg.kind == "seg":
        return SegmentModel(cfg)
    if cfg.kind == "pg":
        return PGModel(cfg)
    raise ValueError(f"unknown model kind {cfg.kind!r}; choose one of {MODEL_KINDS}")
