"""Rule ``fullstop`` (session 47): a text the model ends on a word or a pause ends on a full stop,
after every choice, so the words chosen stay the model's (README "Choices")."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from segviz import checkpoint, decode
from segviz.decode.rules import ValueRules, closed_result, closed_results
from segviz.records import Record, tokenize
from segviz.result import GenerationResult

ROOT = Path(__file__).resolve().parents[1]
ON = ValueRules(fullstop=True)


def _result(words: str, cut: int) -> GenerationResult:
    """A result saying ``words`` in two segments split at token ``cut``, one attention row a token."""
    tokens = tokenize(words)
    attention = [[float(t == s) for s in range(3)] for t in range(len(tokens))]
    return GenerationResult("seg", [], tokens, words, [(0, cut, 1), (cut, len(tokens), None)], attention, [], [])


def test_a_text_ended_on_a_word_gets_a_full_stop_in_its_last_segment():
    res = closed_result(_result("The airport is in Alcobendas", 3), [], ON)
    assert res.tokens[-2:] == ["alcobendas", "."] and res.text.endswith("alcobendas.")
    assert res.segments == [(0, 3, 1), (3, 6, None)]  # the last segment holds the full stop
    assert len(res.attention) == 6 and res.attention[-1] == res.attention[-2]  # the word before's row


def test_a_text_ended_on_a_pause_gets_a_full_stop_in_its_place():
    res = closed_result(_result("It is near Gujarat University ,", 2), [], ON)
    assert res.tokens[-2:] == ["university", "."] and len(res.tokens) == 6
    assert res.segments[-1] == (2, 6, None) and len(res.attention) == 6


@pytest.mark.parametrize("words", ["It is in Madrid .", "Is it in Madrid ?", 'It is " Tudor and Jacobean . "'])
def test_a_text_that_ends_a_sentence_is_as_it_was(words):
    before = _result(words, 2)
    assert closed_result(before, [], ON) is before


def test_a_pause_after_a_sentence_end_is_dropped():
    res = closed_result(_result("It is in Madrid . ,", 5), [], ON)
    assert res.tokens[-2:] == ["madrid", "."] and len(res.attention) == 5
    assert res.segments == [(0, 5, 1)]  # the pause's own segment is gone with it


def test_closing_keeps_an_n_best_list_of_distinct_texts():
    open_, closed = _result("It is in Madrid", 2), _result("It is in Madrid .", 2)
    out = closed_results([open_, closed, _result("It is in Spain .", 2)], [], ON)
    assert [r.tokens[-2] for r in out] == ["madrid", "spain"]  # the better-ranked Madrid stays


def test_without_the_rule_nothing_changes():
    before = _result("The airport is in Alcobendas", 3)
    assert closed_result(before, [], ValueRules()) is before and closed_result(before, [], None) is before


def test_fullstop_closes_a_cut_address_and_moves_no_word_of_the_model():
    """The shipped webnlg-seg under +RM ended a dev text on the comma where its address segment
    was cut ("... opp. Gujarat university,"); with ``fullstop`` only that comma changes."""
    path = ROOT / "checkpoints" / "webnlg-seg"
    if not path.exists():
        pytest.skip("shipped checkpoint missing")
    torch.set_num_threads(1)
    ck = checkpoint.load(path)
    recs = [Record(a, v, s) for s, a, v in [
        ("Amdavad_ni_Gufa", "location", "Gujarat"),
        ("Amdavad_ni_Gufa", "address", '"Lalbhai Dalpatbhai Campus, near CEPT University, opp. Gujarat University, University Road"'),
        ("Amdavad_ni_Gufa", "country", "India"), ("Amdavad_ni_Gufa", "location", "Ahmedabad"),
    ]]  # fmt: skip
    rules = ck.rules(ck.default_rules.replace("+fullstop", "") + "-renorm")  # session 48's renorm ends it on a stop itself
    gen = lambda r: decode.generate_seg(ck.model, ck.vocab, recs, "rm", 5, rules=r)  # noqa: E731
    plain, closed = gen(rules), gen(dataclasses.replace(rules, fullstop=True))
    assert plain.tokens[-1] == "," and closed.tokens == plain.tokens[:-1] + ["."]
    assert closed.text.endswith("university.") and closed.segments == plain.segments
