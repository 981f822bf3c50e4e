"""Stress suites: forced plans, unseen values, long inputs, figures, relations, closed sets and codes, on both halves of dev.

    python -m segviz.stress --checkpoint checkpoints/e2e-seg --pg checkpoints/e2e-pg \\
        [--json runs/stress-e2e.json] [--limit N] [--beam 5] [--seed 0] [--suites forced unseen long figures]

The paper promises that every segment realises its own record, so a user can reorder the plan
and still get a faithful text, and that +RM adds missing records without hurting fluency. The
dev scores cannot see where this fails; these suites can (docs/design.md, "Stress suites"):

- **forced plans**: every dev input with K >= 4, decoded with 3 seeded random record orders and
  the reversed order forced (``--plan``). Under a forced plan the plan alone decides which record
  comes next and when the text may end, so ours / +R / +RM give the same text; the table shows
  the systems' own plans (ours, +R, +RM, PG) on the same inputs beside the forced rows.
- **unseen values**: E2E ``name`` / ``near`` replaced by invented ones, WebNLG named subjects and
  objects replaced by invented ones (:mod:`segviz.invented`); the share of outputs stating each
  value verbatim, and the SER beside the SER of the same inputs with their real values.
- **long inputs**: BLEU and SER per record count K for every system, and what +RM costs.
- **figures** (session 21): WebNLG dates and numbers replaced by invented ones; the share of
  outputs whose checker finds each figure stated (a date in any written form), SER beside the
  SER with the real values. E2E has no such values (no rows).
- **relations** (session 22): every WebNLG input decoded as if the model had never read its
  relations' words (:func:`segviz.records.relation_words`, :meth:`segviz.data.Vocab.hiding`),
  as in WebNLG's unseen categories; BLEU, SER, stutters ("the discoverer discoverer") and, with
  the checkpoint's relation words, outputs saying another relation's words (session 46:
  :func:`segviz.lexicon.alien_words`) beside those of the same inputs read whole. E2E has no rows
  (its attributes are all in training).
- **closed** (session 24): E2E ``food``, ``area`` and ``eatType`` given values outside their
  closed sets ("food[Thai]", "area[old town]", "eatType[wine bar]": what users type); the share
  of outputs stating each verbatim, SER beside the SER with the real values, and stutters
  ("serves Korean Korean"). WebNLG has no rows (its values are open already).
- **codes** (session 33): WebNLG codes (ISBN and ISSN numbers, runway names: "978-0-14-303943-3",
  "09L/27R") replaced by invented ones of the same shape; the share of outputs stating each
  verbatim, SER beside the SER with the real values. E2E has no rows.

Every figure is given for the two halves of dev split by a stable hash of the input
(:func:`half_of`): choices are made on the ``tune`` half, the ``report`` half is what we report.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from segviz import checkpoint as ckpt
from segviz import datasets, entities, faithfulness, invented, lexicon
from segviz.data import default_data_dir
from segviz.decode import (
    CONSTRAINTS,
    DEFAULT_VALUE_RULES,
    VALUE_RULES_HELP,
    GenerationResult,
    generate_pg,
    generate_seg,
    parse_value_rules,
)
from segviz.model import SegmentModel
from segviz.records import HALVES, Record, detokenize, entity_text, half_of, relation_words, unheld_figures
from segviz.stress_tables import _FAITH_KEYS, FORCED_MIN_K, render, summarise
from segviz.stress_tables import LABELS as LABELS  # re-exported: the aggregation and tables live there
from segviz.stress_tables import aggregate as aggregate
from segviz.stress_tables import forced_table as forced_table
from segviz.stress_tables import long_table as long_table
from segviz.stress_tables import unseen_table as unseen_table

log = logging.getLogger(__name__)

SUITES = ("forced", "unseen", "long", "figures", "relations", "closed", "codes")
N_RANDOM_PLANS = 3


@dataclass
class DevItem:
    """One distinct dev input with its references."""

    key: str
    records: list[Record]
    refs: list[str]

    @property
    def half(self) -> str:
        return half_of(self.records)


def dev_items(dataset: str, data_dir: Path) -> list[DevItem]:
    """Every distinct dev input of ``dataset`` in file order."""
    ds = datasets.get(dataset)
    path = ds.split_path(data_dir, "dev")
    if ds.references is not None:
        return [DevItem(key, records, refs) for key, records, refs in ds.references(path)]
    groups: dict[str, DevItem] = {}  # from the loader: one Example per reference, grouped by input
    for ex in ds.loader(path):
        groups.setdefault(ex.key, DevItem(ex.key, ex.records, [])).refs.append(
            detokenize(ex.target, ex.records)
        )
    return list(groups.values())


@dataclass
class Systems:
    """The segment model, the optional PG baseline and the search settings shared by all suites."""

    seg: ckpt.Checkpoint
    pg: ckpt.Checkpoint | None
    beam: int = 5
    rules: str | None = None  # decoding value rules (segviz.decode.VALUE_RULES); None: each checkpoint's own

    @property
    def names(self) -> list[str]:
        return [*CONSTRAINTS] + (["pg"] if self.pg else [])

    def decode(
        self, records: list[Record], system: str, plan: list[int] | None = None, hide: set[str] = frozenset()
    ) -> GenerationResult:
        """One output; ``hide``: words the model reads as never seen (:meth:`Vocab.hiding`)."""
        if system == "pg":
            return generate_pg(
                self.pg.model, self.pg.vocab.hiding(hide), records, self.beam, rules=self.pg.rules(self.rules)
            )
        level = "rm" if plan else system
        return generate_seg(
            self.seg.model,
            self.seg.vocab.hiding(hide),
            records,
            level,
            self.beam,
            plan=plan,
            rules=self.seg.rules(self.rules, self.pg),
        )


def score(dataset: str, records: list[Record], result: GenerationResult, system: str) -> dict:
    """What the suites count of one output: checker totals and, for the segment model, the
    per-segment verdict totals (:func:`segviz.faithfulness.segment_verdicts`)."""
    faith = faithfulness.check(dataset, records, result.text)
    counts = {k: v for k, v in faithfulness.totals([faith]).items() if k in _FAITH_KEYS}
    seg = None
    if system != "pg":
        seg = faithfulness.segment_totals(
            faithfulness.segment_verdicts(dataset, records, result.tokens, result.segments)
        )
    unheld = len(unheld_figures(records, result.text))  # numbers the input does not hold (the checker reads none)
    out = {"text": result.text, "faith": counts, "seg": seg, "fallback": result.fallback_used, "unheld": unheld}
    if datasets.get(dataset).entity_words:  # names the input does not hold (segviz.entities; WebNLG's checker reads none)
        out["invented"] = len(entities.invented_names(records, result.text, entities.shipped(dataset)))
    return out


def run_long(dataset: str, systems: Systems, items: list[DevItem], tick: Callable[[], None]) -> list[dict]:
    """Every input decoded by every system (the dev outputs; per-K tables and the references
    for the other suites)."""
    rows = []
    for i, it in enumerate(items):
        for s in systems.names:
            rows.append(
                {"item": i, "system": s, **score(dataset, it.records, systems.decode(it.records, s), s)}
            )
        tick()
    return rows


def plans_for(records: list[Record], seed: int) -> list[tuple[str, list[int]]]:
    """``N_RANDOM_PLANS`` seeded random record orders and the reversed order."""
    K = len(records)
    rng = random.Random(f"{seed}:{half_of(records)}:" + "|".join(r.label for r in records))
    plans = [("random", rng.sample(range(1, K + 1), K)) for _ in range(N_RANDOM_PLANS)]
    return plans + [("reversed", list(range(K, 0, -1)))]


def run_forced(
    dataset: str, systems: Systems, items: list[DevItem], seed: int, tick: Callable[[], None]
) -> list[dict]:
    """Inputs with K >= FORCED_MIN_K decoded under each plan of :func:`plans_for`."""
    rows = []
    for i, it in enumerate(items):
        if len(it.records) >= FORCED_MIN_K:
            for kind, plan in plans_for(it.records, seed):
                r = systems.decode(it.records, kind, plan)
                rows.append({"item": i, "system": kind, "plan": plan, **score(dataset, it.records, r, kind)})
        tick()
    return rows


def run_unseen(
    dataset: str, systems: Systems, items: list[DevItem], seed: int, tick: Callable[[], None]
) -> list[dict]:
    """Every input with invented values, decoded by every system; which values are verbatim."""
    return _verbatim_rows(dataset, systems, items, datasets.get(dataset).substitute, seed, tick, every=True)


def _verbatim_rows(
    dataset: str, systems: Systems, items: list[DevItem], sub, seed: int, tick: Callable[[], None], every: bool = False,
    kind: str | None = None,
) -> list[dict]:
    """The inputs through ``sub`` (invented values), decoded by every system, with which invented
    values each output says verbatim (``kind``: their kind, each read as an entity without its
    quotes, else :func:`invented.invented_values`'s); inputs ``sub`` leaves as they are only with
    ``every``."""
    rows = []
    for i, it in enumerate(items):
        records = sub(it.records, seed)
        values = [(kind, entity_text(v)) if kind else (k, v) for k, v in invented.invented_values(it.records, records)]
        for s in systems.names if values or every else ():
            out = score(dataset, records, systems.decode(records, s), s)
            verbatim = [[kind, v, invented.states_verbatim(v, out["text"])] for kind, v in values]
            rows.append(
                {"item": i, "system": s, "records": [r.label for r in records], "verbatim": verbatim, **out}
            )
        tick()
    return rows


def run_figures(
    dataset: str, systems: Systems, items: list[DevItem], seed: int, tick: Callable[[], None]
) -> list[dict]:
    """Every input with a date or number object, those replaced by invented ones
    (:func:`segviz.invented.substitute_figures_webnlg`), decoded by every system; which figures
    the checker finds stated (a date in any written form, a number in its figures: session 21)."""
    sub = datasets.get(dataset).figures
    rows = []
    for i, it in enumerate(items):
        records = sub(it.records, seed)
        figures = invented.invented_figures(it.records, records)
        for s in systems.names if figures else ():
            out = score(dataset, records, systems.decode(records, s), s)
            verdicts = faithfulness.check(dataset, records, out["text"]).per_record
            stated = [[kind, v, verdicts[k].status != "missing"] for k, kind, v in figures]
            rows.append(
                {"item": i, "system": s, "records": [r.label for r in records], "verbatim": stated, **out}
            )
        tick()
    return rows


def run_closed(
    dataset: str, systems: Systems, items: list[DevItem], seed: int, tick: Callable[[], None]
) -> list[dict]:
    """Every E2E input with ``food``, ``area`` or ``eatType``, those given values outside their
    closed sets (:func:`segviz.invented.substitute_closed_e2e`: "food[Thai]"), decoded by every
    system; which values are said verbatim (session 24). WebNLG has no rows."""
    return _verbatim_rows(dataset, systems, items, datasets.get(dataset).closed, seed, tick)


def run_codes(
    dataset: str, systems: Systems, items: list[DevItem], seed: int, tick: Callable[[], None]
) -> list[dict]:
    """Every WebNLG input with a code object ("978-0-14-303943-3", "09L/27R"), those replaced by
    invented ones of the same shape (:func:`segviz.invented.substitute_codes_webnlg`), decoded by
    every system; which codes are said verbatim (session 33). E2E has no rows."""
    return _verbatim_rows(dataset, systems, items, datasets.get(dataset).codes, seed, tick, kind="code")


def run_relations(
    dataset: str, systems: Systems, items: list[DevItem], seed: int, tick: Callable[[], None]
) -> list[dict]:
    """Every WebNLG input decoded by every system with its relation words hidden (never seen:
    :func:`segviz.records.relation_words`); ``seed`` unused (nothing is drawn)."""
    rows = []
    for i, it in enumerate(items):
        hide = relation_words(it.records) if dataset == "webnlg" else set()
        for s in systems.names if hide else ():
            out = score(dataset, it.records, systems.decode(it.records, s, hide=hide), s)
            rows.append({"item": i, "system": s, "hidden": sorted(hide), **out})
        tick()
    return rows


# ----------------------------------------------------------------------------- CLI


def run(
    systems: Systems, items: list[DevItem], suites: list[str], seed: int, progress=None
) -> dict[str, list[dict]]:
    """Rows of every suite in ``suites`` (``long`` always: the other suites compare with it)."""
    dataset, results = systems.seg.dataset, {}
    tick = progress or (lambda: None)
    results["long"] = run_long(dataset, systems, items, tick)
    if "forced" in suites:
        results["forced"] = run_forced(dataset, systems, items, seed, tick)
    if "unseen" in suites:
        results["unseen"] = run_unseen(dataset, systems, items, seed, tick)
    if "figures" in suites:
        results["figures"] = run_figures(dataset, systems, items, seed, tick)
    if "relations" in suites:
        results["relations"] = run_relations(dataset, systems, items, seed, tick)
    if "closed" in suites:
        results["closed"] = run_closed(dataset, systems, items, seed, tick)
    if "codes" in suites:
        results["codes"] = run_codes(dataset, systems, items, seed, tick)
    return results


def load_systems(seg_dir: Path, pg_dir: Path | None, beam: int, rules: str | None = None) -> Systems:
    """The checkpoints, checked to be a segment model and (optionally) a PG of the same dataset."""
    seg = ckpt.load(seg_dir)
    if not isinstance(seg.model, SegmentModel):
        raise ckpt.CheckpointError(f"{seg_dir}: --checkpoint must be a segment model, got a PG checkpoint")
    pg = ckpt.load(pg_dir) if pg_dir else None
    if pg is not None and (isinstance(pg.model, SegmentModel) or pg.dataset != seg.dataset):
        raise ckpt.CheckpointError(f"{pg_dir}: --pg must be a PG checkpoint of dataset {seg.dataset!r}")
    return Systems(seg, pg, beam, rules)


def shard_of(spec: str) -> tuple[int, int]:
    """``"I/N"`` (``--shard``) -> ``(I, N)``: the inputs ``I, I + N, I + 2N, ...`` of the list."""
    try:
        i, n = (int(x) for x in spec.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard takes I/N, e.g. 0/4, got {spec!r}") from None
    if not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"--shard I/N needs 0 <= I < N, got {spec!r}")
    return i, n


_SAME = ("dataset", "checkpoint", "pg", "beam", "seed", "value_rules", "suites", "half", "limit")


def _shards_missing(paths: list[Path], runs: list[dict]) -> list[str]:
    """Which shards of a set of ``--shard I/N`` runs are not among them (a warning: the merged run
    covers part of the inputs), as ``"I/L"`` over L, the least common multiple of their N (a shard
    I/N holds the L/N shards I, I + N, ... of L: 1/2 is 1/4 and 3/4, so 0/2, 1/4 and 3/4 are all of
    the inputs); [] when they are all there, or none is a shard. Shards that overlap, or a shard
    beside a whole run, are refused."""
    specs = [r.get("shard") for r in runs]
    if not any(specs):
        return []
    shards = [shard_of(sh) for sh in specs if sh]
    if len(shards) < len(specs):
        raise ValueError(f"{', '.join(map(str, paths))}: shards of --shard I/N runs only, got {specs}")
    lcm = math.lcm(*(n for _, n in shards))
    held = [j for i, n in shards for j in range(i, lcm, n)]  # the shards of L each holds
    if len(held) > len(set(held)):
        raise ValueError(f"{', '.join(map(str, paths))}: shards that overlap, got {specs}")
    return [f"{j}/{lcm}" for j in sorted(set(range(lcm)) - set(held))]


def merge(paths: list[Path], data_dir: Path) -> tuple[dict, list[DevItem], dict[str, list[dict]]]:
    """The ``--json`` files of several runs over disjoint inputs (shards, :func:`shard_of`) as one
    run: each input once, found by its key among the dev inputs, rows re-indexed to the merged
    list. The files must share checkpoint, PG, beam, seed, rules, suites, half and limit, and no
    suite may hold an input twice; a missing shard is warned of (:func:`_shards_missing`).
    Returns (meta, items, rows by suite)."""
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
    for p, r in zip(paths, runs, strict=True):
        differ = [k for k in _SAME if r.get(k) != runs[0].get(k)]
        if differ:
            raise ValueError(f"{p}: {', '.join(differ)} differ from {paths[0]}")
    gaps = _shards_missing(paths, runs)
    if gaps:
        log.warning("--merge: shards %s are missing; the run covers part of the inputs", gaps)
    if not runs[0].get("dataset"):
        raise ValueError(f"{paths[0]}: no dataset named in it (written before --merge was)")
    dev = {it.key: it for it in dev_items(runs[0]["dataset"], data_dir)}
    index: dict[str, int] = {}
    results: dict[str, list[dict]] = {}
    seen: set[tuple[str, str]] = set()
    for p, r in zip(paths, runs, strict=True):
        keys = [it["key"] for it in r["items"]]
        for suite, rows in r["rows"].items():
            if seen & {(suite, k) for k in keys}:
                raise ValueError(f"{p}: an input of suite {suite!r} is in an earlier file too")
            seen |= {(suite, k) for k in keys}
            results.setdefault(suite, []).extend(
                {**row, "item": index.setdefault(keys[row["item"]], len(index))} for row in rows
            )
    missing = [k for k in index if k not in dev]
    if missing:
        raise ValueError(f"{len(missing)} inputs are not in this dev set, e.g. {missing[0]!r}")
    meta = {k: runs[0][k] for k in _SAME} | {
        "seconds": sum(r["seconds"] for r in runs),
        "merged": [str(p) for p in paths],
        **({"shards_missing": gaps} if gaps else {}),
    }
    return meta, [dev[k] for k in index], results


def _systems_in(results: dict[str, list[dict]]) -> list[str]:
    rows = [r for suite in results.values() for r in suite]
    return [s for s in [*CONSTRAINTS, "pg"] if any(r["system"] == s for r in rows)]


def _report(
    path: Path | None, meta: dict, items: list[DevItem], results: dict[str, list[dict]], systems: list[str]
) -> None:
    """Print the tables of a run and write it (``--json``): meta, summary, inputs, every row."""
    relations = lexicon.read(meta["checkpoint"])[4] if meta.get("checkpoint") else None  # the relations suite's alien column
    summary = summarise(results, items, systems, meta["dataset"], relations)
    print(render(summary))
    print(
        f"\n{len(items)} dev inputs ({sum(it.half == 'tune' for it in items)} tune / "
        f"{sum(it.half == 'report' for it in items)} report), beam {meta['beam']}, {meta['seconds']:.0f} s"
        + (f" (the {len(meta['merged'])} files' seconds added up)" if "merged" in meta else "")
    )
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        items_json = [{"key": it.key, "half": it.half, "K": len(it.records)} for it in items]
        doc = {**meta, "inputs": len(items), "summary": summary, "items": items_json, "rows": results}
        path.write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")


def write_outputs(
    out_dir: Path, dataset: str, items: list[DevItem], long: list[dict], data_dir: Path
) -> list[Path]:
    """The long suite's texts as ``python -m segviz.generate`` writes them, one file per system
    (``OUT_DIR/<system>.tsv`` or ``.txt``), the inputs in dev-file order: ``python -m
    segviz.evaluate`` scores them (a run over every dev input gives the dev table's rows; a run
    over fewer is written with a warning: its files do not line up with the dev references)."""
    ds = datasets.get(dataset)
    order = {it.key: i for i, it in enumerate(dev_items(dataset, data_dir))}
    if len(items) < len(order):
        log.warning(
            "--outputs: %d of the %d dev inputs; segviz.evaluate needs all of them", len(items), len(order)
        )
    ranked = sorted(range(len(items)), key=lambda i: order[items[i].key])
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for system in dict.fromkeys(r["system"] for r in long):
        text = {r["item"]: r["text"] for r in long if r["system"] == system}
        path = out_dir / f"{system}.{ds.output_suffix}"
        with open(path, "w", encoding="utf-8", newline="") as f:
            ds.write_outputs(f, [items[i].key for i in ranked], [text[i] for i in ranked])
        paths.append(path)
    return paths


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m segviz.stress",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--checkpoint", type=Path, help="segment-model checkpoint (required unless --merge)")
    p.add_argument("--pg", type=Path, default=None, help="PG checkpoint of the same dataset (optional)")
    p.add_argument("--suites", nargs="+", choices=SUITES, default=list(SUITES))
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--seed", type=int, default=0, help="seed of the random plans and invented values")
    p.add_argument("--limit", type=int, default=0, help="only the first N dev inputs")
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--json", type=Path, default=None, help="write the summary and every output here")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument(
        "--half", choices=(*HALVES, "both"), default="both", help="only the inputs of one dev half"
    )
    p.add_argument(
        "--shard", type=shard_of, default=None, help="I/N: only every N-th input from the I-th (0-based)"
    )
    p.add_argument("--outputs", type=Path, default=None, help="write each system's long-suite texts here")
    p.add_argument(
        "--merge",
        type=Path,
        nargs="+",
        default=None,
        help="no decoding: the --json files of shards as one run",
    )
    p.add_argument(
        "--value-rules",
        type=parse_value_rules,
        default=None,
        help=VALUE_RULES_HELP,
    )
    return p


def main(argv: list[str] | None = None) -> int:
    p = _parser()
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    data_dir = args.data_dir or default_data_dir()
    if args.merge:
        if args.checkpoint or args.pg or args.shard:
            p.error("--merge decodes nothing: it takes no --checkpoint, --pg or --shard")
        try:
            meta, items, results = merge(args.merge, data_dir)
            _report(args.json, meta, items, results, _systems_in(results))
            if args.outputs:
                write_outputs(args.outputs, meta["dataset"], items, results.get("long", []), data_dir)
        except (OSError, ValueError, KeyError, IndexError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        return 0
    if args.checkpoint is None:
        p.error("--checkpoint is required unless --merge")
    torch.set_num_threads(args.threads)
    try:
        systems = load_systems(args.checkpoint, args.pg, args.beam, args.value_rules)
        items = dev_items(systems.seg.dataset, data_dir)
    except (ckpt.CheckpointError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    items = [it for it in items if args.half in ("both", it.half)]
    items = items[: args.limit] if args.limit else items
    items = items[args.shard[0] :: args.shard[1]] if args.shard else items
    from tqdm import tqdm

    t0 = time.perf_counter()
    with tqdm(
        total=len(items) * (1 + len(set(args.suites) - {"long"})), unit="input", file=sys.stderr
    ) as bar:
        results = run(systems, items, args.suites, args.seed, progress=lambda: bar.update(1))
    meta = {
        "dataset": systems.seg.dataset,
        "checkpoint": str(args.checkpoint),
        "pg": str(args.pg) if args.pg else None,
        "beam": args.beam,
        "seed": args.seed,
        "value_rules": args.value_rules or systems.seg.default_rules or DEFAULT_VALUE_RULES,
        "suites": sorted({"long", *args.suites}),
        "half": args.half,
        "limit": args.limit,
        "seconds": time.perf_counter() - t0,
        **({"shard": "{}/{}".format(*args.shard)} if args.shard else {}),
    }
    _report(args.json, meta, items, results, systems.names)
    if args.outputs:
        write_outputs(args.outputs, meta["dataset"], items, results["long"], data_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
