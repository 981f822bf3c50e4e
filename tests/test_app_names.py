"""One name per system on every page (segviz.names): the paper's "PG", "ours", "ours (+R)", "ours (+RM)"."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from segviz import names, service

ROOT = Path(__file__).resolve().parent.parent


def test_system_names_follow_the_papers_rows():
    assert [names.system_name("seg", c) for c in ("none", "r", "rm")] == ["ours", "ours (+R)", "ours (+RM)"]
    assert names.system_name("pg") == "PG" and names.system_name("uploaded") == "uploaded"
    assert names.system_label("seg", "rm") == "Segment model · ours (+RM)"
    assert names.system_label("pg") == "Pointer-generator · PG"
    assert names.system_label("seg") == "Segment model (ours)"  # no output: the model alone


def test_results_rows_use_the_same_names():
    summary = service.CheckpointSummary("e2e-seg", Path("x"), "e2e", "seg", [], {"rm": {"bleu": 0.69}, "pg": {"bleu": 0.71}})
    assert [r["system"] for r in service.results_rows([summary])] == ["PG", "ours (+RM)"]


def test_playground_headings_status_columns_and_picker_share_the_names(env):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.button(key="playground_generate").click().run()
    assert not at.exception
    headings = [m.value for m in at.markdown if m.value.startswith("**") and "·" in m.value]
    assert headings[:2] == ["**Segment model · ours (+RM)**", "**Pointer-generator · PG**"]
    assert list(at.dataframe[1].value.columns)[2:] == ["Segment model · ours (+RM)", "Pointer-generator · PG"]
    assert at.radio(key="playground_constraints").options == ["ours", "ours (+R)", "ours (+RM)"]
    assert any(c.value.startswith("Constraints: ours (+RM) · beam 5") for c in at.caption)
