"""segviz.latency's summary and report (the browser run itself is `python -m segviz.bench --app-latency`)."""

from __future__ import annotations

from segviz import latency


def test_summary_medians_maxima_and_targets():
    rows = [{"Generate": g, "Posterior view": p, "Page switch": s} for g, p, s in [(0.5, 0.9, 2.0), (0.7, 1.2, 0.3), (1.4, 0.8, 0.4)]]
    summary = latency.summarise(rows)
    assert summary["Generate"] == {"median_s": 0.7, "max_s": 1.4, "target_s": 1.0, "met": True}
    assert summary["Posterior view"]["median_s"] == 0.9 and summary["Posterior view"]["met"]
    assert summary["Page switch"] == {"median_s": 0.4, "max_s": 2.0, "target_s": 1.5, "met": True}
    slow = latency.summarise([{**r, "Generate": 1.1} for r in rows])
    assert not slow["Generate"]["met"]
    text = latency.format_report({"inputs": 3, "cpus": 2, "load_average": [1.0, 2.0], "summary": slow})
    assert "Generate           1.10 s   1.10 s  < 1.0 s  MISSED" in text and "load average 1.0 before, 2.0 after" in text


def test_idle_predicate_waits_for_the_status_widget_and_the_marker():
    js = latency.idle_js("document.querySelectorAll('.segviz-text').length == 2")
    assert js.startswith("() => {") and "stStatusWidget" in js and "(document.querySelectorAll('.segviz-text').length == 2)" in js
