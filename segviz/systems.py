"""Both systems on one input (the Playground's backend): where the app finds its checkpoints,
decoding with the segment model and the PG baseline, the checker's verdicts, and the tables,
posterior and JSON export built from them (docs/design.md §3). No Streamlit.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import torch

from segviz import decode, faithfulness, names, posterior
from segviz.checkpoint import Checkpoint, CheckpointError
from segviz.records import Record, RecordError
from segviz.rerank import misplaced_relations
from segviz.rows import _unknown_words, unknown_words_warning  # noqa: F401 (_unknown_words: re-exported)
from segviz.viz import display_tokens

CHECKPOINT_ENV = "SEGVIZ_CHECKPOINTS"
SYSTEM_LABELS = names.MODEL_LABELS  # the models; systems are named by names.system_name


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
    # record id (1..K) -> the relation words it is said with that its attribute's segments never
    # say (segviz.rerank.misplaced_relations; segment models with a lexicon's relation words)
    misplaced: dict[int, list[str]] = field(default_factory=dict)

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
    guided: bool = False  # checker-guided decoding (decode.GUIDED: rerank, widen, free, keep, close, relations)


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



def _check(
    dataset: str, records: list[Record], view: SystemView, alignment: str | None = None, relations: dict | None = None
) -> SystemView:
    """The checker's record verdicts and, when the text has segments, one verdict per segment and,
    given ``relations`` (a segment model's relation words), the records said with another
    relation's words."""
    res = view.result
    if res is not None:
        view.report = faithfulness.check(dataset, records, res.text)
        if res.segments:
            view.alignment = alignment
            view.segment_verdicts = faithfulness.segment_verdicts(dataset, records, res.tokens, res.segments)
            view.misplaced = misplaced_relations(records, res, relations) if relations else {}
    return view


def cased_tokens(text: str, tokens: Sequence[str]) -> list[str] | None:
    """``text``'s tokens in their own case (``tokenize`` lower-cases), or None if they do not
    line up with ``tokens`` one to one."""
    from segviz.records import _TOKEN

    cased = _TOKEN.findall(text)
    if len(cased) != len(tokens) or any(c.lower() != t for c, t in zip(cased, tokens, strict=True)):
        return None
    return cased


def _rules(c: Checkpoint, guided: bool, partner: Checkpoint | None = None):
    """``c``'s own decoding rules, with the checker-guided switches (:data:`decode.GUIDED`) if
    asked; ``partner``: the PG checkpoint the ``second`` rule reads (default: the one beside ``c``)."""
    return c.rules(decode.guided_rules(c.default_rules) if guided else None, partner)


def _run_seg(dataset, records, seg: Checkpoint | None, constraints, beam, plan=None, guided=False, pg=None) -> SystemView:
    if seg is None:
        return SystemView("seg", error=missing_message(dataset, "seg"))
    try:
        rules = _rules(seg, guided, pg)
    except CheckpointError as e:  # its rules read a PG checkpoint (second) that is not there
        return SystemView("seg", error=missing_message(dataset, "seg", e))
    res = decode.generate_seg(seg.model, seg.vocab, records, constraints, beam, plan=plan, rules=rules)
    return _check(dataset, records, SystemView("seg", res), "as decoded", seg.relation_words)


def _run_pg(dataset, records, pg: Checkpoint | None, seg: Checkpoint | None, beam, guided=False) -> SystemView:
    if pg is None:
        return SystemView("pg", error=missing_message(dataset, "pg"))
    res = decode.generate_pg(pg.model, pg.vocab, records, beam, rules=_rules(pg, guided))
    if seg is not None:  # PG has no segments of its own: the segment model aligns its text
        decode.align_result(res, seg.model, seg.vocab, records)
    return _check(dataset, records, SystemView("pg", res), "forced alignment", seg.relation_words if seg else None)


def compare(
    dataset: str,
    records: list[Record],
    seg: Checkpoint | None,
    pg: Checkpoint | None,
    constraints: str = "rm",
    beam: int = 5,
    guided: bool = False,
) -> Comparison:
    """Both systems on ``records``: texts, segments (PG's by forced alignment), attention and
    per-record verdicts. A missing checkpoint yields a :class:`SystemView` with ``error`` set.
    ``guided``: each model's own rules plus the checker-guided switches (:data:`decode.GUIDED`)."""
    if constraints not in decode.CONSTRAINTS:
        raise ValueError(f"constraints must be one of {decode.CONSTRAINTS}")
    if not 1 <= beam <= 20:
        raise ValueError("beam size must be between 1 and 20")
    warnings = unknown_words_warning(seg or pg, records)
    with _threads(1):
        seg_view = _run_seg(dataset, records, seg, constraints, beam, guided=guided, pg=pg)
        pg_view = _run_pg(dataset, records, pg, seg, beam, guided=guided)
    return Comparison(dataset, list(records), constraints, beam, seg_view, pg_view, warnings, guided)



def misplaced_note(view: SystemView) -> str | None:
    """The records ``view``'s text says with another relation's words (``view.misplaced``), in
    words for the app; None when there are none (or no relation words to judge by)."""
    if not view.misplaced:
        return None
    said = "; ".join(f"record {k}: " + ", ".join(f'"{w}"' for w in ws) for k, ws in sorted(view.misplaced.items()))
    return ("Said with another relation's words (words that, in training, only other relations' segments say; "
            f"the segment model's guess, not the checker's): {said}.")


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
    """One row per segment of ``view``'s text: its words as the text shows them
    (:func:`segviz.viz.display_tokens`: in the writer's case, or with the records' casing restored,
    a segment inside a sentence not capitalised), record and per-segment verdict
    (:func:`segviz.faithfulness.segment_verdicts`); ``start``/``end`` locate it in the text."""
    res = view.result
    if res is None:
        return []
    names = {k: label for k, label, _ in res.records}
    shown = display_tokens(res.tokens, records, view.cased)  # the words as the text above shows them
    rows = []
    for n, v in enumerate(view.segment_verdicts, start=1):
        text = "".join((" " if sp and i > v.start else "") + w for i, (w, sp) in enumerate(shown[v.start : v.end], v.start))
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
