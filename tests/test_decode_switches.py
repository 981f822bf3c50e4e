"""The named decoding switches of issue 11 (docs/design.md §6): ``+fillers`` and ``+paraphrases``,
and the ``preset+rule-rule`` syntax of :func:`segviz.decode.value_rules`."""

from __future__ import annotations

import argparse
import dataclasses
import math
from pathlib import Path

import pytest
import torch

from segviz import checkpoint, decode, faithfulness
from segviz.data import Vocab
from segviz.decode import is_function_word, parse_value_rules, value_rules
from segviz.decode.rules import _said_ids
from segviz.examples import EXAMPLES
from segviz.records import parse_e2e_mr

ROOT = Path(__file__).resolve().parent.parent
E2E_SEG = ROOT / "checkpoints" / "e2e-seg"


def test_value_rules_presets_and_switches():
    lex = {"cheap": frozenset({"attr:priceRange"})}
    assert value_rules("none", lex) is None
    auto = value_rules("auto", lex)
    assert (auto.names, auto.absent, auto.own, auto.fillers, auto.paraphrases) == (True, None, None, False, False)
    r = value_rules("auto+fillers+paraphrases-names", lex)
    assert (r.names, r.absent, r.own, r.fillers, r.paraphrases) == (False, None, None, True, True)
    assert auto.brief is False and value_rules("auto+fillers+brief", lex).brief is True
    bare = value_rules("none+fillers", lex)
    assert (bare.names, bare.absent, bare.own, bare.fillers) == (False, False, False, True)
    assert value_rules("all-names-absent-own-values") is None  # nothing left on: the paper's decoding
    assert value_rules("all-names-absent-own").values is True


@pytest.mark.parametrize("bad", ["bogus", "auto+bogus", "auto+", "+fillers", ""])
def test_value_rules_rejects_unknown_names(bad):
    with pytest.raises(ValueError, match="value rules must be one of"):
        value_rules(bad)
    with pytest.raises(argparse.ArgumentTypeError):
        parse_value_rules(bad)
    assert parse_value_rules("auto+fillers") == "auto+fillers"


def test_said_ids_skip_negations_and_other_values():
    vocab = Vocab(["priced", "serving", "not", "cheap", "family", "friendly"])
    records = parse_e2e_mr("name[Cheap Eats], priceRange[moderate], familyFriendly[no]")
    lex = {
        "priced": frozenset({"attr:priceRange", "value:priceRange=moderate"}),
        "serving": frozenset({"attr:priceRange"}),  # an attribute's word alone says no value
        "cheap": frozenset({"value:priceRange=moderate"}),  # a word of the name: never a paraphrase
        "not": frozenset({"attr:familyFriendly", "value:familyFriendly=no"}),  # a negation: never
        "friendly": frozenset({"attr:familyFriendly"}),  # a yes / no value: its attribute's words
    }
    rules = value_rules("none+paraphrases", lex)
    said = _said_ids(vocab, [], records, rules)
    ids = {w: vocab.stoi[w] for w in ("priced", "not", "cheap", "friendly")}
    assert said[2] == {ids["priced"]}
    assert said[3] == {ids["friendly"]}
    assert said[1] == frozenset()
    assert _said_ids(vocab, [], records, value_rules("auto", lex)) == {}


def test_a_one_word_value_of_one_attribute_counts_as_said():
    """"a cheap coffee shop" states ``priceRange[cheap]`` wherever it is said ("cheap" is known of
    prices only); "low" rates prices and customers alike, so ``customer rating[low]`` needs its
    own segment; a word that is also another record's ("riverside" of "Riverside Mews") never."""
    vocab = Vocab(["cheap", "low", "riverside", "less"])
    lex = {"cheap": frozenset({"attr:priceRange"}), "low": frozenset({"attr:priceRange", "attr:customer rating"}),
           "riverside": frozenset({"attr:area"}), "less": frozenset({"attr:priceRange"})}  # fmt: skip
    ids = {w: vocab.stoi[w] for w in lex}
    rules = value_rules("none+paraphrases", lex)
    said = _said_ids(vocab, [], parse_e2e_mr("name[X], priceRange[cheap], customer rating[low], area[riverside]"), rules)
    assert said[2] == {ids["cheap"]} and said[3] == frozenset() and said[4] == {ids["riverside"]}
    said = _said_ids(vocab, [], parse_e2e_mr("name[X], area[riverside], near[Riverside Mews]"), rules)
    assert said[2] == frozenset()
    said = _said_ids(vocab, [], parse_e2e_mr("name[X], priceRange[less than £20]"), rules)
    assert said[2] == frozenset()  # one word of a longer value says nothing by itself
    assert _said_ids(vocab, [], parse_e2e_mr("name[X], priceRange[cheap]"), value_rules("auto", lex)) == {}


@pytest.fixture(scope="module")
def e2e_seg():
    if not E2E_SEG.exists():
        pytest.skip("shipped checkpoint missing")
    torch.set_num_threads(1)
    return checkpoint.load(E2E_SEG)


def _segments(res):
    return [(j, res.tokens[s:e]) for s, e, j in res.segments]


def test_fillers_let_plus_r_end_like_the_free_text(e2e_seg):
    """+R forbade the model's habit of closing with a segment of an already said record
    ("... 5 out of 5" [name: "."]): with ``fillers`` such a segment may say function words and
    punctuation only, and +R keeps the free text here."""
    records = parse_e2e_mr(  # a dev input where session 24's weights do so (session 9's: food[Chinese])
        "name[Browns Cambridge], eatType[coffee shop], food[English], customer rating[5 out of 5], "
        "area[city centre], familyFriendly[yes], near[Crowne Plaza Hotel]"
    )
    gen = lambda c, r: decode.generate_seg(e2e_seg.model, e2e_seg.vocab, records, c, rules=e2e_seg.rules(r))  # noqa: E731
    free, plain, filled = gen("none", "auto"), gen("r", "auto"), gen("r", "auto+fillers")
    assert not plain.text.endswith(".")  # the paper's +R drops the final period
    assert filled.text == free.text and filled.text.endswith(".")
    seen = set()
    for j, words in _segments(filled):
        if j in seen:  # a realised record again: a filler segment
            assert all(is_function_word(w) for w in words), words
        seen.add(j)
    assert len(seen) < len(filled.segments)  # there was one
    reals = [j for j, _ in _segments(plain) if j]
    assert len(reals) == len(set(reals))  # without fillers no record opens two segments


def test_paraphrases_stop_plus_rm_repeating_a_price(e2e_seg):
    """"moderately priced coffee shop" said priceRange inside eatType's segment; +RM asked for it
    again ("... and is in the moderate price range"). With ``paraphrases`` it counts as said."""
    records = parse_e2e_mr(  # a dev input where session 24's weights do so (session 9's: The Lantern Fish)
        "name[Cotto], eatType[coffee shop], food[English], priceRange[moderate], "
        "customer rating[1 out of 5], area[city centre], near[The Portland Arms]"
    )
    out = {}
    for name in ("auto", "auto+paraphrases", "auto+fillers+paraphrases"):
        res = decode.generate_seg(e2e_seg.model, e2e_seg.vocab, records, "rm", rules=e2e_seg.rules(name))
        out[name] = (res.text, faithfulness.check("e2e", records, res.text))
    for name in ("auto+paraphrases", "auto+fillers+paraphrases"):
        text, rep = out[name]
        assert "moderately priced" in text and "moderate price range" not in text
        assert (rep.wrong, rep.repeated, rep.missing) == (0, 0, 0)
    text, rep = out["auto"]
    assert "moderately priced" in text and "moderate price range" in text and rep.repeated == 1


def _result(records, pieces):
    """A GenerationResult spelling ``pieces`` [(text, record 1..K | None)] (no attention)."""
    from segviz.records import tokenize
    from segviz.result import GenerationResult

    tokens, segments = [], []
    for text, k in pieces:
        toks = tokenize(text)
        segments.append((len(tokens), len(tokens) + len(toks), k))
        tokens += toks
    return GenerationResult("seg", [], tokens, " ".join(t for t, _ in pieces), segments, [], [], [])


def test_rerank_takes_the_first_candidate_with_fewest_faults():
    from segviz.rerank import faults, rerank

    records = parse_e2e_mr("name[The Eagle], eatType[pub], priceRange[cheap]")
    repeated = _result(records, [("The Eagle is a cheap pub", 1), ("that is cheap .", 3)])  # name's segment says 2, 3
    wrong_seg = _result(records, [("The Eagle", 1), ("is a cheap", 2), ("pub .", 3)])  # each segment off
    good = _result(records, [("The Eagle", 1), ("is a", None), ("pub", 2), ("with cheap food .", 3)])
    also_good = _result(records, [("The Eagle", 1), ("is a pub", 2), ("with cheap prices .", 3)])
    assert [faults("e2e", records, c) for c in (repeated, good, also_good)] == [1, 0, 0]
    assert faults("e2e", records, wrong_seg) == 2  # two segments saying another record's value
    best = rerank("e2e", records, [repeated, wrong_seg, good, also_good])
    assert best is good  # fewest faults; the model's order breaks the tie
    assert (best.scores["rerank_rank"], best.scores["rerank_faults"], best.scores["rerank_faults_before"]) == (2, 0, 1)
    assert rerank("e2e", records, [also_good, good]) is also_good
    with pytest.raises(ValueError):
        rerank("e2e", records, [])


RELATIONS = {"": frozenset({"author", "OCLC_number", "birthPlace"}), "oclc": frozenset({"OCLC_number"}),
             "born": frozenset({"birthPlace", "birthDate"}), "written": frozenset({"author"})}  # fmt: skip


def test_relation_faults_count_record_segments_that_say_another_relation():
    """``relations``: a record segment saying a word that only other relations' segments say in
    training is a fault; value words of the input, null segments and unjudged attributes are not."""
    from segviz.records import parse_webnlg_triples
    from segviz.rerank import relation_faults

    records = parse_webnlg_triples(["Wizard_and_Glass | author | Diane_Duane", "Wizard_and_Glass | OCLC_number | 1234",
                                    "Diane_Duane | genre | Fantasy"])  # fmt: skip
    wrong = _result(records, [("Wizard and Glass", None), ("'s oclc number was Diane Duane", 1),
                              ("with the oclc number 1234", 2), ("; she is born in fantasy .", 3)])  # fmt: skip
    right = _result(records, [("Wizard and Glass", None), ("was written by Diane Duane", 1),
                              ("with the oclc number 1234", 2), ("; she writes fantasy .", 3)])  # fmt: skip
    assert relation_faults(records, wrong, RELATIONS) == 1  # author's "oclc"; genre is not judged
    assert relation_faults(records, right, RELATIONS) == 0
    assert relation_faults(records, _result(records, [("the oclc number", None)]), RELATIONS) == 0  # a null segment
    named = parse_webnlg_triples(["Oclc_Press | author | Diane_Duane"])  # "oclc" is the input's own word here
    assert relation_faults(named, _result(named, [("Oclc Press was written by Diane Duane", 1)]), RELATIONS) == 0
    lead_in = _result(records, [("Wizard and Glass has the oclc number 1234 and the oclc number was", 2),
                                ("Diane Duane .", 1)])  # fmt: skip
    assert relation_faults(records, lead_in, RELATIONS) == 1  # the words that lead into author's value
    after = _result(records, [("Wizard and Glass was written by Diane Duane , whose oclc", 1), ("number is 1234 .", 2)])
    assert relation_faults(records, after, RELATIONS) == 1  # after the value, inside author's segment
    assert relation_faults(records, wrong, {}) == 0  # no relation words: nothing judged
    dated = parse_webnlg_triples(['Neil_Armstrong | birthDate | "1930-08-05"', "Neil_Armstrong | dateOfRetirement | 1971"])
    month = {"": frozenset({"birthDate", "dateOfRetirement"}), "august": frozenset({"dateOfRetirement"})}
    born = _result(dated, [("Neil Armstrong was born on August 5 , 1930 ,", 1), ("and retired in 1971 .", 2)])
    assert relation_faults(dated, born, month) == 0  # "august" says the date's own month


def test_lead_ins_stop_at_entities_punctuation_and_and():
    from segviz.records import parse_webnlg_triples, tokenize
    from segviz.rerank import _lead_ins

    records = parse_webnlg_triples(["Alan_Bean | was a crew member of | Apollo_12", "Alan_Bean | birthPlace | Wheeler,_Texas",
                                    "Alan_Bean | status | \"Retired\""])  # fmt: skip
    tokens = tokenize("Alan Bean, who was born in Apollo 12 and then served , was born in Wheeler, Texas .")
    assert _lead_ins(records, tokens) == {1: {"who", "was", "born", "in"}, 2: {"was", "born", "in"}}  # "Retired" unsaid
    tokens = tokenize("Of all the many crew members of the famous Apollo 12")
    assert _lead_ins(records, tokens) == {1: {"crew", "members", "of", "the", "famous", "many"}}  # LEAD_IN = 6 words
    sauce = parse_webnlg_triples(["Arrabbiata_sauce | region | Rome", "Arrabbiata_sauce | country | Italy"])
    text = tokenize("Arrabbiata sauce comes from the Rome region of Italy .")
    assert _lead_ins(sauce, text) == {1: {"comes", "from", "the"}}  # "region of" may be Rome's: after another entity
    rome = parse_webnlg_triples(["Rome | country | Italy"])
    assert _lead_ins(rome, text) == {1: {"region", "of"}}  # after the record's own subject: its relation's words
    capital = parse_webnlg_triples(["Italy | capital | Rome", "Rome_Ciampino_Airport | operator | ENAV"])
    text = tokenize("The operator of Rome Ciampino Airport is ENAV ; the capital of Italy is Rome .")
    assert _lead_ins(capital, text)[1] == {"is"}  # not "The operator of": that Rome is the airport's
    assert _lead_ins(capital, tokenize("The heart of Italy ? Rome !")) == {}  # "?" stops it: then Italy, not the subject


def test_relations_switch_reranks_by_relation_faults():
    from segviz.decode.seg import _reranked
    from segviz.records import parse_webnlg_triples
    from segviz.rerank import guided_choice

    records = parse_webnlg_triples(["Wizard_and_Glass | author | Diane_Duane", "Wizard_and_Glass | OCLC_number | 1234"])
    wrong = _result(records, [("Wizard and Glass 's oclc number was Diane Duane", 1), ("and 1234 .", 2)])
    right = _result(records, [("Wizard and Glass was written by Diane Duane", 1), ("and has the oclc number 1234 .", 2)])
    rules = dataclasses.replace(value_rules("auto+rerank"), dataset="webnlg", relation_words=RELATIONS)
    assert _reranked(rules, records, [wrong, right]) is wrong  # the switch off: the checker finds both exact
    best = _reranked(dataclasses.replace(rules, relations=True), records, [wrong, right])
    assert best is right and (best.scores["rerank_relations"], best.scores["rerank_relations_before"]) == (0, 1)
    assert guided_choice(best) == ("Candidate 2 of the beam's candidates: 0 faults by the checker (the model's first: 0); "
                                   "of the fewest faults, then the fewest values said with another relation's words "
                                   "(0; the model's first: 1), the first in the model's order.")  # fmt: skip
    missing = _result(records, [("Wizard and Glass was written by Diane Duane .", 1)])  # a checker fault: 1234 unsaid
    assert _reranked(dataclasses.replace(rules, relations=True), records, [missing, wrong]) is wrong  # checker first
    e2e = dataclasses.replace(rules, relations=True, relation_words={})  # E2E lexicons have no relation words
    fresh = [dataclasses.replace(c, scores={}) for c in (wrong, right)]
    assert _reranked(e2e, records, fresh) is fresh[0] and "rerank_relations" not in fresh[0].scores
    assert value_rules("auto+relations").relations is True and value_rules("auto").relations is False


def test_widen_searches_again_only_when_every_candidate_has_a_fault():
    """``+rerank+widen``: a faultless n-best list is never widened; one where every candidate has a
    fault gets the wider search's candidates after its own, and the checker picks among all."""
    from segviz.decode.seg import _reranked

    records = parse_e2e_mr("name[The Eagle], eatType[pub], priceRange[cheap]")
    repeated = _result(records, [("The Eagle is a cheap pub", 1), ("that is cheap .", 3)])
    good = _result(records, [("The Eagle", 1), ("is a pub", 2), ("with cheap prices .", 3)])
    calls = []

    def wider():
        calls.append(1)
        return [repeated, good]  # the wider beam finds the first list's text again, and a clean one

    rules = dataclasses.replace(value_rules("auto+rerank+widen"), dataset="e2e")
    assert _reranked(rules, records, [good], wider) is good and calls == []
    best = _reranked(rules, records, [repeated], wider)
    assert best is good and calls == [1]
    assert (best.scores["rerank_rank"], best.scores["rerank_widened"]) == (1, 2)  # the repeat dropped
    no_widen = dataclasses.replace(rules, widen=False)
    assert _reranked(no_widen, records, [repeated], wider) is repeated and calls == [1]


def test_word_edits_count_the_words_inserted_deleted_or_replaced():
    """Levenshtein over words, case aside: what ``close`` minimises. The final stops are set apart:
    a text that lacks the own text's stop is one edit farther, wherever the words are added
    (before the stop, a clause at the end, a new sentence after it: session 19's measure was one
    edit nearer without the stop in the last case)."""
    from segviz.rerank import word_edits

    own = "the eagle is a pub .".split()
    assert word_edits(own, own) == 0 and word_edits("The EAGLE is a pub .".split(), own) == 0
    assert word_edits("the eagle is a cheap pub .".split(), own) == 1  # one inserted
    assert word_edits("the eagle was a pub .".split(), own) == 1  # one replaced
    assert word_edits("the eagle is a pub".split(), own) == 1  # the stop missing
    assert word_edits("the eagle is a pub !".split(), own) == 0  # another stop: a stop
    assert word_edits([], own) == 6 and word_edits(own, []) == 5  # 5 words; the empty text lacks the stop
    inside = "the eagle is a cheap pub .".split()
    assert word_edits(inside, own) == 1 < word_edits(inside[:-1], own) == 2
    end = "the eagle is a pub and is cheap .".split()
    assert word_edits(end, own) == 3 < word_edits(end[:-1], own) == 4
    new = "the eagle is a pub . it is cheap .".split()
    assert word_edits(new, own) == 4 < word_edits(new[:-1], own) == 5
    assert word_edits(new[:-1], own[:-1]) == word_edits(new, own[:-1]) == 4  # own without a stop: no penalty


def test_close_picks_of_the_faultless_candidates_the_one_nearest_the_own_text():
    """``+close``: the wider search joins even when the first list has a faultless candidate, and
    of those with the fewest faults the one nearest ``near`` wins (the model's order breaks ties);
    without ``near`` the widen rule and the pick are as before."""
    from segviz.decode.seg import _reranked

    records = parse_e2e_mr("name[The Eagle], eatType[pub], priceRange[cheap]")
    own = _result(records, [("The Eagle", 1), ("is a pub .", 2)])  # the price left out
    far = _result(records, [("The Eagle", 1), ("serves cheap food", 3), ("in a pub .", 2)])
    near = _result(records, [("The Eagle", 1), ("is a pub", 2), ("with cheap food .", 3)])
    repeated = _result(records, [("The Eagle is a pub", 1), ("that is a pub .", 2)])
    calls = []

    def wider():
        calls.append(1)
        return [far, near]

    rules = dataclasses.replace(value_rules("auto+rerank+widen+free+keep+close"), dataset="e2e")
    best = _reranked(rules, records, [repeated, far], wider, own.tokens)
    assert best is near and calls == [1] and best.scores["rerank_rank"] == 2
    calls.clear()
    assert _reranked(rules, records, [repeated, far], wider) is far and calls == []  # no own text: as widen
    assert _reranked(rules, records, [far, near], None, own.tokens) is near  # not the model's first
    assert _reranked(rules, records, [near, far], None, far.tokens) is far
    twin = _result(records, [("The Eagle", 1), ("is a pub", 2), ("with cheap food .", 3)])
    assert _reranked(rules, records, [twin, near], None, own.tokens) is twin  # a tie: the model's order
    no_widen = dataclasses.replace(rules, widen=False)
    assert _reranked(no_widen, records, [repeated, far], wider, own.tokens) is far and calls == []


def test_close_runs_the_wider_search_only_where_the_free_text_has_a_fault(monkeypatch):
    """``+rerank+widen+free+keep+close`` through ``generate_seg``: an exact free text is the output
    (one search); one that leaves a record out brings the constrained search and always the wider
    one, though the first list is faultless, and the pick nearest the free text; under a plan the
    free text is not decoded and a faultless list is not widened."""
    from segviz.decode import seg as seg_decode

    records = parse_e2e_mr("name[The Eagle], eatType[pub], priceRange[cheap]")
    exact = _result(records, [("The Eagle", 1), ("is a pub", 2), ("with cheap prices .", 3)])
    missing = _result(records, [("The Eagle", 1), ("is a pub .", 2)])
    far = _result(records, [("The Eagle", 1), ("serves cheap food", 3), ("in a pub .", 2)])
    near = _result(records, [("The Eagle", 1), ("is a pub", 2), ("with cheap food .", 3)])
    calls, lists = [], {}

    def nbest(model, vocab, recs, constraints, beam, n, *, plan=None, system="seg", rules=None, **options):
        calls.append((constraints, beam, n, plan))
        out = lists.get((constraints, beam), [exact])
        return [dataclasses.replace(c, constraints=constraints) for c in out]

    monkeypatch.setattr(seg_decode, "generate_seg_nbest", nbest)
    rules = dataclasses.replace(value_rules("auto+rerank+widen+free+keep+close"), dataset="e2e")
    assert rules.close and not seg_decode._unguided(rules).close
    seg_decode.generate_seg(None, None, records, "rm", 5, rules=rules)
    assert calls == [("none", 5, 1, None)]
    calls.clear()
    lists.update({("none", 5): [missing], ("rm", 5): [far], ("rm", 20): [far, near]})
    res = seg_decode.generate_seg(None, None, records, "rm", 5, rules=rules)
    assert calls == [("none", 5, 1, None), ("rm", 5, 5, None), ("rm", 20, 20, None)]
    assert res.text == near.text and res.scores["rerank_widened"] == 2
    calls.clear()
    no_close = dataclasses.replace(rules, close=False)  # the first list is faultless: no wider search
    assert seg_decode.generate_seg(None, None, records, "rm", 5, rules=no_close).text == far.text
    assert calls == [("none", 5, 1, None), ("rm", 5, 5, None)]
    calls.clear()
    lists[("rm", 5)] = [far]
    seg_decode.generate_seg(None, None, records, "rm", 5, plan=[1, 3, 2], rules=rules)
    assert calls == [("rm", 5, 5, [1, 3, 2])]


def test_guided_choice_says_how_the_checker_chose():
    """The Playground's line under a checker-guided output, from the result's ``rerank_*`` scores."""
    from segviz.rerank import guided_choice, rerank

    records = parse_e2e_mr("name[The Eagle], eatType[pub], priceRange[cheap]")
    own = _result(records, [("The Eagle", 1), ("is a pub .", 2)])
    far = _result(records, [("The Eagle", 1), ("serves cheap food", 3), ("in a pub .", 2)])
    near = _result(records, [("The Eagle", 1), ("is a pub", 2), ("with cheap food .", 3)])
    repeated = _result(records, [("The Eagle is a pub", 1), ("that is a pub .", 2)])
    assert guided_choice(own) is None  # no checker chose it
    kept = dataclasses.replace(own, scores={"rerank_free": True})
    assert guided_choice(kept) == "The model's own unconstrained text: the checker finds that it states every record."
    best = rerank("e2e", records, [repeated, far, near], own.tokens)
    # "the eagle is a pub with cheap food ." from "the eagle is a pub .": 3 words inserted (far: 4)
    assert best is near and best.scores["rerank_edits"] == 3
    assert guided_choice(best) == (
        "Candidate 3 of the beam's candidates: 0 faults by the checker (the model's first: 2); "
        "of the fewest faults, the one nearest the model's own unconstrained text (3 word edits from it), not the "
        "first in the model's order."  # session 25: "nearest the model's own text" read as the model's first
    )
    first = dataclasses.replace(best, scores={**best.scores, "rerank_rank": 0})
    assert guided_choice(first).endswith("the one nearest the model's own unconstrained text (3 word edits from it).")
    best.scores["rerank_widened"] = 22
    assert guided_choice(best).startswith("Candidate 3 of 22 candidates of the beam and a four times wider one: ")
    plain = rerank("e2e", records, [repeated, far, near])
    assert "rerank_edits" not in plain.scores and guided_choice(plain).endswith("the first in the model's order.")


def test_free_keeps_an_exact_free_text_and_otherwise_none():
    """``+rerank+free``: the unconstrained output, when the record checker finds it exact (its
    segments aside), labelled with the constraints asked and marked; None (the constrained pick
    decides) when it has a record error."""
    from segviz.decode.seg import _free_pick

    records = parse_e2e_mr("name[The Eagle], eatType[pub], priceRange[cheap]")
    free_good = _result(records, [("The Eagle", 1), ("is a pub", 2), ("with cheap prices .", 3)])
    free_bad = _result(records, [("The Eagle", 1), ("is a pub .", 2)])  # the price left out
    seg_fault = _result(records, [("The Eagle", 1), ("is a cheap", 2), ("pub .", 3)])  # segments off, text exact
    rules = dataclasses.replace(value_rules("auto+rerank+free"), dataset="e2e")
    kept = _free_pick(rules, records, free_good, "rm")
    assert kept.text == free_good.text and kept.constraints == "rm" and kept.scores["rerank_free"] is True
    assert free_good.constraints is None and "rerank_free" not in free_good.scores  # a copy is marked
    assert _free_pick(rules, records, free_bad, "rm") is None
    assert _free_pick(rules, records, seg_fault, "rm").text == seg_fault.text


def test_generate_seg_decodes_the_free_list_only_when_free_applies(monkeypatch):
    """Which searches ``generate_seg`` runs: one without ``rerank``; with ``+rerank+free`` the
    free one first (at beam 1 too, without the caller's content rule) and the constrained one
    only when the free output is not exact; never the free one under a plan or with "none"."""
    from segviz.decode import seg as seg_decode

    records = parse_e2e_mr("name[The Eagle], eatType[pub], priceRange[cheap]")
    exact = _result(records, [("The Eagle", 1), ("is a pub", 2), ("with cheap prices .", 3)])
    missing = _result(records, [("The Eagle", 1), ("is a pub .", 2)])
    calls, free_text = [], {}

    def nbest(model, vocab, recs, constraints, beam, n, *, plan=None, system="seg", **options):
        calls.append((constraints, beam, n, plan, "content_rule" in options))
        return [dataclasses.replace(free_text.get(constraints, exact), constraints=constraints)]

    monkeypatch.setattr(seg_decode, "generate_seg_nbest", nbest)
    rules = dataclasses.replace(value_rules("auto+rerank+free"), dataset="e2e")
    res = seg_decode.generate_seg(None, None, records, "rm", 1, rules=rules, content_rule=True)
    assert calls == [("none", 1, 1, None, False)] and res.constraints == "rm" and res.scores["rerank_free"]
    calls.clear()
    free_text["none"] = missing  # no free text is exact: the constrained search decides
    res = seg_decode.generate_seg(None, None, records, "rm", 5, rules=rules)
    assert calls == [("none", 5, 5, None, False), ("rm", 5, 5, None, False)] and "rerank_free" not in res.scores
    for constraints, plan in (("rm", [3, 2, 1]), ("none", None)):
        calls.clear()
        seg_decode.generate_seg(None, None, records, constraints, 5, plan=plan, rules=rules)
        assert calls == [(constraints, 5, 5, plan, False)]
    calls.clear()
    seg_decode.generate_seg(None, None, records, "rm", 5, rules=dataclasses.replace(rules, rerank=False))
    assert calls == [("rm", 5, 1, None, False)]


def test_keep_takes_the_free_text_and_the_unconstrained_output_from_the_model_s_own_search(monkeypatch):
    """``+rerank+widen+free+keep``: under "none" one plain search (top 1, the rules without the
    checker's switches); under +RM the free text is that plain output (kept when exact), and only
    when it is not exact does the checker-guided constrained search run (its n-best, reranked);
    under a plan keep changes nothing."""
    from segviz.decode import seg as seg_decode

    records = parse_e2e_mr("name[The Eagle], eatType[pub], priceRange[cheap]")
    exact = _result(records, [("The Eagle", 1), ("is a pub", 2), ("with cheap prices .", 3)])
    missing = _result(records, [("The Eagle", 1), ("is a pub .", 2)])
    calls, free_text = [], {}

    def nbest(model, vocab, recs, constraints, beam, n, *, plan=None, system="seg", rules=None, **options):
        calls.append((constraints, beam, n, plan, (rules.rerank, rules.widen, rules.free, rules.keep)))
        return [dataclasses.replace(free_text.get(constraints, exact), constraints=constraints)]

    monkeypatch.setattr(seg_decode, "generate_seg_nbest", nbest)
    rules = dataclasses.replace(value_rules("auto+rerank+widen+free+keep"), dataset="e2e")
    plain, guided = (False, False, False, False), (True, True, True, True)
    seg_decode.generate_seg(None, None, records, "none", 5, rules=rules)
    assert calls == [("none", 5, 1, None, plain)]
    calls.clear()
    res = seg_decode.generate_seg(None, None, records, "rm", 5, rules=rules)
    assert calls == [("none", 5, 1, None, plain)] and res.scores["rerank_free"] and res.constraints == "rm"
    calls.clear()
    free_text["none"] = missing  # the model's own free text leaves the price out: the guided search decides
    res = seg_decode.generate_seg(None, None, records, "rm", 5, rules=rules)
    assert calls == [("none", 5, 1, None, plain), ("rm", 5, 5, None, guided)] and "rerank_free" not in res.scores
    calls.clear()
    seg_decode.generate_seg(None, None, records, "rm", 5, plan=[3, 2, 1], rules=rules)
    assert calls == [("rm", 5, 5, [3, 2, 1], guided)]
    calls.clear()
    no_keep = dataclasses.replace(rules, keep=False)  # without keep the free text is reranked too
    free_text.clear()
    seg_decode.generate_seg(None, None, records, "none", 5, rules=no_keep)
    assert calls == [("none", 5, 5, None, (True, True, True, False))]


def test_keep_leaves_pg_to_its_own_search(monkeypatch):
    """With ``free`` and ``keep`` PG, an unconstrained system, is the model's own top 1; without
    ``keep`` its n-best is reranked (and widened)."""
    from segviz.decode import pg as pg_decode

    records = parse_e2e_mr("name[The Eagle], eatType[pub]")
    calls = []

    def nbest(model, vocab, recs, beam, n, rules=None, **options):
        calls.append((beam, n, rules.rerank))
        return [_result(records, [("The Eagle is a pub .", 1)])]

    monkeypatch.setattr(pg_decode, "generate_pg_nbest", nbest)
    keep = dataclasses.replace(value_rules("auto+rerank+widen+free+keep"), dataset="e2e")
    pg_decode.generate_pg(None, None, records, 5, rules=keep)
    assert calls == [(5, 1, False)]
    calls.clear()
    pg_decode.generate_pg(None, None, records, 5, rules=dataclasses.replace(keep, keep=False))
    assert calls == [(5, 5, True), (20, 20, True)]  # reranked, and widened: its one segment says two records


def test_widen_leaves_a_fallback_list_alone_and_keeps_a_wider_fallback_out():
    from segviz.decode.seg import _reranked

    records = parse_e2e_mr("name[The Eagle], eatType[pub], priceRange[cheap]")
    missing = _result(records, [("The Eagle", 1), ("is a pub .", 2)])
    exact = _result(records, [("The Eagle", 1), ("is a pub", 2), ("with cheap prices .", 3)])
    fell_back = dataclasses.replace(exact, fallback_used=True)
    rules = dataclasses.replace(value_rules("auto+rerank+widen"), dataset="e2e")
    assert _reranked(rules, records, [missing], lambda: [fell_back]).text == missing.text
    assert _reranked(rules, records, [dataclasses.replace(missing, fallback_used=True)], lambda: [exact]).text == missing.text
    assert _reranked(rules, records, [missing], lambda: [exact]).text == exact.text


def test_rerank_switch_decodes_the_checkers_pick(e2e_seg):
    """``+rerank``: the output is one of the n-best list, with fewer faults than the model's best
    (here under the reversed plan, where the model's best has a fault and the next one none)."""
    from segviz.rerank import faults

    records = parse_e2e_mr(
        "name[Browns Cambridge], eatType[coffee shop], food[Chinese], customer rating[3 out of 5], "
        "area[riverside], familyFriendly[yes], near[Crowne Plaza Hotel]"
    )  # a dev input where the shipped model's best under this plan has a fault (session 24's weights)
    plan = list(range(len(records), 0, -1))
    kw = dict(plan=plan)
    nbest = decode.generate_seg_nbest(e2e_seg.model, e2e_seg.vocab, records, "rm", 5, rules=e2e_seg.rules("auto"), **kw)
    res = decode.generate_seg(e2e_seg.model, e2e_seg.vocab, records, "rm", 5, rules=e2e_seg.rules("auto+rerank"), **kw)
    counts = [faults("e2e", records, c) for c in nbest]
    assert counts[0] > min(counts)
    assert res.text == nbest[counts.index(min(counts))].text
    assert (res.scores["rerank_faults"], res.scores["rerank_faults_before"]) == (min(counts), counts[0])


def test_known_names_come_from_the_training_inputs():
    from segviz.data import Example
    from segviz.lexicon import known_names, name_key
    from segviz.records import Record

    assert name_key("Crowne_Plaza_Hotel") == "crowne plaza hotel" == name_key('"Crowne Plaza Hotel"')
    examples = [
        Example("a", parse_e2e_mr("name[The Eagle], area[riverside], near[Café Brazil]"), []),
        Example("b", [Record(attribute="country", value="United_States", subject="Alan_Bean")], []),
    ]
    assert known_names(examples) == ["alan bean", "café brazil", "the eagle", "united states"]


def test_a_name_of_known_words_but_not_a_training_name_is_copied_whole(e2e_seg):
    """"Mill Street Diner": every word is in the vocabulary, so without the training names the
    model took it for a name it knows and said "Mill"; with them it is unseen and said whole."""
    import dataclasses

    records = parse_e2e_mr("name[Mill Street Diner], food[English], priceRange[cheap]")
    rules = e2e_seg.rules("auto")
    out = {}
    for known in (frozenset(), frozenset({"the eagle", "café brazil"})):
        r = dataclasses.replace(rules, known=known)
        out[bool(known)] = decode.generate_seg(e2e_seg.model, e2e_seg.vocab, records, "rm", 5, rules=r).text
    assert "Mill Street Diner" not in out[False] and out[False].startswith("Mill ")
    assert "Mill Street Diner" in out[True]


def test_an_unseen_name_said_once_is_not_owed_again(e2e_seg):
    """*names*: a later segment of a record whose unseen name the text has said needs not say it
    again. Owing it barred the model's closing ``[name: .]`` segment, so unconstrained texts with
    an invented name ended without their full stop (the Playground's "Blue Heron Café" did)."""
    records = EXAMPLES["e2e"]["Blue Heron Café (6 slots)"]
    res = decode.generate_seg(e2e_seg.model, e2e_seg.vocab, records, "none", 5, rules=e2e_seg.rules("auto"))
    assert res.text.endswith("less than £20.") and res.text.count("Blue Heron Café") == 1
    later = [res.tokens[s:e] for s, e, k in res.segments if k == 1][1:]  # the name record's later segments
    assert later and ["."] in later and not any("heron" in seg for seg in later)


def test_a_name_inside_a_longer_name_of_the_input_is_not_said():
    """``_name_said`` reads a name outside the input's longer names that hold it: "Blue Heron"
    (``near``) is not said by "Blue Heron Café" (``name``), so its segment still owes it."""
    from types import SimpleNamespace

    from segviz.decode.search import _name_said

    blue, heron, cafe, by = 11, 12, 13, 14
    x = SimpleNamespace(spelt={}, must={1: [(blue, heron, cafe)], 2: [(blue, heron)]},
                        phrases={1: [(blue, heron, cafe)], 2: [(blue, heron)]})
    assert _name_said(x, [blue, heron, cafe, by], 1)
    assert not _name_said(x, [blue, heron, cafe, by], 2)  # only inside the longer name
    assert _name_said(x, [blue, heron, cafe, by, blue, heron, by], 2)  # said on its own as well
    assert not _name_said(x, [by], 1) and not _name_said(x, [blue, heron], 3)  # not said; owes none


def test_inner_words_of_an_unseen_name_come_only_after_its_first():
    from segviz.decode.rules import _inner_ids

    vocab = Vocab(["castle", "bridge", "swan", "'s", "nest", "lock"])
    ids = {w: vocab.stoi[w] for w in vocab.itos}
    phrases = [(ids["castle"], ids["bridge"]), (ids["swan"], ids["'s"], ids["nest"], ids["lock"]), (ids["bridge"], 99)]
    oov = ["x"] * (100 - len(vocab))  # id 99 is an OOV word, "x"
    # "bridge" begins a name too, so it stays free; "'s" is a function word; the rest only continue a name
    assert _inner_ids(vocab, oov, phrases) == sorted([ids["nest"], ids["lock"], 99])


def test_webnlg_unseen_subject_is_said_from_its_first_word():
    """The WebNLG model said "Bridge is located in …" for the invented subject Castle_Bridge (its
    first word dropped): with the names rule a name's later words come only after its first."""
    from segviz.records import parse_webnlg_triples

    path = ROOT / "checkpoints" / "webnlg-seg"
    if not path.exists():
        pytest.skip("shipped checkpoint missing")
    ck = checkpoint.load(path)
    records = parse_webnlg_triples(["Castle_Bridge | country | The_Copper_Kettle"])
    with_rule = decode.generate_seg(ck.model, ck.vocab, records, "rm", 5, rules=ck.rules("auto")).text
    assert with_rule.startswith("Castle Bridge ") and "The Copper Kettle" in with_rule
    # every output of the beam, not only the best: "Bridge" never comes without "Castle" before it
    # (the checkpoint trained before the GPU round said "Bridge is located in ..." without the rule)
    nbest = decode.generate_seg_nbest(ck.model, ck.vocab, records, "rm", 5, rules=ck.rules("auto"))
    assert len(nbest) >= 3
    for r in nbest:
        words = r.text.split()
        assert all(i > 0 and words[i - 1] == "Castle" for i, w in enumerate(words) if w.startswith("Bridge")), r.text


def test_an_unseen_subject_is_said_by_the_end_of_its_records_segment():
    """WebNLG: "The Mosswood Brasserie is operated by Mosswood Brasserie" said the object twice and
    never the invented subject The_Lark_and_Lemon; with the names rule a record's segment ends
    only once its unseen subject is in the text."""
    from segviz.decode.rules import _subject_phrases
    from segviz.decode.search import _has
    from segviz.records import parse_webnlg_triples

    path = ROOT / "checkpoints" / "webnlg-seg"
    if not path.exists():
        pytest.skip("shipped checkpoint missing")
    ck = checkpoint.load(path)
    records = parse_webnlg_triples(["The_Lark_and_Lemon | operatingOrganisation | Mosswood_Brasserie"])
    words = ("lark", "and", "lemon")  # "the" begins too much: the name starts at its first content word
    oov = [w for w in words if w not in ck.vocab.stoi]
    subjects = _subject_phrases(ck.vocab, oov, records, ck.rules("auto"))
    ids = tuple(ck.vocab.stoi[w] if w in ck.vocab.stoi else len(ck.vocab) + oov.index(w) for w in words)
    assert subjects == {1: ids}
    assert _has([7, 8, 9, 10], (8, 9)) and not _has([7, 8, 10, 9], (8, 9)) and _has([1], None)
    assert _subject_phrases(ck.vocab, [], parse_webnlg_triples(["Aarhus_Airport | cityServed | Aarhus"]), ck.rules("auto")) == {}
    text = decode.generate_seg(ck.model, ck.vocab, records, "rm", 5, rules=ck.rules("auto")).text
    assert "The Lark and Lemon" in text and "Mosswood Brasserie" in text


def test_a_record_with_an_unseen_subject_is_mentioned_only_with_its_subject():
    """WebNLG +RM took "... is home to Ladywell Fields" for Halberd_Court | location |
    Ladywell_Fields and never said Halberd Court: under the names rule a verbatim object counts as
    a mention only once the record's unseen subject is in the text too (before or after it)."""
    from types import SimpleNamespace

    from segviz.decode.search import _mentioned_with_subjects

    x = SimpleNamespace(values={1: [5, 6], 2: [9]}, said_subjects={1: (7, 8)}, longer={}, twins={}, spelt={}, forms={})
    assert _mentioned_with_subjects(x, [3, 5, 6]) == frozenset()  # object alone
    assert _mentioned_with_subjects(x, [7, 8, 4, 5, 6]) == {1}  # subject, then object
    assert _mentioned_with_subjects(x, [5, 6, 4, 7, 8]) == {1}  # object, then subject
    assert _mentioned_with_subjects(x, [7, 8, 9]) == {2}  # no subject owed: as before
    plain = SimpleNamespace(values={1: [5, 6]}, said_subjects={}, longer={}, twins={}, spelt={}, forms={})  # names rule off: the paper's mentions
    assert _mentioned_with_subjects(plain, [5, 6]) == {1}


def test_a_short_form_mentions_its_record_and_counts_as_said_before_its_segment():
    """*forms*: record 1's value (ids 5 6, "french language") has the short form (5,) ("french"),
    which another entity of the input, "old french" (3 5), holds. The form said alone mentions the record
    under +R / +RM (mentions on) and counts as said for its segment (``_said_before``); said
    inside the holder, it does neither; with mentions off (no values) it mentions nothing."""
    from types import SimpleNamespace

    from segviz.decode.search import _mentioned_with_subjects, _said_before

    entry = ((5,), 0, [(3, 5)], [(3, 5)])  # (form, position banned, longer entities, other entities)
    x = SimpleNamespace(values={1: [5, 6]}, said_subjects={}, longer={}, twins={}, spelt={}, forms={1: [entry]}, once={})
    assert _mentioned_with_subjects(x, [2, 5, 4]) == {1} and _said_before(x, [2, 5, 4], 1)
    assert _mentioned_with_subjects(x, [3, 5, 4]) == frozenset() and not _said_before(x, [3, 5, 4], 1)
    assert not _said_before(x, [2, 5, 4], 2)  # another record: nothing said
    off = SimpleNamespace(**{**vars(x), "values": {}})
    assert _mentioned_with_subjects(off, [2, 5, 4]) == frozenset()


def test_a_subject_said_without_its_accents_is_said():
    """The model writes "Arros negre" for the subject Arròs_negre (both spellings are training
    words); taken as not said, +RM gave the ingredient record a segment of its own to say the
    subject again ("… and Cubanelle peppers are main ingredients. It is also an ingredient in
    arros negre."). A word and its unaccented twin now say the same subject, as the checker reads
    them."""
    from segviz.decode.rules import _accent_twins
    from segviz.decode.search import _has
    from segviz.faithfulness.common import normalise
    from segviz.records import parse_webnlg_triples

    path = ROOT / "checkpoints" / "webnlg-seg"
    if not path.exists():
        pytest.skip("shipped checkpoint missing")
    ck = checkpoint.load(path)
    v = ck.vocab
    subject = (v.stoi["arròs"], v.stoi["negre"])  # both spellings are training words
    twins = _accent_twins(v, [], [subject])
    assert twins == {v.stoi["arròs"]: v.stoi["arros"]}
    assert _accent_twins(v, ["arròsz"], [(len(v), v.stoi["negre"])]) == {}  # no unaccented twin: none
    assert _has([v.stoi["arros"], v.stoi["negre"]], subject, twins)
    assert not _has([v.stoi["arros"], v.stoi["negre"]], subject)
    recs = parse_webnlg_triples([
        "Arròs_negre | country | Spain",
        'Arròs_negre | mainIngredients | "White rice, cuttlefish or squid, cephalopod ink, cubanelle peppers"',
        "Arròs_negre | region | Catalonia",
        "Arròs_negre | ingredient | Cubanelle",
    ])  # fmt: skip
    text = decode.generate_seg(ck.model, ck.vocab, recs, "rm", 5, rules=ck.rules()).text
    assert normalise(text).count("arros negre") == 1
    assert faithfulness.check("webnlg", recs, text).errors == 0


def test_a_named_subject_is_needed_for_a_mention_even_when_seen(tiny):
    """WebNLG +RM took "Gujarat" in "Anandiben Patel is the leader of Gujarat where ..." for
    (Amdavad_ni_Gufa | location | Gujarat), so that record could no longer have its segment and
    +RM found another, worse text: every named subject, seen in training or not, is needed."""
    from segviz import checkpoint
    from segviz.constraints import constraint
    from segviz.decode import value_rules
    from segviz.decode.search import SegmentDecoder, _mentioned_with_subjects
    from segviz.records import Record

    seg = checkpoint.load(tiny / "webnlg-seg")
    recs = [Record("leaderName", "Anandiben_Patel", "Gujarat"), Record("location", "Gujarat", "Amdavad_ni_Gufa")]
    dec = SegmentDecoder(seg.model, seg.vocab)
    x = dec._input(recs, constraint("rm"), 2, None, None, None, None, None, 3, value_rules("auto", {}))
    assert set(x.said_subjects) == {1, 2}
    words = seg.vocab.itos + x.oov
    ids = lambda text: [words.index(w) for w in text.split()]  # noqa: E731
    assert _mentioned_with_subjects(x, ids("anandiben patel gujarat")) == {1}  # not Amdavad's location
    assert _mentioned_with_subjects(x, ids("amdavad ni gufa gujarat")) == {2}
    off = dec._input(recs, constraint("rm"), 2, None, None, None, None, None, 3, None)  # the paper's rules
    assert off.said_subjects == {} and 2 in _mentioned_with_subjects(off, ids("gujarat"))


def test_once_bans_a_value_where_it_parts_from_the_other_entities():
    """``once``: for each value one slot of the input holds, the word at which it parts from the
    beginnings of the input's other entities ("lankan" of "Sri Lankan rupee" beside "Sri Lanka",
    "ranil" at once); a value held by two slots ("Sri Lanka": an object and a subject) is left
    alone, and nothing is banned without the switch."""
    from segviz.decode.rules import _continues, _function_mask, _said_once
    from segviz.records import Record

    vocab = Vocab(["sri", "lanka", "lankan", "rupee", "ranil", "wickremesinghe", "ampara", "hospital"])
    recs = [Record("country", "Sri_Lanka", "Ampara_Hospital"), Record("leaderName", "Ranil_Wickremesinghe", "Sri_Lanka"),
            Record("currency", "Sri_Lankan_rupee", "Sri_Lanka")]  # fmt: skip
    ids = lambda *ws: tuple(vocab.stoi[w] for w in ws)  # noqa: E731
    func = _function_mask(vocab, [])
    once = _said_once(vocab, [], recs, value_rules("auto+once"), func)
    assert {k: v[:3] for k, v in once.items()} == {
        2: (ids("ranil", "wickremesinghe"), 0, []),
        3: (ids("sri", "lankan", "rupee"), 1, []),
    }
    assert ids("sri", "lanka") in once[3][3] and ids("sri", "lankan", "rupee") not in once[3][3]  # the other entities
    assert _said_once(vocab, [], recs, value_rules("auto"), func) == {}
    said = list(ids("sri"))
    assert _continues(said, vocab.stoi["lanka"], [ids("sri", "lanka")])  # "Sri" goes on as "Sri Lanka"
    assert not _continues(said, vocab.stoi["rupee"], [ids("sri", "lanka")])


def test_once_stops_plus_rm_saying_an_object_twice():
    """The shipped webnlg-seg under +RM says "Potter county is in Texas, in the state of Texas"
    (session 9's weights: "… is located in Cleveland, Cleveland"); with ``once`` the second
    "Texas" is banned and the text states the triple once (the subject's own "Texas" aside)."""
    from segviz.records import Record

    path = ROOT / "checkpoints" / "webnlg-seg"
    if not path.exists():
        pytest.skip("shipped checkpoint missing")
    ck = checkpoint.load(path)
    recs = [Record("state", "Texas", "Potter_County,_Texas")]
    gen = lambda r: decode.generate_seg(ck.model, ck.vocab, recs, "rm", 5, rules=ck.rules(r))  # noqa: E731
    plain, once = gen("auto"), gen("auto+once")
    assert faithfulness.check("webnlg", recs, plain.text).repeated == 1  # "… in Texas, in the state of Texas."
    assert faithfulness.check("webnlg", recs, once.text).errors == 0
    assert once.text.lower().count("texas") <= 2  # at most the subject's and the object's
    assert ck.rules().once  # the checkpoint's default rules, chosen on the tune half


def _shipped_webnlg_rm(triples: list[tuple[str, str, str]], plan: list[int] | None = None):
    """The shipped webnlg-seg, the records of ``triples`` (subject, attribute, value), and a
    function decoding them under +RM (beam 5; ``plan`` forced, if given) with the value rules it
    is given; skips without the checkpoint."""
    from segviz.records import Record

    path = ROOT / "checkpoints" / "webnlg-seg"
    if not path.exists():
        pytest.skip("shipped checkpoint missing")
    ck = checkpoint.load(path)
    recs = [Record(a, v, s) for s, a, v in triples]
    return ck, recs, lambda r: decode.generate_seg(ck.model, ck.vocab, recs, "rm", 5, plan=plan, rules=ck.rules(r))


def test_qualifiers_keeps_plus_rm_from_saying_a_qualifying_place_again():
    """The shipped webnlg-seg under +RM (tune half, K = 4): the text says "Ithaca, New York" in the
    city's segment; without ``qualifiers`` +RM still owes ``state | New_York`` and opens a segment
    for it ("… and it is the location of Cornell University"); with it, no segment is spent on it."""
    ck, recs, gen = _shipped_webnlg_rm([
        ("Administrative_Science_Quarterly", "publisher", "Cornell_University"),
        ("Cornell_University", "affiliation", "Association_of_American_Universities"),
        ("Cornell_University", "state", "New_York"),
        ("Cornell_University", "city", "Ithaca,_New_York"),
    ])  # fmt: skip
    plain, qualified = gen("auto+once"), gen("auto+once+qualifiers")
    assert "ithaca, new york" in plain.text.lower() and 3 in {j for _, _, j in plain.segments}
    assert "ithaca, new york" in qualified.text.lower() and 3 not in {j for _, _, j in qualified.segments}
    assert faithfulness.check("webnlg", recs, qualified.text).errors == 0
    assert len(qualified.tokens) < len(plain.tokens)
    assert ck.rules().qualifiers  # the checkpoint's default rules, chosen on the tune half


def test_spellings_reads_a_possessive_word_as_saying_its_value():
    """The shipped webnlg-seg under +RM (tune half, K = 4; session 22's weights): the crew
    member's segment says "nasa's Apollo 12", one token "nasa's" of the vocabulary; without
    ``spellings`` the mention rule does not see ``NASA`` said, so +RM opens a segment for
    ``operator | NASA`` and says it again ("… on the NASA operated Apollo 12"); with it, the
    operator is said once."""
    ck, recs, gen = _shipped_webnlg_rm([
        ("Apollo_12", "backup pilot", "Alfred_Worden"),
        ("Alan_Bean", "was a crew member of", "Apollo_12"),
        ("Apollo_12", "operator", "NASA"),
        ("Apollo_12", "commander", "David_Scott"),
    ])  # fmt: skip
    plain, spelt = gen("auto+once+qualifiers"), gen("auto+once+qualifiers+spellings")
    assert "nasa's apollo 12" in plain.text.lower() and plain.text.lower().count("nasa") == 2
    assert faithfulness.check("webnlg", recs, plain.text).repeated == 1
    assert spelt.text.lower().count("nasa") == 1 and faithfulness.check("webnlg", recs, spelt.text).errors == 0
    assert ck.rules().spellings  # the checkpoint's default rules, chosen on the tune half


def test_forms_keeps_a_value_said_in_its_short_form_from_being_said_again():
    """The shipped webnlg-seg under +RM (tune half, K = 4): without ``forms`` the club's segment says
    "… Greece where greek is spoken" and +RM, not seeing ``Greek_language`` said ("greek" is no
    verbatim "greek language"), has its segment say it again ("… and the language spoken is
    greek"), which the checker counts as repeated; with it, "greek" is said once and every triple
    is stated."""
    ck, recs, gen = _shipped_webnlg_rm([
        ("A.E_Dimitra_Efxeinoupolis", "location", "Greece"),
        ("Greece", "leader", "Alexis_Tsipras"),
        ("Greece", "leader", "Nikos_Voutsis"),
        ("Greece", "language", "Greek_language"),
    ])  # fmt: skip
    plain, forms = gen("auto+once+qualifiers+spellings"), gen("auto+once+qualifiers+spellings+forms")
    assert plain.text.lower().count("greek") == 2 and faithfulness.check("webnlg", recs, plain.text).repeated == 1
    assert forms.text.lower().count("greek") == 1 and faithfulness.check("webnlg", recs, forms.text).errors == 0
    assert ck.rules().forms  # the checkpoint's default rules, chosen on the tune half


def test_echo_entries_cover_subjects_values_and_their_short_forms():
    """*echo*: every subject and value of the input, and (with *forms*) a short form of it
    ("ballistic" of ``Ballistic_(comicsCharacter)``), is an entry; "cornell university" is banned
    at "university", where it parts from "cornell big red"; without the switch there are none."""
    from segviz.decode.rules import _echo_entries, _function_mask, value_rules
    from segviz.records import Record

    path = ROOT / "checkpoints" / "webnlg-seg"
    if not path.exists():
        pytest.skip("shipped checkpoint missing")
    v = checkpoint.load(path).vocab
    recs = [Record("nickname", "Cornell_Big_Red", "Cornell_University"), Record("alternativeName", '"Kelvin Mao"', "Ballistic_(comicsCharacter)")]
    func = _function_mask(v, [])
    ids = lambda s: tuple(v.stoi[w] for w in s.split())  # noqa: E731
    got = {e[0]: e[1] for e in _echo_entries(v, [], recs, value_rules("auto+forms+echo"), func)}
    assert got[ids("cornell university")] == 1 and got[ids("cornell big red")] == 1
    assert got[ids("ballistic")] == 0 and ids("ballistic ( comicscharacter )") in got and got[ids("kelvin mao")] == 0
    assert ids("ballistic") not in {e[0] for e in _echo_entries(v, [], recs, value_rules("auto+echo"), func)}  # no forms
    assert _echo_entries(v, [], recs, value_rules("auto+forms"), func) == []


def test_ban_again_bans_the_parting_word_and_onward_leaves_only_the_entity_it_begins():
    """``_ban_again``: once (5, 6) is said, "5" followed by its parting word 6 is banned, unless
    6 goes on with another entity the tokens are saying; an *onward* entry ((7,) begins (7, 8))
    said again leaves only 8, with its score, but not where 7 ends another entity the tokens
    are saying ((9, 7)), nor when another rule has banned 8."""
    from types import SimpleNamespace

    from segviz.decode.search import _ban_again

    x = SimpleNamespace(spelt={})
    row = torch.zeros(10)
    _ban_again(x, [5, 6, 3, 5], [((5, 6), 1, [], [(5, 9)])], row)
    assert row[6] == -math.inf and torch.isfinite(row[[0, 1, 2, 3, 4, 5, 7, 8, 9]]).all()
    row = torch.zeros(10)
    _ban_again(x, [3, 5], [((5, 6), 1, [], [(5, 9)])], row)  # not said before: nothing banned
    assert torch.isfinite(row).all()
    row = torch.arange(10.0)
    _ban_again(x, [7, 3, 7], [((7,), 1, [(7, 8)], [(7, 8)])], row)
    assert row[8] == 8 and torch.isinf(row[[i for i in range(10) if i != 8]]).all()
    row = torch.arange(10.0)
    _ban_again(x, [7, 8, 3, 7], [((7,), 1, [(7, 8)], [(7, 8)])], row)  # said only inside (7, 8): free
    assert torch.isfinite(row).all()
    row = torch.arange(10.0)
    entry = ((7,), 1, [(7, 8), (9, 7)], [(7, 8), (9, 7)])  # (9, 7): "the Battle of Baku" ends with it
    _ban_again(x, [7, 3, 9, 7], [entry], row)
    assert torch.isfinite(row).all()
    row = torch.arange(10.0)
    row[8] = -math.inf  # the way on is banned by another rule: the row is left as it was
    _ban_again(x, [7, 3, 7], [((7,), 1, [(7, 8)], [(7, 8)])], row)
    assert torch.isfinite(row[[i for i in range(10) if i != 8]]).all()
    row = torch.zeros(10)
    _ban_again(x, [5, 6, 3, 5], [((5, 6), 1, [], [(5, 9), (5, 6, 2)])], row)  # 6 goes on with (5, 6, 2)
    assert torch.isfinite(row).all()


def test_echo_keeps_a_segment_from_saying_its_subject_in_place_of_its_value():
    """The shipped webnlg-seg under +RM (tune half, K = 1): without ``echo`` its one segment says
    the subject twice and never the nickname ("Cornell University is the nickname of Cornell
    University."); with it the segment says the nickname and the checker finds nothing wrong."""
    ck, recs, gen = _shipped_webnlg_rm([("Cornell_University", "nickname", "Cornell_Big_Red")])
    base = "auto+once+qualifiers+spellings+forms"
    plain, echo = gen(base), gen(base + "+echo")
    assert plain.text.lower().count("cornell university") == 2 and faithfulness.check("webnlg", recs, plain.text).missing == 1
    assert "cornell big red" in echo.text.lower() and faithfulness.check("webnlg", recs, echo.text).errors == 0


def test_onward_keeps_a_value_that_begins_the_subject_from_being_said_again():
    """The shipped webnlg-seg under +RM (tune half, K = 5): "Baku" begins the subject "Baku Turkish
    Martyrs' Memorial", so *once* has no word to ban and the text says "the capital is Baku. The
    capital city is Baku" (repeated); with ``onward`` "Baku" said again must go on as the subject,
    and it is said once."""
    ck, recs, gen = _shipped_webnlg_rm([
        ("Azerbaijan", "capital", "Baku"),
        ("Azerbaijan", "leaderTitle", "Prime_Minister_of_Azerbaijan"),
        ("Baku_Turkish_Martyrs'_Memorial", "location", "Azerbaijan"),
        ("Azerbaijan", "leaderName", "Artur_Rasizade"),
        ("Azerbaijan", "legislature", "National_Assembly_(Azerbaijan)"),
    ])  # fmt: skip
    base = "auto+once+qualifiers+spellings+forms+echo"
    plain, onward = gen(base), gen(base + "+onward")
    assert faithfulness.check("webnlg", recs, plain.text).repeated == 1
    assert onward.text.lower().count("baku") == 2 and faithfulness.check("webnlg", recs, onward.text).errors == 0


def test_plurals_read_an_entity_last_word_as_a_plural_or_demonym_like_the_checker():
    """*plurals* (with *spellings*): "plants" is the "plant" of ``Flowering_plant`` and "indonesian"
    the ``Indonesia`` of a value, as the WebNLG checker reads them; only for an entity's last
    word ("flowering" gets no twin), never a word of the input itself, and nothing without it.
    On the shipped checkpoint (tune half, K = 4) +RM said "The division of flowering plants is
    flowering plants." (repeated); with it, "flowering plants" is said once."""
    from segviz.decode.rules import spelling_twins

    ck, recs, gen = _shipped_webnlg_rm([
        ("Poaceae", "class", "Monocotyledon"),
        ("Poaceae", "division", "Flowering_plant"),
        ("Poaceae", "order", "Commelinids"),
        ("Ardmore_Airport_(New_Zealand)", "2nd_runway_SurfaceType", "Poaceae"),
    ])  # fmt: skip
    v = ck.vocab
    phrases = [(v.stoi["flowering"], v.stoi["plant"]), (v.stoi["indonesia"],)]
    twins = spelling_twins(v, [], phrases, plurals=True)
    assert twins[v.stoi["plants"]] == v.stoi["plant"] and twins[v.stoi["indonesian"]] == v.stoi["indonesia"]
    assert "floweringes" not in v.stoi and v.stoi["plants"] not in spelling_twins(v, [], phrases)
    assert v.stoi["plant"] not in spelling_twins(v, [], [(v.stoi["plants"],), (v.stoi["plant"],)], plurals=True)
    base = "auto+once+qualifiers+spellings+forms+echo+onward"
    plain, plurals = gen(base), gen(base + "+plurals")
    assert plain.text.lower().count("flowering plants") == 2 and faithfulness.check("webnlg", recs, plain.text).repeated == 1
    assert plurals.text.lower().count("flowering plants") == 1 and faithfulness.check("webnlg", recs, plurals.text).errors == 0


def test_numerals_read_a_figure_written_otherwise_as_that_figure():
    """*numerals* (with *spellings*): "1,121" and "1121" are the ``1121.0`` of the input, as the
    checker reads them, so *once* does not let the figure be said again. On the shipped
    checkpoint under the plan 1, 3, 2, 4 (tune half) the text said "It has a runway length of
    1,121 and is located in 1121.0, Texas"; with it, "… 1,121 and is located in Texas"."""
    from segviz.decode.rules import spelling_twins

    ck, recs, gen = _shipped_webnlg_rm([
        ("Abilene_Regional_Airport", "cityServed", "Abilene,_Texas"),
        ("Abilene,_Texas", "isPartOf", "Texas"),
        ("Abilene_Regional_Airport", "runwayLength", "1121.0"),
        ("Abilene,_Texas", "country", "United_States"),
    ], plan=[1, 3, 2, 4])  # fmt: skip
    v = ck.vocab
    figure = (v.stoi["1121.0"],)
    twins = spelling_twins(v, ["1121"], [figure], numerals=True)  # "1121" a word of the source only
    assert twins == {v.stoi["1,121"]: figure[0], len(v): figure[0]} and not spelling_twins(v, ["1121"], [figure])
    assert len(v) not in spelling_twins(v, ["1121"], [figure, (len(v),)], numerals=True)  # an input word is itself
    from segviz.decode.rules import _entities, _ext_id
    from segviz.records import Record

    dated = [Record("launchDate", "2019-04-11", "Kestrel_7"), Record("mass", "4.0", "Kestrel_7")]
    oov = [w for w in ("04", "4.0", "11") if w not in v.stoi]
    twins = spelling_twins(v, oov, _entities(v, oov, dated), numerals=True)
    four = _ext_id(v, oov, "4")
    assert four is not None and twins[four] == _ext_id(v, oov, "4.0")  # "4" is the mass, not the date's "04"
    shipped = ck.default_rules.replace("+numerals", "") + "-renorm"  # session 48's renorm alone says the figure once here
    plain, numerals = gen(shipped), gen(shipped + "+numerals")
    assert "1,121" in plain.text and "1121.0" in plain.text, plain.text
    assert "1,121" in numerals.text and "1121" not in numerals.text.replace("1,121", ""), numerals.text
    assert faithfulness.check("webnlg", recs, numerals.text).errors == 0, numerals.text


def test_alien_bans_the_relation_words_of_relations_the_input_does_not_hold():
    """*alien*: "born" is a word of birth places and dates only, "ingredients" of dishes'
    ingredients; an input without those relations (a satellite's ``launchDate``) may not say them,
    one with them may; a word of the input's own relations or values stays ("ingredients" of an
    unseen ``mainIngredient`` relation). Nothing is banned without the switch."""
    from segviz.decode.rules import _alien_ids

    ck, recs, _ = _shipped_webnlg_rm([("Kestrel_7", "launchDate", "2019-04-11"), ("Kestrel_7", "mass", "412.5")])
    v, rules = ck.vocab, ck.rules(ck.default_rules + "+alien")
    assert {"birthDate", "birthPlace"} <= ck.relation_words["born"] and "ingredients" in ck.relation_words
    banned = {v.itos[i] for i in _alien_ids(v, [], recs, rules)}
    assert {"born", "ingredients"} <= banned and "mass" not in banned
    assert not _alien_ids(v, [], recs, ck.rules(ck.default_rules.replace("+alien", "")))
    from segviz.records import Record

    born = [Record("birthDate", "1961-03-02", "Lucas_Abbott"), Record("mainIngredient", "Rice", "Lucas_Abbott")]
    kept = {v.itos[i] for i in _alien_ids(v, [], born, rules)}
    assert "born" not in kept and "ingredients" not in kept and "ingredient" not in kept
    named = [Record("launchDate", "2019-04-11", "Born_to_Run"), Record("mass", "4.0", "Ingredient_Lab")]
    assert not {"born", "ingredient", "ingredients"} & {v.itos[i] for i in _alien_ids(v, [], named, rules)}


def test_alien_keeps_both_systems_from_saying_another_relation_of_a_satellite():
    """A satellite's unseen relations (the category is not in WebNLG's training data): the
    shipped segment model under +RM said "Kestrel 7 was born in 2019-04-11", the PG baseline
    (given the segment model's relation words) "… was designed by"; with *alien* neither does."""
    import dataclasses

    triples = [("Kestrel_7", "operator", "Nordic_Space_Agency"), ("Kestrel_7", "launchSite", "Andøya_Spaceport"),
               ("Kestrel_7", "launchDate", "2019-04-11"), ("Kestrel_7", "mass", "412.5"),
               ("Nordic_Space_Agency", "headquarter", "Tromsø")]  # fmt: skip
    ck, recs, gen = _shipped_webnlg_rm(triples)
    plain = ck.default_rules.replace("+alien", "")
    assert "born in" in gen(plain).text and "born" not in gen(plain + "+alien").text.lower()
    pg = checkpoint.load(ROOT / "checkpoints" / "webnlg-pg")
    texts = [
        decode.generate_pg(pg.model, pg.vocab, recs, 5, rules=dataclasses.replace(pg.rules(r), relation_words=ck.relation_words)).text
        for r in (pg.default_rules, pg.default_rules + "+alien")
    ]  # fmt: skip
    assert "designed" in texts[0] and "designed" not in texts[1], texts


def test_the_fallback_warning_names_what_was_dropped(caplog):
    """Under "none" only the value rules can leave no output that ends: the warning says they were
    dropped, not that unconstrained decoding fell back to unconstrained decoding (a user read
    that in the server log); under +RM it names the constraints."""
    import logging

    from segviz.decode.rules import ValueRules
    from segviz.decode.seg import _search_with_fallback

    class Dec:  # no output while any rule or constraint is asked for
        def search_n(self, records, level, width, plan, rules=None, **kw):
            return ([] if rules is not None or level != "none" else ["text"]), [], None

    rules = ValueRules()
    with caplog.at_level(logging.WARNING, logger="segviz.decode.seg"):
        ranked, _, _, fallback = _search_with_fallback(Dec(), [], "none", 2, None, rules, None, None, 1)
    assert ranked == ["text"] and fallback
    assert [r.getMessage() for r in caplog.records] == ["the value rules left no output that can end; decoding without them"]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="segviz.decode.seg"):
        _search_with_fallback(Dec(), [], "rm", 2, None, rules, None, None, 1)
    assert [r.getMessage() for r in caplog.records] == [
        "constraints 'rm' (plan None) could not be met; falling back to unconstrained decoding"
    ]


FENWICK = [(r.subject, r.attribute, r.value) for r in EXAMPLES["webnlg"]["Fenwick Regional Airport (5 triples, invented)"]]


def test_held_figures_read_a_number_as_the_references_write_it():
    from segviz.records import Record, held_figures, unheld_figures

    recs = [Record("runwayLength", "3992.88", "A"), Record("elevation", "213.0", "A"),
            Record("birthDate", "1874-11-13", "B"), Record("3rd_runway_LengthFeet", "7202", "C")]  # fmt: skip
    held = held_figures(recs)
    assert {"3992.88", "3,992.88", "213.0", "213", "13", "1874", "7,202", "7202", "3"} <= held
    assert "3992" not in held and "88" not in held  # a fraction that is not zero stays
    text = "It is 213 metres high, 911 metres above the sea, born on 13th November 1874, 7,202 feet, 3,992.88 m."
    assert unheld_figures(recs, text) == ["911"]
    assert unheld_figures(recs, "No figure at all.") == []


def test_unheld_bans_a_number_no_figure_of_the_input_holds():
    """The shipped webnlg-seg under +RM, on an invented airport: without ``unheld`` the text says
    the elevation twice, once as a number the input does not give ("… 213.0 metres above sea
    level. It is located at 25 meters"; before session 45's ``babble``: "… 911 metres above the sea
    level"); with it (its shipped rules) it says no such number, and every record is still stated."""
    from segviz.records import unheld_figures

    ck, recs, gen = _shipped_webnlg_rm(FENWICK)
    shipped = ck.default_rules + "-renorm"  # session 48's renorm alone says no such number here
    plain, unheld = gen(shipped + "-unheld"), gen(shipped)
    assert unheld_figures(recs, plain.text) == ["25"]
    assert unheld_figures(recs, unheld.text) == []
    assert faithfulness.check("webnlg", recs, unheld.text).errors == 0
    assert "213" in unheld.text and "1850.0" in unheld.text
    assert ck.rules().unheld and not ck.rules(shipped + "-unheld").unheld  # in its rules since session 42


def test_strangers_keeps_a_forced_plan_from_naming_schools_the_input_does_not_hold():
    """The shipped webnlg-seg on an invented test pilot, the plan reversed: without ``strangers``
    it adds schools its training pilots went to ("graduated from ut, ma in austin … his alma
    mater, afit"), which WebNLG's checker cannot see; with it (its shipped rules since session 44)
    it names only the input's own school, and every record is still stated."""
    from segviz.entities import invented_names, shipped

    ck, recs, gen = _shipped_webnlg_rm([
        ("Elena_Voss", "almaMater", '"NWC, M.A. 1957"'),
        ("Elena_Voss", "birthPlace", "New_Hampshire"),
        ("Elena_Voss", "nationality", "United_States"),
        ("Elena_Voss", "occupation", "Test_pilot"),
    ], plan=[4, 3, 2, 1])  # fmt: skip
    words = shipped("webnlg")
    shipped = ck.default_rules + "-renorm"  # session 48's renorm alone names no other school here
    plain, strangers = gen(shipped + "-strangers"), gen(shipped)
    assert invented_names(recs, plain.text, words) == ["ut", "austin"]  # and "afit" before session 45's babble
    assert invented_names(recs, strangers.text, words) == []
    assert "NWC, M.A. 1957" in strangers.text and not strangers.fallback_used
    assert faithfulness.check("webnlg", recs, strangers.text).errors == 0
    assert ck.rules().strangers and not ck.rules(ck.default_rules + "-strangers").strangers


def test_babble_keeps_a_segment_from_looping_on_its_relation_words():
    """The shipped webnlg-seg on an invented town hall, the plan reversed: without ``babble`` (in
    its shipped rules since session 45) a segment loops on its relation's words ("… is the governing body of governing body, which is
    governing body …"); with it no segment says a word twice that no subject or value of the input
    holds, while the input's own names may still come again ("Lyra")."""
    from segviz.decode.rules import plain_words

    ck, recs, gen = _shipped_webnlg_rm([
        ("City_Hall_of_Lyra", "location", "Lyra"),
        ("Lyra", "country", "Brelonia"),
        ("Brelonia", "capital", "Ostrava_Nova"),
        ("City_Hall_of_Lyra", "governingBody", "Lyra_City_Council"),
    ], plan=[4, 3, 2, 1])  # fmt: skip
    plain, babble = gen(ck.default_rules + "-babble"), gen(ck.default_rules)  # shipped since session 45
    assert "governing body of governing body" in plain.text.lower()
    assert "governing body of governing body" not in babble.text.lower() and not babble.fallback_used
    words = plain_words(ck.vocab, [], recs, ck.rules())
    assert ck.rules().babble and not ck.rules(ck.default_rules + "-babble").babble

    def loops(res) -> list[str]:  # the words a segment says twice that the input does not hold
        out = []
        for s, e, _ in res.segments:
            seg = [t.lower() for t in res.tokens[s:e]]
            out += sorted({t for t in seg if seg.count(t) > 1 and t in ck.vocab.stoi and words[ck.vocab.stoi[t]]})
        return out

    assert "governing" in loops(plain) and loops(babble) == []
    stoi = ck.vocab.stoi
    assert words[stoi["governing"]] and not words[stoi["city"]] and not words[stoi["council"]]  # the input's own words are free
    assert babble.text.lower().count("lyra") >= 2
