"""AppTest of the Playground (app.py) on tiny checkpoints: generate, URL state, bad input."""

from __future__ import annotations

import html as html_lib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from segviz import service
from segviz.checkpoint import load
from segviz.examples import EXAMPLES
from segviz.records import Record

APP = str(Path(__file__).resolve().parent.parent / "app.py")





def _app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception
    return at


def _generate(at: AppTest, rows: list[dict] | None = None) -> AppTest:
    if rows is not None:
        at.session_state["playground_rows"] = rows
    at.button(key="playground_generate").click().run()
    assert not at.exception
    return at


def _status(at: AppTest):
    """The per-record status table (the one with a "#" column)."""
    return next(d.value for d in at.dataframe if "#" in d.value.columns)


def _html(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def _expected(tiny, records, constraints="rm", beam=5):
    return service.compare("e2e", records, load(tiny / "e2e-seg"), load(tiny / "e2e-pg"), constraints, beam)


def test_generate_shows_both_texts_and_status(env):
    at = _app()
    assert [i.value for i in at.info] == ["Edit the records and press **Generate**."]
    records = EXAMPLES["e2e"]["The Golden Lantern (4 slots)"]
    at.radio(key="playground_constraints").set_value("r")
    at.number_input(key="playground_beam").set_value(3)
    _generate(at)
    exp = _expected(env, records, "r", 3)
    html = _html(at)
    assert html.count('class="segviz-text"') == 2
    # every token is rendered in its own span, inside one coloured span per segment
    seg_html = [m.value for m in at.markdown if 'class="segviz-text"' in m.value]
    for block, res in zip(seg_html, (exp.seg.result, exp.pg.result), strict=True):
        assert block.count("data-t=") == len(res.tokens)
        assert block.count('class="seg"') == len(res.segments)
    assert "1 name&#91;The Golden Lantern&#93;" in html  # legend chip with the record name
    status = _status(at)
    assert list(status["record"]) == [r.label for r in records] + [
        f"{h} (not in the input)" for h in sorted(set(exp.seg.report.hallucinated) | set(exp.pg.report.hallucinated))
    ]
    assert status.iloc[0]["Segment model · ours (+R)"].endswith(exp.seg.report.per_record[0].status)
    assert at.query_params["constraints"] == "r" and at.query_params["beam"] == "3"
    assert service.records_from_param("e2e", at.query_params["records"]) == records


def test_rerun_without_generate_does_not_recompute(env, monkeypatch):
    at = _generate(_app())
    calls = []
    real = service.compare
    monkeypatch.setattr(service, "compare", lambda *a, **k: calls.append(1) or real(*a, **k))
    at.run()  # an unrelated rerun
    assert not at.exception and calls == []
    assert sum('class="segviz-text"' in m.value for m in at.markdown) == 2


def test_deep_link_reproduces_view(env):
    records = EXAMPLES["e2e"]["Mill Street Diner (3 slots)"]
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update({"dataset": "e2e", "records": service.records_to_param(records), "constraints": "none", "beam": "2"})
    at.run()
    assert not at.exception
    assert at.radio(key="playground_constraints").value == "none"
    assert at.number_input(key="playground_beam").value == 2
    exp = _expected(env, records, "none", 2)
    blocks = [m.value for m in at.markdown if 'class="segviz-text"' in m.value]
    assert len(blocks) == 2 and blocks[0].count("data-t=") == len(exp.seg.result.tokens)


def test_checker_guided_option_reaches_the_url_and_the_caption(env):
    records = EXAMPLES["e2e"]["Mill Street Diner (3 slots)"]
    at = _app()
    at.checkbox(key="playground_guided").check()
    _generate(at)
    assert at.query_params["guided"] == "1" and at.session_state["playground_request"][4] is True
    assert any("checker-guided" in c.value for c in at.caption)
    # how the checker chose the segment model's +RM text (its own free text here), PG none
    said = [c.value for c in at.caption if c.value.startswith("Checker-guided: ")]
    assert said == ["Checker-guided: The model's own unconstrained text: the checker finds that it states every record."]
    at2 = AppTest.from_file(APP, default_timeout=120)  # the link brings the option back
    at2.query_params.update({"dataset": "e2e", "records": service.records_to_param(records), "guided": "1"})
    at2.run()
    assert not at2.exception and at2.checkbox(key="playground_guided").value is True
    assert any("checker-guided" in c.value for c in at2.caption)
    # it has no effect on the unconstrained output: off for "ours", and the caption does not claim it
    at.radio(key="playground_constraints").set_value("none").run()
    assert at.checkbox(key="playground_guided").disabled
    _generate(at)
    assert not at.exception and not any("checker-guided" in c.value for c in at.caption)
    assert at.query_params["guided"] == "0" and at.session_state["playground_request"][4] is False


def test_example_picker_names_the_example_the_table_holds(env):
    at = _app()  # first load: the table holds the first bundled example, and the box names it
    first = next(iter(EXAMPLES["e2e"]))
    assert at.selectbox(key="playground_example").value == first
    assert at.session_state["playground_rows"] == service.rows_from_records("e2e", EXAMPLES["e2e"][first])
    at.radio(key="sidebar_dataset").set_value("webnlg").run()  # a dataset not shown before: its first example
    assert not at.exception and at.selectbox(key="playground_example").value == next(iter(EXAMPLES["webnlg"]))
    link = AppTest.from_file(APP, default_timeout=120)  # a link's own records are no bundled example
    link.query_params["records"] = service.records_to_param([Record("name", "Zizzi"), Record("food", "Thai")])
    link.run()
    assert not link.exception and link.selectbox(key="playground_example").value == "—"


def test_example_picker_loads_rows(env):
    at = _app()
    at.selectbox(key="playground_example").set_value("Blue Heron Café (6 slots)").run()
    assert not at.exception
    rows = at.session_state["playground_rows"]
    assert rows[0] == {"attribute": "name", "value": "Blue Heron Café"} and len(rows) == 6
    at.radio(key="sidebar_dataset").set_value("webnlg").run()
    assert at.session_state["playground_rows"][0]["subject"]  # WebNLG's own rows
    at.radio(key="sidebar_dataset").set_value("e2e").run()
    assert not at.exception and at.session_state["playground_rows"] == rows  # back: the rows as left, not the first example
    assert at.selectbox(key="playground_example").value == "Blue Heron Café (6 slots)"  # and its box says so, not "—"


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([], "Invalid records: no records"),
        ([{"attribute": "name", "value": "  "}], "Invalid records: row 1: value is blank"),
        ([{"attribute": "name", "value": "A"}, {"attribute": "name", "value": "B"}], "duplicate attribute 'name'"),
        ([{"attribute": f"attr{i}", "value": "v"} for i in range(60)], "60 records given"),
    ],
)
def test_bad_records_show_error_not_traceback(env, rows, message):
    at = _generate(_app(), rows)
    assert any(message in html_lib.unescape(e.value) for e in at.error), [e.value for e in at.error]
    assert not any('class="segviz-text"' in m.value for m in at.markdown)  # nothing generated


def test_an_invalid_edit_does_not_leave_the_old_outputs_warning_up(env):
    """The unseen-words warning of the output shown stayed up, not greyed, beside the error of an
    invalid edit made after it; it goes with the edit (the greyed output keeps its own notice)."""
    rows = [{"attribute": "name", "value": "Zyxwv Quortle"}, {"attribute": "eatType", "value": "pub"}]
    at = _generate(_app(), rows)
    assert any("never seen" in w.value for w in at.warning)
    at.session_state["playground_rows"] = [{"attribute": "name", "value": "  "}]
    at.run()
    assert not at.exception and any("value is blank" in html_lib.unescape(e.value) for e in at.error)
    assert not any("never seen" in w.value for w in at.warning)
    assert any("greyed out" in w.value for w in at.warning)


def test_hostile_and_non_ascii_values_render_literally(env):
    rows = [{"attribute": "name", "value": "<script>alert(1)</script> $5 **x**"},
            {"attribute": "food", "value": "Café £"}, {"attribute": "wifi", "value": "yes"}]  # fmt: skip
    at = _generate(_app(), rows)
    assert any("'wifi' is not an E2E attribute" in html_lib.unescape(w.value) for w in at.warning)
    html = _html(at)
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt; &#36;5 &#42;&#42;x&#42;&#42;" in html
    assert "Café £" in html
    status = _status(at)
    assert status["record"].iloc[0] == Record("name", "<script>alert(1)</script> $5 **x**").label


def test_heatmap_click_highlights_token_and_record(env):
    at = _generate(_app())
    at.session_state["playground_pick_seg"] = (1, 0)  # what a click on cell (t=1, i=0) stores
    at.run()
    assert not at.exception
    exp = _expected(env, EXAMPLES["e2e"]["The Golden Lantern (4 slots)"])
    seg_block = next(m.value for m in at.markdown if 'class="segviz-text"' in m.value)
    assert 'data-t="1" style="outline:2px solid #000' in seg_block
    selected = [m.value for m in at.markdown if m.value.startswith("Selected:")]
    assert len(selected) == 1 and f"output token 1 **{exp.seg.result.tokens[1]}**" in selected[0]
    assert "of record 1 (name&#91;The Golden Lantern&#93;)" in selected[0]


def test_missing_checkpoint_is_a_message(env, tmp_path, monkeypatch):
    only_e2e = tmp_path / "ck"
    only_e2e.mkdir()
    (only_e2e / "e2e-seg").symlink_to(env / "e2e-seg")
    monkeypatch.setenv("SEGVIZ_CHECKPOINTS", str(only_e2e))
    at = _app()
    at.radio(key="sidebar_dataset").set_value("webnlg").run()
    assert at.session_state["playground_rows"][0]["subject"]  # WebNLG columns now
    _generate(at)
    errors = [e.value for e in at.error]
    assert any("No usable Segment model (ours) checkpoint for webnlg" in e for e in errors)
    assert any("No usable Pointer-generator (PG) checkpoint for webnlg" in e for e in errors)
    at.radio(key="sidebar_dataset").set_value("e2e").run()
    _generate(at)
    assert sum('class="segviz-text"' in m.value for m in at.markdown) == 1  # seg only
    assert any("No usable Pointer-generator (PG) checkpoint for e2e" in e.value for e in at.error)


def test_a_visit_to_another_page_keeps_the_dataset_the_edits_and_the_settings(env):
    """A page link drops the URL's parameters and Streamlit drops the widgets' state, so coming
    back from another page used to reset the dataset to E2E and the editor to the bundled example.
    The session keeps them: this run starts as a page does after such a visit (no URL, no widget
    state, the session's own keys)."""
    bundled = service.rows_from_records("webnlg", next(iter(EXAMPLES["webnlg"].values())))
    edited = [*bundled, {"subject": "Zorblat_Tower", "predicate": "location", "object": "Quenwick"}]
    records = service.records_from_rows("webnlg", edited).records
    at = AppTest.from_file(APP, default_timeout=120)
    for key, value in {
        "sidebar_dataset_last": "webnlg", "playground_rows_dataset": "webnlg", "playground_rows": bundled,
        "playground_editor_version": 1, "playground_saved": ("webnlg", 1, edited),
        "playground_request": ("webnlg", service.records_to_param(records), "r", 3),
    }.items():  # fmt: skip
        at.session_state[key] = value
    at.run()
    assert not at.exception
    assert at.radio(key="sidebar_dataset").value == "webnlg" and at.query_params["dataset"] == "webnlg"
    assert at.session_state["playground_rows"] == edited
    assert at.radio(key="playground_constraints").value == "r" and at.number_input(key="playground_beam").value == 3
    assert not [w.value for w in at.warning if "changed since" in w.value]  # the output is the request's, not stale
    assert at.query_params["records"] == service.records_to_param(records) and at.query_params["constraints"] == "r"
    assert sum('class="segviz-text"' in m.value for m in at.markdown) == 2
    assert any("does not check whom the text says it of" in c.value for c in at.caption)  # session 25: what "realised" means


def test_pasted_records_replace_the_table_and_bad_ones_are_refused(env):
    """Records pasted as the data writes them fill the table (WebNLG: a triple a line, or several
    split by ";"); a line that cannot be read is named, and the table and the pasted text stay."""
    at = _app()
    at.radio(key="sidebar_dataset").set_value("webnlg").run()
    before = at.session_state["playground_rows"]
    at.text_area(key="playground_paste_webnlg").set_value("Ayam_penyet | country | Indonesia\nAyam_penyet | region").run()
    at.button(key="playground_paste_go").click().run()
    assert not at.exception and at.session_state["playground_rows"] == before
    assert any("line 2: triple must have 3 parts" in html_lib.unescape(e.value) for e in at.error)
    assert at.text_area(key="playground_paste_webnlg").value.endswith("| region")  # nothing lost
    at.text_area(key="playground_paste_webnlg").set_value("Ayam_penyet | region").run()  # edited: the old message goes
    assert not at.error
    at.text_area(key="playground_paste_webnlg").set_value("Ayam_penyet | country | Indonesia ; Ayam_penyet | region | Malaysia").run()
    at.button(key="playground_paste_go").click().run()
    assert not at.exception and not at.error
    assert at.session_state["playground_rows"] == [
        {"subject": "Ayam_penyet", "predicate": "country", "object": "Indonesia"},
        {"subject": "Ayam_penyet", "predicate": "region", "object": "Malaysia"},
    ]
    assert at.selectbox(key="playground_example").value == "—"  # the table no longer holds an example
    pasted = at.session_state["playground_rows"]
    at.radio(key="sidebar_dataset").set_value("e2e").run()
    at.radio(key="sidebar_dataset").set_value("webnlg").run()  # a switch and back: the pasted rows, the box "—"
    assert at.session_state["playground_rows"] == pasted and at.selectbox(key="playground_example").value == "—"
    _generate(at)
    assert len(at.session_state["playground_request"]) == 5 and "Malaysia" in at.session_state["playground_request"][1]


def test_example_box_reads_none_once_the_table_is_edited(env):
    """A new user edited a bundled example's rows and the box still named the example: after an
    edit it reads "—", and picking the example again loads its rows."""
    at = _app()
    first = next(iter(EXAMPLES["e2e"]))
    v = at.session_state["playground_editor_version"]
    at.session_state[f"playground_editor_{v}"] = {"edited_rows": {0: {"value": "Zizzi"}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception and at.selectbox(key="playground_example").value == "—"
    at.selectbox(key="playground_example").set_value(first).run()
    assert not at.exception and at.selectbox(key="playground_example").value == first
    assert at.session_state["playground_rows"] == service.rows_from_records("e2e", EXAMPLES["e2e"][first])
