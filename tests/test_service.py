"""segviz.service: the functions behind the app's pages (no Streamlit)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from segviz import names, service
from segviz.checkpoint import load
from segviz.examples import EXAMPLES
from segviz.records import Record, RecordError, parse_e2e_mr


@pytest.fixture(scope="module")
def e2e_models(tiny):
    return load(tiny / "e2e-seg"), load(tiny / "e2e-pg")


# ----- records from the editor -------------------------------------------------------------------


def test_rows_skip_blank_and_keep_order():
    rows = [{"attribute": "name", "value": "Café Noir"}, {"attribute": None, "value": "  "},
            {"attribute": "priceRange", "value": "£20-25"}]  # fmt: skip
    parsed = service.records_from_rows("e2e", rows)
    assert parsed.records == [Record("name", "Café Noir"), Record("priceRange", "£20-25")]
    assert parsed.warnings == []


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([], "no records"),
        ([{"attribute": "", "value": ""}], "no records"),
        ([{"attribute": "name", "value": ""}], "row 1: value is blank"),
        ([{"attribute": "name", "value": "A"}, {"attribute": "name", "value": "B"}], "duplicate attribute 'name'"),
        ([{"attribute": f"a{i}", "value": "x"} for i in range(60)], "60 records given"),
        ([{"attribute": "name", "value": float("nan")}], "value is blank"),
    ],
)
def test_rows_errors(rows, message):
    with pytest.raises(RecordError, match=message):
        service.records_from_rows("e2e", rows)


def test_unknown_attribute_warns_but_parses():
    parsed = service.records_from_rows("e2e", [{"attribute": "wifi", "value": "<script>alert(1)</script>"}])
    assert parsed.records[0].value == "<script>alert(1)</script>"
    assert len(parsed.warnings) == 1 and "'wifi' is not an E2E attribute" in parsed.warnings[0]


def test_webnlg_rows_and_duplicates():
    row = {"subject": "Alan_Bean", "predicate": "occupation", "object": "Test_pilot"}
    parsed = service.records_from_rows("webnlg", [row])
    assert parsed.records == [Record("occupation", "Test_pilot", "Alan_Bean")]
    with pytest.raises(RecordError, match="duplicate triple"):
        service.records_from_rows("webnlg", [row, dict(row)])
    with pytest.raises(RecordError, match="subject is blank"):
        service.records_from_rows("webnlg", [{**row, "subject": ""}])


@pytest.mark.parametrize("dataset", ["e2e", "webnlg"])
def test_param_roundtrip(dataset):
    for records in EXAMPLES[dataset].values():
        param = service.records_to_param(records)
        assert service.records_from_param(dataset, param) == records
        assert service.rows_from_records(dataset, records)[0][service.columns(dataset)[0]]


@pytest.mark.parametrize("bad", ["not json", '{"a": 1}', '[["name"]]', "[]"])
def test_bad_param(bad):
    with pytest.raises(RecordError):
        service.records_from_param("e2e", bad)


# ----- generation -----------------------------------------------------------------------------------


def test_compare_fills_both_systems(e2e_models):
    seg, pg = e2e_models
    records = EXAMPLES["e2e"]["The Golden Lantern (4 slots)"] + [Record("near", "Zébra Hut £5 & Co")]
    cmp = service.compare("e2e", records, seg, pg, "rm", 3)
    for view in (cmp.seg, cmp.pg):
        res = view.result
        assert view.error is None and res.tokens and res.text
        assert res.segments[0][0] == 0 and res.segments[-1][1] == len(res.tokens)  # PG aligned too
        assert len(res.attention) == len(res.tokens) and len(res.attention[0]) == len(res.source_tokens)
        assert len(view.report.per_record) == len(records)
    rows = service.status_rows(cmp)
    assert [r["record"] for r in rows[:5]] == [r.label for r in records]
    assert set(rows[0]) >= {f"Segment model · {names.LEVEL_NAMES[cmp.constraints]}", "Pointer-generator · PG"}
    assert any("zébra" in w and "&" in w for w in cmp.warnings)  # unseen words are reported


def test_compare_guided_decodes_with_the_checker_guided_switches(e2e_models):
    """The Playground's "Checker-guided" option: both models decode with their own rules plus
    rerank / widen / free / keep / close / relations, the same texts as asking the decoder for those rules directly;
    PG, unconstrained, decodes as its own plain search."""
    from segviz import decode

    seg, pg = e2e_models
    records = EXAMPLES["e2e"]["The Golden Lantern (4 slots)"]
    cmp = service.compare("e2e", records, seg, pg, "rm", 3, guided=True)
    assert cmp.guided and cmp.constraints == "rm" and cmp.seg.result.constraints == "rm"
    rules = seg.rules(decode.guided_rules(seg.default_rules))
    assert (rules.rerank, rules.widen, rules.free, rules.keep, rules.close, rules.relations) == (True,) * 6
    direct = decode.generate_seg(seg.model, seg.vocab, records, "rm", 3, rules=rules)
    assert cmp.seg.result.text == direct.text
    assert "rerank_free" in cmp.seg.result.scores or "rerank_faults" in cmp.seg.result.scores
    plain_pg = decode.generate_pg(pg.model, pg.vocab, records, 3, rules=pg.rules(None))
    assert cmp.pg.result.text == plain_pg.text and not any(k.startswith("rerank") for k in cmp.pg.result.scores)
    plain = service.compare("e2e", records, seg, pg, "rm", 3)
    assert not plain.guided and not any(k.startswith("rerank") for k in plain.seg.result.scores)


def test_compare_without_pg(e2e_models):
    seg, _ = e2e_models
    cmp = service.compare("e2e", EXAMPLES["e2e"]["Mill Street Diner (3 slots)"], seg, None, "none", 1)
    assert cmp.seg.result is not None
    assert cmp.pg.result is None and "No usable Pointer-generator (PG) checkpoint for e2e" in cmp.pg.error
    assert list(service.status_rows(cmp)[0]) == ["#", "record", "Segment model · ours"]


def test_plan_forcing_and_sampling(e2e_models):
    seg, _ = e2e_models
    records = EXAMPLES["e2e"]["Mill Street Diner (3 slots)"]
    view = service.generate_with_plan("e2e", records, seg, [3, 1, 2], beam=2)
    assert view.result.plan == [3, 1, 2]
    with pytest.raises(RecordError, match="every record exactly once"):
        service.generate_with_plan("e2e", records, seg, [1, 1, 2])
    samples = service.sample_plans("e2e", records, seg, n=2, beam=1)
    assert 1 <= len(samples) <= 2
    assert all(sorted(s.result.plan) == [1, 2, 3] for s in samples)


# ----- uploaded outputs and flags ------------------------------------------------------------------


def test_parse_output_file():
    data = "mr\toutput\nname[Blue Café], food[Thai]\tBlue Café serves Thai food.\n\n".encode()
    pairs = service.parse_output_file("e2e", data)
    assert pairs == [([Record("name", "Blue Café"), Record("food", "Thai")], "Blue Café serves Thai food.")]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"name[X]\n", "line 1: expected 2 tab-separated columns"),
        (b"name[X\tX is nice.\n", "line 1: unbalanced brackets"),
        (b"name[X]\t \n", "line 1: the output text is empty"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b"\n\n", "no MR<TAB>output lines"),
        (b"name[X]\t" + b"word " * 30_000 + b"\n", "line 1: a cell is longer than 131,072 characters"),  # session 25
        (b"name[X]\t" + b"word " * 2_000 + b"\n", "line 1: the output has 9,999 characters; at most 5,000 are read"),
    ],
)
def test_parse_output_file_errors(data, message):
    with pytest.raises(service.OutputFileError, match=message):
        service.parse_output_file("e2e", data)


def test_parse_output_file_reads_old_mac_line_ends():
    """Session 25: a bare carriage return between lines raised ``_csv.Error`` through the page."""
    pairs = service.parse_output_file("e2e", b"name[X]\tX is here.\rname[Y]\tY is here.\r")
    assert [(r[0].value, out) for r, out in pairs] == [("X", "X is here."), ("Y", "Y is here.")]


def test_cases_from_outputs_and_flags(e2e_models):
    seg, _ = e2e_models
    pairs = [([Record("name", "Blue Café"), Record("food", "Thai")], "Blue Café is a family friendly pub.")]
    cases = service.cases_from_outputs("e2e", pairs, seg, system="tgen")
    res = cases[0].views["tgen"].result
    assert res.segments and res.segments[-1][1] == len(res.tokens) and res.attention == []
    rows = service.flagged_rows(cases)
    kinds = {(r["kind"], r["record"]) for r in rows}
    assert ("missing", "food[Thai]") in kinds
    assert any(k == "hallucinated" for k, _ in kinds)
    assert all(r["system"] == "tgen" and r["case"] == 0 for r in rows)


def test_other_relation_flags_from_the_segment_model_s_relation_words(tiny):
    """A record said with another relation's words is an "other relation" flag (a lexicon's guess,
    beside the checker's), located at its segments with the words named; no relation words, no flag."""
    import dataclasses

    from segviz.records import parse_webnlg_triples

    seg = load(tiny / "webnlg-seg")
    records = parse_webnlg_triples(["Wizard_and_Glass | author | Diane_Duane", "Wizard_and_Glass | OCLC_number | 1234"])
    text = "Wizard and Glass has the oclc number 1234 and the oclc number was Diane Duane."
    judged = dataclasses.replace(seg, relation_words={"": frozenset({"author", "OCLC_number"}), "oclc": frozenset({"OCLC_number"})})
    case = service.cases_from_outputs("webnlg", [(records, text)], judged, system="upload")[0]
    assert case.views["upload"].misplaced == {1: ["oclc"]}  # "the oclc number was" leads into Diane Duane
    rows = [r for r in service.flagged_rows([case]) if r["kind"] == "other relation"]
    assert [(r["record"], r["k"]) for r in rows] == [("Wizard_and_Glass | author | Diane_Duane", 1)]
    where = service.flag_location(case.views["upload"], "other relation", 1, rows[0]["record"])
    assert where.record == 1 and 'is said with "oclc"' in where.note
    plain = service.cases_from_outputs("webnlg", [(records, text)], dataclasses.replace(seg, relation_words={}), system="upload")
    assert not any(r["kind"] == "other relation" for r in service.flagged_rows(plain))
    assert service.misplaced_note(case.views["upload"]).endswith('the segment model\'s guess, not the checker\'s): record 1: "oclc".')
    assert service.misplaced_note(plain[0].views["upload"]) is None


def test_invented_number_flags_a_number_no_figure_of_the_input_holds(tiny):
    """WebNLG's checker reads no fact the input does not hold: a number none of its figures holds
    ("911" of an airport 213.0 metres high) is an "invented number" flag, framed in the segment
    that says it; the input's own figure in another form ("213") is not; without a dataset (as
    before session 42) no such flag."""
    from segviz.records import parse_webnlg_triples

    seg = load(tiny / "webnlg-seg")
    records = parse_webnlg_triples(["Fenwick_Airport | elevationAboveTheSeaLevel_(in_metres) | 213.0"])
    text = "Fenwick Airport is 213 metres above sea level. It is located 911 metres above the sea level."
    case = service.cases_from_outputs("webnlg", [(records, text)], seg, system="upload")[0]
    rows = [r for r in service.flagged_rows([case], "webnlg") if r["kind"] == "invented number"]
    assert [(r["record"], r["k"]) for r in rows] == [("number[911]", None)]
    assert service.attribute_of(rows[0]["record"]) == "number"  # one attribute in the inspector's tables
    where = service.flag_location(case.views["upload"], "invented number", None, rows[0]["record"])
    view = case.views["upload"]
    t = view.result.tokens.index("911")
    assert where.record is None and where.span is not None and where.span[0] <= t < where.span[1]
    assert "invented number 911: framed" in where.note
    assert not any(r["kind"] == "invented number" for r in service.flagged_rows([case]))
    note = service.invented_note("webnlg", records, view)  # the Playground's line under a text
    assert note == 'Says a number no figure of the input holds: "911" (a fact the checker cannot see).'
    assert service.invented_note("e2e", records, view) is None  # E2E's checker judges its figures
    fine = service.cases_from_outputs("webnlg", [(records, text[:45])], seg, system="upload")[0].views["upload"]
    assert service.invented_note("webnlg", records, fine) is None  # "213" of 213.0 is held
    e2e = service.cases_from_outputs("e2e", [([Record("name", "Blue Café")], "Blue Café is rated 3 out of 5.")], load(tiny / "e2e-seg"), system="upload")
    assert not any(r["kind"] == "invented number" for r in service.flagged_rows(e2e, "e2e"))  # the checker's to judge


def test_invented_name_flags_a_name_the_input_does_not_hold(tiny):
    """A word that training texts say almost only as a word of their input's names ("java"),
    said where the input holds none, is an "invented name" flag framed in its segment, and the
    Playground's note names it beside an invented number; the input's own names, its relation
    words ("nasa" of "was selected by NASA") and an entity's initials ("afit" of
    Air_Force_Institute_of_Technology) are not flags."""
    from segviz.records import parse_webnlg_triples

    seg = load(tiny / "webnlg-seg")
    records = parse_webnlg_triples(["Ayam_penyet | region | Malaysia", "Alan_Shepard | was selected by NASA | 1959",
                                    "Alan_Shepard | almaMater | Air_Force_Institute_of_Technology"])
    text = "Ayam penyet is a dish from Malaysia and Java. Alan Shepard was selected by NASA in 1959 and went to AFIT in 1911."
    case = service.cases_from_outputs("webnlg", [(records, text)], seg, system="upload")[0]
    rows = [(r["kind"], r["record"]) for r in service.flagged_rows([case], "webnlg") if r["kind"].startswith("invented")]
    assert rows == [("invented number", "number[1911]"), ("invented name", "name[java]")]
    assert service.attribute_of("name[java]") == "name"
    view = case.views["upload"]
    where = service.flag_location(view, "invented name", None, "name[java]")
    t = [w.lower() for w in view.result.tokens].index("java")
    assert where.span is not None and where.span[0] <= t < where.span[1] and "invented name java: framed" in where.note
    framed = next(v for v in view.segment_verdicts if (v.start, v.end) == where.span)
    assert framed.verdict == "invented name" and framed.invented == ("java",)  # not "faithful" beside the flag
    note = service.invented_note("webnlg", records, view)
    assert note == ('Says a number no figure of the input holds: "1911"; and a name the input does not hold: "java" '
                    "(facts the checker cannot see).")
    e2e = service.cases_from_outputs("e2e", [([Record("name", "Blue Café")], "Blue Café is in Java.")], load(tiny / "e2e-seg"), system="upload")
    assert not any(r["kind"] == "invented name" for r in service.flagged_rows(e2e, "e2e"))  # E2E's checker reads names


def test_flag_kinds_are_those_the_dataset_can_raise():
    """The inspector offers E2E no "other relation" (its lexicon has no relation words) nor
    "invented number" (its checker reads hallucinated slots), and WebNLG no "wrong" /
    "hallucinated" (its checker does not measure them)."""
    assert service.flag_kinds("e2e") == ["wrong", "repeated", "missing", "hallucinated"]
    assert service.flag_kinds("webnlg") == ["repeated", "missing", "other relation", "invented number", "invented name"]
    e2e, webnlg = service.flag_intro("e2e"), service.flag_intro("webnlg")  # the inspector's intro names them
    assert "stated wrongly" in e2e and "not in the input" in e2e and "other relation" not in e2e
    assert "stated wrongly" not in webnlg and "not in the input" not in webnlg and "other relation" in webnlg
    assert "invented number" in webnlg and "invented number" not in e2e
    assert "invented name" in webnlg and "invented name" not in e2e  # session 44
    assert "does not check whom the text says it of" in webnlg and "whom" not in e2e  # session 25


# ----- results ---------------------------------------------------------------------------------------


def test_summaries_and_metrics(tiny, tmp_path):
    root = tmp_path / "ck"
    root.mkdir()
    for name in ("e2e-seg", "e2e-pg"):
        (root / name).mkdir()
        (root / name / "config.json").write_text((tiny / name / "config.json").read_text())
        (root / name / "history.json").write_text((tiny / name / "history.json").read_text())
    (root / "e2e-seg" / "metrics.json").write_text(json.dumps({"rm": {"bleu": 0.61, "wrong": 3}, "none": {"bleu": 0.6}}))
    (root / "e2e-pg" / "metrics.json").write_text(json.dumps({"bleu": 0.58, "notes": {"x": 1}}))
    (root / "broken").mkdir()
    (root / "broken" / "config.json").write_text("{not json")
    s = {x.name: x for x in service.summarise_checkpoints(root)}
    assert s["e2e-seg"].kind == "seg" and s["e2e-pg"].kind == "pg" and len(s["e2e-seg"].history) == 3
    assert "unreadable" in s["broken"].error
    rows = service.metrics_rows(list(s.values()))
    assert {"checkpoint": "e2e-pg", "level": "—", "bleu": 0.58} in rows
    assert {"checkpoint": "e2e-seg", "level": "ours (+RM)", "bleu": 0.61, "wrong": 3} in rows
    assert service.summarise_checkpoints(tmp_path / "nowhere") == []


def test_training_stretches_say_where_one_run_gave_way_to_another():
    """The Results curves join a checkpoint's runs; the stretches table names each run's epochs and
    the flags that changed its data, start or learning rate."""
    from segviz.results import CheckpointSummary

    hist = [{"epoch": 1, "command": {"line": "python -m segviz.train --out x --model seg --epochs 2"}}, {"epoch": 2},
            {"epoch": 3, "command": {"line": "python -m segviz.train --out x --resume --clean --lr 0.0002 --epochs 4"}},
            {"epoch": 4}, {"epoch": 5, "command": {"line": "python -m segviz.train --out x --init 'my ck' --substitute 0.5"}}]
    old = [{"epoch": 1}, {"epoch": 2}]  # a history from before commands were recorded
    rows = service.training_stretches([CheckpointSummary("s", Path("s"), history=hist), CheckpointSummary("o", Path("o"), history=old)])
    assert [(r["checkpoint"], r["epochs"], r["flags"]) for r in rows] == [
        ("s", "1–2", "(a fresh start)"), ("s", "3–4", "--resume --clean --lr 0.0002"), ("s", "5", "--init my ck --substitute 0.5"),
        ("o", "1–2", "(not recorded)")]
    assert rows[1]["command"].endswith("--epochs 4")


def test_sample_inputs_first_random_stratified():
    inputs = [(str(i), [Record(f"a{j}", "v") for j in range(1 + i % 4)]) for i in range(40)]
    assert service.sample_inputs(inputs, 5) == inputs[:5]
    r = service.sample_inputs(inputs, 8, "random", seed=3)
    assert r == service.sample_inputs(inputs, 8, "random", seed=3) != service.sample_inputs(inputs, 8, "random", seed=4)
    assert len(r) == 8 and [k for k, _ in r] == sorted((k for k, _ in r), key=int)  # input order kept
    st = service.sample_inputs(inputs, 8, "stratified", seed=1)
    assert st == service.sample_inputs(inputs, 8, "stratified", seed=1)
    assert sorted(len(recs) for _, recs in st) == [1, 1, 2, 2, 3, 3, 4, 4]  # every K equally
    uneven = inputs[:3] + [(f"x{i}", [Record("a", "v")]) for i in range(20)]
    assert len(service.sample_inputs(uneven, 10, "stratified", seed=0)) == 10  # small strata: the rest fill up
    assert service.sample_inputs(inputs, 100, "random") == inputs


def test_attribute_counts_and_case_label():
    rows = [{"record": "food[Thai]", "system": "PG", "kind": "missing"}, {"record": "food[Thai]", "system": "PG", "kind": "wrong"},
            {"record": "familyFriendly", "system": "ours", "kind": "hallucinated"},
            {"record": "A | country | B", "system": "ours", "kind": "missing"}]  # fmt: skip
    counts = service.attribute_counts(rows)
    assert {"attribute": "food", "system": "PG", "wrong": 1, "repeated": 0, "missing": 1, "hallucinated": 0, "other relation": 0, "invented number": 0, "invented name": 0} in counts
    assert [c["attribute"] for c in counts] == ["country", "familyFriendly", "food"]
    assert "other relation" not in service.attribute_counts(rows[:2], service.flag_kinds("e2e"))[0]  # a WebNLG kind
    case = service.Case(0, "k", [Record("name", "X" * 50), Record("food", "Thai" * 20)], {})
    assert service.case_label(case).startswith("name[XXX") and len(service.case_label(case)) == 90


def test_input_label_names_a_webnlg_dev_key_with_its_triples():
    """The Playground's dev picker: "Airport/1/Id1" alone said nothing of the input."""
    from segviz.records import parse_webnlg_triples

    records = parse_webnlg_triples(['Aarhus_Airport | cityServed | "Aarhus, Denmark"'])
    assert service.input_label("Airport/1/Id1", records) == f"Airport/1/Id1 — {records[0].label}"
    e2e = parse_e2e_mr("name[The Eagle], eatType[pub]")
    assert service.input_label("name[The Eagle], eatType[pub]", e2e) == "name[The Eagle] · eatType[pub]"
    assert len(service.input_label("Airport/1/Id1", records * 9, n=40)) <= len("Airport/1/Id1 — ") + 40


def test_segment_rows_show_each_segment_as_the_text_shows_it():
    """The verdict table's words are the text's own: a segment inside a sentence is not
    capitalised ("pub called", not "Pub called"), and the rows joined give the text."""
    from segviz import faithfulness, viz
    from segviz.result import GenerationResult

    records = parse_e2e_mr("name[The Eagle], eatType[pub], food[Thai]")
    tokens = "there is a pub called the eagle . it serves thai food .".split()
    segments = [(0, 4, 2), (4, 8, 1), (8, 13, 3)]
    res = GenerationResult(system="seg", records=[(k, r.label, []) for k, r in enumerate(records, 1)],
                           tokens=tokens, text=" ".join(tokens), segments=segments, attention=[],
                           source_tokens=[], record_of_source_token=[])
    view = service.SystemView("seg", res, segment_verdicts=faithfulness.segment_verdicts("e2e", records, tokens, segments))
    rows = service.segment_rows(view, records)
    assert [r["text"] for r in rows] == ["There is a pub", "called The Eagle.", "It serves Thai food."]
    shown = "".join((" " if sp else "") + w for w, sp in viz.display_tokens(tokens, records))
    assert " ".join(r["text"] for r in rows) == shown


def test_unread_relations_get_their_own_advice(tiny):
    """A WebNLG relation with a word the model never read is named, with the advice to try the
    checker-guided option; relations the model read, and E2E inputs, get no such line."""
    seg = load(tiny / "webnlg-seg")
    assert "discoverer" not in seg.vocab.stoi
    known = EXAMPLES["webnlg"]["Alan Bean (3 triples)"]
    unread = [Record("discoverer", "Walter_Baade", "1036_Ganymed"), *known]
    warnings = service.unknown_words_warning(seg, unread)
    advice = [w for w in warnings if w.startswith("Relations with words the models never read")]
    assert len(advice) == 1 and "(discoverer)" in advice[0] and "Checker-guided" in advice[0]
    assert not [w for w in service.unknown_words_warning(seg, known) if w.startswith("Relations")]
    e2e = load(tiny / "e2e-seg")
    assert not [w for w in service.unknown_words_warning(e2e, [Record("discoverer", "Walter Baade")]) if w.startswith("Relations")]


def test_an_unseen_word_is_cut_in_the_warning(tiny):
    """A 2,000-character value was printed whole in the unseen-words warning: each word is cut at
    40 characters there."""
    e2e = load(tiny / "e2e-seg")
    long_word = "z" * 2000
    (warning,) = service.unknown_words_warning(e2e, [Record("name", "The Eagle"), Record("food", long_word)])
    assert "z" * 40 + "…" in warning and "z" * 41 not in warning and len(warning) < 200


def test_the_flag_count_says_one_flag_and_one_case():
    """"1 flags in 1 of 1 cases." read wrong; the count takes the singular where it is one."""
    assert service.flag_summary(1, 1, 1) == "1 flag in 1 of 1 case."
    assert service.flag_summary(0, 0, 1) == "0 flags in 0 of 1 case."
    assert service.flag_summary(3, 2, 10) == "3 flags in 2 of 10 cases."


def test_an_attribute_in_another_case_is_named_as_the_models_know_it():
    """Session 25 (a new user's review): "Name[Foo]" warned that 'Name' is unknown without
    saying that 'name' is the attribute meant."""
    from segviz.records import parse_e2e_mr

    shown = service.input_warnings("e2e", parse_e2e_mr("Name[Foo], wifi[yes]"), None)
    assert any("'Name' is not an E2E attribute" in w and w.endswith("did you mean 'name'?") for w in shown), shown
    assert not any("did you mean" in w for w in shown if "'wifi'" in w)
