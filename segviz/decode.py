"""Decoding: segment-by-segment beam search with constraints, PG beam search, plan forcing,
sampling of diverse structures, and forced alignment (Viterbi) of any text.

Constraints (paper §4 "Decoding"), selectable per call:

- ``none``: segments are non-empty (always on; the paper's "ours")
- ``r``:    + a record is realised at most once (the null record is exempt)  ("+R")
- ``rm``:   + ``<eos>`` is blocked until every record has been realised      ("+RM")

Our choices where the paper is silent: ``<eos>`` is a word of the last segment (it may only
continue a segment, never open one); a segment is cut at ``L`` tokens; finished hypotheses are
ranked by log-probability divided by ``length ** length_penalty``; when no hypothesis can meet
the constraints within ``max_len`` tokens the best unconstrained output is returned with
``fallback_used = True``.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass, field

import torch

from segviz import dp
from segviz.data import BOS_ID, EOS_ID, EOSEG_ID, PAD_ID, UNK_ID, Vocab, collate, encode
from segviz.model import PGModel, SegmentModel, extended_scatter
from segviz.records import Record, detokenize

log = logging.getLogger(__name__)

CONSTRAINTS = ("none", "r", "rm")
CONSTRAINT_LABELS = {"none": "ours", "r": "ours (+R)", "rm": "ours (+RM)"}


@dataclass
class GenerationResult:
    """What a system produced for one input; framework-free and JSON-serialisable (DESIGN §2).

    ``segments`` are ``(start, end, record)`` over ``tokens`` with ``record`` 1..K, or ``None``
    for the null record. ``attention[t][i]`` is the attention of output token ``t`` on source
    token ``i``; ``record_of_source_token[i]`` is 1..K.
    """

    system: str
    records: list[tuple[int, str, list[str]]]  # (id 1..K, label, tokens)
    tokens: list[str]
    text: str
    segments: list[tuple[int, int, int | None]]
    attention: list[list[float]]
    source_tokens: list[str]
    record_of_source_token: list[int]
    plan: list[int] | None = None
    constraints: str | None = None
    scores: dict = field(default_factory=dict)
    fallback_used: bool = False
    elapsed_ms: float = 0.0

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> GenerationResult:
        d = dict(d)
        d["records"] = [tuple(r) for r in d["records"]]
        d["segments"] = [tuple(s) for s in d["segments"]]
        return cls(**d)

    def segment_records(self) -> list[int | None]:
        return [r for _, _, r in self.segments]


def _records_info(records: list[Record]):
    return [(k + 1, r.label, r.tokens) for k, r in enumerate(records)]


def _prepare(vocab: Vocab, records: list[Record]):
    enc = encode(vocab, records)
    batch = collate([enc], len(vocab))
    return enc, batch


def _word(vocab: Vocab, oov: list[str], i: int) -> str:
    return vocab.itos[i] if i < len(vocab) else oov[i - len(vocab)]


def _banned(V: int, n_ext: int) -> torch.Tensor:
    """Ids never emitted as words: <pad> <unk> <bos> <$>.  (n_ext,) bool."""
    ban = torch.zeros(n_ext, dtype=torch.bool)
    ban[[PAD_ID, UNK_ID, BOS_ID, EOSEG_ID]] = True
    return ban


@dataclass
class _SegHyp:
    score: float
    tokens: list[int]
    segments: list[list]  # [start, end, state]
    attn: list[torch.Tensor]
    k: int  # current state, -1 before the first segment
    seg_len: int
    realised: frozenset
    plan_pos: int  # plan records realised so far
    state: tuple  # LSTM (h, c) after the last token, each (H,)
    d: torch.Tensor  # decoder output that reads the next token (H,)
    A_last: torch.Tensor  # context of the last token under k (H,)
    done: bool = False


class SegmentDecoder:
    """Beam search over (segment record, words) for a :class:`SegmentModel`."""

    def __init__(self, model: SegmentModel, vocab: Vocab):
        self.model, self.vocab = model, vocab

    @torch.no_grad()
    def search(
        self,
        records: list[Record],
        constraints: str = "rm",
        beam: int = 5,
        plan: list[int] | None = None,
        max_len: int | None = None,
        length_penalty: float = 1.0,
        sample: torch.Generator | None = None,
    ) -> tuple[_SegHyp | None, list[str], torch.Tensor]:
        """Best hypothesis (or ``None``), the source OOV words and the source record ids.

        ``plan`` is a list of record ids (1..K): the segment records must follow it in order
        (null segments allowed between) and ``<eos>`` waits until it is complete. ``sample``
        draws the record at each boundary from the transition model instead of maximising
        (words stay greedy); used with ``beam=1`` for :func:`sample_structures`.
        """
        if constraints not in CONSTRAINTS:
            raise ValueError(f"constraints must be one of {CONSTRAINTS}, got {constraints!r}")
        model, V = self.model, len(self.vocab)
        model.eval()
        enc_ex, batch = _prepare(self.vocab, records)
        K = len(records)
        S = K + 1
        n_ext = V + len(enc_ex.oov)
        enc = model.encode(batch)
        max_len = max_len or 3 * len(enc_ex.src) + 20
        L = model.cfg.max_seg_len
        ban = _banned(V, n_ext)
        all_recs = frozenset(range(1, S))
        h0, c0 = enc.state0
        d, state = model.step(torch.tensor([BOS_ID]), (h0, c0))
        hyps = [_SegHyp(0.0, [], [], [], -1, 0, frozenset(), 0, (state[0][0], state[1][0]), d[0], torch.zeros_like(d[0]))]
        finished: list[_SegHyp] = []
        for t in range(max_len):
            M = len(hyps)
            encM = enc.index(torch.zeros(M, dtype=torch.long))
            dM = torch.stack([h.d for h in hyps])  # (M, H)
            log_pv, logit_gen, alpha, A = model.generation(encM, dM.unsqueeze(1))
            log_pv, logit_gen, alpha, A = log_pv[:, 0], logit_gen[:, 0], alpha[:, 0], A[:, 0]  # (M, S, ·)
            logp = extended_scatter(
                log_pv.reshape(M * S, V), logit_gen.reshape(M * S), alpha.reshape(M * S, -1),
                encM.src_ext.repeat_interleave(S, 0), n_ext - V,
            ).view(M, S, n_ext)
            logp = logp.masked_fill(ban, -math.inf)
            kM = torch.tensor([max(h.k, 0) for h in hyps])
            started = torch.tensor([h.k >= 0 for h in hyps])
            trans = model.transition_step(encM, torch.stack([h.A_last for h in hyps]), dM, kM)  # (M, S)
            init = model.initial(encM, dM)
            trans = torch.where(started.unsqueeze(1), trans, init)
            # log p($ | y_<=t, r_k) = log p_gen + log p_vocab($): the end symbol is never copied
            ar = torch.arange(M)
            end = torch.nn.functional.logsigmoid(logit_gen[ar, kM]) + log_pv[ar, kM, EOSEG_ID]
            end = torch.where(started, end, torch.zeros(M))
            switch = end.view(M, 1, 1) + trans.unsqueeze(2) + logp  # (M, S, n_ext)
            switch[:, :, EOS_ID] = -math.inf  # <eos> never opens a segment
            cand = switch.clone()
            for m, h in enumerate(hyps):
                if h.k >= 0:
                    cont = logp[m, h.k].clone()
                    if h.seg_len >= L:  # a full segment may still close the text with <eos>
                        cont[torch.arange(n_ext) != EOS_ID] = -math.inf
                    cand[m, h.k] = cont
                blocked = self._blocked(h, constraints, plan, all_recs, S)
                if blocked:
                    cand[m, blocked] = -math.inf
                if not self._may_end(h, constraints, plan, all_recs):
                    cand[m, :, EOS_ID] = -math.inf
            total = cand + torch.tensor([h.score for h in hyps]).view(M, 1, 1)
            flat = total.view(-1)
            if sample is not None:
                picks = self._sample_pick(cand, hyps, sample)
            else:
                n = min(2 * beam, int(torch.isfinite(flat).sum()))
                if n == 0:
                    break
                picks = flat.topk(n).indices.tolist()
            new_hyps: list[_SegHyp] = []
            for idx in picks:
                m, rest = divmod(idx, S * n_ext)
                j, w = divmod(rest, n_ext)
                h = hyps[m]
                if not math.isfinite(flat[idx].item()):
                    continue
                segs = [list(s) for s in h.segments]
                if j == h.k:
                    segs[-1][1] = t + 1
                    seg_len = h.seg_len + 1
                else:
                    segs.append([t, t + 1, j])
                    seg_len = 1
                realised = h.realised | {j} if j > 0 else h.realised
                plan_pos = h.plan_pos + (1 if plan and j != h.k and j > 0 else 0)
                nh = _SegHyp(
                    float(flat[idx]), h.tokens + [w], segs, h.attn + [alpha[m, j]], j, seg_len, realised, plan_pos,
                    h.state, h.d, A[m, j],
                )
                if w == EOS_ID:
                    nh.done = True
                    finished.append(nh)
                else:
                    new_hyps.append(nh)
                if len(new_hyps) >= beam:
                    break
            if not new_hyps:
                break
            # advance the decoder for the surviving hypotheses in one batched step
            y = torch.tensor([hh.tokens[-1] if hh.tokens[-1] < V else UNK_ID for hh in new_hyps])
            hs = torch.stack([hh.state[0] for hh in new_hyps])
            cs = torch.stack([hh.state[1] for hh in new_hyps])
            d_new, (hs, cs) = model.step(y, (hs, cs))
            for i, hh in enumerate(new_hyps):
                hh.state, hh.d = (hs[i], cs[i]), d_new[i]
            hyps = new_hyps
            if len(finished) >= beam:
                break
        else:  # max_len reached: unfinished hypotheses that meet the constraints count (truncated)
            finished += [h for h in hyps if self._may_end(h, constraints, plan, all_recs)]
        best = max(finished, key=lambda f: _norm(f, length_penalty)) if finished else None
        return best, enc_ex.oov, torch.tensor(enc_ex.src_rec)

    @staticmethod
    def _blocked(h: _SegHyp, constraints: str, plan, all_recs, S) -> list[int]:
        """States that hypothesis ``h`` may not switch to."""
        blocked = set()
        if plan:
            nxt = plan[h.plan_pos] if h.plan_pos < len(plan) else None
            blocked |= {j for j in range(1, S) if j != nxt}
        elif constraints in ("r", "rm"):
            blocked |= set(h.realised)
        blocked.discard(h.k)  # continuing the current segment is not a switch
        return sorted(blocked)

    @staticmethod
    def _may_end(h: _SegHyp, constraints: str, plan, all_recs) -> bool:
        if plan:
            return h.plan_pos >= len(plan)
        if constraints == "rm":
            return h.realised >= all_recs
        return True

    @staticmethod
    def _sample_pick(cand: torch.Tensor, hyps, gen: torch.Generator) -> list[int]:
        """Sample the record at a boundary from the transition model, keep words greedy."""
        M, S, n_ext = cand.shape
        picks = []
        for m in range(M):
            best_w = cand[m].max(1)  # best word for each record choice
            probs = torch.softmax(best_w.values, 0)
            if not torch.isfinite(best_w.values).any():
                continue
            j = int(torch.multinomial(probs, 1, generator=gen))
            picks.append(m * S * n_ext + j * n_ext + int(best_w.indices[j]))
        return picks


def _norm(h, length_penalty: float) -> float:
    return h.score / (max(len(h.tokens), 1) ** length_penalty)


def _result_from_seg(hyp: _SegHyp, vocab: Vocab, oov, records, src_rec, system, constraints, plan, fallback, t0) -> GenerationResult:
    ids = hyp.tokens[:-1] if hyp.tokens and hyp.tokens[-1] == EOS_ID else hyp.tokens
    T = len(ids)
    tokens = [_word(vocab, oov, i) for i in ids]
    segments = []
    for s, e, j in hyp.segments:
        e = min(e, T)
        if e > s:
            segments.append((s, e, j if j > 0 else None))
    attn = [a.tolist() for a in hyp.attn[:T]]
    return GenerationResult(
        system=system, records=_records_info(records), tokens=tokens, text=detokenize(tokens, records),
        segments=segments, attention=attn, source_tokens=[t for r in records for t in r.tokens],
        record_of_source_token=src_rec.tolist(), plan=plan, constraints=constraints,
        scores={"log_prob": hyp.score, "length": len(hyp.tokens)}, fallback_used=fallback,
        elapsed_ms=(time.perf_counter() - t0) * 1000,
    )


def generate_seg(
    model: SegmentModel,
    vocab: Vocab,
    records: list[Record],
    constraints: str = "rm",
    beam: int = 5,
    plan: list[int] | None = None,
    system: str = "seg",
    length_penalty: float = 1.0,
    max_len: int | None = None,
) -> GenerationResult:
    """Segment model output for ``records`` under ``constraints`` (optionally a forced ``plan``)."""
    t0 = time.perf_counter()
    if plan is not None:
        K = len(records)
        if sorted(plan) != sorted(set(plan)) or any(not 1 <= p <= K for p in plan):
            raise ValueError(f"plan must list distinct record ids in 1..{K}, got {plan}")
    dec = SegmentDecoder(model, vocab)
    hyp, oov, src_rec = dec.search(records, constraints, beam, plan, max_len=max_len, length_penalty=length_penalty)
    fallback = False
    if hyp is None:
        log.warning("constraints %r (plan %s) could not be met; falling back to unconstrained decoding", constraints, plan)
        hyp, oov, src_rec = dec.search(records, "none", beam, None, max_len=max_len, length_penalty=length_penalty)
        fallback = True
    if hyp is None:  # pragma: no cover - unconstrained search always ends at max_len
        raise RuntimeError("decoding produced no hypothesis")
    return _result_from_seg(hyp, vocab, oov, records, src_rec, system, constraints, plan, fallback, t0)


def sample_structures(
    model: SegmentModel, vocab: Vocab, records: list[Record], n: int = 5, seed: int = 0, beam: int = 5
) -> list[GenerationResult]:
    """Diverse structures (paper appendix B): sample record orders from the transition model,
    then decode each distinct plan with plan forcing. Returns up to ``n`` distinct plans."""
    gen = torch.Generator().manual_seed(seed)
    dec = SegmentDecoder(model, vocab)
    plans: list[list[int]] = []
    for _ in range(4 * n):
        hyp, _, _ = dec.search(records, "rm", beam=1, sample=gen)
        if hyp is None:
            continue
        order = []
        for _, _, j in hyp.segments:
            if j > 0 and j not in order:
                order.append(j)
        order += [j for j in range(1, len(records) + 1) if j not in order]
        if order not in plans:
            plans.append(order)
        if len(plans) >= n:
            break
    return [generate_seg(model, vocab, records, "rm", beam, plan=p, system="seg (sampled plan)") for p in plans]


# ----- PG --------------------------------------------------------------------------------------


@torch.no_grad()
def generate_pg(
    model: PGModel,
    vocab: Vocab,
    records: list[Record],
    beam: int = 5,
    max_len: int | None = None,
    system: str = "pg",
    length_penalty: float = 1.0,
) -> GenerationResult:
    """Beam search for the pointer-generator baseline (no structural constraints exist for it)."""
    t0 = time.perf_counter()
    model.eval()
    V = len(vocab)
    enc_ex, batch = _prepare(vocab, records)
    n_ext = V + len(enc_ex.oov)
    enc = model.encode(batch)
    ban = _banned(V, n_ext)
    max_len = max_len or 3 * len(enc_ex.src) + 20
    st = model.start_state(enc)
    hyps = [(0.0, [], [], (st[0][0], st[1][0], st[2][0]))]
    finished = []
    for _ in range(max_len):
        M = len(hyps)
        encM = enc.index(torch.zeros(M, dtype=torch.long))
        y = torch.tensor([h[1][-1] if h[1] and h[1][-1] < V else (UNK_ID if h[1] else BOS_ID) for h in hyps])
        state = tuple(torch.stack([h[3][i] for h in hyps]) for i in range(3))
        logp, alpha, state = model.token_dist(encM, y, state, n_ext - V)
        logp = logp.masked_fill(ban, -math.inf)
        total = logp + torch.tensor([h[0] for h in hyps]).unsqueeze(1)
        flat = total.view(-1)
        new = []
        for idx in flat.topk(min(2 * beam, flat.numel())).indices.tolist():
            m, w = divmod(idx, n_ext)
            h = hyps[m]
            nh = (float(flat[idx]), h[1] + [w], h[2] + [alpha[m]], (state[0][m], state[1][m], state[2][m]))
            (finished if w == EOS_ID else new).append(nh)
            if len(new) >= beam:
                break
        hyps = new
        if not hyps or len(finished) >= beam:
            break
    pool = finished or hyps

    def norm(h):
        return h[0] / (max(len(h[1]), 1) ** length_penalty)

    score, ids, attn, _ = max(pool, key=norm)
    ids = ids[:-1] if ids and ids[-1] == EOS_ID else ids
    tokens = [_word(vocab, enc_ex.oov, i) for i in ids]
    return GenerationResult(
        system=system, records=_records_info(records), tokens=tokens, text=detokenize(tokens, records),
        segments=[], attention=[a.tolist() for a in attn[: len(ids)]],
        source_tokens=[t for r in records for t in r.tokens], record_of_source_token=list(enc_ex.src_rec),
        constraints=None, scores={"log_prob": score, "length": len(ids) + 1},
        elapsed_ms=(time.perf_counter() - t0) * 1000,
    )


# ----- forced alignment --------------------------------------------------------------------------


@torch.no_grad()
def force_align(
    model: SegmentModel, vocab: Vocab, records: list[Record], tokens: list[str]
) -> list[tuple[int, int, int | None]]:
    """Viterbi segmentation and record of any tokenised text for ``records``.

    Returns ``(start, end, record)`` over ``tokens`` (record 1..K or ``None`` for null); the
    segments cover the text exactly, in order.
    """
    if not tokens:
        return []
    model.eval()
    enc_ex = encode(vocab, records, tokens)
    batch = collate([enc_ex], len(vocab))
    pot = model.potentials(batch)
    _, paths = dp.viterbi(pot.log_init, pot.log_trans, pot.log_emit, pot.log_end, batch.tgt_len, model.cfg.max_seg_len)
    T = len(tokens)  # drop the trailing <eos>
    out = []
    for s, e, j in paths[0]:
        e = min(e, T)
        if e > s:
            out.append((s, e, j if j > 0 else None))
    return out


def align_result(result: GenerationResult, model: SegmentModel, vocab: Vocab, records: list[Record]) -> GenerationResult:
    """Fill ``result.segments`` by forced alignment (used for PG and uploaded outputs)."""
    result.segments = force_align(model, vocab, records, result.tokens)
    return result
