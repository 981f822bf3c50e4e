"""Value lexicon (segviz.lexicon) and the decoding rules that read it (ValueRules)."""

from __future__ import annotations

import dataclasses

import pytest

from segviz import checkpoint, faithfulness, lexicon
from segviz.data import Example, Vocab
from segviz.decode import ValueRules, _absent_ids, _own_mask, generate_pg, generate_seg
from segviz.examples import EXAMPLES
from segviz.records import parse_e2e_mr, tokenize


def _ex(mr: str, ref: str) -> Example:
    return Example(mr, parse_e2e_mr(mr), tokenize(ref), [ref])


def test_lexicon_learns_words_of_attributes_values_and_tokens():
    exs = [_ex("name[The Eagle], eatType[restaurant], familyFriendly[yes]", "The Eagle is a family friendly restaurant."),
           _ex("name[Zizzi], food[French]", "Zizzi is a French restaurant."),
           _ex("name[Zizzi], food[Italian], familyFriendly[no]", "Zizzi serves Italian food and is not family friendly."),
           _ex("name[Zizzi], food[Italian]", "Zizzi serves Italian food.")] * 30  # fmt: skip
    lex = lexicon.build(exs)
    assert lex["eagle"] >= {"tok:eagle", "value:name=the eagle"} and "tok:zizzi" in lex["zizzi"]
    assert "attr:familyFriendly" in lex["family"] and "attr:familyFriendly" in lex["friendly"]
    assert lex["not"] >= {"value:familyFriendly=no"} and "value:familyFriendly=yes" not in lex["not"]
    assert "restaurant" not in lex and "the" not in lex and "is" not in lex  # said of inputs without them


def test_own_mask_rows():
    recs = parse_e2e_mr("name[The Eagle], food[French], near[Café Brazil]")
    vocab = Vocab(["the", "eagle", "french", "café", "brazil", "italian", "food", "family"])
    lex = {w: frozenset({f"tok:{w}"}) for w in ("eagle", "french", "café", "brazil", "italian")}
    rules = ValueRules({**lex, "family": frozenset({"attr:familyFriendly"})})
    mask = _own_mask(vocab, [], recs, rules)
    banned = [{w for w in vocab.itos if mask[k, vocab.stoi[w]]} for k in range(4)]
    assert banned[0] == {"eagle", "french", "café", "brazil"}  # null: every record's words
    assert banned[2] == {"eagle", "café", "brazil"}  # food says French, nothing else
    assert banned[3] == {"eagle", "french"}
    assert set(vocab.itos) - {w for k in range(4) for w in banned[k]} >= {
        "italian",
        "family",
    }  # nobody's: the absent rule's
    absent = {vocab.itos[i] for i in _absent_ids(vocab, [], recs, rules)}
    assert absent == {"italian", "family"}
    assert _own_mask(vocab, [], recs, ValueRules(rules.lexicon, own=False)) is None


@pytest.fixture(scope="module")
def tiny_e2e(tiny):
    return checkpoint.load(tiny / "e2e-seg"), checkpoint.load(tiny / "e2e-pg")


def test_decoding_obeys_the_rules(tiny_e2e):
    seg, pg = tiny_e2e
    examples = list(EXAMPLES["e2e"].values())
    lex = {w: frozenset({f"tok:{w}"}) for recs in examples for w in lexicon.value_words(recs)}
    rules = ValueRules(lex)
    for recs in examples:
        held = {t.lower() for r in recs for t in r.tokens}
        own = [lexicon.value_words([r]) for r in recs]
        for plan in (None, list(range(len(recs), 0, -1))):
            out = generate_seg(seg.model, seg.vocab, recs, "rm", beam=2, plan=plan, rules=rules)
            assert not ({t.lower() for t in out.tokens} & lex.keys()) - held
            for s, e, k in out.segments:
                words = {t.lower() for t in out.tokens[s:e]} & lex.keys()
                allowed = own[k - 1] | {t.lower() for t in recs[k - 1].tokens} if k else set()
                assert words <= allowed, (out.text, s, e, k)
        out = generate_pg(pg.model, pg.vocab, recs, beam=2, rules=rules)
        assert not ({t.lower() for t in out.tokens} & lex.keys()) - held


def test_empty_lexicon_without_names_is_the_papers_decoding(tiny_e2e):
    seg, _ = tiny_e2e
    recs = EXAMPLES["e2e"]["The Copper Kettle (8 slots)"]
    a = generate_seg(seg.model, seg.vocab, recs, "rm", beam=2)
    b = generate_seg(seg.model, seg.vocab, recs, "rm", beam=2, rules=ValueRules(names=False))
    assert a.tokens == b.tokens and a.segments == b.segments


def test_lexicon_file_round_trip(tmp_path):
    assert lexicon.load(tmp_path) == {}
    (tmp_path / lexicon.FILE).write_text(
        '{"words": {"eagle": ["tok:eagle"], "family": ["attr:familyFriendly"]}}', encoding="utf-8"
    )
    assert lexicon.load(tmp_path) == {"eagle": {"tok:eagle"}, "family": {"attr:familyFriendly"}}
    (tmp_path / lexicon.FILE).write_text("not json", encoding="utf-8")
    assert lexicon.load(tmp_path) == {}


def test_names_are_copied_whole(tiny_e2e):
    seg, pg = tiny_e2e
    recs = parse_e2e_mr("name[The Quiet Walrus], eatType[pub], near[Swan's Nest Lock]")
    rules = ValueRules({}, absent=False, own=False)
    names = {"quiet": ["quiet", "walrus"], "swan's": ["swan's", "nest", "lock"]}
    outs = [
        generate_seg(seg.model, seg.vocab, recs, "rm", beam=2, plan=p, rules=rules) for p in (None, [3, 2, 1])
    ]
    outs.append(generate_pg(pg.model, pg.vocab, recs, beam=2, rules=rules))
    seen = 0
    for out in outs:
        toks = [t.lower() for t in out.tokens]
        for i, t in enumerate(toks):
            if t in names:  # a name's first content word is followed by the rest of it
                seen += 1
                assert toks[i : i + len(names[t])] == names[t], out.text
    assert seen >= 2


def test_every_name_a_word_begins_stays_open_until_one_is_said_whole():
    """Session 26: "abilene" begins "Abilene Regional Airport" and "Abilene, Texas"; owing only
    the first name listed barred the other for good, and 35 of 474 forced random WebNLG plans
    (tune half) found no text and fell back to none."""
    import torch

    from segviz.decode.rules import _force, _owed_after

    airport, city = (1, 2, 3), (1, 4, 5)  # abilene regional airport / abilene , texas
    owed = _owed_after((), [airport, city], 1)
    assert owed == ((2, 3), (4, 5))
    row, raw = torch.zeros(8), torch.arange(8.0)
    _force(row, raw, owed)
    assert torch.isfinite(row).nonzero().flatten().tolist() == [2, 4] and row[4] == 4.0
    assert _owed_after(owed, [airport, city], 4) == ((5,),)
    assert _owed_after(((5,),), [airport, city], 5) == ()  # said whole
    assert _owed_after((), [airport, city], 7) == ()  # begins no name
    assert _owed_after((), [(1,), (1, 2)], 1) == ()  # "Abilene" alone is a name said whole


def test_shipped_webnlg_keeps_a_plan_whose_record_names_share_a_first_word():
    """The dev input that fell back (tune half, plan 1,3,2,4): record 1's subject and value both
    begin with "abilene" (session 26: ``rules._owed_after``, ``rules._inner_ids``)."""
    from conftest import ROOT

    from segviz import checkpoint
    from segviz.records import parse_webnlg_triples

    ck = checkpoint.load(ROOT / "checkpoints" / "webnlg-seg")
    recs = parse_webnlg_triples(["Abilene_Regional_Airport | cityServed | Abilene,_Texas", "Abilene,_Texas | isPartOf | Texas",
                                 "Abilene_Regional_Airport | runwayLength | 1121.0", "Abilene,_Texas | country | United_States"])
    out = generate_seg(ck.model, ck.vocab, recs, "rm", beam=5, plan=[1, 3, 2, 4], rules=ck.rules())
    assert not out.fallback_used, out.text
    assert out.plan[:2] == [1, 3] and "Abilene Regional Airport" in out.text, (out.plan, out.text)
    # record 2's value "Texas" is a word that also continues "Abilene, Texas"; its own segment
    # may say it alone (before: "… and is part of the is. Abilene, Texas")
    a, b = next((a, b) for a, b, k in out.segments if k == 2)
    assert any(out.tokens[j] == "texas" and out.tokens[j - 2 : j] != ["abilene", ","] for j in range(a, b)), out.text


def test_a_name_does_not_run_on_into_a_value():
    from segviz.decode.rules import _ran_on, _run_on

    vocab = Vocab(["tollgate", "3", "out", "of", "5", "star", "rating", "is", "high"])
    lex = {"3": frozenset({"attr:customer rating", "value:customer rating=3 out of 5"}),
           "star": frozenset({"attr:customer rating"}), "high": frozenset({"attr:priceRange"})}  # fmt: skip
    rules = ValueRules(lex)
    assert rules.value_bigrams["3"] == {"out"} and rules.value_bigrams["out"] == {"of"}
    assert rules.run_on("3") == {"out", "3", "star"} and rules.run_on("tollgate") == set()
    recs = parse_e2e_mr("name[Tollgate 3], customer rating[5 out of 5]")
    name = (vocab.stoi["tollgate"], vocab.stoi["3"])
    run_on = _run_on(vocab, [], recs, rules, [name])
    assert {vocab.itos[i] for i in run_on[name]} == {"out", "3", "star"}
    said = [vocab.stoi[w] for w in ("tollgate", "3")]
    assert {vocab.itos[i] for i in _ran_on(said, run_on)} == {"out", "3", "star"}
    assert _ran_on(said + [vocab.stoi["is"]], run_on) == [] and _ran_on(said[:1], run_on) == []
    assert _run_on(vocab, [], recs, ValueRules(lex, names=False), [name]) == {}
    plain = (vocab.stoi["tollgate"],)  # a name whose last word begins no value: nothing to ban
    assert _run_on(vocab, [], parse_e2e_mr("name[Tollgate]"), rules, [plain]) == {}


def test_a_value_inside_a_longer_entity_is_not_a_mention():
    from segviz.decode.rules import _entities, _longer
    from segviz.decode.search import _alone
    from segviz.records import Record

    vocab = Vocab(["angola", "international", "airport", "is", "in", "icolo", "e", "bengo", ",", "."])
    recs = [Record("location", "Icolo_e_Bengo", "Angola_International_Airport"), Record("country", "Angola", "Icolo_e_Bengo")]
    ids = lambda text: [vocab.stoi[w] for w in text.split()]  # noqa: E731
    entities = _entities(vocab, [], recs)
    assert tuple(ids("angola international airport")) in entities and tuple(ids("icolo e bengo")) in entities
    longer = _longer({2: ids("angola")}, entities)
    assert longer == {2: [tuple(ids("angola international airport"))]}
    angola = tuple(ids("angola"))
    assert not _alone(ids("angola"), angola, longer[2])  # may still become the airport's name
    assert not _alone(ids("angola international airport is in icolo e bengo ,"), angola, longer[2])
    assert _alone(ids("angola international airport is in icolo e bengo , angola ."), angola, longer[2])
    assert _alone(ids("angola ."), angola, longer[2])  # the prefix broke off: said alone


def test_a_value_that_qualifies_a_longer_entity_after_its_comma_is_a_mention_with_qualifiers():
    """``qualifiers``: "New York" said in "Ithaca, New York" says (Cornell_University | state |
    New_York), as the checker reads it; "Angola" in "Angola International Airport" still does not."""
    from segviz.decode.rules import longer_than as _longer_than
    from segviz.decode.rules import value_rules
    from segviz.decode.search import _alone
    from segviz.records import Record

    vocab = Vocab("cornell university is in ithaca , new york angola international airport icolo e bengo .".split())
    recs = [
        Record("city", "Ithaca,_New_York", "Cornell_University"),
        Record("state", "New_York", "Cornell_University"),
        Record("location", "Icolo_e_Bengo", "Angola_International_Airport"),
        Record("country", "Angola", "Icolo_e_Bengo"),
    ]
    ids = lambda text: [vocab.stoi[w] for w in text.split()]  # noqa: E731
    values = {2: ids("new york"), 4: ids("angola")}
    plain = _longer_than(vocab, [], recs, values, value_rules("auto+once"))
    assert plain == {2: [tuple(ids("ithaca , new york"))], 4: [tuple(ids("angola international airport"))]}
    qualified = _longer_than(vocab, [], recs, values, value_rules("auto+once+qualifiers"))
    assert qualified == {4: [tuple(ids("angola international airport"))]}
    # the record's own subject is not qualified so: "Potter County, Texas" names the county
    potter = [Record("state", "New_York", "Ithaca,_New_York")]
    assert _longer_than(vocab, [], potter, {1: ids("new york")}, value_rules("auto+qualifiers")) == {1: [tuple(ids("ithaca , new york"))]}
    text = ids("cornell university is in ithaca , new york .")
    assert not _alone(text, tuple(ids("new york")), plain[2])  # inside the city's name: not said
    assert value_rules("none+qualifiers").qualifiers and not value_rules("auto").qualifiers
    # the once rule reads it the same way: "new york" after "ithaca, new york" would say it again
    from segviz.decode.rules import _function_mask, _said_once

    func = _function_mask(vocab, [])
    assert _said_once(vocab, [], recs, value_rules("auto+once"), func)[2][2] == [tuple(ids("ithaca , new york"))]
    assert _said_once(vocab, [], recs, value_rules("auto+once+qualifiers"), func)[2][2] == []


def test_the_quotes_around_a_literal_are_not_an_entity_of_their_own():
    """A WebNLG literal ``"06/24 'Kaagbaan'"`` is one entity, its words without the quotes (as
    ``Record.value_tokens``): the quoted spelling is no longer entity that holds the value, which
    let +RM say the runway's name a second time ("… is named 06 / 24 ' Kaagbaan '. The runway is
    called " 06 / 24 ' Kaagbaan ' …")."""
    from segviz.decode.rules import _entities, _longer, _value_ids
    from segviz.records import Record

    vocab = Vocab(['"', "06", "/", "24", "'", "kaagbaan", "schiphol"])
    recs = [Record("runwayName", "\"06/24 'Kaagbaan'\"", "Schiphol")]
    value = _value_ids(vocab, [], recs)
    assert value == {1: [vocab.stoi[w] for w in ["06", "/", "24", "'", "kaagbaan", "'"]]}
    assert tuple(value[1]) in _entities(vocab, [], recs)
    assert _longer(value, _entities(vocab, [], recs)) == {}


def test_decoding_keeps_an_unseen_name_from_running_on(tiny_e2e):
    seg, pg = tiny_e2e
    recs = parse_e2e_mr("name[Zorbleton 3], eatType[pub], customer rating[3 out of 5]")
    lex = {"3": frozenset({"attr:customer rating"}), "rating": frozenset({"attr:customer rating"})}
    rules = ValueRules(lex, absent=False, own=False)  # without the rule: "Zorbleton 3 rating and is a 3 5"
    outs = [generate_seg(seg.model, seg.vocab, recs, "rm", beam=2, plan=p, rules=rules) for p in ([1, 3, 2], [1, 2, 3])]
    outs.append(generate_pg(pg.model, pg.vocab, recs, beam=2, rules=rules))
    named = 0
    for out in outs:
        toks = [t.lower() for t in out.tokens]
        after = [toks[i + 2] for i in range(len(toks) - 2) if toks[i : i + 2] == ["zorbleton", "3"]]
        named += bool(after)
        assert not set(after) & {"out", "3", "rating"}, out.text
    assert named >= 2  # the plan's name segments say the name, and something follows it


def test_auto_applies_the_lexicon_rules_only_under_a_forced_plan():
    from segviz.decode import value_rules

    recs = parse_e2e_mr("name[The Eagle], food[French]")
    vocab = Vocab(["eagle", "french"])
    lex = {"eagle": frozenset({"tok:eagle"}), "french": frozenset({"tok:french"})}
    auto = value_rules("auto", lex)
    assert auto.absent is None and auto.names and auto.own is None
    assert _own_mask(vocab, [], recs, auto) is None
    assert _absent_ids(vocab, [], parse_e2e_mr("name[Zizzi]"), auto) == []
    planned = _absent_ids(vocab, [], parse_e2e_mr("name[Zizzi]"), auto, planned=True)
    assert sorted(planned) == sorted([vocab.stoi["eagle"], vocab.stoi["french"]])
    mask = _own_mask(vocab, [], recs, auto, planned=True)
    assert mask[0, vocab.stoi["eagle"]] and mask[0, vocab.stoi["french"]] and mask[2, vocab.stoi["eagle"]]
    assert value_rules("none", lex) is None and value_rules("all", lex).own is True
    assert not value_rules("names", lex).absent and value_rules("absent", lex).own is False
    with pytest.raises(ValueError, match="value rules"):
        value_rules("most", lex)


def test_a_checkpoint_carries_its_chosen_rules(tmp_path):
    assert lexicon.default_rules(tmp_path) is None
    (tmp_path / lexicon.FILE).write_text('{"value_rules": "names", "words": {}}', encoding="utf-8")
    assert lexicon.default_rules(tmp_path) == "names"


def test_lexicon_clean_learns_from_exact_references_only(tmp_path):
    """``lexicon --clean`` drops references the checker finds wrong (a riverside venue said to be
    in the city centre), as ``train --clean`` does, and says so in lexicon.json."""
    import csv
    import json

    data = tmp_path / "data" / "e2e"
    data.mkdir(parents=True)
    rows = [("name[Aromi], area[riverside]", "Aromi is in the riverside area."),
            ("name[Aromi], area[riverside]", "Aromi is in the city centre."),  # wrong area
            ("name[Cotto], area[city centre]", "Cotto is in the city centre.")]  # fmt: skip
    with open(data / "train.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([("mr", "ref"), *rows])
    ck = tmp_path / "ck"
    ck.mkdir()
    (ck / "config.json").write_text(json.dumps({"dataset": "e2e"}), encoding="utf-8")
    assert lexicon.main(["--checkpoint", str(ck), "--data-dir", str(tmp_path / "data")]) == 0
    assert json.loads((ck / lexicon.FILE).read_text(encoding="utf-8"))["train_references"] == 3
    assert lexicon.main(["--checkpoint", str(ck), "--data-dir", str(tmp_path / "data"), "--clean"]) == 0
    stored = json.loads((ck / lexicon.FILE).read_text(encoding="utf-8"))
    assert stored["train_references"] == 2 and stored["clean"] is True


def test_min_lift_admits_rare_words_said_almost_only_with_a_feature():
    """``--min-lift``: "end" (of "high-end") is said by 3% of the references with a price range,
    under ``MIN_RATE``, and by none without one; the share rule misses it, the lift rule not."""
    priced = [_ex("name[Cotto], priceRange[high]", "Cotto is a high-end place.")] * 30
    priced += [_ex("name[Cotto], priceRange[high]", "Cotto is a place with high prices.")] * 970
    plain = [_ex("name[Cotto], food[French]", "Cotto is a French place.")] * 1000
    assert "end" not in lexicon.build(priced + plain)
    lifted = lexicon.build(priced + plain, min_lift=20)
    assert lifted["end"] >= {"attr:priceRange", "value:priceRange=high"}
    assert "place" not in lifted  # said with and without a price range alike
    assert "end" not in lexicon.build(priced[:10] + priced[30:] + plain, min_lift=20)  # under MIN_SUPPORT


def test_segment_words_and_null_words_from_aligned_counts():
    from collections import Counter

    seg = {("customer rating", "low"): 100, ("customer rating", "5 out of 5"): 100, ("customer rating", "1 out of 5"): 100}
    words = Counter({(("customer rating", "low"), "low"): 90, (("customer rating", "1 out of 5"), "low"): 30,
                     (("customer rating", "low"), "rating"): 80, (("customer rating", "5 out of 5"), "rating"): 85,
                     (("customer rating", "1 out of 5"), "rating"): 70, (("customer rating", "5 out of 5"), "excellent"): 5,
                     (lexicon.NULL, "located"): 1, (("customer rating", "low"), "located"): 199,
                     (lexicon.NULL, "there"): 40, (("customer rating", "low"), "there"): 10})  # fmt: skip
    values = ["low", "5 out of 5", "1 out of 5"]
    of = lambda w: lexicon._values_of("customer rating", w, values, Counter(seg), words, (0.01, 0.05))  # noqa: E731
    assert of("low") == {"low", "1 out of 5"}  # never in a 5-out-of-5 segment
    assert of("rating") == frozenset()  # said of every value: says none
    assert of("excellent") == frozenset()  # under MIN_SUPPORT
    assert set(lexicon._null_never(words, 0.01)) == {"low", "rating", "located"}  # "there" is a null word


def test_a_word_every_attribute_says_is_no_segment_word():
    """Session 25: "located", which the segments of names and foods say alike, stated
    ``name[Alimentum]`` under ``stating`` ("… is a … place called '."); a word the attribute's
    segments say under ATTRIBUTE_LIFT times as often as the other records' is none of its values'."""
    from collections import Counter

    seg = Counter({("name", f"n{i}"): 1000 for i in range(3)} | {("food", "french"): 1000, ("food", "english"): 1000})
    words = Counter({(("name", "n0"), "located"): 100, (("name", "n2"), "located"): 100,
                     (("food", "french"), "located"): 150, (("food", "french"), "french"): 900,
                     (("name", "n1"), "french"): 30, (("name", "n0"), "n0"): 900})  # fmt: skip
    out = lexicon._segment_words(seg, words, 0.01, 0.05)
    assert "located" not in out["name"] and "located" not in out["food"]  # 6.7% of name segments, 7.5% of food's
    assert out["food"]["french"] == {"french"} and out["name"]["n0"] == {"n0"}
    off = lexicon._segment_words(seg, words, 0.01, 0.05, attribute_lift=0)  # the lexicons before session 25
    assert off["name"]["located"] == {"n0", "n2"} and off["food"]["located"] == {"french"}
    assert ("name", "located") in lexicon._attribute_words(seg, words, 0.8)
    assert ("name", "located") not in lexicon._attribute_words(seg, words, 1.0)


def test_relation_words_from_aligned_counts():
    """A word is a relation word when the attributes whose segments often say it, of two values or
    more, hold 90% of its record segments (three such attributes at most); it may be said by
    those and by any attribute that says it in 1% of its own."""
    from collections import Counter

    seg = Counter({("birthPlace", "Ohio"): 60, ("birthPlace", "Texas"): 40, ("birthDate", "1930"): 30,
                   ("birthDate", "1931"): 20, ("author", "Diane_Duane"): 100, ("rare", "x"): 5, lexicon.NULL: 300})  # fmt: skip
    words = Counter({(("birthPlace", "Ohio"), "born"): 50, (("birthPlace", "Texas"), "born"): 30,
                     (("birthDate", "1930"), "born"): 25, (("birthDate", "1931"), "born"): 15,
                     (("author", "Diane_Duane"), "born"): 1,
                     (("author", "Diane_Duane"), "written"): 60, (("birthPlace", "Ohio"), "written"): 10,
                     (("birthPlace", "Ohio"), "ohioan"): 40,  # one value's own word, spelled otherwise
                     (("rare", "x"), "oddly"): 5, (lexicon.NULL, "born"): 99})  # fmt: skip
    rels = lexicon.relation_words(seg, words)
    assert rels[""] == {"birthPlace", "birthDate", "author"}  # "rare" has under MIN_SUPPORT segments
    assert rels["born"] == {"birthPlace", "birthDate", "author"}  # author says it in 1 of 100: at the threshold
    assert "written" not in rels  # 60 of its 70 record segments are author's: under RELATION_SHARE
    assert "oddly" not in rels  # no attribute says it MIN_SUPPORT times
    assert "ohioan" not in rels  # said of one value only: under RELATION_VALUES
    assert lexicon.relation_words(seg, words, threshold=0.02)["born"] == {"birthPlace", "birthDate"}
    many = Counter({(a, "x"): 50 for a in ("a", "b", "c", "d")} | {(a, "y"): 50 for a in ("a", "b", "c", "d")})
    said = Counter({((a, v), "located"): 30 for a in ("a", "b", "c", "d") for v in ("x", "y")})
    assert "located" not in lexicon.relation_words(many, said)  # four owners: over RELATION_OWNERS
    assert lexicon.relation_words(many, said - Counter({(("d", v), "located"): 30 for v in ("x", "y")}))["located"] == {"a", "b", "c"}


def test_plain_value_words_fold_letters_and_read_a_date_s_month():
    from segviz.records import parse_webnlg_triples

    assert lexicon.plain_word("Anıtı's") == "aniti" and lexicon.plain_word("Hüseyin") == "huseyin"
    recs = parse_webnlg_triples(['Neil_Armstrong | birthDate | "1930-08-05"', "Neil_Armstrong | almaMater | Purdue_University"])
    assert {"august", "neil", "armstrong", "purdue", "university"} <= lexicon.plain_value_words(recs)
    assert "may" not in lexicon.plain_value_words(parse_webnlg_triples(['X | birthDate | "1930-13-05"']))  # no month 13


def test_segment_words_run_on_a_model_and_round_trip(tiny, tmp_path):
    import json
    import shutil

    ck = tmp_path / "e2e-seg"
    shutil.copytree(tiny / "e2e-seg", ck)
    seg = checkpoint.load(ck)
    examples = [_ex(", ".join(r.label for r in recs), " ".join(r.value for r in recs)) for recs in EXAMPLES["e2e"].values()] * 20
    words = lexicon.segment_words(seg.model, seg.vocab, examples)
    assert "" in words and all(isinstance(vs, frozenset) for ws in words.values() for vs in ws.values())
    stored = {"words": {}, "segments": {"": {"located": []}, "customer rating": {"low": ["1 out of 5", "low"]}}}
    (ck / lexicon.FILE).write_text(json.dumps(stored), encoding="utf-8")
    assert lexicon.read(ck)[3] == {"": {"located": frozenset()}, "customer rating": {"low": {"low", "1 out of 5"}}}
    assert checkpoint.load(ck).rules("auto").segment_words["customer rating"]["low"] == {"low", "1 out of 5"}
    (ck / lexicon.FILE).write_text(json.dumps({"words": {}, "relations": {"": ["area"], "born": ["area"]}}), encoding="utf-8")
    assert lexicon.read(ck)[4] == {"": {"area"}, "born": {"area"}}
    assert checkpoint.load(ck).rules("auto").relation_words == {"": {"area"}, "born": {"area"}}


def test_lexicon_segments_needs_a_segment_model(tiny, tmp_path, capsys):
    import csv
    import json
    import shutil

    data = tmp_path / "data" / "e2e"
    data.mkdir(parents=True)
    with open(data / "train.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([("mr", "ref"), ("name[Aromi], area[riverside]", "Aromi is in the riverside area.")])
    for kind, rc in (("e2e-pg", 2), ("e2e-seg", 0)):
        shutil.copytree(tiny / kind, tmp_path / kind)
        argv = ["--checkpoint", str(tmp_path / kind), "--data-dir", str(tmp_path / "data"), "--segments", "--relations"]
        assert lexicon.main(argv) == rc, kind
    assert "need a segment-model checkpoint" in capsys.readouterr().err
    written = json.loads((tmp_path / "e2e-seg" / lexicon.FILE).read_text(encoding="utf-8"))
    assert "segments" in written and written["relations"] == {"": []}  # one training reference: under MIN_SUPPORT
    assert lexicon.read(tmp_path / "e2e-seg")[4] == {w: frozenset(a) for w, a in written["relations"].items()}
    assert not (tmp_path / "e2e-pg" / lexicon.FILE).exists() or "segments" not in (tmp_path / "e2e-pg" / lexicon.FILE).read_text()


def test_values_mask_rows_and_switches():
    from segviz.decode import value_rules
    from segviz.decode.rules import _values_mask

    recs = parse_e2e_mr("name[The Low Barn], customer rating[5 out of 5], priceRange[cheap]")
    vocab = Vocab(["low", "high", "located", "cheap", "barn"])
    segs = {"customer rating": {"low": frozenset({"low", "1 out of 5"}), "high": frozenset({"high", "5 out of 5"})},
            "priceRange": {"cheap": frozenset({"cheap"}), "high": frozenset({"high"})}, "": {"located": frozenset()}}  # fmt: skip
    rules = ValueRules(segment_words=segs)
    mask = _values_mask(vocab, [], recs, rules)
    banned = [{w for w in vocab.itos if mask[k, vocab.stoi[w]]} for k in range(4)]
    assert banned == [{"located"}, set(), {"low"}, {"high"}]  # the name's own "low" stays allowed in its segment
    auto = value_rules("auto").__class__(**{**value_rules("auto").__dict__, "segment_words": segs})
    assert auto.values is None and _values_mask(vocab, [], recs, auto) is None
    assert _values_mask(vocab, [], recs, auto, planned=True) is not None
    assert _values_mask(vocab, [], recs, ValueRules(segment_words=segs, values=False)) is None
    assert _values_mask(vocab, [], recs, ValueRules()) is None  # no segment words: nothing to read
    assert value_rules("all").values is True and value_rules("auto-values").values is False


def test_a_forced_plan_keeps_other_values_words_out_of_a_segment(tiny_e2e):
    seg, _ = tiny_e2e
    recs = EXAMPLES["e2e"]["The Copper Kettle (8 slots)"]
    words = {w for w in seg.vocab.itos if w.isalpha()}
    segs = {r.attribute: {w: frozenset({"no such value"}) for w in sorted(words)[::2]} for r in recs}
    rules = ValueRules(segment_words={**segs, "": {w: frozenset() for w in sorted(words)[1::2]}})
    plan = list(range(len(recs), 0, -1))
    out = generate_seg(seg.model, seg.vocab, recs, "rm", beam=2, plan=plan, rules=rules)
    for s, e, j in out.segments:
        said = {t.lower() for t in out.tokens[s:e]}
        own = {t.lower() for t in recs[j - 1].tokens} if j else set()
        banned = set(rules.segment_words[recs[j - 1].attribute] if j else rules.segment_words[""]) - own
        assert not said & banned, (j, out.tokens[s:e])


def test_says_mask_holds_the_words_that_state_each_record():
    from segviz.decode.rules import _says_mask

    recs = parse_e2e_mr("name[Tollgate 3], customer rating[high], familyFriendly[yes]")
    vocab = Vocab(["tollgate", "3", "high", "highly", "out", "5", "friendly", "family", "rating"])
    lex = {"highly": frozenset({"value:customer rating=high"}), "5": frozenset({"attr:customer rating", "tok:5"}),
           "friendly": frozenset({"attr:familyFriendly"}), "rating": frozenset({"attr:customer rating"})}  # fmt: skip
    segs = {"customer rating": {"high": frozenset({"high", "5 out of 5"})}}
    rules = ValueRules(lex, segment_words=segs, stating=True)
    mask = _says_mask(vocab, [], recs, rules)
    said = [{w for w in vocab.itos if mask[k, vocab.stoi[w]]} for k in range(4)]
    assert said == [set(), {"tollgate", "3"}, {"high", "highly"}, {"friendly"}]  # "out of 5", "rating" state no rating
    assert _says_mask(vocab, [], recs, ValueRules(lex, segment_words=segs)) is None  # off by default


def test_a_webnlg_subject_states_none_of_its_records():
    """Session 32: every record of an entity shares its subject, so "a severed wasp has" stated
    ``numberOfPages`` under ``stating`` (and "in singapore ." stated ``Singapore | language |
    English_language``: the dev input of the next test). A word the value shares
    with the subject ("abilene") still states it, and so does a lexicon word of the value
    ("american"), even one of another record's value ("ordway": not taken, docs/history.md)."""
    from segviz.decode.rules import _says_mask
    from segviz.records import parse_webnlg_triples

    recs = parse_webnlg_triples(['A_Severed_Wasp | numberOfPages | "388"', "Abilene_Regional_Airport | cityServed | Abilene,_Texas",
                                 "Jerry_Ordway | nationality | Americans"])  # fmt: skip
    vocab = Vocab(["a", "severed", "wasp", "388", "pages", "abilene", "regional", "airport", "texas", "jerry", "ordway",
                   "americans", "american"])  # fmt: skip
    lex = {"pages": frozenset({"attr:numberOfPages"}), "wasp": frozenset({"tok:wasp"}),
           "ordway": frozenset({"value:nationality=americans"}), "american": frozenset({"value:nationality=americans"})}  # fmt: skip
    mask = _says_mask(vocab, [], recs, ValueRules(lex, stating=True))
    said = [{w for w in vocab.itos if mask[k, vocab.stoi[w]]} for k in range(4)]
    assert said == [set(), {"388"}, {"abilene", "texas"}, {"americans", "american", "ordway"}]


def test_shipped_webnlg_rm_states_every_record_in_its_own_segment():
    """A tune-half dev input (Food/5/Id28) whose +RM text left ``language | English_language`` out
    under ``stating`` before session 32's fix ("… The leader of Singapore is Tony Tan and Halimah
    Yacob is a leader in Singapore."): the segment +RM gave that record said only its subject,
    "singapore". With the shipped rules each record's segment says a word that states its value
    (not the subject's), and the checker finds the text exact."""
    from conftest import ROOT

    from segviz import checkpoint, faithfulness
    from segviz.data import encode
    from segviz.decode.rules import _says_mask
    from segviz.records import parse_webnlg_triples

    ck = checkpoint.load(ROOT / "checkpoints" / "webnlg-seg")
    recs = parse_webnlg_triples(["Singapore | language | English_language", "Beef_kway_teow | country | Singapore",
                                 'Beef_kway_teow | region | "Nationwide in Singapore and Indonesia"',
                                 "Singapore | leaderName | Tony_Tan", "Singapore | leaderName | Halimah_Yacob"])  # fmt: skip
    rules = ck.rules()
    assert rules.stating
    out = generate_seg(ck.model, ck.vocab, recs, "rm", beam=5, rules=rules)
    oov = encode(ck.vocab, recs).oov
    mask = _says_mask(ck.vocab, oov, recs, rules)
    ids = lambda w: ck.vocab.stoi.get(w, len(ck.vocab) + oov.index(w) if w in oov else None)  # noqa: E731
    for s, e, j in out.segments:
        if j:
            assert any(ids(t) is not None and mask[j, ids(t)] for t in out.tokens[s:e]), (j, out.tokens[s:e])
    faith = faithfulness.check("webnlg", recs, out.text)
    assert "English" in out.text and (faith.wrong, faith.repeated, faith.missing) == (0, 0, 0), out.text


def test_literal_states_a_webnlg_value_by_its_own_words_only():
    """Session 36, ``literal``: the lexicon's words of a WebNLG value come from the references it
    was said in, so they hold the entities it came with ("athens" stated ``manager | Gus_Poyet``
    and +RM ended "He is now manager of afc athens fc."). Under ``literal`` a value is stated by
    its own words and the spellings the checker reads as it ("uk", "973", "july"; "gerard" with
    ``spellings``), never by its subject's; an E2E record keeps its ``stating`` row."""
    from segviz.decode.rules import _literal_mask, _says_mask
    from segviz.records import parse_webnlg_triples

    recs = parse_webnlg_triples(["AEK_Athens_F.C. | manager | Gus_Poyet", "Aarhus | country | United_Kingdom",
                                 "Andrews_County_Airport | elevation | 973.0", 'Monument | established | "1907-07-11"',
                                 "France | leaderName | Gérard_Larcher"])  # fmt: skip
    vocab = Vocab(["aek", "athens", "gus", "poyet", "uk", "united", "kingdom", "britain", "aarhus", "973", "973.0",
                   "july", "1907", "11", "gérard", "gerard", "larcher", "france"])  # fmt: skip
    lex = {"athens": frozenset({"tok:poyet"}), "aarhus": frozenset({"value:country=united_kingdom"})}
    on, off = ValueRules(lex, stating=True, spellings=True, literal=True), ValueRules(lex, stating=True, spellings=True)
    words = lambda m: [{w for w in vocab.itos if m[k, vocab.stoi[w]]} for k in range(1, 6)]  # noqa: E731
    assert words(_says_mask(vocab, [], recs, on))[:2] == [{"gus", "poyet", "athens"}, {"united", "kingdom", "aarhus"}]
    assert words(_literal_mask(vocab, [], recs, on, _says_mask(vocab, [], recs, on))) == [
        {"gus", "poyet"}, {"united", "kingdom", "uk", "britain"}, {"973", "973.0"}, {"july", "1907", "11"},
        {"gérard", "gerard", "larcher"}]  # fmt: skip
    assert _literal_mask(vocab, [], recs, off, _says_mask(vocab, [], recs, off)) is None  # off by default
    assert _literal_mask(vocab, [], e2e := parse_e2e_mr("name[Aarhus], area[riverside]"), on, says := _says_mask(vocab, [], e2e, on)).equal(
        says)  # no subject: its stating row  # fmt: skip


def test_literal_counts_a_value_said_before_by_its_distinct_words_only():
    """A value said before its segment needs no word of it there (``search._said_own``), but only
    a word no other entity of the input holds shows that: "university" of "Aarhus University" does
    not say ``affiliation | European_University_Association``, "association" does."""
    from segviz.decode.rules import _distinct_mask, _literal_mask, _says_mask
    from segviz.records import parse_webnlg_triples

    recs = parse_webnlg_triples(["Aarhus_University | affiliation | European_University_Association",
                                 "Aarhus_University | city | Aarhus"])  # fmt: skip
    vocab = Vocab(["aarhus", "university", "european", "association"])
    rules = ValueRules({}, stating=True, literal=True)
    words = lambda m: [{w for w in vocab.itos if m[k, vocab.stoi[w]]} for k in (1, 2)]  # noqa: E731
    literal = _literal_mask(vocab, [], recs, rules, _says_mask(vocab, [], recs, rules))
    assert words(literal) == [{"european", "university", "association"}, {"aarhus"}]
    assert words(_distinct_mask(vocab, [], recs, literal)) == [{"european", "association"}, set()]


def test_literal_rm_segments_say_their_own_value_unless_said_before():
    """A tune-half dev input (SportsTeam/5/Id2): with the shipped rules +RM gave ``manager |
    Gus_Poyet`` the segment "now manager of afc athens fc ." and the checker found the manager
    missing. With ``literal`` each record's segment says a word of its own value, or follows a
    text that had said one already, and the text names the manager."""
    from conftest import ROOT

    from segviz import faithfulness
    from segviz.data import encode
    from segviz.decode.rules import _literal_mask, _says_mask
    from segviz.records import parse_webnlg_triples

    ck = checkpoint.load(ROOT / "checkpoints" / "webnlg-seg")
    recs = parse_webnlg_triples(["AEK_Athens_F.C. | league | Superleague_Greece", "Superleague_Greece | champions | Olympiacos_F.C.",
                                 "AEK_Athens_F.C. | manager | Gus_Poyet", "Gus_Poyet | club | Real_Zaragoza",
                                 "Gus_Poyet | club | Chelsea_F.C."])  # fmt: skip
    rules = dataclasses.replace(ck.rules(), literal=True)
    out = generate_seg(ck.model, ck.vocab, recs, "rm", beam=5, rules=rules)
    oov = encode(ck.vocab, recs).oov
    mask = _literal_mask(ck.vocab, oov, recs, rules, _says_mask(ck.vocab, oov, recs, rules))
    ids = lambda ts: [i for t in ts if (i := ck.vocab.stoi.get(t, len(ck.vocab) + oov.index(t) if t in oov else None)) is not None]  # noqa: E731
    for s, e, j in out.segments:
        if j:
            assert mask[j, ids(out.tokens[s:e])].any() or mask[j, ids(out.tokens[:s])].any(), (j, out.tokens[s:e])
    faith = faithfulness.check("webnlg", recs, out.text)
    assert "Gus Poyet" in out.text and (faith.wrong, faith.repeated, faith.missing) == (0, 0, 0), out.text


def test_outside_a_value_word_inside_a_longer_entity_begun_before_does_not_state_it():
    """Session 37, ``outside``: "texas" said as the end of "Abilene, Texas" does not state
    ``Abilene,_Texas | isPartOf | Texas`` (the checker reads the subject there, and the references
    say "Texas" apart), nor "new" of "Egg Harbor Township, New Jersey" its ``New_Jersey``; the
    value said on its own does, and an entity that begins with the value leads into nothing."""
    from types import SimpleNamespace

    from segviz.decode.search import _inside_longer, _led_in

    v = {w: i for i, w in enumerate(["abilene", ",", "texas", "in", "new", "jersey", "egg", "york", "city", "the", "of"], 10)}
    ids = lambda s: [v[w] for w in s.split()]  # noqa: E731
    longer = {2: [tuple(ids("abilene , texas"))], 3: [tuple(ids("egg , new jersey"))], 4: [tuple(ids("new york city"))]}
    values = {2: ids("texas"), 3: ids("new jersey"), 4: ids("new york")}
    x = SimpleNamespace(outside=_led_in(longer, values), own=values)
    assert x.outside == {2: [(tuple(ids("abilene , texas")), 2)], 3: [(tuple(ids("egg , new jersey")), 2)]}
    assert _inside_longer(x, 2, ids("the city of abilene , texas"))
    assert not _inside_longer(x, 2, ids("abilene , in texas")) and not _inside_longer(x, 2, ids("texas"))
    assert _inside_longer(x, 3, ids("egg , new")) and _inside_longer(x, 3, ids("egg , new jersey"))
    assert not _inside_longer(x, 3, ids("in new jersey")) and not _inside_longer(x, 4, ids("new york"))


def test_outside_rm_says_the_state_apart_from_the_city():
    """A tune-half dev input (Airport/2/Id1): with session 36's rules +RM wrote "… serves the city
    of Abilene, Texas." and gave ``isPartOf | Texas`` the segment ", texas ."; the checker found
    it missing. With ``outside`` the state is said on its own and the checker finds the text exact."""
    from conftest import ROOT

    from segviz import faithfulness
    from segviz.records import parse_webnlg_triples

    ck = checkpoint.load(ROOT / "checkpoints" / "webnlg-seg")
    recs = parse_webnlg_triples(["Abilene_Regional_Airport | cityServed | Abilene,_Texas", "Abilene,_Texas | isPartOf | Texas"])
    faults = lambda out: (lambda f: (f.wrong, f.repeated, f.missing))(faithfulness.check("webnlg", recs, out.text))  # noqa: E731
    rules = dataclasses.replace(ck.rules(), renorm=False, heard=False)  # session 48's renorm and 49's heard each say the state apart here
    before = generate_seg(ck.model, ck.vocab, recs, "rm", beam=5, rules=dataclasses.replace(rules, outside=False))
    after = generate_seg(ck.model, ck.vocab, recs, "rm", beam=5, rules=rules)
    assert faults(before) == (0, 0, 1) and faults(after) == (0, 0, 0), (before.text, after.text)


def test_heads_read_a_value_said_up_to_its_comma_as_said():
    """Session 38, ``heads`` (with ``forms``): the checker reads "washington" of
    ``Washington,_D.C.`` as the value, so "washington dc" says it; *once* then bans saying it again.
    A tune-half dev input (Food/5/Id10): with the shipped rules +RM wrote "… the capital of the us
    is washington dc and the capital city is washington d. C." (repeated); with ``heads`` it says
    the capital once and the checker finds the text exact. "abilene" of "Abilene, Texas", which
    also begins "Abilene Regional Airport", is a form too, but never parts from the airport's name."""
    from conftest import ROOT

    from segviz.decode.rules import _slot_forms
    from segviz.records import parse_webnlg_triples

    ck = checkpoint.load(ROOT / "checkpoints" / "webnlg-seg")
    recs = parse_webnlg_triples(["United_States | capital | Washington,_D.C.", "Abilene_Regional_Airport | cityServed | Abilene,_Texas"])
    ids = lambda w: ck.vocab.stoi[w]  # noqa: E731
    heads, plain = _slot_forms(ck.vocab, [], recs, heads=True), _slot_forms(ck.vocab, [], recs)
    assert heads["Washington,_D.C."][1] == [(ids("washington"),)] and heads["Abilene,_Texas"][1] == [(ids("abilene"),)]
    assert plain["Washington,_D.C."][1] == [] and heads["Abilene_Regional_Airport"][1] == []
    recs = parse_webnlg_triples(["Bacon_Explosion | country | United_States", "United_States | leaderName | Barack_Obama",
                                 "United_States | ethnicGroup | Native_Americans_in_the_United_States",
                                 "United_States | capital | Washington,_D.C.", "United_States | language | English_language"])  # fmt: skip
    faults = lambda out: (lambda f: (f.wrong, f.repeated, f.missing))(faithfulness.check("webnlg", recs, out.text))  # noqa: E731
    rules = dataclasses.replace(ck.rules(), babble=False, renorm=False)  # session 38's: session 45's babble and session 48's renorm say the capital once either way
    before = generate_seg(ck.model, ck.vocab, recs, "rm", beam=5, rules=dataclasses.replace(rules, heads=False))
    after = generate_seg(ck.model, ck.vocab, recs, "rm", beam=5, rules=dataclasses.replace(rules, heads=True))
    assert faults(before) == (0, 1, 0) and faults(after) == (0, 0, 0), (before.text, after.text)
    assert after.text.lower().count("washington") == 1


def _filler_runs(out) -> list[tuple[bool, list[str]]]:
    """(is a filler segment: its record had a segment before, its words) per segment of ``out``."""
    seen, runs = set(), []
    for s, e, j in out.segments:
        runs.append((j in seen, out.tokens[s:e]))
        seen |= {j} - {0, None}
    return runs


def test_brief_fillers_link_or_close_and_never_run_on():
    """Session 37/38, ``brief`` (with ``fillers``): a tune-half dev input (SportsTeam/3/Id11)
    where WebNLG's model, given ``fillers`` alone, strings filler segments together after the last
    record ("... Rome, Italy. They have their they have also of in their."). With ``brief`` a
    filler segment holds one token, never follows another, and a word of one (a link) never ends
    the text: here the text closes with the filler "."; the checker finds both texts exact."""
    from conftest import ROOT

    from segviz.decode.search import BRIEF
    from segviz.records import parse_webnlg_triples

    ck = checkpoint.load(ROOT / "checkpoints" / "webnlg-seg")
    recs = parse_webnlg_triples(['A.S._Roma | fullname | "Associazione Sportiva Roma S.p.A."',
                                 'A.S._Roma | ground | "Rome, Italy"', "A.S._Roma | numberOfMembers | 70634"])  # fmt: skip
    gen = lambda **on: generate_seg(ck.model, ck.vocab, recs, "rm", beam=5, rules=dataclasses.replace(ck.rules(), **on))  # noqa: E731
    loose, brief = gen(fillers=True, brief=False), gen(fillers=True, brief=True)
    assert sum(f for f, _ in _filler_runs(loose)) >= 3 and not loose.text.endswith("Italy.")
    runs = _filler_runs(brief)
    assert all(len(w) <= BRIEF for f, w in runs if f)
    assert not any(a[0] and b[0] for a, b in zip(runs, runs[1:], strict=False))  # no filler after a filler
    assert runs[-1] == (True, ["."]) and brief.text.endswith("Rome, Italy.")
    for out in (loose, brief):
        rep = faithfulness.check("webnlg", recs, out.text)
        assert (rep.wrong, rep.repeated, rep.missing) == (0, 0, 0), out.text


def test_stating_segments_say_their_value_under_a_plan(tiny_e2e):
    from segviz.decode.rules import _says_mask

    seg, _ = tiny_e2e
    recs = EXAMPLES["e2e"]["The Copper Kettle (8 slots)"]
    rules = ValueRules(lexicon.build([_ex(", ".join(r.label for r in recs), " ".join(r.value for r in recs))] * 30),
                       stating=True)  # fmt: skip
    out = generate_seg(seg.model, seg.vocab, recs, "rm", beam=2, plan=list(range(1, len(recs) + 1)), rules=rules)
    from segviz.data import encode

    oov = encode(seg.vocab, recs).oov  # the search's extended ids
    mask = _says_mask(seg.vocab, oov, recs, rules)
    ids = lambda w: seg.vocab.stoi.get(w, len(seg.vocab) + oov.index(w) if w in oov else None)  # noqa: E731
    for s, e, j in out.segments:
        if j and not out.fallback_used:
            assert any(ids(t.lower()) is not None and mask[j, ids(t.lower())] for t in out.tokens[s:e]), (j, out.tokens[s:e])


def test_spelling_twins_read_an_unaccented_word_and_a_possessive_word_as_the_input_word():
    """``spellings``: "gerard" and "nasa's" of the vocabulary spell the input's "gérard" and "nasa";
    a word of no input entity ("it's") and an input word without such a twin map to nothing."""
    from segviz.decode.rules import _entities, spelling_twins
    from segviz.records import parse_webnlg_triples

    recs = parse_webnlg_triples(["France | leaderName | Gérard_Larcher", "Apollo_8 | operator | NASA"])
    vocab = Vocab(["gérard", "gerard", "larcher", "nasa", "nasa's", "it's", "apollo", "8", "france"])
    spelt = spelling_twins(vocab, [], _entities(vocab, [], recs))
    assert {vocab.itos[a]: vocab.itos[b] for a, b in spelt.items()} == {"gerard": "gérard", "nasa's": "nasa"}
    # a word of the input is read as itself: "california's" of the district stays the district's
    recs = parse_webnlg_triples(["Antioch,_California | leaderTitle | California's_11th_State_Assembly_district"])
    vocab = Vocab(["antioch", ",", "california", "california's", "11", "th", "state", "assembly", "district"])
    assert spelling_twins(vocab, [], _entities(vocab, [], recs)) == {}


def test_value_forms_read_a_value_without_its_bracket_or_generic_last_word():
    """``forms``: ``French_language`` may be said as "french" and ``National_Assembly_(Azerbaijan)``
    as "national assembly"; *once* bans the form's first word after it (no other entity begins
    with it), and the form's entry reads the entities that hold it ("Old French Market" is not a
    mention). A form that another entity begins with ("French Guiana") or that two entities of
    the input yield ("japanese" of ``Japanese_people`` and ``Japanese_language``) gets no entry;
    without ``once`` the switch does nothing."""
    from segviz.decode.rules import _function_mask, _value_forms, value_rules
    from segviz.records import parse_webnlg_triples

    words = ["france", "french", "language", "guiana", "old", "market", "azerbaijan", "national", "assembly", "(",
             ")", "japan", "japanese", "people"]  # fmt: skip
    vocab = Vocab(words)
    ids = lambda *ws: tuple(vocab.stoi[w] for w in ws)  # noqa: E731
    func = _function_mask(vocab, [])
    recs = parse_webnlg_triples(["France | language | French_language", "France | landmark | Old_French_Market",
                                 "Azerbaijan | legislature | National_Assembly_(Azerbaijan)"])  # fmt: skip
    forms = _value_forms(vocab, [], recs, value_rules("auto+once+forms"), func)
    assert sorted(forms) == [1, 3]
    (french,) = forms[1]
    assert french[0] == ids("french") and french[1] == 0 and french[2] == [ids("old", "french", "market")]
    assert [e[0] for e in forms[3]] == [ids("national", "assembly")]
    assert _value_forms(vocab, [], recs, value_rules("auto+forms"), func) == {}  # forms reads with once
    assert _value_forms(vocab, [], recs, value_rules("auto+once"), func) == {}
    guiana = parse_webnlg_triples(["France | language | French_language", "France | isPartOf | French_Guiana"])
    assert _value_forms(vocab, [], guiana, value_rules("auto+once+forms"), func) == {}
    both = parse_webnlg_triples(["Japan | ethnicGroup | Japanese_people", "Japan | language | Japanese_language"])
    assert _value_forms(vocab, [], both, value_rules("auto+once+forms"), func) == {}
    # a form is spelt by the value's own words: "paraná", which the checker normalises to "parana"
    vocab = Vocab(["curitiba", "paraná", "parana", "state", "(", ")"])
    accented = parse_webnlg_triples(["Curitiba | isPartOf | Paraná_(state)"])
    forms = _value_forms(vocab, [], accented, value_rules("auto+once+forms"), _function_mask(vocab, []))
    assert [e[0] for e in forms[1]] == [(vocab.stoi["paraná"],)]


def test_months_ban_a_month_no_date_of_the_input_or_of_the_record_holds():
    """``months`` (session 21): the null segment may say only the months of the input's dates,
    a record's segment only its own date's month; a month the input writes in words stays, "may"
    (a verb too) is never banned, and without the switch nothing is."""
    from segviz.decode.rules import _month_ids, _month_mask, value_rules
    from segviz.records import parse_webnlg_triples

    recs = parse_webnlg_triples(["A_B | birthDate | 1827-11-26", "A_B | activeYearsStartDate | 1875-03-04",
                                 "A_B | event | Battle_of_October"])  # fmt: skip
    vocab = Vocab(["november", "nov", "march", "mar", "october", "oct", "may", "june", "sept", "born"])
    rules = value_rules("none+months")
    assert rules.months and value_rules("auto+months").months and not value_rules("auto").months
    mask = _month_mask(vocab, [], recs, rules)
    banned = [{w for w in vocab.itos if mask[k, vocab.stoi[w]]} for k in range(4)]
    assert banned[0] == {"oct", "june", "sept"}  # "october" is a word of the input
    assert banned[1] == {"march", "mar", "oct", "june", "sept"}  # the birth date is in november
    assert banned[2] == {"november", "nov", "oct", "june", "sept"}
    assert banned[3] == {"november", "nov", "march", "mar", "oct", "june", "sept"}  # no date of its own
    assert _month_mask(vocab, [], recs, value_rules("auto")) is None
    assert sorted(_month_ids(vocab, [], recs, rules)) == sorted(vocab.stoi[w] for w in ("oct", "june", "sept"))


def test_doubles_bans_the_word_just_said_unless_the_input_says_it_twice(tiny):
    """``doubles`` (session 22): no word twice in a row ("the name name") unless a subject or
    value of the input says it so ("A Long Long Way"); off, nothing is banned. Both systems'
    outputs keep it, with the relation words hidden (where the tiny models stutter most)."""
    from segviz.decode.rules import doubled, doubled_ok, value_rules
    from segviz.records import parse_webnlg_triples, relation_words

    recs = parse_webnlg_triples(["A_Long_Long_Way | author | Sebastian_Barry", "A_Long_Long_Way | isbnNumber | 0-670-03380-4"])
    vocab = Vocab(["long", "name", "way", "barry"])
    rules = value_rules("auto+doubles")
    ok = doubled_ok(vocab, [], recs, rules)
    assert ok == {vocab.stoi["long"]} and doubled_ok(vocab, [], recs, value_rules("auto")) is None
    name, long = vocab.stoi["name"], vocab.stoi["long"]
    assert doubled([5, name], ok) == [name] and doubled([5, long], ok) == [] and doubled([name], None) == []
    assert doubled([], ok) == []
    seg, pg = checkpoint.load(tiny / "webnlg-seg"), checkpoint.load(tiny / "webnlg-pg")
    for recs in EXAMPLES["webnlg"].values():
        twice = {a for r in recs for a, b in zip(r.tokens, r.tokens[1:], strict=False) if a == b}
        for ck, gen in ((seg, lambda v, r: generate_seg(seg.model, v, r, "rm", beam=2, rules=rules)),
                        (pg, lambda v, r: generate_pg(pg.model, v, r, beam=2, rules=rules))):  # fmt: skip
            toks = [t.lower() for t in gen(ck.vocab.hiding(relation_words(recs)), recs).tokens]
            assert not [a for a, b in zip(toks, toks[1:], strict=False) if a == b and a not in twice], toks


def test_numbers_says_a_number_no_more_often_than_the_input_holds_it(tiny):
    """``numbers`` (session 23): a number is said no more often than the input's records hold it
    (a subject once per record), so a date the model has not seen is not written with one figure
    twice ("24-02-24" of ``2006-02-24``); off, nothing is banned. Both systems keep it."""
    from collections import Counter

    from segviz.decode.rules import number_room, numbers_spent, value_rules
    from segviz.records import number_words, parse_webnlg_triples

    recs = parse_webnlg_triples(
        ["Elliot_See | birthDate | 2006-02-24", "Elliot_See | deathDate | 1874-11-24", "Apollo_12 | operator | NASA"]
    )
    assert number_words(recs) == {"2006": 1, "02": 1, "24": 2, "1874": 1, "11": 1, "12": 1}
    vocab, rules = Vocab(["24", "02", "the"]), value_rules("auto+numbers")
    room = number_room(vocab, ["2006", "1874", "11", "12"], recs, rules)
    assert room == {vocab.stoi["24"]: 2, vocab.stoi["02"]: 1, len(vocab): 1, len(vocab) + 1: 1, len(vocab) + 2: 1, len(vocab) + 3: 1}
    assert number_room(vocab, [], recs, value_rules("auto")) is None
    d24, d02, the = vocab.stoi["24"], vocab.stoi["02"], vocab.stoi["the"]
    assert numbers_spent([d24, the, d02], room) == [d02] and sorted(numbers_spent([d24, d02, d24], room)) == [d24, d02]
    assert numbers_spent([d24, d24, d02], None) == []
    seg, pg = checkpoint.load(tiny / "webnlg-seg"), checkpoint.load(tiny / "webnlg-pg")
    for ck, gen in ((seg, lambda r: generate_seg(seg.model, seg.vocab, r, "rm", beam=2, rules=rules)),
                    (pg, lambda r: generate_pg(pg.model, pg.vocab, r, beam=2, rules=rules))):  # fmt: skip
        said = Counter(t.lower() for t in gen(recs).tokens)
        assert all(said[w] <= n for w, n in number_words(recs).items()), (ck.path, said)


def test_open_says_a_value_outside_its_closed_set_whole(tiny_e2e):
    """``open`` (session 24): an E2E value outside its attribute's closed set ("area[old town]",
    "eatType[wine bar]") is said whole in its segment as an unseen name is, even in lower case;
    off, it is not."""
    from segviz.decode.rules import _phrases, open_value, value_rules
    from segviz.faithfulness.e2e_rules import E2E_VALUES

    seg, pg = tiny_e2e
    recs = parse_e2e_mr("name[The Eagle], eatType[wine bar], area[old town], food[French], near[Riverside Lock]")
    on = dataclasses.replace(value_rules("auto+open"), closed=E2E_VALUES)
    off = dataclasses.replace(value_rules("auto"), closed=E2E_VALUES)
    assert [open_value(r, on) for r in recs] == [False, True, True, False, False]
    assert not any(open_value(r, off) for r in recs)
    vocab = Vocab(["wine", "bar", "old", "town", "riverside", "centre", "city", "french", "pub", "eagle", "lock"])
    must = _phrases(vocab, [], recs, on, values_only=True)
    assert must[2] == [(vocab.stoi["wine"], vocab.stoi["bar"])] and must[3] == [(vocab.stoi["old"], vocab.stoi["town"])]
    assert 2 not in _phrases(vocab, [], recs, off, values_only=True)
    rules = seg.rules("auto+open")
    for out in (generate_seg(seg.model, seg.vocab, recs, "rm", beam=2, rules=rules), generate_pg(pg.model, pg.vocab, recs, beam=2, rules=rules)):
        toks = [t.lower() for t in out.tokens]
        for first, rest in (("wine", "bar"), ("old", "town")):
            assert all(toks[i + 1 : i + 2] == [rest] for i, t in enumerate(toks) if t == first), out.text
    said = generate_seg(seg.model, seg.vocab, recs, "rm", beam=2, rules=rules)
    assert "old town" in said.text.lower() and "wine bar" in said.text.lower(), said.text


def test_an_e2e_value_with_underscores_is_a_name_as_the_encoder_read_it(tiny_e2e):
    """``food[_Thai_]`` crashed the Playground and the Plan editor (``'thai' is not in list``): the
    names rule read an E2E value with its underscores as spaces, the encoder as typed. Both read it
    as typed now (a WebNLG entity's underscores stay spaces), and a name the encoder did not read
    word for word is no phrase."""
    from segviz.decode.rules import _name_words

    assert _name_words("_Thai_", entity=False) == tokenize("_Thai_")
    assert _name_words("The_Quiet_Walrus", entity=True) == ["quiet", "walrus"]
    seg, pg = tiny_e2e
    recs = parse_e2e_mr("name[_Thai_], eatType[wine_bar], food[x_y], area[snake_case_food]")
    for rules in (seg.rules("auto"), seg.rules("auto+open")):
        for c in ("none", "r", "rm"):
            assert generate_seg(seg.model, seg.vocab, recs, c, beam=2, rules=rules).tokens
        assert generate_pg(pg.model, pg.vocab, recs, beam=2, rules=rules).tokens


def test_foreign_never_says_a_training_name_that_the_input_does_not_hold(tiny_e2e):
    """``foreign`` (session 28): a training name (``rules.known``) that no value or subject of the
    input holds is never begun by either system ("portland" of "the portland arms"), or, when the
    input says its first word, never ended ("pub" after "italian"); a name the input holds, inside
    a longer one too, stays; off, nothing is banned. The tiny models say "italian pub",
    "riverside area" and "customer rating", so these stand in for training names here."""
    from segviz.decode.rules import foreign_ends, foreign_names, value_rules

    recs = parse_e2e_mr("name[Eagle Rock], food[Italian], near[Thornbury Abbey]")
    vocab = Vocab(["the", "eagle", "portland", "arms", "italian", "pub", "rock", "café"])
    known = frozenset({"the eagle", "the portland arms", "italian pub", "thornbury abbey", "café sicilia"})
    rules = dataclasses.replace(value_rules("auto+foreign"), known=known)
    table = foreign_names(vocab, ["thornbury", "abbey"], recs, rules)
    ids = vocab.stoi
    assert table == {1: {(): {ids["portland"], ids["café"]}}, 2: {(ids["italian"],): {ids["pub"]}}}  # eagle: held
    assert sorted(foreign_ends([ids["the"]], table)) == sorted([ids["portland"], ids["café"]])
    assert sorted(foreign_ends([ids["italian"]], table)) == sorted([ids["portland"], ids["café"], ids["pub"]])
    assert sorted(foreign_ends([], table)) == sorted([ids["portland"], ids["café"]])
    assert foreign_names(vocab, [], recs, dataclasses.replace(value_rules("auto"), known=known)) is None

    seg, pg = tiny_e2e
    names = {"italian pub", "riverside area", "customer rating"}
    said = {True: [], False: []}
    for recs in EXAMPLES["e2e"].values():
        for on in (True, False):
            rules = dataclasses.replace(value_rules("auto+foreign" if on else "auto"), known=frozenset(names | {"the old mill"}))
            for out in (generate_seg(seg.model, seg.vocab, recs, "rm", beam=2, rules=rules), generate_pg(pg.model, pg.vocab, recs, beam=2, rules=rules)):
                text = " ".join(t.lower() for t in out.tokens)
                said[on] += [n for n in names if n in text] + ["the old mill"] * ("the old mill" in text)
    assert not set(said[True]) & names and {"italian pub", "riverside area", "customer rating"} <= set(said[False])
    assert said[True].count("the old mill") == said[False].count("the old mill") == 2  # held by one input: both systems say it


def test_spent_bans_the_words_of_records_said_before_the_segment_began(tiny_e2e):
    """``spent`` (session 28): under +R / +RM / a plan a segment says no lexicon word whose
    attributes only records said before it began hold ("… and is also very good for the whole
    family" after "it is kid friendly"); a word of the input, or one an attribute of which the
    input lacks, is never banned; off, nothing is."""
    from segviz.decode.rules import spent_groups, spent_ids, value_rules

    recs = parse_e2e_mr("name[Family Kitchen], priceRange[cheap], familyFriendly[yes], customer rating[low]")
    lex = {"family": ["attr:familyFriendly"], "whole": ["attr:familyFriendly"], "kid": ["attr:familyFriendly"],
           "price": ["attr:priceRange"], "low": ["attr:priceRange", "attr:customer rating"],
           "river": ["attr:area"], "the": []}  # fmt: skip
    vocab = Vocab(list(lex))
    rules = dataclasses.replace(value_rules("auto+spent"), lexicon={w: frozenset(fs) for w, fs in lex.items()})
    groups = spent_groups(vocab, [], recs, rules)
    ids = vocab.stoi
    assert sorted((sorted(g), sorted(i)) for g, i in groups) == [([2], [ids["price"]]), ([3], sorted([ids["whole"], ids["kid"]]))]
    assert sorted(spent_ids(groups, frozenset({1, 3}))) == sorted([ids["whole"], ids["kid"]])  # "family": the name's
    assert spent_ids(groups, frozenset({2, 4})) == [ids["price"]] and spent_ids(groups, frozenset()) == []
    assert spent_ids(None, frozenset({1, 2, 3})) == [] and spent_groups(vocab, [], recs, value_rules("auto")) is None

    seg, _ = tiny_e2e  # the tiny model says "customer rating" again and again
    faults = {True: 0, False: 0}
    for recs in EXAMPLES["e2e"].values():
        lex: dict[str, frozenset] = {}
        for r in recs[1:]:  # an attribute's words and its value's
            for w in {*tokenize(r.attribute.lower()), *lexicon.value_words([r])}:
                lex[w] = lex.get(w, frozenset()) | {f"attr:{r.attribute}"}
        held = {t for r in recs for t in r.value_tokens}
        for on, plan in ((True, None), (False, None), (True, list(range(len(recs), 0, -1)))):
            rules = dataclasses.replace(value_rules("auto+spent" if on else "auto"), lexicon=lex)
            out = generate_seg(seg.model, seg.vocab, recs, "rm", beam=2, plan=plan, rules=rules)
            said: set[int] = set()  # records realised before the segment
            for s, e, k in out.segments:
                words = {t.lower() for t in out.tokens[s:e]} & lex.keys() - {t.lower() for t in held}
                owners = [{j for j, r in enumerate(recs, 1) if f"attr:{r.attribute}" in lex[w]} for w in words]
                faults[on] += sum(bool(o) and o <= said - {k} for o in owners)
                said |= {k} if k else set()
    assert faults[True] == 0 and faults[False] > 0, faults


def test_dates_write_a_begun_date_out_whole_and_once():
    """``dates`` (session 30): a date's spellings are the forms WebNLG's references write and its
    checker reads; once a segment says the first word of one, the date is owed whole ("13" goes
    on "th", "november" or "/", never back to "13" for the year); once said, its first words
    are banned (but those another record holds) and no spelling of it is finished a second time. Off, there are no spellings."""
    from segviz.decode.rules import _owed_after, date_phrases, dates_again, dates_open, value_rules
    from segviz.records import date_spellings, parse_webnlg_triples

    forms = date_spellings('"1874-11-13"')
    assert ("1874", "-", "11", "-", "13") in forms and ("november", "13", ",", "1874") in forms
    assert ("13", "th", "of", "november", "1874") in forms and ("11", "/", "13", "/", "1874") in forms
    assert ("march", "4", "th", ",", "1953") in date_spellings("1953-03-04")  # no leading zero, 4 th
    assert ("22", "nd", "november", "1988") in date_spellings("1988-11-22")
    assert ("1", "st", "of", "september", "1969") in date_spellings("1969-09-01")
    assert date_spellings("1891") == [] and date_spellings('"2011-13-40"') == [] and date_spellings("Dallas") == []

    recs = parse_webnlg_triples(["Ataturk_Monument | inaugurationDate | 1874-11-13", "Ataturk_Monument | location | Turkey"])
    vocab = Vocab(["13", "th", "of", "november", "-", "11", "/", ",", "inaugurated", "on", "nov", "oct"])
    dates = date_phrases(vocab, ["1874"], recs, value_rules("auto+dates"))
    assert list(dates) == [1] and date_phrases(vocab, ["1874"], recs, value_rules("auto")) == {}
    ids = lambda *ws: tuple(len(vocab) if w == "1874" else vocab.stoi[w] for w in ws)  # noqa: E731
    forms = dates[1].spellings
    assert all(s in forms for s in (ids("1874", "-", "11", "-", "13"), ids("13", "th", "of", "november", "1874")))
    assert dates[1].starts == set(ids("1874", "november", "13", "11", "nov"))  # not "oct", no word of Turkey's record
    owed = _owed_after((), forms, vocab.stoi["13"])  # "13" begun: what may come next
    assert {rest[0] for rest in owed} == set(ids("th", "november", "/"))
    owed = _owed_after(_owed_after(owed, forms, vocab.stoi["/"]), forms, vocab.stoi["11"])
    assert owed == (ids("/", "1874"),)  # "13 / 11" ends "/ 1874", not "/ 13"
    said = list(ids("on", "november", "13", ",", "1874", "on"))
    assert dates_open(said[:4], dates[1]) == forms and dates_open(said, dates[1]) == [] and dates_open(said, None) == []
    again = dates_again(said + list(ids("november", "13", ",")), dates)  # begin it again: no; finish it: no
    assert set(again) == set(ids("1874", "november", "13", "11", "nov")) and again[-1] == ids("1874")[0]
    assert dates_again(said[:4], dates) == [] and dates_again(said, {}) == []


def test_codes_copies_an_unseen_code_whole():
    """An invented ISBN has no capital, so the names rule did not copy it whole: the shipped
    webnlg-seg wrote "978-0-14-303943" for "978-0-14-303943-3" (a hand-made input, session 33).
    With ``codes`` it is copied whole and the checker finds the text exact."""
    from conftest import ROOT

    from segviz import checkpoint, faithfulness
    from segviz.records import parse_webnlg_triples

    ck = checkpoint.load(ROOT / "checkpoints" / "webnlg-seg")
    assert ck.rules().codes and checkpoint.load(ROOT / "checkpoints" / "webnlg-pg").rules().codes  # shipped since session 33
    recs = parse_webnlg_triples(["1789:_The_Salt_Road | author | J._K._Marlowe", '1789:_The_Salt_Road | numberOfPages | "412"',
                                 '1789:_The_Salt_Road | ISBN_number | "978-0-14-303943-3"'])  # fmt: skip
    without = dataclasses.replace(ck.rules(), codes=False)
    texts = {on: generate_seg(ck.model, ck.vocab, recs, "rm", beam=5, rules=dataclasses.replace(without, codes=on)).text
             for on in (False, True)}  # fmt: skip
    assert "978-0-14-303943-3" not in texts[False], texts[False]
    assert "978-0-14-303943-3" in texts[True] and faithfulness.check("webnlg", recs, texts[True]).errors == 0, texts[True]


def test_begun_an_entity_that_begins_with_the_value_does_not_state_it_once_gone_on():
    """Session 39, ``begun`` (with ``outside``): "ashgabat" said as the first word of the airport's
    name "Ashgabat International Airport" does not state ``location | Ashgabat`` once the text
    goes on with the name; "ashgabat" said on its own does, and so does the value at the end of
    the tokens (the text may still end there)."""
    from types import SimpleNamespace

    from segviz.decode.search import _begun_with, _continued

    v = {w: i for i, w in enumerate(["ashgabat", "international", "airport", "in", "is", "new", "york", "city"], 10)}
    ids = lambda s: [v[w] for w in s.split()]  # noqa: E731
    longer = {2: [tuple(ids("ashgabat international airport"))], 3: [tuple(ids("in new york"))]}
    x = SimpleNamespace(begun=_begun_with(longer, {2: ids("ashgabat"), 3: ids("new york")}), own={2: ids("ashgabat")})
    assert x.begun == {2: [tuple(ids("ashgabat international airport"))]}  # "in new york" does not begin with it
    assert _continued(x, 2, ids("ashgabat international"), 0) and _continued(x, 2, ids("ashgabat international airport is"), 0)
    assert not _continued(x, 2, ids("ashgabat"), 0) and not _continued(x, 2, ids("is in ashgabat"), 2)
    assert not _continued(x, 2, ids("ashgabat airport"), 0)


def test_planned_a_forced_segment_states_bacon_apart_from_bacon_explosion():
    """Session 43, ``planned``: under a forced plan ``outside`` and ``begun`` read every specific
    value, so "bacon" said as the first word of "Bacon Explosion" does not state
    ``mainIngredients | Bacon``; the names rule, which under a plan copies "bacon explosion" whole
    once begun, lets the value end there (``_Input.ends``) and still go on as the name
    (:func:`_going_on`). A tune-half dev input (Food/4/Id11) under its forced random plan
    [4, 3, 1, 2]: without the switch the value is said only in the dish's name (missing); with it
    the text says it apart and the checker finds it exact, with no fallback from the plan."""
    import torch
    from conftest import ROOT

    from segviz.decode.search import _ends, _going_on, _owed_on
    from segviz.records import parse_webnlg_triples

    assert _going_on([7, 1, 2], [(1, 2, 3), (2, 5)]) == {3, 5} and _going_on([1, 2, 3], [(1, 2, 3)]) == set()
    # gone on past the value into the longer name, the rest of the name is owed again (helper review)
    assert _owed_on([7, 1], [(1, 2, 3)], 2) == ((3,),) and _owed_on([7, 1, 2], [(1, 2, 3)], 3) == ()
    assert _owed_on([7, 1], [(1, 2, 3)], 9) == () and _owed_on([7], [(1, 2, 3)], 2) == ()
    func = torch.zeros(10, dtype=torch.bool)
    func[4] = True  # "the": a value's name begins at its first content word, as the names rule reads it
    assert _ends({1: [4, 1], 2: [4], 3: [5]}, {1: [(4, 1, 2)], 2: [(4, 6)]}, func) == {1: [(1,)]}
    ck = checkpoint.load(ROOT / "checkpoints" / "webnlg-seg")
    recs = parse_webnlg_triples(["Bacon_Explosion | country | United_States", "Bacon_Explosion | ingredient | Sausage",
                                 "Bacon_Explosion | region | Kansas_City_metropolitan_area",
                                 "Bacon_Explosion | mainIngredients | Bacon"])  # fmt: skip
    outs = {on: generate_seg(ck.model, ck.vocab, recs, "rm", beam=5, plan=[4, 3, 1, 2],
                             rules=dataclasses.replace(ck.rules(), planned=on)) for on in (False, True)}  # fmt: skip
    faults = {on: (lambda f: (f.wrong, f.repeated, f.missing))(faithfulness.check("webnlg", recs, o.text)) for on, o in outs.items()}
    assert faults == {False: (0, 0, 1), True: (0, 0, 0)}, {on: o.text for on, o in outs.items()}
    assert not outs[True].fallback_used and "bacon explosion are bacon" in outs[True].text.lower()
    assert [k for _, _, k in outs[True].segments if k] == [4, 3, 1, 2]


def test_begun_lets_rm_say_a_city_that_begins_an_unseen_airport_name():
    """Session 43: under +RM the names rule copies an unseen name whole once begun, and ``begun``
    does not count "zorvak" inside "Zorvak International Airport" as ``cityServed | Zorvak``, so
    no +RM text could say the city: it fell back to unconstrained decoding, with a record missing
    and one repeated. ``_Input.ends`` lets the value end the name it begins; the +RM text is exact."""
    from conftest import ROOT

    from segviz.records import parse_webnlg_triples

    ck = checkpoint.load(ROOT / "checkpoints" / "webnlg-seg")
    recs = parse_webnlg_triples(["Zorvak_International_Airport | cityServed | Zorvak", "Zorvak_International_Airport | runwayLength | 2000.0",
                                 "Zorvak_International_Airport | location | Grellind_County"])  # fmt: skip
    out = generate_seg(ck.model, ck.vocab, recs, "rm", beam=5, rules=ck.rules())
    f = faithfulness.check("webnlg", recs, out.text)
    assert not out.fallback_used and (f.wrong, f.repeated, f.missing) == (0, 0, 0), out.text
    assert "city of zorvak" in out.text.lower() and "zorvak international airport" in out.text.lower()


_ASHGABAT = ["Ashgabat_International_Airport | operatingOrganisation | Turkmenistan_Airlines",
             "Ashgabat_International_Airport | location | Ashgabat", "Ashgabat_International_Airport | runwayLength | 2989.0",
             "Ashgabat_International_Airport | elevationAboveTheSeaLevel_(in_metres) | 211",
             'Ashgabat_International_Airport | runwayName | "12R/30L"']  # fmt: skip


def test_resegment_segments_the_free_text_under_the_constraints_or_not_at_all():
    """Session 39, ``resegment``: the search with ``forced`` words says exactly those words and
    gives every record one segment (+RM); the tune half's Airport/5/Id22, whose unconstrained text
    never says "located in Ashgabat", can be so segmented only by giving ``location | Ashgabat``
    the airport's name, which ``begun`` forbids: no segmentation is left, not even one that ends
    the location's segment after "ashgabat" and goes on with the name in the next segment (session
    41, :func:`segviz.decode.search._goes_past`; a beam of 20 found that one before)."""
    from conftest import ROOT

    from segviz.decode.search import SegmentDecoder
    from segviz.decode.seg import _ids
    from segviz.records import parse_webnlg_triples

    ck = checkpoint.load(ROOT / "checkpoints" / "webnlg-seg")
    recs = parse_webnlg_triples(_ASHGABAT)
    free = generate_seg(ck.model, ck.vocab, recs, "none", beam=5, rules=dataclasses.replace(ck.rules(), fullstop=False))  # as _resegmented
    assert "located in ashgabat" not in free.text.lower() and faithfulness.check("webnlg", recs, free.text).missing == 1
    dec = SegmentDecoder(ck.model, ck.vocab)
    _, oov, _ = dec.search_n(recs, "rm", 5, rules=ck.rules())
    forced = _ids(ck.vocab, oov, free.tokens)
    no_begun = dataclasses.replace(ck.rules(), begun=False, heard=False)  # session 49's heard alone forbids it too: the checker reads no Ashgabat there
    loose, _, _ = dec.search_n(recs, "rm", 5, rules=no_begun, forced=forced)
    assert loose and loose[0].tokens == forced
    assert sorted(j for _, _, j in loose[0].segments if j > 0) == [1, 2, 3, 4, 5]
    assert [j for s, _, j in loose[0].segments if s == 0] == [2]  # the airport's name as the location's segment
    for beam in (5, 20):  # session 41: not even a wide beam finds "ashgabat | international airport …"
        strict, _, _ = dec.search_n(recs, "rm", beam, rules=dataclasses.replace(ck.rules(), begun=True), forced=forced)
        assert strict == [], beam


def test_resegment_keeps_the_models_own_text_where_it_meets_the_constraints():
    """Session 39, ``resegment``: the tune half's Airport/4/Id20. +RM alone rewrites the
    unconstrained text into "… menasha and Dale, Wisconsin, which is a part of greenville, in
    wisconsin."; with ``resegment`` the unconstrained text, segmented again under +RM, joins the
    n-best and is the output (each record one segment)."""
    from conftest import ROOT

    from segviz.decode.seg import resegment_note
    from segviz.records import parse_webnlg_triples

    ck = checkpoint.load(ROOT / "checkpoints" / "webnlg-seg")
    recs = parse_webnlg_triples(["Appleton_International_Airport | location | Greenville,_Wisconsin",
                                 "Greenville,_Wisconsin | isPartOf | Menasha_(town),_Wisconsin",
                                 "Greenville,_Wisconsin | isPartOf | Dale,_Wisconsin",
                                 "Appleton_International_Airport | cityServed | Appleton,_Wisconsin"])  # fmt: skip
    on = dataclasses.replace(ck.rules(), resegment=True, begun=True, renorm=False)  # session 39's: with session 48's renorm +RM alone no longer says "which is a part of greenville"
    free = generate_seg(ck.model, ck.vocab, recs, "none", beam=5, rules=on)
    before = generate_seg(ck.model, ck.vocab, recs, "rm", beam=5, rules=dataclasses.replace(on, resegment=False))
    after = generate_seg(ck.model, ck.vocab, recs, "rm", beam=5, rules=on)
    assert before.text != free.text and "which is a part of greenville" in before.text.lower()
    assert after.text == free.text and after.constraints == "rm"
    assert sorted(j for _, _, j in after.segments if j is not None) == [1, 2, 3, 4]
    assert after.scores["resegmented"] is True and "segmented again" in resegment_note(after)
    assert resegment_note(before) is None and "resegmented" not in before.scores


def test_split_a_record_cut_at_L_goes_on_after_one_null_segment_only():
    """Session 40, ``split``: a record whose segment ran to ``L`` tokens may take the segment
    after the next null one (training's reading of a value said in more than ``L`` tokens, as eq. 3
    has no self-transition); a segment that ended before ``L``, another record's segment in
    between, or the switch off leave it a repeat."""
    from types import SimpleNamespace as N

    from segviz.decode.search import _goes_on

    on, off = N(split=True, L=4), N(split=False, L=4)
    after = lambda *segs: N(k=segs[-1][2], segments=[list(s) for s in segs])  # noqa: E731  (h at its null segment's end)
    cut = after((0, 4, 2), (4, 5, 0))  # record 2 ran to L = 4, then a null segment
    assert _goes_on(on, cut, 2) and not _goes_on(off, cut, 2)
    assert not _goes_on(on, after((0, 3, 2), (3, 4, 0)), 2)  # ended before the cut: its own choice
    assert not _goes_on(on, cut, 3) and not _goes_on(on, cut, 0)
    assert not _goes_on(on, after((0, 4, 2), (4, 6, 3)), 2)  # another record's segment in between
    assert not _goes_on(on, after((0, 4, 2), (4, 5, 0), (5, 6, 3), (6, 7, 0)), 2)  # not the segment before
    assert not _goes_on(on, after((0, 1, 0)), 2)


def test_split_says_a_value_longer_than_L_whole_under_rm():
    """Session 40, ``split``: the tune half's University/1/Id2, a campus address of 20 tokens. Its
    unconstrained text says it whole in two segments of the record around a null ","; +RM without
    ``split`` cuts it at ``L`` (and ended "… in the united states." before ``strangers``; with
    ``alien``, session 46, a null segment copies the rest); with it, +RM says it whole, one record
    in two segments, and the checker finds the text exact."""
    from conftest import ROOT

    from segviz.records import parse_webnlg_triples

    ck = checkpoint.load(ROOT / "checkpoints" / "webnlg-seg")
    recs = parse_webnlg_triples(['Acharya_Institute_of_Technology | campus | "In Soldevanahalli, Acharya Dr. Sarvapalli '
                                 'Radhakrishnan Road, Hessarghatta Main Road, Bangalore – 560090."'])  # fmt: skip
    rules = ck.rules(ck.default_rules.replace("+alien", ""))  # session 46's alien lets the null segment copy on
    texts = {on: generate_seg(ck.model, ck.vocab, recs, "rm", beam=5, rules=dataclasses.replace(rules, split=on))
             for on in (False, True)}  # fmt: skip
    assert "560090" not in texts[False].text  # cut at L (until session 44's ``strangers`` it went on "… in the united states")
    assert texts[True].text.endswith("Hessarghatta Main Road, Bangalore – 560090."), texts[True].text
    assert [j for _, _, j in texts[True].segments] == [1, None, 1, None]
    assert texts[True].segments[0][1] - texts[True].segments[0][0] == ck.model.cfg.max_seg_len
    assert faithfulness.check("webnlg", recs, texts[True].text).errors == 0


def test_hanging_a_segment_does_not_end_on_a_function_word_inside_its_value():
    """Session 40, ``hanging``: a segment that ends with the first words of its record's value,
    the last a function word ("… style of tudor and" of "Tudor and Jacabian"), may not end there;
    the whole value, the value's first word alone, or words of the segment before it may."""
    from types import SimpleNamespace as N

    import torch

    from segviz.decode.search import _hangs

    tudor, and_, jacabian, style, of = 10, 11, 12, 13, 14
    func = torch.zeros(20, dtype=torch.bool)
    func[[and_, of]] = True
    x = N(values={1: [tudor, and_, jacabian]}, func_all=func)
    seg = lambda *ws: N(k=1, tokens=[99, *ws], seg_len=len(ws))  # noqa: E731  (99: the segment before)
    assert _hangs(x, seg(style, of, tudor, and_))
    assert not _hangs(x, seg(style, of, tudor, and_, jacabian)) and not _hangs(x, seg(style, of, tudor))
    assert not _hangs(x, seg(style, of)) and not _hangs(x, N(k=2, tokens=[tudor, and_], seg_len=2))
    assert not _hangs(x, N(k=1, tokens=[tudor, and_], seg_len=1))  # "tudor" was the segment before's


def test_a_text_the_length_budget_ends_ends_only_where_eos_could():
    """Session 41 (a review's finding): a hypothesis that spends the length budget is finished only
    where ``<eos>`` could come: not while its record's segment has said nothing (content rule)
    nor while a name is owed. Before, "the eagle is a moderately" was an +R output at
    ``max_len`` 6, its ``priceRange`` segment saying nothing but "moderately"'s lead-in."""
    from conftest import ROOT

    from segviz.data import EOS_ID
    from segviz.decode.search import SegmentDecoder
    from segviz.records import parse_e2e_mr

    ck = checkpoint.load(ROOT / "checkpoints" / "e2e-seg")
    dec = SegmentDecoder(ck.model, ck.vocab)
    recs = parse_e2e_mr("name[The Eagle], eatType[coffee shop], food[French], priceRange[moderate], "
                        "area[riverside], familyFriendly[yes], near[Burger King]")  # fmt: skip
    cut = 0
    for level, max_len in [("r", n) for n in range(4, 13)] + [("rm", n) for n in (12, 20, 28)]:
        ranked, _, _ = dec.search_n(recs, level, 5, max_len=max_len, rules=ck.rules(), n=5)
        for h in ranked:
            if h.tokens[-1] != EOS_ID:  # ended by the budget
                cut += 1
                assert len(h.tokens) == max_len and (h.content or h.filler or h.k <= 0), (level, max_len, h.segments)
    assert cut > 0  # the budget did end some of them
