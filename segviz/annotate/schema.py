"""The annotation tables and what may go into them: the SQLAlchemy 2.x models (``campaign``,
``item``, ``annotation``; their columns are described in :mod:`segviz.annotate.store`), the
errors, and the validation and conversion of annotators, flags, segments and fluency, shared
by :class:`~segviz.annotate.store.Store` and the importers. :mod:`segviz.annotate.store`
re-exports every public name here."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

__all__ = [
    "AnnotationError",
    "StoreBusyError",
    "Base",
    "Campaign",
    "Item",
    "Annotation",
    "FLAG_NAMES",
    "UNSET",
    "validate_annotator",
    "normalize_flags",
    "normalize_segments",
    "campaign_dict",
    "item_dict",
    "annotation_dict",
    "utcnow",
]  # also for the store: validate_fluency, validate_extra_wrong, item_values, annotation_values

FLAG_NAMES = ("wrong", "repeated", "missing")  # per-record judgements, paper Tables 2 and 3
_ANNOTATOR = re.compile(r"[A-Za-z0-9\-_.@]{1,64}")


class AnnotationError(ValueError):
    """Invalid annotation input (bad fluency, unknown item, bad file ...); the message says what."""


class StoreBusyError(AnnotationError):
    """The database stayed locked longer than ``Store.max_wait_s``; nothing was written."""


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()  # "leave this field as it is" in Store.save_annotation


def utcnow() -> datetime:
    """Naive UTC now (SQLite keeps no time zone; every timestamp in the store is UTC)."""
    return datetime.now(UTC).replace(tzinfo=None)


# ---------------------------------------------------------------------------------------------
# ORM models


class Base(DeclarativeBase):
    pass


MAX_NAME_CHARS = 200  # a campaign name's length (the column's; PostgreSQL refuses longer ones)


class Campaign(Base):
    """One human-evaluation campaign; ``config`` holds the sampling rule, its seed and the systems."""

    __tablename__ = "campaign"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(MAX_NAME_CHARS), unique=True)
    dataset: Mapped[str] = mapped_column(String(50))
    split: Mapped[str] = mapped_column(String(50))
    created_at: Mapped[datetime] = mapped_column(DateTime)
    config: Mapped[dict] = mapped_column(JSON)
    items: Mapped[list[Item]] = relationship(back_populates="campaign", order_by="Item.id")


class Item(Base):
    """One (input, system output) pair. ``system`` is never shown to annotators (blinding);
    ``auto`` holds the automatic checker's verdicts, in the same shape as human ``flags``."""

    __tablename__ = "item"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    campaign_id: Mapped[int] = mapped_column(ForeignKey("campaign.id"), index=True)
    input_id: Mapped[str] = mapped_column(String(200))
    records: Mapped[list] = mapped_column(JSON)  # [Record.to_json(), ...]
    K: Mapped[int] = mapped_column(Integer)  # number of records
    system: Mapped[str] = mapped_column(String(200))
    output: Mapped[str] = mapped_column(Text)
    auto: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    segments: Mapped[dict | None] = mapped_column(JSON, nullable=True)  # {"tokens", "segments"}
    campaign: Mapped[Campaign] = relationship(back_populates="items")


class Annotation(Base):
    """One annotator's judgement of one item; at most one row per (item, annotator)."""

    __tablename__ = "annotation"
    __table_args__ = (UniqueConstraint("item_id", "annotator", name="uq_annotation_item_annotator"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    item_id: Mapped[int] = mapped_column(ForeignKey("item.id"), index=True)
    annotator: Mapped[str] = mapped_column(String(64), index=True)
    fluency: Mapped[int | None] = mapped_column(Integer, nullable=True)  # 1..5, None = not yet rated
    flags: Mapped[dict] = mapped_column(JSON)  # {"k": {"wrong", "repeated", "missing"}}, only flagged k
    extra_wrong: Mapped[int] = mapped_column(Integer, default=0)  # wrong facts outside all records
    prefilled: Mapped[dict | None] = mapped_column(JSON, nullable=True)  # auto pre-fill as shown
    comment: Mapped[str] = mapped_column(Text, default="")
    corrected_alignment: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    skipped: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime)
    updated_at: Mapped[datetime] = mapped_column(DateTime)
    version: Mapped[int] = mapped_column(Integer, default=1, server_default="1")  # +1 on every save


# ---------------------------------------------------------------------------------------------
# Validation and conversion helpers


def validate_annotator(annotator: str) -> str:
    """Return the annotator id, or raise: 1–64 characters of letters, digits and ``-_.@``."""
    if not isinstance(annotator, str) or not annotator.strip():
        raise AnnotationError("annotator id is empty; enter a name or e-mail address")
    if not _ANNOTATOR.fullmatch(annotator):
        raise AnnotationError(
            f"annotator id {annotator!r} is not allowed: use 1-64 ASCII letters, digits or - _ . @ (no spaces or accents)"
        )
    return annotator


def _flag_set(value: Any, where: str) -> dict[str, bool]:
    """One record's judgements -> ``{"wrong": b, "repeated": b, "missing": b}``.

    Accepts a mapping (unknown keys are an error), an object with those attributes (e.g. a
    dataclass from the automatic checker), or a status string ``ok|realised|wrong|repeated|missing``.
    """
    if isinstance(value, str):
        status = value.strip().lower()
        if status in ("ok", "realised", "realized", ""):
            return dict.fromkeys(FLAG_NAMES, False)
        if status not in FLAG_NAMES:
            raise AnnotationError(f"{where}: unknown status {value!r} (use one of {', '.join(FLAG_NAMES)})")
        return {f: f == status for f in FLAG_NAMES}
    if isinstance(value, Mapping):
        unknown = set(value) - set(FLAG_NAMES)
        if unknown:
            raise AnnotationError(f"{where}: unknown flag(s) {sorted(unknown)} (use {', '.join(FLAG_NAMES)})")
        return {f: bool(value.get(f, False)) for f in FLAG_NAMES}
    if all(hasattr(value, f) for f in FLAG_NAMES):
        return {f: bool(getattr(value, f)) for f in FLAG_NAMES}
    raise AnnotationError(f"{where}: expected a mapping of {FLAG_NAMES}, got {type(value).__name__}")


def normalize_flags(flags: Any, K: int, what: str = "flags") -> dict[str, dict[str, bool]]:
    """Validate per-record flags against ``K`` records and return the canonical form.

    Input: a mapping ``{record_index: flags}`` (int or digit-string keys) or a sequence with one
    entry per record. Output: ``{"k": {"wrong", "repeated", "missing"}}`` with string keys (JSON)
    holding only records with at least one flag set, so equal judgements compare equal.
    """
    if flags is None:
        return {}
    if isinstance(flags, Mapping):
        pairs = list(flags.items())
    elif isinstance(flags, list | tuple):
        if len(flags) != K:
            raise AnnotationError(f"{what}: {len(flags)} entries for {K} records")
        pairs = list(enumerate(flags))
    else:
        raise AnnotationError(f"{what}: expected a mapping record_index -> flags, got {type(flags).__name__}")
    out: dict[str, dict[str, bool]] = {}
    for key, value in pairs:
        try:
            k = int(key)
        except (TypeError, ValueError):
            raise AnnotationError(f"{what}: record index {key!r} is not an integer") from None
        if isinstance(key, float | bool) or not 0 <= k < K:
            raise AnnotationError(f"{what}: record index {key!r} does not exist (this input has {K} records: 0..{K - 1})")
        fs = _flag_set(value, f"{what}[{k}]")
        if any(fs.values()):
            out[str(k)] = fs
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))


def normalize_segments(segments: Any, K: int, what: str = "segments") -> dict | None:
    """Validate an alignment ``{"tokens": [...], "segments": [[start, end, record_index|None], ...]}``.

    ``start``/``end`` are token offsets (end exclusive), ``record_index`` in ``0..K-1`` or None for
    the null record. Returns a JSON-ready copy (lists, not tuples) or None.
    """
    if segments is None:
        return None
    if not isinstance(segments, Mapping) or "tokens" not in segments or "segments" not in segments:
        raise AnnotationError(f"{what}: expected {{'tokens': [...], 'segments': [[start, end, record|None], ...]}}")
    tokens = [str(t) for t in segments["tokens"]]
    out = []
    for i, seg in enumerate(segments["segments"]):
        if len(seg) != 3:
            raise AnnotationError(f"{what}: segment {i} must be [start, end, record_index|None]")
        start, end, rec = seg
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(tokens)):
            raise AnnotationError(f"{what}: segment {i} [{start}, {end}) is outside the {len(tokens)} tokens")
        if rec is not None and not (isinstance(rec, int) and 0 <= rec < K):
            raise AnnotationError(f"{what}: segment {i} points to record {rec!r}; this input has {K} records")
        out.append([start, end, rec])
    return {"tokens": tokens, "segments": out}


def validate_fluency(fluency: Any) -> int | None:
    if fluency is None:
        return None
    if isinstance(fluency, bool) or not isinstance(fluency, int | float) or fluency != int(fluency):
        raise AnnotationError(f"fluency must be a whole number from 1 to 5, got {fluency!r}")
    if not 1 <= int(fluency) <= 5:
        raise AnnotationError(f"fluency must be from 1 to 5, got {fluency!r}")
    return int(fluency)


def validate_skipped(skipped: Any) -> bool:
    """``skipped`` as stored: a JSON boolean only ("false", a string, is not false)."""
    if not isinstance(skipped, bool):
        raise AnnotationError(f"skipped must be true or false, got {skipped!r}")
    return skipped


def validate_extra_wrong(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise AnnotationError(f"extra_wrong (wrong facts outside the records) must be a count >= 0, got {n!r}")
    return n


def item_values(spec: Mapping[str, Any], where: str) -> dict:
    """Validated column values of a new item: K matches the records; auto and segments canonical."""
    fields = {k: v for k, v in spec.items() if k != "annotations"}
    unknown = set(fields) - {"input_id", "records", "K", "system", "output", "auto", "segments"}
    if unknown:
        raise AnnotationError(f"{where}: unknown field(s) {sorted(unknown)}")
    K = fields["K"]
    if K != len(fields["records"]):
        raise AnnotationError(f"{where}: K={K} but {len(fields['records'])} records")
    fields["auto"] = None if fields.get("auto") is None else normalize_flags(fields["auto"], K, f"{where}: auto")
    fields["segments"] = normalize_segments(fields.get("segments"), K, f"{where}: segments")
    return fields


def annotation_values(a: Mapping[str, Any], K: int) -> dict:
    """Validated column values of a stored annotation (import path; all fields required)."""
    now = utcnow()
    return {"annotator": validate_annotator(a["annotator"]),
            "fluency": validate_fluency(a.get("fluency")),
            "flags": normalize_flags(a.get("flags") or {}, K),
            "extra_wrong": validate_extra_wrong(a.get("extra_wrong", 0)),
            "prefilled": None if a.get("prefilled") is None else normalize_flags(a["prefilled"], K, "prefilled"),
            "comment": str(a.get("comment") or ""),
            "corrected_alignment": normalize_segments(a.get("corrected_alignment"), K, "corrected_alignment"),
            "skipped": validate_skipped(a.get("skipped", False)),
            "created_at": a.get("created_at") or now, "updated_at": a.get("updated_at") or now}


def campaign_dict(c: Campaign) -> dict:
    return {"id": c.id, "name": c.name, "dataset": c.dataset, "split": c.split,
            "created_at": c.created_at, "config": c.config}


def item_dict(it: Item) -> dict:
    """Full item, *including* ``system`` and ``auto``: for analysis and export, never for annotators."""
    return {"id": it.id, "campaign_id": it.campaign_id, "input_id": it.input_id, "records": it.records,
            "K": it.K, "system": it.system, "output": it.output, "auto": it.auto, "segments": it.segments}


def annotation_dict(a: Annotation) -> dict:
    return {"id": a.id, "item_id": a.item_id, "annotator": a.annotator, "fluency": a.fluency,
            "flags": a.flags, "extra_wrong": a.extra_wrong, "prefilled": a.prefilled,
            "comment": a.comment, "corrected_alignment": a.corrected_alignment, "skipped": a.skipped,
            "created_at": a.created_at, "updated_at": a.updated_at, "version": a.version}
