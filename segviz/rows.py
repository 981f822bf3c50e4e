"""Records <-> the records editor's rows <-> the URL's ``?records=`` parameter, validated the same
way everywhere, and the warnings about inputs the models were not trained for (the CLIs print
them too). The columns and the record each row makes come from the dataset's registry entry
(:mod:`segviz.datasets`). No torch, no Streamlit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from segviz.datasets import DATASETS, E2E_ATTRIBUTES, get  # noqa: F401 (E2E_ATTRIBUTES: re-exported)
from segviz.records import Record, RecordError, relation_words

if TYPE_CHECKING:
    from segviz.checkpoint import Checkpoint

MAX_RECORDS = 20  # E2E has at most 8 slots, WebNLG at most 7 triples; decoding cost grows with K
MAX_VALUE_CHARS = 200  # longest value in training: E2E 25, WebNLG 166 characters
MAX_SOURCE_TOKENS = 250  # an input's words; the longest in training: E2E 30, WebNLG 93 (decoding and the heatmaps grow with it)
MAX_OUTPUT_CHARS = 5_000  # an uploaded output; longest training reference: E2E 351, WebNLG 452 characters


def output_problem(text: str) -> str | None:
    """Why an uploaded output text cannot be checked and aligned (empty, or so long that aligning
    it takes minutes: a 100 KB line took 29 s, session 25); None when it can."""
    if not text.strip():
        return "the output text is empty"
    if len(text) > MAX_OUTPUT_CHARS:
        return f"the output has {len(text):,} characters; at most {MAX_OUTPUT_CHARS:,} are read"
    return None


def columns(dataset: str) -> list[str]:
    """Columns of the records editor."""
    return list(get(dataset).columns)


def rows_from_records(dataset: str, records: Sequence[Record]) -> list[dict]:
    ds = get(dataset)
    return [dict(zip(ds.columns, ds.row(r), strict=True)) for r in records]


def plain_rows(rows: Sequence[dict]) -> list[dict]:
    """Editor rows with every cell a stripped string (a blank cell, None or NaN, is ""): what the
    Playground keeps of the user's edits while another page is open."""
    return [{c: _cell(row, c) for c in row} for row in rows]


def _cell(row: dict, col: str) -> str:
    v = row.get(col)
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return str(v).strip()


def rows_from_text(dataset: str, text: str) -> list[dict]:
    """Records pasted as the data writes them -> editor rows, validated as the editor's are.
    WebNLG: one ``subject | predicate | object`` per line (or several on a line, split by ";", as
    in an uploaded output file); E2E: ``name[X], food[Y]`` on one line or over several. Raises
    :class:`RecordError` naming the line that cannot be read; nothing is returned in part."""
    ds, records = get(dataset), []
    lines = [(n, line.strip()) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines:
        raise RecordError(f"nothing to read: paste one input as the {ds.title} data writes it")
    for n, line in lines:
        try:
            records += ds.parse(line.rstrip(",;").rstrip())  # a line wrapped after its separator
        except RecordError as e:
            raise RecordError(f"line {n}: {e}{_other_dataset(dataset, line)}") from e
    rows = rows_from_records(dataset, records)
    records_from_rows(dataset, rows, unit="record")  # the editor's checks: duplicates, limits, words
    return rows


def _other_dataset(dataset: str, line: str) -> str:
    """" (it reads as WebNLG records: pick WebNLG in the sidebar)" where another dataset's parser
    reads ``line`` whole, else ""."""
    for name in DATASETS:
        other = get(name)
        try:
            if name != dataset and other.parse(line.rstrip(",;").rstrip()):
                return f" (it reads as {other.title} records: pick {other.title} in the sidebar)"
        except RecordError:
            continue
    return ""


@dataclass
class ParsedRecords:
    records: list[Record]
    warnings: list[str] = field(default_factory=list)


def records_from_rows(dataset: str, rows: Sequence[dict], unit: str = "row") -> ParsedRecords:
    """Editor rows -> records. Fully blank rows are skipped; raises :class:`RecordError` on a
    partly blank row, a duplicate attribute / triple, no records, more than ``MAX_RECORDS``, or more
    than ``MAX_SOURCE_TOKENS`` words in all.
    Unknown E2E attributes only warn (the model copies what it does not know). ``unit`` names a
    row in the messages ("record" for pasted records)."""
    ds = get(dataset)
    cols = list(ds.columns)
    records: list[Record] = []
    warnings: list[str] = []
    seen: dict[tuple, int] = {}
    for n, row in enumerate(rows, start=1):
        cells = [_cell(row, c) for c in cols]
        if not any(cells):
            continue
        whole = next(((c, v) for c, v in zip(cols, cells, strict=True) if _written_whole(ds, v)), None)
        if whole is not None:
            raise RecordError(f"{unit} {n}: the {whole[0]} cell holds records written as in the data ({whole[1]!r}); "
                              f"give each record its own row, with its parts in the columns {', '.join(cols)} "
                              "(or paste them under 'Paste records', which splits them)")
        if cut := next(((c, x) for c, v in zip(cols, cells, strict=True) for x in ds.reserved if x in v), None):
            raise RecordError(f"{unit} {n}: the {cut[0]} cell holds {cut[1]!r}, which cannot stand inside a cell: the "
                              f"{ds.title} data writes a record as {ds.written}; remove it")
        blank = [c for c, v in zip(cols, cells, strict=True) if not v]
        if blank:
            verb, it = ("is", "it") if len(blank) == 1 else ("are", "them")
            raise RecordError(f"{unit} {n}: {' and '.join(blank)} {verb} blank; fill {it} in or delete the row")
        rec = ds.record(cells)
        ident, what = ds.key(rec)
        warnings += [f"{unit} {n}: {w}" for w in record_warnings(dataset, rec)]
        if ident in seen:
            raise RecordError(
                f"{unit} {n}: duplicate {what} (also in {unit} {seen[ident]}); each record may appear once"
            )
        if not rec.tokens:
            raise RecordError(f"{unit} {n}: {rec.label!r} contains no words")
        seen[ident] = n
        records.append(rec)
    if not records:
        raise RecordError("no records: add at least one row" + ds.empty_hint)
    if len(records) > MAX_RECORDS:
        raise RecordError(f"{len(records)} records given; the app handles at most {MAX_RECORDS} per input")
    if (words := sum(len(r.tokens) for r in records)) > MAX_SOURCE_TOKENS:
        raise RecordError(f"the records hold {words:,} words; the app handles at most {MAX_SOURCE_TOKENS} per input "
                          "(the longest training input has 93): shorten the longest values")  # fmt: skip
    return ParsedRecords(records, warnings)


def _written_whole(ds, cell: str) -> bool:
    """Whether one editor cell holds whole records as the dataset writes an input
    ("s | p | o", "name[X], food[Y]"): the dataset's own parser reads it."""
    try:
        return bool(cell) and bool(ds.parse(cell))
    except RecordError:
        return False


def record_warnings(dataset: str, rec: Record) -> list[str]:
    """What the models were not trained for in one record: an unknown attribute (E2E), a very long value."""
    out, ds = [], get(dataset)
    if ds.attributes is not None and rec.attribute not in ds.attributes:
        same = [a for a in ds.attributes if a.lower() == rec.attribute.lower()]  # "Name" for "name"
        hint = f"; did you mean {same[0]!r}?" if same else ""
        out.append(f"{rec.attribute!r} is not {ds.article} {ds.title} attribute ({', '.join(ds.attributes)}); "
                   f"the models never saw it in training{hint}")
    if len(rec.value) > MAX_VALUE_CHARS:
        out.append(f"the value has {len(rec.value):,} characters; the models were trained on values of at most {MAX_VALUE_CHARS}")
    return out


def unknown_words_warning(ck: Checkpoint | None, records: Sequence[Record]) -> list[str]:
    """A warning listing the input words outside the model's vocabulary (none if all are known)."""
    unknown = _unknown_words(ck, records)
    if not unknown:
        return []
    shown = ", ".join(w if len(w) <= 40 else w[:40] + "…" for w in unknown[:12]) + (" …" if len(unknown) > 12 else "")
    return [f"Words the models have never seen (they can only be copied from the input): {shown}"] + _unread_relations(ck, records, set(unknown))


def _unread_relations(ck: Checkpoint, records: Sequence[Record], unknown: set[str]) -> list[str]:
    """WebNLG: the advice for relations with a word the model never read (README, "Unseen
    relations"): such records are more often left out, and the checker-guided setting leaves
    fewer out (the unseen-relation suite's +RM SER, report half: 13.5% shipped, 2.8% guided)."""
    if ck.dataset != "webnlg":
        return []
    records = list(records)
    names = sorted({r.attribute for k, r in enumerate(records) if relation_words(records, [k]) & unknown})
    if not names:
        return []
    return [f"Relations with words the models never read ({', '.join(names)}): their records are more often left out "
            "or said with another relation's words; the Checker-guided option leaves fewer out"]


def input_warnings(dataset: str, records: Sequence[Record], ck: Checkpoint | None) -> list[str]:
    """Everything the app warns about for one input (the CLIs print the same): more records than
    the app takes, unknown attributes, very long values, unseen words."""
    out = []
    if len(records) > MAX_RECORDS:
        out.append(f"{len(records)} records; the models were trained on at most 8 (E2E) or 7 (WebNLG), the app takes {MAX_RECORDS}")
    for k, rec in enumerate(records, start=1):
        out += [f"record {k}: {w}" for w in record_warnings(dataset, rec)]
    return out + unknown_words_warning(ck, records)


def records_to_param(records: Sequence[Record]) -> str:
    """Records -> a compact JSON string for the URL (``?records=``)."""
    return json.dumps(
        [
            [r.subject, r.attribute, r.value] if r.subject is not None else [r.attribute, r.value]
            for r in records
        ],
        ensure_ascii=False,
        separators=(",", ":"),
    )


def records_from_param(dataset: str, param: str) -> list[Record]:
    """Inverse of :func:`records_to_param`, validated like the editor (raises RecordError)."""
    try:
        items = json.loads(param)
    except (json.JSONDecodeError, TypeError) as e:
        raise RecordError(f"the link's records parameter is not valid JSON ({e})") from e
    if not isinstance(items, list) or not all(isinstance(i, list) for i in items):
        raise RecordError("the link's records parameter must be a list of [attribute, value] pairs")
    cols = columns(dataset)
    rows = [dict(zip(cols, (str(x) for x in item), strict=False)) for item in items]
    if any(len(item) != len(cols) for item in items):
        raise RecordError(f"the link's records must have {len(cols)} parts each ({', '.join(cols)})")
    return records_from_rows(dataset, rows).records


def _unknown_words(ck: Checkpoint | None, records: Sequence[Record]) -> list[str]:
    if ck is None:
        return []
    return sorted({t for r in records for t in r.tokens if t not in ck.vocab.stoi})
