"""Real browser against `streamlit run app.py`: annotate two items on /Annotate, reload, find them
saved (resume), export CSV; the same annotator in two tabs loses no tick and no alignment
correction. Needs Debian's chromium (`apt-get install -y chromium`).

Set ``SEGVIZ_UPDATE_SCREENSHOTS=1`` to refresh ``docs/screenshots/annotate.png``.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from segviz.annotate import Input, Output, Store, create_campaign, items_for
from segviz.records import Record, tokenize

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync"]

if not CHROMIUM.exists():
    pytest.skip(f"{CHROMIUM} is missing; install it with `apt-get update && apt-get install -y chromium`",
                allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

EXAMPLES = [  # (records, text, [(token span, record index | None)])
    ([Record("name", "The Eagle"), Record("eatType", "coffee shop"), Record("food", "French"),
      Record("area", "riverside"), Record("near", "Burger King")],
     "The Eagle is a French coffee shop near Burger King in the riverside area.",
     [(2, 0), (4, None), (5, 2), (7, 1), (8, None), (10, 4), (12, None), (14, 3), (15, None)]),
    ([Record("name", "Zizzi"), Record("eatType", "pub"), Record("priceRange", "cheap")],
     "Zizzi is a cheap pub. Zizzi is a pub.",
     [(1, 0), (3, None), (4, 2), (5, 1), (6, None), (7, 0), (9, None), (10, 1), (11, None)]),
    ([Record("name", "Aromi"), Record("food", "Chinese"), Record("area", "city centre")],
     "Aromi serves <i>Chinese</i> food.",
     [(1, 0), (5, None), (6, 1), (12, None)]),
]


def _segments(text: str, cuts: list[tuple[int, int | None]]) -> dict:
    tokens, segs, start = tokenize(text), [], 0
    for end, rec in cuts:
        segs.append([start, end, rec])
        start = end
    assert start == len(tokens), (text, tokens)
    return {"tokens": tokens, "segments": segs}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path: Path):
    """`streamlit run app.py` on a free port, its store pre-filled with campaign 'demo'."""
    url = f"sqlite:///{tmp_path / 'ann.sqlite'}"
    with Store(url) as store:
        inputs = [Input(f"in{i}", records) for i, (records, _, _) in enumerate(EXAMPLES)]
        outputs = [Output(f"in{i}", text, _segments(text, cuts)) for i, (_, text, cuts) in enumerate(EXAMPLES)]
        create_campaign(store, "demo", "e2e", "dev", {"seg": outputs}, inputs,
                        auto_check=lambda records, out: {1: "repeated"} if "Zizzi" in out else {}, prefill=True)
    port = _free_port()
    env = {**os.environ, "SEGVIZ_ANNOTATE_DB": url, "SEGVIZ_CHECKPOINTS": str(tmp_path / "none")}
    log = (tmp_path / "streamlit.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as r:
                if r.read() == b"ok":
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"streamlit did not start:\n{(tmp_path / 'streamlit.log').read_text()[-3000:]}")
        time.sleep(0.5)
    yield base, url
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log.close()


def _wait_text(page, text: str, timeout: float = 60_000) -> None:
    page.get_by_text(text, exact=False).first.wait_for(timeout=timeout)


def test_annotate_reload_export(server, tmp_path: Path) -> None:
    base, url = server
    with Store(url) as store:
        order = [it["item_id"] for it in items_for(store, "demo", "alice")]
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1300}, accept_downloads=True)
            page.goto(f"{base}/Annotate?annotator=alice&campaign=demo")
            _wait_text(page, "0 of 3 done · item 1 of 3")
            texts = []

            def shown_text() -> None:  # model text is escaped: shown literally, never parsed as HTML
                # each call follows a move to another item: wait until its text replaced the last one
                # (the progress bar is redrawn first; the old text can still be on screen)
                page.wait_for_function("prev => { const e = document.querySelector('.segviz-text');"
                                       " return e !== null && e.innerText !== prev; }",
                                       arg=texts[-1] if texts else None, timeout=60_000)
                texts.append(page.inner_text(".segviz-text"))
                assert page.locator(".segviz-text i").count() == 0

            shown_text()

            def fluency(item: int, value: int) -> None:
                page.locator(f".st-key-ann_flu_{item}").get_by_text(str(value), exact=True).click()

            fluency(order[0], 4)
            _wait_text(page, "1 of 3 done · item 1 of 3")
            page.locator(f".st-key-ann_flag_{order[0]}_0_wrong").get_by_role("checkbox").check(force=True)
            page.wait_for_function("() => document.body.innerText.includes('last change')")
            page.get_by_role("button", name="Next").click()
            _wait_text(page, "1 of 3 done · item 2 of 3")
            shown_text()
            fluency(order[1], 2)
            _wait_text(page, "2 of 3 done · item 2 of 3")
            with Store(url) as store:  # saved the moment they were clicked
                deadline = time.monotonic() + 20
                while not (store.annotation(order[0], "alice") or {}).get("flags") and time.monotonic() < deadline:
                    time.sleep(0.2)
                first, second = store.annotation(order[0], "alice"), store.annotation(order[1], "alice")
            assert first["fluency"] == 4 and first["flags"]["0"]["wrong"] is True
            assert second["fluency"] == 2

            page.reload()  # a fresh session: state comes from the store
            _wait_text(page, "2 of 3 done · item 3 of 3")
            shown_text()
            assert any("Aromi serves <i>Chinese</i> food." in t for t in texts), texts
            page.get_by_role("button", name="Back").click()
            _wait_text(page, "2 of 3 done · item 2 of 3")
            checked = page.locator(f".st-key-ann_flu_{order[1]} input[type=radio]:checked")
            checked.wait_for(timeout=60_000)  # the progress text is redrawn before the item's widgets
            assert checked.count() == 1
            assert checked.locator("xpath=ancestor::label").inner_text().strip() == "2"  # the saved rating
            page.get_by_role("button", name="Next").click()
            _wait_text(page, "item 3 of 3")
            shot = tmp_path / "annotate.png"
            page.screenshot(path=str(shot), full_page=True)
            if os.environ.get("SEGVIZ_UPDATE_SCREENSHOTS"):
                (ROOT / "docs" / "screenshots").mkdir(parents=True, exist_ok=True)
                shutil.copy(shot, ROOT / "docs" / "screenshots" / "annotate.png")

            page.get_by_text("Results, agreement and export").click()
            _wait_text(page, "Export CSV")
            with page.expect_download() as dl:
                page.get_by_role("button", name="Export CSV").click()
            path = dl.value.path()
            rows = list(csv.DictReader(io.StringIO(Path(path).read_text(encoding="utf-8"))))
        finally:
            browser.close()
    done = {int(r["item_id"]): r for r in rows if r["annotator"] == "alice"}
    assert set(done) == {order[0], order[1]}
    assert (done[order[0]]["fluency"], done[order[1]]["fluency"]) == ("4", "2")
    assert done[order[0]]["human_wrong"] == "[0]" and len(rows) == 3
    with Store(url) as store:  # one save per click: nothing saved again when an item is left or shown again
        versions = {a["item_id"]: a["version"] for a in store.annotations("demo") if a["annotator"] == "alice"}
        assert (versions[order[0]], versions[order[1]]) == (2, 1)
        # the item on screen, never clicked, is never saved: session 7 saw one stale save in about 1
        # CI run in 3 (a remounted widget sent back a blank it was never given); session 8's fix
        # (widgets declare the value the server holds) ended it: 11 runs in a row, 5 with both
        # cores busy, before this was tightened from "at most one save"
        assert versions.get(order[2], 0) == 0, versions


def _wait_saved(url: str, item: int, annotator: str, version: int) -> dict:
    """The annotation once the store holds ``version`` saves of it (the click has been saved)."""
    deadline = time.monotonic() + 30
    with Store(url) as store:
        while True:
            a = store.annotation(item, annotator)
            if (a and a["version"] >= version) or time.monotonic() > deadline:
                return a
            time.sleep(0.2)


def test_two_tabs_lose_nothing(server) -> None:
    """The same annotator in two tabs: tab B (stale) ticks another record; tab A's tick is kept,
    and each tab, once it saves, is told and shows every saved tick."""
    base, url = server
    with Store(url) as store:
        first = items_for(store, "demo", "carol")[0]
    item = first["item_id"]
    prefill = {(int(k), f) for k, fs in (first["prefill"] or {}).items() for f, v in fs.items() if v}
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1300})
            tabs = [context.new_page(), context.new_page()]
            for tab in tabs:
                tab.goto(f"{base}/Annotate?annotator=carol&campaign=demo")
                _wait_text(tab, "0 of 3 done · item 1 of 3")
            tab_a, tab_b = tabs

            def box(tab, k: int, flag: str):
                return tab.locator(f".st-key-ann_flag_{item}_{k}_{flag}").get_by_role("checkbox")

            box(tab_a, 0, "wrong").check(force=True)
            _wait_saved(url, item, "carol", 1)
            box(tab_b, 2, "missing").check(force=True)
            _wait_text(tab_b, "had been changed in another tab")
            sync_api.expect(box(tab_b, 0, "wrong")).to_be_checked(timeout=30_000)  # B now shows A's tick
            tab_a.locator(f".st-key-ann_flu_{item}").get_by_text("3", exact=True).click()
            _wait_text(tab_a, "had been changed in another tab")
            sync_api.expect(box(tab_a, 2, "missing")).to_be_checked(timeout=30_000)  # A shows B's tick
            sync_api.expect(box(tab_a, 0, "wrong")).to_be_checked()
        finally:
            browser.close()
    saved = _wait_saved(url, item, "carol", 3)
    ticked = {(int(k), f) for k, fs in saved["flags"].items() for f, v in fs.items() if v}
    assert ticked == {(0, "wrong"), (2, "missing")} | prefill
    assert (saved["fluency"], saved["version"]) == (3, 3)


def _pick_record(tab, row: int, label: str) -> None:
    """Choose ``label`` in the correction table's record column, row ``row`` (a canvas grid:
    click the cell, Enter opens its select box, type, Enter)."""
    grid = tab.locator("[data-testid='stDataFrame']").first
    grid.wait_for()
    box = grid.bounding_box()
    row_height = 35  # Streamlit's default; the header is one row
    tab.bring_to_front()
    tab.mouse.click(box["x"] + box["width"] * 0.75, box["y"] + row_height * (row + 1) + row_height / 2)
    tab.wait_for_timeout(500)
    tab.keyboard.press("Enter")
    tab.wait_for_timeout(1500)
    tab.keyboard.type(label)
    tab.wait_for_timeout(500)
    tab.keyboard.press("Enter")


def _segment_cleared(url: str, item: int, annotator: str, row: int, timeout: float = 20) -> bool:
    """Whether the store's corrected alignment points segment ``row`` at no record (waits)."""
    deadline = time.monotonic() + timeout
    with Store(url) as store:
        while time.monotonic() < deadline:
            a = store.annotation(item, annotator)
            if a and a["corrected_alignment"] and a["corrected_alignment"]["segments"][row][2] is None:
                return True
            time.sleep(0.2)
    return False


def test_two_tabs_correcting_the_alignment_lose_nothing(server) -> None:
    """Each tab re-points one segment of the same item; both corrections are saved."""
    base, url = server
    with Store(url) as store:
        first = items_for(store, "demo", "erin")[0]
    item, own = first["item_id"], first["segments"]["segments"]
    rows = [i for i, (_, _, rec) in enumerate(own) if rec is not None][:2]  # two segments with a record
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1600})
            tabs = [context.new_page(), context.new_page()]
            for tab in tabs:
                tab.goto(f"{base}/Annotate?annotator=erin&campaign=demo")
                _wait_text(tab, "0 of 3 done · item 1 of 3")
                tab.get_by_text("Correct the alignment").click()
                tab.locator("[data-testid='stDataFrame']").first.wait_for()
                tab.wait_for_timeout(2000)  # the grid draws on a canvas after it appears
            for tab, row in zip(tabs, rows, strict=True):
                for _ in range(2):  # a click on a canvas the grid was still drawing is lost: once more
                    _pick_record(tab, row, "(none)")
                    if _segment_cleared(url, item, "erin", row):
                        break
            _wait_text(tabs[1], "had been changed in another tab")
        finally:
            browser.close()
    with Store(url) as store:
        saved = store.annotation(item, "erin")["corrected_alignment"]["segments"]
    assert saved == [[s, e, None if i in rows else rec] for i, (s, e, rec) in enumerate(own)]
