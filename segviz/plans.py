"""The Plan editor's backend: decoding with a forced record order, plans sampled from the
transition model (paper appendix B), and the list of plans ranked by log-probability per token.
No Streamlit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from segviz import decode
from segviz.checkpoint import Checkpoint
from segviz.inspector import flag_kinds, invented_words
from segviz.records import Record, RecordError
from segviz.systems import SystemView, _check, _run_seg, _threads


def generate_with_plan(
    dataset: str, records: list[Record], seg: Checkpoint, plan: list[int], beam: int = 5
) -> SystemView:
    """The segment model's output with the record order forced to ``plan`` (record ids 1..K)."""
    if sorted(plan) != list(range(1, len(records) + 1)):
        raise RecordError(f"the plan must order every record exactly once (1..{len(records)}), got {plan}")
    with _threads(1):
        return _run_seg(dataset, records, seg, "rm", beam, plan=list(plan))


def sample_plans(
    dataset: str, records: list[Record], seg: Checkpoint, n: int = 3, seed: int = 0, beam: int = 5
) -> list[SystemView]:
    """Up to ``n`` distinct record orders sampled from the transition model, each decoded with
    the order forced (paper appendix B, :func:`segviz.decode.sample_structures`) and the
    checkpoint's value rules, like every other output of the app; at most ``3 n`` samples."""
    with _threads(1):
        results = decode.sample_structures(seg.model, seg.vocab, records, n, seed, beam, rules=seg.rules(), draws=3)
    return [_check(dataset, records, SystemView("seg", replace(r, system="seg")), "as decoded") for r in results]


def plan_of(result: decode.GenerationResult | None, K: int | None = None) -> list[int]:
    """The record order of an output: records 1..K in the order their first segment appears
    (records it never realises are appended when ``K`` is given)."""
    order = list(dict.fromkeys(k for _, _, k in (result.segments if result else []) if k))
    return order + [k for k in range(1, (K or 0) + 1) if k not in order]


def plan_from_param(text: str, K: int) -> tuple[list[int] | None, str | None]:
    """The URL's ``?plan=3,1,2`` for ``K`` records: ``(plan, None)``, ``(None, None)`` when there is
    none, or ``(None, why)`` when it is not an order of records 1..K (the page then starts from
    the model's own plan and says why)."""
    if not text.strip():
        return None, None
    try:
        plan = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        return None, f"the link's plan {text!r} is not a list of record numbers"
    if sorted(plan) != list(range(1, K + 1)):
        return None, f"the link's plan {text!r} does not name each of the records 1 to {K} once"
    return plan, None


def log_prob_per_token(result: decode.GenerationResult) -> float:
    """The decoder's log-probability of an output divided by its length (how beams are ranked)."""
    return float(result.scores.get("log_prob", float("nan"))) / max(int(result.scores.get("length", 1)), 1)


@dataclass
class PlanOverview:
    """What the Plan editor starts from: the model's own output (+RM) and its plan, and other
    plans, each decoded with the plan forced, best first by log-probability per token."""

    own: SystemView
    plan: list[int]
    candidates: list[SystemView]
    asked: int  # how many sampled plans were asked for (fewer may be distinct)
    sampled: int  # how many distinct sampled plans there were
    appended: list[int] = field(default_factory=list)  # records of the plan the unconstrained output leaves out
    beam: list[SystemView] = field(default_factory=list)  # the beam's n-best +RM outputs (own first), distinct plans
    sampled_new: int = 0  # how many distinct sampled plans the beam did not already hold (rows "sampled, forced")

    def sampling_note(self) -> str | None:
        """Why the list holds fewer sampled rows than were asked for (None when it holds them all)."""
        if self.sampled_new == self.asked:
            return None
        if len(self.plan) <= 1:  # one record: one order, nothing to sample
            return "One record has one order: there is no other plan to sample."
        if self.sampled == 0:  # every draw failed (records whose words the model never saw, session 25)
            return f"None of the {self.asked} plans asked for could be sampled from the transition model for these records."
        were = "was" if self.sampled == 1 else "were"
        beam = self.sampled - self.sampled_new
        return (f"This list samples {self.asked} plans from the transition model; {self.sampled} {were} distinct"
                + (f", and {beam} of them {'is' if beam == 1 else 'are'} already a plan of the beam (listed as such)"
                   if beam else "") + ".")


def beam_plans(dataset: str, records: list[Record], seg: Checkpoint, beam: int = 5) -> list[SystemView]:
    """The beam's n-best +RM outputs (:func:`segviz.decode.generate_seg_nbest`), best first, one
    per distinct plan; the first is the model's own output."""
    nbest = decode.generate_seg_nbest(seg.model, seg.vocab, records, "rm", beam, beam, rules=seg.rules())
    views, seen = [], set()
    for r in nbest:
        p = tuple(plan_of(r, len(records)))
        if p not in seen:
            seen.add(p)
            views.append(_check(dataset, records, SystemView("seg", r), "as decoded"))
    return views


def plan_overview(
    dataset: str, records: list[Record], seg: Checkpoint, beam: int = 5, n: int = 4, seed: int = 0
) -> PlanOverview:
    """The model's own plan (its +RM output), the other plans of its beam's n-best list
    (:func:`beam_plans`) and up to ``n`` plans sampled from its transition model
    (:func:`sample_plans`), all ranked by log-probability per token."""
    with _threads(1):
        ranked = beam_plans(dataset, records, seg, beam)
        free = _run_seg(dataset, records, seg, "none", beam)  # what +RM had to add
    own = ranked[0]
    samples = sample_plans(dataset, records, seg, n, seed, beam)
    plan = plan_of(own.result, len(records))
    seen, candidates = set(), []
    for v in [*ranked, *samples]:
        p = tuple(plan_of(v.result, len(records)))
        if v.result is not None and p not in seen:
            seen.add(p)
            candidates.append(v)
    candidates.sort(key=lambda v: -log_prob_per_token(v.result))
    said = set(plan_of(free.result))
    new = sum(any(v is c for c in candidates) for v in samples)
    return PlanOverview(own, plan, candidates, n, len(samples), [k for k in plan if k not in said], ranked, new)


def plan_rows(overview: PlanOverview, records: Sequence[Record], dataset: str | None = None) -> list[dict]:
    """The Plan editor's list of plans: plan, log-probability (total and per token), verdicts; with
    ``dataset`` where its checker reads no fact the input does not hold (WebNLG), also the numbers
    and names each text invents (:func:`segviz.inspector.invented_words`), which its "checker
    errors" cannot count."""
    invented = dataset is not None and bool({"invented number", "invented name"} & set(flag_kinds(dataset)))
    rows = []
    for rank, v in enumerate(overview.candidates, start=1):
        res = v.result
        plan = plan_of(res, len(records))
        errors = v.report.errors if v.report is not None else None
        rows.append({
            "rank": rank,
            "plan": " → ".join(map(str, plan)),
            "source": _source(overview, v),
            "log-prob": round(float(res.scores.get("log_prob", float("nan"))), 2),
            "per token": round(log_prob_per_token(res), 3),
            "checker errors": errors,
            **({"invented": ", ".join(dict.fromkeys(w for _, w in invented_words(dataset, records, res.text))) or "none"}
               if invented else {}),
            "text": res.text,
        })
    return rows


def _source(overview: PlanOverview, view: SystemView) -> str:
    """Where a plan of the list comes from: the model's own output, its beam, or a sample."""
    if view is overview.own:
        return "the model's own (+RM)"
    rank = next((i for i, b in enumerate(overview.beam, start=1) if b is view), None)
    return f"beam n-best #{rank} (+RM)" if rank else "sampled, forced"
