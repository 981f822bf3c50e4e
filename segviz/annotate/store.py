"""Annotation store: SQLAlchemy 2.x models for the paper's human evaluation and a :class:`Store`.

The paper (Shen et al. 2020, "Metrics") has annotators judge each output for fluency (1–5) and
count wrong, repeated and missing facts. Here the counts are collected per input record:
an annotation holds ``flags = {record_index: {"wrong", "repeated", "missing"}}``, plus
``extra_wrong``, the number of stated facts that belong to *no* input record (hallucinated
attributes such as "low-priced" when there is no price record cannot be flagged on a record).

Tables::

    campaign   (id, name unique, dataset, split, created_at, config JSON)
    item       (id, campaign_id, input_id, records JSON, K, system, output, auto JSON, segments JSON)
    annotation (id, item_id, annotator, fluency, flags JSON, extra_wrong, prefilled JSON, comment,
                corrected_alignment JSON, skipped, created_at, updated_at, version;
                unique (item_id, annotator))

Every public write is one short transaction (:meth:`Store.run`), so the page can save each click
as it happens, at the finest grain: one flag of one record (:meth:`Store.set_flag`), one segment
of the alignment (:meth:`Store.set_segment`), or one field (:meth:`Store.save_annotation`). A
save reads the row with ``SELECT ... FOR UPDATE`` and changes only what it was given, so two
tabs never overwrite each other's clicks. ``version`` counts the saves of an annotation; a save
given the version its caller last saw (``seen_version``) reports ``conflict=True`` when someone
else saved in between, so a stale tab can be told and refreshed. On SQLite the store uses WAL
mode, a ``busy_timeout``, ``BEGIN IMMEDIATE`` for writes (a writer takes the write lock up front
instead of failing half-way on a stale snapshot) and a retry loop with jittered back-off for
"database is locked": callers never see that error; after ``max_wait_s`` they get
:class:`StoreBusyError` with a plain message. Any other SQLAlchemy URL works the same (no
SQLite-only SQL is used); the tests also run against PostgreSQL (``postgresql+psycopg://...``).

The models and the validation of what goes into them are in :mod:`segviz.annotate.schema`
(re-exported here). Timestamps are naive UTC. Everything returned is a plain ``dict`` (no live ORM objects), so
results can cross threads and Streamlit reruns.
"""

from __future__ import annotations

import logging
import os
import random
import sys
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import create_engine, event, inspect, select
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session

from segviz.annotate import schema
from segviz.annotate.schema import (
    FLAG_NAMES,
    MAX_NAME_CHARS,
    UNSET,
    Annotation,
    AnnotationError,
    Base,
    Campaign,
    Item,
    StoreBusyError,
    annotation_dict,
    annotation_values,
    campaign_dict,
    item_dict,
    item_values,
    normalize_flags,
    normalize_segments,
    utcnow,
    validate_annotator,
    validate_extra_wrong,
    validate_fluency,
)

__all__ = ["Store", "default_url", "user_data_dir", "display_url", *schema.__all__]  # schema: re-exported

log = logging.getLogger(__name__)
T = TypeVar("T")

# ---------------------------------------------------------------------------------------------
# Store


def user_data_dir() -> Path:
    """This user's data folder for segviz, outside any checkout: ``$XDG_DATA_HOME/segviz``
    (default ``~/.local/share/segviz``); ``~/Library/Application Support/segviz`` on macOS;
    ``%LOCALAPPDATA%\\segviz`` on Windows."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = str(Path.home() / "Library" / "Application Support")
    else:
        xdg = os.environ.get("XDG_DATA_HOME", "")
        base = xdg if os.path.isabs(xdg) else str(Path.home() / ".local" / "share")  # XDG: relative = unset
    return Path(base) / "segviz"


def default_url() -> str:
    """``$SEGVIZ_ANNOTATE_DB`` (a SQLAlchemy URL), else ``$SEGVIZ_DATA_HOME/annotations.sqlite``,
    else ``annotations.sqlite`` in :func:`user_data_dir` (never inside the repository)."""
    url = os.environ.get("SEGVIZ_ANNOTATE_DB")
    if url:
        return url
    home = Path(os.environ.get("SEGVIZ_DATA_HOME") or user_data_dir())
    return f"sqlite:///{(home / 'annotations.sqlite').as_posix()}"


def display_url(url: str) -> str:
    """The URL with any password masked, for messages and the page."""
    return make_url(url).render_as_string(hide_password=True)


def _create_schema(session: Session) -> None:
    """Create missing tables; add ``annotation.version`` to a database made before it existed."""
    conn = session.connection()
    Base.metadata.create_all(conn)
    if "version" not in {c["name"] for c in inspect(conn).get_columns("annotation")}:
        conn.exec_driver_sql("ALTER TABLE annotation ADD COLUMN version INTEGER NOT NULL DEFAULT 1")
        log.info("annotation store: added the version column")


def _is_lock_error(exc: BaseException) -> bool:
    msg = str(getattr(exc, "orig", exc)).lower()
    return any(s in msg for s in ("database is locked", "database table is locked", "database is busy",
                                  "deadlock", "could not serialize", "lock wait timeout"))


class Store:
    """Annotation database behind one SQLAlchemy engine.

    ``Store()`` opens :func:`default_url`; ``Store("sqlite:///path.sqlite")`` or any other URL
    works the same. Tables are created if missing. Safe to use from several threads; several
    ``Store`` objects (processes, browser tabs) may share one SQLite file.
    """

    def __init__(self, url: str | None = None, *, busy_timeout_ms: int = 5_000, max_wait_s: float = 60.0,
                 echo: bool = False) -> None:
        self.url = url or default_url()
        self.max_wait_s = max_wait_s  # give up retrying "database is locked" after this long
        u = make_url(self.url)
        self.is_sqlite = u.get_backend_name() == "sqlite"
        if self.is_sqlite and u.database and u.database != ":memory:":
            Path(u.database).parent.mkdir(parents=True, exist_ok=True)
        kwargs: dict[str, Any] = {"echo": echo}
        if self.is_sqlite:
            kwargs["connect_args"] = {"check_same_thread": False, "timeout": busy_timeout_ms / 1000}
        self.engine: Engine = create_engine(self.url, **kwargs)
        if self.is_sqlite:
            self._setup_sqlite(busy_timeout_ms)
        self.run(_create_schema, write=True)
        log.debug("annotation store at %s", display_url(self.url))

    def _setup_sqlite(self, busy_timeout_ms: int) -> None:
        """WAL + busy_timeout on every connection; we emit BEGIN ourselves (driver's is lazy)."""

        @event.listens_for(self.engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # driver autocommit; the "begin" hook below starts txns
            cur = dbapi_conn.cursor()
            cur.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            cur.execute("PRAGMA foreign_keys = ON")
            try:
                cur.execute("PRAGMA journal_mode = WAL")  # readers never block the writer
                cur.execute("PRAGMA synchronous = NORMAL")  # safe with WAL; cheap commits
            except Exception as exc:  # another connection holds the lock while switching: harmless
                log.debug("could not set WAL on this connection: %s", exc)
            cur.close()

        @event.listens_for(self.engine, "begin")
        def _on_begin(conn: Any) -> None:
            write = conn.get_execution_options().get("segviz_write", False)
            conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    # -- transactions ------------------------------------------------------------------------

    def run(self, fn: Callable[[Session], T], *, write: bool = True) -> T:
        """Run ``fn(session)`` in one transaction and commit; retry the whole thing on lock errors.

        ``fn`` must be safe to repeat (it is re-run from scratch after a rollback). An
        ``IntegrityError`` is retried once too (two tabs inserting the same row at once: the
        second attempt sees the first one's row).
        """
        bind = self.engine.execution_options(segviz_write=write)
        deadline = time.monotonic() + self.max_wait_s
        attempt = 0
        integrity_retried = False
        while True:
            attempt += 1
            try:
                with Session(bind, expire_on_commit=False) as session, session.begin():
                    return fn(session)
            except OperationalError as exc:
                if not _is_lock_error(exc):
                    raise
                if time.monotonic() > deadline:
                    log.error("database still locked after %d attempts", attempt)
                    raise StoreBusyError("the annotation database is busy; your last change was not "
                                         "saved, please try again in a moment") from None
                delay = min(0.5, 0.005 * 2 ** min(attempt, 8)) * (0.5 + random.random())
                log.debug("database locked (attempt %d); retrying in %.3f s", attempt, delay)
                time.sleep(delay)
            except IntegrityError:
                if integrity_retried:
                    raise
                integrity_retried = True

    def dispose(self) -> None:
        """Close all pooled connections (the file can then be moved or reopened)."""
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.dispose()

    # -- campaigns and items -----------------------------------------------------------------

    @staticmethod
    def _campaign(session: Session, campaign: str | int) -> Campaign:
        if isinstance(campaign, int):
            c = session.get(Campaign, campaign)
        else:
            c = session.scalars(select(Campaign).where(Campaign.name == campaign)).one_or_none()
        if c is None:
            raise AnnotationError(f"unknown campaign {campaign!r}")
        return c

    def add_campaign(self, name: str, dataset: str, split: str, config: dict, items: list[dict],
                     created_at: datetime | None = None) -> dict:
        """Insert a campaign and its items in one transaction; a taken name is an error.

        ``items``: dicts with ``input_id, records, K, system, output`` and optional ``auto``,
        ``segments`` and ``annotations`` (dicts as :func:`annotation_dict` returns, used by
        import; validated like :meth:`save_annotation`). Returns the campaign dict.
        """
        if not name or not name.strip():
            raise AnnotationError("campaign name is empty")
        if len(name) > MAX_NAME_CHARS:
            raise AnnotationError(f"campaign name has {len(name):,} characters; at most {MAX_NAME_CHARS} are allowed")

        def fn(s: Session) -> dict:
            if s.scalars(select(Campaign.id).where(Campaign.name == name)).first() is not None:
                raise AnnotationError(f"a campaign named {name!r} already exists; choose another name")
            c = Campaign(name=name, dataset=dataset, split=split, config=config,
                         created_at=created_at or utcnow())
            s.add(c)
            s.flush()
            for n, spec in enumerate(items):
                it = Item(campaign_id=c.id, **item_values(spec, f"item {n}"))
                s.add(it)
                anns = spec.get("annotations") or []
                if anns:
                    s.flush()
                    seen: set[str] = set()
                    for a in anns:
                        if a["annotator"] in seen:
                            raise AnnotationError(f"item {n}: annotator {a['annotator']!r} appears twice")
                        seen.add(a["annotator"])
                        try:
                            values = annotation_values(a, it.K)
                        except AnnotationError as exc:
                            raise AnnotationError(f"item {n}, annotator {a.get('annotator')!r}: {exc}") from None
                        s.add(Annotation(item_id=it.id, **values))
            return campaign_dict(c)

        out = self.run(fn)
        log.info("campaign %r created with %d items", name, len(items))
        return out

    def campaign(self, campaign: str | int) -> dict:
        """The campaign by name or id (raises :class:`AnnotationError` if unknown)."""
        return self.run(lambda s: campaign_dict(self._campaign(s, campaign)), write=False)

    def campaigns(self) -> list[dict]:
        return self.run(lambda s: [campaign_dict(c) for c in s.scalars(select(Campaign).order_by(Campaign.id))],
                        write=False)

    def items(self, campaign: str | int) -> list[dict]:
        """All items of a campaign in id order, with system and auto verdicts (not for annotators)."""

        def fn(s: Session) -> list[dict]:
            c = self._campaign(s, campaign)
            return [item_dict(it) for it in s.scalars(select(Item).where(Item.campaign_id == c.id).order_by(Item.id))]

        return self.run(fn, write=False)

    def item(self, item_id: int) -> dict:
        def fn(s: Session) -> dict:
            it = s.get(Item, item_id)
            if it is None:
                raise AnnotationError(f"unknown item {item_id!r}")
            return item_dict(it)

        return self.run(fn, write=False)

    # -- annotations -------------------------------------------------------------------------

    def save_annotation(self, item_id: int, annotator: str, *, fluency: Any = UNSET, flags: Any = UNSET,
                        extra_wrong: Any = UNSET, prefilled: Any = UNSET, comment: Any = UNSET,
                        corrected_alignment: Any = UNSET, skipped: Any = UNSET, seen_version: int | None = None,
                        initial: Mapping[str, Any] | None = None) -> dict:
        """Upsert the (item, annotator) annotation in its own transaction; returns the saved row.

        Only the fields passed change (``UNSET`` = keep), so the page saves each widget as it
        changes; passing ``None`` clears fluency / prefilled / corrected_alignment. ``initial``:
        ``flags`` / ``prefilled`` for a row this save creates (the checker's pre-fill as shown).
        ``seen_version``: the version the caller last saw (0 = no annotation yet); the result's
        ``conflict`` is True when it differs (someone else saved in between). The change is
        saved either way: it only touches the fields given.
        """
        validate_annotator(annotator)
        fluency = fluency if fluency is UNSET else validate_fluency(fluency)
        extra_wrong = extra_wrong if extra_wrong is UNSET else validate_extra_wrong(extra_wrong)
        if comment is not UNSET:
            comment = "" if comment is None else str(comment)
        if skipped is not UNSET:
            skipped = bool(skipped)

        def change(a: Annotation, it: Item) -> None:
            K = it.K
            values = {"fluency": fluency, "extra_wrong": extra_wrong, "comment": comment, "skipped": skipped,
                      "flags": flags if flags is UNSET else normalize_flags(flags, K),
                      "prefilled": prefilled if prefilled is UNSET or prefilled is None
                      else normalize_flags(prefilled, K, "prefilled"),
                      "corrected_alignment": corrected_alignment if corrected_alignment is UNSET
                      else normalize_segments(corrected_alignment, K, "corrected_alignment")}
            for key, value in values.items():
                if value is not UNSET:
                    setattr(a, key, value)

        return self._change(item_id, annotator, change, seen_version, initial)

    def set_flag(self, item_id: int, annotator: str, record: int, flag: str, value: bool, *,
                 seen_version: int | None = None, initial: Mapping[str, Any] | None = None) -> dict:
        """Set one flag (``wrong`` / ``repeated`` / ``missing``) of one record (0-based), keeping
        every other flag as stored; otherwise like :meth:`save_annotation`."""
        validate_annotator(annotator)
        if flag not in FLAG_NAMES:
            raise AnnotationError(f"unknown flag {flag!r} (use {', '.join(FLAG_NAMES)})")

        def change(a: Annotation, it: Item) -> None:
            K = it.K
            flags = dict(a.flags or {})
            if isinstance(record, bool) or not isinstance(record, int) or not 0 <= record < K:
                raise AnnotationError(f"record {record!r} does not exist (this input has {K} records: 0..{K - 1})")
            flags[str(record)] = {**dict.fromkeys(FLAG_NAMES, False), **flags.get(str(record), {}), flag: bool(value)}
            a.flags = normalize_flags(flags, K)

        return self._change(item_id, annotator, change, seen_version, initial)

    def set_segment(self, item_id: int, annotator: str, segment: int, record: int | None, *,
                    seen_version: int | None = None, initial: Mapping[str, Any] | None = None) -> dict:
        """Point one segment of the corrected alignment at ``record`` (0-based; None = no record),
        keeping every other segment as stored (the annotator's correction, else the item's own
        alignment); otherwise like :meth:`save_annotation`."""
        validate_annotator(annotator)

        def change(a: Annotation, it: Item) -> None:
            alignment = a.corrected_alignment or it.segments
            if not alignment:
                raise AnnotationError("this item has no alignment to correct")
            segments = [list(seg) for seg in alignment["segments"]]
            if isinstance(segment, bool) or not isinstance(segment, int) or not 0 <= segment < len(segments):
                raise AnnotationError(f"alignment row {segment!r} does not exist")
            segments[segment][2] = record
            a.corrected_alignment = normalize_segments({"tokens": alignment["tokens"], "segments": segments}, it.K,
                                                       "corrected_alignment")

        return self._change(item_id, annotator, change, seen_version, initial)

    def _change(self, item_id: int, annotator: str, change: Callable[[Annotation, Item], None],
                seen_version: int | None, initial: Mapping[str, Any] | None) -> dict:
        """One save: lock (or create) the row, apply ``change(row, item)``, bump the version."""

        def fn(s: Session) -> dict:
            it = s.get(Item, item_id)
            if it is None:
                raise AnnotationError(f"unknown item {item_id!r}")
            a = s.scalars(select(Annotation).where(Annotation.item_id == item_id, Annotation.annotator == annotator)
                          .with_for_update()).one_or_none()
            before = 0 if a is None else a.version
            if a is None:
                a = self._new_annotation(s, it, annotator, initial or {})
            change(a, it)
            a.version = before + 1
            a.updated_at = utcnow()
            s.flush()
            return annotation_dict(a) | {"conflict": seen_version is not None and seen_version != before}

        return self.run(fn)

    @staticmethod
    def _new_annotation(s: Session, it: Item, annotator: str, initial: Mapping[str, Any]) -> Annotation:
        unknown = set(initial) - {"flags", "prefilled"}
        if unknown:
            raise AnnotationError(f"initial values may set flags and prefilled, not {sorted(unknown)}")
        prefilled = initial.get("prefilled")
        a = Annotation(item_id=it.id, annotator=annotator, fluency=None, extra_wrong=0, comment="",
                       flags=normalize_flags(initial.get("flags") or {}, it.K),
                       prefilled=None if prefilled is None else normalize_flags(prefilled, it.K, "prefilled"),
                       corrected_alignment=None, skipped=False, created_at=utcnow(), version=0)
        s.add(a)
        return a

    def annotation(self, item_id: int, annotator: str) -> dict | None:
        """The (item, annotator) annotation, or None."""

        def fn(s: Session) -> dict | None:
            a = s.scalars(select(Annotation).where(Annotation.item_id == item_id,
                                                   Annotation.annotator == annotator)).one_or_none()
            return None if a is None else annotation_dict(a)

        return self.run(fn, write=False)

    def annotations(self, campaign: str | int, annotator: str | None = None) -> list[dict]:
        """All annotations of a campaign (optionally one annotator's), ordered by item then annotator."""

        def fn(s: Session) -> list[dict]:
            c = self._campaign(s, campaign)
            q = select(Annotation).join(Item).where(Item.campaign_id == c.id)
            if annotator is not None:
                q = q.where(Annotation.annotator == annotator)
            q = q.order_by(Annotation.item_id, Annotation.annotator)
            return [annotation_dict(a) for a in s.scalars(q)]

        return self.run(fn, write=False)
