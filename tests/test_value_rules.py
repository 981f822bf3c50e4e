"""Value lexicon (segviz.lexicon) and the decoding rules that read it (ValueRules)."""

from __future__ import annotations

import pytest

from segviz import checkpoint, lexicon
from segviz.data import Example, Vocab
from segviz.decode import ValueRules, _own_mask, generate_pg, generate_seg
from segviz.examples import EXAMPLES
from segviz.records import parse_e2e_mr, tokenize


def _ex(mr: str, ref: str) -> Example:
    return Example(mr, parse_e2e_mr(mr), tokenize(ref), [ref])


def test_lexicon_keeps_words_said_only_when_the_input_holds_them():
    exs = [_ex("name[The Eagle], eatType[restaurant]", "The Eagle is a restaurant."),
           _ex("name[Zizzi], food[French]", "Zizzi is a French restaurant."),
           _ex("name[Zizzi], food[Italian]", "Zizzi serves Italian food.")] * 40  # fmt: skip
    words = lexicon.build(exs)
    assert {"eagle", "zizzi", "french", "italian"} <= set(words)
    assert "restaurant" not in words  # said of venues whose input lacks it
    assert "the" not in words and "is" not in words


def test_own_mask_rows():
    recs = parse_e2e_mr("name[The Eagle], food[French], near[Café Brazil]")
    vocab = Vocab(["the", "eagle", "french", "café", "brazil", "italian", "food"])
    rules = ValueRules(frozenset({"eagle", "french", "café", "brazil", "italian"}))
    mask = _own_mask(vocab, [], recs, rules)
    banned = [{w for w in vocab.itos if mask[k, vocab.stoi[w]]} for k in range(4)]
    assert banned[0] == {"eagle", "french", "café", "brazil"}  # null: every record's value
    assert banned[2] == {"eagle", "café", "brazil"}  # food says French, nothing else
    assert banned[3] == {"eagle", "french"}
    assert _own_mask(vocab, [], recs, ValueRules(rules.lexicon, own=False)) is None


@pytest.fixture(scope="module")
def tiny_e2e(tiny):
    return checkpoint.load(tiny / "e2e-seg"), checkpoint.load(tiny / "e2e-pg")


def test_decoding_obeys_the_rules(tiny_e2e):
    seg, pg = tiny_e2e
    examples = list(EXAMPLES["e2e"].values())
    lex = frozenset().union(*(lexicon.value_words(recs) for recs in examples))
    rules = ValueRules(lex)
    for recs in examples:
        held = {t.lower() for r in recs for t in r.tokens}
        own = [lexicon.value_words([r]) & lex for r in recs]
        for plan in (None, list(range(len(recs), 0, -1))):
            out = generate_seg(seg.model, seg.vocab, recs, "rm", beam=2, plan=plan, rules=rules)
            assert not ({t.lower() for t in out.tokens} & lex) - held
            for s, e, k in out.segments:
                words = {t.lower() for t in out.tokens[s:e]} & lex
                allowed = own[k - 1] | {t.lower() for t in recs[k - 1].tokens} if k else set()
                assert words <= allowed, (out.text, s, e, k)
        out = generate_pg(pg.model, pg.vocab, recs, beam=2, rules=rules)
        assert not ({t.lower() for t in out.tokens} & lex) - held


def test_empty_lexicon_without_names_is_the_papers_decoding(tiny_e2e):
    seg, _ = tiny_e2e
    recs = EXAMPLES["e2e"]["The Copper Kettle (8 slots)"]
    a = generate_seg(seg.model, seg.vocab, recs, "rm", beam=2)
    b = generate_seg(seg.model, seg.vocab, recs, "rm", beam=2, rules=ValueRules(names=False))
    assert a.tokens == b.tokens and a.segments == b.segments


def test_lexicon_file_round_trip(tmp_path):
    assert lexicon.load(tmp_path) == frozenset()
    (tmp_path / lexicon.FILE).write_text('{"words": ["eagle", "french"]}', encoding="utf-8")
    assert lexicon.load(tmp_path) == {"eagle", "french"}
    (tmp_path / lexicon.FILE).write_text("not json", encoding="utf-8")
    assert lexicon.load(tmp_path) == frozenset()


def test_names_are_copied_whole(tiny_e2e):
    seg, pg = tiny_e2e
    recs = parse_e2e_mr("name[The Quiet Walrus], eatType[pub], near[Swan's Nest Lock]")
    rules = ValueRules(frozenset(), absent=False, own=False)
    names = {"quiet": ["quiet", "walrus"], "swan's": ["swan's", "nest", "lock"]}
    outs = [generate_seg(seg.model, seg.vocab, recs, "rm", beam=2, plan=p, rules=rules) for p in (None, [3, 2, 1])]
    outs.append(generate_pg(pg.model, pg.vocab, recs, beam=2, rules=rules))
    seen = 0
    for out in outs:
        toks = [t.lower() for t in out.tokens]
        for i, t in enumerate(toks):
            if t in names:  # a name's first content word is followed by the rest of it
                seen += 1
                assert toks[i : i + len(names[t])] == names[t], out.text
    assert seen >= 2
