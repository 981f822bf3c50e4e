"""Rule ``heard`` (session 49): under +R / +RM, with ``read``, a record's segment ends only once the
checker reads its record in the text so far (README "A segment that ends before its value is said")."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from segviz import checkpoint, faithfulness
from segviz.constraints import constraint
from segviz.data import EOS_ID, EOSEG_ID
from segviz.decode import generate_seg
from segviz.decode.rules import _ext_id
from segviz.decode.search import SegmentDecoder, _SegHyp
from segviz.records import parse_webnlg_triples, tokenize

ROOT = Path(__file__).resolve().parents[1]
TRIPLES = ['Adisham_Hall | architecturalStyle | "Tudor and Jacabian"', "Adisham_Hall | location | Sri_Lanka",
           "Adisham_Hall | completionDate | 1931", 'Adisham_Hall | buildingStartDate | "1927"']  # fmt: skip
BOTH = {EOSEG_ID, EOS_ID}  # both ends allowed


@pytest.fixture(scope="module")
def ck():
    return checkpoint.load(ROOT / "checkpoints" / "webnlg-seg")


def _ends_left(
    ck, heard: bool, k: int, text: str, level: str = "rm", triples=TRIPLES, filler=False
) -> set[int]:
    """Which of ``$`` and ``<eos>`` stay allowed after ``text``, said in record ``k``'s segment
    (a filler segment with ``filler``), when both rank first."""
    dec, recs = SegmentDecoder(ck.model, ck.vocab), parse_webnlg_triples(triples)
    rules = dataclasses.replace(ck.rules(), heard=heard, second=False, partner=None)
    x = dec._input(recs, constraint(level), 5, None, None, None, None, None, 0, rules)
    tokens = [_ext_id(ck.vocab, x.oov, w) for w in tokenize(text)]
    state = (torch.zeros(1), torch.zeros(1))
    h = _SegHyp(state=state, d=torch.zeros(1), A_last=torch.zeros(1), tokens=tokens, k=k, seg_len=len(tokens),
                boundary=False, content=True, filler=filler)  # fmt: skip
    row = torch.zeros(x.n_ext)
    row[[EOSEG_ID, EOS_ID]] = 1.0  # both ends rank first
    SegmentDecoder._mask_unheard(x, h, row)
    return {e for e in (EOSEG_ID, EOS_ID) if torch.isfinite(row[e])}


def test_a_segment_ends_only_once_the_checker_reads_its_record(ck):
    tudor = "it has the architectural style of tudor"
    assert _ends_left(ck, True, 1, tudor) == set()
    assert _ends_left(ck, True, 1, tudor + " and jacabian") == BOTH
    assert _ends_left(ck, False, 1, tudor) == BOTH  # off: the paper's ends
    assert _ends_left(ck, True, 2, "it is located in sri lanka") == BOTH


def test_heard_asks_nothing_without_the_constraints_or_at_the_cut(ck):
    assert _ends_left(ck, True, 1, "it has the architectural style of tudor", level="none") == BOTH
    cut = " ".join(["tudor"] * ck.model.cfg.max_seg_len)  # a segment of L tokens is cut as ever
    assert _ends_left(ck, True, 1, cut) == BOTH


def test_the_value_said_in_part_is_said_whole(ck):
    """Tune half, Building/4/Id10: +RM ended the style's segment after "tudor" (session 48)."""
    recs = parse_webnlg_triples(TRIPLES)
    texts = {on: generate_seg(ck.model, ck.vocab, recs, "rm", beam=5, rules=dataclasses.replace(ck.rules(), heard=on)).text
             for on in (False, True)}  # fmt: skip
    assert "style of tudor and is" in texts[False], texts[False]
    assert faithfulness.check("webnlg", recs, texts[False]).errors == 1
    assert "Tudor and Jacabian" in texts[True], texts[True]
    assert faithfulness.check("webnlg", recs, texts[True]).errors == 0


def test_a_record_the_checker_cannot_read_alone_is_not_asked_about(ck):
    """``United_Kingdom`` is also the subject of the leader's record, so the checker cannot give it
    to the journal's record alone; the mention rule, which wants the subject as the input names it
    ("AIDS (journal)"), would have kept "Aids journal is from the United Kingdom" open (session 49's
    first version: 45 tune-half +RM texts changed, BLEU −0.7)."""
    triples = ["AIDS_(journal) | country | United_Kingdom", "United_Kingdom | leaderName | Elizabeth_II"]
    said = "aids journal is from the united kingdom"
    assert _ends_left(ck, True, 1, said, triples=triples) == BOTH
    assert _ends_left(ck, True, 2, "where the leader is", triples=triples) == set()  # read alone: asked


def test_a_filler_segment_is_not_asked_about(ck):
    assert _ends_left(ck, True, 1, "and", filler=True) == BOTH
    assert _ends_left(ck, True, 1, "and") == set()
