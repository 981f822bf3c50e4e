"""What the app's pages call: one function per user action, no Streamlit (docs/design.md §3).

Pages turn widgets into plain values, call one function here and render what comes back
(dataclasses holding :class:`~segviz.decode.GenerationResult` and
:class:`~segviz.faithfulness.FaithReport`). Everything raises :class:`RecordError` /
:class:`OutputFileError` with a message meant for the user on bad input; nothing here imports
Streamlit, so all of it is testable and usable from a notebook.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import math
import os
import time
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch

from segviz import decode, faithfulness, names, posterior
from segviz.checkpoint import Checkpoint, CheckpointError
from segviz.records import Record, RecordError, detokenize, parse_e2e_mr, tokenize

log = logging.getLogger(__name__)

__all__ = [
    "CHECKPOINT_ENV",
    "MAX_RECORDS",
    "OutputFileError",
    "SystemView",
    "Comparison",
    "Case",
    "CheckpointSummary",
    "checkpoint_root",
    "checkpoint_path",
    "checkpoint_stamp",
    "checkpoint_mismatch",
    "columns",
    "rows_from_records",
    "records_from_rows",
    "record_warnings",
    "input_warnings",
    "records_to_param",
    "records_from_param",
    "compare",
    "generate_with_plan",
    "sample_plans",
    "run_systems",
    "parse_output_file",
    "sample_inputs",
    "attribute_counts",
    "case_label",
    "parse_output_lines",
    "cases_from_outputs",
    "flagged_rows",
    "status_rows",
    "flag_location",
    "plan_of",
    "plan_overview",
    "plan_rows",
    "segment_rows",
    "text_posterior",
    "case_json",
    "cased_tokens",
    "align_text",
    "explain_token",
    "summarise_checkpoints",
    "results_rows",
    "shipped_epoch",
]

CHECKPOINT_ENV = "SEGVIZ_CHECKPOINTS"
MAX_RECORDS = 20  # E2E has at most 8 slots, WebNLG at most 7 triples; decoding cost grows with K
MAX_VALUE_CHARS = 200  # longest value in training: E2E 25, WebNLG 166 characters
SYSTEM_LABELS = names.MODEL_LABELS  # the models; systems are named by names.system_name
E2E_ATTRIBUTES = (
    "name",
    "eatType",
    "food",
    "priceRange",
    "customer rating",
    "area",
    "familyFriendly",
    "near",
)
FLAG_KINDS = ("wrong", "repeated", "missing", "hallucinated")


class OutputFileError(ValueError):
    """An uploaded system-output file cannot be read; the message names the line."""


# ----- checkpoints ------------------------------------------------------------------------------


def checkpoint_root() -> Path:
    """``$SEGVIZ_CHECKPOINTS`` if set, else ``checkpoints/`` of the repository."""
    env = os.environ.get(CHECKPOINT_ENV)
    return Path(env) if env else Path(__file__).resolve().parent.parent / "checkpoints"


def checkpoint_path(dataset: str, kind: str) -> Path:
    """Where the app looks for the ``kind`` (seg / pg) model of ``dataset``."""
    return checkpoint_root() / f"{dataset}-{kind}"


def checkpoint_stamp(path: Path) -> float | None:
    """Modification time of the weights (changes after every training epoch); ``None`` if absent."""
    try:
        return (Path(path) / "model.safetensors").stat().st_mtime
    except OSError:
        return None


def missing_message(dataset: str, kind: str, error: Exception | str | None = None) -> str:
    """Why there is no ``kind`` model for ``dataset``: plain text (shown escaped, never as Markdown)."""
    path = checkpoint_path(dataset, kind)
    head = f"No usable {SYSTEM_LABELS.get(kind, kind)} checkpoint for {dataset} at {path}."
    if error:
        return f"{head} It cannot be loaded: {error}"
    return (
        f"{head} It may not be trained yet: run python -m segviz.train --dataset {dataset} --model {kind} "
        f"--out {path}, or point ${CHECKPOINT_ENV} at a folder holding {dataset}-{kind}/."
    )


def checkpoint_mismatch(ck: Checkpoint, dataset: str, kind: str) -> str | None:
    """Why ``ck`` cannot be the app's ``kind`` (seg / pg) model for ``dataset``; None if it can."""
    file = Path(ck.path or ".") / "config.json"
    if ck.dataset != dataset:
        return f"{file}: field 'dataset' is {ck.dataset!r}, but the app loads this folder as its {dataset} model"
    if ck.model_config.kind != kind:
        return f"{file}: field 'model.kind' is {ck.model_config.kind!r}, but the app loads this folder as its {kind!r} model"
    return None


# ----- records <-> table rows <-> URL ------------------------------------------------------------


def columns(dataset: str) -> list[str]:
    """Columns of the records editor."""
    return ["subject", "predicate", "object"] if dataset == "webnlg" else ["attribute", "value"]


def rows_from_records(dataset: str, records: Sequence[Record]) -> list[dict]:
    if dataset == "webnlg":
        return [{"subject": r.subject or "", "predicate": r.attribute, "object": r.value} for r in records]
    return [{"attribute": r.attribute, "value": r.value} for r in records]


def _cell(row: dict, col: str) -> str:
    v = row.get(col)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return str(v).strip()


@dataclass
class ParsedRecords:
    records: list[Record]
    warnings: list[str] = field(default_factory=list)


def records_from_rows(dataset: str, rows: Sequence[dict]) -> ParsedRecords:
    """Editor rows -> records. Fully blank rows are skipped; raises :class:`RecordError` on a
    partly blank row, a duplicate attribute / triple, no records, or more than ``MAX_RECORDS``.
    Unknown E2E attributes only warn (the model copies what it does not know)."""
    cols = columns(dataset)
    records: list[Record] = []
    warnings: list[str] = []
    seen: dict[tuple, int] = {}
    for n, row in enumerate(rows, start=1):
        cells = [_cell(row, c) for c in cols]
        if not any(cells):
            continue
        blank = [c for c, v in zip(cols, cells, strict=True) if not v]
        if blank:
            raise RecordError(f"row {n}: {' and '.join(blank)} is blank; fill it in or delete the row")
        if dataset == "webnlg":
            rec = Record(attribute=cells[1], value=cells[2], subject=cells[0])
            ident: tuple = (rec.subject, rec.attribute, rec.value)
            what = f"triple {rec.label!r}"
        else:
            rec = Record(cells[0], cells[1])
            ident = (rec.attribute,)
            what = f"attribute {rec.attribute!r}"
        warnings += [f"row {n}: {w}" for w in record_warnings(dataset, rec)]
        if ident in seen:
            raise RecordError(
                f"row {n}: duplicate {what} (also in row {seen[ident]}); each record may appear once"
            )
        if not rec.tokens:
            raise RecordError(f"row {n}: {rec.label!r} contains no words")
        seen[ident] = n
        records.append(rec)
    if not records:
        raise RecordError(
            "no records: add at least one row" + (" (attribute and value)" if dataset == "e2e" else "")
        )
    if len(records) > MAX_RECORDS:
        raise RecordError(f"{len(records)} records given; the app handles at most {MAX_RECORDS} per input")
    return ParsedRecords(records, warnings)


def record_warnings(dataset: str, rec: Record) -> list[str]:
    """What the models were not trained for in one record: an unknown E2E attribute, a very long value."""
    out = []
    if dataset == "e2e" and rec.attribute not in E2E_ATTRIBUTES:
        out.append(f"{rec.attribute!r} is not an E2E attribute ({', '.join(E2E_ATTRIBUTES)}); the models never saw it in training")
    if len(rec.value) > MAX_VALUE_CHARS:
        out.append(f"the value has {len(rec.value):,} characters; the models were trained on values of at most {MAX_VALUE_CHARS}")
    return out


def unknown_words_warning(ck: Checkpoint | None, records: Sequence[Record]) -> list[str]:
    """A warning listing the input words outside the model's vocabulary (none if all are known)."""
    unknown = _unknown_words(ck, records)
    if not unknown:
        return []
    shown = ", ".join(unknown[:12]) + (" …" if len(unknown) > 12 else "")
    return [f"Words the models have never seen (they can only be copied from the input): {shown}"]


def input_warnings(dataset: str, records: Sequence[Record], ck: Checkpoint | None) -> list[str]:
    """Everything the app warns about for one input (the CLIs print the same): more records than
    the app takes, unknown attributes, very long values, unseen words."""
    out = []
    if len(records) > MAX_RECORDS:
        out.append(f"{len(records)} records; the models were trained on at most 8 (E2E) or 7 (WebNLG), the app takes {MAX_RECORDS}")
    for k, rec in enumerate(records, start=1):
        out += [f"record {k}: {w}" for w in record_warnings(dataset, rec)]
    return out + unknown_words_warning(ck, records)


def records_to_param(records: Sequence[Record]) -> str:
    """Records -> a compact JSON string for the URL (``?records=``)."""
    return json.dumps(
        [
            [r.subject, r.attribute, r.value] if r.subject is not None else [r.attribute, r.value]
            for r in records
        ],
        ensure_ascii=False,
        separators=(",", ":"),
    )


def records_from_param(dataset: str, param: str) -> list[Record]:
    """Inverse of :func:`records_to_param`, validated like the editor (raises RecordError)."""
    try:
        items = json.loads(param)
    except (json.JSONDecodeError, TypeError) as e:
        raise RecordError(f"the link's records parameter is not valid JSON ({e})") from e
    if not isinstance(items, list) or not all(isinstance(i, list) for i in items):
        raise RecordError("the link's records parameter must be a list of [attribute, value] pairs")
    cols = columns(dataset)
    rows = [dict(zip(cols, (str(x) for x in item), strict=False)) for item in items]
    if any(len(item) != len(cols) for item in items):
        raise RecordError(f"the link's records must have {len(cols)} parts each ({', '.join(cols)})")
    return records_from_rows(dataset, rows).records


# ----- generation ---------------------------------------------------------------------------------


@dataclass
class SystemView:
    """One system's output for one input, its faithfulness verdicts, or why there is none."""

    system: str  # "seg", "pg", or the name of an uploaded system
    result: decode.GenerationResult | None = None
    report: faithfulness.FaithReport | None = None
    error: str | None = None
    # where the segments come from: "as decoded" (the segment model's own output), "forced
    # alignment" (PG, uploaded or typed text aligned by the segment model), None (no segments)
    alignment: str | None = None
    # one verdict per segment of ``result.segments`` (segviz.faithfulness.segment_verdicts)
    segment_verdicts: list[faithfulness.SegmentVerdict] = field(default_factory=list)
    # the text's tokens in their own case (uploaded / typed text); None: restore from the records
    cased: list[str] | None = None

    @property
    def label(self) -> str:
        return names.system_label(self.system, self.result.constraints if self.result else None)


@dataclass
class Comparison:
    """The playground's answer: both systems on one input."""

    dataset: str
    records: list[Record]
    constraints: str
    beam: int
    seg: SystemView
    pg: SystemView
    warnings: list[str] = field(default_factory=list)


@contextmanager
def _threads(n: int):
    """Beam search on one input is many tiny matrix products: one thread avoids the overhead of
    waking (and fighting for) the others."""
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def _unknown_words(ck: Checkpoint | None, records: Sequence[Record]) -> list[str]:
    if ck is None:
        return []
    return sorted({t for r in records for t in r.tokens if t not in ck.vocab.stoi})


def _check(dataset: str, records: list[Record], view: SystemView, alignment: str | None = None) -> SystemView:
    """The checker's record verdicts and, when the text has segments, one verdict per segment."""
    res = view.result
    if res is not None:
        view.report = faithfulness.check(dataset, records, res.text)
        if res.segments:
            view.alignment = alignment
            view.segment_verdicts = faithfulness.segment_verdicts(dataset, records, res.tokens, res.segments)
    return view


def cased_tokens(text: str, tokens: Sequence[str]) -> list[str] | None:
    """``text``'s tokens in their own case (``tokenize`` lower-cases), or None if they do not
    line up with ``tokens`` one to one."""
    from segviz.records import _TOKEN

    cased = _TOKEN.findall(text)
    if len(cased) != len(tokens) or any(c.lower() != t for c, t in zip(cased, tokens, strict=True)):
        return None
    return cased


def _run_seg(dataset, records, seg: Checkpoint | None, constraints, beam, plan=None) -> SystemView:
    if seg is None:
        return SystemView("seg", error=missing_message(dataset, "seg"))
    res = decode.generate_seg(seg.model, seg.vocab, records, constraints, beam, plan=plan, rules=seg.rules())
    return _check(dataset, records, SystemView("seg", res), "as decoded")


def _run_pg(dataset, records, pg: Checkpoint | None, seg: Checkpoint | None, beam) -> SystemView:
    if pg is None:
        return SystemView("pg", error=missing_message(dataset, "pg"))
    res = decode.generate_pg(pg.model, pg.vocab, records, beam, rules=pg.rules())
    if seg is not None:  # PG has no segments of its own: the segment model aligns its text
        decode.align_result(res, seg.model, seg.vocab, records)
    return _check(dataset, records, SystemView("pg", res), "forced alignment")


def compare(
    dataset: str,
    records: list[Record],
    seg: Checkpoint | None,
    pg: Checkpoint | None,
    constraints: str = "rm",
    beam: int = 5,
) -> Comparison:
    """Both systems on ``records``: texts, segments (PG's by forced alignment), attention and
    per-record verdicts. A missing checkpoint yields a :class:`SystemView` with ``error`` set."""
    if constraints not in decode.CONSTRAINTS:
        raise ValueError(f"constraints must be one of {decode.CONSTRAINTS}")
    if not 1 <= beam <= 20:
        raise ValueError("beam size must be between 1 and 20")
    warnings = unknown_words_warning(seg or pg, records)
    with _threads(1):
        seg_view = _run_seg(dataset, records, seg, constraints, beam)
        pg_view = _run_pg(dataset, records, pg, seg, beam)
    return Comparison(dataset, list(records), constraints, beam, seg_view, pg_view, warnings)


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
    the order forced (paper appendix B).

    Like :func:`segviz.decode.sample_structures`, but the sampling pass uses ``+R`` instead of
    ``+RM``: a sample that never visits some record can still end (``+RM`` would run to
    ``max_len`` and be thrown away); records it skipped are appended to its order.
    """
    gen = torch.Generator().manual_seed(seed)
    dec = decode.SegmentDecoder(seg.model, seg.vocab)
    K = len(records)
    plans: list[list[int]] = []
    with _threads(1):
        for _ in range(3 * n):
            hyp, _, _ = dec.search(records, "r", beam=1, sample=gen)
            if hyp is None:
                continue
            order = list(dict.fromkeys(j for _, _, j in hyp.segments if j > 0))
            order += [j for j in range(1, K + 1) if j not in order]
            if order not in plans:
                plans.append(order)
            if len(plans) >= n:
                break
        results = [decode.generate_seg(seg.model, seg.vocab, records, "rm", beam, plan=p, rules=seg.rules()) for p in plans]
    return [_check(dataset, records, SystemView("seg", r), "as decoded") for r in results]


def plan_of(result: decode.GenerationResult | None, K: int | None = None) -> list[int]:
    """The record order of an output: records 1..K in the order their first segment appears
    (records it never realises are appended when ``K`` is given)."""
    order = list(dict.fromkeys(k for _, _, k in (result.segments if result else []) if k))
    return order + [k for k in range(1, (K or 0) + 1) if k not in order]


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


def plan_overview(
    dataset: str, records: list[Record], seg: Checkpoint, beam: int = 5, n: int = 4, seed: int = 0
) -> PlanOverview:
    """The model's own plan (its +RM output) and up to ``n`` other plans sampled from its
    transition model (:func:`sample_plans`), all ranked by log-probability per token."""
    with _threads(1):
        own = _run_seg(dataset, records, seg, "rm", beam)
        free = _run_seg(dataset, records, seg, "none", beam)  # what +RM had to add
    samples = sample_plans(dataset, records, seg, n, seed, beam)
    plan = plan_of(own.result, len(records))
    seen, candidates = set(), []
    for v in [own, *samples]:
        p = tuple(plan_of(v.result, len(records)))
        if v.result is not None and p not in seen:
            seen.add(p)
            candidates.append(v)
    candidates.sort(key=lambda v: -log_prob_per_token(v.result))
    said = set(plan_of(free.result))
    return PlanOverview(own, plan, candidates, n, len(samples), [k for k in plan if k not in said])


def plan_rows(overview: PlanOverview, records: Sequence[Record]) -> list[dict]:
    """The Plan editor's list of plans: plan, log-probability (total and per token), verdicts."""
    rows = []
    for rank, v in enumerate(overview.candidates, start=1):
        res = v.result
        plan = plan_of(res, len(records))
        errors = v.report.errors if v.report is not None else None
        rows.append({
            "rank": rank,
            "plan": " → ".join(map(str, plan)),
            "source": "the model's own (+RM)" if v is overview.own else "sampled, forced",
            "log-prob": round(float(res.scores.get("log_prob", float("nan"))), 2),
            "per token": round(log_prob_per_token(res), 3),
            "checker errors": errors,
            "text": res.text,
        })
    return rows


def status_rows(comparison: Comparison) -> list[dict]:
    """One row per input record (plus one per hallucinated attribute): each system's verdict."""
    views = [v for v in (comparison.seg, comparison.pg) if v.report is not None]
    rows = []
    for k, rec in enumerate(comparison.records, start=1):
        row = {"#": k, "record": rec.label}
        for v in views:
            row[v.label] = v.report.per_record[k - 1].status
        rows.append(row)
    extra = sorted({h for v in views for h in v.report.hallucinated})
    for h in extra:
        row = {"#": None, "record": f"{h} (not in the input)"}
        for v in views:
            row[v.label] = "hallucinated" if h in v.report.hallucinated else "—"
        rows.append(row)
    return rows


def segment_rows(view: SystemView, records: Sequence[Record] = ()) -> list[dict]:
    """One row per segment of ``view``'s text: its words (in the writer's case, or with the
    records' casing restored), record and per-segment verdict
    (:func:`segviz.faithfulness.segment_verdicts`); ``start``/``end`` locate it in the text."""
    res = view.result
    if res is None:
        return []
    names = {k: label for k, label, _ in res.records}
    rows = []
    for n, v in enumerate(view.segment_verdicts, start=1):
        text = " ".join(view.cased[v.start : v.end]) if view.cased else detokenize(res.tokens[v.start : v.end], records)
        rows.append({
            "segment": n,
            "text": text,
            "record": "null (no record)" if v.record is None else f"{v.record} {names.get(v.record, '?')}",
            "verdict": v.verdict,
            "start": v.start,
            "end": v.end,
        })
    return rows


def text_posterior(records: list[Record], tokens: Sequence[str], seg: Checkpoint | None) -> posterior.TextPosterior:
    """The segment model's exact posterior over segmentations of ``tokens`` (any text: an output
    of either system, a reference, an uploaded or typed text). Raises :class:`RecordError`
    without a segment model."""
    if seg is None:
        raise RecordError("the posterior needs the segment model, and none is loaded")
    with _threads(1):
        return posterior.text_posterior(seg.model, seg.vocab, list(records), list(tokens))


def explain_token(
    records: list[Record], tokens: Sequence[str], t: int, record: int | None, seg: Checkpoint | None
) -> posterior.TokenExplanation:
    """Why the segment model wrote ``tokens[t]`` in a segment of ``record`` (1..K, None = null):
    generate vs copy, log-probability, top-5 words (:func:`segviz.posterior.token_explanation`)."""
    if seg is None:
        raise RecordError("the token explanation needs the segment model, and none is loaded")
    with _threads(1):
        return posterior.token_explanation(seg.model, seg.vocab, list(records), list(tokens), t, record or 0)


def align_text(dataset: str, records: list[Record], text: str, seg: Checkpoint | None, system: str = "your text") -> SystemView:
    """Any text (a reference, a typed text) aligned by the segment model and checked, its case kept."""
    if not tokenize(text):
        raise RecordError("the text has no words")
    return cases_from_outputs(dataset, [(list(records), text)], seg, system)[0].views[system]


def case_json(dataset: str, records: Sequence[Record], views: Sequence[SystemView], **settings) -> str:
    """The current case as JSON (for papers / bug reports): the records, the settings, and per
    system its text, tokens, segments, attention, record verdicts and per-segment verdicts."""
    out = {
        "dataset": dataset,
        "records": [{"attribute": r.attribute, "value": r.value, **({"subject": r.subject} if r.subject else {})} for r in records],
        **settings,
        "systems": {},
    }
    for v in views:
        entry: dict = {"label": v.label, "error": v.error, "segments_from": v.alignment}
        if v.result is not None:
            entry["result"] = v.result.to_json()
        if v.report is not None:
            entry["record_verdicts"] = v.report.to_dict()
        entry["segment_verdicts"] = [
            {"start": s.start, "end": s.end, "record": s.record, "text": s.text, "verdict": s.verdict} for s in v.segment_verdicts
        ]
        out["systems"][v.system] = entry
    return json.dumps(out, ensure_ascii=False, indent=1)


# ----- hallucination inspector ---------------------------------------------------------------------


@dataclass
class Case:
    """One input of a batch run and every system's output for it."""

    index: int
    key: str
    records: list[Record]
    views: dict[str, SystemView]


def run_systems(
    dataset: str,
    inputs: Sequence[tuple[str, list[Record]]],
    seg: Checkpoint | None,
    pg: Checkpoint | None,
    constraints: str = "rm",
    beam: int = 5,
    progress: Callable[[int, int], None] | None = None,
) -> list[Case]:
    """Both systems over ``inputs`` (``(key, records)`` pairs); ``progress(done, total)`` after each."""
    cases = []
    total = len(inputs)
    for i, (key, records) in enumerate(inputs):
        cmp = compare(dataset, records, seg, pg, constraints, beam)
        views = {v.system: v for v in (cmp.seg, cmp.pg) if v.result is not None}
        cases.append(Case(i, key, list(records), views))
        if progress:
            progress(i + 1, total)
    return cases


SAMPLES = {"first": "the first N", "random": "a random sample (seed)", "stratified": "stratified by K (seed)"}


def sample_inputs(inputs: Sequence[tuple[str, list[Record]]], n: int, how: str = "first", seed: int = 0) -> list:
    """``n`` of ``inputs``: the first ``n``; a seeded random sample (in input order); or a seeded
    sample stratified by the number of records K (as even a share of every K as ``n`` allows,
    the smallest strata first). The same seed always gives the same sample."""
    import random

    inputs = list(inputs)
    n = max(0, min(n, len(inputs)))
    if how == "first" or n == len(inputs):
        return inputs[:n]
    rng = random.Random(seed)
    if how == "random":
        return [inputs[i] for i in sorted(rng.sample(range(len(inputs)), n))]
    if how != "stratified":
        raise ValueError(f"sample must be one of {sorted(SAMPLES)}, got {how!r}")
    strata: dict[int, list[int]] = {}
    for i, (_, records) in enumerate(inputs):
        strata.setdefault(len(records), []).append(i)
    for idx in strata.values():
        rng.shuffle(idx)
    chosen: list[int] = []
    left = n
    for j, K in enumerate(sorted(strata, key=lambda K: len(strata[K]))):
        share = left // (len(strata) - j)
        take = strata[K][:share]
        chosen += take
        left -= len(take)
    taken = set(chosen)
    rest = [i for K in sorted(strata) for i in strata[K] if i not in taken]
    chosen += rest[:left]  # strata too small for their share: the others fill up
    return [inputs[i] for i in sorted(chosen)]


def attribute_of(label: str) -> str:
    """The attribute (E2E) or predicate (WebNLG) of a flag's record label: ``food[Thai]`` -> food,
    ``A | country | B`` -> country, ``familyFriendly`` (a hallucinated slot) -> familyFriendly."""
    if " | " in label:
        parts = label.split(" | ")
        return parts[1] if len(parts) == 3 else label
    return label.split("[", 1)[0].strip()


def attribute_counts(rows: Sequence[dict]) -> list[dict]:
    """Flags per attribute and system: one row per (attribute, system), a column per flag kind."""
    table: dict[tuple[str, str], dict] = {}
    for r in rows:
        key = (attribute_of(r["record"]), r["system"])
        row = table.setdefault(key, {"attribute": key[0], "system": key[1], **{k: 0 for k in FLAG_KINDS}})
        row[r["kind"]] = row.get(r["kind"], 0) + 1
    return [table[k] for k in sorted(table)]


def case_label(case: Case, n: int = 90, with_key: bool = False) -> str:
    """A case as its records (``name[X] · food[Y] …``), shortened to about ``n`` characters;
    ``with_key``: after its key (``line 3``, an example's name) unless the key is the MR itself."""
    text = " · ".join(r.label for r in case.records)
    text = text if len(text) <= n else text[: n - 1] + "…"
    return f"{case.key} — {text}" if with_key and "[" not in case.key and case.key != text else text


def parse_output_file(dataset: str, data: bytes) -> list[tuple[list[Record], str]]:
    """An E2E system-output file, one ``MR<TAB>output`` per line (a ``mr``/``output`` header line
    is skipped), into ``(records, text)`` pairs. Raises :class:`OutputFileError` naming the line."""
    return [(records, text) for _, records, text in parse_output_lines(dataset, data)]


def parse_output_lines(dataset: str, data: bytes) -> list[tuple[int, list[Record], str]]:
    """Like :func:`parse_output_file`, with the line of the file each pair is on (1-based, the
    header and blank lines counted)."""
    if dataset != "e2e":
        raise OutputFileError("uploaded output files are supported for E2E only (MR<TAB>output lines)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise OutputFileError(f"the file is not UTF-8 text ({e.reason} at byte {e.start})") from e
    if "\x00" in text:
        raise OutputFileError("the file is binary, not a tab-separated text file")
    pairs = []
    reader = csv.reader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE)
    for n, cols in enumerate(reader, start=1):
        if not cols or not "".join(cols).strip():
            continue
        if n == 1 and cols[0].strip().lower() in ("mr", "meaning representation"):
            continue
        if len(cols) != 2:
            raise OutputFileError(
                f"line {n}: expected 2 tab-separated columns (MR<TAB>output), found {len(cols)}"
            )
        mr, out = cols[0].strip(), cols[1].strip()
        try:
            records = parse_e2e_mr(mr)
        except RecordError as e:
            raise OutputFileError(f"line {n}: {e}") from e
        if not out:
            raise OutputFileError(f"line {n}: the output text is empty")
        if len(records) > MAX_RECORDS:
            raise OutputFileError(f"line {n}: {len(records)} records; at most {MAX_RECORDS} are supported")
        pairs.append((n, records, out))
    if not pairs:
        raise OutputFileError("the file holds no MR<TAB>output lines")
    return pairs


def cases_from_outputs(
    dataset: str,
    pairs: Sequence[tuple[list[Record], str]],
    seg: Checkpoint | None,
    system: str = "uploaded",
    progress: Callable[[int, int], None] | None = None,
    lines: Sequence[int] | None = None,
) -> list[Case]:
    """Another system's texts as cases: aligned by the segment model (when loaded) and checked.
    They have no attention (it belongs to the system that wrote them). A case is called "line N"
    after ``lines`` (the line of the file each pair is on), "output N" without them."""
    cases = []
    for i, (records, text) in enumerate(pairs):
        t0 = time.perf_counter()
        tokens = tokenize(text)
        res = decode.GenerationResult(
            system=system,
            records=[(k + 1, r.label, r.tokens) for k, r in enumerate(records)],
            tokens=tokens,
            text=text,
            segments=[],
            attention=[],
            source_tokens=[t for r in records for t in r.tokens],
            record_of_source_token=[k + 1 for k, r in enumerate(records) for _ in r.tokens],
        )
        if seg is not None and tokens:
            with _threads(1):
                decode.align_result(res, seg.model, seg.vocab, records)
        res.elapsed_ms = (time.perf_counter() - t0) * 1000
        view = _check(dataset, records, SystemView(system, res), "forced alignment")
        view.cased = cased_tokens(text, tokens)
        cases.append(Case(i, f"line {lines[i]}" if lines else f"output {i + 1}", list(records), {system: view}))
        if progress:
            progress(i + 1, len(pairs))
    return cases


def flagged_rows(cases: Sequence[Case]) -> list[dict]:
    """One row per flag (wrong / repeated / missing / hallucinated) of any system in any case."""
    rows = []
    for case in cases:
        for view in case.views.values():
            if view.report is None:
                continue
            flags = [(v.status, v.label, v.index + 1) for v in view.report.per_record if v.status != "realised"]
            flags += [("hallucinated", h, None) for h in view.report.hallucinated]
            for kind, record, k in flags:
                rows.append(
                    {
                        "case": case.index,
                        "system": view.label,
                        "kind": kind,
                        "record": record,
                        "text": view.result.text if view.result else "",
                        "k": k,  # the input record 1..K (None: a fact not in the input)
                        "system_key": view.system,
                    }
                )
    return rows


@dataclass
class FlagLocation:
    """Where a checker flag is in its text: the record whose segments to mark, one segment span
    to frame, and a sentence saying what is marked."""

    record: int | None
    span: tuple[int, int] | None
    note: str


def flag_location(view: SystemView, kind: str, k: int | None, label: str = "") -> FlagLocation:
    """Locate a flag of :func:`flagged_rows` in ``view``'s text through its segments: wrong /
    repeated / missing record ``k`` -> the segments aligned to ``k`` (underlined); hallucinated ->
    the first segment that states a value absent from the input (framed)."""
    segs = [(v.start, v.end) for v in view.segment_verdicts if k is not None and v.record == k]
    if kind == "hallucinated":
        absent = [v for v in view.segment_verdicts if v.absent]
        if absent:
            v = absent[0]
            return FlagLocation(None, (v.start, v.end), f"hallucinated {label}: framed, the segment that states "
                                f"{', '.join(repr(a) for a in v.absent)}")
        return FlagLocation(None, None, f"hallucinated {label}: no single segment states it (the text as a whole does)")
    if not segs:
        return FlagLocation(k, None, f"{kind} record {k} ({label}): no segment of the text is aligned to it")
    return FlagLocation(k, segs[0] if len(segs) == 1 else None,
                        f"{kind} record {k} ({label}): its {len(segs)} segment{'s' * (len(segs) > 1)} underlined")


# ----- results -------------------------------------------------------------------------------------


@dataclass
class CheckpointSummary:
    """What the Results page shows of one checkpoint folder (read without loading weights)."""

    name: str
    path: Path
    dataset: str = "?"
    kind: str = "?"
    history: list[dict] = field(default_factory=list)
    metrics: dict = field(default_factory=dict)
    error: str | None = None


def _read(path: Path, default):
    if not path.exists():
        return default
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path.name} is unreadable ({e})") from e


def summarise_checkpoints(root: Path | None = None) -> list[CheckpointSummary]:
    """Every checkpoint folder under ``root`` (default :func:`checkpoint_root`): dataset, kind,
    training history and dev metrics, or the reason it cannot be read."""
    root = Path(root) if root is not None else checkpoint_root()
    out = []
    if not root.is_dir():
        return out
    for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        s = CheckpointSummary(d.name, d)
        try:
            config = _read(d / "config.json", None)
            if not isinstance(config, dict):
                raise CheckpointError("no config.json (training has not written its first epoch yet?)")
            s.dataset = str(config.get("dataset", "?"))
            s.kind = str(config.get("model", {}).get("kind", "?"))
            hist = _read(d / "history.json", [])
            s.history = [h for h in hist if isinstance(h, dict)] if isinstance(hist, list) else []
            metrics = _read(d / "metrics.json", {})
            s.metrics = metrics if isinstance(metrics, dict) else {}
        except CheckpointError as e:
            s.error = str(e)
        out.append(s)
    return out


def metrics_rows(summaries: Sequence[CheckpointSummary]) -> list[dict]:
    """Flatten metrics into one row per (checkpoint, constraint level). A metrics dict is either
    flat (``{"bleu": …}``) or keyed by level (``{"rm": {"bleu": …}, …}``); both are shown."""
    rows = []
    for s in summaries:
        flat = {k: v for k, v in s.metrics.items() if not isinstance(v, dict)}
        nested = {k: v for k, v in s.metrics.items() if isinstance(v, dict)}
        if flat:
            rows.append({"checkpoint": s.name, "level": "—", **_numbers(flat)})
        for level, m in nested.items():
            rows.append(
                {"checkpoint": s.name, "level": decode.CONSTRAINT_LABELS.get(level, level), **_numbers(m)}
            )
    return rows


# readable headers of the Results table, in order: (metrics key, header, format)
RESULT_COLUMNS = (
    ("bleu", "BLEU", "{:.4f}"), ("rouge_l", "ROUGE-L", "{:.4f}"), ("meteor", "METEOR", "{:.4f}"),
    ("cider", "CIDEr", "{:.4f}"), ("wrong", "wrong", "{:,.0f}"), ("repeated", "repeated", "{:,.0f}"),
    ("missing", "missing", "{:,.0f}"), ("hallucinated", "hallucinated", "{:,.0f}"),
    ("slot_error_rate", "SER", "{:.2%}"), ("dist1", "Dist-1", "{:,.0f}"), ("dist3", "Dist-3", "{:,.0f}"),
    ("generation_seconds", "gen. time (s)", "{:,.0f}"),
)  # fmt: skip
# what the automatic checker does not measure (segviz.faithfulness: WebNLG predicates are open-ended)
NOT_MEASURED = {"webnlg": {"wrong", "hallucinated"}}
LEVEL_NAMES = names.LEVEL_NAMES


def results_rows(summaries: Sequence[CheckpointSummary]) -> list[dict]:
    """The Results page's metrics table: one row per (checkpoint, system), readable headers,
    SER in %, "n/a" for what the checker does not measure for the dataset (WebNLG: wrong,
    hallucinated) or what was not computed (e.g. METEOR without Java). All cells are text."""
    rows = []
    for s in summaries:
        levels = {k: v for k, v in s.metrics.items() if isinstance(v, dict)}
        flat = {k: v for k, v in s.metrics.items() if not isinstance(v, dict)}
        if flat:
            levels = {"—": flat, **levels}
        order = ["—", *LEVEL_NAMES]
        for level, m in sorted(levels.items(), key=lambda lm: order.index(lm[0]) if lm[0] in order else len(order)):
            row = {"checkpoint": s.name, "system": LEVEL_NAMES.get(level, level)}
            for key, header, fmt in RESULT_COLUMNS:
                v = m.get(key)
                ok = isinstance(v, int | float) and not isinstance(v, bool) and v == v
                row[header] = "n/a" if key in NOT_MEASURED.get(s.dataset, ()) or not ok else fmt.format(v)
            n = m.get("inputs") or m.get("n")
            row["inputs"] = f"{n:,}" if isinstance(n, int) else "n/a"
            rows.append(row)
    return rows


def shipped_epoch(history: Sequence[dict]) -> int | None:
    """The epoch whose weights a checkpoint holds: the one with the lowest validation NLL (the
    trainer keeps the best by validation loss); None without validation losses."""
    best = [(h["val_nll"], h["epoch"]) for h in history
            if isinstance(h.get("val_nll"), int | float) and h["val_nll"] == h["val_nll"] and "epoch" in h]  # fmt: skip
    return min(best)[1] if best else None


def _numbers(d: dict) -> dict:
    return {k: v for k, v in d.items() if isinstance(v, int | float | str) and not isinstance(v, bool)}
