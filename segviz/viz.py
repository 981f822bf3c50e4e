"""Colours, escaped segment HTML, legends and word diffs built from results; no Streamlit.

Every piece of model or user text that ends up in HTML goes through :func:`esc`, which escapes
HTML *and* the characters Markdown / KaTeX would interpret (``$ * _ ` [ ] \\ ~ # |``), so a value
such as ``<script>``, ``**bold**`` or ``$5`` is shown literally by ``st.markdown``.

The Altair figures are in :mod:`segviz.charts` (still reachable as ``viz.attention_chart`` etc.).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

from segviz.records import _TOKEN, Record, written
from segviz.result import GenerationResult

__all__ = [
    "PALETTE",
    "NULL_COLOUR",
    "esc",
    "record_colour",
    "display_tokens",
    "segments_html",
    "segment_span",
    "legend_html",
    "word_diff_html",
    "VERDICT_ICONS",
]

# ColorBrewer Set3: light enough for black text on top, distinguishable for most readers; the
# record number and name are always printed as well, so colour is never the only cue.
PALETTE = (
    "#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3",
    "#fdb462", "#b3de69", "#fccde5", "#bc80bd", "#ccebc5",
)  # fmt: skip
NULL_COLOUR = "#e3e3e3"

# One table, applied once per character: HTML's specials and the characters Markdown / KaTeX
# would interpret each become a character reference (escaping the HTML first and then the Markdown
# characters would escape the ``#`` of ``&#x27;`` again: an apostrophe shown as "&#x27;").
_ESC = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"} | {c: f"&#{ord(c)};" for c in "$*_`[]\\~#|{}"}


def esc(text: object) -> str:
    """Escape ``text`` exactly once for ``st.markdown`` (HTML allowed or not): HTML specials and
    Markdown/LaTeX characters become character references, shown literally; newlines become spaces."""
    return "".join(_ESC.get(c, c) for c in str(text)).replace("\n", " ")


def record_colour(k: int | None) -> str:
    """Background colour of record ``k`` (1..K); grey for the null record (``None`` / 0)."""
    return NULL_COLOUR if not k else PALETTE[(k - 1) % len(PALETTE)]


# ----- text --------------------------------------------------------------------------------------

_WORD = re.compile(r"\w+", re.UNICODE)
# function words get a record's casing ("The Old Mill") only inside a cased name, not alone
_FUNCTION_WORDS = {"the", "a", "an", "of", "and", "in", "on", "at", "near", "by", "for", "to", "with"}


def display_tokens(
    tokens: Sequence[str], records: Sequence[Record] = (), cased: Sequence[str] | None = None
) -> list[tuple[str, bool]]:
    """``(text, space_before)`` per token, with record casing restored and sentences capitalised
    (:func:`segviz.records.detokenize` restores whole values only; here a function word takes a
    value's case only inside a whole value, "The Eagle", not "published In India", and another
    value word wherever it stands, "by the Park"). With ``cased`` (the same tokens in the writer's own case, e.g. an
    uploaded text) those words are shown as they are."""
    casing = {}
    for r in records:
        for text in (r.value, r.subject or ""):
            text = text.replace("_", " ")
            for w in _WORD.findall(text) + _TOKEN.findall(text):  # and as tokenised: "Mary's" is one token
                if w != w.lower():
                    casing.setdefault(w.lower(), w)
    layout = written(list(tokens), [] if cased is not None else list(records))  # (word, space, begins a sentence)
    out = []
    for n, (tok, (shown, space, start)) in enumerate(zip(tokens, layout, strict=True)):
        if cased is not None:
            word = cased[n]
        elif not shown:  # a stop after a value's own ("D.C."), written once (records.written)
            word = ""
        else:
            word = shown if tok in _FUNCTION_WORDS or shown.lower() != tok else casing.get(tok, tok)  # "İzmir" of "i"
            word = word[:1].upper() + word[1:] if start else word
        out.append((word, space))
    return out


def display_text(tokens: Sequence[str], records: Sequence[Record] = ()) -> str:
    """The text as the app shows it (:func:`display_tokens` joined): what an annotator reads, in
    the Playground's casing ("B M Reddy", where the text leaves the dots of "B._M._Reddy" out)."""
    return "".join((" " if space else "") + word for word, space in display_tokens(tokens, records))


def brief(label: str) -> str:
    """A record's label for a segment's tag: a WebNLG triple without its subject ("city |
    Bangalore"; cut to 28 characters the whole triple showed only its subject); the hover names
    it all."""
    return label.split(" | ", 1)[1] if " | " in label else label


def _short(label: str, n: int = 28) -> str:
    return label if len(label) <= n else label[: n - 1] + "…"


# per-segment verdicts (segviz.faithfulness.segment_verdicts): icon + word, never colour alone
VERDICT_ICONS = {"faithful": "✓ faithful", "unrealised": "– unrealised", "other record": "✗ other record",
                 "absent value": "+ absent value", "invented name": "+ invented name", "filler": "· filler"}  # fmt: skip


def _hover(k: int | None, names: dict, v) -> str:
    """Hover text of a segment: its record and, with a verdict ``v``, what the checker says."""
    out = "null (no record)" if k is None else f"record {k}: {names.get(k, '?')}"
    if v is None:
        return out
    out += f" · {VERDICT_ICONS.get(v.verdict, v.verdict)}"
    if v.others:
        out += " (states " + ", ".join(f"record {j}" for j in v.others) + ")"
    if v.absent or v.invented:
        out += " (not in the input: " + ", ".join(v.absent + v.invented) + ")"
    return out


def segments_html(
    result: GenerationResult,
    records: Sequence[Record] = (),
    highlight_token: int | None = None,
    highlight_record: int | None = None,
    *,
    verdicts: Sequence = (),
    highlight_span: tuple[int, int] | None = None,
    cased: Sequence[str] | None = None,
    stale: bool = False,
) -> str:
    """The output text, each segment on the colour of its record and tagged with the record's
    number and name (``null`` segments grey). Token ``highlight_token`` gets a frame; segments
    of ``highlight_record`` a thick underline; the segment ``highlight_span = (start, end)`` a
    red frame (a clicked row of a verdict table). ``verdicts`` (one
    :class:`~segviz.faithfulness.SegmentVerdict` per segment) give each segment a hover text with
    its record and verdict, and a dotted red outline where it is not faithful. ``cased``: the
    tokens in the writer's own case. ``stale``: greyed out (the output no longer matches the
    inputs). Without segments the text is shown plain."""
    shown = display_tokens(result.tokens, records, cased)
    names = {k: label for k, label, _ in result.records}
    segments = result.segments or [(0, len(result.tokens), -1)]
    by_span = {(v.start, v.end): v for v in verdicts}
    parts = []
    for start, end, k in segments:
        toks = []
        for t in range(start, end):
            word, space = shown[t]
            style = "outline:2px solid #000;font-weight:bold;" if t == highlight_token else ""
            toks.append((" " if space and t > start else "") + f'<span data-t="{t}" style="{style}">{esc(word)}</span>')
        lead = " " if start > 0 and shown[start][1] else ""
        if k == -1:  # no alignment
            parts.append(lead + "".join(toks))
            continue
        tag = "null" if k is None else f"{k} {_short(brief(names.get(k, '?')))}"
        v = by_span.get((start, end))
        outline = "outline:2px dotted #c00;" if v is not None and not v.faithful else ""
        picked = highlight_span is not None and (start, end) == tuple(highlight_span)
        if picked:
            outline = "outline:3px solid #d62728;outline-offset:1px;"
        parts.append(lead + segment_span(
            "".join(toks), k, tag=tag, title=_hover(k, names, v), underline=k is not None and k == highlight_record,
            verdict=v.verdict if v is not None else None, style=outline, picked=picked,
        ))
    if not result.tokens:
        parts = ["<em>(empty output)</em>"]
    if stale:
        return f'<div class="segviz-text segviz-stale" style="font-size:1.05em;opacity:0.35;filter:grayscale(1)">{"".join(parts)}</div>'
    return f'<div class="segviz-text" style="font-size:1.05em">{"".join(parts)}</div>'


def segment_span(body_html: str, k: int | None, *, tag: str | None = None, title: str | None = None,
                 underline: bool = False, verdict: str | None = None, style: str = "", picked: bool = False) -> str:
    """One segment: ``body_html`` (already escaped) on the colour of record ``k`` (1..K; grey for
    the null record), with the tag ``tag`` written after it and/or the tooltip ``title`` (both
    escaped here); ``verdict`` becomes ``data-verdict``, ``picked`` ``data-picked`` (a selected
    table row's segment), ``style`` (trusted CSS) is appended.
    The tag never wraps inside itself. The Playground and the Annotate page draw segments with it."""
    border = "border-bottom:3px solid #000;" if underline else ""
    tip = "" if title is None else f' title="{esc(title)}"'
    data = ("" if verdict is None else f' data-verdict="{esc(verdict)}"') + (' data-picked="true"' if picked else "")
    sub = (
        "" if tag is None
        else f'<sub style="font-size:0.65em;color:#333;margin-left:2px;white-space:nowrap">{esc(tag)}</sub>'
    )
    return (
        f'<span class="seg" data-record="{k or 0}"{data}{tip} style="background:{record_colour(k)};'
        f'padding:1px 3px;border-radius:4px;line-height:2.1;{border}{style}">{body_html}{sub}</span>'
    )


def legend_html(result: GenerationResult, highlight_record: int | None = None, stale: bool = False) -> str:
    """Chips ``k name`` in each record's colour, plus the null record; ``stale``: greyed out with
    the text they key (:func:`segments_html`)."""
    chips = []
    for k, label, _ in result.records:
        border = "2px solid #000" if k == highlight_record else "1px solid #999"
        chips.append(
            f'<span data-record="{k}" style="background:{record_colour(k)};border:{border};border-radius:10px;'
            f'padding:1px 8px;margin:2px;display:inline-block;max-width:100%;overflow-wrap:anywhere">{k} {esc(label)}</span>'
        )
    chips.append(
        f'<span data-record="0" style="background:{NULL_COLOUR};border:1px solid #999;border-radius:10px;'
        'padding:1px 8px;margin:2px;display:inline-block">null (no record)</span>'
    )
    grey = ' segviz-stale" style="opacity:0.35;filter:grayscale(1)' if stale else ""
    return f'<div class="segviz-legend{grey}">{"".join(chips)}</div>'


# ----- word diff -------------------------------------------------------------------------------------


def word_diff_html(old: Sequence[str], new: Sequence[str], records: Sequence[Record] = ()) -> str:
    """The new text with its words that the old one lacks on green (``<ins>``) and the old words
    it dropped struck through on red (``<del>``), compared word by word (case-insensitive)."""
    a, b = display_tokens(old, records), display_tokens(new, records)
    def words(shown: list[tuple[str, bool]]) -> str:
        return "".join((" " if space and n else "") + esc(w) for n, (w, space) in enumerate(shown))

    out = ""
    sm = difflib.SequenceMatcher(a=[t.lower() for t in old], b=[t.lower() for t in new], autojunk=False)
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op in ("delete", "replace"):
            out += (" " if out and a[i1][1] else "") + f'<del style="background:#fdd;color:#900">{words(a[i1:i2])}</del>'
        if op in ("insert", "replace"):
            out += (" " if out and b[j1][1] else "") + (
                f'<ins style="background:#d9f2d9;text-decoration:none;font-weight:600">{words(b[j1:j2])}</ins>'
            )
        if op == "equal":
            out += (" " if out and b[j1][1] else "") + words(b[j1:j2])
    return f'<div class="segviz-diff" style="line-height:1.9">{out}</div>'


_CHARTS = {"attention_frame", "attention_chart", "attention_bar", "max_attention", "curves_frame", "loss_chart", "segments_chart", "posterior_frame", "posterior_chart"}


def __getattr__(name: str):
    """The Altair figures moved to :mod:`segviz.charts`; ``viz.attention_chart`` & co. still work."""
    if name in _CHARTS:
        from segviz import charts

        return getattr(charts, name)
    raise AttributeError(f"module 'segviz.viz' has no attribute {name!r}")
