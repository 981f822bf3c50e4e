"""Generation CLI.

    python -m segviz.generate --checkpoint checkpoints/e2e-seg --input dev.csv --constraints rm
        [--beam 5] [--plan 3,1,2] [--check] --output out.tsv

E2E input: a CSV with an ``mr`` or ``MR`` column (other columns ignored); output: a TSV with
header ``MR<TAB>output``, one row per distinct MR in order of first appearance. WebNLG input:
a WebNLG 2017 challenge XML file, or a folder of them (``<entry>`` elements with
``<modifiedtripleset><mtriple>subject | predicate | object</mtriple>…``); output: one line per
entry in document order.

Inputs the models were not trained for (unknown attributes, unseen words, more than 20 records,
very long values) are reported on stderr, one line per input naming its file and line, with a
count at the end; ``--check`` adds the automatic checker's verdict for every output.
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
from segviz.data_webnlg import WebNLGError, read_webnlg
from segviz.decode import (
    CONSTRAINTS,
    NO_REPEAT_NGRAM,
    GenerationResult,
    generate_pg,
    generate_seg,
    parse_value_rules,
)
from segviz.device import DEVICES, on_device
from segviz.model import SegmentModel
from segviz.records import Record, RecordError, parse_e2e_mr, parse_webnlg_triples

log = logging.getLogger(__name__)


class InputError(ValueError):
    """An input file that cannot be read as E2E CSV or WebNLG XML."""


def read_e2e_inputs(path: Path) -> list[tuple[str, list[Record]]]:
    """Distinct MRs of a CSV with an ``mr``/``MR`` column, in order of first appearance."""
    return [(mr, records) for mr, records, _ in _read_e2e(path)]


def _read_e2e(path: Path) -> list[tuple[str, list[Record], str]]:
    """``(MR, records, "FILE:LINE")`` per distinct MR, at the line of its first appearance."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            reader = csv.DictReader(f)
            col = next((c for c in (reader.fieldnames or []) if c.strip().lower() == "mr"), None)
            if col is None:
                raise InputError(
                    f"{path}: no 'mr' or 'MR' column (columns: {reader.fieldnames}); "
                    "an E2E model reads a CSV with an 'mr' column"
                )
            first: dict[str, int] = {}
            start = reader.line_num + 1
            for row in reader:
                if row.get(col) and row[col] not in first:
                    first[row[col]] = start
                start = reader.line_num + 1
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise InputError(f"{path}: cannot read as a UTF-8 CSV ({e})") from e
    if not first:
        raise InputError(f"{path}: no MRs found")
    out = []
    for mr, line in first.items():
        try:
            out.append((mr, parse_e2e_mr(mr), f"{path}:{line}"))
        except RecordError as e:
            raise InputError(f"{path}:{line}: {e}") from e
    return out


def _read_webnlg(path: Path) -> list[tuple[str, list[Record], str]]:
    """``(key, records, "FILE, line N (entry ID)")`` per WebNLG entry, in document order."""
    try:
        entries = read_webnlg(path)
    except WebNLGError as e:
        raise InputError(
            f"{e}; a WebNLG model reads WebNLG XML (a file or folder of <entry> elements)"
        ) from e
    if not entries:
        raise InputError(f"{path}: no WebNLG entries found")
    out = []
    for e in entries:
        try:
            out.append((f"{e.category}/{e.size}/{e.eid}", parse_webnlg_triples(e.triples), e.where))
        except RecordError as err:
            raise InputError(f"{e.where}: {err}") from err
    return out


_SUFFIXES = {"e2e": (".xml",), "webnlg": (".csv", ".tsv")}  # the other dataset's input files


def read_located_inputs(
    dataset: str, path: Path, model: str = "the checkpoint"
) -> list[tuple[str, list[Record], str]]:
    """``(key, records, where)`` for every input of ``path``; ``where`` names the file and line."""
    if Path(path).suffix.lower() in _SUFFIXES.get(dataset, ()) or (dataset == "e2e" and Path(path).is_dir()):
        expected = (
            "a CSV with an 'mr' column"
            if dataset == "e2e"
            else "WebNLG XML (a file or folder of <entry> elements)"
        )
        name = "an E2E" if dataset == "e2e" else "a WebNLG"
        got = "a folder" if Path(path).is_dir() else f"a {Path(path).suffix} file"
        raise InputError(f"{path}: {model} is {name} model and reads {expected}, not {got}")
    return _read_e2e(path) if dataset == "e2e" else _read_webnlg(path)


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


def warn_inputs(dataset: str, items: list[tuple[str, list[Record], str]], model: ckpt.Checkpoint) -> int:
    """Print the app's warnings to stderr, one line per input that has any; return how many had."""
    from segviz.service import input_warnings

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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m segviz.generate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--input", type=Path, required=True)
    p.add_argument("--output", type=Path, required=True)
    p.add_argument("--constraints", choices=CONSTRAINTS, default="rm", help="; ".join(f"{c.name}: {c.help}" for c in CONSTRAINTS.values()))
    p.add_argument("--beam", type=int, default=5)
    p.add_argument(
        "--no-repeat-ngram",
        type=int,
        default=NO_REPEAT_NGRAM,
        help="forbid any word n-gram twice in an output (0: off)",
    )
    p.add_argument(
        "--plan",
        default=None,
        help="comma-separated record order (1-based), applied to inputs with that many records",
    )
    p.add_argument("--limit", type=int, default=0, help="only the first N inputs")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument(
        "--value-rules",
        type=parse_value_rules,
        default=None,
        help="decoding rules: a preset none (the paper), names, absent, auto, all, then +rule / -rule switches (names, absent, own, fillers, paraphrases), e.g. auto+fillers (segviz.decode.value_rules); default: the checkpoint's, chosen on the tuning half (lexicon.json), else auto",
    )
    p.add_argument(
        "--check", action="store_true", help="print the automatic checker's verdict for every output (stderr)"
    )
    p.add_argument(
        "--device",
        choices=DEVICES,
        default="cpu",
        help="where the model runs (default cpu; auto: CUDA when present)",
    )
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
    dt = time.perf_counter() - t0
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
