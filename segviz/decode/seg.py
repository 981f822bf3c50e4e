"""The segment model's outputs as :class:`GenerationResult`: the best (:func:`generate_seg`), the
n best (:func:`generate_seg_nbest`), and diverse structures (:func:`sample_structures`)."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable

import torch

from segviz.constraints import Constraint, constraint
from segviz.data import EOS_ID, Vocab
from segviz.decode.beam import NO_REPEAT_NGRAM, _clip, _ranked, _records_info, _word
from segviz.decode.rules import ValueRules, closed_results
from segviz.decode.search import SegmentDecoder, _SegHyp
from segviz.decode.second import second_ranked
from segviz.model import SegmentModel
from segviz.records import Record, detokenize
from segviz.result import GenerationResult

log = logging.getLogger(__name__)


def _check_plan(plan: list[int] | None, K: int) -> None:
    if plan is not None and (sorted(plan) != sorted(set(plan)) or any(not 1 <= p <= K for p in plan)):
        raise ValueError(f"plan must list distinct record ids in 1..{K}, got {plan}")


WIDER = (1, 4, 16)  # beam widths tried, as multiples of the asked beam, before a rule is dropped


def _search_with_fallback(dec: SegmentDecoder, records, constraints, beam, plan, rules, content_rule, mentions, n,
                          **common) -> tuple[list[_SegHyp], list[str], torch.Tensor, bool]:  # fmt: skip
    """What the constraints ask, with the beam widened (``WIDER``) while no hypothesis can end
    (the value rules can leave a narrow beam with no way to end); then without constraints (the
    result says so: the last value is ``fallback_used``), widened again; then without the value
    rules too."""
    tries = [(constraints, w * beam, plan, rules, content_rule, mentions) for w in WIDER]
    tries += [("none", w * beam, None, rules, None, None) for w in WIDER if rules is not None or w == 1]
    tries.append(("none", beam, None, None, None, None))
    seen = []
    for level, width, p, r, content, ment in tries:
        key = (constraint(level).name, width, p, r is None, content, ment)
        if key in seen:  # constraints "none": the unconstrained tries are the first ones again
            continue
        seen.append(key)
        ranked, oov, src_rec = dec.search_n(
            records, level, width, p, rules=r, content_rule=content, mentions=ment, n=n, **common
        )
        if ranked:
            return ranked, oov, src_rec, constraint(level).name != constraint(constraints).name or p != plan or r is not rules
        if width == WIDER[-1] * beam and level is constraints:
            if constraint(level).name == "none":  # only the value rules can be dropped
                log.warning("the value rules left no output that can end; decoding without them")
            else:
                log.warning("constraints %r (plan %s) could not be met; falling back to unconstrained decoding",
                            constraints, plan)  # fmt: skip
    raise RuntimeError(
        "decoding produced no hypothesis"
    )  # pragma: no cover - unconstrained search ends at max_len


def _resegmented(model, vocab, dec, records, level, beam, rules, content_rule, mentions, oov, common) -> _SegHyp | None:
    """``rules.resegment``: the unconstrained output under the same rules, segmented again by the
    search of ``level`` with its words forced (every constraint and rule still holds), or None
    when no such segmentation can end."""
    free = generate_seg_nbest(model, vocab, records, "none", beam, 1, rules=_open_ended(rules), **common)[0]
    if free.fallback_used:  # not the rules' own text: nothing to keep
        return None
    again, _, _ = dec.search_n(records, level, beam, rules=rules, content_rule=content_rule, mentions=mentions,
                               n=1, forced=_ids(vocab, oov, free.tokens), **common)  # fmt: skip
    return again[0] if again else None


def _open_ended(rules: ValueRules) -> ValueRules:
    """``rules`` without ``fullstop``: the words the model itself said, as ``resegment`` forces them."""
    return dataclasses.replace(rules, fullstop=False)


def _marked(result: GenerationResult) -> GenerationResult:
    """``result`` with ``resegmented`` in its scores: the unconstrained text, segmented again."""
    return dataclasses.replace(result, scores={**result.scores, "resegmented": True})


def resegment_note(result: GenerationResult) -> str | None:
    """In words for the app, when ``result`` is the unconstrained text segmented again under the
    constraints (``rules.resegment``, its ``resegmented`` score); None otherwise."""
    if not (result.scores or {}).get("resegmented"):
        return None
    return ("The model's unconstrained text, segmented again so that it meets the constraints "
            "(resegment): it scored best of the candidates.")


def _ids(vocab: Vocab, oov: list[str], tokens: list[str]) -> list[int]:
    """``tokens`` as extended ids, ``<eos>`` last: a word of the input outside the vocabulary (or
    hidden from it, :meth:`Vocab.hiding`) as its copy, any other by its vocabulary id."""
    copies = {w: len(vocab) + j for j, w in enumerate(oov)}
    return [copies[w] if w in copies else vocab.stoi[w] for w in tokens] + [EOS_ID]


def _result_from_seg(
    hyp: _SegHyp, vocab: Vocab, oov, records, src_rec, system, constraints, plan, fallback, t0
) -> GenerationResult:
    ids = hyp.tokens[:-1] if hyp.tokens and hyp.tokens[-1] == EOS_ID else hyp.tokens
    T = len(ids)
    tokens = [_word(vocab, oov, i) for i in ids]
    return GenerationResult(
        system=system,
        records=_records_info(records),
        tokens=tokens,
        text=detokenize(tokens, records),
        segments=_clip(hyp.segments, T),
        attention=[a.tolist() for a in hyp.attn[:T]],
        source_tokens=[t for r in records for t in r.tokens],
        record_of_source_token=src_rec.tolist(),
        plan=plan,
        constraints=constraints,
        scores={"log_prob": hyp.score, "length": len(hyp.tokens)},
        fallback_used=fallback,
        elapsed_ms=(time.perf_counter() - t0) * 1000,
    )


def generate_seg_nbest(
    model: SegmentModel,
    vocab: Vocab,
    records: list[Record],
    constraints: str | Constraint = "rm",
    beam: int = 5,
    n: int | None = None,
    *,
    plan: list[int] | None = None,
    system: str = "seg",
    length_penalty: float = 1.0,
    max_len: int | None = None,
    no_repeat_ngram: int = NO_REPEAT_NGRAM,
    content_rule: bool | None = None,
    mentions: bool | None = None,
    rules: ValueRules | None = None,
) -> list[GenerationResult]:
    """Up to ``n`` (default ``beam``) outputs with distinct texts for ``records``, best first by
    the length-normalised score :func:`generate_seg` picks by, so the first is its output.

    The beam keeps finishing hypotheses until ``beam`` outputs are done, so ``n <= beam`` is
    what is guaranteed (fewer when several finished hypotheses say the same words, or when the
    length budget ends the search first). Arguments as in :func:`generate_seg`; all results
    share one ``fallback_used``. With ``rules.second`` (and its ``partner``) the ``beam`` outputs
    are ranked with the PG baseline's log-probability too (:mod:`segviz.decode.second`)."""
    t0 = time.perf_counter()
    _check_plan(plan, len(records))
    name = constraint(constraints).name
    dec = SegmentDecoder(model, vocab)
    second = rules is not None and rules.second and rules.partner is not None
    common = {"max_len": max_len, "length_penalty": length_penalty, "no_repeat_ngram": no_repeat_ngram}
    width = max(n or beam, beam) if second else n or beam
    ranked, oov, src_rec, fallback = _search_with_fallback(
        dec, records, constraints, beam, plan, rules, content_rule, mentions, width, **common
    )  # fmt: skip
    own = None
    if rules is not None and rules.resegment and plan is None and constraint(name).counts_realised and not fallback:
        own = _resegmented(model, vocab, dec, records, name, beam, rules, content_rule, mentions, oov, common)
        ranked = _ranked(ranked + ([own] if own else []), width + 1, length_penalty)  # resegment: the free text joins
        ranked = ranked if second else ranked[: n or beam]  # with second: a sixth candidate, ranked with the rest
    results = [_result_from_seg(h, vocab, oov, records, src_rec, system, name, plan, fallback, t0) for h in ranked]
    results = [_marked(r) if h is own else r for h, r in zip(ranked, results, strict=True)]
    if second:  # the PG baseline's second opinion ranks them (segviz.decode.second)
        ms = (time.perf_counter() - t0) * 1000
        results = [dataclasses.replace(r, elapsed_ms=ms) for r in second_ranked(results, records, rules.partner, length_penalty)[: n or beam]]
    return closed_results(results, records, rules)  # fullstop: after every choice


def generate_seg(
    model: SegmentModel,
    vocab: Vocab,
    records: list[Record],
    constraints: str | Constraint = "rm",
    beam: int = 5,
    plan: list[int] | None = None,
    system: str = "seg",
    **options,
) -> GenerationResult:
    """Segment model output for ``records`` under ``constraints`` (optionally a forced ``plan``):
    the first of :func:`generate_seg_nbest`, whose keyword ``options`` (``length_penalty``,
    ``max_len``, ``no_repeat_ngram``, ``content_rule``, ``mentions``, ``rules``) and defaults it
    takes (content and mention rules on with r/rm, no value rules). With ``rules.rerank`` the
    ``beam`` best are reranked by the checker (:func:`segviz.rerank.rerank`), with ``rules.widen``
    a wider search joins them when every one has a fault (:func:`_reranked`), and with
    ``rules.free`` (r / rm, no plan) the unconstrained output is kept when the record checker
    finds it exact (:func:`_free_pick`); with ``rules.keep`` too that free text, and the output
    under "none", come from the model's own search (:func:`_unguided`); with ``rules.close`` too
    the wider search always joins (with ``rules.widen``) when the free text has a fault, and the
    checker's pick is, of the candidates with the fewest faults, the one the fewest word edits from the free text (:func:`segviz.rerank.word_edits`); ``elapsed_ms``
    then counts every search."""
    rules = options.get("rules")
    unconstrained = plan is None and constraint(constraints).name == "none"
    if rules is not None and rules.keep and rules.free and unconstrained:
        rules = _unguided(rules)  # keep: the unconstrained system is the model's own search
    if rules is None or not rules.rerank:
        options = {**options, "rules": rules} if "rules" in options else options
        return generate_seg_nbest(model, vocab, records, constraints, beam, 1, plan=plan, system=system, **options)[0]
    t0 = time.perf_counter()

    def search(width: int) -> list[GenerationResult]:
        return generate_seg_nbest(model, vocab, records, constraints, width, width, plan=plan, system=system, **options)

    best = own = None
    if rules.free and plan is None and not unconstrained:
        free_options = {k: v for k, v in options.items() if k not in _RULE_OPTIONS}
        own = generate_seg(model, vocab, records, "none", beam, system=system, **free_options)  # keep: unguided
        best = _free_pick(rules, records, own, constraint(constraints).name)
    if best is None:
        near = own.tokens if own is not None and rules.close else None  # close: nearest the own text
        best = _reranked(rules, records, search(beam), lambda: search(WIDEN * beam), near)
    return dataclasses.replace(best, elapsed_ms=(time.perf_counter() - t0) * 1000)


WIDEN = 4  # ``widen``: the beam of the second search, as a multiple of the asked beam
_RULE_OPTIONS = ("content_rule", "mentions")  # what the constraints' search takes and the free one not


def _unguided(rules: ValueRules) -> ValueRules:
    """``rules`` without the checker's switches: the model's own search (``keep``)."""
    return dataclasses.replace(rules, rerank=False, widen=False, free=False, keep=False, close=False, relations=False)


def _free_pick(rules: ValueRules, records: list[Record], own: GenerationResult, label: str) -> GenerationResult | None:
    """``rules.free``: ``own``, the unconstrained output under the same rules (reranked, widened;
    with ``rules.keep`` the model's own search, :func:`_unguided`),
    when the record checker finds it exact: marked ``rerank_free`` and labelled with the
    constraints asked (``label``); None otherwise. Its segments are the free model's own."""
    from segviz.rerank import record_errors

    if record_errors(rules.dataset, records, own):
        return None
    return dataclasses.replace(own, constraints=label, scores={**own.scores, "rerank_free": True})


def _reranked(
    rules: ValueRules | None,
    records: list[Record],
    ranked: list[GenerationResult],
    wider: Callable[[], list[GenerationResult]] | None = None,
    near: list[str] | None = None,
) -> GenerationResult:
    """The first of ``ranked``, or with ``rules.rerank`` the one :func:`segviz.rerank.rerank` picks.
    With ``rules.widen`` too, when every candidate has a fault (always, given ``near``: the
    ``close`` switch), ``wider()`` (the n-best of a ``WIDEN`` times wider beam) joins the list
    after them and the checker picks again, the fewest faults nearest ``near`` if given (with
    ``rules.relations``, of the fewest faults the fewest records said with another relation's
    words, :func:`segviz.rerank.relation_faults`); not when
    ``ranked`` is already a fallback (its wider tries failed), and a fallback of the wider search
    does not join a list that met the constraints."""
    if rules is None or not rules.rerank:
        return ranked[0]
    from segviz.rerank import rerank

    can_widen = rules.widen and wider is not None and not ranked[0].fallback_used
    # close (near given) widens whatever the first list holds: its checking would be done twice
    relations = rules.relation_words if rules.relations else None  # relations: the next criterion
    best = None if can_widen and near is not None else rerank(rules.dataset, records, ranked, near, relations)
    if can_widen and (best is None or best.scores["rerank_faults"]):
        texts = {c.text for c in ranked}
        pool = ranked + [c for c in wider() if c.text not in texts and not c.fallback_used]
        best = rerank(rules.dataset, records, pool, near, relations)
        best.scores = {**best.scores, "rerank_widened": len(pool)}
    return best


def sample_structures(
    model: SegmentModel,
    vocab: Vocab,
    records: list[Record],
    n: int = 5,
    seed: int = 0,
    beam: int = 5,
    *,
    rules: ValueRules | None = None,
    draws: int = 4,
) -> list[GenerationResult]:
    """Diverse structures (paper appendix B): sample record orders from the transition model
    (at most ``draws * n`` samples), then decode each distinct plan with plan forcing (and
    ``rules``). Returns up to ``n`` distinct plans."""
    gen = torch.Generator().manual_seed(seed)
    dec = SegmentDecoder(model, vocab)
    plans: list[list[int]] = []
    for _ in range(draws * n):
        # sample under +R (sampling under +RM can wander until the length budget runs out);
        # records the sample skipped are appended to its order
        hyp, _, _ = dec.search(records, "r", beam=1, sample=gen)
        if hyp is None:
            continue
        order = list(dict.fromkeys(j for _, _, j in hyp.segments if j > 0))
        order += [j for j in range(1, len(records) + 1) if j not in order]
        if order not in plans:
            plans.append(order)
        if len(plans) >= n:
            break
    return [
        generate_seg(model, vocab, records, "rm", beam, plan=p, system="seg (sampled plan)", rules=rules)
        for p in plans
    ]
