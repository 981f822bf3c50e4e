"""Score system outputs: corpus metrics (DESIGN §5) plus automatic faithfulness totals.

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

from .data_webnlg import read_webnlg
from .faithfulness import check, totals
from .metrics import corpus_scores
from .records import Record, parse_e2e_mr, parse_webnlg_triples

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
    with open(path, encoding="utf-8-sig", newline="") as f:
        return f.read()


def read_e2e_refs(path: str | Path) -> dict[str, list[str]]:
    """``{normalised MR: [references]}`` in file order from the official ``mr,ref`` CSV."""
    rows = list(csv.reader(io.StringIO(_read_text(path))))
    if not rows or [c.strip().lower() for c in rows[0][:2]] != ["mr", "ref"]:
        raise EvaluationError(f"{path}: expected a CSV with header 'mr,ref'")
    refs: dict[str, list[str]] = {}
    for i, row in enumerate(rows[1:], start=2):
        if len(row) < 2:
            if any(c.strip() for c in row):
                raise EvaluationError(f"{path}:{i}: expected 2 columns, got {len(row)}")
            continue
        refs.setdefault(_norm_mr(row[0]), []).append(row[1])
    return refs


def read_e2e_hyps(path: str | Path) -> list[tuple[str, str]]:
    """``[(normalised MR, output)]`` from a ``MR<TAB>output`` TSV (header row optional)."""
    rows = [r for r in csv.reader(io.StringIO(_read_text(path)), delimiter="\t") if any(c.strip() for c in r)]
    if rows and rows[0] and rows[0][0].strip().lower() in ("mr", "meaning representation"):
        rows = rows[1:]
    bad = [i for i, r in enumerate(rows, start=1) if len(r) != 2]
    if bad:
        raise EvaluationError(f"{path}: expected 2 tab-separated columns (MR, output) on data rows {bad[:5]}")
    return [(_norm_mr(mr), out.strip()) for mr, out in rows]


def evaluate_e2e(refs_path: str | Path, hyps_path: str | Path, meteor: bool = True) -> dict:
    """Score an E2E output TSV against the reference CSV (every MR of the CSV needs one output)."""
    refs = read_e2e_refs(refs_path)
    hyps = read_e2e_hyps(hyps_path)
    hyp_by_mr: dict[str, str] = {}
    dups = []
    for mr, out in hyps:
        if mr in hyp_by_mr:
            dups.append(mr)
        hyp_by_mr[mr] = out
    unknown = [mr for mr in hyp_by_mr if mr not in refs]
    missing = [mr for mr in refs if mr not in hyp_by_mr]
    problems = []
    if unknown:
        problems.append(f"{len(unknown)} MR(s) in {hyps_path} not in the references, e.g. {unknown[:3]}")
    if missing:
        problems.append(f"{len(missing)} MR(s) of the references have no output, e.g. {missing[:3]}")
    if dups:
        problems.append(f"{len(dups)} MR(s) have several outputs, e.g. {dups[:3]}")
    if problems:
        raise EvaluationError("; ".join(problems))
    mrs = list(refs)
    log.info("scoring %d E2E outputs", len(mrs))
    return evaluate_outputs(
        "e2e", [parse_e2e_mr(m) for m in mrs], [refs[m] for m in mrs], [hyp_by_mr[m] for m in mrs], meteor
    )


def evaluate_webnlg(refs_path: str | Path, hyps_path: str | Path, meteor: bool = True) -> dict:
    """Score a WebNLG output file (one line per entry, document order) against the XML references."""
    entries = read_webnlg(refs_path)
    lines = _read_text(hyps_path).splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) != len(entries):
        raise EvaluationError(
            f"{hyps_path} has {len(lines)} lines but {refs_path} has {len(entries)} entries"
        )
    no_ref = [f"{e.category}/{e.eid}" for e in entries if not e.lexs]
    if no_ref:
        raise EvaluationError(f"{len(no_ref)} entries have no <lex> reference, e.g. {no_ref[:3]}")
    inputs = [parse_webnlg_triples(e.triples) for e in entries]
    return evaluate_outputs("webnlg", inputs, [e.lexs for e in entries], [ln.strip() for ln in lines], meteor)


def format_table(scores: dict) -> str:
    """A small two-column table of the scores."""
    lines = []
    for k in KEYS:
        v = scores.get(k)
        lines.append(f"{k:<16}{'n/a' if v is None else (f'{v:.4f}' if isinstance(v, float) else v)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m segviz.evaluate", description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", choices=("e2e", "webnlg"), required=True)
    ap.add_argument("--refs", required=True, help="E2E CSV (mr,ref) or WebNLG XML file/folder")
    ap.add_argument(
        "--hyps", required=True, help="E2E TSV (MR<TAB>output) or WebNLG text file (one line per entry)"
    )
    ap.add_argument("--json", help="write the scores to this JSON file")
    ap.add_argument("--no-meteor", action="store_true", help="skip METEOR (slow java start-up)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    fn = evaluate_e2e if args.dataset == "e2e" else evaluate_webnlg
    try:
        scores = fn(args.refs, args.hyps, meteor=not args.no_meteor)
    except (EvaluationError, FileNotFoundError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(format_table(scores))
    if args.json:
        Path(args.json).write_text(json.dumps(scores, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
