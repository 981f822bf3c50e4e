"""Annotate workflow (segviz.annotate.workflow): building a campaign from tiny checkpoints and uploads; the annotator's view."""

from __future__ import annotations

import html
from pathlib import Path

import pytest
import torch

import segviz
import segviz.decode
from segviz import checkpoint, faithfulness, service, viz
from segviz.annotate import AnnotationError, Input, Output, Store, create_campaign, editor
from segviz.annotate import workflow as sv
from segviz.annotate.workflow import SystemSpec
from segviz.data import EOS_ID, EOSEG_ID, Vocab
from segviz.model import ModelConfig, build_model
from segviz.records import Record, format_e2e_mr, tokenize

ATTRS = ["name", "eatType", "food", "area", "near"]
WORDS = ["the", "is", "a", "in", "with", ".", ",", "pub", "it"]


def tiny_inputs(counts: dict[int, int]) -> list[Input]:
    """``counts[K]`` E2E inputs with K records; id = MR string."""
    inputs = []
    for K, n in counts.items():
        for i in range(n):
            records = [Record("name", f"Eagle {K}{i}"), *[Record(a, f"pub{i}") for a in ATTRS[1:K]]]
            inputs.append(Input(format_e2e_mr(records), records))
    return inputs


def tiny_checkpoints(root: Path, inputs: list[Input], dataset: str = "e2e") -> Path:
    """Random-initialised seg and PG checkpoints ``<dataset>-seg`` / ``<dataset>-pg`` in ``root``.

    Output biases are raised towards ``<eos>`` / end-of-segment so random models stop early
    (a decode then takes a fraction of a second instead of running to the length limit)."""
    vocab = Vocab(sorted({t for i in inputs for r in i.records for t in r.tokens} | set(WORDS)))
    torch.manual_seed(0)
    for kind in ("seg", "pg"):
        model = build_model(ModelConfig(kind=kind, vocab_size=len(vocab), emb_dim=8, hidden=16, max_seg_len=4))
        with torch.no_grad():
            if kind == "seg":
                model.out_d.bias[EOS_ID] += 6
                model.out_d.bias[EOSEG_ID] += 6
            else:
                model.out.bias[EOS_ID] += 1.8
        checkpoint.save(root / f"{dataset}-{kind}", model, vocab, dataset)
    return root


def tsv(inputs: list[Input], text: str = "{name} is a pub.") -> bytes:
    return "".join(f"{i.input_id}\t{text.format(name=i.records[0].value)}\n" for i in inputs).encode()


@pytest.fixture
def store(tmp_path: Path):
    s = Store(f"sqlite:///{tmp_path / 'ann.sqlite'}")
    yield s
    s.dispose()


@pytest.fixture(scope="module")
def inputs() -> list[Input]:
    return tiny_inputs({2: 3, 3: 3})


@pytest.fixture(scope="module")
def ckpts(tmp_path_factory, inputs) -> Path:
    return tiny_checkpoints(tmp_path_factory.mktemp("ckpt"), inputs)


@pytest.fixture
def decode_calls(monkeypatch) -> list[str]:
    """Records every decode (seg or PG) that build_campaign makes."""
    calls: list[str] = []
    for fn in ("generate_seg", "generate_pg"):
        real = getattr(segviz.decode, fn)

        def spy(model, vocab, records, *args, _real=real, _fn=fn, **kw):
            calls.append(f"{_fn}:{format_e2e_mr(records)}")
            return _real(model, vocab, records, *args, **kw)

        monkeypatch.setattr(segviz.decode, fn, spy)
    return calls


def test_system_titles_name_the_paper_s_systems_and_uploads() -> None:
    """Annotate's system picker and results table show these, not the stored ids."""
    assert sv.system_title("e2e-seg:rm") == "e2e-seg · ours (+RM)"
    assert sv.system_title("e2e-seg:none") == "e2e-seg · ours"
    assert sv.system_title("webnlg-pg") == "webnlg-pg"
    assert sv.system_title("upload:ref.tsv") == "ref.tsv (uploaded)"
    assert sv.system_title("mine:odd") == "mine:odd"  # neither form: as stored


def test_build_campaign(store: Store, inputs: list[Input], ckpts: Path, decode_calls: list[str]) -> None:
    reports: list[tuple[float, str]] = []
    c = sv.build_campaign(store, "c", "e2e", "dev", [SystemSpec("e2e-seg", "r"), SystemSpec("e2e-pg")],
                          {"ref.tsv": tsv(inputs)}, per_k=1, checkpoints_dir=ckpts,
                          progress=lambda f, m: reports.append((f, m)), inputs=inputs)
    items = store.items("c")
    systems = ["e2e-seg:r", "e2e-pg", "upload:ref.tsv"]
    # the paper's rule first: 1 of 3 inputs per K here, then one decode per sampled input and system
    chosen = sorted({it["input_id"] for it in items})
    assert sorted(len(i.records) for i in inputs if i.input_id in chosen) == [2, 3]
    assert sorted(decode_calls) == sorted([f"generate_seg:{i}" for i in chosen] + [f"generate_pg:{i}" for i in chosen])
    assert len(items) == 2 * 3 and [it["system"] for it in items[:3]] == systems
    cfg = c["config"]
    assert cfg["systems"] == systems and cfg["prefill"] is True
    assert cfg["sampling"]["counts"] == {"2": 1, "3": 1} and cfg["sampling"]["available"] == {"2": 3, "3": 3}
    assert cfg["sampling"]["pool"] == 6 and cfg["sampling"]["per_k"] == 1
    assert cfg["generation"] == {"beam": 5, "systems": ["e2e-seg:r", "e2e-pg"], "uploads": ["ref.tsv"],
                                 "aligner": "e2e-seg"}
    for it in items:  # blinding: every system's items carry an alignment covering its tokens
        seg = it["segments"]
        assert seg is not None and bool(seg["segments"]) == bool(seg["tokens"]), it["system"]
        assert [s for s, _, _ in seg["segments"][1:]] == [e for _, e, _ in seg["segments"][:-1]]
        assert not seg["tokens"] or (seg["segments"][0][0], seg["segments"][-1][1]) == (0, len(seg["tokens"]))
        assert all(r is None or 0 <= r < it["K"] for _, _, r in seg["segments"])
        records = [Record.from_json(r) for r in it["records"]]
        verdicts = faithfulness.check("e2e", records, it["output"]).per_record
        expected = {str(v.index): {f: f == v.status for f in ("wrong", "repeated", "missing")}
                    for v in verdicts if v.status != "realised"}
        assert it["auto"] == expected  # the checker's verdicts, stored apart from human flags
    upload = [it for it in items if it["system"] == "upload:ref.tsv"]
    assert upload[0]["output"] == f"{upload[0]['records'][0]['value']} is a pub."
    assert upload[0]["segments"]["tokens"] == tokenize(upload[0]["output"])
    seg_item = items[0]
    assert seg_item["output"] and seg_item["segments"]["tokens"]
    for it in (it for it in items if not it["system"].startswith("upload:")):  # our texts as the Playground shows them
        records = [Record.from_json(r) for r in it["records"]]
        assert it["output"] == viz.display_text(it["segments"]["tokens"], records)
        assert tokenize(it["output"]) == it["segments"]["tokens"]
    fractions = [f for f, _ in reports]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and "2 inputs x 3 systems" in reports[-1][1]


@pytest.mark.parametrize(("content", "message"), [
    (b"", "the file is empty"),
    (b"name[Eagle 20], eatType[pub0]\tok\textra\n", "3 columns"),
    (b"name[Nowhere], eatType[pub]\tThe text.\n", "not in this split"),
    (b"one line\ntwo lines\n", "has 2 lines but the split has 6 inputs"),
])
def test_bad_upload_stores_nothing(store: Store, inputs: list[Input], ckpts: Path, decode_calls: list[str],
                                   content: bytes, message: str) -> None:
    with pytest.raises(AnnotationError, match=message) as exc:
        sv.build_campaign(store, "c", "e2e", "dev", [SystemSpec("e2e-seg", "none")], {"bad.tsv": content},
                          checkpoints_dir=ckpts, inputs=inputs)
    assert str(exc.value).startswith("bad.tsv: ")
    assert store.campaigns() == [] and decode_calls == []  # rejected before any model ran


def test_build_errors(store: Store, inputs: list[Input], ckpts: Path, tmp_path: Path) -> None:
    def build(name: str = "x", systems=None, **kw):
        systems = [SystemSpec("e2e-pg")] if systems is None else systems
        return sv.build_campaign(store, name, "e2e", "dev", systems, kw.pop("uploads", {}),
                                 checkpoints_dir=kw.pop("checkpoints_dir", ckpts), inputs=inputs, **kw)

    with pytest.raises(AnnotationError, match="at least one system"):
        build(systems=())
    with pytest.raises(AnnotationError, match="name is empty"):
        build(name=" ")
    with pytest.raises(AnnotationError, match="'nope' cannot be loaded"):
        build(systems=[SystemSpec("nope")])
    with pytest.raises(AnnotationError, match="is a seg model; give a constraint level"):
        build(systems=[SystemSpec("e2e-seg")])
    with pytest.raises(AnnotationError, match="PG takes no constraints"):
        build(systems=[SystemSpec("e2e-pg", "rm")])
    with pytest.raises(AnnotationError, match="trained on webnlg, not e2e"):
        build(systems=[SystemSpec("webnlg-pg")], checkpoints_dir=tiny_checkpoints(tmp_path, inputs, "webnlg"))
    assert store.campaigns() == []
    store.add_campaign("taken", "e2e", "dev", {}, [])
    with pytest.raises(AnnotationError, match="already exists"):
        build(name="taken")


def test_without_aligner_no_system_keeps_segments(store: Store, inputs: list[Input], ckpts: Path,
                                                  tmp_path: Path) -> None:
    only_pg = tmp_path / "only-pg"
    only_pg.mkdir()
    (only_pg / "e2e-pg").symlink_to(ckpts / "e2e-pg", target_is_directory=True)
    c = sv.build_campaign(store, "c", "e2e", "dev", [SystemSpec("e2e-pg")], {"u.tsv": tsv(inputs)}, per_k=1,
                          checkpoints_dir=only_pg, inputs=inputs)
    assert c["config"]["generation"]["aligner"] is None
    assert [it["segments"] for it in store.items("c")] == [None] * 4  # 2 inputs x (PG, upload)


def test_an_upload_covering_part_of_the_split_is_said(store: Store, inputs: list[Input], ckpts: Path) -> None:
    """The sample is drawn from the inputs every uploaded file covers, and the page says so."""
    c = sv.build_campaign(store, "part", "e2e", "dev", [], {"u.tsv": tsv(inputs[:4])}, per_k=5, inputs=inputs,
                          checkpoints_dir=ckpts)
    assert len(store.items("part")) == 4
    assert sv.sampling_note(c["config"]) == ("The uploaded files cover 4 of the split's 6 inputs: "
                                             "this campaign's inputs were drawn from those only.")
    whole = sv.build_campaign(store, "whole", "e2e", "dev", [], {"u.tsv": tsv(inputs)}, per_k=1, inputs=inputs,
                              checkpoints_dir=ckpts)
    assert sv.sampling_note(whole["config"]) is None


def test_available_systems_and_spec_names(ckpts: Path, tmp_path: Path, monkeypatch) -> None:
    assert sv.available_systems("e2e", ckpts) == [SystemSpec("e2e-pg"), SystemSpec("e2e-seg", "none"),
                                                  SystemSpec("e2e-seg", "r"), SystemSpec("e2e-seg", "rm")]
    assert sv.available_systems("webnlg", ckpts) == []
    assert sv.available_systems("e2e", tmp_path / "missing") == []
    monkeypatch.setenv("SEGVIZ_CHECKPOINTS", str(ckpts))
    assert sv.default_checkpoints_dir() == ckpts and len(sv.available_systems("e2e")) == 4
    # unset: the repository's checkpoints/ wherever the app was started (as the Playground finds them)
    monkeypatch.delenv("SEGVIZ_CHECKPOINTS")
    monkeypatch.chdir(tmp_path)
    assert sv.default_checkpoints_dir() == service.checkpoint_root() == Path(segviz.__file__).parent.parent / "checkpoints"
    for spec in sv.available_systems("e2e", ckpts):
        assert SystemSpec.parse(spec.name) == spec
    with pytest.raises(AnnotationError, match="unknown constraint level"):
        SystemSpec.parse("e2e-seg:xx")


def test_load_inputs_unique_mrs(tmp_path: Path) -> None:
    (tmp_path / "e2e").mkdir()
    (tmp_path / "e2e" / "dev.csv").write_text(
        'mr,ref\n"name[A], food[Thai]",A serves Thai.\n"name[A], food[Thai]",Thai at A.\nname[B],B.\n')
    got = sv.load_inputs("e2e", "dev", tmp_path)
    assert [i.input_id for i in got] == ["name[A], food[Thai]", "name[B]"]
    assert got[0].records == [Record("name", "A"), Record("food", "Thai")]


# ---------------------------------------------------------------------------------------------
# The annotator's view (hand-made campaign; no models)

RECORDS = [Record("name", "The <b>Eagle</b>"), Record("eatType", "pub"), Record("area", "riverside")]


@pytest.fixture
def hand(store: Store) -> Store:
    inputs = [Input(f"in{i}", RECORDS) for i in range(3)]
    text = "The <b>Eagle</b> is a pub."
    tokens = tokenize(text)  # the < b > eagle < / b > is a pub .
    segs = {"tokens": tokens, "segments": [[0, 9, 0], [9, 12, 1], [12, 13, None]]}
    create_campaign(store, "h", "e2e", "dev", {"s": [Output(i.input_id, text, segs) for i in inputs]}, inputs,
                    auto_check=lambda records, out: {2: "missing"}, prefill=True)
    return store


def test_view_resume_and_save(hand: Store) -> None:
    v = sv.annotator_view(hand, "h", "alice")
    assert (v.position, v.done, v.total, v.finished) == (0, 0, 3, False)
    first = v.item
    assert "system" not in first and first["prefill"] == {"2": {"wrong": False, "repeated": False, "missing": True}}
    assert sv.shown_flags(first)[2] == {"wrong": False, "repeated": False, "missing": True}
    sv.save_change(hand, first, "alice", comment="hm")  # first save records the pre-fill as shown
    a = hand.annotation(first["item_id"], "alice")
    assert a["prefilled"] == first["prefill"] and a["flags"] == first["prefill"] and a["fluency"] is None
    sv.save_change(hand, first, "alice", flags={})  # the annotator unticks: prefilled stays
    a = hand.annotation(first["item_id"], "alice")
    assert a["flags"] == {} and a["prefilled"] == first["prefill"] and a["comment"] == "hm"
    assert sv.shown_flags(sv.annotator_view(hand, "h", "alice", 0).item)[2]["missing"] is False
    sv.save_change(hand, first, "alice", skipped=True)
    sv.save_change(hand, first, "alice", fluency=4)  # rating clears the skip
    assert hand.annotation(first["item_id"], "alice")["skipped"] is False
    second = sv.annotator_view(hand, "h", "alice").item
    assert second["position"] == 1  # resume at the first item not done
    sv.save_change(hand, second, "alice", skipped=True)
    v = sv.annotator_view(hand, "h", "alice")
    assert (v.position, v.done) == (2, 2)
    sv.save_change(hand, v.item, "alice", fluency=5)
    v = sv.annotator_view(hand, "h", "alice")
    assert v.finished and v.position == 2 and sv.annotator_view(hand, "h", "alice", 99).position == 2
    assert sv.annotator_view(hand, "h", "bob").done == 0  # another annotator starts afresh


def test_segments_html_escapes_and_keeps_text(hand: Store) -> None:
    item = sv.annotator_view(hand, "h", "alice").item
    out = sv.segments_html(item)
    assert "<b>" not in out and "&lt;b&gt;Eagle&lt;/b&gt;" in out
    assert out.count("<span") == 3 and viz.record_colour(1) in out and viz.record_colour(2) in out
    assert out.count(f'background:{viz.NULL_COLOUR}') == 1  # the full stop: null record, as in the Playground
    assert 'title="name&#91;The &lt;b&gt;Eagle&lt;/b&gt;&#93;"' in out
    assert "<b>" not in sv.records_html(item) and "3. area[riverside]" in html.unescape(sv.records_html(item))
    no_seg = dict(item, segments=None)
    assert sv.segments_html(no_seg) == '<div class="segviz-text">The &lt;b&gt;Eagle&lt;/b&gt; is a pub.</div>'
    # Markdown and LaTeX in model output or labels are shown literally, escaped once
    markup = "It's $x^2$ **bold** `code`"
    marked = dict(item, text=markup, segments=None, labels=[markup] * 3)
    for block in (sv.segments_html(marked), sv.records_html(marked)):
        assert markup in html.unescape(block) and not set(block) & set("*$`")


def test_segment_pieces_are_the_text() -> None:
    """Segments are cut from the output text itself (the annotator judges the real text)."""
    records = [Record("name", "The Eagle"), Record("area", "riverside")]
    text = "The Eagle is in the riverside area."  # detokenize would write "in The riverside"
    segments = [[0, 2, 0], [2, 5, None], [5, 7, 1], [7, 8, None]]
    pieces = editor._pieces(text, tokenize(text), segments, records)
    assert pieces == [("The Eagle", 0), (" is in the", None), (" riverside area", 1), (".", None)]
    assert "".join(p for p, _ in pieces) == text
    item = {"text": text, "segments": {"tokens": tokenize(text), "segments": segments}, "annotation": None,
            "records": [r.to_json() for r in records], "labels": [r.label for r in records], "K": 2}
    null = viz.segment_span("is in the", None, title="no record")
    assert sv.segments_html(item).count(f" {null}") == 1
    # tokens that do not match the text (e.g. an edited output): fall back to detokenised tokens
    assert [p for p, _ in editor._pieces("Something else.", tokenize(text), segments, records)][0] == "The Eagle"


def test_alignment_correction(hand: Store) -> None:
    item = sv.annotator_view(hand, "h", "alice").item
    rows = sv.alignment_rows(item)
    assert rows == [{"segment": "The <b>Eagle</b>", "record": "name[The <b>Eagle</b>]"},
                    {"segment": "is a pub", "record": "eatType[pub]"},
                    {"segment": ".", "record": "(none)"}]
    assert sv.record_options(item) == ["(none)", "name[The <b>Eagle</b>]", "eatType[pub]", "area[riverside]"]
    fixed = sv.apply_alignment_edits(item, {"1": {"record": "area[riverside]"}, 2: {"record": "(none)"}})
    assert sv.alignment_edits(item, {"1": {"record": "area[riverside]"}, 2: {"record": "(none)"}}) == [(1, 2), (2, None)]
    one = sv.save_change(hand, item, "bob", segment=(0, None))  # the page saves one segment per edit
    assert one["corrected_alignment"]["segments"] == [[0, 9, None], [9, 12, 1], [12, 13, None]]
    assert fixed["segments"] == [[0, 9, 0], [9, 12, 2], [12, 13, None]]
    sv.save_change(hand, item, "alice", corrected_alignment=fixed)
    again = sv.annotator_view(hand, "h", "alice", 0).item
    assert [r["record"] for r in sv.alignment_rows(again)][1] == "area[riverside]"  # shows the correction
    assert item["segments"]["segments"][1][2] == 1  # the item's own alignment is untouched
    with pytest.raises(AnnotationError, match="unknown record"):
        sv.apply_alignment_edits(item, {0: {"record": "food[Thai]"}})
    with pytest.raises(AnnotationError, match="no alignment"):
        sv.apply_alignment_edits(dict(item, segments=None, annotation=None), {})


def test_save_one_box_and_stale_view(hand: Store) -> None:
    """A box click changes that box only; a view older than the store is reported and can be refreshed."""
    stale = sv.annotator_view(hand, "h", "alice").item  # seen before anything was saved
    assert sv.version_of(stale) == 0
    first = sv.save_change(hand, stale, "alice", flag=(0, "wrong", True), seen_version=0)
    prefill = stale["prefill"]
    assert first["conflict"] is False and first["prefilled"] == prefill  # the pre-fill as shown
    assert first["flags"] == {"0": {"wrong": True, "repeated": False, "missing": False}, **prefill}
    other = sv.save_change(hand, stale, "alice", flag=(2, "missing", False), seen_version=0)  # another tab
    assert other["conflict"] is True and other["flags"] == {"0": {"wrong": True, "repeated": False, "missing": False}}
    fresh = sv.annotator_view(hand, "h", "alice", 0).item
    assert sv.version_of(fresh) == other["version"] == 2
    values = sv.widget_values(fresh)
    iid = fresh["item_id"]
    ticked = {key for key, v in values.items() if key.startswith("ann_flag_") and v}
    assert ticked == {f"ann_flag_{iid}_0_wrong"}
    assert (values[f"ann_flu_{iid}"], values[f"ann_extra_{iid}"], values[f"ann_comment_{iid}"]) == (None, 0, "")
    assert len(values) == 3 + 3 * fresh["K"]


def test_settings_come_from_the_core() -> None:
    """One of each: constraint levels and beam are the decoder's, colours and segments the Playground's."""
    assert sv.CONSTRAINT_LEVELS == segviz.decode.CONSTRAINTS and sv.BEAM == 5
    assert not hasattr(editor, "PALETTE") and editor.record_colour is viz.record_colour
    assert sv.segments_html is editor.segments_html  # re-exported where the page finds it
