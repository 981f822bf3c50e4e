"""Stress suites (segviz.stress) on the tiny checkpoints: values they compute, not that they ran."""

from __future__ import annotations

import os
import re

import pytest
from conftest import DATA_DIR, data_available

from segviz import checkpoint, faithfulness, invented, stress, stress_tables
from segviz.examples import EXAMPLES, REFERENCES
from segviz.metrics import bleu, bleu_gap_interval, bleu_stats
from segviz.records import parse_e2e_mr
from segviz.stress import DevItem


def _items(dataset: str) -> list[stress.DevItem]:
    return [stress.DevItem(name, recs, [REFERENCES[name]]) for name, recs in EXAMPLES[dataset].items()]


@pytest.fixture(scope="module")
def e2e_run(tiny):
    systems = stress.Systems(checkpoint.load(tiny / "e2e-seg"), checkpoint.load(tiny / "e2e-pg"), beam=2)
    items = _items("e2e")
    return systems, items, stress.run(systems, items, list(stress.SUITES), seed=0)


def test_halves_are_a_stable_order_free_hash():
    recs = parse_e2e_mr("name[The Eagle], eatType[pub], near[Café Brazil]")
    assert stress.half_of(recs) == stress.half_of(list(reversed(recs)))
    # fixed by sha1 of the sorted labels: must not change between runs or Python versions
    assert [stress.half_of(parse_e2e_mr(f"name[Venue {i}]")) for i in range(8)] == [
        "report", "report", "report", "tune", "report", "report", "report", "report"
    ]  # fmt: skip


def test_plans_are_seeded_permutations_and_the_reversed_order():
    recs = EXAMPLES["e2e"]["The Copper Kettle (8 slots)"]
    plans = stress.plans_for(recs, seed=0)
    assert [k for k, _ in plans] == ["random"] * 3 + ["reversed"]
    assert all(sorted(p) == list(range(1, 9)) for _, p in plans)
    assert plans[-1][1] == [8, 7, 6, 5, 4, 3, 2, 1]
    assert plans == stress.plans_for(recs, seed=0) and plans != stress.plans_for(recs, seed=1)
    assert len({tuple(p) for _, p in plans[:3]}) == 3


def test_forced_plan_outputs_follow_their_plans(e2e_run):
    systems, items, results = e2e_run
    big = [i for i, it in enumerate(items) if len(it.records) >= stress.FORCED_MIN_K]
    assert sorted({r["item"] for r in results["forced"]}) == big
    assert len(results["forced"]) == 4 * len(big)
    for row in results["forced"]:
        out = systems.decode(items[row["item"]].records, row["system"], row["plan"])
        assert out.text == row["text"]
        order = [k for _, _, k in out.segments if k is not None]
        assert list(dict.fromkeys(order)) == row["plan"]  # the records come in the forced order


def test_counts_are_the_checkers(e2e_run):
    systems, items, results = e2e_run
    rows = results["long"]
    assert {r["system"] for r in rows} == {"none", "r", "rm", "pg"} and len(rows) == 4 * len(items)
    agg = stress.aggregate([r for r in rows if r["system"] == "rm"], items)
    reports = [
        faithfulness.check("e2e", items[r["item"]].records, r["text"]) for r in rows if r["system"] == "rm"
    ]
    expect = faithfulness.totals(reports)
    assert agg["ser"] == pytest.approx(expect["slot_error_rate"])
    assert (agg["missing"], agg["wrong"], agg["total_records"]) == (expect["missing"], expect["wrong"], 21)
    assert 0.0 <= agg["bleu"] <= 1.0 and 0.0 <= agg["faithful_share"] <= 1.0


def test_unseen_values_are_invented_and_checked_verbatim(e2e_run):
    _, items, results = e2e_run
    for row in results["unseen"]:
        orig = items[row["item"]].records
        names = [v for k, v, _ in row["verbatim"] if k == "name"]
        assert len(names) == 1 and names[0] in invented.NAMES and names[0] != orig[0].value
        for _, value, ok in row["verbatim"]:
            assert ok == invented.states_verbatim(value, row["text"])


def test_closed_sets_get_values_no_e2e_input_holds_and_are_checked_verbatim(e2e_run):
    """``--suites closed`` (session 24): food, area and eatType take values outside their closed
    sets, the same for every system of an input, and each is checked verbatim."""
    systems, items, results = e2e_run
    rows = results["closed"]
    held = [i for i, it in enumerate(items) if {"food", "area", "eatType"} & {r.attribute for r in it.records}]
    assert sorted({r["item"] for r in rows}) == held and len(rows) == 4 * len(held)
    for row in rows:
        orig = {r.attribute: r.value for r in items[row["item"]].records}
        for kind, value, ok in row["verbatim"]:
            assert value in invented.OPEN_VALUES[kind] and value != orig[kind]
            assert ok == invented.states_verbatim(value, row["text"])
        assert {k for k, _, _ in row["verbatim"]} == {"food", "area", "eatType"} & set(orig)
    first = {r["item"]: r["records"] for r in rows if r["system"] == "none"}
    assert all(r["records"] == first[r["item"]] for r in rows)
    summary = stress.summarise(results, items, systems.names)["closed"]
    text = stress.render({"closed": summary})
    assert "**Values outside the closed sets," in text and "food verbatim" in text and "stutters" in text
    # the dataset's known values: no E2E input holds an invented one
    from segviz.faithfulness.e2e_rules import E2E_VALUES

    assert all(v.lower() not in E2E_VALUES[a] for a, vs in invented.OPEN_VALUES.items() for v in vs)
    recs = items[held[0]].records
    assert invented.substitute_closed_e2e(recs, 0) == invented.substitute_closed_e2e(list(recs), 0)
    assert len({tuple(invented.substitute_closed_e2e(recs, seed)) for seed in range(6)}) > 1


def test_aggregate_on_hand_made_rows():
    seg = {"record_segments": 4, "faithful": 3, "null_segments": 1}
    rows = [
        {"item": 0, "system": "rm", "text": "a", "fallback": False, "seg": seg,
         "faith": {"wrong": 1, "repeated": 0, "missing": 1, "hallucinated": 1, "total_records": 6},
         "verbatim": [["name", "X", True], ["near", "Y", False]]},
        {"item": 1, "system": "rm", "text": "b", "fallback": True, "seg": {**seg, "faithful": 1},
         "faith": {"wrong": 0, "repeated": 1, "missing": 0, "hallucinated": 0, "total_records": 4},
         "verbatim": [["name", "Z", True]]},
    ]  # fmt: skip
    a = stress.aggregate(rows)
    assert a["ser"] == pytest.approx(4 / 10) and a["faithful_share"] == pytest.approx(4 / 8)
    assert (a["verbatim_name"], a["verbatim_near"], a["verbatim_all"], a["fallbacks"]) == (1.0, 0.0, 0.5, 1)
    assert a["unheld"] is None  # rows of a run before session 42 say nothing of invented numbers
    a = stress.aggregate([{**rows[0], "unheld": 2}, {**rows[1], "unheld": 0}])
    assert a["unheld"] == pytest.approx(0.5)  # the share of outputs with a number the input does not hold


def test_score_counts_the_numbers_the_input_does_not_hold():
    from segviz.records import Record
    from segviz.result import GenerationResult

    recs = [Record("elevationAboveTheSeaLevel_(in_metres)", "213.0", "Fenwick_Regional_Airport")]
    text = "Fenwick Regional Airport is 213 metres above sea level. It is located 911 metres above the sea level."
    res = lambda t: GenerationResult("pg", [], t.lower().split(), t, [], [], [], [])  # noqa: E731
    assert stress.score("webnlg", recs, res(text), "pg")["unheld"] == 1
    row = stress.score("webnlg", recs, res(text[:55]), "pg")
    assert row["unheld"] == 0 and "invented numbers" in stress.forced_table({"pg": stress.aggregate([row])})


def test_score_counts_the_names_the_input_does_not_hold():
    """WebNLG rows count the entity words a text says that its input does not hold (session 44),
    and the forced and unseen tables show them; E2E rows have no such count and no such column."""
    from segviz.records import Record
    from segviz.result import GenerationResult

    recs = [Record("region", "Malaysia", "Ayam_penyet")]
    res = lambda t: GenerationResult("pg", [], t.lower().split(), t, [], [], [], [])  # noqa: E731
    row = stress.score("webnlg", recs, res("Ayam penyet is a Malaysian dish from Malaysia and Java."), "pg")
    assert row["invented"] == 1  # "java"; "malaysian" is Malaysia as the checker reads it
    assert stress.score("webnlg", recs, res("Ayam penyet is from Malaysia."), "pg")["invented"] == 0
    a = stress.aggregate([row, {**row, "invented": 0}])
    assert a["invented"] == pytest.approx(0.5)
    assert "invented names" in stress.forced_table({"pg": a}) and "invented names" in stress.unseen_table({"pg": {**a, "ser_real": 0.0}})
    e2e = stress.score("e2e", [Record("name", "Blue Café")], res("Blue Café is in Java."), "pg")
    assert "invented" not in e2e and stress.aggregate([e2e])["invented"] is None
    assert "invented names" not in stress.forced_table({"pg": stress.aggregate([e2e])})


def test_summary_and_tables(e2e_run):
    systems, items, results = e2e_run
    summary = stress.summarise(results, items, systems.names)
    assert set(summary) == {"forced", "unseen", "long", "closed"}
    halves = {it.half for it in items}
    assert set(summary["long"]) == halves
    text = stress.render(summary)
    assert text.count("**Forced plans,") == len(halves) and "ours, forced reversed plan" in text
    assert "name verbatim" in text and "+RM cost (BLEU)" in text
    assert "references leaving a record out" not in text  # without the dataset: no reference columns
    with_refs = stress.summarise(results, items, systems.names, "e2e")
    for half, by_k in with_refs["references"].items():
        for K, ref in by_k.items():
            rows = [r for r in results["long"] if items[r["item"]].half == half and len(items[r["item"]].records) == int(K)]
            refs = [(items[i].records, x) for i in {r["item"] for r in rows} for x in items[i].refs]
            gaps = sum(faithfulness.check("e2e", recs, x).missing > 0 for recs, x in refs) / len(refs)
            exact = {r["item"] for r in rows if r["system"] == "none" and not any(r["faith"][k] for k in ("wrong", "repeated", "missing", "hallucinated"))}
            assert ref["refs_leaving_out"] == pytest.approx(gaps) and ref["complete"] == len(exact)
            # +RM's cost against the references the checker finds exact (all where none is)
            ids = sorted({r["item"] for r in rows})
            good = {i: [x for x in items[i].refs if faithfulness.check("e2e", items[i].records, x).errors == 0] or items[i].refs for i in ids}
            said = {(r["item"], r["system"]): r["text"] for r in rows}
            b = {s: bleu([said[i, s] for i in ids], [good[i] for i in ids]) for s in ("none", "rm")}
            assert ref["cost_exact_refs"] == pytest.approx((b["none"] - b["rm"]) * 100)
            # the paired bootstrap over the bucket's inputs, against all their references
            st = {s: bleu_stats([said[i, s] for i in ids], [items[i].refs for i in ids]) for s in ("none", "rm")}
            assert ref["cost_interval"] == bleu_gap_interval(st["none"], st["rm"])
            assert ref["cost_interval"][0] <= ref["cost_interval"][1]
    assert "references leaving a record out" in stress.render(with_refs)
    assert "+RM cost against exact references" in stress.render(with_refs)
    assert "+RM cost, 95% interval" in stress.render(with_refs)


def test_webnlg_substitution_keeps_entities_consistent():
    recs = EXAMPLES["webnlg"]["Ajoblanco (4 triples)"]
    sub = invented.substitute_webnlg(recs, seed=0)
    assert sub[0].subject == sub[1].subject == sub[3].subject  # Ajoblanco, three times
    assert sub[2].subject == sub[0].value  # Spain: object of one triple, subject of another
    assert all(r.attribute == s.attribute for r, s in zip(recs, sub, strict=True))
    aarhus = invented.substitute_webnlg(EXAMPLES["webnlg"]["Aarhus Airport (2 triples)"], seed=0)
    assert aarhus[1].value == "2776.0"  # numbers are kept
    kinds = invented.invented_values(recs, sub)
    assert {k for k, _ in kinds} == {"entity"} and all("_" not in v for _, v in kinds)


def test_verbatim_match():
    assert invented.states_verbatim("O'Malley's Tavern", "We like o'malley's  tavern.")
    assert not invented.states_verbatim("O'Malley's Tavern", "We like O'Malley ' s Tavern.")
    assert not invented.states_verbatim("Café Ørsted", "Cafe Orsted is here")
    assert not invented.states_verbatim("Wrenfield", "Wrenfields")


def test_invented_lists():
    assert len(set(invented.NAMES)) >= 60 and len(set(invented.PLACES)) >= 30
    values = invented.NAMES + invented.PLACES
    assert any("'" in v for v in values) and any(re.search(r"\d", v) for v in values)
    assert any(re.search(r"[éèôçØ]", v) for v in values) and sum(" " in v for v in values) >= 60


@pytest.mark.skipif(not data_available(), reason="needs ../shared/data")
def test_invented_values_never_occur_in_training_data():
    text = (DATA_DIR / "e2e" / "train.csv").read_text(encoding="utf-8").lower()
    text += "".join(
        p.read_text(encoding="utf-8").lower().replace("_", " ")
        for p in (DATA_DIR / "webnlg" / "train").rglob("*.xml")
    )
    candidates = [
        v for v in invented.NAMES + invented.PLACES if v.lower() in text
    ]  # fast substring pre-filter
    found = [v for v in candidates if re.search(rf"(?<!\w){re.escape(v.lower())}(?!\w)", text)]
    assert found == []


@pytest.mark.skipif(not data_available(), reason="needs ../shared/data")
def test_cli_on_dev(tiny, tmp_path, capsys):
    out = tmp_path / "s.json"
    rc = stress.main(
        [
            "--checkpoint",
            str(tiny / "e2e-seg"),
            "--pg",
            str(tiny / "e2e-pg"),
            "--limit",
            "4",
            "--beam",
            "1",
            "--data-dir",
            str(DATA_DIR),
            "--json",
            str(out),
        ]
    )
    assert rc == 0
    import json

    d = json.loads(out.read_text(encoding="utf-8"))
    assert d["inputs"] == 4 and len(d["rows"]["long"]) == 16
    assert "Unseen values" in capsys.readouterr().out


@pytest.mark.skipif(not data_available(), reason="needs ../shared/data")
def test_shards_merged_give_the_summary_of_one_run(tiny, tmp_path, capsys):
    """``--shard 0/2`` and ``1/2`` split the inputs; ``--merge`` of the two files gives the very
    summary of the run over all of them, and refuses files of another run or an input twice."""
    common = ["--checkpoint", str(tiny / "e2e-seg"), "--limit", "5", "--beam", "1", "--data-dir", str(DATA_DIR)]
    for name, extra in [("all", []), ("s0", ["--shard", "0/2"]), ("s1", ["--shard", "1/2"])]:
        assert stress.main([*common, *extra, "--json", str(tmp_path / f"{name}.json")]) == 0
    import json

    load = lambda name: json.loads((tmp_path / f"{name}.json").read_text(encoding="utf-8"))  # noqa: E731
    assert [d["inputs"] for d in (load("s0"), load("s1"))] == [3, 2]
    merged = ["--merge", str(tmp_path / "s0.json"), str(tmp_path / "s1.json"), "--data-dir", str(DATA_DIR)]
    assert stress.main([*merged, "--json", str(tmp_path / "m.json"), "--outputs", str(tmp_path / "out")]) == 0
    assert load("m")["summary"] == load("all")["summary"] and load("m")["inputs"] == 5
    import csv

    with open(tmp_path / "out" / "rm.tsv", encoding="utf-8") as f:  # as segviz.generate writes: dev order
        rows = list(csv.reader(f, delimiter="\t"))
    full = load("all")
    rm = {full["items"][r["item"]]["key"]: r["text"] for r in full["rows"]["long"] if r["system"] == "rm"}
    assert rows[0] == ["MR", "output"] and rows[1:] == [[it["key"], rm[it["key"]]] for it in full["items"]]
    assert sorted(q.name for q in (tmp_path / "out").iterdir()) == ["none.tsv", "r.tsv", "rm.tsv"]
    assert sorted(it["key"] for it in load("m")["items"]) == sorted(it["key"] for it in load("all")["items"])
    capsys.readouterr()
    assert stress.main(["--merge", str(tmp_path / "all.json"), str(tmp_path / "all.json")]) == 2
    assert "is in an earlier file too" in capsys.readouterr().err
    assert stress.main(["--merge", str(tmp_path / "s0.json"), str(tmp_path / "s0.json")]) == 2
    assert "shards that overlap" in capsys.readouterr().err
    assert stress.main(["--merge", str(tmp_path / "s0.json"), str(tmp_path / "all.json")]) == 2
    assert "shards of --shard I/N runs only" in capsys.readouterr().err
    assert stress.main(["--merge", str(tmp_path / "s0.json"), "--json", str(tmp_path / "half.json")]) == 0
    assert load("half")["shards_missing"] == ["1/2"] and load("half")["inputs"] == 3
    for i in (1, 3):  # 1/2 run again as 1/4 and 3/4: with 0/2 they are all the inputs
        assert stress.main([*common, "--shard", f"{i}/4", "--json", str(tmp_path / f"q{i}.json")]) == 0
    quarters = [str(tmp_path / name) for name in ("s0.json", "q1.json", "q3.json")]
    assert stress.main(["--merge", *quarters, "--data-dir", str(DATA_DIR), "--json", str(tmp_path / "mq.json")]) == 0
    assert load("mq")["summary"] == load("all")["summary"] and "shards_missing" not in load("mq")
    assert stress.main(["--merge", *quarters[:2], "--json", str(tmp_path / "q.json")]) == 0
    assert load("q")["shards_missing"] == ["3/4"]
    capsys.readouterr()
    assert stress.main(["--merge", str(tmp_path / "s1.json"), str(tmp_path / "q1.json")]) == 2
    assert "shards that overlap" in capsys.readouterr().err
    other = load("s1") | {"beam": 2}
    (tmp_path / "other.json").write_text(json.dumps(other), encoding="utf-8")
    assert stress.main(["--merge", str(tmp_path / "s0.json"), str(tmp_path / "other.json")]) == 2
    assert "differ from" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        stress.main([*common, "--shard", "2/2"])
    with pytest.raises(SystemExit):  # --merge decodes nothing
        stress.main([*merged, "--checkpoint", str(tiny / "e2e-seg")])


def test_cli_rejects_a_pg_checkpoint_as_the_segment_model(tiny, capsys):
    assert stress.main(["--checkpoint", str(tiny / "e2e-pg")]) == 2
    assert "must be a segment model" in capsys.readouterr().err


def test_exact_references_turn_the_cost_of_saying_everything_around():
    """A reference that leaves a record out is what the free text matched: against it +RM's
    complete text costs BLEU; against the references that say every record it gains."""
    recs = parse_e2e_mr("name[Aromi], eatType[coffee shop], familyFriendly[yes]")
    short = "Aromi is a coffee shop ."  # leaves familyFriendly out
    full = "Aromi is a family friendly coffee shop ."
    items = [DevItem("a", recs, [short, full])]
    rows = [
        {"item": 0, "system": "none", "text": short},
        {"item": 0, "system": "rm", "text": full},
    ]
    for r in rows:
        r["faith"] = {k: v for k, v in faithfulness.totals([faithfulness.check("e2e", recs, r["text"])]).items() if k in stress_tables._FAITH_KEYS}
    ref = stress_tables.references(rows, items, "e2e")
    assert ref["refs_leaving_out"] == pytest.approx(0.5)
    assert stress_tables._cost_against(rows, {0: items[0].refs}) == pytest.approx(0.0)  # each matches one
    # against `full` alone: the free text loses what it does not share with it, +RM scores 1.0
    assert ref["cost_exact_refs"] == pytest.approx((bleu([short], [[full]]) - 1.0) * 100)
    assert ref["cost_exact_refs"] < -50
    assert ref["cost_interval"] == (0.0, 0.0)  # one input: every draw is it, and each text matches one reference


@pytest.mark.skipif(not data_available(), reason="needs ../shared/data")
def test_stress_shards_script_runs_a_list_and_goes_on_where_it_stopped(tiny, tmp_path):
    """``scripts/stress_shards.sh``: every line of the list is one shard run, a line with a
    trailing blank is still one run, a finished shard is not run again, and the status says
    whether every shard is done."""
    import subprocess
    from pathlib import Path as P

    root = P(__file__).resolve().parents[1]
    args = f"--checkpoint {tiny / 'e2e-seg'} --limit 4 --beam 1 --suites long --data-dir {DATA_DIR}"
    lst = tmp_path / "list.txt"
    lst.write_text(f"# two shards\na {args} --shard 0/2 \n\nb {args} --shard 1/2\n", encoding="utf-8")
    out = tmp_path / "shards"
    run = lambda: subprocess.run(  # noqa: E731
        ["bash", str(root / "scripts" / "stress_shards.sh"), str(out), str(lst), "300"],
        capture_output=True, text=True, env={**os.environ, "P": "2"},
    )  # fmt: skip
    first = run()
    assert first.returncode == 0, first.stdout + first.stderr
    assert "done: 2 of 2 shards" in first.stdout and sorted(q.name for q in out.glob("*.json")) == ["a.json", "b.json"]
    again = run()
    assert again.returncode == 0 and "rc=" not in again.stdout  # nothing run twice
    (out / "b.json").unlink()
    lst.write_text(lst.read_text(encoding="utf-8") + "c --no-such-flag\n", encoding="utf-8")
    third = run()
    assert third.returncode != 0 and "done: 2 of 3 shards" in third.stdout and "b rc=0" in third.stdout


def test_invented_figures_keep_the_shape_of_a_date_or_number():
    from segviz.records import parse_webnlg_triples

    kinds = {v: invented.figure_kind(v) for v in ("1827-11-26", '"1.8288"', "125800.0_(millimetres)", "-3.3528",
                                                  '"1/19"', "2014–15_Lega_Pro", "Carpi_F.C._1909", "NASA")}  # fmt: skip
    assert kinds == {"1827-11-26": "date", '"1.8288"': "number", "125800.0_(millimetres)": "number",
                     "-3.3528": "number", '"1/19"': None, "2014–15_Lega_Pro": None, "Carpi_F.C._1909": None,
                     "NASA": None}  # fmt: skip
    recs = parse_webnlg_triples(["A | birthDate | 1827-11-26", "A | height | 1.8288", "B | length | 125800.0_(millimetres)",
                                 "B | elevation | -3.3528", "B | runwayName | \"1/19\"", "A | deathDate | 1827-11-26"])  # fmt: skip
    new = invented.substitute_figures_webnlg(recs, seed=0)
    assert new == invented.substitute_figures_webnlg(recs, seed=0) and new != invented.substitute_figures_webnlg(recs, seed=1)
    values = [r.value for r in new]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", values[0]) and values[5] == values[0]  # one date, one invented date
    assert re.fullmatch(r"[1-9]\.\d{4}", values[1]) and re.fullmatch(r"[1-9]\d{5}\.0_\(millimetres\)", values[2])
    assert re.fullmatch(r"-[1-9]\.\d{4}", values[3]) and values[4] == '"1/19"'
    assert all(v != r.value for v, r in zip(values[:4], recs, strict=False))
    assert invented.invented_figures(recs, new) == [(i, k, values[i]) for i, k in
                                                    enumerate(["date", "number", "number", "number"])] + [(5, "date", values[5])]  # fmt: skip
    assert invented.unchanged(recs) == recs


def test_figures_suite_counts_the_checker_s_verdict_on_each_invented_figure(tiny):
    from segviz.records import parse_webnlg_triples

    systems = stress.Systems(checkpoint.load(tiny / "webnlg-seg"), checkpoint.load(tiny / "webnlg-pg"), beam=2)
    with_figures = parse_webnlg_triples(["Aarhus_Airport | elevationAboveTheSeaLevel | 25.0", "Aarhus_Airport | opened | 1925-05-01"])
    items = [*_items("webnlg")[:1], DevItem("figures", with_figures, ["Aarhus Airport opened on 1 may 1925."])]
    rows = stress.run_figures("webnlg", systems, items, 0, lambda: None)
    if any(invented.figure_kind(r.value) for r in items[0].records):
        pytest.fail("the first bundled example was meant to have no figure")
    assert [r["system"] for r in rows] == systems.names and {r["item"] for r in rows} == {1}
    new = invented.substitute_figures_webnlg(with_figures, 0)
    for r in rows:
        verdicts = faithfulness.check("webnlg", new, r["text"]).per_record
        assert r["verbatim"] == [[k, rec.value, verdicts[i].status != "missing"] for i, (k, rec) in
                                 enumerate(zip(["number", "date"], new, strict=True))]  # fmt: skip
    summary = stress.summarise({"long": stress.run_long("webnlg", systems, items, lambda: None), "figures": rows},
                               items, systems.names)  # fmt: skip
    half = items[1].half
    agg = summary["figures"][half]["rm"]
    assert agg["outputs"] == 1 and agg["verbatim_date"] == float(rows[2]["verbatim"][1][2])
    assert "Invented dates and numbers" in stress.render(summary) and "date stated" in stress.render(summary)


def test_relations_suite_decodes_with_the_relation_words_hidden(tiny):
    """``--suites relations`` (session 22): each WebNLG input decoded as if its relation words
    were never seen (the same text as ``Systems.decode(..., hide=...)``, and another than with
    them read); E2E gives no rows; the table puts BLEU, SER and stutters beside the long suite's."""
    from segviz.records import parse_webnlg_triples, relation_words

    systems = stress.Systems(checkpoint.load(tiny / "webnlg-seg"), checkpoint.load(tiny / "webnlg-pg"), beam=2)
    items = _items("webnlg")[:2]
    rows = stress.run_relations("webnlg", systems, items, 0, lambda: None)
    assert [(r["item"], r["system"]) for r in rows] == [(i, s) for i in range(2) for s in systems.names]
    for r in rows:
        hide = relation_words(items[r["item"]].records)
        assert r["hidden"] == sorted(hide) and hide
        assert r["text"] == systems.decode(items[r["item"]].records, r["system"], hide=hide).text
    assert stress.run_relations("e2e", systems, items, 0, lambda: None) == []
    long = stress.run_long("webnlg", systems, items, lambda: None)
    summary = stress.summarise({"long": long, "relations": rows}, items, systems.names)
    half = items[0].half
    agg = summary["relations"][half]["rm"]
    mine = [r for r in rows if r["system"] == "rm" and items[r["item"]].half == half]
    assert agg["outputs"] == len(mine) and agg["real"]["outputs"] == len(mine)
    assert agg["bleu"] == pytest.approx(bleu([r["text"] for r in mine], [items[r["item"]].refs for r in mine]))
    assert "Unseen relations" in stress.render(summary) and "stutters (unseen)" in stress.render(summary)
    assert stress_tables.stutters("the discoverer is the discoverer discoverer")
    assert not stress_tables.stutters("It was 1 1 2 and the end.")
    long_long = parse_webnlg_triples(["A_Long_Long_Way | author | Sebastian_Barry"])
    assert stress_tables.stutters("A Long Long Way is by Barry.") and not stress_tables.stutters("A Long Long Way is by Barry.", long_long)
    assert stress_tables.stutters("A Long Long Way is by by Barry.", long_long)
    assert "another relation's words" not in stress.render(summary)  # counted only with a lexicon's relation words
    relations = {"born": frozenset({"birthPlace"}), "ingredients": frozenset({"mainIngredients"})}
    told = stress.summarise({"long": long, "relations": rows}, items, systems.names, relations=relations)
    assert 0.0 <= told["relations"][half]["rm"]["alien"] <= 1.0 and "another relation's words (unseen)" in stress.render(told)


def test_alien_words_are_relation_words_of_relations_the_input_does_not_hold():
    """The *relations* suite's count (``lexicon.alien_words``): "born" said of a satellite; not of a
    person born somewhere, nor where the input's own words say it ("Born_to_Run")."""
    from segviz.lexicon import alien_words
    from segviz.records import Record

    relations = {"born": frozenset({"birthPlace", "birthDate"}), "ingredients": frozenset({"mainIngredients"}), "": frozenset()}
    kestrel = [Record("launchDate", "2019-04-11", "Kestrel_7")]
    assert alien_words(kestrel, "Kestrel 7 was born in 2019-04-11, with ingredients.", relations) == ["born", "ingredients"]
    assert alien_words([Record("birthPlace", "Porto", "Lucas")], "Lucas was born in Porto.", relations) == []
    assert alien_words([Record("launchDate", "1990", "Born_to_Run")], "Born to Run was born in 1990.", relations) == []
    assert alien_words([Record("mainIngredient", "Rice", "Dish")], "Its ingredients are rice.", relations) == []


def test_invented_codes_keep_their_shape():
    """The codes suite's substitution: every code object (one word with a digit: ISBN, ISSN,
    runway name) replaced by another of its shape, letters and signs kept; dates, numbers and
    names left as they are (session 33)."""
    from segviz.invented import code_kind, substitute_codes_webnlg
    from segviz.records import parse_webnlg_triples

    assert [code_kind(v) for v in ('"978-0-14-303943-3"', "09L/27R", "0001-8392", "3XN")] == [True] * 4
    assert not any(code_kind(v) for v in ("Apollo_12", "1990-05-11", "2776.0", "1986", "-3.3528", "ATISET", '"412"'))
    recs = parse_webnlg_triples(['A_Book | ISBN_number | "0-439-17684-0"', "An_Airport | runwayName | 09L/27R",
                                 "An_Airport | runwayLength | 2776.0", "A_Book | author | Garth_Nix"])  # fmt: skip
    new = substitute_codes_webnlg(recs, seed=3)
    assert [n.value == r.value for r, n in zip(recs, new, strict=True)] == [False, False, True, True]
    shape = lambda v: "".join("9" if c.isdigit() else c for c in v)  # noqa: E731
    assert [shape(n.value) for n in new[:2]] == ['"9-999-99999-9"', "99L/99R"]
    assert substitute_codes_webnlg(recs, seed=3) == new


def test_codes_suite_checks_each_invented_code_verbatim(tiny):
    from segviz.records import parse_webnlg_triples

    systems = stress.Systems(checkpoint.load(tiny / "webnlg-seg"), checkpoint.load(tiny / "webnlg-pg"), beam=2)
    with_code = parse_webnlg_triples(["Aarhus_Airport | runwayName | 10L/28R", "Aarhus_Airport | cityServed | Aarhus"])
    items = [*_items("webnlg")[:1], DevItem("codes", with_code, ["Aarhus Airport's runway is 10L/28R."])]
    rows = stress.run_codes("webnlg", systems, items, 0, lambda: None)
    assert [r["system"] for r in rows] == systems.names and {r["item"] for r in rows} == {1}
    code = invented.substitute_codes_webnlg(with_code, 0)[0].value
    assert code != "10L/28R" and all(r["verbatim"] == [["code", code, invented.states_verbatim(code, r["text"])]] for r in rows)
    summary = stress.summarise({"long": stress.run_long("webnlg", systems, items, lambda: None), "codes": rows},
                               items, systems.names)  # fmt: skip
    assert summary["codes"][items[1].half]["rm"]["outputs"] == 1
    assert "Invented codes" in stress.render(summary) and "code verbatim" in stress.render(summary)


def test_loops_reads_a_word_the_input_does_not_hold_said_again_nearby():
    """A forced plan's "… located in the location of the location" and "governing body of
    governing body" loop; the input's own names said again ("Lyra … in Lyra"), function words and
    a word said again further on do not."""
    from segviz.records import parse_webnlg_triples
    from segviz.stress_tables import LOOP, loops

    recs = parse_webnlg_triples(["City_Hall_of_Lyra | location | Lyra", "City_Hall_of_Lyra | governingBody | Lyra_City_Council"])
    assert loops("It is located in the location of the location.", recs)
    assert loops("The Lyra City Council is the governing body of governing body.", recs)
    assert not loops("City Hall of Lyra is in Lyra, and Lyra City Council governs it.", recs)
    assert not loops("It is located in Lyra, " + "and so on " * LOOP + "located there.", recs)  # too far apart
    assert loops("It is located in Lyra and located there.", recs)
