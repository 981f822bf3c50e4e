"""What both beam searches share: the input's encoding, banned ids, the length-normalised score
that ranks finished outputs, the stopping rule, and n-best ranking (docs/design.md §1)."""

from __future__ import annotations

import torch

from segviz.data import BOS_ID, EOS_ID, EOSEG_ID, PAD_ID, UNK_ID, Vocab, collate, encode
from segviz.records import Record

NO_REPEAT_NGRAM = 3  # default for both systems: no word trigram twice in one output


def _records_info(records: list[Record]):
    return [(k + 1, r.label, r.tokens) for k, r in enumerate(records)]


def _prepare(vocab: Vocab, records: list[Record]):
    enc = encode(vocab, records)
    batch = collate([enc], len(vocab))
    return enc, batch


def _word(vocab: Vocab, oov: list[str], i: int) -> str:
    return vocab.itos[i] if i < len(vocab) else oov[i - len(vocab)]


def _banned(n_ext: int) -> torch.Tensor:
    """Ids never emitted as words: <pad> <unk> <bos> <$>.  (n_ext,) bool."""
    ban = torch.zeros(n_ext, dtype=torch.bool)
    ban[[PAD_ID, UNK_ID, BOS_ID, EOSEG_ID]] = True
    return ban


def _clip(segments, T: int) -> list[tuple[int, int, int | None]]:
    """``(start, end, record)`` cut to the first ``T`` tokens (the trailing ``<eos>`` dropped),
    empty ones left out, the null record as ``None``."""
    return [(s, min(e, T), j if j > 0 else None) for s, e, j in segments if min(e, T) > s]


def _norm(h, length_penalty: float) -> float:
    """The score finished outputs are ranked by: ``log p / length ** length_penalty``."""
    return h.score / (max(len(h.tokens), 1) ** length_penalty)


def _beam_done(finished, alive, beam: int, length_penalty: float) -> bool:
    """Stop once ``beam`` outputs are finished and none of the live hypotheses ranks above the
    best of them by length-normalised score (stopping at the first ``beam`` finished outputs
    would favour short texts that leave records out)."""
    if len(finished) < beam:
        return False
    return max(_norm(h, length_penalty) for h in alive) <= max(_norm(f, length_penalty) for f in finished)


def _ranked(pool: list, n: int, length_penalty: float) -> list:
    """Up to ``n`` hypotheses of ``pool`` with distinct token sequences, best first by
    :func:`_norm` (of equal texts the best-scored stays; ties keep ``pool`` order, so the first
    is what ``max`` picks)."""
    out, seen = [], set()
    for h in sorted(pool, key=lambda h: -_norm(h, length_penalty)):
        key = tuple(h.tokens[:-1] if h.tokens and h.tokens[-1] == EOS_ID else h.tokens)
        if key not in seen:
            seen.add(key)
            out.append(h)
            if len(out) >= n:
                break
    return out
