"""segviz.viz: escaping, segment HTML, attention frames and charts (no Streamlit, no models)."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from segviz import viz
from segviz.records import Record
from segviz.result import GenerationResult


def _result(tokens, segments, source=("name", "x", "food", "y")) -> GenerationResult:
    rec_of = [1, 1, 2, 2][: len(source)]
    T, N = len(tokens), len(source)
    attention = [[(t + i + 1) / (T * N * 2) for i in range(N)] for t in range(T)]
    return GenerationResult(
        system="seg", records=[(1, "name[X]", ["name", "x"]), (2, "food[Y]", ["food", "y"])], tokens=list(tokens),
        text=" ".join(tokens), segments=segments, attention=attention, source_tokens=list(source),
        record_of_source_token=rec_of,
    )


@pytest.mark.parametrize(
    ("raw", "must_not", "must"),
    [
        ("<script>alert(1)</script>", "<script>", "&lt;script&gt;"),
        ("costs $5 or $6", "$", "&#36;5"),
        ("**bold** _it_ `code` [l](u)", "*", "&#42;&#42;bold"),
    ],
)
def test_esc(raw, must_not, must):
    out = viz.esc(raw)
    assert must_not not in out and must in out


@pytest.mark.parametrize("raw", ["It's", "aren't", "Baku_Turkish_Martyrs'_Memorial", 'say "hi" & go', "#1 &#x27;"])
def test_esc_escapes_exactly_once(raw):
    out = viz.esc(raw)
    assert html.unescape(out) == raw  # what the browser shows is what was typed (was "It&#x27;s")


def test_esc_apostrophe():
    assert viz.esc("It's") == "It&#39;s"


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=40))
def test_esc_round_trips_and_leaves_no_markup(raw):
    out = viz.esc(raw)
    assert html.unescape(out) == raw
    assert not set(out) & set("<>\"'$*_`[]\\~|{}")


def test_segments_html_colours_every_segment():
    res = _result(["x", "serves", "y", "<b>", "."], [(0, 1, 1), (1, 2, None), (2, 4, 2), (4, 5, None)])
    out = viz.segments_html(res, [Record("name", "X"), Record("food", "Y")], highlight_token=2, highlight_record=2)
    segs = re.findall(r'class="seg" data-record="(\d+)"[^>]*? style="background:(#\w+)', out)
    assert segs == [("1", viz.PALETTE[0]), ("0", viz.NULL_COLOUR), ("2", viz.PALETTE[1]), ("0", viz.NULL_COLOUR)]
    assert ">1 name&#91;X&#93;</sub>" in out and ">null</sub>" in out  # record names as text too
    assert "&lt;b&gt;" in out and "<b>" not in out
    assert 'data-t="2" style="outline:2px solid #000' in out  # highlighted token
    assert out.count("border-bottom:3px") == 1  # highlighted record's segment
    assert '<span data-t="0" style="">X</span>' in out  # casing restored, capitalised


def test_segments_html_without_alignment_and_empty():
    assert "(empty output)" in viz.segments_html(_result([], []))
    out = viz.segments_html(_result(["a", "b"], []))
    assert 'class="seg"' not in out and ">A</span> <span" in out


def test_display_tokens_spacing():
    shown = viz.display_tokens(["it", "costs", "£", "20", ".", "good", "-", "value"])
    text = "".join((" " if sp else "") + w for w, sp in shown)
    assert text == "It costs £20. Good-value"


def test_display_tokens_case_a_function_word_only_inside_a_whole_value():
    """"The Eagle" and "Tea In The Park" keep their case; "in the city centre" elsewhere stays
    lower-case (it read "It is In The city centre": a function word took the case of any value
    word that followed it)."""
    from segviz.records import parse_e2e_mr

    records = parse_e2e_mr("name[Tea In The Park], near[The Eagle], area[city centre]")
    tokens = "tea in the park is near the eagle . it is in the city centre and by the park .".split()
    text = "".join((" " if sp else "") + w for w, sp in viz.display_tokens(tokens, records))
    assert text == "Tea In The Park is near The Eagle. It is in the city centre and by the Park."
    assert viz.display_text(tokens, records) == text


def test_display_tokens_case_a_word_with_an_apostrophe():
    """"Saint Mary's Church" was shown "Saint mary's Church": the casing read "Mary" and "s" as
    two words, the tokens hold "mary's" as one."""
    from segviz.records import parse_e2e_mr, tokenize

    records = parse_e2e_mr("name[The Golden Lotus], near[Saint Mary's Church]")
    tokens = tokenize("the golden lotus is a pub . saint mary's church is near .")
    assert viz.display_text(tokens, records) == "The Golden Lotus is a pub. Saint Mary's Church is near."


def test_display_text_cases_a_value_s_words_where_the_text_leaves_out_its_dots():
    """What Annotate stores for our systems: the Playground's casing, not the whole-value-only
    casing of the decoder's text ("b m reddy" for "B._M._Reddy")."""
    from segviz.records import detokenize, parse_webnlg_triples

    records = parse_webnlg_triples(["Ayam_penyet | country | B._M._Reddy"])
    tokens = "the country of ayam penyet is b m reddy .".split()
    assert detokenize(tokens, records) == "The country of Ayam penyet is b m reddy."
    assert viz.display_text(tokens, records) == "The country of Ayam penyet is B M Reddy."


def test_segment_tags_of_a_triple_name_its_relation():
    """A WebNLG segment's tag leaves the subject (often the same for every record) to the hover
    and shows the predicate and object; cut whole, it read "1 Acharya_Institute_of_Techno…"."""
    res = _result(["it", "is", "in", "bangalore"], [(0, 2, None), (2, 4, 1)])
    res.records = [(1, "Acharya_Institute_of_Technology | city | Bangalore", ["bangalore"])]
    out = viz.segments_html(res)
    assert "1 city | Bangalore" in html.unescape(out)
    assert "record 1: Acharya_Institute_of_Technology | city | Bangalore" in html.unescape(out)


def test_legend_lists_records_and_null():
    out = viz.legend_html(_result(["x"], [(0, 1, 1)]), highlight_record=1)
    assert out.count('data-record="') == 3 and "null (no record)" in out and "2px solid #000" in out
    assert "segviz-stale" not in out and "grayscale" in viz.legend_html(_result(["x"], [(0, 1, 1)]), stale=True)


def test_a_long_record_label_wraps_inside_its_chip():
    """A 105-character WebNLG object without spaces ran the legend past its column and the page
    scrolled sideways (a new user's trial); each chip is at most the column wide and breaks anywhere."""
    res = _result(["x"], [(0, 1, 1)])
    res.records = [(1, "Zorblat_Tower | location | " + "Terminal_Four_" * 8, ["zorblat"])]
    chip = viz.legend_html(res).split("</span>")[0]
    assert "max-width:100%" in chip and "overflow-wrap:anywhere" in chip and "Terminal_Four_" * 8 in html.unescape(chip)


def test_attention_frame_and_chart():
    res = _result(["x", "serves", "y"], [(0, 1, 1), (1, 3, 2)])
    df = viz.attention_frame(res)
    assert len(df) == 3 * 4 and set(df["record"]) == {1, 2}
    assert df.loc[(df.t == 2) & (df.i == 3), "weight"].item() == pytest.approx(res.attention[2][3])
    spec = viz.attention_chart(res, vmax=0.5).to_dict()
    heat = spec["vconcat"][1]
    params = spec.get("params", []) + heat.get("params", [])  # Altair lifts params of concatenated views
    assert heat["mark"]["type"] == "rect" and [p["name"] for p in params] == ["cell"]
    assert heat["encoding"]["color"]["scale"]["domain"][::2] == [0, 0.5]  # shared scale 0..vmax
    assert heat["encoding"]["stroke"]["condition"]["empty"] is False  # no frame until a click
    assert viz.max_attention([res, None]) == pytest.approx(max(max(r) for r in res.attention))
    assert viz.max_attention([None]) == 1.0
    bar = viz.attention_bar(res, 1).to_dict()
    assert bar["encoding"]["x"]["field"] == "i"
    assert bar["mark"]["type"] == "bar"


def test_a_long_value_is_not_copied_into_every_heatmap_cell():
    """Session 41: every cell of the heatmap carried its record's whole label, so a 300-word value
    took gigabytes; the label is cut to ``RECORD_LABEL_CHARS``, the same in the cells and the colour scale."""
    from segviz import charts

    res = _result(["x", "serves", "y"], [(0, 1, 1), (1, 3, 2)])
    res.records = [(1, "name[" + "w " * 300 + "]", ["w"]), (2, "food[Thai]", ["thai"])]
    df = charts.attention_frame(res)
    assert df["record_label"].str.len().max() == charts.RECORD_LABEL_CHARS
    assert set(df["record_label"]) == {charts._record_label(1, res.records[0][1]), "2 food[Thai]"}
    assert charts._record_scale(res).to_dict()["domain"] == sorted(set(df["record_label"]))


def test_curves_frame_and_charts():
    hist = {"e2e-seg": [{"epoch": 1, "train_nll": 2.0, "val_nll": 2.5, "val_exp_seg": 3.0, "val_K": 5.0}],
            "e2e-pg": [{"epoch": 1, "train_nll": 1.5, "val_exp_seg": float("nan")}]}  # fmt: skip
    df = viz.curves_frame(hist)
    assert len(df) == 5 and "nan" not in str(df["value"].tolist())
    loss = viz.loss_chart(df, {"e2e-seg": 1}).to_dict()
    assert loss["layer"][0]["mark"]["type"] == "line" and loss["layer"][1]["mark"]["shape"] == "diamond"
    spec = viz.segments_chart(df, {"e2e-seg": 1}).to_dict()
    assert spec["facet"]["field"] == "checkpoint"  # one panel per checkpoint
    lines, rule = spec["spec"]["layer"]
    assert lines["encoding"]["color"]["field"] == "quantity" and rule["mark"]["type"] == "rule"
    rows = spec["datasets"][spec["data"]["name"]]
    assert {r["checkpoint"] for r in rows} == {"e2e-seg"} and all(r["shipped"] == 1 for r in rows)


def test_posterior_chart_and_word_diff():
    from segviz.posterior import TextPosterior

    post = TextPosterior(["x", "serves", "y"], ["null", "name[X]", "food[Y]"],
                         [[0.1, 0.9, 0.0], [0.8, 0.1, 0.1], [0.0, 0.2, 0.8]], [1.0, 0.7, 0.6],
                         [(0, 1, 1), (1, 2, None), (2, 3, 2)], -3.0)  # fmt: skip
    df = viz.posterior_frame(post, [Record("name", "X")])
    assert len(df) == 9 and df.groupby("t")["p"].sum().round(9).tolist() == [1.0, 1.0, 1.0]
    assert df[df["viterbi"]][["t", "j"]].values.tolist() == [[0, 1], [1, 0], [2, 2]]
    assert df["token"].iloc[0] == "0 X"  # record casing restored
    spec = viz.posterior_chart(post, "ours").to_dict()
    strip, body = spec["vconcat"]
    heat, bars = body["hconcat"]
    assert [lay["mark"]["type"] for lay in heat["layer"]] == ["rect", "rect"] and bars["mark"]["type"] == "bar"
    assert heat["layer"][1]["mark"]["filled"] is False  # the Viterbi frames
    x_axis = heat["layer"][0]["encoding"]["x"]["axis"]
    assert x_axis["labelOverlap"] is False and "name[X]" in x_axis["labelExpr"]  # every record labelled
    diff = viz.word_diff_html(["the", "<b>", "pub", "."], ["the", "pub", "near", "x", "."])
    assert "<del" in diff and "&lt;b&gt;" in diff and "<b>" not in diff and '600">near x</ins>' in diff
    assert viz.word_diff_html(["a"], ["a"]).count("<ins") == 0


def test_segment_hover_verdict_and_cased_tokens():
    from segviz.faithfulness import segment_verdicts

    records = [Record("name", "The Eagle"), Record("eatType", "pub")]
    tokens = ["the", "eagle", "is", "a", "pub", "$"]
    segments = [(0, 2, 1), (2, 4, None), (4, 6, 2)]
    res = _result(tokens, segments)
    res.records = [(1, records[0].label, ["the", "eagle"]), (2, records[1].label, ["pub"])]
    vs = segment_verdicts("e2e", records, tokens, segments)
    out = viz.segments_html(res, records, verdicts=vs, cased=["The", "EAGLE", "is", "a", "pub", "$"], highlight_span=(2, 4))
    assert ">EAGLE<" in out and "&#36;" in out
    titles = [html.unescape(t) for t in re.findall(r'title="([^"]*)"', out)]
    assert titles[0].startswith("record 1: name[The Eagle] · ") and titles[1].startswith("null (no record)")
    assert out.count("outline:3px solid #d62728") == 1 and "segviz-stale" not in out
    assert "segviz-stale" in viz.segments_html(res, records, stale=True)


def test_attention_chart_of_a_long_input_past_altair_s_row_guard():
    """A 60-word value gives a heatmap of over 20,000 cells; Altair's default guard (5,000 rows)
    raised MaxRowsError and the Playground showed a traceback instead of the chart."""
    n_src, n_out = 270, 80
    res = _result([f"o{t % 5}" for t in range(n_out)], [], source=[f"w{i}" for i in range(n_src)])
    res.record_of_source_token = [1 + 2 * i // n_src for i in range(n_src)]
    spec = viz.attention_chart(res, title="ours").to_dict()
    heat = spec["vconcat"][1]
    assert len(spec["datasets"][heat["data"]["name"]]) == n_out * n_src


@pytest.mark.parametrize("n_src", [4, 30, 60])
def test_attention_chart_one_band_per_source_token(n_src):
    """The heatmap has one x band per source token, in input order, and one y band per output
    token, each labelled; its size follows the token counts (the bug: every source token fell
    into one x position and the chart collapsed to a thin column)."""
    source = [f"w{i % 7}" for i in range(n_src)]  # repeated tokens must still get their own band
    res = _result([f"o{t % 5}" for t in range(25)], [], source=source)
    res.record_of_source_token = [1 + 2 * i // n_src for i in range(n_src)]
    spec = viz.attention_chart(res, title="ours").to_dict()
    heat = spec["vconcat"][1]
    rows = spec["datasets"][heat["data"]["name"]]
    assert len(rows) == 25 * n_src
    x, y = heat["encoding"]["x"], heat["encoding"]["y"]
    assert (x["field"], x["type"], y["field"], y["type"]) == ("i", "ordinal", "t", "ordinal")
    assert x["sort"] == x["scale"]["domain"] == list(range(n_src))
    assert y["sort"] == y["scale"]["domain"] == list(range(25))
    assert sorted({r["i"] for r in rows}) == list(range(n_src))  # one x position per source token
    assert {(r["t"], r["i"]) for r in rows} == {(t, i) for t in range(25) for i in range(n_src)}
    assert "w0 r1" in x["axis"]["labelExpr"] and "o0" in y["axis"]["labelExpr"]
    assert isinstance(heat["width"], int) and isinstance(heat["height"], int)
    assert heat["width"] >= 6 * n_src and heat["height"] >= 12 * 25  # sized by token counts
    assert heat["width"] <= max(16 * n_src, 400)  # fits half of a wide layout
    strip = spec["vconcat"][0]
    assert strip["width"] == heat["width"] and strip["title"]["text"] == "ours"  # record strip aligned
    assert strip["layer"][0]["encoding"]["x"]["scale"]["domain"] == list(range(n_src))


def test_drawing_does_not_import_torch():
    """GenerationResult lives in the torch-free segviz.result; segviz.decode re-exports it."""
    code = "import sys, segviz.viz, segviz.result; assert 'torch' not in sys.modules, 'viz imports torch'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parent.parent)
    from segviz import decode

    assert decode.GenerationResult is GenerationResult


def test_a_lone_combining_mark_is_labelled_on_a_dotted_circle():
    """Session 43 (a new user's trial): lower-casing splits "İ" into "i" and a combining dot, and
    the heatmap's labels showed the dot alone, on nothing ("7 ̇"). It is shown on a dotted circle,
    in the labels of both axes; other tokens are labelled as before."""
    from segviz.charts import piece

    assert piece("\u0307") == "\u25cc\u0307" and piece("zmir") == "zmir" and piece("") == ""
    res = _result(["in", "i", "\u0307", "zmir"], [], source=("name", "i", "\u0307", "zmir"))
    spec = viz.attention_chart(res).to_dict()
    x, y = spec["vconcat"][1]["encoding"]["x"], spec["vconcat"][1]["encoding"]["y"]
    assert "\u25cc\u0307 r2" in x["axis"]["labelExpr"] and "2 \u25cc\u0307" in y["axis"]["labelExpr"]
    assert "0 in" in y["axis"]["labelExpr"] and "name r1" in x["axis"]["labelExpr"]
