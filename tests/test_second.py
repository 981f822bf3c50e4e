"""The ``second`` decoding switch (session 31, docs/design.md §6): the segment model's n-best
ranked with the PG baseline's log-probability too (:mod:`segviz.decode.second`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from segviz import checkpoint, decode
from segviz.data import collate, encode
from segviz.decode import second
from segviz.model import PGModel
from segviz.records import parse_e2e_mr, tokenize
from segviz.result import GenerationResult
from segviz.systems import compare

RECORDS = parse_e2e_mr("name[The Mill], eatType[pub], priceRange[cheap], near[The Sorrento]")


def _candidate(text: str, log_prob: float) -> GenerationResult:
    tokens = tokenize(text)
    return GenerationResult("seg", [], tokens, text, [], [], [], [], scores={"log_prob": log_prob, "length": len(tokens) + 1})


def test_pg_log_probs_are_the_pg_models_own_log_likelihood_of_each_text(tiny):
    pg = checkpoint.load(tiny / "e2e-pg")
    texts = [tokenize("The Mill is a cheap pub near The Sorrento."), tokenize("The Mill is a pub.")]
    got = second.pg_log_probs(pg, RECORDS, texts)
    for t, lp in zip(texts, got, strict=True):  # one text at a time: the training objective's sum
        with torch.no_grad():
            _, stats = pg.model.objective(collate([encode(pg.vocab, RECORDS, t)], len(pg.vocab)))
        assert lp == pytest.approx(-float(stats["nll"]), abs=1e-4)
    assert all(lp < 0 for lp in got) and got[0] != got[1]


def test_second_ranks_by_the_seg_score_plus_half_the_pg_log_probability(monkeypatch):
    a = _candidate("The Mill is a cheap pub near The Sorrento .", -10.0)  # 10 tokens + <eos>: length 11
    b = _candidate("The Mill is a pub near The Sorrento , cheap .", -11.0)
    monkeypatch.setattr(second, "pg_log_probs", lambda partner, records, texts: [-30.0, -6.0])
    ranked = second.second_ranked([a, b], RECORDS, partner=None)
    # a: (-10 - 15) / 11 = -2.27; b: (-11 - 3) / 11 = -1.27: the PG's opinion turns the order round
    assert [r.text for r in ranked] == [b.text, a.text]
    assert [r.scores["second_rank"] for r in ranked] == [1, 0]
    assert [r.scores["second_log_prob"] for r in ranked] == [-6.0, -30.0]
    monkeypatch.setattr(second, "pg_log_probs", lambda partner, records, texts: [-12.0, -14.0])
    assert [r.text for r in second.second_ranked([a, b], RECORDS, None)] == [a.text, b.text]  # -1.45 against -1.64
    assert second.second_ranked([], RECORDS, None) == []


def test_the_switch_picks_from_the_segment_models_own_nbest(tiny):
    seg = checkpoint.load(tiny / "e2e-seg")
    plain, rules = seg.rules("auto"), seg.rules("auto+second")
    assert rules.second and isinstance(rules.partner.model, PGModel)
    nbest = decode.generate_seg_nbest(seg.model, seg.vocab, RECORDS, "rm", 5, 5, rules=plain)
    pg = second.pg_log_probs(rules.partner, RECORDS, [c.tokens for c in nbest])
    want = max(range(len(nbest)), key=lambda i: (nbest[i].scores["log_prob"] + second.WEIGHT * pg[i]) / nbest[i].scores["length"])
    got = decode.generate_seg(seg.model, seg.vocab, RECORDS, "rm", 5, rules=rules)
    assert got.text == nbest[want].text and got.scores["second_rank"] == want
    assert "second_rank" not in decode.generate_seg(seg.model, seg.vocab, RECORDS, "rm", 5, rules=plain).scores


def test_the_partner_is_the_pg_beside_and_its_absence_is_a_clear_error(tiny, tmp_path):
    seg = checkpoint.load(tiny / "e2e-seg")
    assert seg.rules("auto+second").partner.path == tiny / "e2e-pg"
    assert seg.rules("auto").partner is None and not seg.rules("auto").second
    pg = checkpoint.load(tiny / "e2e-pg")
    assert not pg.rules("auto+second").second  # PG reads its own text: the switch is the segment model's
    shutil.copytree(tiny / "e2e-seg", tmp_path / "e2e-seg")
    alone = checkpoint.load(tmp_path / "e2e-seg")
    with pytest.raises(checkpoint.CheckpointError, match="'second' reads a PG checkpoint"):
        alone.rules("auto+second")
    assert alone.rules("auto+second", partner=pg).partner is pg  # given one, it reads that


def test_the_app_shows_a_missing_partner_as_the_segment_models_error(tiny, tmp_path):
    shutil.copytree(tiny / "e2e-seg", tmp_path / "e2e-seg")
    alone = checkpoint.load(tmp_path / "e2e-seg")
    alone.default_rules = "auto+second"
    view = compare("e2e", RECORDS, alone, None).seg
    assert view.result is None and "'second' reads a PG checkpoint" in view.error


def test_the_note_says_which_candidate_the_second_opinion_took():
    first, other, plain = (_candidate("The Mill is a pub .", -5.0) for _ in range(3))
    first.scores["second_rank"], other.scores["second_rank"] = 0, 2
    assert second.second_note(first) == (
        "Ranked with the PG baseline's log-probability of each candidate (weight 0.5): the segment model's own first."
    )
    assert "the segment model's candidate 3, not its first" in second.second_note(other)
    assert second.second_note(plain) is None


@pytest.mark.parametrize("dataset", ["e2e", "webnlg"])
def test_the_shipped_segment_models_read_the_shipped_pg(dataset):
    root = Path(__file__).resolve().parent.parent / "checkpoints"
    seg = checkpoint.load(root / f"{dataset}-seg")
    rules = seg.rules()
    assert rules.second and rules.partner.path == root / f"{dataset}-pg"
    assert not checkpoint.load(root / f"{dataset}-pg").rules(seg.default_rules).second
