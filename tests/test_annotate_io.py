"""Results table, agreement (hand-computed cases) and CSV / JSONL export-import round trips."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import annotate_backends
import pandas as pd
import pytest

from segviz.annotate import (
    AnnotationError,
    Store,
    agreement,
    auto_rows,
    cohen_kappa,
    export_csv,
    export_jsonl,
    import_csv,
    import_file,
    import_jsonl,
    items_for,
    krippendorff_alpha,
    majority_count,
    results_table,
)

REC = [{"attribute": "name", "value": "The Eagle"}, {"attribute": "food", "value": "Café, \"Thai\""}]


def _item(input_id: str, system: str, K: int = 2, **extra) -> dict:
    return {"input_id": input_id, "records": REC[:K], "K": K, "system": system, "output": f"{system}: {input_id}",
            **extra}


# the store runs on SQLite and on PostgreSQL (see annotate_backends)
db_url = annotate_backends.db_url
postgres_url = annotate_backends.postgres_url
postgres_admin = annotate_backends.postgres_admin


@pytest.fixture
def store(db_url: str):
    s = Store(db_url)
    yield s
    s.dispose()


@pytest.fixture
def fresh(tmp_path: Path):
    """An empty SQLite store to import into (exports from PostgreSQL come back into SQLite)."""
    s = Store(f"sqlite:///{tmp_path / 'b.sqlite'}")
    yield s
    s.dispose()


def _hand_campaign(store: Store) -> list[int]:
    """Two systems, three annotators (see test_results_table for the sums)."""
    align = {"tokens": ["the", "eagle", "serves", "thai"], "segments": [[0, 2, 0], [2, 3, None], [3, 4, 1]]}
    store.add_campaign("hand", "e2e", "dev", {"systems": ["A", "B"], "sampling": {"per_k": 20}}, [
        _item("i1", "A", auto={0: {"wrong": True}}, segments=align),
        _item("i2", "A", auto={1: {"missing": True}}),
        _item("i3", "B", auto={}),
        _item("i4", "B", auto={0: {"repeated": True}}),
        _item("i5", "B"),  # nobody annotated it; no automatic verdicts either
    ])
    i1, i2, i3, i4, _ = (it["id"] for it in store.items("hand"))
    save = store.save_annotation
    save(i1, "x", fluency=5, flags={0: {"wrong": True}}, prefilled={0: {"wrong": True}})
    save(i1, "y", fluency=4, flags={0: {"wrong": True}}, comment='multi\nline, "quoted" ünïcode')
    save(i1, "z", fluency=3)
    save(i2, "x", fluency=4, flags={1: {"missing": True}}, extra_wrong=2)
    save(i2, "y", fluency=4, extra_wrong=1)  # missing is a 1-1 tie: not counted
    save(i3, "x", fluency=2, flags={0: {"repeated": True}, 1: {"missing": True}}, corrected_alignment=align)
    save(i3, "z", fluency=1, flags={0: {"wrong": True}}, skipped=True)  # skipped: left out
    save(i4, "y", flags={1: {"missing": True}})  # partial (no fluency): left out
    return [i1, i2, i3, i4]


def test_results_table(store: Store) -> None:
    _hand_campaign(store)
    expected = pd.DataFrame({"system": ["A", "B"], "items": [2, 1], "annotators": [3, 1], "fluent": [4.0, 2.0],
                             "wrong": [2, 0], "repeat": [0, 1], "miss": [0, 1]})
    got = results_table(store, "hand")
    pd.testing.assert_frame_equal(got, expected.astype(got.dtypes.to_dict()))
    assert list(got.columns) == ["system", "items", "annotators", "fluent", "wrong", "repeat", "miss"]
    assert majority_count([]) == 0 and majority_count([3, 0, 1]) == 1 and majority_count([2, 2]) == 2


def test_agreement_perfect(store: Store) -> None:
    store.add_campaign("p", "e2e", "dev", {"systems": ["A"]}, [_item(f"i{n}", "A", K=1) for n in range(4)])
    for annotator in ("a", "b", "c"):
        for n, it in enumerate(store.items("p")):
            store.save_annotation(it["id"], annotator, fluency=5 - n, flags={0: {"wrong": n % 2 == 0}})
    ag = agreement(store, "p")
    assert ag["alpha"]["fluency"] == pytest.approx(1.0) and ag["alpha"]["wrong"] == pytest.approx(1.0)
    assert math.isnan(ag["alpha"]["missing"])  # nobody ever flagged "missing": alpha undefined
    assert ag["annotators"] == 3 and ag["items_multi"] == 4 and ag["auto"] == {}


def test_agreement_hand_computed(store: Store) -> None:
    """Two annotators, four items with one record each; b did not finish the 4th item, so only
    the first three units are pairable.

    Fluency a=[1,2,2,3], b=[1,1,2,-]: coincidences o11=2, o12=o21=1, o22=2, n=6, n1=n2=3; with
    two adjacent ranks ordinal = nominal alpha = 1 - (n-1)(o12+o21) / (2 n1 n2) = 1 - 10/18 = 4/9.
    Wrong a=[1,1,0,0], b=[1,0,0,-]: the same coincidences, alpha = 4/9.
    Checker wrong=[1,1,0,0]; strict human majority [1,0,0,0] (item 2 is a 1-1 tie, item 4 has
    a's 0 only): accuracy 3/4, kappa: p_o=3/4, p_e=1/2*1/4+1/2*3/4=1/2, (3/4-1/2)/(1/2) = 1/2.
    Four pairable units a=[1,1,0,0], b=[1,0,0,0]: o00=4, o01=o10=1, o11=2, n=8, n0=5, n1=3,
    alpha = 1 - 7*2 / (2*5*3) = 8/15.
    """
    store.add_campaign("h", "e2e", "dev", {"systems": ["A"]},
                       [_item(f"i{n}", "A", K=1, auto={0: {"wrong": n < 2}}) for n in range(4)])
    ids = [it["id"] for it in store.items("h")]
    for n, (fa, fb, wa, wb) in enumerate([(1, 1, 1, 1), (2, 1, 1, 0), (2, 2, 0, 0), (3, None, 0, None)]):
        store.save_annotation(ids[n], "a", fluency=fa, flags={0: {"wrong": bool(wa)}})
        if fb is not None:
            store.save_annotation(ids[n], "b", fluency=fb, flags={0: {"wrong": bool(wb)}})
    ag = agreement(store, "h")
    assert ag["alpha"]["fluency"] == pytest.approx(4 / 9)
    assert ag["alpha"]["wrong"] == pytest.approx(4 / 9)
    assert ag["annotators"] == 2 and ag["items_multi"] == 3
    auto = ag["auto"]["wrong"]
    assert (auto["n"], auto["tp"], auto["fp"], auto["fn"], auto["tn"]) == (4, 1, 1, 0, 2)
    assert auto["accuracy"] == pytest.approx(3 / 4) and auto["kappa"] == pytest.approx(1 / 2)
    assert krippendorff_alpha([[1, 1, 0, 0], [1, 0, 0, 0]], "nominal") == pytest.approx(8 / 15)
    assert cohen_kappa([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(1 / 2)
    assert math.isnan(cohen_kappa([1, 1], [1, 1]))
    rows = {r["flag"]: r for r in auto_rows(ag)}  # session 41: an undefined kappa read "None" on the page
    assert rows["wrong"]["accuracy"] == "0.750" and rows["wrong"]["kappa"] == "0.500" and rows["wrong"]["tp"] == 1
    assert math.isnan(ag["auto"]["repeated"]["kappa"]) and rows["repeated"]["kappa"] == "n/a"


def _strip_ids(rows: list[dict], *keys: str) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in keys} for r in rows]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_export_import_round_trip(store: Store, fresh: Store, tmp_path: Path, fmt: str) -> None:
    _hand_campaign(store)
    path = tmp_path / f"hand.{fmt}"
    text = (export_csv if fmt == "csv" else export_jsonl)(store, "hand", path)
    assert path.read_text(encoding="utf-8") == text
    imported = import_file(fresh, path)
    assert imported["name"] == "hand"
    pd.testing.assert_frame_equal(results_table(fresh, "hand"), results_table(store, "hand"))
    a, b = store.campaign("hand"), fresh.campaign("hand")
    assert {k: v for k, v in a.items() if k != "id"} == {k: v for k, v in b.items() if k != "id"}
    assert _strip_ids(fresh.items("hand"), "id", "campaign_id") == _strip_ids(store.items("hand"), "id", "campaign_id")
    assert (_strip_ids(fresh.annotations("hand"), "id", "item_id")
            == _strip_ids(store.annotations("hand"), "id", "item_id"))
    assert json.dumps(agreement(fresh, "hand")) == json.dumps(agreement(store, "hand"))  # NaN-aware equality
    order = [(v["input_id"], v["text"]) for v in items_for(store, "hand", "x")]
    assert order == [(v["input_id"], v["text"]) for v in items_for(fresh, "hand", "x")]
    # exporting the import gives the same file, byte for byte (ids restart at 1 in both stores)
    assert (export_csv if fmt == "csv" else export_jsonl)(fresh, "hand") == text
    with pytest.raises(AnnotationError, match="already exists"):
        import_file(fresh, path)
    assert import_file(fresh, path, name="hand-copy")["name"] == "hand-copy"


def test_csv_keeps_human_and_auto_apart(store: Store) -> None:
    _hand_campaign(store)
    rows = pd.read_csv(io.StringIO(export_csv(store, "hand")), keep_default_na=False, dtype=str)
    assert len(rows) == 3 + 2 + 2 + 1 + 1  # per annotation: i1 x3, i2 x2, i3 x2, i4 x1 (partial); i5 alone
    assert rows[rows.input_id == "i5"].iloc[0].annotator == ""
    r = rows[(rows.input_id == "i2") & (rows.annotator == "x")].iloc[0]
    assert r.system == "A" and r.human_missing == "[1]" and r.auto_missing == "[1]" and r.human_wrong == "[]"
    assert r.extra_wrong == "2"


def _jsonl(store: Store) -> list[str]:
    _hand_campaign(store)
    return export_jsonl(store, "hand").splitlines()


def test_bad_jsonl_stores_nothing(store: Store, fresh: Store) -> None:
    lines = _jsonl(store)
    bad_json = "\n".join(lines[:2] + ["{not json"] + lines[3:])
    with pytest.raises(AnnotationError, match="line 3: not JSON"):
        import_jsonl(fresh, bad_json)
    # an invalid annotation in the *last* item: campaign and first items were already inserted
    # inside the transaction, and must be rolled back
    last = json.loads(lines[-1])
    last["annotations"] = [{"annotator": "x", "human": {"fluency": 9, "flags": {}, "extra_wrong": 0,
                                                         "comment": "", "corrected_alignment": None,
                                                         "skipped": False}}]
    with pytest.raises(AnnotationError, match="from 1 to 5"):
        import_jsonl(fresh, "\n".join(lines[:-1] + [json.dumps(last)]))
    no_head = "\n".join(lines[1:])
    with pytest.raises(AnnotationError, match="item before the campaign"):
        import_jsonl(fresh, no_head)
    bad_flag = json.loads(lines[1])
    bad_flag["auto"] = {"5": {"wrong": True}}
    with pytest.raises(AnnotationError, match="does not exist"):
        import_jsonl(fresh, "\n".join([lines[0], json.dumps(bad_flag)]))
    with pytest.raises(AnnotationError, match="empty"):
        import_file(fresh, b"")
    assert fresh.campaigns() == []


def test_bad_csv_stores_nothing(store: Store, fresh: Store) -> None:
    _hand_campaign(store)
    text = export_csv(store, "hand")
    with pytest.raises(AnnotationError, match="missing column"):
        import_csv(fresh, "a,b\n1,2\n")
    header = text.splitlines(keepends=True)[0]
    df = pd.read_csv(io.StringIO(text), keep_default_na=False, dtype=str)
    df.loc[df.index[df.annotator != ""][-1], "fluency"] = "great"
    with pytest.raises(AnnotationError, match="whole numbers"):
        import_csv(fresh, df.to_csv(index=False))
    df = pd.read_csv(io.StringIO(text), keep_default_na=False, dtype=str)
    df.loc[df.index[df.annotator != ""][-1], "annotator"] = "bad id!"
    with pytest.raises(AnnotationError, match="not allowed"):
        import_csv(fresh, df.to_csv(index=False))
    with pytest.raises(AnnotationError, match="no rows"):
        import_csv(fresh, header)
    assert fresh.campaigns() == []


def test_import_errors_name_the_line_of_the_file(store: Store, fresh: Store) -> None:
    _hand_campaign(store)
    df = pd.read_csv(io.StringIO(export_csv(store, "hand")), keep_default_na=False, dtype=str)
    df.loc[df.index[1], "human_flags"] = "{not json"
    text = df.to_csv(index=False)
    line = next(n for n, ln in enumerate(text.splitlines(), 1) if "{not json" in ln)  # quoted cells may span lines
    assert line >= 3
    with pytest.raises(AnnotationError, match=rf"^line {line}: column 'human_flags' is not valid JSON"):
        import_csv(fresh, text)



def test_long_and_odd_comments_come_back_from_either_export(store: Store, fresh: Store) -> None:
    """Session 25 (a new user's review): a comment pasted from a PDF holds U+2028, which
    ``str.splitlines`` took for a line end ("line 4: not JSON"), and a cell over csv's 131,072
    characters made the CSV import raise ``_csv.Error`` through the page."""
    _hand_campaign(store)
    i1 = store.items("hand")[0]["id"]
    odd = "pasted from a PDF\u2028second line\x85third\x0c" + "x" * 200_000
    store.save_annotation(i1, "x", fluency=5, comment=odd)
    for fmt, export in (("jsonl", export_jsonl), ("csv", export_csv)):
        import_file(fresh, export(store, "hand"), name=f"copy-{fmt}")
        assert {a["comment"] for a in fresh.annotations(f"copy-{fmt}")} >= {odd}


def test_import_reads_skipped_and_the_dataset_strictly(store: Store, fresh: Store) -> None:
    """``"skipped": "false"`` (a string) was stored as skipped, and a campaign of dataset
    "bogus" was imported."""
    lines = _jsonl(store)
    item = json.loads(lines[1])
    item["annotations"][0]["human"]["skipped"] = "false"
    with pytest.raises(AnnotationError, match="skipped must be true or false, got 'false'"):
        import_jsonl(fresh, "\n".join([lines[0], json.dumps(item)]))
    head = json.loads(lines[0])
    head["dataset"] = "bogus"
    with pytest.raises(AnnotationError, match="campaign dataset: unknown dataset 'bogus'"):
        import_jsonl(fresh, "\n".join([json.dumps(head), *lines[1:]]))
    with pytest.raises(AnnotationError, match="at most 200"):
        import_jsonl(fresh, "\n".join(lines), name="n" * 201)
    assert fresh.campaigns() == []


def test_a_csv_with_a_bare_carriage_return_or_a_huge_cell_is_an_error_not_a_traceback(fresh: Store) -> None:
    from segviz.annotate.campaign import Input, parse_uploaded_outputs
    from segviz.records import parse_e2e_mr

    inputs = [Input("name[X]", parse_e2e_mr("name[X]"))]
    with pytest.raises(AnnotationError, match=r"line 1: a cell is longer than"):
        parse_uploaded_outputs("name[X]\t\"" + "word " * 30_000 + "\"\n", "e2e", inputs)
    with pytest.raises(AnnotationError, match="line 2 is empty"):
        parse_uploaded_outputs("X is here.\n\nY\n", "e2e", [Input(f"i{n}", inputs[0].records) for n in range(3)])
    with pytest.raises(AnnotationError, match="line 1: the output text is empty"):
        parse_uploaded_outputs("name[X]\t\n", "e2e", inputs)
    with pytest.raises(AnnotationError, match="line 1: the output has 6,000 characters; at most 5,000"):
        parse_uploaded_outputs("x" * 6_000 + "\n", "e2e", inputs)
