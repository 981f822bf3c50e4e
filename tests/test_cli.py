"""Generation, alignment and benchmark commands on tiny checkpoints."""

from __future__ import annotations

import csv
import json

import pytest
from conftest import DATA_DIR, MRS, ROOT, data_available, make_model

from segviz import bench
from segviz import checkpoint as ckpt
from segviz.align import main as align_main
from segviz.decode import force_align, generate_pg, generate_seg
from segviz.generate import main as generate_main
from segviz.generate import read_inputs
from segviz.records import parse_e2e_mr, tokenize


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory, vocab):
    root = tmp_path_factory.mktemp("ck")
    for kind in ("seg", "pg"):
        ckpt.save(root / f"e2e-{kind}", make_model(kind, vocab), vocab, "e2e")
    ckpt.save(root / "webnlg-seg", make_model("seg", vocab), vocab, "webnlg")
    return root


def _csv(path, rows):
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mr", "ref"])
        w.writerows(rows)


def _decoded(path, records, constraints="rm", beam=2) -> str:
    """What the library decodes for ``records`` with the checkpoint at ``path`` (its default value rules)."""
    c = ckpt.load(path)
    if c.model_config.kind == "seg":
        return generate_seg(c.model, c.vocab, records, constraints, beam, rules=c.rules()).text
    return generate_pg(c.model, c.vocab, records, beam, rules=c.rules()).text


def test_generate_e2e_one_row_per_distinct_mr(tmp_path, ckpts, capsys):
    rows = [(MRS[1][0], "a"), (MRS[3][0], "b"), (MRS[1][0], "c")]
    _csv(tmp_path / "in.csv", rows)
    for kind in ("seg", "pg"):
        out = tmp_path / f"{kind}.tsv"
        rc = generate_main(["--checkpoint", str(ckpts / f"e2e-{kind}"), "--input", str(tmp_path / "in.csv"),
                            "--constraints", "rm", "--beam", "2", "--output", str(out)])
        assert rc == 0
        got = list(csv.reader(out.open(encoding="utf-8"), delimiter="\t"))
        assert got[0] == ["MR", "output"]
        # one row per distinct MR, in file order, each holding exactly what the decoder says
        want = [[mr, _decoded(ckpts / f"e2e-{kind}", parse_e2e_mr(mr))] for mr in (MRS[1][0], MRS[3][0])]
        assert got[1:] == want and all(text for _, text in want)
    assert "examples/s" in capsys.readouterr().out


def test_generate_reports_bad_input(tmp_path, ckpts, capsys):
    (tmp_path / "bad.csv").write_text("meaning,ref\nx,y\n", encoding="utf-8")
    rc = generate_main(["--checkpoint", str(ckpts / "e2e-seg"), "--input", str(tmp_path / "bad.csv"), "--output", str(tmp_path / "o.tsv")])
    assert rc == 2 and "no 'mr' or 'MR' column" in capsys.readouterr().err
    _csv(tmp_path / "bad2.csv", [("name[Zizzi", "x")])
    rc = generate_main(["--checkpoint", str(ckpts / "e2e-seg"), "--input", str(tmp_path / "bad2.csv"), "--output", str(tmp_path / "o.tsv")])
    assert rc == 2 and "unbalanced" in capsys.readouterr().err
    rc = generate_main(["--checkpoint", str(ckpts / "e2e-seg"), "--input", str(tmp_path / "none.csv"), "--output", str(tmp_path / "o.tsv")])
    assert rc == 2 and capsys.readouterr().err.strip().endswith("none.csv: no such file")  # not "cannot read as a UTF-8 CSV ([Errno 2] …"


def test_generate_webnlg_one_line_per_entry(tmp_path, ckpts):
    xml = """<benchmark><entries>
    <entry category="Airport" eid="Id1" size="1"><modifiedtripleset><mtriple>Aarhus | leader | Jacob_Bundsgaard</mtriple></modifiedtripleset><lex lid="Id1">x</lex></entry>
    <entry category="Airport" eid="Id2" size="1"><modifiedtripleset><mtriple>Aarhus_Airport | cityServed | "Aarhus, Denmark"</mtriple></modifiedtripleset><lex lid="Id1">y</lex></entry>
    </entries></benchmark>"""
    (tmp_path / "1triples").mkdir()
    (tmp_path / "1triples" / "a_dev_challenge.xml").write_text(xml, encoding="utf-8")
    out = tmp_path / "w.txt"
    rc = generate_main(["--checkpoint", str(ckpts / "webnlg-seg"), "--input", str(tmp_path), "--beam", "2", "--output", str(out)])
    assert rc == 0
    entries = [records for _, records in read_inputs("webnlg", tmp_path)]
    assert [[r.label for r in e] for e in entries] == [["Aarhus | leader | Jacob_Bundsgaard"],
                                                        ['Aarhus_Airport | cityServed | "Aarhus, Denmark"']]
    want = [_decoded(ckpts / "webnlg-seg", e, beam=2) for e in entries]  # --constraints defaults to rm
    assert out.read_text(encoding="utf-8").splitlines() == want


def test_align_writes_segments_that_cover_the_text(tmp_path, ckpts, capsys):
    with open(tmp_path / "o.tsv", "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, delimiter="\t")
        w.writerow(["MR", "output"])
        for mr, ref in MRS[:3]:
            w.writerow([mr, ref])
    rc = align_main(["--checkpoint", str(ckpts / "e2e-seg"), "--input", str(tmp_path / "o.tsv"),
                     "--output", str(tmp_path / "a.jsonl"), "--report"])
    assert rc == 0
    lines = [json.loads(x) for x in (tmp_path / "a.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 3
    c = ckpt.load(ckpts / "e2e-seg")
    for (mr, ref), a in zip(MRS, lines, strict=False):
        assert a["tokens"] == tokenize(ref)
        assert [w for s in a["segments"] for w in s["words"]] == a["tokens"]
        # the segments are the Viterbi alignment of the library, record by record
        want = force_align(c.model, c.vocab, parse_e2e_mr(mr), tokenize(ref))
        assert [(s["start"], s["end"], s["record"]) for s in a["segments"]] == [tuple(x) for x in want]
    assert "value words aligned to their own record" in capsys.readouterr().err
    assert align_main(["--checkpoint", str(ckpts / "e2e-pg"), "--input", str(tmp_path / "o.tsv")]) == 2


def test_align_warns_like_generate(tmp_path, ckpts, capsys):
    (tmp_path / "o.tsv").write_text("MR\toutput\nname[The Eagle], colour[blue]\tThe Eagle is blue.\n"
                                    f"{MRS[4][0]}\t{MRS[4][1]}\n", encoding="utf-8")
    rc = align_main(["--checkpoint", str(ckpts / "e2e-seg"), "--input", str(tmp_path / "o.tsv"),
                     "--output", str(tmp_path / "a.jsonl")])
    err = capsys.readouterr().err
    assert rc == 0 and "Traceback" not in err
    warned = [ln for ln in err.splitlines() if ln.startswith("warning:")]
    assert len(warned) == 1 and "row 1" in warned[0] and "colour" in warned[0]
    assert "1 of 2 inputs had warnings" in err


@pytest.mark.skipif(not data_available(), reason="needs the E2E dev set")
def test_bench_decoding_times_the_searches_with_and_without_value_rules():
    """Session 27: the rows without rules are the paper's search; ``beam5_rules`` decodes as the
    app does (e2e-seg's own rules, or ``--value-rules``), so a rule's cost is a benchmark figure."""
    res = bench.bench_decoding(2, 1, DATA_DIR, rules="auto+fillers")
    assert res["inputs"] == 2 and res["rules"] == "auto+fillers"
    assert {"greedy", "beam5", "beam5_rules"} <= set(res)
    assert all(v > 0 for k in ("greedy", "beam5", "beam5_rules") for v in res[k].values())
    own = bench.bench_decoding(1, 1, DATA_DIR)
    assert own["rules"] == ckpt.load(ROOT / "checkpoints" / "e2e-seg").default_rules
    report = bench.format_report({"threads": 1, "reps": 1, "hidden": 1, "emb_dim": 1, "scaling": {"decoding": [], "training": []}, "decoding": res})
    r = res["beam5_rules"]
    assert f"beam5_rules {r['seg_none']:8.1f} {r['seg_r']:6.1f} {r['seg_rm']:7.1f} {r['pg']:6.1f}" in report
    assert "e2e-seg decodes with auto+fillers" in report


def test_bench_small_configuration_runs():
    res = bench.run(small=True, threads=1, reps=1)
    rows = res["scaling"]["decoding"]
    assert [(r["batch"], r["K"], r["N"]) for r in rows] == [(1, 4, 2), (1, 8, 2), (4, 4, 2), (4, 8, 2)]
    assert all(r["seg_us_per_token"] > 0 and r["pg_us_per_token"] > 0 and r["ratio"] > 0 for r in rows)
    assert all(r["seg_attention_us"] > 0 and r["pg_attention_us"] > 0 and r["record_choice_us"] > 0 for r in rows)
    assert [r["K"] for r in res["scaling"]["training"]] == [4, 8]
    report = bench.format_report(res)
    assert "Scaling (synthetic; 1 input decoded" in report and "4 inputs decoded together" in report
    for r in rows:  # the report prints the numbers it was given
        assert f"{r['seg_us_per_token']:6.1f} {r['pg_us_per_token']:6.1f} {r['ratio']:6.2f}" in report
