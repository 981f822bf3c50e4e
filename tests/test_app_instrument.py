"""AppTest of issue 13's instrument features on tiny checkpoints: the posterior view, per-segment
verdicts (hover, table, click to frame), stale output, typed text, case export, uploaded case."""

from __future__ import annotations

import html as html_lib
import io
import json
import re
from pathlib import Path

import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from segviz import service, viz
from segviz.checkpoint import load
from segviz.examples import EXAMPLES
from segviz.records import tokenize

ROOT = Path(__file__).resolve().parent.parent
APP, INSPECTOR = str(ROOT / "app.py"), str(ROOT / "pages" / "2_Hallucination_inspector.py")
RECORDS = EXAMPLES["e2e"]["The Golden Lantern (4 slots)"]


def _generated() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.button(key="playground_generate").click().run()
    assert not at.exception
    return at


def _texts(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown if "segviz-text" in m.value]


def _charts(at: AppTest) -> list:
    return [e for e in at.main if getattr(e, "type", "") == "vega_lite_chart"]


def _frames(chart) -> list:
    """The data sets of a Vega-Lite chart element as pandas frames."""
    return [pa.ipc.open_stream(io.BytesIO(d.data.data)).read_all().to_pandas() for d in chart.proto.datasets]


def _expected(tiny):
    return service.compare("e2e", RECORDS, load(tiny / "e2e-seg"), load(tiny / "e2e-pg"), "rm", 5)


def test_posterior_view_renders_rows_sum_to_one(env):
    at = _generated()
    at.radio(key="playground_view").set_value("posterior").run()
    assert not at.exception and at.query_params["view"] == "posterior"
    assert any("each row sums to 1" in c.value for c in at.caption)
    charts = _charts(at)
    assert len(charts) == 2  # one per system, no attention heatmap
    exp = _expected(env)
    seg = load(env / "e2e-seg")
    for chart, view in zip(charts, (exp.seg, exp.pg), strict=True):
        cells = next(f for f in _frames(chart) if {"t", "j", "p", "viterbi"} <= set(f.columns))
        sums = cells.groupby("t")["p"].sum()
        assert len(sums) == len(view.result.tokens) and ((sums - 1).abs() < 1e-6).all()
        post = service.text_posterior(RECORDS, view.result.tokens, seg)
        assert cells[cells["t"] == 0]["p"].round(6).tolist() == [round(p, 6) for p in post.probs[0]]
        on_path = cells[cells["viterbi"]]
        assert sorted(on_path["t"]) == list(range(len(view.result.tokens)))  # one Viterbi cell per token
    assert sum(f"Viterbi: {len(service.text_posterior(RECORDS, v.result.tokens, seg).viterbi)} segments" in c.value
               for v in (exp.seg, exp.pg) for c in at.caption) >= 1  # fmt: skip
    at.radio(key="playground_view").set_value("attention").run()
    assert len(_charts(at)) == 2 and at.query_params["view"] == "attention"


def test_posterior_of_typed_text_keeps_case_and_says_forced_alignment(env):
    at = _generated()
    at.radio(key="playground_view").set_value("posterior").run()
    at.text_area(key="playground_own_text").set_value("The GOLDEN Lantern is an Italian pub by the riverside.").run()
    assert not at.exception
    texts = _texts(at)
    assert len(texts) == 3 and ">GOLDEN<" in texts[2] and ">Italian<" in texts[2]
    assert sum(c.value.startswith("segments from forced alignment by the segment model") for c in at.caption) == 2
    assert sum(c.value.startswith("segments as decoded") for c in at.caption) == 1
    assert len(_charts(at)) == 3
    at.text_area(key="playground_own_text").set_value("   ").run()
    assert not at.exception and len(_texts(at)) == 2 and len(_charts(at)) == 2


def test_segment_verdicts_on_hover_in_table_and_click_frames_span(env):
    at = _generated()
    exp = _expected(env)
    seg_html = _texts(at)[0]
    rows = service.segment_rows(exp.seg)
    assert rows and len(rows) == len(exp.seg.result.segments)
    # every segment carries its record and verdict on hover
    titles = [html_lib.unescape(t) for t in re.findall(r'title="([^"]*)"', seg_html)]
    assert len(titles) == len(rows)
    for title, row in zip(titles, rows, strict=True):
        assert row["verdict"] in title
        assert title.startswith("null (no record)" if row["record"].startswith("null") else f"record {row['record'].split()[0]}:")
    tables = [d.value for d in at.dataframe if "verdict" in d.value.columns]
    assert len(tables) == 2 and [v.split(" ", 1)[1] for v in tables[0]["verdict"]] == [r["verdict"] for r in rows]
    cased = service.segment_rows(exp.seg, RECORDS)  # the words with the records' casing restored
    assert list(tables[0]["text"]) == [r["text"] for r in cased] and list(tables[0].columns) == ["segment", "verdict", "record", "text"]
    if "golden lantern" in " ".join(exp.seg.result.tokens):
        assert any("Golden Lantern" in t for t in tables[0]["text"])
    # a selected row frames its segment in the text
    assert "outline:3px solid #d62728" not in seg_html
    at.session_state["playground_segments_seg_pick"] = 1
    at.run()
    framed = _texts(at)[0]
    start = rows[1]["start"]
    seg_spans = framed.split('class="seg"')[1:]
    hit = [s for s in seg_spans if "outline:3px solid #d62728" in s]
    assert len(hit) == 1 and f'data-t="{start}"' in hit[0]


def test_changed_records_grey_the_stale_output(env):
    at = _generated()
    assert not any("segviz-stale" in t for t in _texts(at))
    at.number_input(key="playground_beam").set_value(2).run()
    assert any("have changed since this output was generated" in w.value for w in at.warning)
    assert all("segviz-stale" in t for t in _texts(at)) and len(_texts(at)) == 2
    legends = [m.value for m in at.markdown if "segviz-legend" in m.value]
    assert len(legends) == 2 and all("segviz-stale" in t for t in legends)  # the record chips too
    at.button(key="playground_generate").click().run()
    assert not any("segviz-stale" in t for t in _texts(at))
    assert not any("segviz-stale" in m.value for m in at.markdown if "segviz-legend" in m.value)
    assert not any("have changed" in w.value for w in at.warning)


def test_export_case_json(env):
    at = _generated()
    assert [b.proto.label for b in at.get("download_button")][-1] == "Export this case (JSON)"
    exp = _expected(env)
    data = json.loads(service.case_json("e2e", RECORDS, [exp.seg, exp.pg], constraints="rm", beam=5))
    assert data["records"][0] == {"attribute": "name", "value": "The Golden Lantern"} and data["beam"] == 5
    assert data["systems"]["seg"]["segments_from"] == "as decoded"
    assert data["systems"]["pg"]["segments_from"] == "forced alignment"
    assert data["systems"]["seg"]["result"]["tokens"] == exp.seg.result.tokens
    assert [s["verdict"] for s in data["systems"]["pg"]["segment_verdicts"]] == [v.verdict for v in exp.pg.segment_verdicts]


def test_uploaded_case_keeps_case_and_shows_posterior(env):
    at = AppTest.from_file(INSPECTOR, default_timeout=120)
    at.run()
    at.radio(key="insp_source").set_value("upload").run()
    data = "name[Blue Café], food[Thai]\tBLUE Café serves THAI food.\n".encode()
    at.file_uploader(key="insp_upload").set_value(("out.tsv", data, "text/tab-separated-values")).run()
    assert not at.exception
    text = _texts(at)[0]
    assert ">BLUE<" in text and ">THAI<" in text
    assert any(c.value.startswith("segments from forced alignment by the segment model") for c in at.caption)
    assert not any(c.value.startswith("segments as decoded") for c in at.caption)
    assert any("verdict" in d.value.columns for d in at.dataframe)
    at.radio(key="insp_view").set_value("posterior").run()
    assert not at.exception
    (chart,) = _charts(at)
    cells = next(f for f in _frames(chart) if "p" in f.columns)
    assert len(cells.groupby("t")) == len(tokenize("BLUE Café serves THAI food."))
    assert ((cells.groupby("t")["p"].sum() - 1).abs() < 1e-6).all()


@pytest.mark.parametrize("dataset", ["webnlg"])
def test_posterior_view_webnlg(env, dataset):
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.radio(key="sidebar_dataset").set_value(dataset).run()
    at.button(key="playground_generate").click().run()
    at.radio(key="playground_view").set_value("posterior").run()
    assert not at.exception and len(_charts(at)) == 2


def test_inspector_flag_row_locates_its_span(env):
    at = AppTest.from_file(INSPECTOR, default_timeout=120)
    at.run()
    at.radio(key="insp_source").set_value("upload").run()
    data = "name[Blue Café], food[Thai]\tBlue Café is a family friendly pub near The Vaults.\n".encode()
    at.file_uploader(key="insp_upload").set_value(("out.tsv", data, "text/tab-separated-values")).run()
    cases = service.cases_from_outputs("e2e", service.parse_output_file("e2e", data), load(env / "e2e-seg"), lines=[1])
    rows = service.flagged_rows(cases)
    halluc = next(r for r in rows if r["kind"] == "hallucinated")
    view = cases[0].views["uploaded"]
    where = service.flag_location(view, "hallucinated", None, halluc["record"])
    at.session_state["insp_flag"] = halluc  # what selecting its row of the flag table stores
    at.run()
    assert not at.exception
    assert any(c.value == f"Selected flag: {viz.esc(where.note)}." for c in at.caption)
    text = _texts(at)[0]
    if where.span is not None:  # the segment stating the absent value is framed
        assert text.count("data-picked") == 1 and where.note.startswith("hallucinated")
    missing = next(r for r in rows if r["kind"] == "missing")
    at.session_state["insp_flag"] = missing
    at.run()
    loc = service.flag_location(view, "missing", missing["k"], missing["record"])
    assert any(c.value == f"Selected flag: {viz.esc(loc.note)}." for c in at.caption)
    assert f"missing record {missing['k']} ({missing['record']})" in loc.note


def test_flag_location_rules():
    from segviz.faithfulness import segment_verdicts
    from segviz.records import parse_e2e_mr

    records = parse_e2e_mr("name[The Eagle], eatType[pub], near[Café Brazil]")
    tokens = tokenize("The Eagle is a family friendly pub .")
    segments = [(0, 2, 1), (2, 6, None), (6, 8, 2)]
    res = service.decode.GenerationResult("pg", [(k + 1, r.label, r.tokens) for k, r in enumerate(records)], tokens,
                                          "The Eagle is a family friendly pub.", segments, [], [], [])  # fmt: skip
    view = service.SystemView("pg", res, segment_verdicts=segment_verdicts("e2e", records, tokens, segments))
    h = service.flag_location(view, "hallucinated", None, "familyFriendly")
    assert h.span == (2, 6) and "family friendly" in h.note
    r = service.flag_location(view, "repeated", 2, "eatType[pub]")
    assert r.record == 2 and r.span == (6, 8) and "1 segment underlined" in r.note
    m = service.flag_location(view, "missing", 3, "near[Café Brazil]")
    assert m.span is None and "no segment of the text is aligned to it" in m.note


def test_inspector_null_segment_token_says_so(env):
    at = AppTest.from_file(INSPECTOR, default_timeout=120)
    at.run()
    at.number_input(key="insp_n").set_value(3)
    at.button(key="insp_run").click().run()
    assert not at.exception
    case = at.session_state["insp_case"]
    cases = service.run_systems("e2e", list(EXAMPLES["e2e"].items())[:3], load(env / "e2e-seg"), load(env / "e2e-pg"), "rm", 5)
    res = cases[case].views["seg"].result
    nulls = [t for s, e, k in res.segments if k is None for t in range(s, e)]
    real = [t for s, e, k in res.segments if k is not None for t in range(s, e)]
    if nulls:
        at.selectbox(key=f"insp_token_seg_{case}").set_value(nulls[0]).run()
        assert any(f"Token {nulls[0]} " in i.value and "null segment" in i.value for i in at.info)
    at.selectbox(key=f"insp_token_seg_{case}").set_value(real[0]).run()
    assert not any("null segment" in i.value for i in at.info)


def test_clicked_token_is_explained(env):
    at = _generated()
    exp = _expected(env)
    res = exp.seg.result
    seg = load(env / "e2e-seg")
    for t in (1, next((t for s, e, k in res.segments if k is None for t in range(s, e)), 0)):
        at.session_state["playground_pick_seg"] = (t, 0)  # a click on heatmap cell (t, i=0)
        at.run()
        assert not at.exception
        k = next(k for s, e, k in res.segments if s <= t < e)
        ex = service.explain_token(RECORDS, res.tokens, t, k, seg)
        line = next(m.value for m in at.markdown if m.value.startswith(f"Token {t} **"))
        assert f"log-probability {ex.log_prob:.2f}" in line and f"p(generate) {ex.p_generate:.2f}" in line
        assert ("**null** segment" in line) == (k is None)
        top = next(d.value for d in at.dataframe if "alternative" in d.value.columns)
        assert list(top["alternative"]) == [w for w, _ in ex.top]


def test_inspector_seeded_stratified_sample_filter_and_counts(env):
    at = AppTest.from_file(INSPECTOR, default_timeout=120)
    at.run()
    at.number_input(key="insp_n").set_value(3)
    at.radio(key="insp_sample").set_value("stratified").run()  # enables the seed
    at.number_input(key="insp_seed").set_value(7)
    at.button(key="insp_run").click().run()
    assert not at.exception
    bundled = list(EXAMPLES["e2e"].items())
    chosen = service.sample_inputs(bundled, 3, "stratified", 7)
    assert chosen == service.sample_inputs(bundled, 3, "stratified", 7)  # reproducible with its seed
    cases = service.run_systems("e2e", chosen, load(env / "e2e-seg"), load(env / "e2e-pg"), "rm", 5)
    rows = service.flagged_rows(cases)
    table = at.dataframe[0].value
    assert list(table["record"]) == [r["record"] for r in rows]
    # the case picker shows the records, not only an id
    assert at.selectbox(key="insp_case").format_func(0) == f"1: {cases[0].key} — {service.case_label(cases[0])}"
    counts = next(d.value for d in at.dataframe if "attribute" in d.value.columns)
    assert counts.to_dict("records") == service.attribute_counts(rows, service.flag_kinds("e2e"))
    if rows:
        attr = service.attribute_of(rows[0]["record"])
        at.multiselect(key="insp_attributes").set_value([attr]).run()
        assert {service.attribute_of(r) for r in at.dataframe[0].value["record"]} == {attr}
    at.number_input(key="insp_seed").set_value(8).run()
    assert any("settings have changed" in w.value for w in at.warning)


def test_inspector_upload_cap(env, monkeypatch):
    from segviz import ui

    monkeypatch.setattr(ui, "MAX_UPLOAD_CASES", 2)
    at = AppTest.from_file(INSPECTOR, default_timeout=120)
    at.run()
    at.radio(key="insp_source").set_value("upload").run()
    data = "".join(f"name[Blue Café], food[Thai]\tBlue Café number {i} serves Thai food.\n" for i in range(5)).encode()
    at.file_uploader(key="insp_upload").set_value(("big.tsv", data, "text/plain")).run()
    assert not at.exception
    assert any("big.tsv holds 5 outputs; the first 2 are shown" in w.value for w in at.warning)


def test_status_row_marks_its_record_in_both_texts(env):
    at = _generated()
    exp = _expected(env)
    rows = service.status_rows(exp)
    at.session_state["playground_status_pick"] = 1  # what selecting the row of record 2 stores
    at.run()
    assert not at.exception
    texts = _texts(at)
    counts = [len(re.findall(r'class="seg"[^>]*border-bottom:3px', text)) for text in texts]
    assert counts == [sum(1 for v in view.segment_verdicts if v.record == 2) for view in (exp.seg, exp.pg)]
    assert counts[0] >= 1  # the segment model's own text has a segment of every record (+RM)
    notes = [c.value for c in at.caption if c.value.startswith("Selected row: ")]
    assert len(notes) == 2 and all(f"record 2 ({viz.esc(rows[1]['record'])})" in n for n in notes)
    at.session_state["playground_status_pick"] = None
    at.run()
    assert not any(c.value.startswith("Selected row: ") for c in at.caption)


def test_posterior_is_computed_ahead_and_the_view_reuses_it(env, monkeypatch):
    import threading

    from segviz import ui

    ui.text_posterior.clear()  # texts earlier tests have cached would not be computed again
    ui._posterior_spec.clear()
    calls = []
    real = service.text_posterior
    monkeypatch.setattr(service, "text_posterior", lambda *a, **k: calls.append(tuple(a[1])) or real(*a, **k))
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.button(key="playground_generate").click().run()
    for t in threading.enumerate():
        if t.name == "segviz-prefetch-posterior":
            t.join(60)
    exp = service.compare("e2e", RECORDS, load(env / "e2e-seg"), load(env / "e2e-pg"), "rm", 5)
    ahead = {tuple(exp.seg.result.tokens), tuple(exp.pg.result.tokens)}
    assert set(calls) == ahead  # both texts, in the background, before the view is asked for
    at.radio(key="playground_view").set_value("posterior").run()
    assert not at.exception and len(_charts(at)) == 2
    assert set(calls) == ahead and len(calls) == len(ahead)  # the view found them cached


def test_inspector_status_row_marks_its_record(env):
    at = AppTest.from_file(INSPECTOR, default_timeout=120)
    at.run()
    at.radio(key="insp_source").set_value("upload").run()
    data = "name[Blue Café], food[Thai]\tBlue Café is a family friendly pub near The Vaults.\n".encode()
    at.file_uploader(key="insp_upload").set_value(("out.tsv", data, "text/tab-separated-values")).run()
    view = service.cases_from_outputs("e2e", service.parse_output_file("e2e", data), load(env / "e2e-seg"), lines=[1])[0].views["uploaded"]
    from segviz import locate

    rows = locate.view_status_rows(view)
    assert [r["record"] for r in rows[:2]] == ["name[Blue Café]", "food[Thai]"] and rows[1]["status"] == "missing"
    assert all(r["#"] is None and r["status"] == "hallucinated" for r in rows[2:]) and len(rows) > 2
    at.session_state["insp_status_uploaded_pick"] = 0  # the row of record 1, name[Blue Café]
    at.run()
    assert not at.exception
    where = locate.status_location(view, rows[0])
    assert where.record == 1 and [c.value for c in at.caption if c.value.startswith("Selected ")] == [
        f"Selected row: {viz.esc(where.note)}."]
    underlined = len(re.findall(r'class="seg"[^>]*border-bottom:3px', _texts(at)[0]))
    assert underlined == sum(1 for v in view.segment_verdicts if v.record == 1) >= 1
    at.session_state["insp_status_uploaded_pick"] = len(rows) - 1  # a fact not in the input: its segment framed
    at.run()
    where = locate.status_location(view, rows[-1])
    assert where.record is None and any(c.value == f"Selected row: {viz.esc(where.note)}." for c in at.caption)
    assert _texts(at)[0].count("data-picked") == (1 if where.span else 0)
