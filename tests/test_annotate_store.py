"""Annotation store: concurrency, restart, validation, last-write-wins, lock retries."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from segviz.annotate import AnnotationError, Store, StoreBusyError, default_url


def _items(n: int, K: int = 3) -> list[dict]:
    records = [{"attribute": f"a{k}", "value": f"v{k}"} for k in range(K)]
    return [{"input_id": f"in{i}", "records": records, "K": K, "system": "sys", "output": f"text {i}"}
            for i in range(n)]


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ann.sqlite'}"


@pytest.fixture
def store(db_url: str):
    s = Store(db_url)
    yield s
    s.dispose()


def test_wal_mode_and_default_url(store: Store, db_url: str, monkeypatch, tmp_path: Path) -> None:
    con = sqlite3.connect(db_url.removeprefix("sqlite:///"))
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()
    monkeypatch.delenv("SEGVIZ_ANNOTATE_DB", raising=False)
    monkeypatch.delenv("SEGVIZ_DATA_HOME", raising=False)
    assert default_url() == "sqlite:///data/annotations.sqlite"
    monkeypatch.setenv("SEGVIZ_DATA_HOME", str(tmp_path / "home"))
    assert default_url() == f"sqlite:///{(tmp_path / 'home' / 'annotations.sqlite').as_posix()}"
    monkeypatch.setenv("SEGVIZ_ANNOTATE_DB", "sqlite:///:memory:")
    assert default_url() == "sqlite:///:memory:"
    with Store() as s:  # from the environment; in memory
        assert s.campaigns() == []


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


def test_same_annotator_in_two_tabs(db_url: str) -> None:
    """Two Store objects (two tabs) write the same (item, annotator) alternately: last write wins."""
    tab1, tab2 = Store(db_url), Store(db_url)
    tab1.add_campaign("c", "e2e", "dev", {}, _items(1))
    item_id = tab1.items("c")[0]["id"]
    for i in range(10):
        tab = tab1 if i % 2 == 0 else tab2
        tab.save_annotation(item_id, "ann", fluency=1 + i % 5, comment=f"write {i}")
    anns = tab1.annotations("c")
    assert len(anns) == 1
    assert anns[0]["comment"] == "write 9" and anns[0]["fluency"] == 1 + 9 % 5
    tab1.dispose()
    tab2.dispose()


def _hold_write_lock(path: str, seconds: float, locked: threading.Event) -> None:
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("BEGIN IMMEDIATE")
    locked.set()
    time.sleep(seconds)
    con.execute("COMMIT")
    con.close()


def test_lock_is_retried_not_raised(db_url: str) -> None:
    """Another writer holds the lock longer than busy_timeout: the retry loop waits it out."""
    s = Store(db_url, busy_timeout_ms=20)
    s.add_campaign("c", "e2e", "dev", {}, _items(1))
    item_id = s.items("c")[0]["id"]
    locked = threading.Event()
    t = threading.Thread(target=_hold_write_lock, args=(db_url.removeprefix("sqlite:///"), 0.4, locked))
    t.start()
    locked.wait()
    a = s.save_annotation(item_id, "ann", fluency=2)
    t.join()
    assert a["fluency"] == 2 and s.annotation(item_id, "ann")["fluency"] == 2
    s.dispose()


def test_lock_held_too_long_gives_plain_busy_error(db_url: str) -> None:
    s = Store(db_url, busy_timeout_ms=10, max_wait_s=0.2)
    s.add_campaign("c", "e2e", "dev", {}, _items(1))
    item_id = s.items("c")[0]["id"]
    locked = threading.Event()
    t = threading.Thread(target=_hold_write_lock, args=(db_url.removeprefix("sqlite:///"), 1.0, locked))
    t.start()
    locked.wait()
    with pytest.raises(StoreBusyError, match="busy") as info:
        s.save_annotation(item_id, "ann", fluency=2)
    t.join()
    assert "database is locked" not in str(info.value)
    assert s.annotation(item_id, "ann") is None
    s.dispose()
