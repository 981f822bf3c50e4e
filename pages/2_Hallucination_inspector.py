"""Hallucination inspector: screen many outputs with the automatic checker, open a flagged case.

Outputs come from running both models over dev inputs (cached per request) or from an uploaded
output file of any system (E2E: ``MR<TAB>output`` per line; WebNLG: one output per dev entry, or
``triples<TAB>output``; see segviz.uploads), aligned by the segment model.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from segviz import locate, names, service, ui, viz
from segviz.examples import examples_for
from segviz.service import OutputFileError

dataset = ui.page("Hallucination inspector", None)
st.caption(service.flag_intro(dataset))  # the kinds this dataset can raise
ss = st.session_state

SOURCES = {"run": "Run both models on dev inputs", "upload": "Upload a system's output file"}
UPLOAD_FORMATS = {  # what a line of an uploaded file holds (segviz.uploads)
    "e2e": "MR<TAB>output per line (UTF-8)",
    "webnlg": "One output per line, in the order of the dev set's entries (the file `python -m segviz.generate` "
              "writes), or `subject | predicate | object ; …<TAB>output` per line (UTF-8)",
}
source = st.radio("Outputs", list(SOURCES), format_func=SOURCES.get, horizontal=True, key="insp_source")
seg_key, pg_key = ui.checkpoint_key(dataset, "seg"), ui.checkpoint_key(dataset, "pg")

cases: list[service.Case] = []
if source == "run":
    dev, dev_msg = ui.dev_inputs(dataset)
    if dev_msg:
        ui.warning(dev_msg)
    n_inputs = len(dev) or len(examples_for(dataset))
    c1, c2, c3 = st.columns(3)
    n = c1.number_input("Number of inputs", 1, n_inputs, min(10, n_inputs), key="insp_n")
    with c2:
        constraints = ui.constraint_picker("insp_constraints")
    beam = c3.number_input("Beam size", 1, 10, 5, key="insp_beam")
    c4, c5 = st.columns([2, 1])
    how = c4.radio("Which inputs", list(service.SAMPLES), format_func=service.SAMPLES.get, horizontal=True,
                   index=list(service.SAMPLES).index("stratified"),  # the first N of WebNLG's dev set all hold one triple
                   key="insp_sample", help="Stratified: as even a share of every record count K as N allows.")
    seed = c5.number_input("Seed", 0, 1_000_000, 0, key="insp_seed", disabled=how == "first")
    errors = [ui.get_checkpoint(dataset, kind)[1] for kind in ("seg", "pg")]
    for message in filter(None, errors):  # absent or unusable: say why (an error if neither is usable)
        (ui.error if all(errors) else ui.warning)(message)
    if not all(errors) and st.button("Run both models", type="primary", key="insp_run"):
        ss.setdefault("insp_requests", {})[dataset] = (dataset, int(n), constraints, int(beam), how, int(seed))
    req = ss.get("insp_requests", {}).get(dataset)  # each dataset's last run: a switch and back keeps it
    if req:
        cases = ui.run_systems(*req[:4], seg_key, pg_key, *req[4:])
        if req[1:] != (int(n), constraints, int(beam), how, int(seed)):
            st.warning("The settings have changed since these cases were run: press **Run both models** to update them.")
else:
    upload = st.file_uploader(UPLOAD_FORMATS[dataset], type=["tsv", "txt"], key="insp_upload")
    if upload is not None:
        try:
            cases, total = ui.cases_from_file(dataset, upload.getvalue(), seg_key, ui.MAX_UPLOAD_CASES)
        except OutputFileError as e:
            ui.error(f"Cannot read {upload.name}: {e}")
        else:
            if total > len(cases):
                ui.warning(f"{upload.name} holds {total:,} outputs; the first {len(cases):,} are shown "
                           "(split the file to inspect the rest).")
        seg_error = ui.get_checkpoint(dataset, "seg")[1] if cases else None
        if seg_error:
            ui.warning(seg_error + " Texts are shown without alignment.")

if not cases:
    st.info("Run the models or upload a file to see flagged cases.")
    st.stop()

rows = service.flagged_rows(cases, dataset)
offered = service.flag_kinds(dataset)  # a row of its own: five chips did not fit half the width
kinds = st.multiselect("Kinds", offered, default=offered, key=f"insp_kinds_{dataset}")
attributes = sorted({service.attribute_of(r["record"]) for r in rows})
picked_attributes = st.multiselect("Attributes", attributes, default=[], key="insp_attributes",
                                   placeholder="all attributes")
rows = [r for r in rows if r["kind"] in kinds and (not picked_attributes or service.attribute_of(r["record"]) in picked_attributes)]
n_flagged = len({r["case"] for r in rows})
st.markdown(f"**{service.flag_summary(len(rows), n_flagged, len(cases))}** Click a column header to sort; select a row to open the case.")


def _open_row() -> None:
    sel = ss.get("insp_table")
    picked = sel.selection.rows if sel is not None else []
    if picked and picked[0] < len(ss.get("insp_rows", [])):
        ss["insp_case"] = ss["insp_rows"][picked[0]]["case"]
        ss["insp_flag"] = ss["insp_rows"][picked[0]]  # located in its text below


ss["insp_rows"] = rows
st.dataframe(
    pd.DataFrame(service.numbered_rows(rows), columns=["case", "system", "kind", "record", "text"]), hide_index=True, width="stretch",
    key="insp_table", on_select=_open_row, selection_mode="single-row",
)
with st.expander("Flags per attribute and system"):
    counts = service.attribute_counts(rows, offered)
    if counts:
        st.dataframe(pd.DataFrame(counts), hide_index=True, width="stretch", key="insp_attribute_counts")
    else:
        st.caption("No flags.")
flagged_ids = sorted({r["case"] for r in rows}) or [c.index for c in cases]
if ss.get("insp_case") not in flagged_ids:
    ss["insp_case"] = flagged_ids[0]
case_id = st.selectbox("Open case", flagged_ids, key="insp_case",
                       format_func=lambda i: f"{cases[i].number}: {service.case_label(cases[i], with_key=True)}")
case = cases[case_id]

st.subheader(f"Case {case.number}: {viz.esc(case.key)}")
st.markdown(" · ".join(f"**{k}** {viz.esc(r.label)}" for k, r in enumerate(case.records, start=1)), unsafe_allow_html=True)


def _token_key(system: str) -> str:
    """The token picker's state, one per case: a picker kept from another case would hold a
    token of that case's text (and, with other options, no valid value at all)."""
    return f"insp_token_{system}_{case.index}"


def _token_from_click(system: str) -> None:
    cell = ui.selected_cell(ss.get(f"insp_heat_{system}"))
    if cell is not None:
        ss[_token_key(system)] = cell[0]


if not case.views:  # e.g. the checkpoints became unusable after the run was requested
    ui.error("No system produced an output for this case.")
    st.stop()
view_mode = ui.view_picker("insp_view")
if view_mode == "posterior":
    st.caption(names.POSTERIOR_CAPTION)
case_param = service.records_to_param(case.records)
flag = ss.get("insp_flag")
if flag is not None and flag["case"] != case.index:
    flag = None
cols = st.columns(len(case.views))
for col, (system, view) in zip(cols, case.views.items(), strict=True):
    with col:
        res = view.result
        token = ss.get(_token_key(system))
        span = ui.segment_table_pick(view, f"insp_segments_{system}")
        status = locate.view_status_rows(view)
        where, what = ui.status_location(view, status, f"insp_status_{system}"), "row"  # a selected status row
        if where is None and flag is not None and flag.get("system_key") == system:  # else the selected flag
            where, what = service.flag_location(view, flag["kind"], flag.get("k"), flag["record"]), "flag"
        span = span or (where.span if where else None)
        ui.show_output(view, case.records, token if res and isinstance(token, int) and token < len(res.tokens) else None,
                       highlight_record=where.record if where else None, highlight_span=span)
        if where is not None:
            st.caption(f"Selected {what}: {viz.esc(where.note)}.")
        if status:
            ui.status_table(status, key=f"insp_status_{system}", selectable=True)
        if view.segment_verdicts:
            st.caption("Per-segment verdicts (select a row to frame its segment in the text):")
            ui.segment_table(view, key=f"insp_segments_{system}", records=case.records)
        if view_mode == "posterior":
            ui.show_posterior(dataset, case_param, view, case.records, seg_key, key=f"insp_post_{system}")
            continue
        if res is None or not res.attention:
            st.caption("No attention: it belongs to the system that wrote this text.")
            continue
        if not isinstance(ss.get(_token_key(system), 0), int) or ss.get(_token_key(system), 0) >= len(res.tokens):
            ss[_token_key(system)] = 0
        t = st.selectbox(
            "Token", list(range(len(res.tokens))), key=_token_key(system),
            format_func=lambda i, r=res: f"{i}: {r.tokens[i]}",
        )
        in_null = view.alignment == "as decoded" and any(s <= t < e and k is None for s, e, k in res.segments)
        if in_null:  # the null record has no input tokens: nothing to attend to
            st.info(f"Token {t} ({viz.esc(res.tokens[t])}) lies in a null segment: it realises no record, so the "
                    "segment model attended to no input token while writing it.")
        else:
            bar = viz.attention_bar(res, t)
            st.altair_chart(bar, key=f"insp_bar_{system}", width="stretch")
            ui.figure_downloads(bar, f"insp_bar_{system}", "attention", view.label, f"token-{t}")
        ui.show_token_explanation(dataset, case_param, view, t, seg_key, key=f"insp_explain_{system}")
        with st.expander("Full attention (click a cell to pick its token)"):
            heat = viz.attention_chart(res, viz.max_attention([v.result for v in case.views.values()]), view.label)
            st.altair_chart(heat, on_select=lambda s=system: _token_from_click(s), key=f"insp_heat_{system}",
                            selection_mode="cell", width="content")
            ui.figure_downloads(heat, f"insp_heat_{system}", "attention", view.label)

st.download_button(
    "Export this case (JSON)", service.case_json(dataset, case.records, list(case.views.values())),
    file_name=f"segviz-case-{case.index}.json", mime="application/json", key="insp_export", on_click="ignore",
    help="Records, every system's text with its segments, attention and verdicts.",
)
