"""Plan editor: reorder the records, regenerate with that order forced, sample other structures.

The records are the Playground's last request (or the URL's ``?records=``, or a bundled
example). The order is kept in the URL as ``?plan=3,1,2``.
"""

from __future__ import annotations

import streamlit as st

from segviz import service, ui, viz
from segviz.examples import examples_for
from segviz.records import RecordError

try:  # drag and drop list (optional dependency); the buttons below always work
    from streamlit_sortables import sort_items
except ImportError:  # pragma: no cover - depends on the environment
    sort_items = None

st.set_page_config(page_title="segviz · Plan editor", page_icon="🧩", layout="wide")
settings = ui.sidebar()
dataset = settings["dataset"]
ss = st.session_state
qp = st.query_params

st.title("Plan editor")
st.caption(
    "The segment model chooses the order of the records itself; here you choose it. "
    "Null segments (grey) may still appear between the records."
)

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
    st.info("No records from the Playground yet: using a bundled example. Edit records on the Playground page.")
param = service.records_to_param(records)
K = len(records)

seg, seg_error = ui.get_checkpoint(dataset, "seg")
if seg is None:
    ui.error(seg_error)
    st.stop()


def _initial_order() -> list[int]:
    try:
        plan = [int(x) for x in qp.get("plan", "").split(",") if x.strip()]
    except ValueError:
        plan = []
    return plan if sorted(plan) == list(range(1, K + 1)) else list(range(1, K + 1))


if ss.get("plan_records") != param:  # new records: start from the input order
    ss["plan_records"] = param
    ss["plan_order"] = _initial_order()
    ss["plan_sortable_version"] = ss.get("plan_sortable_version", 0) + 1
    ss.pop("plan_outputs", None)


def _move(k: int, delta: int) -> None:
    order = list(ss["plan_order"])
    i = order.index(k)
    j = min(max(i + delta, 0), len(order) - 1)
    order[i], order[j] = order[j], order[i]
    ss["plan_order"] = order
    ss["plan_sortable_version"] += 1  # remount the drag list with the new order


labels = {k: f"{k}. {r.label}" for k, r in enumerate(records, start=1)}
left, right = st.columns([2, 3])
with left:
    st.subheader("Order of the records")
    if sort_items is not None:
        st.caption("Drag the records, or use the ↑/↓ buttons (keyboard accessible).")
        dragged = sort_items(
            [labels[k] for k in ss["plan_order"]], direction="vertical", key=f"plan_sortable_{ss['plan_sortable_version']}"
        )
        new_order = [int(s.split(".", 1)[0]) for s in dragged]
        if sorted(new_order) == sorted(ss["plan_order"]):
            ss["plan_order"] = new_order
    else:
        st.caption("Use the ↑/↓ buttons to move records (drag and drop needs `streamlit-sortables`).")
    for pos, k in enumerate(ss["plan_order"]):
        c1, c2, c3 = st.columns([6, 1, 1])
        c1.markdown(f"**{pos + 1}.** record {k}: <code>{viz.esc(records[k - 1].label)}</code>", unsafe_allow_html=True)
        c2.button("↑", key=f"plan_up_{k}", on_click=_move, args=(k, -1), disabled=pos == 0, help=f"move record {k} up")
        c3.button("↓", key=f"plan_down_{k}", on_click=_move, args=(k, 1), disabled=pos == K - 1, help=f"move record {k} down")
    beam = st.number_input("Beam size", 1, 10, 5, key="plan_beam")
    regenerate = st.button("Regenerate with this plan", type="primary", key="plan_regenerate")

order = list(ss["plan_order"])
if regenerate:
    qp["plan"] = ",".join(map(str, order))
    if request is None or request[1] != param:
        qp["records"] = param
    new = ui.generate_with_plan(dataset, param, tuple(order), int(beam), ui.checkpoint_key(dataset, "seg"))
    outputs = ss.get("plan_outputs", [])
    if not outputs:  # the model's own plan (as on the Playground) comes first
        if request is not None and request[1] == param:
            own = ui.compare(*request, ui.checkpoint_key(dataset, "seg"), ui.checkpoint_key(dataset, "pg")).seg
        else:
            own = ui.compare(dataset, param, "rm", int(beam), ui.checkpoint_key(dataset, "seg"), None).seg
        outputs = [own] if own.result is not None else []
    ss["plan_outputs"] = (outputs + [new])[-2:]  # previous and new

with right:
    outputs = ss.get("plan_outputs", [])
    if not outputs:
        st.info("Reorder the records and press **Regenerate with this plan**.")
    else:
        cols = st.columns(len(outputs))
        titles = ["Previous output", "New output"] if len(outputs) == 2 else ["New output"]
        for col, title, view in zip(cols, titles, outputs, strict=True):
            with col:
                st.markdown(f"##### {title}")
                plan = view.result.plan if view.result else None
                st.caption(f"plan {' → '.join(map(str, plan))}" if plan else "the model's own plan")
                ui.show_output(view, records)
                if view.report is not None:
                    ui.status_table(
                        [{"#": v.index + 1, "record": v.label, "status": v.status} for v in view.report.per_record],
                        key=f"plan_status_{title}",
                    )

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
    for row in range(0, len(samples), 3):
        cols = st.columns(3)
        for col, view in zip(cols, samples[row : row + 3], strict=False):
            with col:
                st.markdown(f"**plan {' → '.join(map(str, view.result.plan))}**")
                ui.show_output(view, records)
