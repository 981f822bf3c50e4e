"""AppTest of hostile and careless input (issue 14): text escaped exactly once, never Markdown,
an error box instead of a traceback, nothing generated from a bad link."""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from segviz import service
from segviz.records import Record

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
PLAN, INSPECTOR = (str(ROOT / "pages" / p) for p in ("1_Plan_editor.py", "2_Hallucination_inspector.py"))
MARKUP = "**bold** $x^2$ `code`"


def _run(path: str, **query) -> AppTest:
    at = AppTest.from_file(path, default_timeout=120)
    at.query_params.update(query)
    at.run()
    assert not at.exception
    return at


def _generate(at: AppTest, rows: list[dict]) -> AppTest:
    at.session_state["playground_rows"] = rows
    at.button(key="playground_generate").click().run()
    assert not at.exception
    return at


def _texts(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown if 'class="segviz-text"' in m.value]


def _literal(value: str, text: str) -> bool:
    """``text`` is shown literally by ``value``: no Markdown / LaTeX character left unescaped."""
    return text in html.unescape(value) and not set(value) & set("*$`")


@pytest.fixture
def broken(env, tmp_path, monkeypatch):
    """A copy of the tiny checkpoints whose ``e2e-seg`` config has ``"hidden": "256"``."""
    root = tmp_path / "ck"
    shutil.copytree(env, root)
    config = json.loads((root / "e2e-seg" / "config.json").read_text())
    config["model"]["hidden"] = "256"
    (root / "e2e-seg" / "config.json").write_text(json.dumps(config))
    monkeypatch.setenv("SEGVIZ_CHECKPOINTS", str(root))
    return root


# ----- 1. escaped exactly once ----------------------------------------------------------------------


def test_apostrophes_are_not_shown_as_entities(env):
    at = _generate(_run(APP), [{"attribute": "name", "value": "It's Aren't"}, {"attribute": "food", "value": "Thai"}])
    legend = [m.value for m in at.markdown if 'class="segviz-legend"' in m.value]
    assert len(legend) == 2
    for block in legend + _texts(at):
        assert "&#x27;" not in html.unescape(block)  # was "It&&#35;x27;s": shown as "It&#x27;s"
    assert "name[It's Aren't]" in html.unescape(legend[0])


# ----- 2. what a user typed is never Markdown -------------------------------------------------------


def test_markup_in_records_is_literal_in_warnings_and_errors(env):
    at = _generate(_run(APP), [{"attribute": MARKUP, "value": "v"}, {"attribute": "name", "value": "A"}])
    warnings = [w.value for w in at.warning if "is not an E2E attribute" in html.unescape(w.value)]
    assert len(warnings) == 1 and _literal(warnings[0], f"row 1: '{MARKUP}' is not an E2E attribute")
    at = _generate(at, [{"attribute": MARKUP, "value": "v"}, {"attribute": MARKUP, "value": "w"}])
    assert len(at.error) == 1 and _literal(at.error[0].value, f"duplicate attribute '{MARKUP}' (also in row 1)")


def test_markup_in_plan_editor_record_list_is_literal(env):
    records = json.dumps([["name", MARKUP], ["food", "Thai"]])
    at = _run(PLAN, dataset="e2e", records=records)
    rows = [m.value for m in at.markdown if m.value.startswith("**1.** record 1:")]
    assert rows == ["**1.** record 1: <code>name&#91;&#42;&#42;bold&#42;&#42; &#36;x^2&#36; &#96;code&#96;&#93;</code>"]


def test_plan_editor_bad_link_is_dropped_from_the_url(env):
    at = _run(PLAN, dataset="e2e", records=json.dumps([["name", MARKUP]] * 2))
    assert len(at.error) == 1 and _literal(at.error[0].value, "duplicate attribute 'name'")
    assert "records" not in at.query_params


@pytest.mark.parametrize(("plan", "says"), [("3,3,1", "does not name each of the records 1 to 3 once"),
                                             ("9,1,2", "does not name each"), ("abc", "is not a list of record numbers")])
def test_plan_editor_says_why_a_links_plan_is_not_used(env, plan, says):
    """Session 41 (a new user's trial): a bad ``?plan=`` was dropped without a word."""
    records = json.dumps([["name", "Aromi"], ["food", "Thai"], ["area", "riverside"]])
    at = _run(PLAN, dataset="e2e", records=records, plan=plan)
    assert not at.exception and len(at.warning) >= 1
    assert any(says in html.unescape(w.value) and w.value.endswith("starting from the model&#39;s own plan.") for w in at.warning), [w.value for w in at.warning]
    good = _run(PLAN, dataset="e2e", records=records, plan="3,1,2")
    assert not [w for w in good.warning if "the link's plan" in html.unescape(w.value)]


def test_markup_in_an_uploaded_file_is_literal_in_the_error(env):
    at = _run(INSPECTOR)
    at.radio(key="insp_source").set_value("upload").run()
    data = f"mr\toutput\nname[{MARKUP}], food[x\tsome text\n".encode()
    at.file_uploader(key="insp_upload").set_value(("out.tsv", data, "text/plain")).run()
    assert not at.exception
    assert len(at.error) == 1 and _literal(at.error[0].value, "Cannot read out.tsv: line 2: unbalanced brackets")
    assert MARKUP in html.unescape(at.error[0].value)


# ----- 3. an unusable checkpoint is an error box that says why ----------------------------------------


def test_playground_says_why_a_checkpoint_is_unusable(broken):
    at = _generate(_run(APP), service.rows_from_records("e2e", [Record("name", "Zizzi")]))
    errors = [html.unescape(e.value) for e in at.error]
    assert len(errors) == 1
    assert errors[0].startswith("No usable Segment model (ours) checkpoint for e2e")
    assert f"{broken / 'e2e-seg' / 'config.json'}: field 'model.hidden' must be an even integer of at least 2, got '256'" in errors[0]
    assert "may not be trained yet" not in errors[0]
    assert len(_texts(at)) == 1  # PG still generates


def test_a_checkpoint_of_the_wrong_dataset_or_kind_is_unusable(env, tmp_path, monkeypatch):
    root = tmp_path / "ck"
    shutil.copytree(env / "e2e-seg", root / "e2e-seg")
    shutil.copytree(env / "e2e-seg", root / "e2e-pg")  # a segment model where the PG model belongs
    shutil.copytree(env / "e2e-seg", root / "webnlg-seg")  # an E2E model where the WebNLG one belongs
    monkeypatch.setenv("SEGVIZ_CHECKPOINTS", str(root))
    at = _generate(_run(APP), service.rows_from_records("e2e", [Record("name", "Zizzi")]))
    assert len(_texts(at)) == 1 and len(at.error) == 1
    assert html.unescape(at.error[0].value).endswith(
        f"It cannot be loaded: {root / 'e2e-pg' / 'config.json'}: field 'model.kind' is 'seg', "
        "but the app loads this folder as its 'pg' model")  # fmt: skip
    at = _run(PLAN, dataset="webnlg")
    assert len(at.error) == 1 and html.unescape(at.error[0].value).endswith(
        f"{root / 'webnlg-seg' / 'config.json'}: field 'dataset' is 'e2e', but the app loads this folder as its webnlg model")


def test_plan_editor_says_why_a_checkpoint_is_unusable(broken):
    at = _run(PLAN, dataset="e2e")
    assert len(at.error) == 1 and "field 'model.hidden' must be an even integer" in html.unescape(at.error[0].value)


def test_inspector_with_no_usable_checkpoint_shows_errors_not_a_traceback(broken):
    config = json.loads((broken / "e2e-pg" / "config.json").read_text())
    config["model"]["dropout"] = 5
    (broken / "e2e-pg" / "config.json").write_text(json.dumps(config))
    at = _run(INSPECTOR)
    errors = [html.unescape(e.value) for e in at.error]
    assert len(errors) == 2 and "'model.hidden'" in errors[0] and "'model.dropout' must be a number" in errors[1]
    assert not [b for b in at.button if b.key == "insp_run"]  # nothing to run
    at.session_state["insp_requests"] = {"e2e": ("e2e", 2, "rm", 1)}  # a run requested before they broke
    at.run()
    assert not at.exception  # was StreamlitInvalidColumnSpecError
    assert "No system produced an output for this case." in [e.value for e in at.error]


# ----- 4. an invalid deep link generates nothing ------------------------------------------------------


@pytest.mark.parametrize(
    ("dataset", "records", "message"),
    [
        ("e2e", json.dumps([[f"attr{i}", "v"] for i in range(60)]), "60 records given"),
        ("webnlg", json.dumps([["Aarhus", "leader"]]), "the link's records must have 3 parts each"),
        ("e2e", json.dumps([["name", " ".join(["word"] * 2000)], ["food", "Thai"]]),
         "the records hold 2,003 words; the app handles at most 250"),  # took all 24 GB before (session 41)
    ],
    ids=["60-records", "malformed-triple", "2000-word-value"],
)
def test_invalid_deep_link_shows_the_error_and_generates_nothing(env, dataset, records, message):
    at = _run(APP, dataset=dataset, records=records, constraints="r")
    assert len(at.error) == 1
    assert html.unescape(at.error[0].value).startswith("The link's records could not be read, so nothing was generated: ")
    assert message in html.unescape(at.error[0].value)
    assert not _texts(at) and "playground_request" not in at.session_state
    assert "records" not in at.query_params  # the bad records are not kept in the URL
    assert [i.value for i in at.info] == ["Edit the records and press **Generate**."]
    at.run()  # a rerun still generates nothing
    assert not _texts(at) and len(at.error) == 1


# ----- 7. the inspector names the line of the uploaded file ---------------------------------------------


def test_inspector_cases_are_named_by_the_line_of_the_file(env):
    at = _run(INSPECTOR)
    at.radio(key="insp_source").set_value("upload").run()
    data = "mr\toutput\n\nname[Blue Café], food[Thai]\tBlue Café is a pub.\nname[Zizzi]\tZizzi.\n".encode()
    at.file_uploader(key="insp_upload").set_value(("out.tsv", data, "text/plain")).run()
    assert not at.exception
    options = at.selectbox(key="insp_case").options
    assert options[0] == "1: line 3 — name[Blue Café] · food[Thai]"  # cases count from 1; the header and the blank line count, as in the error messages
