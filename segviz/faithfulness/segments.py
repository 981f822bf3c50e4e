"""Per-segment verdict: does each segment say its own record, and nothing else?

The paper's promise is that every segment realises the record it is aligned to (or the null
record). A segment ``[start, end)`` of record ``k`` is **faithful** when its text states
``k``'s value, no value of another input record, and no value absent from the input; a null
segment is faithful when it states no value at all. Values are found by the same rules as the
record-level checker (:mod:`segviz.faithfulness.e2e`, :mod:`segviz.faithfulness.webnlg`), run
once on the whole text so that context ("a *high* customer rating") is seen; each value mention
then belongs to the segment that holds most of its characters.

Verdicts, first match wins: ``absent value`` (states a value not in the input; WebNLG: also a
number no input entity holds), ``invented name`` (names an entity the input does not hold, where
the dataset has a list of entity words: :func:`segviz.entities.invented_names`, the reading of the
inspector's "invented name" flag; not a fault the ``rerank`` switch counts), ``other
record`` (states another record's value; for WebNLG naming the segment's own subject or object
never counts, nor a value said inside the segment's own value, :func:`_nested`), ``filler`` (only function words and punctuation, in a record that has another
segment with a content word: what the ``fillers`` decoding switch allows, docs/design.md §6; it
claims nothing and, like a null segment, is not a record segment in the totals), ``unrealised``
(a record segment that does not state its value, e.g. only function words), ``faithful``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from segviz.entities import invented_names, shipped
from segviz.faithfulness.common import ValueMention, normalise
from segviz.records import Record, detokenize, is_function_word

SEGMENT_VERDICTS = ("faithful", "unrealised", "other record", "absent value", "invented name", "filler")


@dataclass(frozen=True)
class SegmentVerdict:
    """Verdict for segment ``tokens[start:end]`` of ``record`` (1..K, None = null record)."""

    start: int
    end: int
    record: int | None
    text: str
    own: bool  # the record's value is stated in the segment (False for null segments)
    others: tuple[int, ...]  # other input records (1..K) whose value the segment states
    absent: tuple[str, ...]  # stated values that are not in the input
    filler: bool = False  # function words only, and the record has a segment with a content word
    invented: tuple[str, ...] = ()  # entity words it says that the input does not hold (segviz.entities)

    @property
    def verdict(self) -> str:
        if self.absent:
            return "absent value"
        if self.invented:
            return "invented name"
        if self.others:
            return "other record"
        if self.filler:
            return "filler"
        if self.record is not None and not self.own:
            return "unrealised"
        return "faithful"

    @property
    def faithful(self) -> bool:
        return self.verdict == "faithful"


def _mentions(dataset: str, records: list[Record], norm: str) -> list[ValueMention]:
    from segviz.datasets import get  # the registry imports this package

    return get(dataset).value_mentions(records, norm)


def _own_entities(dataset: str, record: Record | None) -> frozenset[str]:
    from segviz.datasets import get

    return get(dataset).own_entities(record) if record is not None else frozenset()


def _invented(dataset: str, records: list[Record], text: str) -> tuple[str, ...]:
    from segviz.datasets import get

    return tuple(invented_names(records, text, shipped(dataset))) if get(dataset).entity_words else ()


def _owner(m: ValueMention, spans: list[tuple[int, int]]) -> int:
    """Index of the segment span holding most characters of mention ``m``."""
    overlap = [min(m.end, e) - max(m.start, s) for s, e in spans]
    return max(range(len(spans)), key=lambda i: overlap[i])


def _nested(m: ValueMention, own: list[ValueMention]) -> bool:
    """Whether mention ``m`` lies strictly inside a mention of the segment's own record: the
    "Texas" of "Austin, Texas" said by the city's segment is part of its own value (WebNLG
    checker: a place after a comma qualifies the entity)."""
    return any(o.start <= m.start and m.end <= o.end and (o.start, o.end) != (m.start, m.end) for o in own)


def segment_verdicts(
    dataset: str, records: list[Record], tokens: list[str], segments: Iterable[tuple[int, int, int | None]]
) -> list[SegmentVerdict]:
    """One :class:`SegmentVerdict` per segment ``(start, end, record 1..K | None)`` over ``tokens``."""
    segments = list(segments)
    texts = [normalise(detokenize(tokens[s:e], records)) for s, e, _ in segments]
    spans, pos = [], 0
    for t in texts:  # the segments' texts joined by single spaces, as one normalised text
        spans.append((pos, pos + len(t)))
        pos += len(t) + 1
    norm = " ".join(texts)
    held: list[list[ValueMention]] = [[] for _ in segments]
    for m in _mentions(dataset, records, norm) if segments else []:
        held[_owner(m, spans)].append(m)
    empty = [all(map(is_function_word, tokens[s:e])) for s, e, _ in segments]
    said = {k for (_, _, k), x in zip(segments, empty, strict=True) if k and not x}  # records with content
    out = []
    for (s, e, k), text, ms, x in zip(segments, texts, held, empty, strict=True):
        own_entities = _own_entities(dataset, records[k - 1] if k else None)
        stated = {m.record + 1 for m in ms if m.record is not None}
        own = [m for m in ms if k and m.record == k - 1]
        others = sorted(
            j
            for j in stated
            if j != k
            and not any(m.record == j - 1 and m.entity in own_entities for m in ms)
            and not all(_nested(m, own) for m in ms if m.record == j - 1)
        )
        absent = tuple(norm[m.start : m.end] for m in ms if m.record is None)
        invented = _invented(dataset, records, detokenize(tokens[s:e], records))
        out.append(SegmentVerdict(s, e, k, text, k in stated, tuple(others), absent, bool(k) and x and k in said, invented))
    return out


def segment_totals(verdicts: Iterable[SegmentVerdict]) -> dict:
    """Counts over segments: record / null / filler segments, each verdict among record segments,
    null segments that state a value, and ``faithful_share`` = faithful record segments / record
    segments (1.0 when there are none)."""
    t = {"record_segments": 0, "null_segments": 0, "null_with_value": 0, **{v: 0 for v in SEGMENT_VERDICTS}}
    for v in verdicts:
        if v.verdict == "filler":
            t["filler"] += 1
        elif v.record is None:
            t["null_segments"] += 1
            t["null_with_value"] += not v.faithful
        else:
            t["record_segments"] += 1
            t[v.verdict] += 1
    t["faithful_share"] = t["faithful"] / t["record_segments"] if t["record_segments"] else 1.0
    return t
