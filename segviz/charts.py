"""Altair figures (and the long tables behind them) built from results; no Streamlit.

Attention heatmaps of either system, the training curves of the Results page and the segment
model's posterior over segmentations; every figure uses the record colours of :mod:`segviz.viz`.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Sequence

import altair as alt
import pandas as pd

from segviz.records import Record
from segviz.result import GenerationResult
from segviz.viz import _short, brief, display_tokens, record_colour

# The heatmaps hold a row per (output token, source token): a 60-word value gives over 20,000,
# past Altair's default guard of 5,000 rows, which raised MaxRowsError in the Playground. The data
# are the app's own tables, embedded in the spec as before; the guard is off for every chart here.
alt.data_transformers.disable_max_rows()

__all__ = ["attention_frame", "attention_chart", "attention_bar", "max_attention", "curves_frame", "loss_chart", "segments_chart", "posterior_frame", "posterior_chart"]


# ----- attention ---------------------------------------------------------------------------------


RECORD_LABEL_CHARS = 60  # a record's label in the heatmaps' colour scale and tooltips


def _record_label(k: int, label: str) -> str:
    """``"K label"``, cut to ``RECORD_LABEL_CHARS``: every cell of a heatmap holds it, so a long
    value must not be copied whole into each (a 300-word value took gigabytes, session 41)."""
    return _short(f"{k} {label}", RECORD_LABEL_CHARS)


def attention_frame(result: GenerationResult) -> pd.DataFrame:
    """Long table ``t, i, out, src, record, weight``: one row per (output token, source token)."""
    rec_label = {k: _record_label(k, label) for k, label, _ in result.records}
    rows = []
    for t, row in enumerate(result.attention[: len(result.tokens)]):
        for i, w in enumerate(row[: len(result.source_tokens)]):
            k = result.record_of_source_token[i]
            rows.append({
                "t": t, "i": i, "out": f"{t:02d} {result.tokens[t]}",
                "src": f"{i:02d} r{k}:{result.source_tokens[i]}", "record": k,
                "record_label": rec_label.get(k, _record_label(k, "")), "weight": float(w),
            })
    return pd.DataFrame(rows, columns=["t", "i", "out", "src", "record", "record_label", "weight"])


def max_attention(results: Sequence[GenerationResult | None]) -> float:
    """Upper end of the shared colour scale of several heatmaps."""
    m = max((max(row) for r in results if r is not None for row in r.attention if row), default=0.0)
    return float(m) if m > 0 else 1.0


def _record_scale(result: GenerationResult) -> alt.Scale:
    ks = [k for k, _, _ in result.records]
    return alt.Scale(domain=[_record_label(k, label) for k, label, _ in result.records], range=[record_colour(k) for k in ks])


def _label_expr(labels: Sequence[str]) -> str:
    """A Vega expression mapping an ordinal position (``datum.value``) to its label."""
    return f"{json.dumps(list(labels), ensure_ascii=False)}[datum.value]"


def _steps(n: int, budget: int, lo: int = 9, hi: int = 16) -> int:
    """Pixels per band so that ``n`` bands fill about ``budget`` pixels, clamped to ``lo..hi``."""
    return max(lo, min(hi, budget // max(n, 1)))


def _source_strip(result: GenerationResult, df: pd.DataFrame, width: int, sx: int, title: str) -> alt.LayerChart:
    """The strip above an attention heatmap: every source token in its record's colour, the
    record number written at the first token of each record."""
    x_dom = list(range(len(result.source_tokens)))
    strip_df = df.drop_duplicates("i") if len(df) else df
    first = strip_df.drop_duplicates("record") if len(strip_df) else strip_df
    strip_x = alt.X("i:O", sort=x_dom, scale=alt.Scale(domain=x_dom), axis=None)
    base = alt.Chart(strip_df, width=width, height=16)
    strip = alt.layer(
        base.mark_rect(stroke="white", strokeWidth=0.5).encode(
            x=strip_x,
            color=alt.Color("record_label:N", scale=_record_scale(result), legend=None),
            tooltip=[alt.Tooltip("record_label:N", title="record"), alt.Tooltip("src:N", title="source token")],
        ),
        alt.Chart(first).mark_text(align="left", dx=1 - sx / 2, fontSize=10, color="#222").encode(
            x=strip_x, text=alt.Text("record:N"),
        ),
    )
    if title:
        strip = strip.properties(title=alt.Title(title, anchor="start"))
    return strip


def piece(token: str) -> str:
    """``token`` as an axis label: a lone combining mark (the dot of "İ", which lower-casing splits
    off: "i", "̇", "zmir") on a dotted circle, as mark charts show one, so that it is seen."""
    return "\u25cc" + token if token and all(unicodedata.combining(c) for c in token) else token


def attention_chart(result: GenerationResult, vmax: float = 1.0, title: str = "", plot_width: int = 380) -> alt.VConcatChart:
    """Heatmap output tokens (y, in order) × source tokens (x, in order), ``mark_rect``, under a
    strip that marks which record each source token belongs to (record colour + number).

    One x band per source token (ordinal field ``i``) and one y band per output token (``t``),
    labelled ``token rK`` / ``t token``; the size follows the token counts (about
    ``plot_width`` pixels wide, 6–16 px per band; below 11 px some x labels are left out), so show it with ``width="content"``. The colour
    scale is ``0..vmax`` (pass :func:`max_attention` of all heatmaps shown together). Clicking a
    cell selects ``{t, i}`` (point selection param ``cell``); the clicked cell gets a frame."""
    df = attention_frame(result)
    T, N = len(result.tokens), len(result.source_tokens)
    sx = _steps(N, plot_width, lo=6)
    sy = _steps(T, 460, lo=12)
    width, height = N * sx, T * sy
    font_x = 10 if sx < 14 else 11
    thin_x = "greedy" if sx < 11 else False  # narrow bands: some labels are left out (tooltips)
    src_labels = [f"{piece(tok)} r{k}" for tok, k in zip(result.source_tokens, result.record_of_source_token, strict=False)]
    out_labels = [f"{t} {_short(piece(tok), 14)}" for t, tok in enumerate(result.tokens)]
    x_dom, y_dom = list(range(N)), list(range(T))
    cell = alt.selection_point(name="cell", fields=["t", "i"], on="click", toggle=False, clear="dblclick")
    heat = (
        alt.Chart(df, width=width, height=height)
        .mark_rect()
        .encode(
            x=alt.X(
                "i:O", sort=x_dom, scale=alt.Scale(domain=x_dom), title="source tokens (rK = record K)",
                axis=alt.Axis(labelExpr=_label_expr(src_labels), labelAngle=-90, labelFontSize=font_x,
                              labelOverlap=thin_x, labelLimit=110, labelPadding=3, labelFlush=False, ticks=False),
            ),
            y=alt.Y(
                "t:O", sort=y_dom, scale=alt.Scale(domain=y_dom), title="output tokens",
                axis=alt.Axis(labelExpr=_label_expr(out_labels), labelFontSize=min(11, sy - 1), labelOverlap=False,
                              labelLimit=110, labelFlush=False, ticks=False),
            ),
            color=alt.Color(
                "weight:Q", scale=alt.Scale(domain=[0, vmax / 2, vmax], range=["#ffffff", "#6baed6", "#08306b"],
                                interpolate="rgb", clamp=True), title="attention",
                legend=alt.Legend(orient="bottom", direction="horizontal", gradientLength=min(200, max(120, width)),
                                  titleOrient="left", titleAnchor="middle"),
            ),
            stroke=alt.condition(cell, alt.value("#d62728"), alt.value(None), empty=False),
            strokeWidth=alt.condition(cell, alt.value(2.5), alt.value(0), empty=False),
            tooltip=[
                alt.Tooltip("out:N", title="output token"), alt.Tooltip("src:N", title="source token"),
                alt.Tooltip("record_label:N", title="record"), alt.Tooltip("weight:Q", format=".3f", title="attention"),
            ],
        )
        .add_params(cell)
    )
    strip = _source_strip(result, df, width, sx, title)
    return (
        alt.vconcat(strip, heat, spacing=3)
        .resolve_scale(color="independent", x="shared")
    )


def attention_bar(result: GenerationResult, t: int) -> alt.Chart:
    """Attention of output token ``t`` over the source tokens (in order), bars coloured by record."""
    df = attention_frame(result)
    df = df[df["t"] == t]
    N = len(result.source_tokens)
    labels = [f"{tok} r{k}" for tok, k in zip(result.source_tokens, result.record_of_source_token, strict=False)]
    return (
        alt.Chart(df, height=220, title=f"attention while writing token {t}: {result.tokens[t]!r}")
        .mark_bar()
        .encode(
            x=alt.X(
                "i:O", sort=list(range(N)), scale=alt.Scale(domain=list(range(N))), title="source tokens (rK = record K)",
                axis=alt.Axis(labelExpr=_label_expr(labels), labelAngle=-90, labelOverlap="greedy", labelLimit=110),
            ),
            y=alt.Y("weight:Q", title="attention", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color("record_label:N", scale=_record_scale(result), title="record",
                            legend=alt.Legend(labelLimit=200)),
            tooltip=[alt.Tooltip("src:N", title="source token"), alt.Tooltip("record_label:N", title="record"),
                     alt.Tooltip("weight:Q", format=".3f", title="attention")],
        )
        .properties(autosize=_FIT_X)
    )


# ----- training curves -----------------------------------------------------------------------------

# fill the width, keep the plot height (so a tall legend is not cut off)
_FIT_X = alt.AutoSizeParams(type="fit-x", contains="padding")
_EPOCH = alt.X("epoch:Q", title="epoch", axis=alt.Axis(tickMinStep=1, format="d"))


def curves_frame(histories: dict[str, list[dict]]) -> pd.DataFrame:
    """``{checkpoint: history}`` -> long table ``checkpoint, epoch, series, value`` (NaN dropped)."""
    rows = []
    for name, hist in histories.items():
        for h in hist:
            for key, v in h.items():
                if key != "epoch" and isinstance(v, int | float) and v == v and "epoch" in h:
                    rows.append({"checkpoint": name, "epoch": h["epoch"], "series": key, "value": float(v)})
    return pd.DataFrame(rows, columns=["checkpoint", "epoch", "series", "value"])


def _with_shipped(d: pd.DataFrame, shipped: dict | None) -> pd.DataFrame:
    d = d.copy()
    d["shipped"] = d["checkpoint"].map(lambda c: (shipped or {}).get(c)).astype("float")
    return d


def loss_chart(df: pd.DataFrame, shipped: dict[str, int | None] | None = None) -> alt.LayerChart:
    """Training / validation NLL per token and epoch, one colour per checkpoint, one dash per
    series; the shipped epoch of each checkpoint (``shipped[name]``) is a diamond on its
    validation curve. ``train_loss`` (which includes the segment model's granularity regulariser
    and so dwarfs the NLL) is only shown for checkpoints that recorded no ``train_nll``."""
    d = df[df["series"].isin(["train_loss", "train_nll", "val_nll"])]
    has_nll = set(d.loc[d["series"] == "train_nll", "checkpoint"])
    d = _with_shipped(d[~((d["series"] == "train_loss") & d["checkpoint"].isin(has_nll))], shipped)
    base = alt.Chart(d, height=260, title="NLL per token and epoch (◆ the shipped epoch)")
    y = alt.Y("value:Q", title="NLL per token", scale=alt.Scale(zero=False))
    lines = base.mark_line(point=True).encode(
        x=_EPOCH, y=y, color=alt.Color("checkpoint:N", legend=alt.Legend(labelLimit=220)),
        strokeDash=alt.StrokeDash("series:N"),
        tooltip=["checkpoint", "series", "epoch", alt.Tooltip("value:Q", format=".4f")],
    )
    marks = base.transform_filter("datum.series == 'val_nll' && datum.epoch == datum.shipped").mark_point(
        shape="diamond", size=160, filled=True, stroke="#000", strokeWidth=1
    ).encode(x=_EPOCH, y=y, color=alt.Color("checkpoint:N"),
             tooltip=["checkpoint", alt.Tooltip("epoch:Q", title="shipped epoch"), alt.Tooltip("value:Q", format=".4f")])
    return alt.layer(lines, marks).properties(autosize=_FIT_X)


def segments_chart(df: pd.DataFrame, shipped: dict[str, int | None] | None = None) -> alt.FacetChart:
    """E[#segments] against K (the number of records) during training (paper Fig. 3 in spirit),
    one panel per checkpoint that recorded E[#segments] (segment models; K alone says nothing),
    so a regulariser ablation reads at a glance; a dashed rule marks the shipped epoch."""
    seg = set(df.loc[df["series"].str.contains("exp_seg"), "checkpoint"])
    d = df[df["series"].isin(["train_exp_seg", "val_exp_seg", "train_K", "val_K"]) & df["checkpoint"].isin(seg)].copy()
    d["quantity"] = d["series"].map(
        {"train_exp_seg": "E[#segments] (train)", "val_exp_seg": "E[#segments] (dev)", "train_K": "K (train)", "val_K": "K (dev)"}
    )
    d["kind"] = d["series"].map(lambda s: "K" if s.endswith("_K") else "E[#segments]")
    d = _with_shipped(d, shipped)
    dash = alt.StrokeDash("kind:N", title="line", sort=["E[#segments]", "K"])
    base = alt.Chart(width=230, height=200)
    lines = base.mark_line(point=True).encode(
        x=_EPOCH,
        y=alt.Y("value:Q", title="segments / records per text", scale=alt.Scale(zero=False)),
        color=alt.Color("quantity:N", title="quantity", legend=alt.Legend(orient="bottom", columns=2)),
        strokeDash=dash,
        tooltip=["checkpoint", "quantity", "epoch", alt.Tooltip("value:Q", format=".2f")],
    )
    rule = base.transform_filter("isValid(datum.shipped) && datum.epoch == datum.shipped").mark_rule(
        color="#444", strokeDash=[4, 3]
    ).encode(x=alt.X("shipped:Q"), tooltip=[alt.Tooltip("shipped:Q", title="shipped epoch")])
    return (
        alt.layer(lines, rule, data=d)
        .facet(facet=alt.Facet("checkpoint:N", title=None, header=alt.Header(labelFontWeight="bold", labelLimit=260)),
               columns=3)
        .properties(title="Expected number of segments vs. K, per checkpoint (dashed: the shipped epoch)")
        .resolve_scale(x="independent", y="independent")
    )


# ----- posterior over segmentations ---------------------------------------------------------------


def posterior_frame(post, records: Sequence[Record] = (), cased: Sequence[str] | None = None) -> pd.DataFrame:
    """Long table of a :class:`segviz.posterior.TextPosterior`: one row per (token, state) with
    ``t, j, token, state, p, start, viterbi`` (``viterbi``: the cell lies on the Viterbi path)."""
    on_path = {(t, k or 0) for s, e, k in post.viterbi for t in range(s, e)}
    shown = display_tokens(post.tokens, records, cased)
    rows = []
    for t, row in enumerate(post.probs):
        for j, p in enumerate(row):
            rows.append({
                "t": t, "j": j, "token": f"{t} {shown[t][0]}", "state": "null" if j == 0 else f"{j} {post.states[j]}",
                "p": float(p), "start": float(post.start[t]), "viterbi": (t, j) in on_path,
            })
    return pd.DataFrame(rows, columns=["t", "j", "token", "state", "p", "start", "viterbi"])


def posterior_chart(post, title: str = "", records: Sequence[Record] = (), cased: Sequence[str] | None = None) -> alt.VConcatChart:
    """Heatmap tokens (y, in order) × states (x: null, then records 1..K) of P(token t lies in a
    segment of record k | text, records), with the Viterbi segmentation framed in red on top, a
    strip of record colours above, and beside it a bar per token: P(a segment starts here)."""
    df = posterior_frame(post, records, cased)
    T, S = len(post.tokens), len(post.states)
    sy = _steps(T, 460, lo=12)
    sx = 30 if S <= 8 else 22
    y_dom, x_dom = list(range(T)), list(range(S))
    shown = display_tokens(post.tokens, records, cased)
    y = alt.Y("t:O", sort=y_dom, scale=alt.Scale(domain=y_dom), title="tokens",
              axis=alt.Axis(labelExpr=_label_expr([f"{t} {_short(w or piece(post.tokens[t]), 14)}" for t, (w, _) in enumerate(shown)]),
                            labelFontSize=min(11, sy - 1), labelOverlap=False, labelLimit=110, ticks=False))
    state_labels = ["null"] + [f"{j} {_short(brief(post.states[j]), 18)}" for j in range(1, S)]
    x = alt.X("j:O", sort=x_dom, scale=alt.Scale(domain=x_dom), title="record (null = no record)",
              axis=alt.Axis(labelExpr=_label_expr(state_labels), labelAngle=-45, labelLimit=130, ticks=False,
                            labelOverlap=False))  # slanted labels never touch, but their boxes do: Vega hid every other one
    tooltip = [alt.Tooltip("token:N", title="token"), alt.Tooltip("state:N", title="record"),
               alt.Tooltip("p:Q", format=".3f", title="P(token in a segment of this record)"),
               alt.Tooltip("start:Q", format=".3f", title="P(a segment starts here)"),
               alt.Tooltip("viterbi:N", title="on the Viterbi path")]
    base = alt.Chart(df, width=S * sx, height=T * sy)
    heat = base.mark_rect().encode(
        x=x, y=y, tooltip=tooltip,
        color=alt.Color("p:Q", scale=alt.Scale(domain=[0, 1], range=["#ffffff", "#238b45"], interpolate="rgb"),
                        title="posterior", legend=alt.Legend(orient="bottom", direction="horizontal", gradientLength=120)),
    )
    path = base.transform_filter("datum.viterbi").mark_rect(filled=False, stroke="#d62728", strokeWidth=2).encode(
        x=x, y=y, tooltip=tooltip,
    )
    strip_df = pd.DataFrame({"j": x_dom, "state": [("null" if j == 0 else f"{j} {post.states[j]}") for j in x_dom]})
    strip = alt.Chart(strip_df, width=S * sx, height=14).mark_rect(stroke="white").encode(
        x=alt.X("j:O", sort=x_dom, scale=alt.Scale(domain=x_dom), axis=None),
        color=alt.Color("state:N", scale=alt.Scale(domain=list(strip_df["state"]), range=[record_colour(j) for j in x_dom]),
                        legend=None),
        tooltip=[alt.Tooltip("state:N", title="record")],
    )
    if title:
        strip = strip.properties(title=alt.Title(title, anchor="start"))
    starts = df.drop_duplicates("t")
    bars = alt.Chart(starts, width=90, height=T * sy).mark_bar(color="#555").encode(
        x=alt.X("start:Q", scale=alt.Scale(domain=[0, 1]), title="P(segment starts)", axis=alt.Axis(tickCount=2)),
        y=alt.Y("t:O", sort=y_dom, scale=alt.Scale(domain=y_dom), axis=None),
        tooltip=[alt.Tooltip("token:N", title="token"), alt.Tooltip("start:Q", format=".3f", title="P(a segment starts here)")],
    )
    body = alt.hconcat(alt.layer(heat, path), bars, spacing=4)
    return alt.vconcat(strip, body, spacing=3).resolve_scale(color="independent")
