"""Campaigns: sample inputs the paper's way, blind and shuffle items per annotator, parse uploads.

Sampling rule (paper, "Metrics"): "we sample 20 instances for every possible K" (K = number of
records), fewer when a K has fewer inputs. Only inputs that every system has an output for are
eligible, so all systems are judged on the same inputs. Every (input, system) pair becomes one
item; the campaign's ``config`` records the rule, the seed, the per-K counts and the systems.

Blinding: the functions annotators see (:func:`items_for`, :func:`next_item`) return
:func:`public_item` dicts, which carry no system name and no automatic verdicts unless the
campaign pre-fills them. Alignments (``segments``) are shown for optional correction; give every
system one (force-align PG and uploaded outputs with the segment model), otherwise their
presence alone tells the systems apart — :func:`create_campaign` logs a warning when it does.
"""

from __future__ import annotations

import csv
import hashlib
import io
import logging
import random
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from segviz import datasets
from segviz.annotate.store import (
    AnnotationError,
    Store,
    normalize_flags,
    normalize_segments,
    validate_annotator,
)
from segviz.formats import csv_rows
from segviz.records import Record, RecordError, format_e2e_mr, parse_e2e_mr
from segviz.rows import output_problem

__all__ = [
    "Input",
    "Output",
    "AutoCheck",
    "create_campaign",
    "sample_inputs",
    "public_item",
    "items_for",
    "next_item",
    "progress",
    "is_done",
    "parse_uploaded_outputs",
]

log = logging.getLogger(__name__)

# auto_check(records, output_text) -> per-record verdicts: {record_index: {"wrong", "repeated",
# "missing"}} (or a list with one entry per record; entries may also be objects with those
# attributes or status strings "ok|wrong|repeated|missing").
AutoCheck = Callable[[list[Record], str], Any]


@dataclass(frozen=True)
class Input:
    """One input of the split: an id (E2E: the MR string) and its records."""

    input_id: str
    records: list[Record] = field(hash=False)


@dataclass(frozen=True)
class Output:
    """One system output. ``segments``: optional alignment ``{"tokens": [...], "segments":
    [[start, end, record_index|None], ...]}`` (from the segment model or forced alignment)."""

    input_id: str
    text: str
    segments: dict | None = field(default=None, hash=False)


def sample_inputs(inputs: Sequence[Input], per_k: int | None = 20, seed: int = 0) -> list[Input]:
    """The paper's rule: ``per_k`` inputs for every record count K present (all if fewer;
    ``per_k=None`` keeps everything). Deterministic for a seed; result sorted by (K, input_id)."""
    by_k: dict[int, list[Input]] = defaultdict(list)
    for inp in inputs:
        by_k[len(inp.records)].append(inp)
    rng = random.Random(seed)
    chosen: list[Input] = []
    for K in sorted(by_k):
        pool = sorted(by_k[K], key=lambda i: i.input_id)
        chosen += pool if per_k is None or len(pool) <= per_k else rng.sample(pool, per_k)
    return sorted(chosen, key=lambda i: (len(i.records), i.input_id))


def create_campaign(store: Store, name: str, dataset: str, split: str,
                    system_outputs: Mapping[str, Sequence[Output]], inputs: Sequence[Input],
                    per_k: int | None = 20, seed: int = 0, auto_check: AutoCheck | None = None,
                    prefill: bool = False, extra_config: Mapping[str, Any] | None = None) -> dict:
    """Sample inputs, make one item per (input, system) and store them in one transaction.

    ``system_outputs`` maps any system name (``"e2e-seg:rm"``, ``"upload:file.tsv"``) to its
    outputs. ``auto_check`` fills each item's automatic verdicts (kept apart from the humans');
    with ``prefill=True`` annotators see them as pre-filled flags. ``extra_config`` is merged
    into the stored config (a dict value updates the dict of the same key, e.g.
    ``{"sampling": {"available": ...}}`` when the caller sampled from a larger pool itself).
    Returns the campaign dict.
    Raises :class:`AnnotationError` (nothing stored) on a taken name, no systems, duplicate ids,
    or no input that all systems cover.
    """
    if not system_outputs:
        raise AnnotationError("no systems given")
    ids = [i.input_id for i in inputs]
    if len(set(ids)) != len(ids):
        raise AnnotationError("duplicate input ids in the split")
    by_system: dict[str, dict[str, Output]] = {}
    for system, outs in system_outputs.items():
        d: dict[str, Output] = {}
        for o in outs:
            if o.input_id in d:
                raise AnnotationError(f"system {system!r} has two outputs for input {o.input_id!r}")
            d[o.input_id] = o
        by_system[system] = d
    common = [i for i in inputs if all(i.input_id in d for d in by_system.values())]
    if not common:
        raise AnnotationError("no input has an output from every system")
    if len(common) < len(inputs):
        log.warning("%d of %d inputs lack an output from some system and are not sampled",
                    len(inputs) - len(common), len(inputs))
    chosen = sample_inputs(common, per_k, seed)
    has_segments = {s for s, d in by_system.items() if any(d[i.input_id].segments for i in chosen)}
    if has_segments and has_segments != set(by_system):
        log.warning("only some systems have alignments (%s): their presence can unblind annotators",
                    sorted(has_segments))
    items = []
    for inp in chosen:
        K = len(inp.records)
        for system, d in by_system.items():
            out = d[inp.input_id]
            auto = None if auto_check is None else normalize_flags(auto_check(inp.records, out.text), K, "auto_check")
            items.append({"input_id": inp.input_id, "records": [r.to_json() for r in inp.records], "K": K,
                          "system": system, "output": out.text, "auto": auto,
                          "segments": normalize_segments(out.segments, K)})
    counts: dict[str, int] = defaultdict(int)
    available: dict[str, int] = defaultdict(int)
    for i in chosen:
        counts[str(len(i.records))] += 1
    for i in common:
        available[str(len(i.records))] += 1
    config = {
        "sampling": {"rule": "per_k", "per_k": per_k, "seed": seed, "counts": dict(counts),
                     "available": dict(available)},
        "systems": list(by_system),
        "auto_check": None if auto_check is None else getattr(auto_check, "__qualname__", repr(auto_check)),
        "prefill": prefill,
    }
    for key, value in (extra_config or {}).items():
        config[key] = {**config[key], **value} if isinstance(config.get(key), dict) and isinstance(value, Mapping) \
            else value
    return store.add_campaign(name, dataset, split, config, items)


# ---------------------------------------------------------------------------------------------
# Annotator-facing views


def public_item(item: dict, position: int, annotation: dict | None, prefill: bool) -> dict:
    """What an annotator may see of an item: no ``system``; ``prefill`` only if the campaign uses it."""
    return {"item_id": item["id"], "position": position, "input_id": item["input_id"],
            "records": item["records"], "labels": [Record.from_json(r).label for r in item["records"]],
            "K": item["K"], "text": item["output"], "segments": item["segments"],
            "prefill": item["auto"] if prefill else None, "annotation": annotation}


def is_done(annotation: dict | None) -> bool:
    """An item is done for an annotator once rated for fluency or skipped (partial autosaves are not)."""
    return annotation is not None and (annotation["skipped"] or annotation["fluency"] is not None)


def _seed(campaign: dict, annotator: str) -> int:
    digest = hashlib.sha256(f"{campaign['name']}\x00{annotator}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def items_for(store: Store, campaign: str | int, annotator: str) -> list[dict]:
    """The campaign's items as this annotator sees them: blinded, in an order shuffled by a seed
    derived from (campaign name, annotator id), so it is the same on every visit and differs
    between annotators. Each dict carries the annotator's saved ``annotation`` (or None)."""
    validate_annotator(annotator)
    c = store.campaign(campaign)
    items = store.items(c["id"])
    random.Random(_seed(c, annotator)).shuffle(items)
    mine = {a["item_id"]: a for a in store.annotations(c["id"], annotator)}
    prefill = bool(c["config"].get("prefill"))
    return [public_item(it, pos, mine.get(it["id"]), prefill) for pos, it in enumerate(items)]


def next_item(store: Store, campaign: str | int, annotator: str) -> dict | None:
    """The first item in this annotator's order that is not done (resume); None when finished."""
    return next((it for it in items_for(store, campaign, annotator) if not is_done(it["annotation"])), None)


def progress(store: Store, campaign: str | int, annotator: str) -> tuple[int, int]:
    """``(done, total)`` for this annotator; done counts rated and skipped items."""
    items = items_for(store, campaign, annotator)
    return sum(is_done(it["annotation"]) for it in items), len(items)


# ---------------------------------------------------------------------------------------------
# Uploaded outputs

_HEADER_WORDS = {"mr", "mrs", "input", "meaning_representation", "meaning representation", "source"}


def _decode(data: str | bytes) -> str:
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise AnnotationError(f"the file is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    return data.removeprefix("\ufeff")


def _mr_key(records: Sequence[Record]) -> frozenset:
    return frozenset((r.attribute.lower(), r.value) for r in records)


def parse_uploaded_outputs(data: str | bytes, dataset: str, inputs: Sequence[Input]) -> list[Output]:
    """Parse a system-output file into :class:`Output` objects for ``inputs``; pure, stores nothing.

    Formats: E2E ``MR<TAB>output`` TSV (header row optional; BOM, CRLF and quoted fields
    tolerated; MRs matched to the split's inputs regardless of slot order), or — any dataset —
    one output per line in the split's input order (the line count must match). Raises
    :class:`AnnotationError` naming the problem: empty file, wrong number of columns, MRs not in
    the split (the first few), duplicate MRs, line-count mismatch.
    """
    text = _decode(data)
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines or not any(line.strip() for line in lines):
        raise AnnotationError("the file is empty")
    if any("\t" in line for line in lines):
        if not datasets.get(dataset.lower()).uploads:
            raise AnnotationError(f"tab-separated columns are only read for E2E; for {dataset} upload one "
                                  "output per line")
        return _parse_tsv(text, inputs)
    if len(lines) != len(inputs):
        raise AnnotationError(f"the file has {len(lines)} lines but the split has {len(inputs)} inputs; "
                              "upload one output per input, in order (or MR<TAB>output for E2E)")
    if empty := [n for n, line in enumerate(lines, start=1) if not line.strip()]:
        raise AnnotationError(f"line {empty[0]} is empty ({len(empty)} empty line(s)); every input needs an output")
    for n, line in enumerate(lines, start=1):
        if problem := output_problem(line):
            raise AnnotationError(f"line {n}: {problem}")
    return [Output(inp.input_id, line.strip()) for inp, line in zip(inputs, lines, strict=True)]


def _parse_tsv(text: str, inputs: Sequence[Input]) -> list[Output]:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t")
    # (line of the file, row): "line N" counts every line, header and blank ones too, as the
    # Hallucination inspector's upload messages do
    rows = [(reader.line_num, r) for r in csv_rows(reader, AnnotationError) if any(c.strip() for c in r)]
    if rows and rows[0][1] and rows[0][1][0].strip().lower() in _HEADER_WORDS:
        rows = rows[1:]
    if not rows:
        raise AnnotationError("the file has a header but no outputs")
    by_key = {_mr_key(i.records): i for i in inputs}
    outputs: list[Output] = []
    unknown: list[str] = []
    seen: set[str] = set()
    for n, row in rows:
        if len(row) != 2:
            raise AnnotationError(f"line {n} has {len(row)} columns; expected 2: MR<TAB>output")
        mr, out = row[0].strip(), row[1].strip()
        if problem := output_problem(out):
            raise AnnotationError(f"line {n}: {problem}")
        try:
            records = parse_e2e_mr(mr)
        except RecordError as exc:
            raise AnnotationError(f"line {n}: cannot read the MR {mr[:60]!r}: {exc}") from None
        inp = by_key.get(_mr_key(records))
        if inp is None:
            unknown.append(format_e2e_mr(records))
            continue
        if inp.input_id in seen:
            raise AnnotationError(f"line {n}: the MR {mr[:60]!r} appears twice")
        seen.add(inp.input_id)
        outputs.append(Output(inp.input_id, out))
    if unknown:
        shown = "; ".join(repr(u[:60]) for u in unknown[:3])
        raise AnnotationError(f"{len(unknown)} MR(s) are not in this split, e.g. {shown}")
    return outputs
