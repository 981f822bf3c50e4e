"""evaluate CLI / library: file formats (BOM, CRLF, quotes), MR matching errors, WebNLG order."""

from __future__ import annotations

import json

import pytest

from segviz.data_webnlg import read_webnlg
from segviz.evaluate import (
    EvaluationError,
    evaluate_e2e,
    evaluate_outputs,
    evaluate_webnlg,
    main,
    read_e2e_hyps,
)
from segviz.records import parse_e2e_mr

MR1 = "name[The Eagle], eatType[pub], priceRange[cheap]"
MR2 = "name[Zizzi], food[Italian], area[riverside]"
REFS_CSV = (
    "\ufeffmr,ref\r\n"
    f'"{MR1}","The Eagle is a cheap pub."\r\n'
    f'"{MR1}","A cheap pub, The Eagle."\r\n'
    f'"{MR2}","Zizzi serves Italian food\r\nby the river."\r\n'
)


def write(path, text: str):
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.fixture
def refs(tmp_path):
    return write(tmp_path / "refs.csv", REFS_CSV)


def test_e2e_end_to_end_with_bom_crlf_quotes(tmp_path, refs):
    # BOM, CRLF, header, a quoted output field, MR with extra spaces; outputs equal to a reference.
    hyps = write(
        tmp_path / "hyps.tsv",
        "\ufeffMR\toutput\r\n"
        f"{MR2.replace(', ', ',  ')}\tZizzi serves Italian food by the river.\r\n"
        f'{MR1}\t"The Eagle is a cheap pub."\r\n',
    )
    s = evaluate_e2e(refs, hyps, meteor=False)
    assert s["n"] == 2
    assert s["bleu"] == pytest.approx(1.0)
    assert s["rouge_l"] == pytest.approx(1.0)
    assert s["meteor"] is None
    assert (s["wrong"], s["repeated"], s["missing"], s["hallucinated"], s["total_records"]) == (0, 0, 0, 0, 6)
    assert s["slot_error_rate"] == 0.0
    assert list(s) == [
        "bleu", "rouge_l", "meteor", "cider", "dist1", "dist3", "n",
        "wrong", "repeated", "missing", "hallucinated", "total_records", "slot_error_rate",
    ]  # fmt: skip


def test_hyps_without_header(tmp_path):
    hyps = write(tmp_path / "h.tsv", f"{MR1}\tThe Eagle is a pub.\n{MR2}\tZizzi.\n")
    assert [h[1] for h in read_e2e_hyps(hyps)] == ["The Eagle is a pub.", "Zizzi."]


def test_faithfulness_totals_in_scores(tmp_path, refs):
    hyps = write(
        tmp_path / "h.tsv",
        f"mr\tref\n{MR1}\tThe Eagle is an expensive pub.\n{MR2}\tZizzi is family friendly.\n",
    )
    s = evaluate_e2e(refs, hyps, meteor=False)
    # MR1: priceRange wrong; MR2: food and area missing, familyFriendly hallucinated
    assert (s["wrong"], s["missing"], s["hallucinated"], s["total_records"]) == (1, 2, 1, 6)
    assert s["slot_error_rate"] == pytest.approx(4 / 6)


def test_missing_and_unknown_mr_errors(tmp_path, refs):
    only_one = write(tmp_path / "h1.tsv", f"{MR1}\tThe Eagle is a pub.\n")
    with pytest.raises(EvaluationError, match=r"1 MR\(s\) of the references have no output.*Zizzi"):
        evaluate_e2e(refs, only_one, meteor=False)
    unknown = write(tmp_path / "h2.tsv", f"{MR1}\ta\n{MR2}\tb\nname[Nowhere]\tc\n")
    with pytest.raises(EvaluationError, match=r"not in the references.*Nowhere"):
        evaluate_e2e(refs, unknown, meteor=False)
    bad = write(tmp_path / "h3.tsv", f"{MR1} no tab here\n")
    with pytest.raises(EvaluationError, match="tab-separated"):
        evaluate_e2e(refs, bad, meteor=False)


def test_cli_writes_json_and_reports_errors(tmp_path, refs, capsys):
    hyps = write(
        tmp_path / "h.tsv",
        f"{MR1}\tThe Eagle is a cheap pub.\n{MR2}\tZizzi serves Italian food by the river.\n",
    )
    out = tmp_path / "scores.json"
    assert (
        main(
            ["--dataset", "e2e", "--refs", str(refs), "--hyps", str(hyps), "--json", str(out), "--no-meteor"]
        )
        == 0
    )
    d = json.loads(out.read_text())
    assert d["bleu"] == pytest.approx(1.0) and d["meteor"] is None and d["n"] == 2
    assert "slot_error_rate" in capsys.readouterr().out
    missing = write(tmp_path / "m.tsv", f"{MR1}\tx\n")
    assert main(["--dataset", "e2e", "--refs", str(refs), "--hyps", str(missing), "--no-meteor"]) == 2
    assert "no output" in capsys.readouterr().err


def test_evaluate_outputs_length_mismatch():
    with pytest.raises(EvaluationError):
        evaluate_outputs("e2e", [parse_e2e_mr(MR1)], [["a"], ["b"]], ["a"])


def _entry(eid: str, size: int, triples: list[str], lexs: list[str]) -> str:
    t = "".join(f"<mtriple>{x}</mtriple>" for x in triples)
    lx = "".join(f'<lex comment="good" lid="Id{i}">{x}</lex>' for i, x in enumerate(lexs, 1))
    return (
        f'<entry category="Airport" eid="{eid}" size="{size}"><originaltripleset><otriple>ignored | p | o</otriple>'
        f"</originaltripleset><modifiedtripleset>{t}</modifiedtripleset>{lx}</entry>"
    )


@pytest.fixture
def webnlg_dir(tmp_path):
    d = tmp_path / "dev"
    (d / "2triples").mkdir(parents=True)
    (d / "1triples").mkdir(parents=True)
    two = _entry("Id1", 2, ["Aarhus_Airport | cityServed | Aarhus", "Aarhus | leaderName | Jacob_Bundsgaard"],
                 ["Aarhus Airport serves Aarhus, led by Jacob Bundsgaard."])  # fmt: skip
    write(
        d / "2triples" / "2triples_Airport_dev_challenge.xml",
        f"<benchmark><entries>{two}</entries></benchmark>",
    )
    ones = _entry(
        "Id1",
        1,
        ["Aarhus_Airport | runwayLength | 2702.0"],
        ["The runway is 2702.0 long.", "Its runway: 2702."],
    )
    ones += _entry("Id2", 1, ["Alan_Bean | status | &quot;Retired&quot;"], ["Alan Bean is retired."])
    write(
        d / "1triples" / "1triple_allSolutions_Airport_dev_challenge.xml",
        f"<benchmark><entries>{ones}</entries></benchmark>",
    )
    return d


def test_read_webnlg_document_order(webnlg_dir):
    entries = read_webnlg(webnlg_dir)
    assert [(e.size, e.eid) for e in entries] == [(1, "Id1"), (1, "Id2"), (2, "Id1")]
    assert entries[0].lexs == ["The runway is 2702.0 long.", "Its runway: 2702."]
    assert entries[1].triples == ['Alan_Bean | status | "Retired"']


def test_evaluate_webnlg(tmp_path, webnlg_dir):
    hyps = write(
        tmp_path / "h.txt",
        "The runway is 2702.0 long.\r\nAlan Bean is retired.\r\nAarhus Airport serves Aarhus.\r\n",
    )
    s = evaluate_webnlg(webnlg_dir, hyps, meteor=False)
    assert s["n"] == 3 and s["total_records"] == 4
    assert (s["missing"], s["wrong"], s["hallucinated"]) == (1, 0, 0)  # Jacob_Bundsgaard
    assert s["rouge_l"] < 1.0 and s["bleu"] > 0.5
    short = write(tmp_path / "s.txt", "one line\n")
    with pytest.raises(EvaluationError, match="1 lines but .* 3 entries"):
        evaluate_webnlg(webnlg_dir, short, meteor=False)
