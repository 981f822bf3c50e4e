"""Figure export (segviz.export, the "Figure (SVG)" / "Figure (PNG)" buttons) on tiny checkpoints."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from segviz import export, service, viz
from segviz.checkpoint import load
from segviz.examples import EXAMPLES

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
RECORDS = EXAMPLES["e2e"]["The Golden Lantern (4 slots)"]


@pytest.fixture(scope="module")
def cmp(tiny):
    return service.compare("e2e", RECORDS, load(tiny / "e2e-seg"), load(tiny / "e2e-pg"), "rm", 5)


def _labels(at: AppTest) -> list[str]:
    return [b.proto.label for b in at.get("download_button")]


def test_attention_figure_as_svg_names_every_token(cmp):
    res = cmp.seg.result
    svg = export.figure_svg(viz.attention_chart(res, 1.0, "ours"))
    assert svg.lstrip().startswith("<svg") and svg.rstrip().endswith("</svg>")
    labels = set(re.findall(r"<text[^>]*>([^<]*)</text>", svg))
    assert f"0 {res.tokens[0]}" in labels  # the first output token's axis label
    assert "ours" in labels and "attention" in labels  # title and legend


def test_posterior_figure_as_png_has_the_charts_size_at_scale_2(cmp, tiny):
    post = service.text_posterior(RECORDS, cmp.pg.result.tokens, load(tiny / "e2e-seg"))
    spec = viz.posterior_chart(post, "PG", RECORDS).to_dict(validate=False)
    png = export.figure_png(spec)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    svg = export.figure_svg(spec)
    svg_w, svg_h = (float(x) for x in re.search(r'<svg[^>]*width="([\d.]+)"[^>]*height="([\d.]+)"', svg).groups())
    assert (width, height) == (round(2 * svg_w), round(2 * svg_h))
    assert height > 12 * len(post.tokens)  # one row per token at least 12 px (scale 2 doubles it)


def test_file_name_is_safe_and_unknown_format_is_refused():
    assert export.file_name("attention", "Pointer-generator (PG)", fmt="png") == "segviz-attention-Pointer-generator-PG.png"
    assert export.file_name("posterior", "ours / +RM", "") == "segviz-posterior-ours-RM.svg"
    with pytest.raises(ValueError, match="unknown figure format"):
        export.figure({}, "pdf")


def test_playground_offers_svg_and_png_of_each_chart(env):
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.button(key="playground_generate").click().run()
    assert not at.exception
    # attention: one heatmap per system, each with its two buttons, then the case
    assert _labels(at) == ["Figure (SVG)", "Figure (PNG)"] * 2 + ["Export this case (JSON)"]
    at.radio(key="playground_view").set_value("posterior").run()
    assert not at.exception
    assert _labels(at) == ["Figure (SVG)", "Figure (PNG)"] * 2 + ["Export this case (JSON)"]
    names = [b.proto.help for b in at.get("download_button")][:2]
    assert names == ["This chart as SVG, for a paper or slides.", "This chart as PNG, for a paper or slides."]


def test_results_offers_the_training_figures(env):
    at = AppTest.from_file(str(ROOT / "pages" / "3_Results.py"), default_timeout=60)
    at.run()
    assert not at.exception
    assert _labels(at)[:2] == ["Figure (SVG)", "Figure (PNG)"] and len(_labels(at)) == 4  # loss and E[#segments]
