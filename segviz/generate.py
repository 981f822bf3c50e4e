"""Generation CLI.

    python -m segviz.generate --checkpoint checkpoints/e2e-seg --input dev.csv --constraints rm
        [--beam 5] [--plan 3,1,2] --output out.tsv

E2E input: a CSV with an ``mr`` or ``MR`` column (other columns ignored); output: a TSV with
header ``MR<TAB>output``, one row per distinct MR in order of first appearance. WebNLG input:
an XML file or folder; output: one line per entry in document order.
"""

from __future__ import annotations

import argparse
import csv
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from segviz import checkpoint as ckpt
from segviz.data_webnlg import read_webnlg
from segviz.decode import CONSTRAINTS, NO_REPEAT_NGRAM, GenerationResult, generate_pg, generate_seg
from segviz.model import SegmentModel
from segviz.records import Record, RecordError, parse_e2e_mr, parse_webnlg_triples

log = logging.getLogger(__name__)


class InputError(ValueError):
    """An input file that cannot be read as E2E CSV or WebNLG XML."""


def read_e2e_inputs(path: Path) -> list[tuple[str, list[Record]]]:
    """Distinct MRs of a CSV with an ``mr``/``MR`` column, in order of first appearance."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            reader = csv.DictReader(f)
            col = next((c for c in (reader.fieldnames or []) if c.strip().lower() == "mr"), None)
            if col is None:
                raise InputError(f"{path}: no 'mr' or 'MR' column (columns: {reader.fieldnames})")
            mrs = list(dict.fromkeys(row[col] for row in reader if row.get(col)))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise InputError(f"{path}: cannot read ({e})") from e
    if not mrs:
        raise InputError(f"{path}: no MRs found")
    out = []
    for i, mr in enumerate(mrs, 1):
        try:
            out.append((mr, parse_e2e_mr(mr)))
        except RecordError as e:
            raise InputError(f"{path}: MR {i}: {e}") from e
    return out


def read_inputs(dataset: str, path: Path) -> list[tuple[str, list[Record]]]:
    """``(key, records)`` for every input of ``path``."""
    if dataset == "e2e":
        return read_e2e_inputs(path)
    entries = read_webnlg(path)
    if not entries:
        raise InputError(f"{path}: no WebNLG entries found")
    return [(f"{e.category}/{e.size}/{e.eid}", parse_webnlg_triples(e.triples)) for e in entries]


def generate_all(
    checkpoint: ckpt.Checkpoint,
    inputs: list[list[Record]],
    constraints: str = "rm",
    beam: int = 5,
    plan: list[int] | None = None,
    progress: Callable[[int, int], None] | None = None,
    no_repeat_ngram: int = NO_REPEAT_NGRAM,
) -> list[GenerationResult]:
    """Decode every input with the checkpoint's model (segment model or PG)."""
    out = []
    for i, records in enumerate(inputs):
        if isinstance(checkpoint.model, SegmentModel):
            p = plan if plan and len(plan) == len(records) else None
            r = generate_seg(checkpoint.model, checkpoint.vocab, records, constraints, beam, plan=p, system=checkpoint.name,
                             no_repeat_ngram=no_repeat_ngram)
        else:
            r = generate_pg(checkpoint.model, checkpoint.vocab, records, beam, system=checkpoint.name, no_repeat_ngram=no_repeat_ngram)
        out.append(r)
        if progress:
            progress(i + 1, len(inputs))
    return out


def write_outputs(dataset: str, keys: list[str], results: list[GenerationResult], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        if dataset == "e2e":
            w = csv.writer(f, delimiter="\t", lineterminator="\n")
            w.writerow(["MR", "output"])
            for k, r in zip(keys, results, strict=True):
                w.writerow([k, r.text])
        else:
            for r in results:
                f.write(r.text.replace("\n", " ") + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m segviz.generate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--input", type=Path, required=True)
    p.add_argument("--output", type=Path, required=True)
    p.add_argument("--constraints", choices=CONSTRAINTS, default="rm")
    p.add_argument("--beam", type=int, default=5)
    p.add_argument("--no-repeat-ngram", type=int, default=NO_REPEAT_NGRAM, help="forbid any word n-gram twice in an output (0: off)")
    p.add_argument("--plan", default=None, help="comma-separated record order (1-based), applied to inputs with that many records")
    p.add_argument("--limit", type=int, default=0, help="only the first N inputs")
    p.add_argument("--threads", type=int, default=0)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        model = ckpt.load(args.checkpoint)
        items = read_inputs(model.dataset, args.input)
        plan = [int(x) for x in args.plan.split(",")] if args.plan else None
    except (ckpt.CheckpointError, InputError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.limit:
        items = items[: args.limit]
    from tqdm import tqdm

    bar = tqdm(total=len(items), unit="input", file=sys.stderr, dynamic_ncols=True)
    t0 = time.perf_counter()
    results = generate_all(model, [r for _, r in items], args.constraints, args.beam, plan, progress=lambda i, n: bar.update(1),
                           no_repeat_ngram=args.no_repeat_ngram)
    bar.close()
    dt = time.perf_counter() - t0
    write_outputs(model.dataset, [k for k, _ in items], results, args.output)
    n_fb = sum(r.fallback_used for r in results)
    print(f"{len(results)} inputs in {dt:.1f} s ({len(results) / dt:.2f} examples/s, beam {args.beam}); "
          f"fallbacks: {n_fb}; wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
