"""Forced-alignment CLI: segments and records of any text for its input records.

    python -m segviz.align --checkpoint checkpoints/e2e-seg --input outputs.tsv [--output out.jsonl]

FILE is a TSV ``MR<TAB>text`` (any system's output, or references; a header row ``MR<TAB>...``
is skipped). Writes one JSON object per line: ``mr``, ``text``, ``tokens`` and ``segments``
(``start``, ``end``, ``record`` (1..K or null), ``label``, ``words``). With ``--report`` it also
prints the share of content words (slot-value words) aligned to their own record.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

from segviz import checkpoint as ckpt
from segviz.decode import force_align
from segviz.model import SegmentModel
from segviz.records import Record, RecordError, parse_e2e_mr, tokenize


def read_pairs(path: Path) -> list[tuple[str, str]]:
    """``(mr, text)`` rows of a TSV (or of a CSV with ``mr,ref`` columns)."""
    text = path.read_text(encoding="utf-8-sig")
    delim = "\t" if "\t" in text.splitlines()[0] else ","
    rows = list(csv.reader(text.splitlines(), delimiter=delim))
    if rows and rows[0] and rows[0][0].strip().lower() == "mr":
        rows = rows[1:]
    out = []
    for i, row in enumerate(rows, 1):
        if not row:
            continue
        if len(row) < 2:
            raise ValueError(f"{path}: row {i} has no text column")
        out.append((row[0], row[1]))
    return out


FUNCTION_WORDS = frozenset("the a an of in out and or near is at by on to for with than".split())


def align_text(model: SegmentModel, vocab, records: list[Record], text: str) -> dict:
    tokens = tokenize(text)
    segs = force_align(model, vocab, records, tokens)
    return {
        "text": text,
        "tokens": tokens,
        "segments": [
            {"start": s, "end": e, "record": r, "label": records[r - 1].label if r else None, "words": tokens[s:e]}
            for s, e, r in segs
        ],
    }


def content_word_accuracy(records: list[Record], aligned: dict) -> tuple[int, int]:
    """Value words found in the text and aligned to their own record: ``(correct, total)``.

    A token counts when it is a word of exactly one record's value (so ambiguous words shared by
    two values are skipped) and is neither punctuation nor a function word ("the", "of", ...)."""
    owner: dict[str, set[int]] = {}
    for k, r in enumerate(records, 1):
        for w in r.value_tokens:
            if w.isalnum() and w not in FUNCTION_WORDS:
                owner.setdefault(w, set()).add(k)
    correct = total = 0
    for seg in aligned["segments"]:
        for w in seg["words"]:
            ks = owner.get(w)
            if ks and len(ks) == 1:
                total += 1
                correct += seg["record"] in ks
    return correct, total


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m segviz.align", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--input", type=Path, required=True)
    p.add_argument("--output", type=Path, default=None, help="JSON lines file (default: stdout)")
    p.add_argument("--stride", type=int, default=1, help="take every Nth row (spread a sample over the file)")
    p.add_argument("--limit", type=int, default=0, help="at most N rows (after --stride)")
    p.add_argument("--report", action="store_true", help="print the share of value words aligned to their own record")
    args = p.parse_args(argv)
    try:
        c = ckpt.load(args.checkpoint)
        if not isinstance(c.model, SegmentModel):
            raise ValueError("forced alignment needs a segment-model checkpoint")
        pairs = read_pairs(args.input)
    except (ckpt.CheckpointError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    pairs = pairs[:: max(1, args.stride)]
    if args.limit:
        pairs = pairs[: args.limit]
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    correct = total = warned = 0
    from segviz.service import input_warnings

    try:
        for i, (mr, text) in enumerate(pairs, 1):
            try:
                records = parse_e2e_mr(mr)
            except RecordError as e:
                print(f"error: row {i}: {e}", file=sys.stderr)
                return 2
            warnings = input_warnings(c.dataset, records, c)  # the same warnings as the app and generate
            if warnings:
                warned += 1
                print(f"warning: {args.input}: row {i}: {'; '.join(warnings)}", file=sys.stderr)
            a = align_text(c.model, c.vocab, records, text)
            c_, t_ = content_word_accuracy(records, a)
            correct, total = correct + c_, total + t_
            out.write(json.dumps({"mr": mr, **a}, ensure_ascii=False) + "\n")
    finally:
        if args.output:
            out.close()
    if warned:
        print(f"{warned} of {len(pairs)} inputs had warnings (see above)", file=sys.stderr)
    if args.report:
        print(f"{len(pairs)} texts: {correct}/{total} value words aligned to their own record "
              f"({100 * correct / max(total, 1):.1f}%)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
