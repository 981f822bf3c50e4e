"""Generation CLI.

    python -m segviz.generate --checkpoint checkpoints/e2e-seg --input dev.csv --constraints rm
        [--beam 5] [--plan 3,1,2] [--check] --output out.tsv

E2E input: a CSV with an ``mr`` or ``MR`` column (other columns ignored); output: a TSV with
header ``MR<TAB>output``, one row per distinct MR in order of first appearance. WebNLG input:
a WebNLG 2017 challenge XML file, or a folder of them (``<entry>`` elements with
``<modifiedtripleset><mtriple>subject | predicate | object</mtriple>…``); output: one line per
entry in document order (readers and writers: :mod:`segviz.formats`, chosen by the checkpoint's
dataset in :mod:`segviz.datasets`).

Inputs the models were not trained for (unknown attributes, unseen words, more than 20 records,
very long values) are reported on stderr, one line per input naming its file and line, with a
count at the end; ``--check`` adds the automatic checker's verdict for every output.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from segviz import checkpoint as ckpt
from segviz import datasets, formats
from segviz.decode import (
    CONSTRAINTS,
    NO_REPEAT_NGRAM,
    VALUE_RULES_HELP,
    GenerationResult,
    generate_pg,
    generate_seg,
    parse_value_rules,
)
from segviz.device import DEVICES, on_device
from segviz.formats import InputError
from segviz.model import SegmentModel
from segviz.records import Record
from segviz.rows import input_warnings

log = logging.getLogger(__name__)


def read_e2e_inputs(path: Path) -> list[tuple[str, list[Record]]]:
    """Distinct MRs of a CSV with an ``mr``/``MR`` column, in order of first appearance."""
    return [(mr, records) for mr, records, _ in formats.read_e2e(path)]


def read_located_inputs(dataset: str, path: Path, model: str = "the checkpoint") -> list[formats.Located]:
    """``(key, records, where)`` for every input of ``path``; ``where`` names the file and line."""
    ds, path = datasets.get(dataset), Path(path)
    if path.suffix.lower() in ds.foreign_suffixes or (path.is_dir() and not ds.reads_folders):
        got = "a folder" if path.is_dir() else f"a {path.suffix} file"
        raise InputError(f"{path}: {model} is {ds.article} {ds.title} model and reads {ds.input_kind}, not {got}")
    return ds.read_inputs(path)


def read_inputs(dataset: str, path: Path) -> list[tuple[str, list[Record]]]:
    """``(key, records)`` for every input of ``path``."""
    return [(key, records) for key, records, _ in read_located_inputs(dataset, path)]


def generate_all(
    checkpoint: ckpt.Checkpoint,
    inputs: list[list[Record]],
    constraints: str = "rm",
    beam: int = 5,
    plan: list[int] | None = None,
    progress: Callable[[int, int], None] | None = None,
    no_repeat_ngram: int = NO_REPEAT_NGRAM,
    rules: str | None = None,
) -> list[GenerationResult]:
    """Decode every input with the checkpoint's model (segment model or PG); ``rules`` names the
    decoding value rules (:data:`segviz.decode.VALUE_RULES`, default the shipped ones)."""
    out, value_rules = [], checkpoint.rules(rules)
    for i, records in enumerate(inputs):
        if isinstance(checkpoint.model, SegmentModel):
            p = plan if plan and len(plan) == len(records) else None
            r = generate_seg(
                checkpoint.model,
                checkpoint.vocab,
                records,
                constraints,
                beam,
                plan=p,
                system=checkpoint.name,
                no_repeat_ngram=no_repeat_ngram,
                rules=value_rules,
            )
        else:
            r = generate_pg(
                checkpoint.model,
                checkpoint.vocab,
                records,
                beam,
                system=checkpoint.name,
                no_repeat_ngram=no_repeat_ngram,
                rules=value_rules,
            )
        out.append(r)
        if progress:
            progress(i + 1, len(inputs))
    return out


def write_outputs(dataset: str, keys: list[str], results: list[GenerationResult], path: Path) -> None:
    """The outputs in ``dataset``'s output format (E2E: ``MR<TAB>output`` TSV; WebNLG: lines)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        datasets.get(dataset).write_outputs(f, keys, [r.text for r in results])


def warn_inputs(dataset: str, items: list[tuple[str, list[Record], str]], model: ckpt.Checkpoint) -> int:
    """Print the app's warnings to stderr, one line per input that has any; return how many had."""
    n = 0
    for _, records, where in items:
        warnings = input_warnings(dataset, records, model)
        if warnings:
            n += 1
            print(f"warning: {where}: {'; '.join(warnings)}", file=sys.stderr)
    return n


def print_checks(
    dataset: str, items: list[tuple[str, list[Record], str]], results: list[GenerationResult]
) -> int:
    """The automatic checker's verdict per output on stderr; return how many outputs it flags."""
    from segviz.faithfulness import check

    n = 0
    for (_, records, where), res in zip(items, results, strict=True):
        report = check(dataset, records, res.text)
        flags = [f"{v.status} {v.label}" for v in report.per_record if v.status != "realised"]
        flags += [f"hallucinated {h}" for h in report.hallucinated]
        n += bool(flags)
        print(
            f"check: {where}: {'; '.join(flags) if flags else 'ok (every record realised once)'}",
            file=sys.stderr,
        )
    return n


def add_decoding_args(p: argparse.ArgumentParser) -> None:
    """The options ``generate`` and ``report`` share: beam, n-gram ban, value rules, threads, device."""
    p.add_argument("--beam", type=int, default=5)
    p.add_argument(
        "--no-repeat-ngram",
        type=int,
        default=NO_REPEAT_NGRAM,
        help="forbid any word n-gram twice in an output (0: off)",
    )
    p.add_argument(
        "--value-rules",
        type=parse_value_rules,
        default=None,
        help=VALUE_RULES_HELP,
    )
    p.add_argument("--threads", type=int, default=0)
    p.add_argument(
        "--device",
        choices=DEVICES,
        default="cpu",
        help="where the model runs (default cpu; auto: CUDA when present)",
    )


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m segviz.generate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--input", type=Path, required=True)
    p.add_argument("--output", type=Path, required=True)
    p.add_argument("--constraints", choices=CONSTRAINTS, default="rm", help="; ".join(f"{c.name}: {c.help}" for c in CONSTRAINTS.values()))
    p.add_argument(
        "--plan",
        default=None,
        help="comma-separated record order (1-based), applied to inputs with that many records",
    )
    p.add_argument("--limit", type=int, default=0, help="only the first N inputs")
    p.add_argument(
        "--check", action="store_true", help="print the automatic checker's verdict for every output (stderr)"
    )
    add_decoding_args(p)
    return p


def _decode(model: ckpt.Checkpoint, items: list[formats.Located], plan, args) -> tuple[list[GenerationResult], float]:
    """Every input decoded with a progress bar on stderr; the results and the seconds taken."""
    from tqdm import tqdm

    bar = tqdm(total=len(items), unit="input", file=sys.stderr, dynamic_ncols=True)
    t0 = time.perf_counter()
    with on_device(args.device):
        results = generate_all(
            model,
            [r for _, r, _ in items],
            args.constraints,
            args.beam,
            plan,
            progress=lambda i, n: bar.update(1),
            no_repeat_ngram=args.no_repeat_ngram,
            rules=args.value_rules,
        )
    bar.close()
    return results, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    p = _parser()
    args = p.parse_args(argv)
    for name in ("beam", "no_repeat_ngram", "limit", "threads"):
        if getattr(args, name) < (1 if name == "beam" else 0):
            p.error(f"--{name.replace('_', '-')} must be at least {1 if name == 'beam' else 0}")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        model = ckpt.load(args.checkpoint, args.device)
        items = read_located_inputs(model.dataset, args.input, f"checkpoint {args.checkpoint}")
        plan = [int(x) for x in args.plan.split(",")] if args.plan else None
    except (ckpt.CheckpointError, InputError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.limit:
        items = items[: args.limit]
    n_warned = warn_inputs(model.dataset, items, model)
    results, dt = _decode(model, items, plan, args)
    write_outputs(model.dataset, [k for k, _, _ in items], results, args.output)
    n_fb = sum(r.fallback_used for r in results)
    checked = f"; flagged by the checker: {print_checks(model.dataset, items, results)}" if args.check else ""
    print(
        f"{len(results)} inputs in {dt:.1f} s ({len(results) / dt:.2f} examples/s, beam {args.beam}); "
        f"fallbacks: {n_fb}; inputs with warnings: {n_warned}{checked}; wrote {args.output}"
    )
    if n_warned:
        print(f"{n_warned} of {len(results)} inputs had warnings (see above)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
