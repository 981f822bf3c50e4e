"""Hostile and careless input to the library and the CLIs (issue 14): one clear sentence naming
the file, the field or line and what is expected; a CLI exits non-zero without a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import MRS, ROOT, make_model

from segviz import checkpoint as ckpt
from segviz.data_webnlg import WebNLGError, read_webnlg

WEBNLG_XML = """<benchmark><entries>
<entry category="Airport" eid="Id1" size="1">
  <modifiedtripleset><mtriple>Aarhus | leader | Jacob_Bundsgaard</mtriple></modifiedtripleset>
  <lex lid="Id1">Jacob Bundsgaard leads Aarhus.</lex>
</entry>
<entry category="Airport" eid="Id2" size="1">
  <modifiedtripleset><mtriple>{triple}</mtriple></modifiedtripleset>
  <lex lid="Id1">Aarhus Airport serves Aarhus.</lex>
</entry>
</entries></benchmark>
"""


def cli(module: str, *args) -> subprocess.CompletedProcess:
    """``python -m segviz.MODULE ARGS`` in a fresh process (what a user sees)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", f"segviz.{module}", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)  # fmt: skip


def assert_clean_failure(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    for n in needles:
        assert n in proc.stderr


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory, vocab):
    root = tmp_path_factory.mktemp("ck")
    ckpt.save(root / "e2e-seg", make_model("seg", vocab), vocab, "e2e")
    ckpt.save(root / "webnlg-seg", make_model("seg", vocab), vocab, "webnlg")
    return root


def _with_model_field(src: Path, dst: Path, **fields) -> Path:
    ckpt.load(src)  # valid before
    dst.mkdir()
    for f in src.iterdir():
        dst.joinpath(f.name).write_bytes(f.read_bytes())
    config = json.loads((dst / "config.json").read_text())
    for k, v in fields.items():
        if k == "dataset":
            config["dataset"] = v
        else:
            config["model"][k] = v
    (dst / "config.json").write_text(json.dumps(config))
    return dst


# ----- checkpoint config validated on load ------------------------------------------------------

BAD_FIELDS = [
    ("hidden", "256", "field 'model.hidden' must be an even integer of at least 2, got '256'"),
    ("hidden", 33, "field 'model.hidden' must be an even integer of at least 2, got 33"),
    ("dropout", 5, "field 'model.dropout' must be a number from 0 up to (not including) 1, got 5"),
    ("kind", "transformer", "field 'model.kind' must be one of 'seg', 'pg', got 'transformer'"),
    ("max_seg_len", 0, "field 'model.max_seg_len' must be an integer of at least 1, got 0"),
    ("emb_dim", True, "field 'model.emb_dim' must be a positive integer, got True"),
    ("reg_weight", None, "field 'model.reg_weight' must be a number of at least 0, got None"),
    ("dataset", "e3e", "field 'dataset' must be one of 'e2e', 'webnlg', got 'e3e'"),
]


@pytest.mark.parametrize(("field", "value", "message"), BAD_FIELDS)
def test_load_rejects_a_bad_config_field_in_one_sentence(ckpts, tmp_path, field, value, message):
    bad = _with_model_field(ckpts / "e2e-seg", tmp_path / "bad", **{field: value})
    with pytest.raises(ckpt.CheckpointError) as e:
        ckpt.load(bad)
    assert str(e.value) == f"{bad / 'config.json'}: {message}"


def test_generate_with_a_bad_config_exits_2_naming_file_and_field(ckpts, tmp_path):
    bad = _with_model_field(ckpts / "e2e-seg", tmp_path / "bad", hidden="256")
    (tmp_path / "in.csv").write_text(f'mr\n"{MRS[1][0]}"\n', encoding="utf-8")
    proc = cli("generate", "--checkpoint", bad, "--input", tmp_path / "in.csv", "--output", tmp_path / "o.tsv")
    assert_clean_failure(proc, f"{bad / 'config.json'}: field 'model.hidden' must be an even integer")


# ----- WebNLG XML --------------------------------------------------------------------------------


def test_read_webnlg_names_file_and_line_of_each_entry(tmp_path):
    f = tmp_path / "1triples.xml"
    f.write_text(WEBNLG_XML.format(triple="Aarhus_Airport | cityServed | Aarhus"), encoding="utf-8")
    entries = read_webnlg(f)
    assert [(e.file, e.line, e.eid) for e in entries] == [(str(f), 2, "Id1"), (str(f), 6, "Id2")]
    assert entries[1].where == f"{f}, line 6 (entry Id2)"


def test_read_webnlg_malformed_xml_raises_webnlg_error(tmp_path):
    f = tmp_path / "bad.xml"
    f.write_text("<benchmark><entries><entry>\n</benchmark>", encoding="utf-8")
    with pytest.raises(WebNLGError, match=r"bad\.xml: not a well-formed WebNLG XML file \(mismatched tag: line 2"):
        read_webnlg(f)


def test_generate_malformed_webnlg_xml_exits_2(ckpts, tmp_path):
    (tmp_path / "bad.xml").write_text("<benchmark><entries><entry>", encoding="utf-8")
    proc = cli("generate", "--checkpoint", ckpts / "webnlg-seg", "--input", tmp_path / "bad.xml", "--output", tmp_path / "o.txt")
    assert_clean_failure(proc, f"{tmp_path / 'bad.xml'}: not a well-formed WebNLG XML file")


def test_generate_csv_given_to_a_webnlg_checkpoint_exits_2(ckpts, tmp_path):
    (tmp_path / "in.csv").write_text(f'mr,ref\n"{MRS[1][0]}",x\n', encoding="utf-8")
    proc = cli("generate", "--checkpoint", ckpts / "webnlg-seg", "--input", tmp_path / "in.csv", "--output", tmp_path / "o.txt")
    assert_clean_failure(proc, "is a WebNLG model", "WebNLG XML")


def test_generate_xml_given_to_an_e2e_checkpoint_exits_2(ckpts, tmp_path):
    (tmp_path / "in.xml").write_text(WEBNLG_XML.format(triple="a | b | c"), encoding="utf-8")
    proc = cli("generate", "--checkpoint", ckpts / "e2e-seg", "--input", tmp_path / "in.xml", "--output", tmp_path / "o.tsv")
    assert_clean_failure(proc, "is an E2E model", "CSV with an 'mr' column")


def test_generate_folder_given_to_an_e2e_checkpoint_and_bad_numbers_exit_2(ckpts, tmp_path):
    proc = cli("generate", "--checkpoint", ckpts / "e2e-seg", "--input", tmp_path, "--output", tmp_path / "o.tsv")
    assert_clean_failure(proc, "is an E2E model and reads a CSV with an 'mr' column, not a folder")
    (tmp_path / "in.csv").write_text(f'mr\n"{MRS[4][0]}"\n', encoding="utf-8")
    proc = cli("generate", "--checkpoint", ckpts / "e2e-seg", "--input", tmp_path / "in.csv", "--output", tmp_path / "o.tsv",
               "--beam", 0)  # fmt: skip
    assert_clean_failure(proc, "--beam must be at least 1")


def test_generate_malformed_triple_names_file_line_and_entry(ckpts, tmp_path):
    f = tmp_path / "in.xml"
    f.write_text(WEBNLG_XML.format(triple="Aarhus_Airport | cityServed"), encoding="utf-8")
    proc = cli("generate", "--checkpoint", ckpts / "webnlg-seg", "--input", f, "--output", tmp_path / "o.txt")
    assert_clean_failure(proc, f"{f}, line 6 (entry Id2): triple must have 3 parts")


# ----- warnings and verdicts from generate ------------------------------------------------------


def test_generate_warns_once_per_input_with_a_count_and_checks(ckpts, tmp_path):
    long_value = "x" * 2000
    many = ", ".join(f"attr{i}[v{i}]" for i in range(21))
    rows = [MRS[4][0], f"name[Zizzi], wifi[yes], food[{long_value}]", MRS[4][0], many]
    (tmp_path / "in.csv").write_text("mr\n" + "".join(f'"{r}"\n' for r in rows), encoding="utf-8")
    proc = cli("generate", "--checkpoint", ckpts / "e2e-seg", "--input", tmp_path / "in.csv", "--output", tmp_path / "o.tsv",
               "--beam", 1, "--check")  # fmt: skip
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    warnings = [ln for ln in proc.stderr.splitlines() if ln.startswith("warning:")]
    assert len(warnings) == 2  # one line per input with warnings; MR 1 (twice in the file) has none
    assert warnings[0].startswith(f"warning: {tmp_path / 'in.csv'}:3: record 2: 'wifi' is not an E2E attribute")
    assert "record 3: the value has 2,000 characters; the models were trained on values of at most 200" in warnings[0]
    assert "Words the models have never seen" in warnings[0]
    assert warnings[1].startswith(f"warning: {tmp_path / 'in.csv'}:5: 21 records; the models were trained on at most 8")
    assert "2 of 3 inputs had warnings (see above)" in proc.stderr
    checks = [ln for ln in proc.stderr.splitlines() if ln.startswith("check:")]
    assert [c.split(": ")[1] for c in checks] == [f"{tmp_path / 'in.csv'}:{n}" for n in (2, 3, 5)]
    assert "inputs with warnings: 2; flagged by the checker:" in proc.stdout


# ----- evaluate ----------------------------------------------------------------------------------


def test_evaluate_binary_hyps_exits_2(tmp_path):
    (tmp_path / "refs.csv").write_text(f'mr,ref\n"{MRS[1][0]}",x\n', encoding="utf-8")
    (tmp_path / "h.tsv").write_bytes(bytes(range(256)) * 4)
    proc = cli("evaluate", "--dataset", "e2e", "--refs", tmp_path / "refs.csv", "--hyps", tmp_path / "h.tsv", "--no-meteor")
    assert_clean_failure(proc, f"{tmp_path / 'h.tsv'}: not a UTF-8 text file (invalid start byte at byte 128)")


def test_evaluate_counts_distinct_mrs_with_several_outputs(tmp_path):
    from segviz.evaluate import EvaluationError, evaluate_e2e

    mrs = [mr for mr, _ in MRS[:3]]
    (tmp_path / "refs.csv").write_text("mr,ref\n" + "".join(f'"{mr}",x\n' for mr in mrs), encoding="utf-8")
    lines = [f"{mrs[i % 3]}\tout {i}" for i in range(30)]  # 30 rows, 3 distinct MRs
    (tmp_path / "h.tsv").write_text("MR\toutput\n" + "\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(EvaluationError) as e:
        evaluate_e2e(tmp_path / "refs.csv", tmp_path / "h.tsv", meteor=False)
    assert str(e.value) == (f"3 MR(s) in {tmp_path / 'h.tsv'} have several outputs (30 output lines for 3 distinct MRs), "
                            "e.g. line 5 repeats the MR of line 2")  # fmt: skip


def test_evaluate_webnlg_malformed_refs_and_triples_exit_2(tmp_path):
    (tmp_path / "bad.xml").write_text("<benchmark><entries>", encoding="utf-8")
    (tmp_path / "h.txt").write_text("x\ny\n", encoding="utf-8")
    proc = cli("evaluate", "--dataset", "webnlg", "--refs", tmp_path / "bad.xml", "--hyps", tmp_path / "h.txt", "--no-meteor")
    assert_clean_failure(proc, f"{tmp_path / 'bad.xml'}: not a well-formed WebNLG XML file")
    (tmp_path / "t.xml").write_text(WEBNLG_XML.format(triple="a | b"), encoding="utf-8")
    proc = cli("evaluate", "--dataset", "webnlg", "--refs", tmp_path / "t.xml", "--hyps", tmp_path / "h.txt", "--no-meteor")
    assert_clean_failure(proc, f"{tmp_path / 't.xml'}, line 6 (entry Id2): triple must have 3 parts")


def test_load_webnlg_names_file_line_and_entry_of_a_bad_triple(tmp_path):
    from segviz.data import load_webnlg
    from segviz.records import RecordError

    f = tmp_path / "1triples.xml"
    f.write_text(WEBNLG_XML.format(triple="a | | c"), encoding="utf-8")
    with pytest.raises(RecordError, match=r"1triples\.xml, line 6 \(entry Id2\): empty predicate in triple"):
        load_webnlg(f)


def test_app_warns_about_a_value_longer_than_any_in_training():
    from segviz import service

    parsed = service.records_from_rows("e2e", [{"attribute": "name", "value": "x" * 2000}])
    assert parsed.warnings == ["row 1: the value has 2,000 characters; the models were trained on values of at most 200"]


def test_an_input_of_more_words_than_the_app_handles_is_refused():
    """Session 41: one value of 2,000 words made the Playground take all the machine's memory; an
    input of more than ``MAX_SOURCE_TOKENS`` words (attribute words and value words) is refused."""
    from segviz import service
    from segviz.records import RecordError

    row = lambda n: [{"attribute": "name", "value": " ".join(["w"] * n)}]  # noqa: E731  ("name" is one word more)
    assert len(service.records_from_rows("e2e", row(service.MAX_SOURCE_TOKENS - 1)).records) == 1
    with pytest.raises(RecordError, match=f"the records hold {service.MAX_SOURCE_TOKENS + 1} words; the app handles at most {service.MAX_SOURCE_TOKENS}"):
        service.records_from_rows("e2e", row(service.MAX_SOURCE_TOKENS))


def test_a_record_written_whole_in_one_cell_is_refused_with_where_its_parts_go():
    """A new user typed "s | p | o" into the subject cell, and an E2E meaning representation into a
    value cell, which had gone through as one value ("[" in the output). Each is refused, naming the
    cell and the columns; a plain value is not."""
    from segviz import service
    from segviz.records import RecordError

    with pytest.raises(RecordError, match=r"row 1: the subject cell holds records written as in the data .*"
                                          r"columns subject, predicate, object"):  # fmt: skip
        service.records_from_rows("webnlg", [{"subject": 'Alan_Shepard | status | "Deceased"', "predicate": "", "object": ""}])
    with pytest.raises(RecordError, match=r"row 2: the value cell holds records .*columns attribute, value"):
        service.records_from_rows("e2e", [{"attribute": "eatType", "value": "pub"},
                                          {"attribute": "name", "value": "name[Zorblat's], food[Thai]"}])  # fmt: skip
    parsed = service.records_from_rows("e2e", [{"attribute": "name", "value": "The Mill"}, {"attribute": "customer rating", "value": "5 out of 5"}])
    assert [r.label for r in parsed.records] == ["name[The Mill]", "customer rating[5 out of 5]"]


def test_blank_cells_are_named_with_the_right_verb_and_kept_as_empty_strings():
    """A row with two blank cells says "are blank"; ``plain_rows`` keeps an editor's rows as
    stripped strings (None, NaN and pandas' NA become ""), which compare with ``==``."""
    import pandas as pd

    from segviz import service
    from segviz.records import RecordError

    with pytest.raises(RecordError, match="row 1: predicate and object are blank"):
        service.records_from_rows("webnlg", [{"subject": "A", "predicate": "", "object": None}])
    with pytest.raises(RecordError, match="row 1: object is blank"):
        service.records_from_rows("webnlg", [{"subject": "A", "predicate": "p", "object": " "}])
    rows = pd.DataFrame([{"subject": " A ", "predicate": None, "object": "B"}], dtype="string").to_dict("records")
    assert service.plain_rows(rows) == [{"subject": "A", "predicate": "", "object": "B"}]


def test_a_cell_holding_a_sign_that_frames_a_records_parts_is_refused():
    """A WebNLG cell with "|" or an E2E cell with a bracket could not be written back as the data
    writes a record (the case export's labels, a pasted input): refused, naming the cell and sign."""
    from segviz import service
    from segviz.records import RecordError

    with pytest.raises(RecordError, match=r"row 1: the subject cell holds '\|', which cannot stand inside a cell: the WebNLG "
                                          r"data writes a record as subject \| predicate \| object; remove it"):
        service.records_from_rows("webnlg", [{"subject": "A | B", "predicate": "country", "object": "France"}])
    with pytest.raises(RecordError, match=r"row 2: the value cell holds '\]'"):
        service.records_from_rows("e2e", [{"attribute": "food", "value": "Thai"}, {"attribute": "name", "value": "The Mill]"}])


def test_pasted_records_are_read_as_the_data_writes_them_or_refused_by_line():
    from segviz import service
    from segviz.records import RecordError

    rows = service.rows_from_text("e2e", "name[The Mill], food[Thai],\n\n  near[Café Rouge]  ")  # wrapped after a comma
    assert rows == [{"attribute": "name", "value": "The Mill"}, {"attribute": "food", "value": "Thai"},
                    {"attribute": "near", "value": "Café Rouge"}]  # fmt: skip
    with pytest.raises(RecordError, match=r"line 2: cannot parse slot at 'near Café Rouge'"):
        service.rows_from_text("e2e", "name[The Mill]\nnear Café Rouge")
    with pytest.raises(RecordError, match=r"line 1: duplicate triple 'A \| b \| c'"):
        service.rows_from_text("webnlg", "A | b | c; A | b | c")
    with pytest.raises(RecordError, match=r"record 2: duplicate triple 'A \| b \| c' \(also in record 1\)"):
        service.rows_from_text("webnlg", "A | b | c\nA | b | c")
    with pytest.raises(RecordError, match=r"line 1: cannot parse slot at 'Ayam_penyet \| country \| Indone…' .*"
                                          r"\(it reads as WebNLG records: pick WebNLG in the sidebar\)"):
        service.rows_from_text("e2e", "Ayam_penyet | country | Indonesia")
    with pytest.raises(RecordError, match=r"got 1: .* \(it reads as E2E records: pick E2E in the sidebar\)"):
        service.rows_from_text("webnlg", "name[The Mill], food[Thai]")
    with pytest.raises(RecordError, match="nothing to read"):
        service.rows_from_text("webnlg", " \n ")
