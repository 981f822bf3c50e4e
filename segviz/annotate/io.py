"""Export a campaign to CSV / JSONL and import such a file back.

Both formats carry everything needed to rebuild the campaign: its name, dataset, split,
creation time and config; every item's input (records), system, output, alignment and the
automatic checker's verdicts; every annotation with its annotator id. Human and automatic
verdicts are kept apart (``human_*`` vs ``auto_*`` columns in CSV, ``"annotations"[..]["human"]``
vs ``"auto"`` in JSONL). Importing an export into a store without that campaign name gives the
same campaign, items (in the same order), annotations and hence the same
:func:`~segviz.annotate.agreement.results_table`.

CSV: one row per (item, annotator); an item nobody annotated has one row with an empty
``annotator``. JSON-valued cells (``records``, ``auto_verdicts``, ``human_flags`` ...) are JSON
text; ``auto_wrong`` etc. list the flagged record indices for spreadsheet users and are ignored
on import. JSONL: a ``{"type": "campaign"}`` line, then one ``{"type": "item"}`` line per item
with its ``annotations`` nested.

Import is all-or-nothing: the file is parsed and validated first, then written in one
transaction; any problem raises :class:`AnnotationError` naming the line/row and stores nothing.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from segviz import datasets
from segviz.annotate.store import FLAG_NAMES, AnnotationError, Store, normalize_flags, normalize_segments
from segviz.formats import csv_rows
from segviz.records import Record

__all__ = ["FORMAT", "CSV_COLUMNS", "export_csv", "export_jsonl", "import_csv", "import_jsonl", "import_file"]

log = logging.getLogger(__name__)
CSV_CELL_CHARS = 1 << 26  # an exported comment or output may be longer than csv's default 131,072 characters

FORMAT = "segviz.annotate/1"
CSV_COLUMNS = [
    "campaign", "dataset", "split", "campaign_created_at", "campaign_config",
    "item_id", "input_id", "K", "records", "mr", "system", "output", "segments",
    "auto_verdicts", "auto_wrong", "auto_repeated", "auto_missing",
    "annotator", "fluency", "human_flags", "human_wrong", "human_repeated", "human_missing", "extra_wrong",
    "prefilled", "comment", "corrected_alignment", "skipped", "created_at", "updated_at",
]


def _ts(t: datetime | None) -> str | None:
    return None if t is None else t.isoformat()


def _parse_ts(s: Any, where: str) -> datetime | None:
    if s in (None, ""):
        return None
    try:
        return datetime.fromisoformat(str(s))
    except ValueError:
        raise AnnotationError(f"{where}: bad timestamp {s!r}") from None


def _flagged(flags: dict | None, name: str) -> list[int]:
    return [int(k) for k, v in (flags or {}).items() if v.get(name)]


def _dump(obj: Any) -> str:
    return "" if obj is None else json.dumps(obj, ensure_ascii=False, sort_keys=True)


def _write(text: str, path: str | Path | None) -> str:
    if path is not None:
        Path(path).write_text(text, encoding="utf-8", newline="")
    return text


def export_csv(store: Store, campaign: str | int, path: str | Path | None = None) -> str:
    """The campaign as CSV text (also written to ``path`` if given)."""
    c = store.campaign(campaign)
    anns: dict[int, list[dict]] = {}
    for a in store.annotations(c["id"]):
        anns.setdefault(a["item_id"], []).append(a)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    for it in store.items(c["id"]):
        base = {"campaign": c["name"], "dataset": c["dataset"], "split": c["split"],
                "campaign_created_at": _ts(c["created_at"]), "campaign_config": _dump(c["config"]),
                "item_id": it["id"], "input_id": it["input_id"], "K": it["K"], "records": _dump(it["records"]),
                "mr": " ; ".join(Record.from_json(r).label for r in it["records"]), "system": it["system"],
                "output": it["output"], "segments": _dump(it["segments"]), "auto_verdicts": _dump(it["auto"])}
        for name in FLAG_NAMES:
            base[f"auto_{name}"] = "" if it["auto"] is None else _dump(_flagged(it["auto"], name))
        for a in anns.get(it["id"]) or [None]:
            row = dict(base)
            if a is not None:
                row |= {"annotator": a["annotator"], "fluency": "" if a["fluency"] is None else a["fluency"],
                        "human_flags": _dump(a["flags"]), "extra_wrong": a["extra_wrong"],
                        "prefilled": _dump(a["prefilled"]), "comment": a["comment"],
                        "corrected_alignment": _dump(a["corrected_alignment"]),
                        "skipped": "true" if a["skipped"] else "false",
                        "created_at": _ts(a["created_at"]), "updated_at": _ts(a["updated_at"])}
                row |= {f"human_{name}": _dump(_flagged(a["flags"], name)) for name in FLAG_NAMES}
            w.writerow(row)
    return _write(buf.getvalue(), path)


def export_jsonl(store: Store, campaign: str | int, path: str | Path | None = None) -> str:
    """The campaign as JSON Lines text (also written to ``path`` if given)."""
    c = store.campaign(campaign)
    anns: dict[int, list[dict]] = {}
    for a in store.annotations(c["id"]):
        anns.setdefault(a["item_id"], []).append(a)
    lines = [{"type": "campaign", "format": FORMAT, "name": c["name"], "dataset": c["dataset"],
              "split": c["split"], "created_at": _ts(c["created_at"]), "config": c["config"]}]
    for it in store.items(c["id"]):
        lines.append({
            "type": "item", "item_id": it["id"], "input_id": it["input_id"], "K": it["K"],
            "records": it["records"], "system": it["system"], "output": it["output"],
            "segments": it["segments"], "auto": it["auto"],
            "annotations": [{"annotator": a["annotator"],
                             "human": {"fluency": a["fluency"], "flags": a["flags"], "extra_wrong": a["extra_wrong"],
                                       "comment": a["comment"], "corrected_alignment": a["corrected_alignment"],
                                       "skipped": a["skipped"]},
                             "prefilled": a["prefilled"], "created_at": _ts(a["created_at"]),
                             "updated_at": _ts(a["updated_at"])} for a in anns.get(it["id"], [])],
        })
    text = "".join(json.dumps(line, ensure_ascii=False, sort_keys=True) + "\n" for line in lines)
    return _write(text, path)


# ---------------------------------------------------------------------------------------------
# Import


def _read(data: str | bytes | Path) -> str:
    if isinstance(data, Path):
        if not data.is_file():
            raise AnnotationError(f"no such file: {data}")
        data = data.read_bytes()
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise AnnotationError("the file is not UTF-8 text") from None
    data = data.removeprefix("\ufeff")
    if not data.strip():
        raise AnnotationError("the file is empty")
    return data


def _item_spec(d: dict, where: str) -> dict:
    """Validate one item's input, output, alignment and auto verdicts."""
    try:
        records = [Record.from_json(r).to_json() for r in d["records"]]
        K = int(d["K"])
        spec = {"input_id": str(d["input_id"]), "records": records, "K": K, "system": str(d["system"]),
                "output": str(d["output"])}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise AnnotationError(f"{where}: missing or malformed item field ({exc})") from None
    if K != len(records):
        raise AnnotationError(f"{where}: K={K} but {len(records)} records")
    spec["auto"] = None if d.get("auto") is None else normalize_flags(d["auto"], K, f"{where}: auto")
    spec["segments"] = normalize_segments(d.get("segments"), K, f"{where}: segments")
    return spec


def _add(store: Store, head: dict, items: list[dict], name: str | None) -> dict:
    for field in ("name", "dataset", "split"):
        if not isinstance(head.get(field), str) or not head[field]:
            raise AnnotationError(f"campaign {field} is missing")
    if not isinstance(head.get("config"), dict):
        raise AnnotationError("campaign config is missing or not a JSON object")
    try:
        datasets.get(head["dataset"].lower())
    except ValueError as exc:
        raise AnnotationError(f"campaign dataset: {exc}") from None
    if not items:
        raise AnnotationError("the file has no items")
    out = store.add_campaign(name or head["name"], head["dataset"], head["split"], head["config"], items,
                             created_at=_parse_ts(head.get("created_at"), "campaign"))
    log.info("imported campaign %r: %d items, %d annotations", out["name"], len(items),
             sum(len(it.get("annotations", [])) for it in items))
    return out


def import_jsonl(store: Store, data: str | bytes | Path, name: str | None = None) -> dict:
    """Import a :func:`export_jsonl` file (content, or a ``Path``); ``name`` renames the campaign."""
    text = _read(data)
    head: dict | None = None
    items: list[dict] = []
    for n, line in enumerate(text.split("\n"), start=1):  # not splitlines(): U+2028 inside a string is no line end
        if not line.strip():
            continue
        try:
            d = json.loads(line)
        except json.JSONDecodeError as exc:
            raise AnnotationError(f"line {n}: not JSON ({exc.msg})") from None
        kind = d.get("type") if isinstance(d, dict) else None
        if kind == "campaign":
            if head is not None:
                raise AnnotationError(f"line {n}: a second campaign line")
            head = d
        elif kind == "item":
            if head is None:
                raise AnnotationError(f"line {n}: item before the campaign line")
            spec = _item_spec(d, f"line {n}")
            try:
                spec["annotations"] = [
                    {"annotator": a["annotator"], **a["human"], "prefilled": a.get("prefilled"),
                     "created_at": _parse_ts(a.get("created_at"), f"line {n}"),
                     "updated_at": _parse_ts(a.get("updated_at"), f"line {n}")}
                    for a in d.get("annotations") or []]
            except (KeyError, TypeError) as exc:
                raise AnnotationError(f"line {n}: malformed annotation ({exc})") from None
            items.append(spec)
        else:
            raise AnnotationError(f"line {n}: expected a JSON object with type 'campaign' or 'item'")
    if head is None:
        raise AnnotationError("no campaign line (is this a segviz JSONL export?)")
    return _add(store, head, items, name)


def _json_cell(row: dict, col: str, where: str) -> Any:
    cell = row.get(col)
    if cell in (None, ""):
        return None
    try:
        return json.loads(cell)
    except json.JSONDecodeError:
        raise AnnotationError(f"{where}: column {col!r} is not valid JSON") from None


def import_csv(store: Store, data: str | bytes | Path, name: str | None = None) -> dict:
    """Import a :func:`export_csv` file (content, or a ``Path``); ``name`` renames the campaign."""
    text = _read(data)
    limit = csv.field_size_limit(max(csv.field_size_limit(), CSV_CELL_CHARS))  # process-wide: put back below
    try:
        return _import_csv_rows(store, csv.DictReader(io.StringIO(text, newline="")), name)
    finally:
        csv.field_size_limit(limit)


def _import_csv_rows(store: Store, reader: csv.DictReader, name: str | None) -> dict:
    """:func:`import_csv` on an open reader."""
    missing = [c for c in ("campaign", "dataset", "split", "campaign_config", "item_id", "input_id", "K",
                           "records", "system", "output", "annotator", "fluency", "human_flags", "skipped")
               if c not in (reader.fieldnames or [])]
    if missing:
        raise AnnotationError(f"not a segviz CSV export: missing column(s) {', '.join(missing)}")
    head: dict | None = None
    items: dict[str, dict] = {}
    end = 1  # the header's line
    for row in csv_rows(reader, AnnotationError):
        where, end = f"line {end + 1}", reader.line_num  # the line where the row starts (a cell may span lines)
        if None in row or any(v is None for v in row.values()):
            raise AnnotationError(f"{where}: wrong number of columns")
        if head is None:
            head = {"name": row["campaign"], "dataset": row["dataset"], "split": row["split"],
                    "created_at": row.get("campaign_created_at"),
                    "config": _json_cell(row, "campaign_config", where)}
        elif row["campaign"] != head["name"]:
            raise AnnotationError(f"{where}: a second campaign {row['campaign']!r} in one file")
        key = row["item_id"]
        if key not in items:
            items[key] = _item_spec({**row, "records": _json_cell(row, "records", where),
                                     "auto": _json_cell(row, "auto_verdicts", where),
                                     "segments": _json_cell(row, "segments", where)}, where)
            items[key]["annotations"] = []
        if not row["annotator"]:
            continue
        try:
            fluency = None if row["fluency"] == "" else int(row["fluency"])
            extra = int(row.get("extra_wrong") or 0)
        except ValueError:
            raise AnnotationError(f"{where}: fluency / extra_wrong must be whole numbers") from None
        if row["skipped"] not in ("true", "false"):
            raise AnnotationError(f"{where}: skipped must be true or false, got {row['skipped']!r}")
        items[key]["annotations"].append({
            "annotator": row["annotator"], "fluency": fluency, "flags": _json_cell(row, "human_flags", where),
            "extra_wrong": extra, "prefilled": _json_cell(row, "prefilled", where),
            "comment": row.get("comment") or "",
            "corrected_alignment": _json_cell(row, "corrected_alignment", where),
            "skipped": row["skipped"] == "true", "created_at": _parse_ts(row.get("created_at"), where),
            "updated_at": _parse_ts(row.get("updated_at"), where)})
    if head is None:
        raise AnnotationError("the file has a header but no rows")
    ordered = [items[k] for k in sorted(items, key=lambda k: (0, int(k), "") if k.isdigit() else (1, 0, k))]
    return _add(store, head, ordered, name)


def import_file(store: Store, data: str | bytes | Path, name: str | None = None) -> dict:
    """Import a CSV or JSONL export, telling them apart by the first character (``{`` = JSONL)."""
    text = _read(data)
    if text.lstrip().startswith("{"):
        return import_jsonl(store, text, name)
    return import_csv(store, text, name)
