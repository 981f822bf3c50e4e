"""Anchored segments (``train --anchor``, session 35; off by default = the paper): a target word
that is a content word of the values of some records only, and of no subject, lies only in a
segment of one of those records (docs/design.md §1, "Anchored segments").

The forward algorithm stays exact: it sums over the segmentations and alignments in which every
such word lies in a segment of a record whose value holds it (eq. 5 with every other window
scored ``log 0``: :func:`segviz.dp.forward`'s ``ban``). The decoder still reads no segmentation.
Where no segmentation is left (a value longer than ``L`` words, or one record's words twice
with nothing between them), the example keeps the paper's sum.
"""

from __future__ import annotations

from segviz.data import Encoded, Vocab
from segviz.records import Record, entity_text, is_function_word, tokenize


def anchors(vocab: Vocab, records: list[Record], enc: Encoded) -> list[frozenset[int]]:
    """Per target position ``t`` (``len(enc.tgt)``): the records (1..K) whose value holds
    ``y_t`` as a content word, when it is in no subject either; an empty set: any state."""
    word = lambda i: vocab.itos[i] if i < len(vocab) else enc.oov[i - len(vocab)]  # noqa: E731
    owners: dict[str, set[int]] = {}
    subjects = {t for r in records if r.subject for t in tokenize(entity_text(r.subject))}  # lower case, as every token
    for k, r in enumerate(records, 1):
        for t in r.value_tokens:
            if not is_function_word(t) and t not in subjects:
                owners.setdefault(t, set()).add(k)
    return [frozenset(owners.get(word(y), ())) for y in enc.tgt]


def feasible(allowed: list[frozenset[int]], K: int, L: int) -> bool:
    """Whether some segmentation of ``len(allowed)`` tokens into segments of at most ``L`` tokens,
    no two neighbours of the same state (eq. 3 has no self-transition), gives every token a
    state it allows (an empty set allows all of ``0..K``)."""
    T, states = len(allowed), range(K + 1)
    ok = [[not a or s in a for s in states] for a in allowed]  # (T, S)
    ends: list[set[int]] = []  # ends[t]: states whose segment may end at token t
    for t in range(T):
        here = set()
        for s in states:
            for u in range(t, max(-1, t - L), -1):  # a segment of s over tokens u..t
                if not ok[u][s]:
                    break
                if u == 0 or ends[u - 1] - {s}:
                    here.add(s)
                    break
        ends.append(here)
    return T == 0 or bool(ends[-1])


def forbidden(vocab: Vocab, records: list[Record], enc: Encoded, L: int) -> list[tuple[int, int]]:
    """The ``(t, state)`` emissions that ``--anchor`` sets to ``log 0`` for one example: every
    state outside a position's anchors (:func:`anchors`); none when that leaves no segmentation
    (:func:`feasible`)."""
    allowed = anchors(vocab, records, enc)
    K = len(records)
    if not any(allowed) or not feasible(allowed, K, L):
        return []
    return [(t, s) for t, a in enumerate(allowed) if a for s in range(K + 1) if s not in a]
