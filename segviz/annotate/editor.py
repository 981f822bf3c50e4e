"""The Annotate page's alignment editor, without Streamlit: an item's text drawn segment by
segment in its records' colours (as the Playground draws it), and the correction table (one row
per segment, its record chosen from a list) turned back into a validated alignment.
:mod:`segviz.annotate.workflow` re-exports the public names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from segviz.annotate.store import AnnotationError, normalize_segments
from segviz.records import Record, detokenize
from segviz.viz import esc, record_colour, segment_span

__all__ = ["NULL_LABEL", "segments_html", "records_html", "alignment_rows", "record_options", "alignment_edits",
           "apply_alignment_edits"]

NULL_LABEL = "(none)"  # the null record r_0 in the alignment editor


def _alignment(item: dict) -> dict | None:
    """The alignment to show: the annotator's correction if saved, else the item's own."""
    a = item["annotation"]
    if a is not None and a.get("corrected_alignment"):
        return a["corrected_alignment"]
    return item["segments"]


def _char_starts(text: str, tokens: list[str]) -> list[int] | None:
    """Offset in ``text`` where each (lower-cased) token starts, or None if they do not match it."""
    low, pos, starts = text.lower(), 0, []
    for tok in tokens:
        i = low.find(tok, pos)
        if i < 0 or low[pos:i].strip():
            return None
        starts.append(i)
        pos = i + len(tok)
    return starts if len(low) == len(text) and not low[pos:].strip() else None


def _pieces(text: str, tokens: list[str], segments: list[list], records: list[Record]) -> list[tuple[str, int | None]]:
    """The text cut at the segment boundaries, with the spaces before each piece: the pieces
    join to exactly ``text`` (what the annotator must judge). If the tokens do not match the
    text, the pieces are detokenised tokens instead."""
    starts = _char_starts(text, tokens)
    if starts is not None and segments:
        bounds = [0] + [starts[s - 1] + len(tokens[s - 1]) for s, _, _ in segments[1:]] + [len(text)]
        return [(text[bounds[i]:bounds[i + 1]], rec) for i, (_, _, rec) in enumerate(segments)]
    pieces, prev = [], ""
    for s, e, rec in segments:
        upto = detokenize(tokens[:e], records)
        piece = upto[len(prev):] if upto.startswith(prev) else " " + detokenize(tokens[s:e], records)
        pieces.append((piece, rec))
        prev = upto
    return pieces


def segments_html(item: dict) -> str:
    """The item's text as HTML, each segment drawn as in the Playground
    (:func:`segviz.viz.segment_span`: its record's colour, grey for none) with the record's label
    as tooltip; the pieces are cut from the text itself, so they join to exactly what the
    annotator judges. Every text is escaped once with :func:`segviz.viz.esc` (no HTML, Markdown
    or LaTeX of its own). Without an alignment, the plain escaped text."""
    alignment = _alignment(item)
    if not alignment or not alignment["segments"]:
        return f'<div class="segviz-text">{esc(item["text"])}</div>'
    records = [Record.from_json(r) for r in item["records"]]
    spans = []
    for piece, rec in _pieces(item["text"], alignment["tokens"], alignment["segments"], records):
        stripped = piece.lstrip()
        lead = " " if len(stripped) < len(piece) else ""
        title = "no record" if rec is None else item["labels"][rec]
        spans.append(lead + segment_span(esc(stripped), None if rec is None else rec + 1, title=title))
    return f'<div class="segviz-text" style="line-height:1.9;font-size:1.1em">{"".join(spans)}</div>'


def records_html(item: dict) -> str:
    """The input records as an HTML list, each on its colour (labels escaped)."""
    rows = [f'<li><span style="background:{record_colour(k + 1)};border-radius:3px;padding:0 4px">'
            f"{k + 1}. {esc(label)}</span></li>" for k, label in enumerate(item["labels"])]
    return f'<ul style="list-style:none;padding-left:0;line-height:1.9">{"".join(rows)}</ul>'


def alignment_rows(item: dict) -> list[dict]:
    """One row per segment for the correction table: ``{"segment": text, "record": label}``
    (``"(none)"`` for the null record). Empty when the item has no alignment."""
    alignment = _alignment(item)
    if not alignment:
        return []
    records = [Record.from_json(r) for r in item["records"]]
    return [{"segment": piece.strip(), "record": NULL_LABEL if rec is None else item["labels"][rec]}
            for piece, rec in _pieces(item["text"], alignment["tokens"], alignment["segments"], records)]


def record_options(item: dict) -> list[str]:
    """Choices of the correction table's record column."""
    return [NULL_LABEL, *item["labels"]]


def alignment_edits(item: dict, edited_rows: Mapping[Any, Mapping[str, Any]]) -> list[tuple[int, int | None]]:
    """The correction table's ``edited_rows`` ({row: {"record": label}}) as ``(segment, record)``
    pairs (record 0-based, None for ``(none)``), validated against the alignment shown."""
    alignment = _alignment(item)
    if not alignment:
        raise AnnotationError("this item has no alignment to correct")
    by_label = {label: k for k, label in enumerate(item["labels"])}
    edits = []
    for row, change in edited_rows.items():
        if "record" not in change:
            continue
        i = int(row)
        if not 0 <= i < len(alignment["segments"]):
            raise AnnotationError(f"alignment row {row!r} does not exist")
        label = change["record"]
        if label in (None, "", NULL_LABEL):
            edits.append((i, None))
        elif label in by_label:
            edits.append((i, by_label[label]))
        else:
            raise AnnotationError(f"unknown record {label!r}")
    return edits


def apply_alignment_edits(item: dict, edited_rows: Mapping[Any, Mapping[str, Any]]) -> dict:
    """The corrected alignment after the table's ``edited_rows`` ({row: {"record": label}}),
    applied to the alignment shown; validated, ready for ``corrected_alignment``."""
    edits = alignment_edits(item, edited_rows)
    alignment = _alignment(item)
    segments = [list(seg) for seg in alignment["segments"]]
    for i, record in edits:
        segments[i][2] = record
    return normalize_segments({"tokens": alignment["tokens"], "segments": segments}, item["K"])
