"""Score system outputs: corpus metrics (docs/design.md §5) plus automatic faithfulness totals.

    python -m segviz.evaluate --dataset e2e --refs ../shared/data/e2e/dev.csv --hyps out.tsv
    python -m segviz.evaluate --dataset webnlg --refs ../shared/data/webnlg/dev --hyps out.txt

E2E: ``--refs`` is the official CSV (``mr,ref``; several rows per MR); ``--hyps`` a TSV
``MR<TAB>output`` (header optional; CRLF, BOM and quoted fields tolerated), matched to the
references by MR string (whitespace-normalised). WebNLG: ``--refs`` is an XML file or folder,
``--hyps`` a text file with one output per entry in document order (see
:mod:`segviz.data_webnlg`).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import logging
import sys
from pathlib import Path

from .data_webnlg import WebNLGError, read_webnlg
from .faithfulness import check, totals
from .metrics import corpus_scores
from .records import Record, RecordError, parse_e2e_mr, parse_webnlg_triples

__all__ = ["evaluate_outputs", "evaluate_e2e", "evaluate_webnlg", "read_e2e_refs", "read_e2e_hyps", "main"]

log = logging.getLogger(__name__)

KEYS = (
    "bleu", "rouge_l", "meteor", "cider", "dist1", "dist3", "n",
    "wrong", "repeated", "missing", "hallucinated", "total_records", "slot_error_rate",
)  # fmt: skip


class EvaluationError(ValueError):
    """Inputs that cannot be scored (mismatched MRs, wrong line counts); the message says why."""


def evaluate_outputs(
    dataset: str, inputs: list[list[Record]], refs: list[list[str]], hyps: list[str], meteor: bool = True
) -> dict:
    """Metrics and faithfulness totals for ``hyps[i]`` given ``inputs[i]`` and ``refs[i]``."""
    if not len(inputs) == len(refs) == len(hyps):
        raise EvaluationError(
            f"lengths differ: {len(inputs)} inputs, {len(refs)} reference sets, {len(hyps)} outputs"
        )
    scores = corpus_scores(hyps, refs, meteor=meteor)
    faith = totals(check(dataset, recs, hyp) for recs, hyp in zip(inputs, hyps, strict=True))
    return {k: {**scores, **faith}[k] for k in KEYS}


def _norm_mr(mr: str) -> str:
    return " ".join(mr.split())


def _read_text(path: str | Path) -> str:
    # utf-8-sig drops a BOM; newline="" lets csv handle CRLF and newlines inside quoted fields.
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise EvaluationError(f"{path}: not a UTF-8 text file ({e.reason} at byte {e.start})") from None
    if "\x00" in text:
        raise EvaluationError(f"{path}: a binary file, not text")
    return text


def _e2e_refs(path: str | Path) -> tuple[dict[str, list[str]], dict[str, int]]:
    """References per normalised MR, and the line where each MR first appears."""
    reader = csv.reader(io.StringIO(_read_text(path)))
    header = next(reader, None)
    if not header or [c.strip().lower() for c in header[:2]] != ["mr", "ref"]:
        raise EvaluationError(f"{path}: expected a CSV with header 'mr,ref'")
    refs: dict[str, list[str]] = {}
    lines: dict[str, int] = {}
    start = reader.line_num + 1
    for row in reader:
        if len(row) < 2:
            if any(c.strip() for c in row):
                raise EvaluationError(f"{path}:{start}: expected 2 columns, got {len(row)}")
        else:
            lines.setdefault(_norm_mr(row[0]), start)
            refs.setdefault(_norm_mr(row[0]), []).append(row[1])
        start = reader.line_num + 1
    return refs, lines


def read_e2e_refs(path: str | Path) -> dict[str, list[str]]:
    """``{normalised MR: [references]}`` in file order from the official ``mr,ref`` CSV."""
    return _e2e_refs(path)[0]


def _e2e_hyps(path: str | Path) -> list[tuple[str, str, int]]:
    """``(normalised MR, output, line)`` per data row of a ``MR<TAB>output`` TSV."""
    reader = csv.reader(io.StringIO(_read_text(path)), delimiter="\t")
    rows, start = [], 1
    for r in reader:
        if any(c.strip() for c in r):
            rows.append((r, start))
        start = reader.line_num + 1
    if rows and rows[0][0] and rows[0][0][0].strip().lower() in ("mr", "meaning representation"):
        rows = rows[1:]
    bad = [line for r, line in rows if len(r) != 2]
    if bad:
        raise EvaluationError(f"{path}: expected 2 tab-separated columns (MR, output) on lines {bad[:5]}")
    return [(_norm_mr(r[0]), r[1].strip(), line) for r, line in rows]


def read_e2e_hyps(path: str | Path) -> list[tuple[str, str]]:
    """``[(normalised MR, output)]`` from a ``MR<TAB>output`` TSV (header row optional)."""
    return [(mr, out) for mr, out, _ in _e2e_hyps(path)]


def _hyp_problems(hyps: list[tuple[str, str, int]], refs: dict[str, list[str]], hyps_path) -> list[str]:
    """Unknown MRs, MRs of the references without output, MRs with several outputs (each counted
    once, with a line that repeats one)."""
    first: dict[str, int] = {}
    repeats: list[tuple[int, int]] = []  # (line, line of the first output for that MR)
    for mr, _, line in hyps:
        if mr in first:
            repeats.append((line, first[mr]))
        else:
            first[mr] = line
    problems = []
    unknown = [(line, mr) for mr, line in first.items() if mr not in refs]
    if unknown:
        eg = "; ".join(f"line {line}: {mr}" for line, mr in unknown[:3])
        problems.append(f"{len(unknown)} MR(s) in {hyps_path} not in the references, e.g. {eg}")
    missing = [mr for mr in refs if mr not in first]
    if missing:
        problems.append(f"{len(missing)} MR(s) of the references have no output, e.g. {missing[:3]}")
    several = {first_line for _, first_line in repeats}
    if repeats:
        line, first_line = repeats[0]
        problems.append(
            f"{len(several)} MR(s) in {hyps_path} have several outputs ({len(hyps)} output lines for {len(first)} "
            f"distinct MRs), e.g. line {line} repeats the MR of line {first_line}"
        )
    return problems


def evaluate_e2e(refs_path: str | Path, hyps_path: str | Path, meteor: bool = True) -> dict:
    """Score an E2E output TSV against the reference CSV (every MR of the CSV needs one output)."""
    refs, ref_lines = _e2e_refs(refs_path)
    hyps = _e2e_hyps(hyps_path)
    hyp_by_mr = {mr: out for mr, out, _ in hyps}
    problems = _hyp_problems(hyps, refs, hyps_path)
    if problems:
        raise EvaluationError("; ".join(problems))
    mrs = list(refs)
    inputs = []
    for m in mrs:
        try:
            inputs.append(parse_e2e_mr(m))
        except RecordError as e:
            raise EvaluationError(f"{refs_path}:{ref_lines[m]}: {e}") from None
    log.info("scoring %d E2E outputs", len(mrs))
    return evaluate_outputs("e2e", inputs, [refs[m] for m in mrs], [hyp_by_mr[m] for m in mrs], meteor)


def evaluate_webnlg(refs_path: str | Path, hyps_path: str | Path, meteor: bool = True) -> dict:
    """Score a WebNLG output file (one line per entry, document order) against the XML references."""
    try:
        entries = read_webnlg(refs_path)
    except WebNLGError as e:
        raise EvaluationError(str(e)) from None
    lines = _read_text(hyps_path).splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) != len(entries):
        raise EvaluationError(
            f"{hyps_path} has {len(lines)} lines but {refs_path} has {len(entries)} entries"
        )
    no_ref = [e.where for e in entries if not e.lexs]
    if no_ref:
        raise EvaluationError(f"{len(no_ref)} entries have no <lex> reference, e.g. {no_ref[:3]}")
    inputs = []
    for e in entries:
        try:
            inputs.append(parse_webnlg_triples(e.triples))
        except RecordError as err:
            raise EvaluationError(f"{e.where}: {err}") from None
    return evaluate_outputs("webnlg", inputs, [e.lexs for e in entries], [ln.strip() for ln in lines], meteor)


def format_table(scores: dict) -> str:
    """A small two-column table of the scores."""
    lines = []
    for k in KEYS:
        v = scores.get(k)
        lines.append(f"{k:<16}{'n/a' if v is None else (f'{v:.4f}' if isinstance(v, float) else v)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    # the registry imports the evaluators from segviz.evaluate, which under ``python -m`` is not
    # this module (__main__): catch that module's EvaluationError
    from segviz.datasets import DATASETS
    from segviz.evaluate import EvaluationError as Error

    ap = argparse.ArgumentParser(prog="python -m segviz.evaluate", description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", choices=tuple(DATASETS), required=True)
    ap.add_argument("--refs", required=True, help="E2E CSV (mr,ref) or WebNLG XML file/folder")
    ap.add_argument(
        "--hyps", required=True, help="E2E TSV (MR<TAB>output) or WebNLG text file (one line per entry)"
    )
    ap.add_argument("--json", help="write the scores to this JSON file")
    ap.add_argument("--no-meteor", action="store_true", help="skip METEOR (slow java start-up)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        scores = DATASETS[args.dataset].evaluate(args.refs, args.hyps, meteor=not args.no_meteor)
    except (Error, FileNotFoundError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(format_table(scores))
    if args.json:
        Path(args.json).write_text(json.dumps(scores, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
