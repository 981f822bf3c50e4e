"""The ``second`` decoding switch (session 31, docs/design.md §6): a second opinion on the segment
model's n-best from the PG baseline.

The segment search ranks its finished outputs by ``log p_seg(y, z | x) / |y|`` (the best
segmentation's path score, :func:`segviz.decode.beam._norm`). With ``second`` the ``beam``
outputs it finished are ranked instead by

    (log p_seg(y, z | x) + w * log p_PG(y | x)) / |y| ** length_penalty,      w = WEIGHT,

where ``log p_PG(y | x)`` is the PG baseline's teacher-forced log-probability of the same words
(``<eos>`` included): a product of experts over texts the segment model wrote, so every
constraint and value rule of the search still holds for the pick. ``w`` was chosen on the tuning
half of dev (README "A second opinion"). Letters: ``n`` candidates, ``T`` their longest length.
"""

from __future__ import annotations

import dataclasses

import torch

from segviz.data import collate, encode
from segviz.records import Record
from segviz.result import GenerationResult

WEIGHT = 0.5  # w: the PG log-probability's weight (tuning half: 0.25 to 0.75 alike, README "A second opinion")


@torch.no_grad()
def pg_log_probs(partner, records: list[Record], texts: list[list[str]]) -> list[float]:
    """``log p_PG(y | x)`` of each token list of ``texts`` (``<eos>`` added) under the PG
    checkpoint ``partner`` (its model and vocabulary): ``(n,)``. A word that neither the PG's
    vocabulary nor the input holds is read as ``<unk>``, as PG training reads it."""
    model, vocab = partner.model, partner.vocab
    model.eval()
    batch = collate([encode(vocab, records, list(t)) for t in texts], len(vocab))
    logp, mask = model.token_logprobs(batch)  # (n, T) each
    return (logp * mask).sum(1).tolist()


def second_ranked(
    results: list[GenerationResult], records: list[Record], partner, length_penalty: float = 1.0
) -> list[GenerationResult]:
    """``results`` (the segment model's n-best) best first by the combined score above, each
    with ``second_log_prob`` (the PG log-probability) and ``second_rank`` (its place in the
    segment model's own order, 0 = its best) added to its scores."""
    if not results:
        return results
    pg = pg_log_probs(partner, records, [r.tokens for r in results])

    def combined(i: int) -> float:
        sc = results[i].scores
        return (sc["log_prob"] + WEIGHT * pg[i]) / max(sc["length"], 1) ** length_penalty

    order = sorted(range(len(results)), key=lambda i: -combined(i))  # stable: ties keep the model's order
    return [
        dataclasses.replace(results[i], scores={**results[i].scores, "second_log_prob": pg[i], "second_rank": i})
        for i in order
    ]


def second_note(result: GenerationResult) -> str | None:
    """How the second opinion ranked ``result``, in words for the app (from its ``second_*``
    scores); None when the ``second`` rule did not rank it."""
    rank = (result.scores or {}).get("second_rank")
    if rank is None:
        return None
    which = "the segment model's own first" if rank == 0 else f"the segment model's candidate {rank + 1}, not its first"
    return f"Ranked with the PG baseline's log-probability of each candidate (weight {WEIGHT}): {which}."
