"""AppTest of pages/4_Annotate.py: annotator id, judgements saved at once, navigation, resume,
results and export, campaign creation from tiny checkpoints."""

from __future__ import annotations

import html
from pathlib import Path

import annotate_backends
import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetStates
from streamlit.testing.v1 import AppTest

from segviz.annotate import Input, Output, Store, create_campaign
from segviz.annotate.workflow import CHANGED_ELSEWHERE, SAVED_OVER_STALE
from segviz.records import Record, format_e2e_mr, tokenize

PAGE = str(Path(__file__).resolve().parent.parent / "pages" / "4_Annotate.py")
RECORDS = [Record("name", "The <b>Eagle</b>"), Record("eatType", "pub"), Record("area", "riverside")]
TEXT = "The <b>Eagle</b> is a pub."
SEGMENTS = {"tokens": tokenize(TEXT), "segments": [[0, 9, 0], [9, 12, 1], [12, 13, None]]}


# the page runs on SQLite and on PostgreSQL (see annotate_backends)
db_url = annotate_backends.db_url
postgres_url = annotate_backends.postgres_url
postgres_admin = annotate_backends.postgres_admin


@pytest.fixture
def store(db_url: str, tmp_path: Path, monkeypatch) -> Store:
    monkeypatch.setenv("SEGVIZ_ANNOTATE_DB", db_url)
    monkeypatch.setenv("SEGVIZ_CHECKPOINTS", str(tmp_path / "no-checkpoints"))
    s = Store(db_url)
    yield s
    s.dispose()


@pytest.fixture
def campaign(store: Store) -> Store:
    """Three inputs, one system; the checker pre-flags record 3 (area) as missing."""
    inputs = [Input(f"in{i}", RECORDS) for i in range(3)]
    create_campaign(store, "h", "e2e", "dev", {"s": [Output(i.input_id, TEXT, SEGMENTS) for i in inputs]}, inputs,
                    auto_check=lambda records, out: {2: "missing"}, prefill=True)
    return store


def app(annotator: str | None = "alice") -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120)
    if annotator is not None:
        at.query_params["annotator"] = annotator
    return at.run()


def shown_item(at: AppTest) -> int:
    """Item id of the item on screen (from its fluency radio's key)."""
    (key,) = [r.key for r in at.radio if r.key and r.key.startswith("ann_flu_")]
    return int(key.removeprefix("ann_flu_"))


def progress_text(at: AppTest) -> str:
    return at.get("progress")[0].proto.text


def test_no_campaign_yet(store: Store) -> None:
    at = app()
    assert not at.exception
    assert any("No campaign yet" in i.value for i in at.info)
    assert at.button(key="ann_create") and not [r for r in at.radio if r.key and r.key.startswith("ann_flu_")]


def test_invalid_annotator_is_refused(campaign: Store) -> None:
    at = app("bad id!")
    assert not at.exception
    assert any("is not allowed" in e.value for e in at.sidebar.error)
    assert any("Enter your annotator id" in w.value for w in at.warning)
    assert not [r for r in at.radio if r.key and r.key.startswith("ann_flu_")]


def test_annotator_from_sidebar(campaign: Store) -> None:
    at = app(None)
    assert any("Enter your annotator id" in w.value for w in at.warning)
    at.text_input(key="ann_annotator").set_value("bob").run()
    assert not at.exception
    assert at.query_params["annotator"] == "bob" and at.query_params["campaign"] == "h"
    assert progress_text(at) == "0 of 3 done · item 1 of 3"


def test_annotate_navigate_and_resume(campaign: Store) -> None:
    at = app()
    assert not at.exception
    assert progress_text(at) == "0 of 3 done · item 1 of 3"
    html = "".join(m.value for m in at.markdown)
    assert "&lt;b&gt;Eagle&lt;/b&gt;" in html and "<b>Eagle" not in html  # model / user text is escaped
    first = shown_item(at)
    # the checker's pre-fill is shown ticked; nothing is saved by merely looking
    assert at.checkbox(key=f"ann_flag_{first}_2_missing").value is True
    assert at.checkbox(key=f"ann_flag_{first}_0_wrong").value is False
    assert campaign.annotations("h") == []

    at.radio(key=f"ann_flu_{first}").set_value(4).run()
    a = campaign.annotation(first, "alice")
    assert a["fluency"] == 4 and a["flags"] == a["prefilled"] == {"2": {"wrong": False, "repeated": False, "missing": True}}
    at.checkbox(key=f"ann_flag_{first}_2_missing").uncheck().run()
    at.checkbox(key=f"ann_flag_{first}_1_repeated").check().run()
    at.number_input(key=f"ann_extra_{first}").set_value(2).run()
    at.text_area(key=f"ann_comment_{first}").input("sounds odd").run()
    a = campaign.annotation(first, "alice")
    assert a["flags"] == {"1": {"wrong": False, "repeated": True, "missing": False}}
    assert a["prefilled"] == {"2": {"wrong": False, "repeated": False, "missing": True}}  # what was shown
    assert (a["fluency"], a["extra_wrong"], a["comment"]) == (4, 2, "sounds odd")
    assert progress_text(at) == "1 of 3 done · item 1 of 3"

    at.button(key="ann_next").click().run()
    second = shown_item(at)
    assert second != first and progress_text(at) == "1 of 3 done · item 2 of 3"
    at.radio(key=f"ann_flu_{second}").set_value(2).run()
    at.button(key="ann_back").click().run()
    assert shown_item(at) == first  # the saved answers are shown again
    assert at.radio(key=f"ann_flu_{first}").value == 4
    assert at.checkbox(key=f"ann_flag_{first}_2_missing").value is False
    assert at.checkbox(key=f"ann_flag_{first}_1_repeated").value is True
    assert at.number_input(key=f"ann_extra_{first}").value == 2
    assert at.text_area(key=f"ann_comment_{first}").value == "sounds odd"

    # another browser (a new session): resumes at the first item not done, with the progress
    other = app()
    third = shown_item(other)
    assert third not in (first, second) and progress_text(other) == "2 of 3 done · item 3 of 3"
    other.button(key="ann_skip").click().run()
    assert campaign.annotation(third, "alice")["skipped"] is True
    assert any("All items are done" in s.value for s in other.success)
    assert progress_text(other) == "3 of 3 done · item 3 of 3"
    other.button(key="ann_back").click().run()  # the second item, rated 2: a skip says what becomes of the rating
    other.button(key="ann_skip").click().run()
    other.button(key="ann_back").click().run()
    assert shown_item(other) == second and campaign.annotation(second, "alice")["skipped"] is True
    assert any("its fluency 2 is kept but not counted in the results" in c.value for c in other.caption)
    # a different annotator sees the same items afresh
    bob = app("bob")
    assert progress_text(bob) == "0 of 3 done · item 1 of 3"
    assert campaign.annotation(shown_item(bob), "bob") is None


def rerun_with_stale(at: AppTest, stale: WidgetStates) -> AppTest:
    """Rerun as a browser does that still holds widgets the last run no longer drew: it sends
    their values along with the current ones (AppTest itself sends only the current tree's)."""
    current = at._tree.get_widget_states()
    ids = {w.id for w in current.widgets}
    states = WidgetStates()
    states.widgets.extend([w for w in stale.widgets if w.id not in ids])
    states.widgets.extend(current.widgets)
    return at._run(states)


def test_values_of_an_item_no_longer_shown_save_nothing(campaign: Store) -> None:
    """Right after Next (or Back, or a reload) a browser on a loaded server can send back the
    previous item's widget values, which Streamlit takes for changes (it has dropped their state)
    and calls their callbacks: the item only looked at got an annotation (its pre-ticked boxes,
    an empty comment) and was exported as annotated. What the tab showed is no change."""
    at = app()
    first = shown_item(at)
    shown = at._tree.get_widget_states()  # the first item's boxes as drawn (record 3 pre-ticked)
    at.button(key="ann_next").click().run()
    second = shown_item(at)
    assert second != first
    rerun_with_stale(at, shown)
    assert not at.exception and not at.error
    assert campaign.annotations("h") == []  # nothing clicked, nothing saved
    assert progress_text(at) == "0 of 3 done · item 2 of 3"

    at.radio(key=f"ann_flu_{second}").set_value(3).run()  # a real change on the item shown
    rated = at._tree.get_widget_states()
    at.button(key="ann_back").click().run()
    assert shown_item(at) == first
    rerun_with_stale(at, rated)  # the second item's rating and boxes come back: saved once, not again
    assert [(a["item_id"], a["version"]) for a in campaign.annotations("h")] == [(second, 1)]

    # a box of an item no longer shown that *was* changed (clicked before the page was redrawn) is saved
    box = at.checkbox(key=f"ann_flag_{first}_0_wrong")
    at.button(key="ann_next").click().run()
    clicked = WidgetStates()
    clicked.CopyFrom(shown)
    (state,) = [w for w in clicked.widgets if w.id == box.id]
    state.bool_value = True
    rerun_with_stale(at, clicked)
    assert ticked(campaign.annotation(first, "alice")) == {(0, "wrong"), (2, "missing")}  # + the pre-tick shown
    assert campaign.annotation(first, "alice")["version"] == 1


def rerun_as_fresh_mount(at: AppTest, item: int) -> AppTest:
    """Rerun as a browser does that mounted the item's judgement widgets afresh, with no value of
    its own for them (it dropped them with the widgets a finished run no longer drew): it shows
    and sends back what each widget declares as its default (its proto's ``default``)."""
    states = WidgetStates()
    states.CopyFrom(at._tree.get_widget_states())
    widgets = {w.id: w for w in [*at.checkbox, *at.radio, *at.number_input, *at.text_area]
               if w.key and w.key.startswith("ann_") and w.key.split("_")[2] == str(item)}
    for state in states.widgets:
        if state.id not in widgets:
            continue
        w = widgets[state.id]
        state.ClearField("value")
        if w.type == "checkbox":
            state.bool_value = w.proto.default
        elif w.proto.HasField("default"):  # none declared (no rating yet): nothing sent
            if w.type == "radio":
                state.string_value = w.proto.options[w.proto.default]
            elif w.type == "number_input":
                state.int_value = int(w.proto.default)
            else:
                state.string_value = w.proto.default
    return at._run(states)


def test_an_item_shown_again_declares_its_held_values(campaign: Store) -> None:
    """Back right after Next can carry the item's own values back from the browser (sent before
    the browser dropped them); the page then draws the item with those values held, and a
    browser that has meanwhile dropped them mounts its widgets afresh, showing what each declares.
    A declared blank (an unticked pre-ticked box, no rating) came back as a change nobody made and
    was saved: the never-answered item of the reload-and-export browser test was exported."""
    at = app()
    first = shown_item(at)
    shown = at._tree.get_widget_states()  # record 3 pre-ticked, as drawn
    at.button(key="ann_next").click().run()
    at.button(key="ann_back").click()
    rerun_with_stale(at, shown)  # Back, sent before the browser dropped the first item's widgets
    assert shown_item(at) == first
    assert at.checkbox(key=f"ann_flag_{first}_2_missing").proto.default is True  # what a fresh mount shows
    rerun_as_fresh_mount(at, first)
    assert not at.exception
    assert campaign.annotations("h") == []  # nothing clicked, nothing saved
    assert at.checkbox(key=f"ann_flag_{first}_2_missing").value is True

    at.radio(key=f"ann_flu_{first}").set_value(4).run()  # a rating held and shown again: not cleared
    rated = at._tree.get_widget_states()
    at.button(key="ann_next").click().run()
    at.button(key="ann_back").click()
    rerun_with_stale(at, rated)
    rerun_as_fresh_mount(at, first)
    a = campaign.annotation(first, "alice")
    assert (a["fluency"], a["version"]) == (4, 1) and ticked(a) == {(2, "missing")}


def test_alignment_table_and_results(campaign: Store) -> None:
    at = app()
    item = shown_item(at)
    editor = at.dataframe[0].value  # the alignment-correction table
    assert editor.to_dict("records") == [{"segment": "The <b>Eagle</b>", "record": "name[The <b>Eagle</b>]"},
                                         {"segment": "is a pub", "record": "eatType[pub]"},
                                         {"segment": ".", "record": "(none)"}]
    at.radio(key=f"ann_flu_{item}").set_value(5).run()
    at.toggle(key="ann_results").set_value(True).run()
    assert not at.exception
    table = at.dataframe[1].value  # [0] is the alignment editor
    assert table.to_dict("records") == [{"system": "s", "items": 1, "annotators": 1, "fluent": 5.0, "wrong": 0,
                                         "repeat": 0, "miss": 1}]
    assert [b.label for b in at.get("download_button")] == ["Export CSV", "Export JSONL"]
    auto = at.dataframe[2].value
    assert auto.set_index("flag").loc["missing", "accuracy"] == "1.000"
    assert "None" not in auto.astype(str).to_numpy().ravel().tolist()  # an undefined kappa reads "n/a" (session 41)


def test_create_campaign_from_checkpoints(store: Store, tmp_path: Path, monkeypatch) -> None:
    from test_annotate_workflow import tiny_checkpoints, tiny_inputs

    inputs = tiny_inputs({2: 2, 3: 1})
    monkeypatch.setenv("SEGVIZ_CHECKPOINTS", str(tiny_checkpoints(tmp_path / "ckpt", inputs)))
    (tmp_path / "data" / "e2e").mkdir(parents=True)
    rows = "".join(f'"{format_e2e_mr(i.records)}",Some reference.\n' for i in inputs)
    (tmp_path / "data" / "e2e" / "dev.csv").write_text("mr,ref\n" + rows)
    monkeypatch.setenv("SEGVIZ_DATA", str(tmp_path / "data"))
    at = app()
    systems = at.multiselect(key="ann_new_systems")
    assert systems.options == ["e2e-pg", "e2e-seg · ours", "e2e-seg · ours (+R)", "e2e-seg · ours (+RM)"]
    systems.set_value(["e2e-seg:none", "e2e-pg"])
    at.text_input(key="ann_new_name").set_value("mine")
    at.number_input(key="ann_new_per_k").set_value(1)
    at.button(key="ann_create").click().run()
    assert not at.exception and not at.error
    c = store.campaign("mine")
    assert c["config"]["systems"] == ["e2e-seg:none", "e2e-pg"] and c["config"]["sampling"]["counts"] == {"2": 1, "3": 1}
    assert len(store.items("mine")) == 4
    assert at.selectbox(key="ann_campaign").value == "mine"  # the new campaign is selected
    assert progress_text(at) == "0 of 4 done · item 1 of 4"
    at.toggle(key="ann_results").set_value(True).run()
    assert any("No complete annotation yet" in i.value for i in at.info)  # not a table of "None" fluency
    assert not any("fluent" in d.value.columns for d in at.dataframe)
    at.radio(key=f"ann_flu_{shown_item(at)}").set_value(4).run()
    table = next(d.value for d in at.dataframe if "fluent" in d.value.columns)
    assert list(table["system"]) == ["e2e-seg · ours", "e2e-pg"]  # not the stored "e2e-seg:none"
    at.text_input(key="ann_new_name").set_value("mine").run()
    at.button(key="ann_create").click().run()
    assert any("already exists" in e.value for e in at.error)


def ticked(a: dict) -> set[tuple[int, str]]:
    return {(int(k), f) for k, fs in a["flags"].items() for f, v in fs.items() if v}


def test_same_annotator_in_two_tabs_loses_nothing(campaign: Store) -> None:
    """The issue's lost update: tab B (stale) ticks record 2; tab A's tick on record 1 survives,
    B is told and shows the saved state; A is told on its next rerun."""
    tab_a, tab_b = app(), app()  # both open the first item; nothing saved yet
    item = shown_item(tab_a)
    assert shown_item(tab_b) == item
    box = "ann_flag_{}_{}_{}".format
    tab_a.checkbox(key=box(item, 0, "wrong")).check().run()
    tab_b.checkbox(key=box(item, 1, "repeated")).check().run()
    saved = campaign.annotation(item, "alice")
    prefill = {(2, "missing")}  # pre-ticked by the checker, confirmed by both tabs
    assert ticked(saved) == {(0, "wrong"), (1, "repeated")} | prefill and saved["version"] == 2
    assert [w.value for w in tab_b.warning] == [SAVED_OVER_STALE]
    assert tab_b.checkbox(key=box(item, 0, "wrong")).value is True  # B now shows A's tick
    assert not tab_a.warning
    tab_a.run()  # any rerun of the stale tab A
    assert [w.value for w in tab_a.warning] == [CHANGED_ELSEWHERE]
    assert tab_a.checkbox(key=box(item, 1, "repeated")).value is True
    tab_a.radio(key=f"ann_flu_{item}").set_value(3).run()  # A is up to date again: no message
    assert not tab_a.warning and not tab_a.exception and not tab_b.exception
    saved = campaign.annotation(item, "alice")
    assert (saved["fluency"], saved["version"]) == (3, 3)
    assert ticked(saved) == {(0, "wrong"), (1, "repeated")} | prefill


def test_default_database_is_outside_the_repository(tmp_path: Path, monkeypatch) -> None:
    """Without $SEGVIZ_ANNOTATE_DB the page stores into the per-user data folder, not the checkout."""
    root = Path(PAGE).parent.parent
    monkeypatch.delenv("SEGVIZ_ANNOTATE_DB", raising=False)
    monkeypatch.delenv("SEGVIZ_DATA_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("SEGVIZ_CHECKPOINTS", str(tmp_path / "no-checkpoints"))
    monkeypatch.chdir(root)
    def databases() -> list[Path]:  # (other files may appear: the tree is shared while tests run)
        return sorted([*root.glob("*.sqlite*"), *root.glob("data/*.sqlite*")])

    before = databases()
    at = app()
    assert not at.exception
    expected = tmp_path / "xdg" / "segviz" / "annotations.sqlite"
    assert expected.is_file()
    assert f"sqlite:///{expected.as_posix()}" in [c.value for c in at.code]  # the page says where
    assert databases() == before


def test_user_text_is_shown_literally(store: Store) -> None:
    """Campaign names, annotator ids and outputs with Markdown / LaTeX are shown as typed."""
    name = "$x^2$ **c**"
    inputs = [Input("in0", RECORDS)]
    create_campaign(store, name, "e2e", "dev", {"s": [Output("in0", "It's **bold** and $y$.")]}, inputs)
    at = app("**bob**")
    assert not at.exception
    (err,) = at.sidebar.error
    assert "'**bob**' is not allowed" in html.unescape(err.value) and not set(err.value) & set("*$`")
    caption = next(c.value for c in at.caption if "Campaign" in c.value)
    assert f"Campaign **{name}**" in html.unescape(caption) and caption.count("*") == 4  # only the bold markers
    at = app("bob")
    text = next(m.value for m in at.markdown if "segviz-text" in m.value)
    assert "It's **bold** and $y$." in html.unescape(text) and not set(text) & set("*$`")
