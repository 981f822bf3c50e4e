"""Annotation store: concurrency, restart, validation, two tabs, lock retries.

Tests taking ``db_url`` run on SQLite and on PostgreSQL (see ``annotate_backends``); the
lock-retry tests are about SQLite's file lock and run on SQLite only."""

from __future__ import annotations

import sqlite3
import sys
import threading
import time
from pathlib import Path

import annotate_backends
import pytest

from segviz.annotate import AnnotationError, Store, StoreBusyError, default_url, display_url, user_data_dir
from segviz.annotate.store import FLAG_NAMES

# fixtures: every test taking db_url runs on SQLite and on PostgreSQL
db_url = annotate_backends.db_url
postgres_url = annotate_backends.postgres_url
postgres_admin = annotate_backends.postgres_admin


def _items(n: int, K: int = 3) -> list[dict]:
    records = [{"attribute": f"a{k}", "value": f"v{k}"} for k in range(K)]
    return [{"input_id": f"in{i}", "records": records, "K": K, "system": "sys", "output": f"text {i}"}
            for i in range(n)]


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ann.sqlite'}"


@pytest.fixture
def store(db_url: str):
    s = Store(db_url)
    yield s
    s.dispose()


def test_wal_mode_and_default_url(sqlite_url: str, monkeypatch, tmp_path: Path) -> None:
    Store(sqlite_url).dispose()
    con = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"))
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()
    monkeypatch.delenv("SEGVIZ_ANNOTATE_DB", raising=False)
    monkeypatch.delenv("SEGVIZ_DATA_HOME", raising=False)
    assert default_url() == f"sqlite:///{(user_data_dir() / 'annotations.sqlite').as_posix()}"
    monkeypatch.setenv("SEGVIZ_DATA_HOME", str(tmp_path / "home"))
    assert default_url() == f"sqlite:///{(tmp_path / 'home' / 'annotations.sqlite').as_posix()}"
    monkeypatch.setenv("SEGVIZ_ANNOTATE_DB", "sqlite:///:memory:")
    assert default_url() == "sqlite:///:memory:"
    with Store() as s:  # from the environment; in memory
        assert s.campaigns() == []


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="XDG data folder: Linux and other Unix")
def test_default_database_is_per_user_not_in_the_checkout(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.delenv("SEGVIZ_ANNOTATE_DB", raising=False)
    monkeypatch.delenv("SEGVIZ_DATA_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_url() == f"sqlite:///{(tmp_path / 'xdg' / 'segviz' / 'annotations.sqlite').as_posix()}"
    monkeypatch.setenv("XDG_DATA_HOME", "relative/dir")  # the XDG spec: a relative path is ignored
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_data_dir() == tmp_path / "home" / ".local" / "share" / "segviz"
    monkeypatch.chdir(tmp_path)
    with Store() as s:
        s.add_campaign("c", "e2e", "dev", {}, _items(1))
    assert (user_data_dir() / "annotations.sqlite").is_file()
    assert not (tmp_path / "data").exists() and not (tmp_path / "relative").exists()


def test_display_url_hides_the_password() -> None:
    assert display_url("postgresql+psycopg://ann:s3cret@db:5432/segviz") == "postgresql+psycopg://ann:***@db:5432/segviz"
    assert display_url("sqlite:////srv/a.sqlite") == "sqlite:////srv/a.sqlite"


def test_concurrent_annotators(db_url: str) -> None:
    """8 annotators, each with its own Store (engine) on one file, 200 saves each."""
    with Store(db_url) as setup:
        setup.add_campaign("c", "e2e", "dev", {}, _items(200))
        item_ids = [it["id"] for it in setup.items("c")]
    errors: list[BaseException] = []

    def annotate(n: int) -> None:
        try:
            with Store(db_url) as s:
                for i, item_id in enumerate(item_ids):
                    s.save_annotation(item_id, f"annotator{n}", fluency=1 + (i + n) % 5,
                                      flags={i % 3: {"missing": True}})
        except BaseException as exc:  # surfaced below with the assert
            errors.append(exc)

    threads = [threading.Thread(target=annotate, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with Store(db_url) as s:
        anns = s.annotations("c")
    assert len(anns) == 1600
    assert {(a["item_id"], a["annotator"]) for a in anns} == {(i, f"annotator{n}") for i in item_ids for n in range(8)}
    a = next(a for a in anns if a["annotator"] == "annotator3" and a["item_id"] == item_ids[4])
    assert a["fluency"] == 1 + (4 + 3) % 5 and a["flags"] == {"1": {"wrong": False, "repeated": False, "missing": True}}


def test_survives_restart(db_url: str) -> None:
    s = Store(db_url)
    s.add_campaign("c", "e2e", "dev", {"systems": ["sys"]}, _items(2))
    item_id = s.items("c")[0]["id"]
    s.save_annotation(item_id, "ann", fluency=4, comment="ok")
    s.engine.dispose()
    s2 = Store(db_url)
    a = s2.annotation(item_id, "ann")
    assert a is not None and a["fluency"] == 4 and a["comment"] == "ok"
    assert s2.campaign("c")["config"] == {"systems": ["sys"]}
    s2.dispose()


def test_partial_updates_keep_other_fields(store: Store) -> None:
    store.add_campaign("c", "e2e", "dev", {}, _items(1))
    item_id = store.items("c")[0]["id"]
    first = store.save_annotation(item_id, "ann", fluency=3)
    store.save_annotation(item_id, "ann", flags={"2": {"wrong": True}})
    a = store.save_annotation(item_id, "ann", comment="hm", extra_wrong=1)
    assert a["fluency"] == 3 and a["flags"] == {"2": {"wrong": True, "repeated": False, "missing": False}}
    assert a["comment"] == "hm" and a["extra_wrong"] == 1
    assert a["created_at"] == first["created_at"] and a["updated_at"] >= first["updated_at"]
    assert store.save_annotation(item_id, "ann", fluency=None)["fluency"] is None
    # all-false flags are dropped: the canonical form only lists flagged records
    assert store.save_annotation(item_id, "ann", flags={0: {"wrong": False}})["flags"] == {}


@pytest.mark.parametrize("kwargs, message", [
    ({"fluency": 0}, "from 1 to 5"),
    ({"fluency": 6}, "from 1 to 5"),
    ({"fluency": 2.5}, "whole number"),
    ({"fluency": True}, "whole number"),
    ({"flags": {3: {"wrong": True}}}, "does not exist"),
    ({"flags": {-1: {"wrong": True}}}, "does not exist"),
    ({"flags": {"x": {"wrong": True}}}, "not an integer"),
    ({"flags": {0: {"bogus": True}}}, "unknown flag"),
    ({"extra_wrong": -1}, "count >= 0"),
    ({"corrected_alignment": {"tokens": ["a"], "segments": [[0, 2, 0]]}}, "outside"),
    ({"corrected_alignment": {"tokens": ["a"], "segments": [[0, 1, 7]]}}, "points to record"),
])
def test_validation_errors(store: Store, kwargs: dict, message: str) -> None:
    store.add_campaign("c", "e2e", "dev", {}, _items(1))
    item_id = store.items("c")[0]["id"]
    with pytest.raises(AnnotationError, match=message):
        store.save_annotation(item_id, "ann", **kwargs)
    assert store.annotations("c") == []


@pytest.mark.parametrize("annotator, message", [
    ("", "empty"), ("   ", "empty"), ("a b", "not allowed"), ("x/y", "not allowed"),
    ("<script>", "not allowed"), ("a" * 65, "not allowed"), ("ümlaut", "not allowed"),
])
def test_bad_annotator_ids(store: Store, annotator: str, message: str) -> None:
    store.add_campaign("c", "e2e", "dev", {}, _items(1))
    with pytest.raises(AnnotationError, match=message):
        store.save_annotation(store.items("c")[0]["id"], annotator, fluency=3)


def test_good_annotator_id_and_unknown_item(store: Store) -> None:
    store.add_campaign("c", "e2e", "dev", {}, _items(1))
    item_id = store.items("c")[0]["id"]
    assert store.save_annotation(item_id, "j.doe-2_x@lab.org", fluency=5)["annotator"] == "j.doe-2_x@lab.org"
    assert store.save_annotation(item_id, "a" * 64, fluency=5)["fluency"] == 5
    with pytest.raises(AnnotationError, match="unknown item 999"):
        store.save_annotation(999, "ann", fluency=3)
    with pytest.raises(AnnotationError, match="unknown campaign"):
        store.items("nope")


def test_same_field_in_two_tabs_last_click_wins(db_url: str) -> None:
    """Two Store objects (two tabs) write the same field alternately: the latest click is kept."""
    tab1, tab2 = Store(db_url), Store(db_url)
    tab1.add_campaign("c", "e2e", "dev", {}, _items(1))
    item_id = tab1.items("c")[0]["id"]
    for i in range(10):
        tab = tab1 if i % 2 == 0 else tab2
        tab.save_annotation(item_id, "ann", fluency=1 + i % 5, comment=f"write {i}")
    anns = tab1.annotations("c")
    assert len(anns) == 1
    assert anns[0]["comment"] == "write 9" and anns[0]["fluency"] == 1 + 9 % 5 and anns[0]["version"] == 10
    tab1.dispose()
    tab2.dispose()


# One annotator, one item, two tabs that each save what they click, knowing only the version they
# last saw. (tab, field, value): flags are (record, flag).
CLICKS = [("A", "flag", (0, "wrong")), ("B", "flag", (1, "repeated")), ("A", "fluency", 4),
          ("B", "comment", "odd word order"), ("B", "flag", (2, "missing")), ("A", "flag", (1, "wrong")),
          ("A", "extra_wrong", 2), ("B", "flag", (0, "missing")), ("A", "comment", "odd word order; fine")]


def _click(store: Store, item_id: int, field: str, value, seen: int) -> dict:
    if field == "flag":
        return store.set_flag(item_id, "ann", *value, True, seen_version=seen)
    return store.save_annotation(item_id, "ann", seen_version=seen, **{field: value})


def test_two_tabs_interleaving_lose_nothing(db_url: str) -> None:
    """The issue's lost update: tab B's tick must not replace tab A's; a stale tab is told."""
    tabs = {"A": Store(db_url), "B": Store(db_url)}
    tabs["A"].add_campaign("c", "e2e", "dev", {}, _items(1))
    item_id = tabs["A"].items("c")[0]["id"]
    seen = {"A": 0, "B": 0}  # both tabs opened the item before anything was saved
    conflicts = []
    for tab, field, value in CLICKS:
        saved = _click(tabs[tab], item_id, field, value, seen[tab])
        conflicts.append(saved["conflict"])
        seen[tab] = saved["version"]
    # a save conflicts exactly when the other tab saved since this tab last saw the item
    assert conflicts == [i > 0 and CLICKS[i - 1][0] != tab for i, (tab, _, _) in enumerate(CLICKS)]
    a = tabs["B"].annotation(item_id, "ann")
    ticked = {(k, f) for _, field, (k, f) in [c for c in CLICKS if c[1] == "flag"]}
    assert {(int(k), f) for k, fs in a["flags"].items() for f in FLAG_NAMES if fs[f]} == ticked
    last = {field: value for _, field, value in CLICKS if field != "flag"}
    assert (a["fluency"], a["comment"], a["extra_wrong"]) == (last["fluency"], last["comment"], last["extra_wrong"])
    assert a["version"] == len(CLICKS)
    for s in tabs.values():
        s.dispose()


def test_two_tabs_ticking_at_once_lose_nothing(db_url: str) -> None:
    """Two tabs tick different boxes of one item at the same moment, many times: every tick is kept."""
    K = 20
    with Store(db_url) as setup:
        setup.add_campaign("c", "e2e", "dev", {}, _items(1, K))
        item_id = setup.items("c")[0]["id"]
    boxes = [(k, f) for k in range(K) for f in FLAG_NAMES]
    errors: list[BaseException] = []

    def tab(mine: list[tuple[int, str]]) -> None:
        try:
            with Store(db_url) as s:
                for k, f in mine:
                    s.set_flag(item_id, "ann", k, f, True)
        except BaseException as exc:  # surfaced below with the assert
            errors.append(exc)

    threads = [threading.Thread(target=tab, args=(boxes[n::2],)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with Store(db_url) as s:
        a = s.annotation(item_id, "ann")
    assert {(int(k), f) for k, fs in a["flags"].items() for f in FLAG_NAMES if fs[f]} == set(boxes)
    assert a["version"] == len(boxes)


def test_set_flag_changes_one_box_only(store: Store) -> None:
    store.add_campaign("c", "e2e", "dev", {}, _items(1))
    item_id = store.items("c")[0]["id"]
    prefill = {"2": {"missing": True}}
    first = store.set_flag(item_id, "ann", 0, "wrong", True, seen_version=0,
                           initial={"flags": prefill, "prefilled": prefill})
    assert first["conflict"] is False and first["version"] == 1
    assert first["flags"] == {"0": {"wrong": True, "repeated": False, "missing": False},
                              "2": {"wrong": False, "repeated": False, "missing": True}}
    assert first["prefilled"] == {"2": {"wrong": False, "repeated": False, "missing": True}}
    again = store.set_flag(item_id, "ann", 2, "missing", False, initial={"flags": {"1": "wrong"}})
    assert again["flags"] == {"0": {"wrong": True, "repeated": False, "missing": False}}  # initial: new rows only
    assert again["conflict"] is False and again["version"] == 2  # no seen_version: no check
    with pytest.raises(AnnotationError, match="record 3 does not exist"):
        store.set_flag(item_id, "ann", 3, "wrong", True)
    with pytest.raises(AnnotationError, match="unknown flag 'bogus'"):
        store.set_flag(item_id, "ann", 0, "bogus", True)
    with pytest.raises(AnnotationError, match="initial values may set flags and prefilled"):
        store.set_flag(item_id, "other", 0, "wrong", True, initial={"fluency": 3})
    assert store.annotation(item_id, "ann")["version"] == 2 and store.annotation(item_id, "other") is None


def test_two_tabs_correcting_the_alignment_lose_nothing(db_url: str) -> None:
    """Each tab re-points one segment; both corrections are kept, the item's own alignment too."""
    own = {"tokens": ["a", "b", "c", "d"], "segments": [[0, 1, 0], [1, 3, 1], [3, 4, None]]}
    tab_a, tab_b = Store(db_url), Store(db_url)
    tab_a.add_campaign("c", "e2e", "dev", {}, [dict(_items(1)[0], segments=own)])
    item_id = tab_a.items("c")[0]["id"]
    a = tab_a.set_segment(item_id, "ann", 0, 2, seen_version=0)
    b = tab_b.set_segment(item_id, "ann", 2, 1, seen_version=0)  # stale: saw nothing saved yet
    c = tab_a.set_segment(item_id, "ann", 1, None, seen_version=a["version"])
    assert (a["conflict"], b["conflict"], c["conflict"]) == (False, True, True)
    expected = [[0, 1, 2], [1, 3, None], [3, 4, 1]]
    assert tab_b.annotation(item_id, "ann")["corrected_alignment"] == {"tokens": own["tokens"], "segments": expected}
    assert tab_b.item(item_id)["segments"] == own
    with pytest.raises(AnnotationError, match="alignment row 3 does not exist"):
        tab_a.set_segment(item_id, "ann", 3, 0)
    with pytest.raises(AnnotationError, match="points to record 5"):
        tab_a.set_segment(item_id, "ann", 0, 5)
    tab_a.add_campaign("plain", "e2e", "dev", {}, _items(1))
    with pytest.raises(AnnotationError, match="no alignment to correct"):
        tab_a.set_segment(tab_a.items("plain")[0]["id"], "ann", 0, 0)
    for s in (tab_a, tab_b):
        s.dispose()


def test_database_from_before_versions_gets_the_column(db_url: str) -> None:
    with Store(db_url) as s:
        s.add_campaign("c", "e2e", "dev", {}, _items(1))
        item_id = s.items("c")[0]["id"]
        s.save_annotation(item_id, "ann", fluency=2)
        with s.engine.begin() as conn:  # the schema as it was
            conn.exec_driver_sql("ALTER TABLE annotation DROP COLUMN version")
    with Store(db_url) as s:
        assert s.annotation(item_id, "ann")["version"] == 1
        assert s.save_annotation(item_id, "ann", fluency=3, seen_version=1)["version"] == 2


def _hold_write_lock(path: str, seconds: float, locked: threading.Event) -> None:
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("BEGIN IMMEDIATE")
    locked.set()
    time.sleep(seconds)
    con.execute("COMMIT")
    con.close()


def test_lock_is_retried_not_raised(sqlite_url: str) -> None:
    """Another writer holds the lock longer than busy_timeout: the retry loop waits it out."""
    s = Store(sqlite_url, busy_timeout_ms=20)
    s.add_campaign("c", "e2e", "dev", {}, _items(1))
    item_id = s.items("c")[0]["id"]
    locked = threading.Event()
    t = threading.Thread(target=_hold_write_lock, args=(sqlite_url.removeprefix("sqlite:///"), 0.4, locked))
    t.start()
    locked.wait()
    a = s.save_annotation(item_id, "ann", fluency=2)
    t.join()
    assert a["fluency"] == 2 and s.annotation(item_id, "ann")["fluency"] == 2
    s.dispose()


def test_lock_held_too_long_gives_plain_busy_error(sqlite_url: str) -> None:
    s = Store(sqlite_url, busy_timeout_ms=10, max_wait_s=0.2)
    s.add_campaign("c", "e2e", "dev", {}, _items(1))
    item_id = s.items("c")[0]["id"]
    locked = threading.Event()
    t = threading.Thread(target=_hold_write_lock, args=(sqlite_url.removeprefix("sqlite:///"), 1.0, locked))
    t.start()
    locked.wait()
    with pytest.raises(StoreBusyError, match="busy") as info:
        s.save_annotation(item_id, "ann", fluency=2)
    t.join()
    assert "database is locked" not in str(info.value)
    assert s.annotation(item_id, "ann") is None
    s.dispose()
