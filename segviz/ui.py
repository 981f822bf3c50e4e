"""The only segviz module that imports Streamlit: cached loaders, shared sidebar, small renderers.

Every page calls :func:`sidebar` first, so a deep link to any page works on its own. Models are
loaded once per server process (``st.cache_resource``) keyed by path *and* the weights' mtime,
so a checkpoint that training rewrites after each epoch is picked up on the next run. Results
are cached with ``st.cache_data`` keyed by the request, so a rerun that does not generate
recomputes nothing.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pandas as pd
import streamlit as st

from segviz import checkpoint as ckpt
from segviz import datasets, decode, export, locate, names, service, uploads, viz
from segviz.data import DataError, default_data_dir, load_split, unique_inputs
from segviz.examples import examples_for
from segviz.records import Record, RecordError

log = logging.getLogger(__name__)


@st.cache_resource(show_spinner="Loading model…", max_entries=8)
def load_checkpoint(path: str, stamp: float | None = None) -> ckpt.Checkpoint:
    """Checkpoints are loaded once per server process, keyed by path and weights mtime."""
    return ckpt.load(Path(path))


def checkpoint_key(dataset: str, kind: str) -> tuple[str, float] | None:
    """``(path, mtime)`` of the checkpoint the app uses for ``dataset``/``kind``; None if absent."""
    path = service.checkpoint_path(dataset, kind)
    stamp = service.checkpoint_stamp(path)
    return None if stamp is None else (str(path), stamp)


def get_checkpoint(dataset: str, kind: str) -> tuple[ckpt.Checkpoint | None, str | None]:
    """The checkpoint, or ``None`` and a message saying why it is unusable."""
    key = checkpoint_key(dataset, kind)
    if key is None:
        return None, service.missing_message(dataset, kind)
    return _load(key, dataset, kind)


def _from_key(key: tuple[str, float] | None, dataset: str, kind: str) -> ckpt.Checkpoint | None:
    return _load(key, dataset, kind)[0]


def _load(key: tuple[str, float] | None, dataset: str, kind: str) -> tuple[ckpt.Checkpoint | None, str | None]:
    """The ``kind`` model of ``dataset`` at ``key``, or ``None`` and why it is unusable (``None``
    if it is absent)."""
    if key is None:
        return None, None
    try:
        ck = load_checkpoint(*key)
    except ckpt.CheckpointError as e:
        return None, service.missing_message(dataset, kind, e)
    problem = service.checkpoint_mismatch(ck, dataset, kind)
    return (None, service.missing_message(dataset, kind, problem)) if problem else (ck, None)


def _explain(views: dict[str, service.SystemView], errors: dict[str, str | None]) -> None:
    for kind, view in views.items():  # a view without output because its checkpoint is unusable says why
        if view.result is None and errors.get(kind):
            view.error = errors[kind]


def page(title: str, caption: str | None = None) -> str:
    """Every page's head (tab title, shared :func:`sidebar`, title, caption); returns the dataset picked."""
    st.set_page_config(page_title=f"segviz · {title}", page_icon="🧩", layout="wide")
    dataset = sidebar()["dataset"]
    st.title(title)
    if caption:
        st.caption(caption)
    return dataset


def sidebar() -> dict:
    """Shared sidebar: dataset switch (kept in the URL as ``?dataset=``, and in the session, since a
    page link drops the URL's parameters and Streamlit a widget's state) and which checkpoints
    were found. Returns ``{"dataset", "checkpoints": {kind: path or None}}``."""
    qp = st.query_params
    default = qp.get("dataset") or st.session_state.get("sidebar_dataset_last", "e2e")
    options = list(names.DATASET_LABELS)
    index = options.index(default) if default in options else 0
    dataset = st.sidebar.radio(
        "Dataset", options, index=index, format_func=names.DATASET_LABELS.get, key="sidebar_dataset"
    )
    st.session_state["sidebar_dataset_last"] = dataset
    if qp.get("dataset") != dataset:
        qp["dataset"] = dataset
    found = {}
    with st.sidebar.expander("Checkpoints", expanded=False):
        for kind in ("seg", "pg"):
            key = checkpoint_key(dataset, kind)
            found[kind] = key[0] if key else None
            mark = "found" if key else "**missing**"
            st.markdown(f"{names.MODEL_LABELS[kind]}: {mark}  \n`{service.checkpoint_path(dataset, kind)}`")
    return {"dataset": dataset, "checkpoints": found}


# ----- cached service calls -------------------------------------------------------------------------


@st.cache_data(show_spinner="Generating with both models…", max_entries=128)
def compare(
    dataset: str, records_param: str, constraints: str, beam: int, guided: bool, seg_key, pg_key
) -> service.Comparison:
    """:func:`segviz.service.compare`, cached by request and checkpoint versions."""
    records = service.records_from_param(dataset, records_param)
    (seg, seg_error), (pg, pg_error) = _load(seg_key, dataset, "seg"), _load(pg_key, dataset, "pg")
    cmp = service.compare(dataset, records, seg, pg, constraints, beam, guided)
    _explain({"seg": cmp.seg, "pg": cmp.pg}, {"seg": seg_error, "pg": pg_error})
    return cmp


@st.cache_data(show_spinner="Decoding with the plan…", max_entries=128)
def generate_with_plan(dataset: str, records_param: str, plan: tuple[int, ...], beam: int, seg_key) -> service.SystemView:
    records = service.records_from_param(dataset, records_param)
    return service.generate_with_plan(dataset, records, _from_key(seg_key, dataset, "seg"), list(plan), beam)


@st.cache_data(show_spinner="Finding the model's plan and other likely plans…", max_entries=64)
def plan_overview(dataset: str, records_param: str, beam: int, seg_key, n: int = 4, seed: int = 0) -> service.PlanOverview:
    """:func:`segviz.service.plan_overview`, cached by records, beam and checkpoint version."""
    records = service.records_from_param(dataset, records_param)
    return service.plan_overview(dataset, records, _from_key(seg_key, dataset, "seg"), beam, n, seed)


@st.cache_data(show_spinner="Sampling structures…", max_entries=64)
def sample_plans(dataset: str, records_param: str, n: int, seed: int, beam: int, seg_key) -> list[service.SystemView]:
    records = service.records_from_param(dataset, records_param)
    return service.sample_plans(dataset, records, _from_key(seg_key, dataset, "seg"), n, seed, beam)


@st.cache_data(show_spinner=False, max_entries=256)  # no spinner: also computed ahead, in prefetch_posteriors
def text_posterior(dataset: str, records_param: str, tokens: tuple[str, ...], seg_key):
    """:func:`segviz.service.text_posterior` of ``tokens``, cached by text, records and checkpoint."""
    records = service.records_from_param(dataset, records_param)
    return service.text_posterior(records, list(tokens), _from_key(seg_key, dataset, "seg"))


@st.cache_data(show_spinner=False, max_entries=256)
def _posterior_spec(dataset: str, records_param: str, tokens: tuple[str, ...], cased, title: str, seg_key) -> dict:
    """The posterior heatmap as a Vega-Lite spec, built (unvalidated: the figure is fixed code) once per text."""
    records = service.records_from_param(dataset, records_param)
    post = text_posterior(dataset, records_param, tokens, seg_key)
    return viz.posterior_chart(post, title, records, cased).to_dict(validate=False)


@st.cache_data(show_spinner=False, max_entries=128)
def attention_spec(request: tuple, seg_key, pg_key, system: str) -> dict | None:
    """The Playground's attention heatmap of ``system`` ("seg" / "pg") for ``request`` (dataset, records, constraints,
    beam, guided) as a Vega-Lite spec, both systems on one colour scale; built once per output (unvalidated: fixed code)."""
    cmp = compare(*request, seg_key, pg_key)
    view = cmp.seg if system == "seg" else cmp.pg
    if view.result is None or not view.result.attention:
        return None
    vmax = viz.max_attention([cmp.seg.result, cmp.pg.result])
    return viz.attention_chart(view.result, vmax, view.label).to_dict(validate=False)


def prefetch_posteriors(dataset: str, records_param: str, views: list[service.SystemView], seg_key) -> None:
    """Compute (and cache) the posterior views of ``views`` in a background thread once the page is drawn, so that
    switching to the posterior finds them ready; the page calls it last (it waits for nothing)."""
    jobs = [(tuple(v.result.tokens), tuple(v.cased or ()) or None, v.label) for v in views if v.result and v.result.tokens]
    if not jobs or _load(seg_key, dataset, "seg")[0] is None:  # no usable segment model: the view says why
        return

    def work() -> None:  # best effort: the view computes (and reports) it again if asked
        try:
            [_posterior_spec(dataset, records_param, *job, seg_key) for job in jobs]
        except Exception as e:  # noqa: BLE001
            log.info("posterior prefetch failed: %s", e)

    thread = threading.Thread(target=work, name="segviz-prefetch-posterior", daemon=True)
    thread.start()


@st.cache_data(show_spinner="Aligning the text…", max_entries=64)
def align_text(dataset: str, records_param: str, text: str, seg_key) -> service.SystemView:
    """:func:`segviz.service.align_text`, cached (raises RecordError for a text without words)."""
    records = service.records_from_param(dataset, records_param)
    return service.align_text(dataset, records, text, _from_key(seg_key, dataset, "seg"))


def dev_inputs(dataset: str) -> tuple[list[tuple[str, list[Record]]], str | None]:
    """Every distinct dev input ``(key, records)``, or a message why none (all of them: the first
    300 of WebNLG's had 1 or 2 triples only, so no sample reached a longer input)."""
    return _dev_inputs(dataset, str(default_data_dir()))


@st.cache_data(show_spinner="Reading the dev set…", max_entries=4)
def _dev_inputs(dataset: str, data_dir: str) -> tuple[list[tuple[str, list[Record]]], str | None]:
    try:
        exs = unique_inputs(load_split(dataset, "dev", data_dir))
    except (DataError, RecordError, OSError, ValueError) as e:
        return [], f"Dev data unavailable ({e}). Using the bundled examples only."
    return [(ex.key, ex.records) for ex in exs], None


# ----- renderers ---------------------------------------------------------------------------------------


def error(message: object) -> None:
    """``st.error`` showing ``message`` literally: what a user typed or uploaded is never Markdown."""
    st.error(viz.esc(message))


def warning(message: object) -> None:
    """``st.warning`` showing ``message`` literally."""
    st.warning(viz.esc(message))


def show_messages(warnings: list[str]) -> None:
    for w in warnings:
        warning(w)


def show_output(view: service.SystemView, records: list[Record], highlight_token=None, highlight_record=None,
                highlight_span=None, stale: bool = False) -> None:
    """One system's coloured text (each segment's record and verdict on hover), legend and
    timing, or why it has none. ``stale``: greyed out, the inputs have changed since."""
    st.markdown(f"**{viz.esc(view.label)}**")
    if view.error:
        error(view.error)
        return
    res = view.result
    if res.fallback_used:
        st.warning("The constraints (or the forced plan) could not be met; this is the best unconstrained output.")
    st.markdown(
        viz.segments_html(res, records, highlight_token, highlight_record, verdicts=view.segment_verdicts,
                          highlight_span=highlight_span, cased=view.cased, stale=stale),
        unsafe_allow_html=True,
    )
    st.markdown(viz.legend_html(res, highlight_record, stale=stale), unsafe_allow_html=True)
    if not res.segments:
        how = "not aligned (no segment model loaded)"
    elif view.alignment == "forced alignment":
        how = "segments from forced alignment by the segment model"
    else:
        how = "segments as decoded"
    plan = f" · plan {' → '.join(map(str, res.plan))}" if res.plan else ""
    st.caption(f"{how}{plan} · {len(res.tokens)} tokens · {res.elapsed_ms:.0f} ms · hover a segment for its record and verdict")


def segment_table(view: service.SystemView, key: str, records: list[Record] = ()) -> tuple[int, int] | None:
    """The per-segment verdicts of ``view`` as a table; returns ``(start, end)`` of the segment
    whose row is selected (tests set ``session_state[key + "_pick"]`` to a row number instead)."""
    rows = service.segment_rows(view, records)
    if not rows:
        return None
    df = pd.DataFrame(rows)
    df["verdict"] = df["verdict"].map(lambda v: viz.VERDICT_ICONS.get(v, v))
    st.dataframe(
        df[["segment", "verdict", "record", "text"]], hide_index=True, width="stretch", key=key,
        on_select="rerun", selection_mode="single-row",
        column_config={"segment": st.column_config.NumberColumn("#", width="small"),
                       "verdict": st.column_config.TextColumn("verdict", width="small"),
                       "record": st.column_config.TextColumn("record", width="medium")},
    )
    return segment_table_pick(view, key)


def segment_table_pick(view: service.SystemView, key: str) -> tuple[int, int] | None:
    """``(start, end)`` of the segment selected in :func:`segment_table` ``key`` (read from the
    session state, so the text drawn above the table can frame it), or None."""
    row = _picked_row(service.segment_rows(view), key)
    return None if row is None else (row["start"], row["end"])


def _picked_row(rows: list[dict], key: str) -> dict | None:
    """The selected row of table ``key`` (tests set ``session_state[key + "_pick"]`` to a row number), or None."""
    try:
        picked = (st.session_state[key].selection.rows or [None])[0]
    except (KeyError, AttributeError, TypeError):  # not drawn yet in this session
        picked = None
    picked = st.session_state.get(f"{key}_pick") if picked is None else picked
    return rows[picked] if picked is not None and 0 <= picked < len(rows) else None


@st.cache_data(show_spinner=False, max_entries=256)
def explain_token(dataset: str, records_param: str, tokens: tuple[str, ...], t: int, record: int | None, seg_key):
    """:func:`segviz.service.explain_token`, cached."""
    records = service.records_from_param(dataset, records_param)
    return service.explain_token(records, list(tokens), t, record, _from_key(seg_key, dataset, "seg"))


def show_token_explanation(dataset: str, records_param: str, view: service.SystemView, t: int, seg_key, key: str) -> None:
    """For token ``t`` of the segment model's own text: the record of its segment (or that it is
    null), generate vs copy, its log-probability and the 5 most probable words there."""
    res = view.result
    if res is None or view.alignment != "as decoded" or seg_key is None or not 0 <= t < len(res.tokens):
        return
    k = next((k for s, e, k in res.segments if s <= t < e), None)
    try:
        ex = explain_token(dataset, records_param, tuple(res.tokens), t, k, seg_key)
    except RecordError as e:
        error(str(e))
        return
    names = {j: label for j, label, _ in res.records}
    where = ("a **null** segment: its record is null, so there is no input to attend to or copy from and the word "
             "comes from the vocabulary alone") if k is None else f"a segment of record {k} ({viz.esc(names.get(k, '?'))})"
    st.markdown(
        f"Token {t} **{viz.esc(ex.token)}** lies in {where}. Under that record: p(generate) {ex.p_generate:.2f}; "
        f"p(token) = {ex.p_from_vocab:.3f} from the vocabulary + {ex.p_from_copy:.3f} copied = "
        f"{ex.p_from_vocab + ex.p_from_copy:.3f} (log-probability {ex.log_prob:.2f}).",
        unsafe_allow_html=True,
    )
    st.dataframe(pd.DataFrame([{"alternative": w, "probability": round(p, 4)} for w, p in ex.top]), hide_index=True,
                 key=key, width="content")
    st.caption("The 5 most probable words at this point under the segment's record (the model's distribution, "
               "before the decoding rules).")


def view_picker(key: str, default: str = "attention") -> str:
    """Toggle between the attention heatmaps and the posterior over segmentations."""
    options = list(names.VIEWS)
    return st.radio("Show", options, index=options.index(default) if default in options else 0,
                    format_func=names.VIEWS.get, horizontal=True, key=key)


def show_posterior(dataset: str, records_param: str, view: service.SystemView, records: list[Record], seg_key,
                   key: str) -> None:
    """The segment model's posterior heatmap of ``view``'s text, or why there is none."""
    res = view.result
    if res is None or not res.tokens:
        st.info(f"{view.label}: no text to show the posterior of.")
        return
    if seg_key is None:
        st.info("The posterior needs the segment model, and none is loaded.")
        return
    try:
        post = text_posterior(dataset, records_param, tuple(res.tokens), seg_key)
        spec = _posterior_spec(dataset, records_param, tuple(res.tokens), tuple(view.cased or ()) or None, view.label, seg_key)
    except RecordError as e:  # records the app cannot take back from their URL form
        error(f"{view.label}: no posterior: {e}")
        return
    st.vega_lite_chart(spec=spec, key=key, width="content")
    figure_downloads(spec, key, "posterior", view.label)
    st.caption(
        f"log p(text | records) = {post.log_prob:.2f} (all segmentations) · Viterbi: {len(post.viterbi)} segments · "
        f"{post.elapsed_ms:.0f} ms"
    )


def figure_downloads(chart, key: str, *name: object) -> None:
    """"Figure (SVG)" / "Figure (PNG)" buttons for ``chart`` (Altair or a spec), rendered only when clicked."""
    with st.container(horizontal=True, key=f"{key}_figure"):
        for fmt, mime in export.FORMATS.items():
            st.download_button(
                f"Figure ({fmt.upper()})", lambda f=fmt: export.figure(chart, f), file_name=export.file_name(*name, fmt=fmt),
                mime=mime, key=f"{key}_{fmt}", on_click="ignore", help=f"This chart as {fmt.upper()}, for a paper or slides.",
            )


def status_table(rows: list[dict], key: str, selectable: bool = False, narrow: bool = False) -> None:
    """Per-record verdicts with icons and words (not colour alone); ``selectable``: see :func:`status_location`;
    ``narrow`` (a table in a column): the record column is kept medium wide, so the verdicts stay in view."""
    if not rows:
        st.info("No verdicts (no system produced an output).")
        return
    df = pd.DataFrame(rows)
    if "#" in df.columns:  # facts not in the input have no number: blank, not "None"
        df["#"] = df["#"].map(lambda v: "" if v is None or v != v else str(int(v)))
    for col in df.columns[2:]:
        df[col] = df[col].map(lambda s: names.STATUS_ICONS.get(s, s))
    select = {"on_select": "rerun", "selection_mode": "single-row"} if selectable else {}
    config = None
    if narrow and "record" in df.columns:  # a WebNLG triple without its subject, which the text's chips name
        df["record"] = df["record"].map(viz.brief)
        config = {"record": st.column_config.TextColumn("record", width=140, help="relation | object (the subject is in the chips)")}
    st.dataframe(df, hide_index=True, key=key, width="stretch", column_config=config, **select)


def status_location(view: service.SystemView, rows: list[dict], key: str):
    """Where the row selected in status table ``key`` is in ``view``'s text (:mod:`segviz.locate`), or None."""
    row = _picked_row(rows, key)
    return None if row is None else locate.status_location(view, row)


def selected_cell(event) -> tuple[int, int] | None:
    """``(t, i)`` of the clicked heatmap cell in an ``st.altair_chart`` selection event."""
    try:
        points = event.selection.get("cell") or []
    except AttributeError:
        return None
    if isinstance(points, dict):
        points = [points]
    for p in points:
        if isinstance(p, dict) and "t" in p and "i" in p:
            return int(p["t"]), int(p["i"])
    return None


def constraint_picker(key: str, default: str = "rm") -> str:
    options = list(decode.CONSTRAINTS)
    return st.radio(
        "Constraints", options, index=options.index(default) if default in options else 2,
        format_func=names.LEVEL_NAMES.get, horizontal=True, key=key,
        help=" · ".join(f"{c.label}: {c.help}" for c in decode.CONSTRAINTS.values()),
    )


def run_systems(dataset: str, n: int, constraints: str, beam: int, seg_key, pg_key, how: str = "first",
                seed: int = 0) -> list[service.Case]:
    """Both systems over ``n`` dev inputs (bundled examples without a dev set) picked by :func:`service.sample_inputs`
    (``how``, ``seed``), with a progress bar; cached by request, data folder and checkpoint versions."""
    return _run_systems(dataset, str(default_data_dir()), n, constraints, beam, seg_key, pg_key, how, seed)


@st.cache_data(show_spinner=False, max_entries=16)
def _run_systems(dataset: str, data_dir: str, n: int, constraints: str, beam: int, seg_key, pg_key, how: str = "first",
                 seed: int = 0) -> list[service.Case]:
    inputs = dev_inputs(dataset)[0] or list(examples_for(dataset).items())
    bar = st.progress(0.0, text="Decoding…")  # created inside: the cache can replay it
    cases = service.run_systems(
        dataset, service.sample_inputs(inputs, n, how, seed), _from_key(seg_key, dataset, "seg"),
        _from_key(pg_key, dataset, "pg"), constraints, beam, progress=progress_callback(bar, "Decoding"),
    )
    bar.empty()
    return cases


MAX_UPLOAD_CASES = 1000  # an uploaded file's first lines that are aligned and checked (about 20 ms each)


@st.cache_data(show_spinner=False, max_entries=16)
def cases_from_file(dataset: str, data: bytes, seg_key, cap: int = MAX_UPLOAD_CASES) -> tuple[list[service.Case], int]:
    """An uploaded output file (:mod:`segviz.uploads`) as at most ``cap`` cases, with a progress bar, and how many
    it holds (raises OutputFileError, not cached)."""
    paired = datasets.get(dataset).parse_upload is not None  # bare lines pair with the dev inputs
    located = uploads.parse_lines(dataset, data, _webnlg_dev(str(default_data_dir()), dataset) if paired else None)
    pairs = [(records, text) for _, records, text in located[:cap]]
    bar, lines = st.progress(0.0, text="Aligning and checking…"), [n for n, _, _ in located[:cap]]
    cases = service.cases_from_outputs(dataset, pairs, _from_key(seg_key, dataset, "seg"), lines=lines,
                                       progress=progress_callback(bar, "Aligning and checking"))
    bar.empty()
    return cases, len(located)


@st.cache_data(show_spinner="Reading the WebNLG dev set…", max_entries=2)
def _webnlg_dev(data_dir: str, dataset: str = "webnlg") -> list[list[Record]] | None:
    try:  # the dev entries an uploaded output file is paired with, or None without the data
        return uploads.dev_entries(data_dir, dataset)
    except (OSError, RecordError, ValueError) as e:
        log.info("no WebNLG dev set for uploads: %s", e)
        return None


def progress_callback(bar, what: str):
    """A ``progress(done, total)`` callback that drives an ``st.progress`` bar."""
    return lambda done, total: bar.progress(done / max(total, 1), text=f"{what}: {done}/{total}")
