"""Real-browser tests: Debian chromium (playwright) against ``streamlit run app.py``.

Run with ``python -m pytest tests/test_browser.py -m browser``. The app runs on tiny
checkpoints; the screenshot test uses ``checkpoints/`` when the trained models are there.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect

from segviz import service
from segviz.examples import EXAMPLES

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]  # fmt: skip
SHOTS = ROOT / "docs" / "screenshots"
TIMEOUT_MS = 120_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]




def _serve(checkpoints: Path, data: Path | None, log: Path):
    port = _free_port()
    env = {**os.environ, "SEGVIZ_CHECKPOINTS": str(checkpoints)}
    if data is not None:
        env["SEGVIZ_DATA"] = str(data)
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
           "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise RuntimeError(f"streamlit did not start; log:\n{log.read_text()[-2000:]}")


def _stop(proc) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        pytest.skip("chromium not installed (apt-get install -y chromium) - browser tests skipped")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def server(tiny, tmp_path_factory):
    proc, url = _serve(tiny, tmp_path_factory.mktemp("nodata"), tmp_path_factory.mktemp("log") / "streamlit.log")
    yield url
    _stop(proc)


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1500, "height": 1100})
    pg = ctx.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    yield pg
    ctx.close()


def _idle(page) -> None:
    """Wait until Streamlit has finished the current rerun (a click during a rerun can be lost).
    Looked at twice: under load a rerun can start after the first look (session 42: the Plan
    editor's Regenerate click was lost twice in a full CI run, never alone)."""
    for pause in (300, 700):
        page.wait_for_timeout(pause)
        page.locator("[data-testid='stStatusWidget']").wait_for(state="hidden")


def _generate(page, url: str) -> None:
    page.goto(url)
    page.get_by_role("button", name="Generate").click()
    page.locator(".segviz-text").nth(1).wait_for()


def test_playground_generate_and_click_heatmap(page, server):
    _generate(page, server)
    expect(page.locator(".segviz-text")).to_have_count(2)
    assert page.locator(".segviz-text .seg").count() >= 2
    assert "records=" in page.url and "constraints=rm" in page.url
    chart = page.locator("[data-testid='stVegaLiteChart']").first
    chart.scroll_into_view_if_needed()
    chart.locator("canvas, svg").first.wait_for()
    box = chart.bounding_box()
    # the heatmap fills the chart below a 14 px record strip: click well inside it
    page.mouse.click(box["x"] + box["width"] * 0.35, box["y"] + box["height"] * 0.3)
    page.get_by_text("Selected: output token").first.wait_for()
    assert page.locator(".segviz-text span[data-t][style*='outline']").count() == 1  # the token, not a segment


def _own_plan(tiny, records) -> list[int]:
    from segviz.checkpoint import load

    return service.plan_overview("e2e", records, load(tiny / "e2e-seg"), 5).plan


def test_plan_editor_reorder_and_regenerate(page, server, tiny):
    records = EXAMPLES["e2e"]["The Golden Lantern (4 slots)"]
    own = _own_plan(tiny, records)
    _generate(page, server)
    page.get_by_role("link", name="Plan editor").click()  # same session: the Playground's records
    page.get_by_text("The model's own plan").first.wait_for()  # the order starts from the model's own plan
    _idle(page)
    page.get_by_text("Move with ↑/↓ buttons (keyboard)", exact=True).click()  # beside the drag list, the buttons are folded away
    page.get_by_text(f"1. record {own[0]}: {records[own[0] - 1].label}").wait_for()
    _idle(page)  # the page may still be rerunning: a click now can be lost (a CI run timed out here)
    page.get_by_role("button", name="↓").first.click()
    moved = [own[1], own[0], *own[2:]]
    page.get_by_text(f"1. record {moved[0]}: {records[moved[0] - 1].label}").wait_for()
    _idle(page)
    page.get_by_role("button", name="Regenerate with this plan").click()
    page.get_by_text(f"plan {' → '.join(map(str, moved))} (forced)").first.wait_for()
    expect(page.locator(".segviz-text")).to_have_count(2)  # previous and new output (waits for the rerun)
    page.locator(".segviz-diff").wait_for()  # the word diff of new against previous
    plan = ",".join(map(str, moved))
    assert f"plan={plan.replace(',', '%2C')}" in page.url or f"plan={plan}" in page.url


def test_webnlg_and_its_output_survive_a_visit_to_the_plan_editor(page, server):
    """Streamlit drops a widget's state on another page, and a page link drops the URL's
    parameters: going to the Plan editor and back used to reset the dataset to E2E and lose the
    WebNLG output. The session keeps the dataset now."""
    records = next(iter(EXAMPLES["webnlg"].values()))
    page.goto(server)
    page.get_by_text("WebNLG (DBpedia triples)").click()
    _idle(page)
    page.get_by_role("button", name="Generate").click()
    page.locator(".segviz-text").nth(1).wait_for()
    page.get_by_role("link", name="Plan editor").click()
    page.get_by_text("Move with ↑/↓ buttons (keyboard)", exact=True).click()  # the order as text
    page.get_by_text(records[0].label, exact=False).first.wait_for()
    _idle(page)
    page.wait_for_url(re.compile(r"dataset=webnlg"))  # Streamlit writes the URL after the page has drawn
    page.get_by_role("link", name="Playground").click()
    page.locator(".segviz-text").nth(1).wait_for()  # the WebNLG output is still there
    _idle(page)
    page.wait_for_url(re.compile(r"dataset=webnlg"))


def test_playground_name_posterior_view_and_segment_click(page, server):
    _generate(page, server)
    nav = page.locator("[data-testid='stSidebarNav']")
    expect(nav.get_by_role("link", name="Playground")).to_be_visible()
    assert page.get_by_role("button", name="Deploy").count() == 0  # client.toolbarMode = minimal
    # a selected row of the per-segment verdict table frames its segment in the text
    table = page.locator("[data-testid='stDataFrame']").nth(2)  # records editor, status table, seg's verdicts
    table.scroll_into_view_if_needed()
    table.locator("canvas").first.wait_for()
    box = table.bounding_box()
    page.mouse.click(box["x"] + 12, box["y"] + 35 + 17)  # the row marker of the first row
    page.locator(".segviz-text .seg[data-picked]").first.wait_for()
    assert page.locator(".segviz-text .seg[data-picked]").count() == 1
    assert page.locator(".segviz-text .seg").first.get_attribute("title").startswith(("record 1:", "null"))
    # the posterior view: one heatmap per system instead of the attention heatmaps
    page.get_by_text("Posterior over segmentations").first.click()
    page.get_by_text("each row sums to 1").first.wait_for()
    expect(page.get_by_text("Viterbi:")).to_have_count(2)
    assert "view=posterior" in page.url


def test_status_row_click_marks_its_record(page, server):
    """A click on a row of the per-record status table (a canvas grid: no AppTest can click it)
    underlines that record's segments in both texts."""
    _generate(page, server)
    table = page.locator("[data-testid='stDataFrame']").nth(1)  # records editor, then the status table
    table.scroll_into_view_if_needed()
    table.locator("canvas").first.wait_for()
    box = table.bounding_box()
    page.mouse.click(box["x"] + 12, box["y"] + 35 + 17)  # the row marker of the first row: record 1
    page.get_by_text("Selected row:").first.wait_for()
    expect(page.get_by_text("Selected row:")).to_have_count(2)
    underlined = page.locator(".segviz-text .seg[style*='border-bottom']")
    assert underlined.count() >= 1
    assert all(underlined.nth(i).get_attribute("data-record") == "1" for i in range(underlined.count()))


def test_deep_link_to_plan_editor(page, server):
    records = EXAMPLES["e2e"]["Mill Street Diner (3 slots)"]
    query = urlencode({"dataset": "e2e", "records": service.records_to_param(records), "plan": "3,2,1"})
    page.goto(f"{server}/Plan_editor?{query}")
    page.get_by_text("Move with ↑/↓ buttons (keyboard)", exact=True).click()  # the order as text (the drag list is a frame of its own)
    page.get_by_text("1. record 3: priceRange[cheap]").wait_for()
    _idle(page)
    page.get_by_role("button", name="Regenerate with this plan").click()
    page.get_by_text("plan 3 → 2 → 1 (forced)").first.wait_for()
    page.get_by_text("the model's own plan").first.wait_for()


def _shoot(page, name: str, folder: Path) -> None:
    """Screenshot into ``folder``; into docs/screenshots too with SEGVIZ_UPDATE_SCREENSHOTS=1
    (``bash scripts/screenshots.sh``), never as a side effect of the test suite."""
    page.wait_for_timeout(1500)  # let charts finish drawing
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
    if os.environ.get("SEGVIZ_UPDATE_SCREENSHOTS"):
        SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(folder / f"{name}.png", SHOTS / f"{name}.png")


def test_screenshots(browser, tiny, tmp_path):
    """One screenshot per page, with the trained checkpoints when they exist."""
    real = ROOT / "checkpoints"
    use_real = all(service.checkpoint_stamp(real / f"e2e-{k}") for k in ("seg", "pg"))
    proc, url = _serve(real if use_real else tiny, None if use_real else tmp_path, tmp_path / "shots.log")
    # Streamlit scrolls inside its own container, so a full-page shot needs a tall viewport
    ctx = browser.new_context(viewport={"width": 1500, "height": 2600})
    page = ctx.new_page()
    page.set_default_timeout(300_000)
    try:
        records = EXAMPLES["e2e"]["Blue Heron Café (6 slots)"]
        query = urlencode({"dataset": "e2e", "records": service.records_to_param(records), "constraints": "rm", "beam": "5"})
        page.goto(f"{url}/?{query}")
        page.locator(".segviz-text").nth(1).wait_for()
        _shoot(page, "playground", tmp_path)
        page.goto(f"{url}/Plan_editor?{query}&plan=6,1,2,3,4,5")
        page.get_by_role("button", name="Regenerate with this plan").wait_for()
        _idle(page)  # the page's first run must end first, or the click is lost under load (a CI run timed out here)
        page.get_by_role("button", name="Regenerate with this plan").click()
        page.get_by_text("plan 6 → 1 → 2 → 3 → 4 → 5 (forced)").first.wait_for()
        _idle(page)
        page.get_by_role("button", name="Sample structures").click()
        page.locator("text=/^plan \\d/").first.wait_for()
        _shoot(page, "plan_editor", tmp_path)
        page.goto(f"{url}/Hallucination_inspector?dataset=e2e")
        page.get_by_label("Number of inputs").fill("3")
        page.get_by_label("Number of inputs").press("Enter")
        _idle(page)  # the rerun the new number started must end first, or the click is lost under load
        page.get_by_role("button", name="Run both models").click()
        page.get_by_text("Open case").first.wait_for()
        page.get_by_text("Full attention").first.click()  # show one heatmap in the screenshot
        page.locator("[data-testid='stExpander'] [data-testid='stVegaLiteChart']").first.wait_for(timeout=60_000)
        _shoot(page, "hallucination_inspector", tmp_path)
        page.goto(f"{url}/Results?dataset=e2e")
        page.get_by_text("Training").first.wait_for()
        _shoot(page, "results", tmp_path)
    finally:
        ctx.close()
        _stop(proc)
    assert {p.name for p in tmp_path.glob("*.png")} >= {"playground.png", "plan_editor.png", "results.png"}
