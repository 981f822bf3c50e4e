"""Playground: enter records, generate with the segment model and the PG baseline side by side.

Thin page (docs/design.md §4): widgets -> one cached ``segviz.service`` call -> render. The request
(dataset, records, constraints, beam, checker-guided) is written to the URL on Generate, so a link
reproduces the view. Served as the first page of ``streamlit run app.py``.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from segviz import datasets, names, service, ui, viz
from segviz.examples import examples_for
from segviz.records import RecordError

dataset = ui.page(
    "Playground",
    "Each segment of the segment model's text is coloured by the record it realises (grey: no record). "
    "The PG baseline's text is coloured by forced alignment with the segment model.",
)
ss = st.session_state
qp = st.query_params


def _set_rows(rows: list[dict]) -> None:
    ss["playground_rows"] = rows
    ss["playground_editor_version"] = ss.get("playground_editor_version", 0) + 1


def _pick_example() -> None:
    choice = ss.get("playground_example")
    bundled = examples_for(dataset)
    dev = dict(ui.dev_inputs(dataset)[0])
    if choice in bundled:
        _set_rows(service.rows_from_records(dataset, bundled[choice]))
    elif choice in dev:
        _set_rows(service.rows_from_records(dataset, dev[choice]))
    ss.setdefault("playground_kept_example", {})[dataset] = choice  # shown again after a switch and back
    ss.pop("playground_paste_error", None)


def _paste() -> None:
    """Replace the table with the pasted records, or say why they cannot be read (the table and
    the pasted text are kept)."""
    try:
        rows = service.rows_from_text(dataset, ss.get(f"playground_paste_{dataset}", ""))
    except RecordError as e:
        ss["playground_paste_error"] = (dataset, f"The pasted records were not used: {e}")
        return
    ss.pop("playground_paste_error", None)
    _set_rows(rows)
    ss["playground_example"] = ss.setdefault("playground_kept_example", {})[dataset] = "—"  # the user's own records


# ----- the records: from the URL on first load, a bundled example otherwise ----------------------
kept = ss.setdefault("playground_kept", {})  # each dataset's rows as last shown: a switch and back keeps the edits
if ss.get("playground_saved"):
    kept[ss["playground_saved"][0]] = ss["playground_saved"][2]
if ss.get("playground_rows_dataset") != dataset:
    first_load = "playground_rows_dataset" not in ss
    first_example = next(iter(examples_for(dataset)))  # what the table holds until edited: the box names it
    rows = kept.get(dataset) or service.rows_from_records(dataset, examples_for(dataset)[first_example])
    example = "—" if dataset in kept else first_example
    if first_load and qp.get("records"):
        try:
            rows = service.rows_from_records(dataset, service.records_from_param(dataset, qp["records"]))
            example = "—"  # the link's own records
        except RecordError as e:  # say why, generate nothing, and drop the bad records from the URL
            ss["playground_link_error"] = f"The link's records could not be read, so nothing was generated: {e}"
            qp.pop("records", None)
    elif not first_load:  # dataset switched: the old request does not apply
        for name in ("records", "constraints", "beam", "guided"):
            qp.pop(name, None)
        ss.pop("playground_request", None)
        example = ss.get("playground_kept_example", {}).get(dataset, example)  # its own box, not "—"
    ss["playground_example"] = example
    _set_rows(rows)
    ss["playground_rows_dataset"] = dataset
if ss.get("playground_link_error") and "playground_request" not in ss:  # until something is generated
    ui.error(ss["playground_link_error"])

# the user's edits outlive a visit to another page (Streamlit drops the editor's own state there)
saved = ss.get("playground_saved")  # (dataset, editor version, rows) as last shown
version = ss["playground_editor_version"]
if saved and saved[:2] == (dataset, version) and f"playground_editor_{version}" not in ss and saved[2] != ss["playground_rows"]:
    _set_rows(saved[2])
last = ss.get("playground_request")
if last and len(last) == 4:  # a request from before the checker-guided option
    last = ss["playground_request"] = (*last, False)
last = last if last and last[0] == dataset else None  # the last request's settings, when the URL has none

edits = ss.get(f"playground_editor_{version}") or {}  # the editor's changes to the rows it was given
if any(edits.get(k) for k in ("edited_rows", "added_rows", "deleted_rows")):
    ss["playground_example"] = ss.setdefault("playground_kept_example", {})[dataset] = "—"  # no longer the example

dev, dev_msg = ui.dev_inputs(dataset)
options = ["—"] + list(examples_for(dataset)) + [key for key, _ in dev]
dev_labels = {key: service.input_label(key, records, n=1000) for key, records in dev}  # whole: MRs share beginnings
left, right = st.columns([3, 2])
with left:
    st.selectbox(
        "Load an example (bundled, then dev set)", options, key="playground_example", on_change=_pick_example,
        format_func=lambda o: dev_labels.get(o, o),
        help=viz.esc(dev_msg) if dev_msg else "Bundled examples first, then distinct inputs of the dev set.",
    )
    table = st.data_editor(
        pd.DataFrame(ss["playground_rows"], columns=service.columns(dataset), dtype="string"),
        num_rows="dynamic", width="stretch", hide_index=True,
        key=f"playground_editor_{ss['playground_editor_version']}",
        column_config={c: st.column_config.TextColumn(c) for c in service.columns(dataset)},
    )
    with st.expander("Paste records as the data writes them"):
        st.text_area(
            "Records", key=f"playground_paste_{dataset}", height=110, placeholder=datasets.get(dataset).written,
            help="One input as the dataset's files write it, over one line or several; the table is replaced by its records.",
            on_change=lambda: ss.pop("playground_paste_error", None),  # an old message goes with the text it was about
        )
        st.button("Replace the table with these records", key="playground_paste_go", on_click=_paste)
        if (paste_error := ss.get("playground_paste_error")) and paste_error[0] == dataset:
            ui.error(paste_error[1])
with right:
    constraints = ui.constraint_picker("playground_constraints", qp.get("constraints") or (last[2] if last else "rm"))
    try:
        beam_default = min(max(int(qp.get("beam") or (last[3] if last else 5)), 1), 10)
    except ValueError:
        beam_default = 5
    beam = st.number_input("Beam size", 1, 10, beam_default, key="playground_beam")
    guided_default = qp.get("guided") == "1" if "guided" in qp else bool(last and last[4])
    guided = st.checkbox(
        "Checker-guided", guided_default, key="playground_guided", disabled=constraints == "none",
        help="A separate setting, not the paper's decoding: +R / +RM keep the model's own unconstrained text "
        "where the automatic checker finds it states every record exactly; elsewhere the checker picks, among "
        "the texts of the constrained beam and of a wider one, the text with the fewest faults (then the fewest "
        "values said with another relation's words) that rewords the least of the model's own "
        "(README, \"Checker-guided decoding\"). The unconstrained outputs (ours, PG) stay the model's own, "
        "so it is off for \"ours\".",
    ) and constraints != "none"  # a box left ticked does not reach the request, the URL or the export
    go = st.button("Generate", type="primary", key="playground_generate")

edited = table.to_dict("records")
ss["playground_saved"] = (dataset, ss["playground_editor_version"], service.plain_rows(edited))
parsed = None
try:
    parsed = service.records_from_rows(dataset, edited)
    ui.show_messages(parsed.warnings)
except RecordError as e:
    ui.error(f"Invalid records: {e}")

if go and parsed is not None:
    param = service.records_to_param(parsed.records)
    ss["playground_request"] = (dataset, param, constraints, int(beam), guided)
    qp.update({"dataset": dataset, "records": param, "constraints": constraints, "beam": str(int(beam)), "guided": str(int(guided))})
elif "playground_request" not in ss and qp.get("records") and parsed is not None:
    # a deep link: reproduce the linked view without a click
    ss["playground_request"] = (dataset, service.records_to_param(parsed.records), constraints, int(beam), guided)

request = ss.get("playground_request")
if request is not None and request[0] == dataset and not qp.get("records"):  # back from another page: the link again
    qp.update({"records": request[1], "constraints": request[2], "beam": str(request[3]), "guided": str(int(request[4]))})
if request is None or request[0] != dataset:
    st.info("Edit the records and press **Generate**.")
    st.stop()

seg_key = ui.checkpoint_key(dataset, "seg")
cmp = ui.compare(*request, seg_key, ui.checkpoint_key(dataset, "pg"))
current = (dataset, service.records_to_param(parsed.records), constraints, int(beam), guided) if parsed is not None else None
stale = current != tuple(request)
if not stale:  # the warnings of the records shown; edited records bring their own (above)
    ui.show_messages(cmp.warnings)
else:
    st.warning(
        "The records or settings have changed since this output was generated: it is greyed out. "
        "Press **Generate** to update it."
    )
guided_note = " · checker-guided" if cmp.guided and cmp.constraints != "none" else ""  # no effect on ours
st.caption(f"Constraints: {names.system_name('seg', cmp.constraints)} · beam {cmp.beam}{guided_note} · {len(cmp.records)} record{'s' * (len(cmp.records) != 1)}")

# clicked heatmap cells (chart selection state; tests inject playground_pick_<system> instead)
picks = {s: ui.selected_cell(ss.get(f"playground_heat_{s}")) or ss.get(f"playground_pick_{s}") for s in ("seg", "pg")}
views = {"seg": cmp.seg, "pg": cmp.pg}
status = service.status_rows(cmp)
cols = st.columns(2)
for col, (system, view) in zip(cols, views.items(), strict=True):
    with col:
        pick = picks[system]
        res = view.result
        t, rec = None, None
        if pick and res is not None and pick[0] < len(res.tokens) and pick[1] < len(res.source_tokens):
            t, rec = pick[0], res.record_of_source_token[pick[1]]
        span = ui.segment_table_pick(view, f"playground_segments_{system}")
        where = ui.status_location(view, status, "playground_status")  # a selected row of the status table
        if where is not None:
            rec, span = where.record if rec is None else rec, span or where.span
        ui.show_output(view, cmp.records, t, rec, highlight_span=span, stale=stale)
        choice = service.guided_choice(res) if cmp.guided and res is not None else None
        if choice:
            st.caption(f"Checker-guided: {choice}")  # fixed words and numbers, no user text
        if res is not None and (second := service.second_note(res)):
            st.caption(second)  # fixed words and numbers, no user text
        if res is not None and (again := service.resegment_note(res)):
            st.caption(again)  # fixed words, no user text
        if note := service.misplaced_note(view):
            st.caption(viz.esc(note))  # record numbers and lexicon words
        if note := service.invented_note(dataset, cmp.records, view):
            st.caption(viz.esc(note))  # words of the model's text
        if where is not None:
            st.caption(f"Selected row: {viz.esc(where.note)}.")

st.subheader("Per-record status")
st.caption("The automatic checker's verdict for every input record (and facts not in the input). "
           "Select a row to mark its record in both texts: its segments underlined, a hallucinated value's segment framed. "
           + datasets.get(dataset).checker_note)  # fixed words
ui.status_table(status, key="playground_status", selectable=True)
st.subheader("Per-segment verdicts")
st.caption(
    "Does each segment say its own record and nothing else? Select a row to frame its segment in the text above; "
    "segments that are not faithful have a dotted red outline."
)
cols = st.columns(2)
for col, (system, view) in zip(cols, views.items(), strict=True):
    with col:
        st.markdown(f"**{viz.esc(view.label)}**")
        if not view.segment_verdicts:
            st.caption("No segments.")
            continue
        ui.segment_table(view, key=f"playground_segments_{system}", records=cmp.records)

st.subheader("Attention or posterior")
view_mode = ui.view_picker("playground_view", qp.get("view", "attention"))
if qp.get("view", "attention") != view_mode:
    qp["view"] = view_mode
if view_mode == "posterior":
    st.caption(names.POSTERIOR_CAPTION)
    cols = st.columns(2)
    for col, (system, view) in zip(cols, views.items(), strict=True):
        with col:
            ui.show_posterior(dataset, request[1], view, cmp.records, seg_key, key=f"playground_post_{system}")
    with st.expander("Posterior of any text (a reference, your own sentence)"):
        own = st.text_area("Text to align with the records", key="playground_own_text",
                           placeholder="e.g. a reference from the dev set, or a sentence with an error in it")
        if own.strip():
            try:
                own_view = ui.align_text(dataset, request[1], own.strip(), seg_key)
            except RecordError as e:
                ui.error(str(e))
            else:
                ui.show_output(own_view, cmp.records)
                ui.show_posterior(dataset, request[1], own_view, cmp.records, seg_key, key="playground_post_own")
else:
    st.caption("Output tokens × source tokens, one colour scale for both systems. Click a cell to highlight that token and record.")
cols = st.columns(2) if view_mode == "attention" else []
for col, (system, view) in zip(cols, views.items(), strict=False):
    with col:
        res = view.result
        spec = ui.attention_spec(tuple(request), seg_key, ui.checkpoint_key(dataset, "pg"), system)
        if spec is None:
            st.info(f"{view.label}: no attention to show.")
            continue
        st.vega_lite_chart(
            spec=spec, on_select="rerun", key=f"playground_heat_{system}",
            selection_mode="cell", width="content",  # sized by the token counts (viz.attention_chart)
        )
        ui.figure_downloads(spec, f"playground_heat_{system}", "attention", view.label)
        pick = picks[system]
        if pick and pick[0] < len(res.tokens) and pick[1] < len(res.source_tokens):
            t, i = pick
            k = res.record_of_source_token[i]
            label = dict((r[0], r[1]) for r in res.records).get(k, "?")
            st.markdown(
                f"Selected: output token {t} **{viz.esc(res.tokens[t])}** → source token "
                f"**{viz.esc(res.source_tokens[i])}** of record {k} ({viz.esc(label)}), "
                f"attention {res.attention[t][i]:.3f}",
                unsafe_allow_html=True,
            )
            ui.show_token_explanation(dataset, request[1], view, t, seg_key, key=f"playground_explain_{system}")

st.download_button(
    "Export this case (JSON)",
    service.case_json(dataset, cmp.records, [cmp.seg, cmp.pg], constraints=cmp.constraints, beam=cmp.beam, guided=cmp.guided),
    file_name="segviz-case.json", mime="application/json", key="playground_export",
    help="Records, settings, both texts with their segments, attention and verdicts.",
)
if view_mode == "attention":  # the posterior of both texts is computed ahead, so the toggle finds it ready
    ui.prefetch_posteriors(dataset, request[1], [cmp.seg, cmp.pg], seg_key)
