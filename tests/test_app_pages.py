"""AppTest of the Plan editor, Hallucination inspector and Results pages on tiny checkpoints."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from segviz import service, viz
from segviz.checkpoint import load
from segviz.examples import EXAMPLES
from segviz.records import Record, parse_e2e_mr

ROOT = Path(__file__).resolve().parent.parent
PLAN, INSPECTOR, RESULTS = (str(ROOT / "pages" / p) for p in ("1_Plan_editor.py", "2_Hallucination_inspector.py", "3_Results.py"))






# a small dev set the tiny models never saw: their outputs get flagged
DEV_MRS = ["name[Zed Bar], eatType[pub], food[Thai], near[The Old Mill]",
           "name[The Copper Kettle], familyFriendly[yes], area[riverside]",
           "name[Blue Heron Café], food[Japanese], priceRange[high]"]  # fmt: skip


@pytest.fixture
def dev_data(tmp_path, monkeypatch):
    (tmp_path / "data" / "e2e").mkdir(parents=True)
    lines = ["mr,ref"] + [f'"{mr}",Some reference.' for mr in DEV_MRS for _ in range(2)]
    (tmp_path / "data" / "e2e" / "dev.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setenv("SEGVIZ_DATA", str(tmp_path / "data"))
    return [(mr, parse_e2e_mr(mr)) for mr in DEV_MRS]


def _run(path: str, **query) -> AppTest:
    at = AppTest.from_file(path, default_timeout=120)
    at.query_params.update(query)
    at.run()
    assert not at.exception
    return at


def _texts(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown if 'class="segviz-text"' in m.value]


# ----- Plan editor -------------------------------------------------------------------------------------


def test_plan_editor_reorder_and_regenerate(env):
    records = EXAMPLES["e2e"]["Mill Street Diner (3 slots)"]
    at = _run(str(ROOT / "app.py"))
    at.session_state["playground_rows"] = service.rows_from_records("e2e", records)
    at.button(key="playground_generate").click().run()
    at.switch_page("pages/1_Plan_editor.py").run()
    assert not at.exception
    own = service.plan_overview("e2e", records, load(env / "e2e-seg"), 5)
    assert at.session_state["plan_order"] == own.plan  # starts from the model's own plan
    at.session_state["plan_order"] = [1, 2, 3]
    at.run()
    at.button(key="plan_down_1").click().run()  # keyboard-accessible fallback
    at.button(key="plan_up_3").click().run()
    assert at.session_state["plan_order"] == [2, 3, 1]
    assert at.button(key="plan_up_2").disabled  # first record cannot move up
    at.button(key="plan_regenerate").click().run()
    assert not at.exception
    assert at.query_params["plan"] == "2,3,1"
    captions = [c.value for c in at.caption]
    assert f"the model's own plan {' → '.join(map(str, own.plan))}" in captions and "plan 2 → 3 → 1 (forced)" in captions
    texts = _texts(at)
    assert len(texts) == 2  # previous output beside the new one
    exp = service.generate_with_plan("e2e", records, load(env / "e2e-seg"), [2, 3, 1])
    assert texts[1].count("data-t=") == len(exp.result.tokens)
    assert [m.value for m in at.markdown if m.value == "##### New output"]
    at.button(key="plan_regenerate").click().run()  # the same plan again (a double click): the model's own stays
    assert _texts(at) == texts and f"the model's own plan {' → '.join(map(str, own.plan))}" in [c.value for c in at.caption]


def test_plan_editor_status_names_a_triple_by_its_relation_and_object(env):
    """Session 43 (a new user's trial): the Plan editor's narrow status tables cut every WebNLG
    label to its subject ("Zorvak_International_Ai"), so the rows could not be told apart; they
    now read the relation and object, the subject being in the chips above."""
    records = EXAMPLES["webnlg"]["Fenwick Regional Airport (5 triples, invented)"]
    at = _run(PLAN, dataset="webnlg", records=service.records_to_param(records), plan="5,4,3,2,1")
    at.button(key="plan_regenerate").click().run()
    assert not at.exception
    tables = [d.value for d in at.dataframe if "status" in d.value.columns]
    assert tables, "no status table"
    for table in tables:
        assert list(table["record"]) == [viz.brief(r.label) for r in records] and " | " in table["record"][0]
        assert not any(v.startswith(r.subject) for v, r in zip(table["record"], records, strict=True))


def test_plan_editor_deep_link_and_samples(env):
    records = EXAMPLES["e2e"]["Blue Heron Café (6 slots)"]
    at = _run(PLAN, dataset="e2e", records=service.records_to_param(records), plan="6,5,4,3,2,1")
    assert at.session_state["plan_order"] == [6, 5, 4, 3, 2, 1]
    assert "**1.** record 6: <code>near&#91;The Old Mill&#93;</code>" in [m.value for m in at.markdown]
    at.number_input(key="plan_n_samples").set_value(2)
    at.button(key="plan_sample").click().run()
    assert not at.exception
    plans = [m.value for m in at.markdown if m.value.startswith("**plan ")]
    exp = service.sample_plans("e2e", records, load(env / "e2e-seg"), n=2, seed=0, beam=5)
    assert plans == [f"**plan {' → '.join(map(str, v.result.plan))}**" for v in exp]
    assert len(_texts(at)) == len(exp) + 1  # the samples, and the model's own output shown before any regenerate
    assert "##### The model's own output" in [m.value for m in at.markdown]  # session 43: not an empty column


def test_plan_editor_own_plan_nbest_diff_and_stale(env):
    records = EXAMPLES["e2e"]["Blue Heron Café (6 slots)"]
    at = _run(PLAN, dataset="e2e", records=service.records_to_param(records))
    seg = load(env / "e2e-seg")
    own = service.plan_overview("e2e", records, seg, 5)
    head = next(m.value for m in at.markdown if m.value.startswith("**The model's own plan**"))
    assert " → ".join(map(str, own.plan)) in head
    assert f"log-probability {own.own.result.scores['log_prob']:.2f}" in head
    table = next(d.value for d in at.dataframe if "per token" in d.value.columns)
    rows = service.plan_rows(own, records)
    assert list(table["plan"]) == [r["plan"] for r in rows] and list(table["per token"]) == sorted(table["per token"], reverse=True)
    assert "the model's own (+RM)" in set(table["source"])
    beam_rows = [src for src in table["source"] if src.startswith("beam n-best #")]  # the beam's other plans
    assert len(beam_rows) == len(own.beam) - 1
    free = service.compare("e2e", records, seg, None, "none", 5).seg
    assert own.appended == [k for k in own.plan if k not in service.plan_of(free.result)]
    added = [c.value for c in at.caption if c.value.startswith("Added by +RM")]
    assert len(added) == (1 if own.appended else 0)
    for k in own.appended:
        assert f"record {k} " in added[0]
    note = own.sampling_note()  # fewer sampled rows than asked for: where they went
    assert (note is None) == (own.sampled_new == own.asked)
    if note:
        assert any(i.value == note for i in at.info) and f"samples {own.asked} plans from the transition model" in note
    # use the last listed plan, then force a reversed plan: old and new side by side with a word diff
    last = rows[-1]
    at.button(key=f"plan_use_{last['rank']}").click().run()
    assert " → ".join(map(str, at.session_state["plan_order"])) == last["plan"]
    at.session_state["plan_order"] = list(reversed(own.plan))
    at.run()
    at.button(key="plan_regenerate").click().run()
    assert not at.exception and len(_texts(at)) == 2
    new = service.generate_with_plan("e2e", records, seg, list(reversed(own.plan)))
    diff = next(m.value for m in at.markdown if 'class="segviz-diff"' in m.value)
    if new.result.tokens != own.own.result.tokens:
        assert "<ins" in diff or "<del" in diff
    # a changed setting greys the shown outputs until they are regenerated
    at.number_input(key="plan_beam").set_value(2).run()
    assert any("beam size has changed" in w.value for w in at.warning)
    assert all("segviz-stale" in t for t in _texts(at))
    at.button(key="plan_regenerate").click().run()
    assert not any("segviz-stale" in t for t in _texts(at))


def test_plan_editor_bad_link_and_missing_model(env, tmp_path, monkeypatch):
    at = _run(PLAN, dataset="e2e", records="[[broken")
    assert any("could not be read" in e.value for e in at.error)
    assert not any("No records from the Playground" in i.value for i in at.info)  # a link was given
    bundled = next(iter(EXAMPLES["e2e"].values()))  # falls back to a bundled example, the model's plan
    assert at.session_state["plan_order"] == service.plan_overview("e2e", bundled, load(env / "e2e-seg"), 5).plan
    monkeypatch.setenv("SEGVIZ_CHECKPOINTS", str(tmp_path / "empty"))
    at = _run(PLAN, dataset="webnlg")
    assert any("No usable Segment model (ours) checkpoint for webnlg" in e.value for e in at.error)


def test_plan_editor_warns_of_its_records_as_the_playground_does(env):
    """An unknown attribute or an unseen word was warned of on the Playground only; the Plan
    editor shows the same warnings for the records it plans."""
    records = [Record("name", "Zyxwv Quortle"), Record("wifi", "free")]
    at = _run(PLAN, dataset="e2e", records=service.records_to_param(records))
    shown = [html.unescape(w.value) for w in at.warning]
    assert any("'wifi' is not an E2E attribute" in w for w in shown), shown
    assert any("never seen" in w for w in shown), shown
    plain = EXAMPLES["e2e"]["The Golden Lantern (4 slots)"]
    assert not any("not an E2E attribute" in w.value for w in _run(PLAN, dataset="e2e", records=service.records_to_param(plain)).warning)


# ----- Hallucination inspector ----------------------------------------------------------------------------


def test_inspector_without_dev_data_uses_bundled(env):
    at = _run(INSPECTOR)
    assert any("Dev data unavailable" in w.value for w in at.warning)
    assert at.number_input(key="insp_n").max == len(EXAMPLES["e2e"])
    at.number_input(key="insp_n").set_value(2)
    at.button(key="insp_run").click().run()
    assert not at.exception
    assert any(m.value.endswith("of 2 cases.** Click a column header to sort; select a row to open the case.")
               for m in at.markdown)  # fmt: skip
    at.radio(key="sidebar_dataset").set_value("webnlg").run()
    at.number_input(key="insp_n").set_value(1)
    at.button(key="insp_run").click().run()  # a WebNLG run of its own
    assert not at.exception and any(m.value.endswith("of 1 case.** Click a column header to sort; select a row to "
                                                     "open the case.") for m in at.markdown)  # fmt: skip
    at.radio(key="sidebar_dataset").set_value("e2e").run()  # back: the E2E run is kept, not dropped
    assert not at.exception
    assert any(m.value.endswith("of 2 cases.** Click a column header to sort; select a row to open the case.")
               for m in at.markdown)  # fmt: skip


def test_inspector_run_flags_and_open_case(env, dev_data):
    at = _run(INSPECTOR)
    assert not at.warning
    at.number_input(key="insp_beam").set_value(2)
    at.button(key="insp_run").click().run()
    assert not at.exception
    seg, pg = load(env / "e2e-seg"), load(env / "e2e-pg")
    rows = service.flagged_rows(service.run_systems("e2e", dev_data, seg, pg, "rm", 2))
    table = at.dataframe[0].value
    assert rows and len(table) == len(rows) and list(table["kind"]) == [r["kind"] for r in rows]
    assert at.multiselect(key="insp_kinds_e2e").options == ["wrong", "repeated", "missing", "hallucinated"]
    at.multiselect(key="insp_kinds_e2e").set_value([rows[0]["kind"]]).run()
    assert set(at.dataframe[0].value["kind"]) == {rows[0]["kind"]}
    case = rows[0]["case"]
    assert at.selectbox(key="insp_case").value == case
    assert len(_texts(at)) == 2
    at.selectbox(key=f"insp_token_seg_{case}").set_value(1).run()
    assert not at.exception
    assert 'data-t="1" style="outline:2px solid #000' in _texts(at)[0]
    # another case has a picker of its own (one kept from the last case crashed the page)
    at.multiselect(key="insp_kinds_e2e").set_value([r["kind"] for r in rows]).run()
    other = next((r["case"] for r in rows if r["case"] != case), None)
    assert other is not None, "the tiny models should get more than one case flagged"
    at.selectbox(key="insp_case").set_value(other).run()
    assert not at.exception and at.selectbox(key=f"insp_token_seg_{other}").value == 0
    at.radio(key="insp_view").set_value("posterior").run()
    assert not at.exception


def test_inspector_offers_every_dev_input(env, tmp_path, monkeypatch):
    """No cap on the dev inputs (the first 300 of WebNLG's had 1 or 2 triples only); the
    Playground's picker names a dev input by its records."""
    (tmp_path / "many" / "e2e").mkdir(parents=True)
    mrs = [f"name[Place {i}], eatType[pub]" + (", area[riverside]" if i % 2 else "") for i in range(310)]
    lines = ["mr,ref"] + [f'"{mr}",Some reference.' for mr in mrs]
    (tmp_path / "many" / "e2e" / "dev.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    monkeypatch.setenv("SEGVIZ_DATA", str(tmp_path / "many"))
    at = _run(INSPECTOR)
    assert at.number_input(key="insp_n").max == 310
    at = _run(str(ROOT / "pages" / "0_Playground.py"))
    picker = at.selectbox(key="playground_example")
    last = "name[Place 309] · eatType[pub] · area[riverside]"  # the records, as the inspector lists a case
    assert last in picker.options and len(picker.options) == 1 + len(EXAMPLES["e2e"]) + 310


def test_inspector_upload(env):
    at = _run(INSPECTOR)
    at.radio(key="insp_source").set_value("upload").run()
    good = "mr\toutput\nname[Blue Café], food[Thai]\tBlue Café is a family friendly pub.\n".encode()
    at.file_uploader(key="insp_upload").set_value(("out.tsv", good, "text/tab-separated-values")).run()
    assert not at.exception
    table = at.dataframe[0].value
    assert ("missing", "food[Thai]") in set(zip(table["kind"], table["record"], strict=True))
    assert "hallucinated" in set(table["kind"])
    assert len(_texts(at)) == 1
    assert any("No attention" in c.value for c in at.caption)


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"just one column\n", "line 1: expected 2 tab-separated columns"), (b"\xff\xfe\x00\x01", "not UTF-8"),
     (b"name[<script>\tx\n", "unbalanced brackets")],  # fmt: skip
)
def test_inspector_malformed_upload(env, data, message):
    at = _run(INSPECTOR)
    at.radio(key="insp_source").set_value("upload").run()
    at.file_uploader(key="insp_upload").set_value(("bad.tsv", data, "text/plain")).run()
    assert not at.exception
    assert any(message in e.value and "Cannot read bad.tsv" in e.value for e in at.error)


# ----- Results ----------------------------------------------------------------------------------------------


def test_results_page(env, tmp_path, monkeypatch):
    at = _run(RESULTS)
    assert any("No metrics yet for e2e-pg, e2e-seg" in i.value for i in at.info)
    assert len(at.get("vega_lite_chart")) == 2  # loss curves and E[#segments] vs K
    root = tmp_path / "ck"
    root.mkdir()
    for name in ("e2e-seg", "webnlg-seg"):
        (root / name).symlink_to(env / name)
    (root / "e2e-pg").mkdir()
    (root / "e2e-pg" / "config.json").write_text(json.dumps({"dataset": "e2e", "model": {"kind": "pg"}}))
    (root / "e2e-pg" / "metrics.json").write_text(json.dumps({"rm": {"bleu": 0.5}}))  # odd, still shown
    (root / "e2e-pg" / "history.json").write_text("[oops")
    monkeypatch.setenv("SEGVIZ_CHECKPOINTS", str(root))
    at = _run(RESULTS)
    assert any("e2e-pg: history.json is unreadable" in w.value for w in at.warning)
    assert list(at.dataframe[-1].value["checkpoint"]) == ["e2e-pg", "e2e-seg"]
    assert list(at.dataframe[-1].value["epochs"]) == [0, 3]
    at.toggle(key="results_all_datasets").set_value(True).run()
    assert list(at.dataframe[-1].value["checkpoint"]) == ["e2e-pg", "e2e-seg", "webnlg-seg"]
    assert not {"val_curve", "command"} & set(at.dataframe[-1].value.columns)  # lists and dicts read as raw text
    monkeypatch.setenv("SEGVIZ_CHECKPOINTS", str(tmp_path / "none"))
    at = _run(RESULTS)
    assert any("No checkpoints found" in w.value for w in at.warning)


def test_results_readable_metrics_na_and_shipped_epoch(env, tmp_path, monkeypatch):
    root = tmp_path / "ck"
    metrics = {"bleu": 0.5719, "rouge_l": 0.7, "cider": 3.6, "wrong": 0, "repeated": 209, "missing": 105,
               "hallucinated": 0, "slot_error_rate": 0.12251, "dist1": 1887, "dist3": 8583, "generation_seconds": 119.9,
               "inputs": 872}  # fmt: skip  (no METEOR: computed without Java)
    for name in ("webnlg-seg", "e2e-seg"):
        (root / name).mkdir(parents=True)
        for f in ("config.json", "history.json"):
            (root / name / f).write_text((env / name / f).read_text())
        (root / name / "metrics.json").write_text(json.dumps({"rm": metrics, "none": metrics}))
    hist = [{"epoch": 1, "val_nll": 1.2, "val_exp_seg": 6.0, "val_K": 5.0}, {"epoch": 2, "val_nll": 1.1, "val_exp_seg": 5.5, "val_K": 5.0},
            {"epoch": 3, "val_nll": 1.15, "val_exp_seg": 5.4, "val_K": 5.0}]  # fmt: skip
    hist[2]["command"] = {"line": "python -m segviz.train --out x --init y --clean --epochs 3"}  # a second stretch
    (root / "e2e-seg" / "history.json").write_text(json.dumps(hist))
    monkeypatch.setenv("SEGVIZ_CHECKPOINTS", str(root))
    at = _run(RESULTS)
    stretches = next(d.value for d in at.dataframe if "flags" in d.value.columns)
    assert list(stretches["epochs"]) == ["1–2", "3"] and stretches["flags"].iloc[1] == "--init y --clean"
    assert any("joins every stretch" in c.value for c in at.caption)
    table = next(d.value for d in at.dataframe if "BLEU" in d.value.columns)
    assert list(table.columns[:4]) == ["checkpoint", "system", "BLEU", "ROUGE-L"]
    assert list(table["system"]) == ["ours", "ours (+RM)"] and table["SER"].iloc[0] == "12.25%"
    assert table["METEOR"].iloc[0] == "n/a" and table["wrong"].iloc[0] == "0"  # E2E: the checker counts wrong
    assert any("counted by the automatic checker" in c.value for c in at.caption)
    last = next(d.value for d in at.dataframe if "shipped epoch" in d.value.columns)
    assert last["shipped epoch"].iloc[0] == 2  # lowest validation NLL
    at.toggle(key="results_all_datasets").set_value(True).run()
    table = next(d.value for d in at.dataframe if "BLEU" in d.value.columns)
    web = table[table["checkpoint"] == "webnlg-seg"]
    assert set(web["wrong"]) == {"n/a"} and set(web["hallucinated"]) == {"n/a"} and set(web["missing"]) == {"105"}
    charts = [e for e in at.main if getattr(e, "type", "") == "vega_lite_chart"]
    specs = [json.loads(c.proto.spec) for c in charts]
    facet = next(s for s in specs if "facet" in s)
    assert facet["facet"]["field"] == "checkpoint"  # one panel per checkpoint
    assert any("diamond" in json.dumps(s) for s in specs)  # the shipped epoch on the loss curves
