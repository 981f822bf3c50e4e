"""WebNLG uploads in the Hallucination inspector (segviz.uploads): one line per entry, either an
output paired with the dev set's n-th entry or ``triples<TAB>output``; bad lines are named."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from segviz import uploads, viz
from segviz.records import parse_webnlg_triples
from segviz.service import OutputFileError

ROOT = Path(__file__).resolve().parent.parent
INSPECTOR = str(ROOT / "pages" / "2_Hallucination_inspector.py")
BEAN = ["Alan_Bean | nationality | United_States", "Alan_Bean | occupation | Test_pilot"]
AARHUS = ["Aarhus_Airport | cityServed | Aarhus"]
ENTRIES = [parse_webnlg_triples(BEAN), parse_webnlg_triples(AARHUS)]


def test_outputs_alone_are_paired_with_the_entries_in_order():
    got = uploads.parse_webnlg_lines(b"Alan Bean is American.\nAarhus Airport serves Aarhus.\n", ENTRIES)
    assert got == [(1, ENTRIES[0], "Alan Bean is American."), (2, ENTRIES[1], "Aarhus Airport serves Aarhus.")]


def test_triples_tab_output_needs_no_dev_set():
    data = f"{' ; '.join(BEAN)}\tAlan Bean was a test pilot.\n\n{AARHUS[0]}\tIt serves Aarhus.\n".encode()
    got = uploads.parse_webnlg_lines(data, None)
    assert [(n, [r.label for r in recs], out) for n, recs, out in got] == [
        (1, [r.label for r in ENTRIES[0]], "Alan Bean was a test pilot."),
        (3, [r.label for r in ENTRIES[1]], "It serves Aarhus."),
    ]


@pytest.mark.parametrize(
    ("data", "entries", "message"),
    [
        (b"one\ntwo\nthree\n", ENTRIES, "3 lines, but the WebNLG dev set has 2 entries"),
        (b"one\n\n", ENTRIES, "1 line, but the WebNLG dev set has 2 entries"),
        (b"one\n   \nthree\n", [*ENTRIES, ENTRIES[0]], "line 2: the output text is empty"),
        (b"Alan Bean | nationality\tHe is American.\n", None, "line 1: triple must have 3 parts"),
        (b"name[Blue Spice]\tBlue Spice is a pub.\n", None, "line 1: this looks like an E2E MR"),
        (b"a | b | c\tx\ty\n", None, "line 1: more than one tab"),
        (b"Alan Bean is American.\n", None, "line 1: an output without its triples, and no WebNLG dev set"),
        (b"a | b | c\t  \n", None, "line 1: the output text is empty"),
        (b"\xff\xfe\x00", None, "not UTF-8"),
        (b"\n\n", None, "the file holds no outputs"),
    ],
)
def test_bad_lines_are_named(data, entries, message):
    with pytest.raises(OutputFileError, match=message.replace("(", r"\(")):
        uploads.parse_webnlg_lines(data, entries)


def test_e2e_files_still_take_mr_tab_output():
    got = uploads.parse_lines("e2e", b"name[Blue Spice]\tBlue Spice is a pub.\n")
    assert [(n, [r.label for r in recs], out) for n, recs, out in got] == [(1, ["name[Blue Spice]"], "Blue Spice is a pub.")]


def _upload(data: bytes) -> AppTest:
    at = AppTest.from_file(INSPECTOR, default_timeout=120)
    at.query_params["dataset"] = "webnlg"
    at.run()
    at.radio(key="insp_source").set_value("upload").run()
    at.file_uploader(key="insp_upload").set_value(("out.txt", data, "text/plain")).run()
    assert not at.exception
    return at


def test_inspector_flags_an_invented_number_in_an_uploaded_webnlg_file(env):
    at = _upload(f"{' ; '.join(BEAN)}\tAlan Bean, born in 1932, was an American test pilot.\n".encode())
    table = at.dataframe[0].value  # the checker finds both records; 1932 is in no record
    assert list(zip(table["kind"], table["record"], strict=True)) == [("invented number", "number[1932]")]
    assert "invented number" in at.multiselect(key="insp_kinds_webnlg").value
    assert at.multiselect(key="insp_attributes").options == ["number"]  # one attribute for every invented number
    assert not at.exception


def test_inspector_checks_an_uploaded_webnlg_file(env):
    at = _upload(f"{' ; '.join(BEAN)}\tAlan Bean was a test pilot.\n".encode())
    table = at.dataframe[0].value  # the checker: nationality is not said
    assert list(zip(table["kind"], table["record"], strict=True)) == [("missing", ENTRIES[0][0].label)]
    assert table["case"].tolist() == [1]  # counted from 1, as the app names cases
    texts = [m.value for m in at.markdown if "segviz-text" in m.value]
    assert len(texts) == 1 and ">Alan<" in texts[0] and ">Bean<" in texts[0]  # its own case, aligned
    assert any("forced alignment" in c.value for c in at.caption)


def test_inspector_names_the_bad_line_of_a_webnlg_file(env):
    at = _upload(f"{AARHUS[0]}\tIt serves Aarhus.\nAlan Bean | nationality\tHe is American.\n".encode())
    assert [e.value for e in at.error] == [viz.esc(  # shown literally (escaped once), the line named
        "Cannot read out.txt: line 2: triple must have 3 parts 'subject | predicate | object', got 2: "
        "'Alan Bean | nationality' (triples are 'subject | predicate | object', ';' between them)"
    )]


def test_inspector_pairs_bare_outputs_with_the_webnlg_dev_set(env, monkeypatch):
    from segviz import ui

    monkeypatch.setattr(uploads, "dev_entries", lambda data_dir, dataset="webnlg": ENTRIES)
    ui._webnlg_dev.clear()
    monkeypatch.setattr(ui, "MAX_UPLOAD_CASES", 1)
    at = _upload(b"Alan Bean was a test pilot.\nAarhus Airport serves Aarhus.\n")
    ui._webnlg_dev.clear()
    assert any("out.txt holds 2 outputs; the first 1 are shown" in w.value for w in at.warning)
    assert set(at.dataframe[0].value["record"]) == {ENTRIES[0][0].label}
