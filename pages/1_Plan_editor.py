"""Plan editor: start from the model's own plan, compare other plans, force one and see what changed.

The records are the Playground's last request (or the URL's ``?records=``, or a bundled
example). The order starts as the model's own plan (its +RM output) and is kept in the URL as
``?plan=3,1,2``. Other plans (sampled from the transition model, each decoded with the plan
forced) are listed with their log-probabilities; a forced plan's text is shown next to the
previous one with a word diff.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from segviz import locate, service, ui, viz
from segviz.examples import examples_for
from segviz.records import RecordError

try:  # drag and drop list (optional dependency); the buttons below always work
    from streamlit_sortables import sort_items
except ImportError:  # pragma: no cover - depends on the environment
    sort_items = None

dataset = ui.page(
    "Plan editor",
    "The segment model chooses the order of the records itself; here you choose it. "
    "Null segments (grey) may still appear between the records.",
)
ss = st.session_state
qp = st.query_params

# ----- the records ----------------------------------------------------------------------------
request = ss.get("playground_request")
param = request[1] if request and request[0] == dataset else qp.get("records")
records = None
if param:
    try:
        records = service.records_from_param(dataset, param)
    except RecordError as e:
        ui.error(f"The records in the link could not be read: {e}")
        qp.pop("records", None)
if records is None:
    records = next(iter(examples_for(dataset).values()))
    st.info(("Using a bundled example instead. " if param else "No records from the Playground yet: using a bundled example. ")
            + "Edit records on the Playground page.")
param = service.records_to_param(records)
K = len(records)

seg, seg_error = ui.get_checkpoint(dataset, "seg")
if seg is None:
    ui.error(seg_error)
    st.stop()
ui.show_messages(service.input_warnings(dataset, records, seg))  # as the Playground warns of these records


beam = int(st.session_state.get("plan_beam", 5))
seg_key = ui.checkpoint_key(dataset, "seg")
overview = ui.plan_overview(dataset, param, beam, seg_key)


def _initial_order() -> list[int]:
    plan, problem = service.plan_from_param(qp.get("plan", ""), K)
    if problem:
        ss["plan_link_problem"] = problem
    return plan or list(overview.plan)


if ss.get("plan_records") != param:  # new records: start from the model's own plan
    ss["plan_records"] = param
    ss["plan_order"] = _initial_order()
    ss["plan_sortable_version"] = ss.get("plan_sortable_version", 0) + 1
    ss.pop("plan_outputs", None)


if problem := ss.pop("plan_link_problem", None):
    ui.warning(f"{problem}: starting from the model's own plan.")


def _use_plan(plan: list[int]) -> None:
    ss["plan_order"] = list(plan)
    ss["plan_sortable_version"] += 1


own = overview.own.result
st.markdown(
    f"**The model's own plan** (its +RM output, beam {beam}): {' → '.join(map(str, overview.plan))} · "
    f"log-probability {own.scores.get('log_prob', float('nan')):.2f} ({service.log_prob_per_token(own):.3f} per token)"
)
if overview.appended:
    st.caption(
        "Added by +RM (the unconstrained output leaves them out): "
        + ", ".join(f"record {k} {viz.esc(records[k - 1].label)}" for k in overview.appended)
    )


def _invented(view) -> None:
    """The numbers and names the text says that the input does not hold (WebNLG: its checker
    cannot see them), under an output."""
    if note := service.invented_note(dataset, records, view):
        st.caption(viz.esc(note))  # words of the model's text


def _move(k: int, delta: int) -> None:
    order = list(ss["plan_order"])
    i = order.index(k)
    j = min(max(i + delta, 0), len(order) - 1)
    order[i], order[j] = order[j], order[i]
    ss["plan_order"] = order
    ss["plan_sortable_version"] += 1  # remount the drag list with the new order


labels = {k: f"{k}. {r.label}" + (" (+RM)" if k in overview.appended else "") for k, r in enumerate(records, start=1)}
left, right = st.columns([2, 3])
with left:
    st.subheader("Order of the records")
    if sort_items is not None:
        st.caption("Drag the records, or move them with the ↑/↓ buttons below (keyboard accessible).")
        dragged = sort_items(
            [labels[k] for k in ss["plan_order"]], direction="vertical", key=f"plan_sortable_{ss['plan_sortable_version']}"
        )
        new_order = [int(s.split(".", 1)[0]) for s in dragged]
        if sorted(new_order) == sorted(ss["plan_order"]):
            ss["plan_order"] = new_order
    else:
        st.caption("Use the ↑/↓ buttons to move records (drag and drop needs `streamlit-sortables`).")
    # with the drag list the same order would show twice: its buttons fold away (still reachable by keyboard)
    with st.expander("Move with ↑/↓ buttons (keyboard)") if sort_items is not None else st.container():
        for pos, k in enumerate(ss["plan_order"]):
            c1, c2, c3 = st.columns([6, 1, 1])
            added = " <small>(added by +RM)</small>" if k in overview.appended else ""
            c1.markdown(f"**{pos + 1}.** record {k}: <code>{viz.esc(records[k - 1].label)}</code>{added}", unsafe_allow_html=True)
            c2.button("↑", key=f"plan_up_{k}", on_click=_move, args=(k, -1), disabled=pos == 0, help=f"move record {k} up")
            c3.button("↓", key=f"plan_down_{k}", on_click=_move, args=(k, 1), disabled=pos == K - 1,
                      help=f"move record {k} down")
    st.number_input("Beam size", 1, 10, 5, key="plan_beam")
    regenerate = st.button("Regenerate with this plan", type="primary", key="plan_regenerate")

order = list(ss["plan_order"])
if regenerate:
    qp["plan"] = ",".join(map(str, order))
    if request is None or request[1] != param:
        qp["records"] = param
    new = ui.generate_with_plan(dataset, param, tuple(order), beam, seg_key)
    outputs = ss.get("plan_outputs", [])
    if not outputs or ss.get("plan_outputs_beam") != beam:  # the model's own output comes first
        outputs = [overview.own] if overview.own.result is not None else []
    forced_last = len(outputs) == 2 or (outputs and overview.own.result is None)  # the last one had a plan forced
    if not (forced_last and outputs[-1].result is not None and list(outputs[-1].result.plan or []) == order):
        ss["plan_outputs"] = (outputs + [new])[-2:]  # previous and new; the same plan again adds nothing
    ss["plan_outputs_beam"] = beam

with right:
    outputs = ss.get("plan_outputs", [])
    stale = bool(outputs) and ss.get("plan_outputs_beam") != beam
    if not outputs:
        st.info("Reorder the records and press **Regenerate with this plan**.")
        if overview.own.result is not None:  # until then, the model's own output (its own plan)
            st.markdown("##### The model's own output")
            st.caption(f"the model's own plan {' → '.join(map(str, overview.plan))}")
            ui.show_output(overview.own, records)
            _invented(overview.own)
    else:
        if stale:
            st.warning("The beam size has changed since these outputs were generated: they are greyed out. "
                       "Press **Regenerate with this plan** to update them.")
        cols = st.columns(len(outputs))
        titles = ["Previous output", "New output"] if len(outputs) == 2 else ["New output"]
        for col, title, view in zip(cols, titles, outputs, strict=True):
            with col:
                st.markdown(f"##### {title}")
                plan = view.result.plan if view.result else None
                st.caption(f"plan {' → '.join(map(str, plan))} (forced)" if plan else
                           f"the model's own plan {' → '.join(map(str, overview.plan))}")
                if plan and list(plan) == overview.plan:
                    st.caption("The model's own order, forced: a forced plan decodes each record's segment in "
                               "turn under the plan's rules, so the text may differ from the model's own.")
                ui.show_output(view, records, stale=stale)
                if view.result is not None:
                    st.caption(f"log-probability {view.result.scores.get('log_prob', float('nan')):.2f} "
                               f"({service.log_prob_per_token(view.result):.3f} per token)")
                    _invented(view)
                if view.report is not None:
                    ui.status_table(locate.view_status_rows(view), key=f"plan_status_{title}", narrow=True)
        if len(outputs) == 2 and all(v.result is not None for v in outputs):
            st.markdown("##### What changed (word diff, new against previous)")
            st.markdown(viz.word_diff_html(outputs[0].result.tokens, outputs[1].result.tokens, records),
                        unsafe_allow_html=True)
            if outputs[0].result.tokens == outputs[1].result.tokens:
                st.caption("No change: the new text is the same as the previous one.")
            else:
                st.caption("Green: words only the new text has. Struck out in red: words of the previous text it dropped.")

st.divider()
st.subheader("Plans the model finds likely")
st.caption(
    "The model's own plan, the other plans of its beam's n-best list (+RM), and plans sampled from its transition "
    "distribution (seed 0) decoded with the plan forced; best first by log-probability per token (how the beam ranks "
    "outputs)."
)
if overview.sampling_note():
    st.info(overview.sampling_note())
plan_table = service.plan_rows(overview, records, dataset)
st.dataframe(pd.DataFrame(plan_table), hide_index=True, width="stretch", key="plan_nbest")
use_cols = st.columns(min(len(overview.candidates), 6) or 1)
for col, row, v in zip(use_cols, plan_table, overview.candidates, strict=False):
    col.button(f"Use plan {row['plan']}", key=f"plan_use_{row['rank']}", on_click=_use_plan,
               args=(service.plan_of(v.result, K),))

st.divider()
st.subheader("Sample structures")
st.caption("Record orders sampled from the model's transition distribution (paper appendix B), each decoded with the order forced.")
c1, c2, c3 = st.columns(3)
n = c1.number_input("Number of plans", 1, 6, 3, key="plan_n_samples")
seed = c2.number_input("Seed", 0, 10_000, 0, key="plan_seed")
if c3.button("Sample structures", key="plan_sample"):
    ss["plan_samples"] = (param, int(n), int(seed), int(beam))
if ss.get("plan_samples") and ss["plan_samples"][0] == param:
    _, n_s, seed_s, beam_s = ss["plan_samples"]
    samples = ui.sample_plans(dataset, param, n_s, seed_s, beam_s, ui.checkpoint_key(dataset, "seg"))
    if not samples:
        st.warning("No structure could be sampled for these records.")
    elif len(samples) < n_s:
        held = "1 distinct plan" if len(samples) == 1 else f"{len(samples)} distinct plans"
        st.info(f"{n_s} plans were asked for; the samples held only {held}.")
    for row in range(0, len(samples), 3):
        cols = st.columns(3)
        for col, view in zip(cols, samples[row : row + 3], strict=False):
            with col:
                st.markdown(f"**plan {' → '.join(map(str, view.result.plan))}**")
                ui.show_output(view, records)
                _invented(view)
