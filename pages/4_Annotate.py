"""Annotate: the paper's human evaluation as a campaign (Shen et al. 2020, §5 "Metrics").

Annotators judge one blinded output at a time: fluency 1–5, and per input record whether the
text states it wrongly, repeats it or misses it (pre-ticked by the automatic checker; the
annotator confirms or corrects), plus wrong facts outside all records, a comment and an optional
alignment correction. Every change is saved at once, at the finest grain (one box, the fluency,
the comment ...), so two tabs of one annotator never overwrite each other; a tab that shows
answers older than the store's is told so and shows the saved ones. The position and answers
come from the store, so an annotator resumes where they left off from any browser
(``/Annotate?annotator=NAME&campaign=NAME``). Thin page: the logic is in
:mod:`segviz.annotate.workflow`.
"""

from __future__ import annotations

import math
from datetime import date

import pandas as pd
import streamlit as st

from segviz import ui, viz
from segviz.annotate import (
    FLAG_NAMES,
    AnnotationError,
    Store,
    agreement,
    auto_rows,
    default_url,
    display_url,
    export_csv,
    export_jsonl,
    import_file,
    is_done,
    results_table,
    validate_annotator,
)
from segviz.annotate import workflow as sv

FLUENCY_HELP = "1 = not understandable, 3 = understandable with errors, 5 = perfectly fluent (grammar only)"
FLAG_HELP = {"wrong": "the text states this record with a wrong value",
             "repeated": "the text states this record more than once",
             "missing": "the text does not state this record"}


@st.cache_resource(show_spinner=False)
def get_store(url: str) -> Store:
    """One store (engine, connection pool) per database URL and server process."""
    return Store(url)


# ---------------------------------------------------------------------------------------------
# Saving: every widget saves its own field the moment it changes


def _last() -> dict:
    """The last value this session had for each judgement widget, by key: the value it was drawn
    with, or the one its callback last took. Kept while the widget is off screen (another item
    shown), unlike Streamlit's own widget state."""
    return st.session_state.setdefault("ann_last", {})


def _drawn(key: str, value):
    """Remember the value widget ``key`` was just drawn with (see :func:`_changed`); returns it."""
    _last()[key] = value
    return value


def _changed(key: str) -> bool:
    """Whether widget ``key`` now holds a change made by the annotator, i.e. a value other than the
    last one this session had for it (then that value becomes the last one).

    A browser can send back the values of widgets that the latest finished run no longer drew
    (the previous item's boxes, right after Back, Next or a reload, before the page has been
    redrawn; easily on a loaded server). Streamlit has dropped their state by then, takes every
    such value for a change and calls the widget's callback, for an item that is no longer on
    screen. Those values are the ones the tab showed, so nobody changed anything: saving them
    would create an annotation nobody made (the pre-ticked boxes, the empty comment) or overwrite
    another tab's newer answers with old ones. A widget this session never drew cannot have been
    clicked either.
    """
    last, value = _last(), st.session_state[key]
    if key not in last or last[key] == value:
        return False
    last[key] = value
    return True


def _seen_key(item: dict) -> str:
    return f"ann_seen_{item['item_id']}"


def _show_saved(item: dict, notice: str) -> None:
    """Replace this tab's (stale) widget values for the item by the saved ones, and say why."""
    values = sv.widget_values(item)
    st.session_state.update(values)  # the alignment table: see _align_key
    st.session_state.setdefault("ann_pushed", set()).update(values)  # see _initial
    st.session_state["ann_notice"] = notice


def _align_key(item: dict) -> str:
    """The correction table's key changes with the version shown, so the table is rebuilt from
    the store after every save (its edits are then exactly the newest click)."""
    return f"ann_align_{item['item_id']}_v{st.session_state.get(_seen_key(item), 0)}"


def _initial(key: str, value, blank=None):
    """The default a judgement widget declares to the browser: the value session state holds for
    it, else ``value`` (the saved answer). A browser that has no value of its own for the widget
    shows the declared default and sends it back: e.g. right after Back or Next it can send the
    values of the item about to be shown again, then drop them with the widgets the last finished
    run no longer drew, and mount them afresh. A declared blank there (a pre-ticked box unticked,
    no rating) would come back as a change from the held value and be saved (:func:`_changed`):
    an answer nobody gave. Only a value :func:`_show_saved` has just set gets ``blank``
    (Streamlit sends that value to the browser itself, and warns about a default given too)."""
    if key not in st.session_state:
        return value
    return blank if key in st.session_state.get("ann_pushed", ()) else st.session_state[key]


def _sync(item: dict) -> None:
    """Remember the version shown; if another tab or window saved since, show the saved answers."""
    current = sv.version_of(item)
    if st.session_state.get(_seen_key(item), current) != current:
        _show_saved(item, sv.CHANGED_ELSEWHERE)
    st.session_state[_seen_key(item)] = current


def _save(store: Store, item: dict, annotator: str, **fields) -> None:
    try:
        saved = sv.save_change(store, item, annotator, seen_version=st.session_state.get(_seen_key(item)), **fields)
    except AnnotationError as exc:  # includes StoreBusyError: nothing was written
        st.session_state["ann_error"] = str(exc)
        return
    st.session_state[_seen_key(item)] = saved["version"]
    if saved["conflict"]:
        _show_saved(dict(item, annotation=saved), sv.SAVED_OVER_STALE)


def _on_fluency(store: Store, item: dict, annotator: str) -> None:
    key = f"ann_flu_{item['item_id']}"
    if _changed(key):
        _save(store, item, annotator, fluency=st.session_state[key])


def _on_flag(store: Store, item: dict, annotator: str, k: int, f: str) -> None:
    """One box: only this record's flag changes in the store."""
    key = f"ann_flag_{item['item_id']}_{k}_{f}"
    if _changed(key):
        _save(store, item, annotator, flag=(k, f, bool(st.session_state[key])))


def _on_extra(store: Store, item: dict, annotator: str) -> None:
    key = f"ann_extra_{item['item_id']}"
    if _changed(key):
        _save(store, item, annotator, extra_wrong=int(st.session_state[key]))


def _on_comment(store: Store, item: dict, annotator: str) -> None:
    key = f"ann_comment_{item['item_id']}"
    if _changed(key):
        _save(store, item, annotator, comment=st.session_state[key])


def _on_alignment(store: Store, item: dict, annotator: str, key: str) -> None:
    """One segment per edit: only the segments changed in the table change in the store. Rows
    this session already took from this table are not taken again (see :func:`_changed`: a
    table no longer drawn can come back with the edits already saved)."""
    last = _last()
    if key not in last:
        return
    rows = st.session_state[key].get("edited_rows", {})
    new = {row: change for row, change in rows.items() if last[key].get(row) != change}
    last[key] = {row: dict(change) for row, change in rows.items()}
    try:
        edits = sv.alignment_edits(item, new)
    except AnnotationError as exc:
        st.session_state["ann_error"] = str(exc)
        return
    for segment, record in edits:
        _save(store, item, annotator, segment=(segment, record))


def _go(pos_key: str, position: int) -> None:
    st.session_state[pos_key] = position


def _on_skip(store: Store, item: dict, annotator: str, pos_key: str, last: int) -> None:
    _save(store, item, annotator, skipped=True)
    st.session_state[pos_key] = min(item["position"] + 1, last)


# ---------------------------------------------------------------------------------------------
# Sections


def annotator_id() -> str | None:
    """The annotator id from ``?annotator=`` or the sidebar, validated; None (with a message) if unusable."""
    qp = st.query_params
    if "ann_annotator" not in st.session_state:
        st.session_state["ann_annotator"] = qp.get("annotator", "")
    raw = st.sidebar.text_input("Annotator id", key="ann_annotator",
                                help="Your name or e-mail; your answers are saved under it. "
                                     "Share links like /Annotate?annotator=NAME.").strip()
    if not raw:
        return None
    try:
        annotator = validate_annotator(raw)
    except AnnotationError as exc:
        st.sidebar.error(viz.esc(exc))  # the id as typed, shown literally
        return None
    if qp.get("annotator") != annotator:
        qp["annotator"] = annotator
    return annotator


def pick_campaign(store: Store) -> dict | None:
    campaigns = store.campaigns()
    if not campaigns:
        return None
    names = [c["name"] for c in campaigns]
    qp = st.query_params
    if "ann_new_campaign" in st.session_state:  # just created or imported: select it
        st.session_state["ann_campaign"] = st.session_state.pop("ann_new_campaign")
    if st.session_state.get("ann_campaign") not in names:
        st.session_state["ann_campaign"] = qp.get("campaign") if qp.get("campaign") in names else names[-1]
    name = st.sidebar.selectbox("Campaign", names, key="ann_campaign")
    if qp.get("campaign") != name:
        qp["campaign"] = name
    return next(c for c in campaigns if c["name"] == name)


def create_section(store: Store, dataset: str, expanded: bool) -> None:
    with st.expander("Create or import a campaign", expanded=expanded):
        st.caption("All campaigns and answers are stored in this database (`SEGVIZ_ANNOTATE_DB` sets another):")
        st.code(display_url(store.url), language=None)
        specs = {s.name: s for s in sv.available_systems(dataset)}
        st.caption(f"Systems come from {viz.esc(sv.default_checkpoints_dir())} ({dataset} checkpoints; "
                   "`SEGVIZ_CHECKPOINTS` overrides). Inputs are sampled first (the paper: 20 per record "
                   "count K), then generated with beam 5.")
        name = st.text_input("Campaign name", value=f"{dataset}-dev-{date.today().isoformat()}", key="ann_new_name")
        split = st.selectbox("Split", ["dev", "train"], key="ann_new_split")
        chosen = st.multiselect("Systems", list(specs), format_func=sv.system_title, key="ann_new_systems")
        formats = {"e2e": "MR<TAB>output per line, or one output per input in order",
                   "webnlg": "one output per line, in the order of the split's entries"}
        files = st.file_uploader(f"Other systems' outputs ({formats.get(dataset, 'one output per input in order')})",
                                 accept_multiple_files=True, key="ann_new_uploads")
        c1, c2, c3 = st.columns(3)
        per_k = c1.number_input("Inputs per K", min_value=1, value=20, step=1, key="ann_new_per_k")
        seed = c2.number_input("Seed", min_value=0, value=0, step=1, key="ann_new_seed")
        prefill = c3.checkbox("Pre-fill the checker's verdicts", value=True, key="ann_new_prefill")
        if st.button("Create campaign", key="ann_create", type="primary"):
            bar = st.progress(0.0, text="starting")
            try:
                sv.build_campaign(store, name.strip(), dataset, split, [specs[n] for n in chosen],
                                  {f.name: f.getvalue() for f in files or []}, per_k=int(per_k), seed=int(seed),
                                  progress=lambda f, m: bar.progress(f, text=viz.esc(m)), prefill=prefill)
            except (AnnotationError, OSError, RuntimeError) as exc:
                bar.empty()
                ui.error(f"Campaign not created: {exc}")
            else:
                st.session_state["ann_new_campaign"] = name.strip()
                st.rerun()
        st.divider()
        upload = st.file_uploader("Import a campaign export (CSV or JSONL)", type=["csv", "jsonl", "json"],
                                  key="ann_import_file")
        new_name = st.text_input("Import under another name (optional)", key="ann_import_name")
        if st.button("Import", key="ann_import", disabled=upload is None):
            try:
                c = import_file(store, upload.getvalue(), new_name.strip() or None)
            except AnnotationError as exc:
                ui.error(f"Nothing imported: {exc}")
            else:
                st.session_state["ann_new_campaign"] = c["name"]
                st.rerun()


def judgement_widgets(store: Store, item: dict, annotator: str) -> None:
    iid = item["item_id"]
    args = (store, item, annotator)
    saved = sv.widget_values(item)  # initial values; session state wins once a widget has one
    fluency = _initial(f"ann_flu_{iid}", saved[f"ann_flu_{iid}"])
    _drawn(f"ann_flu_{iid}", st.radio("Fluency", [1, 2, 3, 4, 5], index=None if fluency is None else fluency - 1,
                                      horizontal=True, key=f"ann_flu_{iid}", help=FLUENCY_HELP,
                                      on_change=_on_fluency, args=args))
    st.markdown("**Facts per input record**")
    if item["prefill"] is not None:
        st.caption("Ticks start from the automatic checker: confirm or correct them.")
    head = st.columns([3, 1, 1, 1])
    for col, text in zip(head, ["record", *FLAG_NAMES], strict=True):
        col.caption(text)
    for k, label in enumerate(item["labels"]):
        row = st.columns([3, 1, 1, 1])
        row[0].text(f"{k + 1}. {label}")
        for col, f in zip(row[1:], FLAG_NAMES, strict=True):
            key = f"ann_flag_{iid}_{k}_{f}"
            _drawn(key, col.checkbox(f, value=_initial(key, saved[key], False), key=key, label_visibility="collapsed",
                                     help=FLAG_HELP[f], on_change=_on_flag, args=(*args, k, f)))
    _drawn(f"ann_extra_{iid}", st.number_input(
        "Wrong facts not about any input record (e.g. an invented price)", min_value=0, step=1,
        value=_initial(f"ann_extra_{iid}", saved[f"ann_extra_{iid}"], "min"), key=f"ann_extra_{iid}",
        on_change=_on_extra, args=args))
    _drawn(f"ann_comment_{iid}", st.text_area(
        "Comment (optional)", value=_initial(f"ann_comment_{iid}", saved[f"ann_comment_{iid}"], ""),
        key=f"ann_comment_{iid}", on_change=_on_comment, args=args))
    rows = sv.alignment_rows(item)
    if rows:
        with st.expander("Correct the alignment (optional)"):
            st.caption("Which record does each segment of the text express? '(none)' = no record.")
            _last().setdefault(_align_key(item), {})  # no edit taken from this table yet
            st.data_editor(
                pd.DataFrame(rows), key=_align_key(item), hide_index=True, num_rows="fixed",
                width="stretch", on_change=_on_alignment, args=(*args, _align_key(item)),
                column_config={"segment": st.column_config.TextColumn("segment", disabled=True),
                               "record": st.column_config.SelectboxColumn("record", options=sv.record_options(item),
                                                                          required=True)})
    st.session_state.pop("ann_pushed", None)  # drawn: sent to the browser


def annotate_section(store: Store, campaign: dict, annotator: str) -> None:
    pos_key = f"ann_pos_{campaign['id']}_{annotator}"
    view = sv.annotator_view(store, campaign["id"], annotator, st.session_state.get(pos_key))
    if view.item is None:
        st.info("This campaign has no items.")
        return
    st.session_state[pos_key] = view.position
    _sync(view.item)
    notice = st.session_state.pop("ann_notice", None)
    if notice:
        st.warning(notice)
    st.progress(view.done / view.total,
                text=f"{view.done} of {view.total} done · item {view.position + 1} of {view.total}")
    if view.finished:
        st.success("All items are done, thank you! You can still go back and change answers.")
    item = view.item
    left, right = st.columns([2, 3])
    with left:
        st.markdown("**Input records**")
        st.markdown(sv.records_html(item), unsafe_allow_html=True)  # every label escaped
    with right:
        st.markdown("**Text**")
        st.markdown(sv.segments_html(item), unsafe_allow_html=True)  # every text escaped
        judgement_widgets(store, item, annotator)
    last = view.total - 1
    nav = st.columns(4)
    nav[0].button("Back", key="ann_back", disabled=view.position == 0, on_click=_go,
                  args=(pos_key, view.position - 1), width="stretch")
    nav[1].button("Skip", key="ann_skip", on_click=_on_skip, args=(store, item, annotator, pos_key, last),
                  width="stretch")
    nav[2].button("Next", key="ann_next", disabled=view.position == last, on_click=_go,
                  args=(pos_key, view.position + 1), type="primary", width="stretch")
    first_open = next((it["position"] for it in view.items if not is_done(it["annotation"])), None)
    nav[3].button("First unfinished", key="ann_resume", disabled=first_open in (None, view.position),
                  on_click=_go, args=(pos_key, first_open), width="stretch")
    a = store.annotation(item["item_id"], annotator)
    if a is not None:
        state = "skipped" if a["skipped"] else ("rated" if a["fluency"] is not None else "not rated yet")
        if a["skipped"] and a["fluency"] is not None:  # a skip after a rating drops it from the results
            state += f": its fluency {a['fluency']} is kept but not counted in the results until you rate it again"
        st.caption(f"Saved automatically ({state}; last change {a['updated_at']:%Y-%m-%d %H:%M:%S} UTC).")


def _fmt(x: float) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def results_section(store: Store, campaign: dict) -> None:
    if not st.toggle("Results, agreement and export (shows system names)", key="ann_results"):
        return
    st.subheader("Human evaluation (paper Tables 2–3)")
    st.caption("Fluency: mean; wrong / repeat / miss: totals of the majority vote over complete annotations.")
    table = results_table(store, campaign["id"])
    table["system"] = table["system"].map(sv.system_title)
    if table["items"].sum():
        st.dataframe(table, hide_index=True, key="ann_results_table")
    else:  # an empty table read "None" fluency and 0 items
        st.info("No complete annotation yet: the table fills in once an item has a fluency score (and is not "
                "skipped).")
    ag = agreement(store, campaign["id"])
    st.markdown(f"**Agreement** — {ag['annotators']} annotator(s); {ag['items_multi']} item(s) with two or more "
                "complete annotations. Krippendorff's alpha: "
                + ", ".join(f"{k} {_fmt(v)}" for k, v in ag["alpha"].items()))
    if ag["auto"]:
        st.markdown("**Automatic checker vs. human majority**")
        st.dataframe(pd.DataFrame(auto_rows(ag)), hide_index=True,
                     key="ann_auto_table")
    c1, c2 = st.columns(2)
    c1.download_button("Export CSV", export_csv(store, campaign["id"]), file_name=f"{campaign['name']}.csv",
                       mime="text/csv", key="ann_export_csv")
    c2.download_button("Export JSONL", export_jsonl(store, campaign["id"]), file_name=f"{campaign['name']}.jsonl",
                       mime="application/jsonl", key="ann_export_jsonl")


def main() -> None:
    dataset = ui.page("Annotate")
    store = get_store(default_url())
    annotator = annotator_id()
    campaign = pick_campaign(store)
    error = st.session_state.pop("ann_error", None)
    if error:
        ui.error(f"Not saved: {error}")
    create_section(store, dataset, expanded=campaign is None)
    if campaign is None:
        st.info("No campaign yet: create one above or import an export.")
        return
    st.caption(f"Campaign **{viz.esc(campaign['name'])}** · {campaign['dataset']} {campaign['split']}")
    note = sv.sampling_note(campaign["config"])
    if note:
        st.info(note)
    if annotator is None:
        st.warning("Enter your annotator id in the sidebar (or open a link ending in ?annotator=NAME) to start.")
    else:
        annotate_section(store, campaign, annotator)
    st.divider()
    results_section(store, campaign)


main()
