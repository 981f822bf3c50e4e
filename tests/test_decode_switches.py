"""The named decoding switches of issue 11 (docs/design.md §6): ``+fillers`` and ``+paraphrases``,
and the ``preset+rule-rule`` syntax of :func:`segviz.decode.value_rules`."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import torch

from segviz import checkpoint, decode, faithfulness
from segviz.data import Vocab
from segviz.decode import is_function_word, parse_value_rules, value_rules
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
    bare = value_rules("none+fillers", lex)
    assert (bare.names, bare.absent, bare.own, bare.fillers) == (False, False, False, True)
    assert value_rules("all-names-absent-own") is None  # nothing left on: the paper's decoding


@pytest.mark.parametrize("bad", ["bogus", "auto+bogus", "auto+", "+fillers", ""])
def test_value_rules_rejects_unknown_names(bad):
    with pytest.raises(ValueError, match="value rules must be one of"):
        value_rules(bad)
    with pytest.raises(argparse.ArgumentTypeError):
        parse_value_rules(bad)
    assert parse_value_rules("auto+fillers") == "auto+fillers"


def test_said_ids_skip_negations_and_other_values():
    vocab = Vocab(["priced", "not", "cheap", "family", "friendly"])
    records = parse_e2e_mr("name[Cheap Eats], priceRange[moderate], familyFriendly[no]")
    lex = {
        "priced": frozenset({"attr:priceRange"}),
        "cheap": frozenset({"attr:priceRange"}),  # a word of the name: never a paraphrase of priceRange
        "not": frozenset({"attr:familyFriendly", "value:familyFriendly=no"}),  # a negation: never
        "friendly": frozenset({"attr:familyFriendly"}),
    }
    rules = value_rules("none+paraphrases", lex)
    said = decode._said_ids(vocab, [], records, rules)
    ids = {w: vocab.stoi[w] for w in ("priced", "not", "cheap", "friendly")}
    assert said[2] == {ids["priced"]}
    assert said[3] == {ids["friendly"]}
    assert said[1] == frozenset()
    assert decode._said_ids(vocab, [], records, value_rules("auto", lex)) == {}


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
    records = parse_e2e_mr(
        "name[Browns Cambridge], eatType[coffee shop], food[Chinese], customer rating[5 out of 5], "
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
    records = parse_e2e_mr(
        "name[The Lantern Fish], eatType[coffee shop], food[English], priceRange[moderate], "
        "customer rating[1 out of 5], familyFriendly[no]"
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
