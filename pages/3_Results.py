"""Results: dev-set metrics of every checkpoint, training curves, E[#segments] against K."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from segviz import service, ui, viz

dataset = ui.page("Results")
root = service.checkpoint_root()
summaries = service.summarise_checkpoints(root)
if not summaries:
    st.warning(f"No checkpoints found in `{root}`. Train one with `python -m segviz.train --out {root}/e2e-seg`.")
    st.stop()

show_all = st.toggle("Show every dataset", value=False, key="results_all_datasets")
shown = [s for s in summaries if show_all or s.dataset == dataset]
for s in summaries:
    if s.error and s in shown:
        ui.warning(f"{s.name}: {s.error}")
if not shown:
    st.warning(f"No {dataset} checkpoints in `{root}` yet (found: {viz.esc(', '.join(s.name for s in summaries))}).")
    st.stop()

st.subheader("Dev-set metrics")
rows = service.results_rows(shown)
without = [s.name for s in shown if not s.metrics and not s.error]
if rows:
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="results_metrics")
    st.caption(
        "wrong / repeated / missing / hallucinated are counted by the automatic checker (segviz.faithfulness), not by "
        "people; SER = their sum / input records. n/a: not measured (for WebNLG the checker counts missing and "
        "repeated objects only; METEOR needs Java). Beam 5 for every row; generation time for the whole dev set."
    )
if without:
    st.info(f"No metrics yet for {viz.esc(', '.join(without))} (written into metrics.json by `python -m segviz.report --checkpoint DIR`).")

st.subheader("Training")
df = viz.curves_frame({s.name: s.history for s in shown})
if df.empty:
    st.info("No training history yet (history.json is written after each epoch).")
    st.stop()
shipped = {s.name: service.shipped_epoch(s.history) for s in shown}
loss = viz.loss_chart(df, shipped)
st.altair_chart(loss, key="results_loss")
ui.figure_downloads(loss, "results_loss", "training-curves", dataset)
stretches = service.training_stretches(shown)
if len(stretches) > len({r["checkpoint"] for r in stretches}):  # some checkpoint was trained in stretches
    st.caption(
        "Each curve joins every stretch of its checkpoint's training. A stretch continued with other data "
        "(--clean, --substitute, --abbreviations), another start (--init) or another learning rate begins where "
        "the last ended, so a step between two epochs may be the data changing, not the model; after a new "
        "--val-half or --clean the validation NLL is measured on other references, so compare it within a "
        "stretch. Paths under /tmp were the training machine's copies of the data and checkpoints. The stretches:"
    )
    st.dataframe(pd.DataFrame(stretches), hide_index=True, width="stretch", key="results_stretches",
                 column_config={"flags": st.column_config.TextColumn("flags", width="large"),  # not cut short
                                "command": st.column_config.TextColumn("command", width="large")})
if df["series"].str.contains("exp_seg").any():
    segments = viz.segments_chart(df, shipped)
    st.altair_chart(segments, key="results_segments")
    ui.figure_downloads(segments, "results_segments", "expected-segments", dataset)
    st.caption(
        "The granularity regulariser pulls E[#segments] towards K, the number of records (paper eq. 6, Fig. 3): "
        "compare the panels of checkpoints trained with and without it"
        + (" (e.g. e2e-seg-ablation-w0 / -w5)." if dataset == "e2e" else " (the E2E page has such a pair).")
    )
else:
    st.info("No E[#segments] recorded (only segment-model checkpoints have it).")
st.caption("The shipped epoch is the one with the lowest validation NLL: the trainer keeps those weights.")
last = pd.DataFrame(service.last_epoch_rows(shown, shipped))
st.caption("The last epoch of each checkpoint: train_loss is the training objective per example (the NLL plus the "
           "segment model's granularity regulariser, paper eq. 6); train_nll and val_nll are per target token.")
st.dataframe(last, hide_index=True, width="stretch", key="results_last_epoch")
