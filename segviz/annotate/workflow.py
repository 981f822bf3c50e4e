"""What the Annotate page does, without Streamlit: build a campaign from checkpoints and uploaded
files, and give one annotator a blinded, resumable view of it.

Building a campaign (:func:`build_campaign`) follows the paper's human evaluation (§5
"Metrics"): sample 20 inputs for every record count K of the split *first*, then generate only
those inputs with each system (beam 5), so a campaign costs ``20 · #K · #systems`` decodes, not
a whole split. Our choices where the paper is silent:

- **Blinding.** Annotators may correct the alignment, so every system gets one: the segment
  model's own segments for its outputs; forced alignment (Viterbi) with the dataset's segment
  checkpoint (``<dataset>-seg`` in the checkpoint folder, else the first segment checkpoint
  among the systems) for PG and uploaded outputs. Without such a checkpoint *no* item keeps
  segments, since alignments on only some systems would tell them apart.
- **Pre-fill.** Each item stores the automatic checker's verdicts
  (:func:`segviz.faithfulness.check`) apart from the human ones, and annotators see them as
  pre-ticked boxes to confirm or correct. The first save of an item records what was shown in
  the annotation's ``prefilled`` field, so the checker's influence can be measured later.
- **Uploads** are parsed (:func:`~segviz.annotate.campaign.parse_uploaded_outputs`) before any
  model runs; a bad file raises :class:`AnnotationError` and nothing is stored. An upload named
  ``f.tsv`` becomes system ``upload:f.tsv``. Only inputs every upload covers are sampled.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from segviz import checkpoint as ckpt
from segviz import decode, service
from segviz.annotate.campaign import (
    Input,
    Output,
    create_campaign,
    is_done,
    items_for,
    parse_uploaded_outputs,
    sample_inputs,
)
from segviz.annotate.editor import (
    alignment_edits,
    alignment_rows,
    apply_alignment_edits,
    record_options,
    records_html,
    segments_html,
)
from segviz.annotate.store import FLAG_NAMES, UNSET, AnnotationError, Store
from segviz.names import LEVEL_NAMES
from segviz.records import Record, tokenize
from segviz.viz import display_text

__all__ = [
    "SystemSpec",
    "ProgressFn",
    "CONSTRAINT_LEVELS",
    "CHANGED_ELSEWHERE",
    "SAVED_OVER_STALE",
    "default_checkpoints_dir",
    "available_systems",
    "load_inputs",
    "build_campaign",
    "AnnotatorView",
    "annotator_view",
    "shown_flags",
    "version_of",
    "widget_values",
    "save_change",
    "alignment_rows",  # the last six: segviz.annotate.editor
    "record_options",
    "alignment_edits",
    "apply_alignment_edits",
    "segments_html",
    "records_html",
]

log = logging.getLogger(__name__)

CONSTRAINT_LEVELS = decode.CONSTRAINTS  # ours, +R, +RM
BEAM = inspect.signature(decode.generate_seg).parameters["beam"].default  # the decoder's (the paper's) beam
# progress(fraction in [0, 1], message): what st.progress(value, text) takes
ProgressFn = Callable[[float, str], None]
CheckpointLoader = Callable[[str], Any]

# What a tab is told when the item's saved answers changed elsewhere (another tab, window or browser)
CHANGED_ELSEWHERE = ("This item was changed in another tab or window since this one showed it. "
                     "Nothing was lost: the answers below are the saved ones, including that change.")
SAVED_OVER_STALE = ("This item had been changed in another tab or window. Your change was saved too, "
                    "and the answers below now show everything saved.")


@dataclass(frozen=True)
class SystemSpec:
    """A system to generate with: a checkpoint name in the checkpoint folder (``"e2e-seg"``) and,
    for a segment model, its decoding constraints (``none`` / ``r`` / ``rm``; None for PG)."""

    checkpoint: str
    constraints: str | None = None

    @property
    def name(self) -> str:
        """The system name stored with each item: ``"e2e-seg:rm"`` or ``"e2e-pg"``."""
        return self.checkpoint if self.constraints is None else f"{self.checkpoint}:{self.constraints}"

    @classmethod
    def parse(cls, name: str) -> SystemSpec:
        """Inverse of :attr:`name`."""
        ckpt_name, _, level = name.partition(":")
        if level and level not in CONSTRAINT_LEVELS:
            raise AnnotationError(f"unknown constraint level {level!r} in {name!r} (use {', '.join(CONSTRAINT_LEVELS)})")
        return cls(ckpt_name, level or None)


UPLOAD_PREFIX = "upload:"  # the system name of an uploaded output file: "upload:file.tsv"


def system_title(name: str) -> str:
    """A stored system name as the page shows it: "e2e-seg · ours (+RM)", "file.tsv (uploaded)";
    a PG checkpoint's (no level) and a name of neither form as they are."""
    if name.startswith(UPLOAD_PREFIX):
        return f"{name[len(UPLOAD_PREFIX):]} (uploaded)"
    try:
        spec = SystemSpec.parse(name)
    except AnnotationError:
        return name
    return name if spec.constraints is None else f"{spec.checkpoint} · {LEVEL_NAMES[spec.constraints]}"


def sampling_note(config: dict) -> str | None:
    """What the page says when uploaded files left out some of the split's inputs (the sample is
    drawn from the inputs every file covers); None when every input was in the pool."""
    sampling = config.get("sampling") or {}
    covered, pool = sum((sampling.get("available") or {}).values()), sampling.get("pool")
    if not pool or covered >= pool:
        return None
    return (f"The uploaded files cover {covered:,} of the split's {pool:,} inputs: "
            "this campaign's inputs were drawn from those only.")


def default_checkpoints_dir(path: str | Path | None = None) -> Path:
    """``path``, else the app's checkpoint folder (:func:`segviz.service.checkpoint_root`:
    ``$SEGVIZ_CHECKPOINTS``, else the repository's ``checkpoints/``, whatever the working folder)."""
    return Path(path) if path else service.checkpoint_root()


def _checkpoint_info(path: Path) -> tuple[str, str] | None:
    """``(kind, dataset)`` from a checkpoint's config.json, or None if it is not one (no weights read)."""
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        return config["model"]["kind"], config.get("dataset", "e2e")
    except (OSError, ValueError, KeyError, TypeError):
        return None


def available_systems(dataset: str, directory: str | Path | None = None) -> list[SystemSpec]:
    """Every system the checkpoint folder offers for ``dataset``: each segment checkpoint under
    the three constraint levels, each PG checkpoint once. Sorted by checkpoint name."""
    root = default_checkpoints_dir(directory)
    if not root.is_dir():
        return []
    specs: list[SystemSpec] = []
    for path in sorted(p for p in root.iterdir() if p.is_dir()):
        info = _checkpoint_info(path)
        if info is None or info[1] != dataset:
            continue
        if info[0] == "seg":
            specs += [SystemSpec(path.name, level) for level in CONSTRAINT_LEVELS]
        elif info[0] == "pg":
            specs.append(SystemSpec(path.name))
    return specs


def load_inputs(dataset: str, split: str, data_dir: str | Path | None = None) -> list[Input]:
    """The split's distinct inputs in file order (E2E: one per MR string)."""
    from segviz.data import load_split, unique_inputs  # data loading pulls in torch; only when needed

    return [Input(ex.key, list(ex.records)) for ex in unique_inputs(load_split(dataset, split, data_dir))]


class FaithfulnessCheck:
    """``auto_check`` for :func:`create_campaign`: the checker's per-record status strings."""

    def __init__(self, dataset: str) -> None:
        self.dataset = dataset

    def __call__(self, records: list[Record], text: str) -> list[str]:
        from segviz import faithfulness

        report = faithfulness.check(self.dataset, records, text)
        status = ["realised"] * len(records)
        for v in report.per_record:
            status[v.index] = v.status
        return status

    def __repr__(self) -> str:
        return f"segviz.faithfulness.check({self.dataset!r})"


def _zero_based(segments: Sequence[tuple[int, int, int | None]]) -> list[list]:
    """Decoder segments (record 1..K or None) -> store segments (record 0..K-1 or None)."""
    return [[int(s), int(e), None if r is None else int(r) - 1] for s, e, r in segments]


def _report(progress: ProgressFn | None, fraction: float, message: str) -> None:
    log.info("%s", message)
    if progress is not None:
        progress(min(max(fraction, 0.0), 1.0), message)


def _load_checkpoint(load: CheckpointLoader, root: Path, name: str, dataset: str) -> Any:
    path = root / name
    try:
        c = load(str(path))
    except ckpt.CheckpointError as exc:
        raise AnnotationError(f"checkpoint {name!r} cannot be loaded: {exc}") from None
    if c.dataset != dataset:
        raise AnnotationError(f"checkpoint {name!r} was trained on {c.dataset}, not {dataset}")
    return c


def _aligner_name(root: Path, dataset: str, systems: Sequence[SystemSpec]) -> str | None:
    """The segment checkpoint used for forced alignment: ``<dataset>-seg`` if present, else the
    first segment system's checkpoint, else None."""
    preferred = f"{dataset}-seg"
    if _checkpoint_info(root / preferred) == ("seg", dataset):
        return preferred
    return next((s.checkpoint for s in systems if s.constraints is not None), None)


def build_campaign(store: Store, name: str, dataset: str, split: str, systems: Sequence[SystemSpec],
                   uploads: Mapping[str, bytes | str] | None = None, per_k: int | None = 20, seed: int = 0,
                   data_dir: str | Path | None = None, checkpoints_dir: str | Path | None = None,
                   progress: ProgressFn | None = None, *, inputs: Sequence[Input] | None = None,
                   beam: int = BEAM, prefill: bool = True, load: CheckpointLoader | None = None) -> dict:
    """Sample the split's inputs (``per_k`` per K), generate them with every system, align,
    check automatically and store the campaign in one transaction. Returns the campaign dict.

    ``systems``: checkpoints to decode with; ``uploads``: ``{file name: content}`` of other
    systems' outputs (E2E ``MR<TAB>output`` or one line per input of the split, in order).
    ``inputs`` replaces loading the split (tests, custom pools); ``load`` replaces
    :func:`segviz.checkpoint.load` (the page passes its cached loader). Raises
    :class:`AnnotationError` (nothing stored) on a taken or empty name, no systems, a bad
    upload, a missing checkpoint or one trained on another dataset.
    """
    root = default_checkpoints_dir(checkpoints_dir)
    load = load or ckpt.load
    uploads = dict(uploads or {})
    if not name or not name.strip():
        raise AnnotationError("campaign name is empty")
    if any(c["name"] == name for c in store.campaigns()):
        raise AnnotationError(f"a campaign named {name!r} already exists; choose another name")
    systems = list(dict.fromkeys(systems))
    if not systems and not uploads:
        raise AnnotationError("choose at least one system or upload a file of outputs")
    for s in systems:
        if s.constraints is not None and s.constraints not in CONSTRAINT_LEVELS:
            raise AnnotationError(f"unknown constraint level {s.constraints!r} for {s.checkpoint}")

    _report(progress, 0.0, f"reading the {dataset} {split} split")
    pool = list(inputs) if inputs is not None else load_inputs(dataset, split, data_dir)
    if not pool:
        raise AnnotationError(f"the {dataset} {split} split has no inputs")
    uploaded: dict[str, list[Output]] = {}
    for fname, data in uploads.items():  # parse every file before any model runs
        try:
            uploaded[f"{UPLOAD_PREFIX}{fname}"] = parse_uploaded_outputs(data, dataset, pool)
        except AnnotationError as exc:
            raise AnnotationError(f"{fname}: {exc}") from None
    upload_ids = [{o.input_id for o in outs} for outs in uploaded.values()]
    covered = [i for i in pool if all(i.input_id in ids for ids in upload_ids)]
    if not covered:
        raise AnnotationError("no input of the split has an output in every uploaded file")
    chosen = sample_inputs(covered, per_k, seed)  # the paper's 20 per K, before any decoding

    models = {c: _load_checkpoint(load, root, c, dataset) for c in dict.fromkeys(s.checkpoint for s in systems)}
    for s in systems:
        kind = models[s.checkpoint].model_config.kind
        if (kind == "seg") != (s.constraints is not None):
            raise AnnotationError(f"system {s.name!r}: checkpoint {s.checkpoint!r} is a {kind} model; "
                                  + ("give a constraint level (none/r/rm)" if kind == "seg" else "PG takes no constraints"))
    aligner_name = _aligner_name(root, dataset, systems)
    aligner = None
    if aligner_name is not None:
        aligner = models.get(aligner_name) or _load_checkpoint(load, root, aligner_name, dataset)

    outputs = _generate(systems, models, chosen, aligner, uploaded, beam, progress)
    if aligner is None and any(o.segments for outs in outputs.values() for o in outs):
        log.warning("no segment checkpoint to align with: dropping all alignments to keep systems blind")
        outputs = {s: [Output(o.input_id, o.text) for o in outs] for s, outs in outputs.items()}

    _report(progress, 0.97, "checking facts automatically and storing the campaign")
    available = Counter(str(len(i.records)) for i in covered)
    extra = {"sampling": {"available": dict(available), "pool": len(pool)},
             "generation": {"beam": beam, "systems": [s.name for s in systems], "uploads": sorted(uploads),
                            "aligner": aligner_name if aligner is not None else None}}
    campaign = create_campaign(store, name, dataset, split, outputs, chosen, per_k, seed,
                               auto_check=FaithfulnessCheck(dataset), prefill=prefill, extra_config=extra)
    _report(progress, 1.0, f"campaign {name!r}: {len(chosen)} inputs x {len(outputs)} systems")
    return campaign


def _generate(systems: Sequence[SystemSpec], models: Mapping[str, Any], chosen: Sequence[Input], aligner: Any,
              uploaded: Mapping[str, list[Output]], beam: int,
              progress: ProgressFn | None) -> dict[str, list[Output]]:
    """Outputs of every system for ``chosen``, each with an alignment when ``aligner`` is given."""
    def align(records: list[Record], tokens: list[str]) -> dict | None:
        if aligner is None:
            return None
        return {"tokens": tokens, "segments": _zero_based(decode.force_align(aligner.model, aligner.vocab, records, tokens))}

    total = max(1, len(chosen) * (len(systems) + len(uploaded)))
    done = 0
    out: dict[str, list[Output]] = {}
    for s in systems:
        c = models[s.checkpoint]
        outs = []
        for inp in chosen:
            _report(progress, 0.95 * done / total, f"{system_title(s.name)}: input {len(outs) + 1} of {len(chosen)}")
            if s.constraints is None:
                res = decode.generate_pg(c.model, c.vocab, inp.records, beam=beam, system=s.name, rules=c.rules())
                segments = align(inp.records, res.tokens)
            else:
                res = decode.generate_seg(c.model, c.vocab, inp.records, s.constraints, beam=beam, system=s.name, rules=c.rules())
                segments = {"tokens": res.tokens, "segments": _zero_based(res.segments)}
            outs.append(Output(inp.input_id, display_text(res.tokens, inp.records), segments))  # as the Playground shows it
            done += 1
        out[s.name] = outs
    wanted = {i.input_id: i for i in chosen}
    for system, parsed in uploaded.items():
        outs = []
        for o in parsed:
            if o.input_id in wanted:
                _report(progress, 0.95 * done / total, f"aligning {system_title(system)}: {len(outs) + 1} of {len(chosen)}")
                outs.append(Output(o.input_id, o.text, align(wanted[o.input_id].records, tokenize(o.text))))
                done += 1
        out[system] = outs
    return out


# ---------------------------------------------------------------------------------------------
# One annotator's view


@dataclass(frozen=True)
class AnnotatorView:
    """The campaign as one annotator sees it now (read from the store, so any browser agrees).

    ``items``: the blinded items in this annotator's order; ``position``: the item to show;
    ``done``/``total``: progress; ``finished``: every item rated or skipped.
    """

    items: list[dict]
    position: int
    done: int
    total: int

    @property
    def item(self) -> dict | None:
        return self.items[self.position] if self.items else None

    @property
    def finished(self) -> bool:
        return self.total > 0 and self.done == self.total


def annotator_view(store: Store, campaign: str | int, annotator: str, position: int | None = None) -> AnnotatorView:
    """The annotator's items and the one to show: ``position`` (clamped to the items) or, when
    None, the first item not yet done (resume; the last item once all are done)."""
    items = items_for(store, campaign, annotator)
    done = sum(is_done(it["annotation"]) for it in items)
    if position is None:
        position = next((it["position"] for it in items if not is_done(it["annotation"])), len(items) - 1)
    position = min(max(int(position), 0), max(len(items) - 1, 0))
    return AnnotatorView(items, position, done, len(items))


def shown_flags(item: dict) -> dict[int, dict[str, bool]]:
    """Per-record boxes as the page shows them: the saved human flags, else the checker's
    pre-fill (the annotator confirms or corrects it), else all clear. Keys 0..K-1."""
    a = item["annotation"]
    source = a["flags"] if a is not None else (item["prefill"] or {})
    return {k: {f: bool(source.get(str(k), {}).get(f, False)) for f in FLAG_NAMES} for k in range(item["K"])}


def version_of(item: dict) -> int:
    """The version of the item's saved annotation as read (0 = nothing saved yet)."""
    return 0 if item["annotation"] is None else item["annotation"]["version"]


def widget_values(item: dict) -> dict[str, Any]:
    """The page's widget values for the item's saved answers, by session-state key: fluency, every
    box (as :func:`shown_flags`), wrong facts outside the records, comment. Setting them makes a
    stale tab show what is saved."""
    iid, a = item["item_id"], item["annotation"]
    values: dict[str, Any] = {f"ann_flu_{iid}": None if a is None else a["fluency"]}
    values |= {f"ann_flag_{iid}_{k}_{f}": ticked for k, fs in shown_flags(item).items() for f, ticked in fs.items()}
    values |= {f"ann_extra_{iid}": 0 if a is None else a["extra_wrong"],
               f"ann_comment_{iid}": "" if a is None else a["comment"]}
    return values


def save_change(store: Store, item: dict, annotator: str, *, flag: tuple[int, str, bool] | None = None,
                segment: tuple[int, int | None] | None = None, seen_version: int | None = None,
                **fields: Any) -> dict:
    """Save one widget's change of ``item`` (a :func:`annotator_view` item) at once.

    ``flag=(record, name, value)`` sets one box and leaves every other box as stored;
    ``segment=(index, record)`` points one segment of the alignment at a record (None = none);
    other changes are fields of :meth:`Store.save_annotation`. ``seen_version``: the version the page
    showed (:func:`version_of`); the result's ``conflict`` says another tab or window saved in
    between (this change is saved all the same). The item's first save also stores the checker's
    pre-fill as shown (``prefilled``) and the pre-ticked flags themselves: what the annotator
    saw and did not untick counts as confirmed. Rating fluency clears a previous skip.
    """
    initial = None if item["prefill"] is None else {"flags": item["prefill"], "prefilled": item["prefill"]}
    if flag is not None:
        return store.set_flag(item["item_id"], annotator, *flag, seen_version=seen_version, initial=initial)
    if segment is not None:
        return store.set_segment(item["item_id"], annotator, *segment, seen_version=seen_version, initial=initial)
    values = {k: v for k, v in fields.items() if v is not UNSET}
    if values.get("fluency") is not None:
        values.setdefault("skipped", False)
    return store.save_annotation(item["item_id"], annotator, seen_version=seen_version, initial=initial, **values)
