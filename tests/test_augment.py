"""Value substitution (segviz.augment) and fine-tuning from a shipped checkpoint (train --init)."""

from __future__ import annotations

import random

import pytest
from conftest import DATA_DIR, data_available

from segviz import augment, invented
from segviz import checkpoint as ckpt
from segviz.data import Example
from segviz.records import parse_e2e_mr, parse_webnlg_triples, tokenize


def _ex(records, ref: str) -> Example:
    return Example("k", records, tokenize(ref), [ref])


def test_e2e_names_change_in_records_and_reference_together():
    ex = _ex(
        parse_e2e_mr("name[The Eagle], eatType[pub], near[Café Brazil]"),
        "The Eagle is a pub near Café Brazil. The Eagle is nice.",
    )
    out = augment.substitute_example("e2e", ex, random.Random(3))
    name, near = out.records[0].value, out.records[2].value
    assert name != "The Eagle" and near != "Café Brazil" and out.records[1] == ex.records[1]
    assert "eagle" not in out.target and "brazil" not in out.target
    assert " ".join(out.target).count(" ".join(tokenize(name)).removeprefix("the ")) == 2
    assert ex.target == tokenize("The Eagle is a pub near Café Brazil. The Eagle is nice.")  # input untouched


def test_a_name_the_reference_says_otherwise_is_kept():
    # "Eagle" without "The": replacing only the record would teach the model to say a stale name
    ex = _ex(parse_e2e_mr("name[The Eagle], eatType[pub]"), "Eagle is a pub.")
    assert augment.substitute_example("e2e", ex, random.Random(0)) is ex


def test_webnlg_entities_inside_other_entities():
    ex = _ex(
        parse_webnlg_triples(["Aarhus_Airport | cityServed | Aarhus"]),
        "Aarhus Airport serves the city of Aarhus.",
    )
    out = augment.substitute_example("webnlg", ex, random.Random(1))
    subj, obj = out.records[0].subject, out.records[0].value
    assert subj != "Aarhus_Airport" and obj != "Aarhus" and "aarhus" not in out.target
    text = " ".join(out.target)
    assert (
        " ".join(tokenize(subj.replace("_", " "))) in text
        and " ".join(tokenize(obj.replace("_", " "))) in text
    )


def test_share_and_seed():
    exs = [
        _ex(parse_e2e_mr(f"name[The Eagle], near[Café Brazil], food[{f}]"), "The Eagle near Café Brazil.")
        for f in ("French", "Italian") * 50
    ]
    assert augment.substitute_values("e2e", exs, 0.0, 0) is exs
    a, b = augment.substitute_values("e2e", exs, 0.5, 7), augment.substitute_values("e2e", exs, 0.5, 7)
    assert [e.records for e in a] == [e.records for e in b]
    changed = sum(x is not y for x, y in zip(a, exs, strict=True))
    assert 30 <= changed <= 70


def test_random_names_are_never_stress_suite_values():
    rng = random.Random(0)
    names = {augment.random_name(rng, ["copper", "kettle"]) for _ in range(3000)}
    assert len(names) > 1500 and not names & set(invented.NAMES + invented.PLACES)


@pytest.mark.skipif(not data_available(), reason="needs ../shared/data (set SEGVIZ_DATA)")
def test_init_fine_tunes_a_checkpoint_with_substitution(tiny, tmp_path):
    from segviz.train import main

    out = tmp_path / "ft"
    rc = main(["--dataset", "e2e", "--model", "seg", "--init", str(tiny / "e2e-seg"), "--out", str(out), "--epochs", "4",
               "--max-examples", "64", "--max-val-examples", "16", "--batch-size", "32", "--threads", "1", "--substitute", "0.5",
               "--lr", "0.001", "--data-dir", str(DATA_DIR)])  # fmt: skip
    assert rc == 0
    c = ckpt.load(out)
    base = ckpt.load(tiny / "e2e-seg")
    assert [e["epoch"] for e in c.history] == [1, 2, 3, 4] and c.history[-1]["lr"] == 0.001
    assert c.config["train"]["substitute"] == 0.5 and c.vocab == base.vocab


def test_abbreviated_names_change_records_and_reference_together():
    """``--abbreviations``: names with a full stop inside ("St. Brouthal") travel to the
    reference token by token, the stop included; without the switch no name has one."""
    rng = random.Random(5)
    plain = {augment.random_name(rng) for _ in range(2000)}
    dotted = {augment.random_name(rng, abbreviations=True) for _ in range(2000)}
    assert not any("." in n for n in plain) and sum("." in n for n in dotted) > 300
    ex = _ex(parse_e2e_mr("name[The Eagle], near[Café Brazil]"), "The Eagle is near Café Brazil.")
    outs = [augment.substitute_example("e2e", ex, random.Random(s), abbreviations=True) for s in range(40)]
    out = next(o for o in outs if "." in o.records[1].value)
    near = tokenize(out.records[1].value)
    assert near[1] == "." and " ".join(near) in " ".join(out.target) and out.target[-1] == "."


def test_figures_change_in_records_and_reference_together():
    """``train --figures`` (session 21): a date said in figures or written out, and a number said
    as written or without its ".0", change with the record; a value said only in part (the year
    of a date) or a one-digit number stays, and so does the rest of the text."""
    recs = parse_webnlg_triples(["Alan_Shepard | birthDate | 1923-11-18", "Alan_Shepard | deathDate | 1998-07-21",
                                 "Alan_Shepard | height | 1.8288", "A_B | runwayLength | 2014.0", "A_B | floors | 5"])  # fmt: skip
    ex = _ex(recs, "Alan Shepard was born on november 18 th, 1923 and died in 1998. He was 1.8288 m tall; "
                   "the runway is 2014 metres long; A B has 5 floors. He died 1998-07-21.")  # fmt: skip
    out = augment.substitute_figures_example(ex, random.Random(0))
    birth, death, height, runway, floors = (r.value for r in out.records)
    y, mo, d = birth.split("-")
    month = ("january february march april may june july august september october november december".split())[int(mo) - 1]
    text = " ".join(out.target)
    assert birth != "1923-11-18" and f"born on {month} {int(d)} {augment._ordinal(int(d))} , {y} and" in text
    assert death == "1998-07-21" and "died in 1998" in text  # the year alone in one place: kept whole
    assert height != "1.8288" and f" {height} m tall" in text and runway.endswith(".0") and f" {runway[:-2]} metres" in text
    assert floors == "5" and "has 5 floors" in text and out.key.endswith("#fig")
    assert augment.substitute_figures([ex], 0.0, 1) == [ex]
    assert augment._ordinal(1) == "st" and augment._ordinal(12) == "th" and augment._ordinal(23) == "rd"
    iso = augment.substitute_figures_example(_ex(recs[1:2], "He died 1998-07-21."), random.Random(0))
    assert " ".join(iso.target) == f"he died {' - '.join(iso.records[0].value.split('-'))} ."


def test_relation_words_are_the_predicates_own_content_words():
    """``records.relation_words`` (session 22): a predicate's words, less function words and the
    words of any subject or object of the input."""
    from segviz.records import relation_words

    recs = parse_webnlg_triples(["Aarhus | leaderName | Jacob_Bundsgaard", "Aarhus_Airport | cityServed | Aarhus",
                                 "Aarhus_Airport | isPartOf | Airport_City"])  # fmt: skip
    assert relation_words(recs) == {"leader", "name", "served", "part"}  # "city", "airport": entity words; "is", "of"
    assert relation_words(recs, [0]) == {"leader", "name"} and relation_words(recs, []) == set()


def test_hidden_words_are_read_as_never_seen_and_copied():
    """``Vocab.hiding``: a hidden word gets <unk> as embedding input and an extended (copy) id, in
    the source and the target alike; every other id, and the vocabulary itself, stay."""
    from segviz.data import UNK_ID, Vocab, encode

    vocab = Vocab(["aarhus", "leader", "name", "is", "jacob", "bundsgaard", "."])
    recs = parse_webnlg_triples(["Aarhus | leaderName | Jacob_Bundsgaard"])
    plain = encode(vocab, recs, tokenize("The leader is Jacob Bundsgaard."))
    hid = encode(vocab.hiding({"leader", "<unk>"}), recs, tokenize("The leader is Jacob Bundsgaard."))
    V, lead = len(vocab), vocab.id("leader")
    assert plain.src == [vocab.id(w) for w in ("aarhus", "leader", "name", "jacob", "bundsgaard")]
    assert hid.src == [plain.src[0], UNK_ID, *plain.src[2:]] and hid.oov == ["leader"] and plain.oov == []
    assert hid.src_ext[1] == V and hid.tgt[1] == V and plain.tgt[1] == lead and hid.tgt[0] == plain.tgt[0] == UNK_ID
    assert vocab.id("leader") == lead and vocab.hiding({"leader"}).itos == vocab.itos
    assert vocab.hiding({"<unk>"}).id("<unk>") == UNK_ID  # specials cannot be hidden


def test_relation_dropout_draws_records_by_seed_and_share():
    recs = parse_webnlg_triples(["Aarhus | leaderName | Jacob_Bundsgaard", "Aarhus | country | Denmark"])
    exs = [_ex(recs, "Jacob Bundsgaard leads Aarhus in Denmark.") for _ in range(400)]
    drawn = augment.relation_dropout(exs, 0.3, seed=1)
    assert drawn == augment.relation_dropout(exs, 0.3, seed=1) and drawn != augment.relation_dropout(exs, 0.3, seed=2)
    assert augment.relation_dropout(exs, 0.0, seed=1) == [set()] * 400
    assert {frozenset(h) for h in drawn} == {frozenset(), frozenset({"leader", "name"}), frozenset({"country"}),
                                            frozenset({"leader", "name", "country"})}  # fmt: skip
    share = sum("country" in h for h in drawn) / len(drawn)
    assert 0.22 < share < 0.38  # each record with probability 0.3


def test_open_values_change_food_area_and_eat_type_in_records_and_reference_together():
    """``train --open-values`` (session 24): food, area and eatType said verbatim get invented
    values outside the closed sets, in the records and the reference alike; a value the reference
    says otherwise ("by the river" for riverside) stays, and WebNLG is left alone."""
    recs = parse_e2e_mr("name[The Eagle], eatType[coffee shop], food[French], area[riverside], near[Café Brazil]")
    ex = _ex(recs, "The Eagle is a coffee shop serving French food in riverside, near Café Brazil.")
    out = augment.open_values_example(ex, random.Random(0))
    new = {r.attribute: r.value for r in out.records}
    assert (new["name"], new["near"]) == ("The Eagle", "Café Brazil")
    for a, old in (("eatType", "coffee shop"), ("food", "French"), ("area", "riverside")):
        assert new[a] != old and new[a].lower() not in augment._CLOSED
        assert " ".join(tokenize(new[a])) in " ".join(out.target)
    assert not {"coffee", "french", "riverside"} & set(out.target)
    river = _ex(parse_e2e_mr("name[The Eagle], area[riverside]"), "The Eagle is by the river.")
    assert augment.open_values_example(river, random.Random(0)) is river
    rng = random.Random(1)
    made = [augment.random_value(rng, a) for a in ("food", "area", "eatType") for _ in range(200)]
    assert not {m.lower() for m in made} & {v.lower() for vs in invented.OPEN_VALUES.values() for v in vs}
    both = augment.open_values("e2e", [ex] * 40, 0.5, seed=0)
    assert 5 < sum(e.key.endswith("#open") for e in both) < 35 and both == augment.open_values("e2e", [ex] * 40, 0.5, seed=0)
    web = [_ex(parse_webnlg_triples(["A | country | Spain"]), "A is in Spain.")]
    assert augment.open_values("webnlg", web, 1.0, seed=0) == web
