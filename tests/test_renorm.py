"""Rule ``renorm`` (session 48): under +R / +RM / a plan the record choice is the transition
distribution renormalised over the records the constraints leave (README "Choices")."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest
import torch

from segviz import checkpoint
from segviz.constraints import constraint
from segviz.data import BOS_ID
from segviz.decode import generate_seg
from segviz.decode.rules import ValueRules
from segviz.decode.search import SegmentDecoder, _SegHyp
from segviz.records import parse_webnlg_triples

ROOT = Path(__file__).resolve().parents[1]
TRIPLES = ["Alan_Bean | birthPlace | Wheeler,_Texas", "Alan_Bean | occupation | Test_pilot",
           "Alan_Bean | mission | Apollo_12", "Apollo_12 | operator | NASA"]  # fmt: skip


@pytest.fixture(scope="module")
def ck():
    return checkpoint.load(ROOT / "checkpoints" / "webnlg-seg")


@torch.no_grad()
def _choices(ck, renorm: bool, level: str, realised: frozenset) -> dict[int, float]:
    """Record -> log-probability of choosing it first, for a start hypothesis that has
    ``realised`` (as if those records had been said)."""
    dec, recs = SegmentDecoder(ck.model, ck.vocab), parse_webnlg_triples(TRIPLES)
    rules = ValueRules(names=False, absent=False, own=False, values=False, renorm=renorm)
    x = dec._input(recs, constraint(level), 5, None, None, None, None, None, 0, rules)  # no plan, no sampling
    d, state = ck.model.step(torch.tensor([BOS_ID]), x.enc.state0)  # (1, H)
    h = _SegHyp(state=(state[0][0], state[1][0]), d=d[0], A_last=torch.zeros_like(d[0]), realised=realised)
    return {j: score for score, _, _, j in dec._record_cands(x, [h])}


def test_the_records_left_share_the_whole_probability(ck):
    left = _choices(ck, True, "rm", frozenset({1, 2}))
    assert set(left) == {0, 3, 4}  # the null record and the two not said
    assert math.isclose(sum(math.exp(v) for v in left.values()), 1.0, rel_tol=1e-5)
    paper = _choices(ck, False, "rm", frozenset({1, 2}))
    assert sum(math.exp(v) for v in paper.values()) < 0.999  # the paper's masked choice leaves mass out
    ratio = {j: left[j] - paper[j] for j in left}  # the same order: one constant is added
    assert max(ratio.values()) - min(ratio.values()) < 1e-5 and min(ratio.values()) > 0


def test_nothing_blocked_nothing_changes(ck):
    assert _choices(ck, True, "none", frozenset({1, 2})) == _choices(ck, False, "none", frozenset({1, 2}))
    assert _choices(ck, True, "rm", frozenset()) == _choices(ck, False, "rm", frozenset())


def test_unconstrained_decoding_is_unchanged(ck):
    recs = parse_webnlg_triples(TRIPLES)
    on = dataclasses.replace(ck.rules(), renorm=True)
    assert (
        generate_seg(ck.model, ck.vocab, recs, "none", beam=5, rules=on).text
        == generate_seg(
            ck.model, ck.vocab, recs, "none", beam=5, rules=dataclasses.replace(on, renorm=False)
        ).text
    )
