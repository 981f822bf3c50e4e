"""Beam search for the pointer-generator baseline (docs/design.md §1 "PG baseline"): no
structural constraints exist for it; ``no_repeat_ngram`` and the value rules act as for the
segment model. Letters: ``M`` live hypotheses, ``n_ext = V + #oov`` extended ids, ``H`` hidden."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch

from segviz.data import BOS_ID, EOS_ID, UNK_ID, Vocab
from segviz.decode.beam import NO_REPEAT_NGRAM, _banned, _beam_done, _prepare, _ranked, _records_info, _word
from segviz.decode.rules import (
    ValueRules,
    _absent_ids,
    _alien_ids,
    _force,
    _inner_ids,
    _just_said,
    _month_ids,
    _owed_after,
    _phrases,
    _ran_on,
    _run_on,
    _stranger_ids,
    _unheld_ids,
    closed_results,
    date_phrases,
    dates_again,
    dates_open,
    doubled,
    doubled_ok,
    entity_starts,
    foreign_ends,
    foreign_names,
    number_room,
    numbers_spent,
    repeated_ngram_ends,
)
from segviz.model import PGEncoding, PGModel
from segviz.records import Record, detokenize
from segviz.result import GenerationResult


@dataclass
class _PGHyp:
    score: float
    tokens: list[int]
    attn: list[torch.Tensor]  # (N,) per token
    state: tuple  # (h, c, A_prev), each (H,)
    owed: tuple = ()  # the rests of the proper names being copied, one tuple each (ValueRules.names, rules._owed_after)


@dataclass
class _PGInput:
    enc: PGEncoding
    V: int
    n_ext: int
    ban: torch.Tensor  # (n_ext,) bool: never a word
    names: list[tuple]  # proper names copied whole once begun
    beam: int
    no_repeat_ngram: int
    inner: list[int] = field(default_factory=list)  # ids said only after their name's first word
    run_on: dict = field(default_factory=dict)  # unseen name -> ids that would run it on into a value
    doubles: frozenset | None = None  # ids the input says twice in a row (rules.doubled_ok), None when the rule is off
    numbers: dict | None = None  # number id -> how often the input holds it (rules.number_room), None when the rule is off
    foreign: dict | None = None  # training names the input does not hold (rules.foreign_names), None when off
    dates: dict = field(default_factory=dict)  # k -> its date written out, copied whole once begun (rules.date_phrases)


def _token_logp(model: PGModel, x: _PGInput, hyps: list[_PGHyp]):
    """One decoder step for every hypothesis: ``log p (M, n_ext)`` with the rule masks applied,
    ``alpha (M, N)`` and the new state (each ``(M, H)``). OOV words are fed back as ``<unk>``."""
    y = torch.tensor(
        [h.tokens[-1] if h.tokens and h.tokens[-1] < x.V else (UNK_ID if h.tokens else BOS_ID) for h in hyps]
    )
    state = tuple(torch.stack([h.state[i] for h in hyps]) for i in range(3))  # 3 x (M, H)
    raw, alpha, state = model.token_dist(x.enc, y, state, x.n_ext - x.V)  # (M, n_ext)
    logp = raw.masked_fill(x.ban, -math.inf)
    for m, h in enumerate(hyps):
        rep = repeated_ngram_ends(h.tokens, x.no_repeat_ngram) + doubled(h.tokens, x.doubles) + numbers_spent(h.tokens, x.numbers)
        rep += foreign_ends(h.tokens, x.foreign) + dates_again(h.tokens, x.dates)
        if rep:
            logp[m, rep] = -math.inf
        if h.owed:  # a proper name is being copied: only its next token
            _force(logp[m], raw[m], h.owed)
        else:
            logp[m, _just_said(h.tokens, x.names)] = -math.inf
            logp[m, _ran_on(h.tokens, x.run_on)] = -math.inf
            logp[m, x.inner] = -math.inf  # a name's later words only after its first
    return logp, alpha, state


def _expand(x: _PGInput, hyps: list[_PGHyp], logp, alpha, state, finished: list[_PGHyp]) -> list[_PGHyp]:
    """The ``beam`` best continuations over all hypotheses and words (of the ``2 beam`` best
    scores); those that emit ``<eos>`` go to ``finished``."""
    flat = (logp + torch.tensor([h.score for h in hyps]).unsqueeze(1)).view(-1)  # (M * n_ext,)
    new: list[_PGHyp] = []
    for idx in flat.topk(min(2 * x.beam, flat.numel())).indices.tolist():
        m, w = divmod(idx, x.n_ext)
        h = hyps[m]
        nh = _PGHyp(float(flat[idx]), h.tokens + [w], h.attn + [alpha[m]], (state[0][m], state[1][m], state[2][m]),
                    _owed_after(h.owed, x.names + [s for f in x.dates.values() for s in dates_open(h.tokens, f)], w))  # fmt: skip
        (finished if w == EOS_ID else new).append(nh)
        if len(new) >= x.beam:
            break
    return new


@torch.no_grad()
def _pg_search(model: PGModel, vocab: Vocab, records, beam, max_len, length_penalty, no_repeat_ngram, rules):
    """The finished hypotheses (the live ones when none finished) and the encoded input."""
    model.eval()
    enc_ex, batch = _prepare(vocab, records)
    V, n_ext = len(vocab), len(vocab) + len(enc_ex.oov)
    ban = _banned(n_ext)
    ban[_absent_ids(vocab, enc_ex.oov, records, rules)] = True
    ban[_month_ids(vocab, enc_ex.oov, records, rules)] = True
    ban[_unheld_ids(vocab, enc_ex.oov, records, rules)] = True
    ban[_stranger_ids(vocab, enc_ex.oov, records, rules)] = True
    ban[_alien_ids(vocab, enc_ex.oov, records, rules)] = True
    names = [p for ps in _phrases(vocab, enc_ex.oov, records, rules).values() for p in ps]
    inner = _inner_ids(vocab, enc_ex.oov, names, entity_starts(vocab, enc_ex.oov, records))
    x = _PGInput(model.encode(batch), V, n_ext, ban, names, beam, no_repeat_ngram, inner,
                 _run_on(vocab, enc_ex.oov, records, rules, names), doubled_ok(vocab, enc_ex.oov, records, rules),
                 number_room(vocab, enc_ex.oov, records, rules), foreign_names(vocab, enc_ex.oov, records, rules),
                 date_phrases(vocab, enc_ex.oov, records, rules))  # fmt: skip
    st = model.start_state(x.enc)
    hyps = [_PGHyp(0.0, [], [], (st[0][0], st[1][0], st[2][0]))]
    finished: list[_PGHyp] = []
    for _ in range(max_len or 3 * len(enc_ex.src) + 20):
        hyps = _expand(x, hyps, *_token_logp(model, x, hyps), finished)
        if not hyps or _beam_done(finished, hyps, beam, length_penalty):
            break
    return finished or hyps, enc_ex


def _result_from_pg(h: _PGHyp, vocab: Vocab, records, enc_ex, system: str, t0: float) -> GenerationResult:
    ids = h.tokens[:-1] if h.tokens and h.tokens[-1] == EOS_ID else h.tokens
    tokens = [_word(vocab, enc_ex.oov, i) for i in ids]
    return GenerationResult(
        system=system,
        records=_records_info(records),
        tokens=tokens,
        text=detokenize(tokens, records),
        segments=[],
        attention=[a.tolist() for a in h.attn[: len(ids)]],
        source_tokens=[t for r in records for t in r.tokens],
        record_of_source_token=list(enc_ex.src_rec),
        constraints=None,
        scores={"log_prob": h.score, "length": len(ids) + 1},
        elapsed_ms=(time.perf_counter() - t0) * 1000,
    )


def generate_pg_nbest(
    model: PGModel,
    vocab: Vocab,
    records: list[Record],
    beam: int = 5,
    n: int | None = None,
    *,
    max_len: int | None = None,
    system: str = "pg",
    length_penalty: float = 1.0,
    no_repeat_ngram: int = NO_REPEAT_NGRAM,
    rules: ValueRules | None = None,
) -> list[GenerationResult]:
    """Up to ``n`` (default ``beam``) PG outputs with distinct texts, best first by the
    length-normalised score :func:`generate_pg` picks by (the first is its output). The beam
    keeps finishing hypotheses until ``beam`` outputs are done, so ``n <= beam`` is what is
    guaranteed (fewer when finished hypotheses repeat a text or the length budget ends first)."""
    t0 = time.perf_counter()
    pool, enc_ex = _pg_search(model, vocab, records, beam, max_len, length_penalty, no_repeat_ngram, rules)
    ranked = [_result_from_pg(h, vocab, records, enc_ex, system, t0) for h in _ranked(pool, n or beam, length_penalty)]
    return closed_results(ranked, records, rules)  # fullstop: after every choice


def generate_pg(
    model: PGModel, vocab: Vocab, records: list[Record], beam: int = 5, **options
) -> GenerationResult:
    """Beam search for the pointer-generator baseline (no structural constraints exist for it;
    ``no_repeat_ngram`` and ``rules.absent`` as for the segment model): the first of
    :func:`generate_pg_nbest`, whose keyword ``options`` (``max_len``, ``system``,
    ``length_penalty``, ``no_repeat_ngram``, ``rules``) and defaults it takes; ``rules.rerank``
    and ``rules.widen`` as for :func:`~segviz.decode.seg.generate_seg` (``free`` and ``close`` do nothing here;
    with ``free`` and ``keep``, PG, an unconstrained system, is the model's own search)."""
    from segviz.decode.seg import WIDEN, _reranked, _unguided

    rules = options.get("rules")
    if rules is not None and rules.free and rules.keep:
        rules = options["rules"] = _unguided(rules)
    n = beam if rules is not None and rules.rerank else 1
    ranked = generate_pg_nbest(model, vocab, records, beam, n, **options)
    w = WIDEN * beam
    return _reranked(rules, records, ranked, lambda: generate_pg_nbest(model, vocab, records, w, w, **options))
