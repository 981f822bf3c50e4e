"""Input and output files of the generation CLI, one reader and one writer per file format.

E2E input: a CSV with an ``mr`` or ``MR`` column (other columns ignored), one input per distinct
MR in order of first appearance; output: a TSV with header ``MR<TAB>output``. WebNLG input: a
WebNLG 2017 challenge XML file or a folder of them, one input per ``<entry>`` in document order;
output: one line per entry. Every reader returns ``(key, records, where)`` triples, ``where``
naming the file and line of the input (for warnings). :mod:`segviz.datasets` says which dataset
reads and writes which format.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from segviz.data_webnlg import WebNLGError, read_webnlg
from segviz.records import Record, RecordError, parse_e2e_mr, parse_webnlg_triples

Located = tuple[str, list[Record], str]  # (key, records, "FILE:LINE")


class InputError(ValueError):
    """An input file that cannot be read as E2E CSV or WebNLG XML."""


def csv_rows(reader, error: type[Exception]):
    """The rows of a :mod:`csv` reader, where a ``csv.Error`` (a cell over the field size limit,
    a carriage return inside an unquoted cell) raises ``error`` naming the line and the fix."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise error(f"line {reader.line_num}: {_csv_problem(e)}") from None
        yield row


def _csv_problem(e: csv.Error) -> str:
    """``csv``'s message in words a user can act on."""
    msg = str(e)
    if "field larger than field limit" in msg:
        return f"a cell is longer than {csv.field_size_limit():,} characters"
    if "new-line character seen in unquoted field" in msg:
        return "a carriage return (\\r) inside a line; save the file with ordinary line ends"
    return msg


def _first_mr_lines(path: Path) -> dict[str, int]:
    """Every distinct MR of the CSV at ``path`` and the line of its first appearance."""
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
    except FileNotFoundError as e:
        raise InputError(f"{path}: no such file") from e
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise InputError(f"{path}: cannot read as a UTF-8 CSV ({e})") from e
    return first


def read_e2e(path: Path) -> list[Located]:
    """``(MR, records, "FILE:LINE")`` per distinct MR, at the line of its first appearance."""
    first = _first_mr_lines(path)
    if not first:
        raise InputError(f"{path}: no MRs found")
    out = []
    for mr, line in first.items():
        try:
            out.append((mr, parse_e2e_mr(mr), f"{path}:{line}"))
        except RecordError as e:
            raise InputError(f"{path}:{line}: {e}") from e
    return out


def read_webnlg_inputs(path: Path) -> list[Located]:
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


def write_tsv(f: TextIO, keys: Sequence[str], texts: Sequence[str]) -> None:
    """``MR<TAB>output`` rows after a header row (E2E)."""
    w = csv.writer(f, delimiter="\t", lineterminator="\n")
    w.writerow(["MR", "output"])
    for k, text in zip(keys, texts, strict=True):
        w.writerow([k, text])


def write_lines(f: TextIO, keys: Sequence[str], texts: Sequence[str]) -> None:
    """One output per line, in input order (WebNLG); newlines inside an output become spaces."""
    for text in texts:
        f.write(text.replace("\n", " ") + "\n")
