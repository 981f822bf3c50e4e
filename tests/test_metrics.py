"""Metrics with E2E settings: exact values on tiny cases, padding semantics, leave-one-out sanity."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest
import sacrebleu

from segviz import metrics
from segviz.metrics import bleu, corpus_scores, distinct_ngrams, ptb_tokenize

DATA = Path(os.environ.get("SEGVIZ_DATA", Path(__file__).resolve().parents[1] / ".." / "shared" / "data"))


def test_identical_hyp_ref_gives_perfect_bleu_and_rouge():
    hyps = ["The Eagle is a cheap pub near Café Rouge.", "Zizzi serves Italian food in the city centre."]
    s = corpus_scores(hyps, [[h] for h in hyps], meteor=False)
    assert s["bleu"] == pytest.approx(1.0)
    assert s["rouge_l"] == pytest.approx(1.0)
    assert s["meteor"] is None
    assert s["n"] == 2


def test_bleu_is_lowercased_and_matches_sacrebleu():
    assert bleu(["THE EAGLE IS A PUB ."], [["the eagle is a pub ."]]) == pytest.approx(1.0)
    hyps, refs = ["a cheap pub near the river"], [["a cheap pub by the river", "cheap pub"]]
    expected = (
        sacrebleu.corpus_bleu(hyps, [["a cheap pub by the river"], ["cheap pub"]], lowercase=True).score / 100
    )
    assert bleu(hyps, refs) == pytest.approx(expected)
    assert 0 < bleu(hyps, refs) < 1


def test_missing_references_are_dropped_not_scored_as_empty():
    # A short output whose only real reference is long: an empty padded reference ("") would be the
    # closest length (0) and remove the brevity penalty; None-padding must not.
    hyps = ["a b c", "x y z w v u"]
    refs = [["a b c d e f g h i"], ["x y z w v u", "x y z"]]
    padded_none = (
        sacrebleu.corpus_bleu(hyps, [[r[0] for r in refs], [None, "x y z"]], lowercase=True).score / 100
    )
    padded_empty = (
        sacrebleu.corpus_bleu(hyps, [[r[0] for r in refs], ["", "x y z"]], lowercase=True).score / 100
    )
    assert bleu(hyps, refs) == pytest.approx(padded_none)
    assert padded_none != pytest.approx(padded_empty)


def test_distinct_counts_exact():
    hyps = ["The pub is cheap.", "the pub is near"]
    # tokens: the pub is cheap . | the pub is near -> unigrams {the,pub,is,cheap,.,near}
    assert distinct_ngrams(hyps, 1) == 6
    # trigrams: (the pub is) (pub is cheap) (is cheap .) | (the pub is) (pub is near)
    assert distinct_ngrams(hyps, 3) == 4
    s = corpus_scores(hyps, [["the pub is cheap ."], ["the pub is near"]], meteor=False)
    assert (s["dist1"], s["dist3"]) == (6, 4)


def test_ptb_tokenizer_lowercases_and_drops_punctuation():
    out = ptb_tokenize(["The Café costs £20-25, isn't it?", ""])
    assert out[0] == "the café costs # 20-25 is n't it"
    assert out[1] == ""


def test_python_fallback_tokenizer_when_java_missing(monkeypatch, caplog):
    monkeypatch.setattr(metrics.shutil, "which", lambda _: None)
    out = ptb_tokenize(["The Café costs £20-25, isn't it?"])
    assert out == ["the café costs # 20-25 is n't it"]
    s = corpus_scores(["a pub ."], [["a pub ."]], meteor=True)
    assert s["meteor"] is None
    assert "java not found" in caplog.text


def test_rouge_cider_known_values():
    # ROUGE-L: LCS("a b c d", "a c d e") = 3, P = R = 3/4 -> F = 0.75.
    s = corpus_scores(["a b c d", "x y"], [["a c d e"], ["x y"]], meteor=False)
    assert s["rouge_l"] == pytest.approx((0.75 + 1.0) / 2)
    # CIDEr of an identical pair is positive; the mismatching item drags the mean down.
    assert 0 < s["cider"] < corpus_scores(["a c d e", "x y"], [["a c d e"], ["x y"]], meteor=False)["cider"]


def test_meteor_identical_is_one():
    # One java start-up (~5-10 s on a busy 2-core machine).
    s = corpus_scores(["the eagle is a pub", "zizzi is cheap"], [["the eagle is a pub"], ["zizzi is cheap"]])
    assert s["meteor"] == pytest.approx(1.0, abs=1e-6)


def test_input_validation():
    with pytest.raises(ValueError):
        corpus_scores([], [])
    with pytest.raises(ValueError):
        corpus_scores(["a"], [["a"], ["b"]])
    with pytest.raises(ValueError):
        corpus_scores(["a"], [[]])


@pytest.mark.data
@pytest.mark.skipif(not (DATA / "e2e" / "dev.csv").exists(), reason="shared data missing")
def test_leave_one_out_human_references_plausible():
    groups: dict[str, list[str]] = {}
    with open(DATA / "e2e" / "dev.csv", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            groups.setdefault(row["mr"], []).append(row["ref"])
    items = list(groups.values())[:150]
    hyps, refs = [g[0] for g in items], [g[1:] for g in items]
    s = corpus_scores(hyps, refs, meteor=False)
    # Human references against the other references score well below 1 but clearly above noise.
    assert 0.25 < s["bleu"] < 0.8
    assert 0.4 < s["rouge_l"] < 0.85
    assert 0.5 < s["cider"] < 4.0


def test_bleu_stats_add_up_to_corpus_bleu_for_any_subset():
    """Summed per-output statistics give :func:`bleu` exactly, on any subset (what the bootstrap
    draws), with references of different counts (None padding as :func:`bleu` takes them)."""
    import numpy as np

    from segviz.metrics import bleu_from_stats, bleu_stats

    hyps = ["The Eagle is a cheap pub .", "Aromi is a coffee shop", "a b c d e f", "Zizzi is near the river ."]
    refs = [["the eagle is a cheap pub in the city ."], ["Aromi is a coffee shop .", "Aromi serves coffee ."],
            ["a b c d x f"], ["Zizzi is a pub near the river .", None]]
    st = bleu_stats(hyps, refs)
    assert st.shape == (4, 10) and st[0, 0] == 7 and st[0, 2] == 7  # 7 words, all seven unigrams match
    assert bleu_from_stats(st.sum(0)) == pytest.approx(bleu(hyps, refs), abs=1e-12)
    for subset in ([0, 1], [1, 3, 3], [2, 0, 0, 1]):
        sub = np.array(subset)
        want = bleu([hyps[i] for i in subset], [refs[i] for i in subset])
        assert bleu_from_stats(st[sub].sum(0)) == pytest.approx(want, abs=1e-12)


def test_bleu_gap_interval_is_paired_seeded_and_covers_the_gap():
    import numpy as np

    from segviz.metrics import bleu, bleu_gap_interval, bleu_stats

    refs = [["the place number is a cheap pub near the river ."] for _ in range(40)]
    good = [r[0] if i % 4 else "the place is a cheap pub ." for i, r in enumerate(refs)]
    words = "the place number is a cheap pub near the river .".split()
    worse = [" ".join(w for j, w in enumerate(words) if j % 7 != i % 7) for i in range(40)]  # one word left out
    a, b = bleu_stats(good, refs), bleu_stats(worse, refs)
    assert bleu_gap_interval(a, a) == (0.0, 0.0)  # paired: the same system never differs
    lo, hi = bleu_gap_interval(a, b)
    gap = 100 * (bleu(good, refs) - bleu(worse, refs))
    assert 0 < lo < gap < hi < 100 and (lo, hi) == bleu_gap_interval(a, b)  # seeded
    assert bleu_gap_interval(a, b, seed=1) != (lo, hi)
    narrow = bleu_gap_interval(a, b, level=0.5)
    assert lo < narrow[0] < narrow[1] < hi
    with pytest.raises(ValueError):
        bleu_gap_interval(a, b[:-1])
    assert np.all(a[:, 2:6] <= a[:, 6:10])  # matches never exceed the n-grams there are
