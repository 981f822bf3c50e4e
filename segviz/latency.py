"""App latency in a real browser: what a user waits for after a click (issue 13's acceptance).

    python -m segviz.latency [--n 10] [--json runs/latency.json] [--checkpoints checkpoints] [--data-dir DIR]
    python -m segviz.bench --app-latency [...]          # the same

Starts ``streamlit run app.py`` on the shipped checkpoints and drives Debian's Chromium with
Playwright. For each of ``--n`` E2E dev inputs (every 50th distinct MR, so K varies), in one
browser session:

1. **Generate**: the Playground deep link with the input's records under "ours" (not timed), then
   +RM picked (not timed) and **Generate** clicked: both models, beam 5, alignment, verdicts;
   timed from the click until the new output is drawn and Streamlit is idle.
2. **Posterior view**: "Posterior over segmentations" clicked: the exact posterior of both
   texts (segment model's and PG's) drawn; timed to idle.
3. **Page switch**: a sidebar link clicked (Plan editor, Hallucination inspector, Results,
   Playground in turn, one per input) until the page's title is drawn and Streamlit is idle.

Idle means Streamlit's "running" status widget is gone. Medians and maxima are printed and
written as JSON; the timing is wall clock as the user sees it, so a busy machine inflates it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

from segviz.bench_harness import write_json

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
TARGETS = {"Generate": 1.0, "Posterior view": 1.0, "Page switch": 1.5}  # seconds, issue 13
PAGES = ["Plan editor", "Hallucination inspector", "Results", "Playground"]


def idle_js(marker: str) -> str:
    """A JS predicate: ``marker`` holds and Streamlit's "running" status widget is gone."""
    return ("() => { const w = document.querySelector(\"[data-testid='stStatusWidget']\"); "
            f"return !(w && w.offsetParent !== null) && ({marker}); }}")


def serve(checkpoints: Path, data_dir: Path | None, log: Path) -> tuple[subprocess.Popen, str]:
    """``streamlit run app.py`` on a free port; returns the process and its URL once healthy."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "SEGVIZ_CHECKPOINTS": str(checkpoints)}
    if data_dir is not None:
        env["SEGVIZ_DATA"] = str(data_dir)
    cmd = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
           "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise RuntimeError(f"streamlit did not start; see {log}")


def dev_inputs(n: int, data_dir: Path | None, stride: int = 50) -> list:
    """``n`` distinct E2E dev inputs, every ``stride``-th (records lists)."""
    from segviz.data import default_data_dir, load_split, unique_inputs

    exs = unique_inputs(load_split("e2e", "dev", data_dir or default_data_dir()))
    return [ex.records for ex in exs[::stride][:n]]


def timed(page, action, marker: str) -> float:
    """Seconds from ``action()`` (a click) until ``marker`` (a JS expression) holds and Streamlit is idle."""
    t0 = time.perf_counter()
    action()
    page.wait_for_timeout(50)  # let the click reach the server before testing for idle
    page.wait_for_function(idle_js(marker), polling=20)
    return time.perf_counter() - t0


def wait_idle(page, marker: str = "true") -> None:
    page.wait_for_timeout(300)
    page.wait_for_function(idle_js(marker), polling=50)


def measure_input(page, url: str, records, i: int) -> dict:
    """One input: Generate (+RM, beam 5), the posterior view, one page switch; seconds each."""
    from segviz import service

    query = urlencode({"dataset": "e2e", "records": service.records_to_param(records), "constraints": "none", "beam": "5"})
    page.goto(f"{url}/?{query}")
    page.locator(".segviz-text").nth(1).wait_for()
    wait_idle(page)
    page.get_by_text("ours (+RM)", exact=True).first.click()
    wait_idle(page, "document.querySelectorAll('.segviz-stale').length == 2")
    out = {"K": len(records)}
    out["Generate"] = timed(page, lambda: page.get_by_role("button", name="Generate").click(),
                            "document.querySelectorAll('.segviz-text').length == 2 && !document.querySelector('.segviz-stale')")
    radio = page.get_by_text("Posterior over segmentations", exact=True).first
    radio.scroll_into_view_if_needed()
    out["Posterior view"] = timed(page, radio.click,
                                  "(document.body.innerText.match(/Viterbi:/g) || []).length == 2")
    target = PAGES[i % len(PAGES)]
    if target == "Playground":  # switch away first (not timed), then back
        page.get_by_role("link", name="Results").click()
        wait_idle(page, "document.querySelector('h1') && document.querySelector('h1').innerText.includes('Results')")
    link = page.locator("[data-testid='stSidebarNav']").get_by_role("link", name=target)
    out["Page switch"] = timed(page, link.click, f"document.querySelector('h1') && document.querySelector('h1').innerText.includes({target!r})")
    out["page"] = target
    return out


def summarise(rows: list[dict]) -> dict:
    return {what: {"median_s": statistics.median(r[what] for r in rows), "max_s": max(r[what] for r in rows),
                   "target_s": limit, "met": statistics.median(r[what] for r in rows) < limit}
            for what, limit in TARGETS.items()}


def run(n: int, checkpoints: Path, data_dir: Path | None) -> dict:
    from playwright.sync_api import sync_playwright

    inputs = dev_inputs(n, data_dir)
    load = [round(os.getloadavg()[0], 1)]  # the 1-minute load average before and after: how quiet the machine was
    log = Path(tempfile.mkdtemp(prefix="segviz-latency-")) / "streamlit.log"
    proc, url = serve(checkpoints, data_dir, log)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"), args=ARGS)
            page = browser.new_context(viewport={"width": 1500, "height": 1100}).new_page()
            page.set_default_timeout(180_000)
            measure_input(page, url, inputs[0], 0)  # warm-up: models loaded, first compile; not counted
            rows = [measure_input(page, url, records, i) for i, records in enumerate(inputs)]
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)
    load.append(round(os.getloadavg()[0], 1))
    return {"inputs": len(rows), "beam": 5, "constraints": "rm", "cpus": os.cpu_count(), "load_average": load, "rows": rows,
            "summary": summarise(rows)}


def format_report(res: dict) -> str:
    lines = [f"App latency in Chromium, {res['inputs']} E2E dev inputs, both models, beam 5 (+RM), click to idle "
             f"({res['cpus']} CPUs, load average {res['load_average'][0]} before, {res['load_average'][1]} after):",
             "  what              median     max   target"]
    for what, s in res["summary"].items():
        ok = "ok" if s["met"] else "MISSED"
        lines.append(f"  {what:15s} {s['median_s']:7.2f} s {s['max_s']:6.2f} s  < {s['target_s']:.1f} s  {ok}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m segviz.latency", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=10, help="E2E dev inputs (default 10)")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--checkpoints", type=Path, default=ROOT / "checkpoints")
    p.add_argument("--data-dir", type=Path, default=None)
    args = p.parse_args(argv)
    res = run(args.n, args.checkpoints, args.data_dir)
    print(format_report(res))
    if args.json:
        write_json(args.json, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
