"""Forced alignment: the Viterbi segmentation and records of any text (references, PG outputs,
uploads) under the segment model (docs/design.md §1 "Viterbi")."""

from __future__ import annotations

import torch

from segviz import dp
from segviz.data import Vocab, collate, encode
from segviz.decode.beam import _clip
from segviz.model import SegmentModel
from segviz.records import Record
from segviz.result import GenerationResult


@torch.no_grad()
def force_align(
    model: SegmentModel, vocab: Vocab, records: list[Record], tokens: list[str]
) -> list[tuple[int, int, int | None]]:
    """Viterbi segmentation and record of any tokenised text for ``records``.

    Returns ``(start, end, record)`` over ``tokens`` (record 1..K or ``None`` for null); the
    segments cover the text exactly, in order.
    """
    if not tokens:
        return []
    model.eval()
    enc_ex = encode(vocab, records, tokens)
    batch = collate([enc_ex], len(vocab))
    pot = model.potentials(batch)
    _, paths = dp.viterbi(pot.chain, batch.tgt_len, model.cfg.max_seg_len)
    return _clip(paths[0], len(tokens))  # drop the trailing <eos>


def align_result(
    result: GenerationResult, model: SegmentModel, vocab: Vocab, records: list[Record]
) -> GenerationResult:
    """Fill ``result.segments`` by forced alignment (used for PG and uploaded outputs)."""
    result.segments = force_align(model, vocab, records, result.tokens)
    return result
