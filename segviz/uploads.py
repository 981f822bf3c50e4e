"""Uploaded system-output files for the Hallucination inspector, E2E and WebNLG.

- **E2E**: ``MR<TAB>output`` per line (:func:`segviz.service.parse_output_lines`).
- **WebNLG**, one line per entry, either
  - ``output`` alone: the n-th line is the output for the n-th entry of the dev set (the XML
    files in the order ``python -m segviz.generate`` and ``segviz.evaluate`` read them), i.e.
    exactly the file ``generate`` writes; or
  - ``subject | predicate | object ; subject | predicate | object<TAB>output``: the entry's
    triples (`` ; `` between triples) before a tab, then the output; no dev set needed.

Every problem raises :class:`OutputFileError` naming the line (1-based; blank lines counted).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from segviz import datasets
from segviz.inspector import text_of
from segviz.records import Record, RecordError, parse_webnlg_triples
from segviz.service import MAX_RECORDS, OutputFileError, output_problem, parse_output_lines

TRIPLE_SEP = ";"  # between the triples of one line (spaces around it are ignored)


def dev_entries(data_dir: str | Path, dataset: str = "webnlg") -> list[list[Record]]:
    """The records of every dev input of ``dataset``, in the order ``generate`` reads them (what
    the bare lines of an uploaded output file pair with)."""
    ds = datasets.get(dataset)
    return [records for _, records, _ in ds.references(ds.split_path(Path(data_dir), "dev"))]


def _webnlg_line(n: int, line: str, entry: list[Record] | None) -> tuple[list[Record], str]:
    """``(records, output)`` of line ``n``: ``triples<TAB>output``, or an output for ``entry``."""
    if "\t" in line:
        triples, _, out = line.partition("\t")
        if "\t" in out:
            raise OutputFileError(f"line {n}: more than one tab; expected 'triples<TAB>output' or the output alone")
        if "[" in triples and "|" not in triples:
            raise OutputFileError(f"line {n}: this looks like an E2E MR; pick the E2E dataset in the sidebar")
        try:
            records = parse_webnlg_triples([t for t in triples.split(TRIPLE_SEP) if t.strip()])
        except RecordError as e:
            raise OutputFileError(f"line {n}: {e} (triples are 'subject | predicate | object', ';' between them)") from e
    elif entry is None:
        raise OutputFileError(
            f"line {n}: an output without its triples, and no WebNLG dev set to pair it with; "
            "write 'subject | predicate | object ; …<TAB>output' per line"
        )
    else:
        records, out = entry, line
    if problem := output_problem(out.strip()):
        raise OutputFileError(f"line {n}: {problem}")
    if len(records) > MAX_RECORDS:
        raise OutputFileError(f"line {n}: {len(records)} triples; at most {MAX_RECORDS} are supported")
    return records, out.strip()


def parse_webnlg_lines(data: bytes, entries: Sequence[list[Record]] | None = None) -> list[tuple[int, list[Record], str]]:
    """A WebNLG output file as ``(line, records, output)``; lines without a tab are paired in
    order with ``entries`` (the dev set), and then the file must have one line per entry."""
    lines = text_of(data).splitlines()
    while lines and not lines[-1].strip():  # a trailing newline or two
        lines.pop()
    bare = [n for n, ln in enumerate(lines, start=1) if ln.strip() and "\t" not in ln]
    if bare and entries is not None and len(lines) != len(entries):
        raise OutputFileError(
            f"{len(lines):,} line{'s' * (len(lines) != 1)}, but the WebNLG dev set has {len(entries):,} entries: an output file must have one "
            f"line per entry, in order (or 'triples<TAB>output' per line)"
        )
    out = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            if bare:  # one line per entry: an empty line is an empty output
                raise OutputFileError(f"line {n}: the output text is empty")
            continue
        entry = entries[n - 1] if entries is not None and n <= len(entries) else None
        out.append((n, *_webnlg_line(n, line, entry)))
    if not out:
        raise OutputFileError("the file holds no outputs")
    return out


def parse_lines(dataset: str, data: bytes, entries: Sequence[list[Record]] | None = None) -> list[tuple[int, list[Record], str]]:
    """An uploaded output file of ``dataset`` as ``(line, records, output)`` triples (its
    registry entry's ``parse_upload``, else ``MR<TAB>output`` lines)."""
    parse = datasets.get(dataset).parse_upload
    return parse(data, entries) if parse else parse_output_lines(dataset, data)
