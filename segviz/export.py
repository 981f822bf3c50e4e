"""Figures for papers: any chart of the app (an Altair chart or its Vega-Lite spec) as SVG or PNG.

Rendered by ``vl-convert`` (Vega in a bundled JavaScript engine, no browser), with Vega's
default light theme, whatever the app's theme. The case itself (records, texts, segments,
verdicts) is exported as JSON by :func:`segviz.service.case_json`.
"""

from __future__ import annotations

import re

import vl_convert

FORMATS = {"svg": "image/svg+xml", "png": "image/png"}
PNG_SCALE = 2  # pixels per CSS pixel: sharp in print at the chart's own size


def spec_of(chart) -> dict:
    """The Vega-Lite spec of an Altair chart (unvalidated: the figures are fixed code) or a spec."""
    return chart if isinstance(chart, dict) else chart.to_dict(validate=False)


def figure_svg(chart) -> str:
    """The chart as a standalone SVG document (fonts as text, so words stay searchable)."""
    return vl_convert.vegalite_to_svg(spec_of(chart))


def figure_png(chart, scale: float = PNG_SCALE) -> bytes:
    """The chart as a PNG image at ``scale`` pixels per CSS pixel, on a white background."""
    spec = {**spec_of(chart), "background": "white"}
    return vl_convert.vegalite_to_png(spec, scale=scale)


def figure(chart, fmt: str) -> str | bytes:
    """:func:`figure_svg` or :func:`figure_png` by ``fmt`` (a key of :data:`FORMATS`)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown figure format {fmt!r}; one of {', '.join(FORMATS)}")
    return figure_svg(chart) if fmt == "svg" else figure_png(chart)


def file_name(*parts: object, fmt: str = "svg") -> str:
    """``segviz-<parts>.<fmt>``, with every run of characters other than letters, digits, ``-``
    and ``_`` replaced by one ``-`` (a safe file name from a system label or a case key)."""
    stem = "-".join(re.sub(r"[^A-Za-z0-9_-]+", "-", str(p)).strip("-") for p in ("segviz", *parts) if str(p).strip())
    return f"{stem}.{fmt}"
