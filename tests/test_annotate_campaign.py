"""Campaigns: the paper's sampling rule, blinding, per-annotator shuffles, resume, uploads."""

from __future__ import annotations

import json
from pathlib import Path

import annotate_backends
import pytest

from segviz.annotate import (
    AnnotationError,
    Input,
    Output,
    Store,
    create_campaign,
    items_for,
    next_item,
    parse_uploaded_outputs,
    progress,
    sample_inputs,
)
from segviz.records import Record, format_e2e_mr

ATTRS = ["name", "eatType", "food", "priceRange", "customer rating", "area", "familyFriendly", "near"]
SYSTEMS = ["e2e-seg:rm", "e2e-pg"]


def make_inputs(counts: dict[int, int]) -> list[Input]:
    """``counts[K]`` E2E inputs with K records each; the input id is the MR string."""
    inputs = []
    for K, n in counts.items():
        for i in range(n):
            records = [Record("name", f"Place {K}-{i}")] + [Record(a, f"value{K}{i}") for a in ATTRS[1:K]]
            inputs.append(Input(format_e2e_mr(records), records))
    return inputs


def outputs(inputs: list[Input], system: str) -> list[Output]:
    return [Output(i.input_id, f"{system} says {i.records[0].value}.") for i in inputs]


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
def inputs() -> list[Input]:
    return make_inputs({3: 25, 4: 20, 5: 7, 8: 1})


def test_sampling_rule_20_per_k(store: Store, inputs: list[Input]) -> None:
    c = create_campaign(store, "c", "e2e", "dev", {s: outputs(inputs, s) for s in SYSTEMS}, inputs)
    items = store.items("c")
    per_k: dict[int, set[str]] = {}
    for it in items:
        per_k.setdefault(it["K"], set()).add(it["input_id"])
    assert {K: len(ids) for K, ids in per_k.items()} == {3: 20, 4: 20, 5: 7, 8: 1}
    assert len(items) == 48 * len(SYSTEMS)
    assert {it["system"] for it in items} == set(SYSTEMS)
    sampling = c["config"]["sampling"]
    assert sampling["counts"] == {"3": 20, "4": 20, "5": 7, "8": 1}
    assert sampling["available"] == {"3": 25, "4": 20, "5": 7, "8": 1}
    assert sampling["per_k"] == 20 and sampling["seed"] == 0
    assert c["config"]["systems"] == SYSTEMS


def test_sampling_is_seeded(inputs: list[Input]) -> None:
    ids = [i.input_id for i in sample_inputs(inputs, 20, seed=0)]
    assert ids == [i.input_id for i in sample_inputs(list(reversed(inputs)), 20, seed=0)]
    assert ids != [i.input_id for i in sample_inputs(inputs, 20, seed=1)]
    assert len(sample_inputs(inputs, None)) == len(inputs)


def test_only_inputs_covered_by_every_system(store: Store, inputs: list[Input]) -> None:
    partial = outputs(inputs, "b")[:10]
    create_campaign(store, "c", "e2e", "dev", {"a": outputs(inputs, "a"), "b": partial}, inputs)
    assert {it["input_id"] for it in store.items("c")} == {o.input_id for o in partial}
    with pytest.raises(AnnotationError, match="two outputs"):
        create_campaign(store, "d", "e2e", "dev", {"a": partial + partial[:1]}, inputs)


def test_duplicate_campaign_name(store: Store, inputs: list[Input]) -> None:
    create_campaign(store, "c", "e2e", "dev", {"a": outputs(inputs, "a")}, inputs)
    with pytest.raises(AnnotationError, match="already exists"):
        create_campaign(store, "c", "e2e", "dev", {"a": outputs(inputs, "a")}, inputs)
    assert len(store.campaigns()) == 1
    assert len(store.items("c")) == 48


def test_blinding(store: Store, inputs: list[Input]) -> None:
    create_campaign(store, "c", "e2e", "dev", {s: outputs(inputs, s) for s in SYSTEMS}, inputs,
                    auto_check=lambda records, text: {0: {"wrong": True}})
    views = items_for(store, "c", "alice")
    assert len(views) == 96
    for v in views:
        assert "system" not in v and "auto" not in v and v["prefill"] is None
    # the system names appear nowhere in what annotators get (the fake outputs do not name them)
    blob = json.dumps([{k: v for k, v in view.items() if k != "text"} for view in views])
    assert not any(s in blob for s in SYSTEMS)
    assert set(next_item(store, "c", "alice")) == set(views[0])
    # the checker's verdicts are stored apart from annotations, and shown only with prefill=True
    assert all(it["auto"] == {"0": {"wrong": True, "repeated": False, "missing": False}} for it in store.items("c"))
    create_campaign(store, "p", "e2e", "dev", {"a": outputs(inputs, "a")}, inputs, prefill=True,
                    auto_check=lambda records, text: ["missing"] + ["ok"] * (len(records) - 1))
    assert items_for(store, "p", "bob")[0]["prefill"] == {"0": {"wrong": False, "repeated": False, "missing": True}}


def test_shuffle_per_annotator(store: Store, inputs: list[Input], tmp_path: Path) -> None:
    create_campaign(store, "c", "e2e", "dev", {s: outputs(inputs, s) for s in SYSTEMS}, inputs)
    order = [v["item_id"] for v in items_for(store, "c", "alice")]
    assert order == [v["item_id"] for v in items_for(store, "c", "alice")]
    with Store(store.url) as again:  # another process / a restart: same order
        assert order == [v["item_id"] for v in items_for(again, "c", "alice")]
    other = [v["item_id"] for v in items_for(store, "c", "bob")]
    assert sorted(order) == sorted(other) and order != other
    assert order != sorted(order)
    assert [v["position"] for v in items_for(store, "c", "bob")] == list(range(len(order)))


def test_resume_and_progress(store: Store, inputs: list[Input]) -> None:
    create_campaign(store, "c", "e2e", "dev", {"a": outputs(inputs, "a")}, inputs)
    views = items_for(store, "c", "alice")
    assert progress(store, "c", "alice") == (0, 48)
    store.save_annotation(views[0]["item_id"], "alice", fluency=5)
    store.save_annotation(views[1]["item_id"], "alice", skipped=True)
    store.save_annotation(views[2]["item_id"], "alice", fluency=2, flags={0: {"missing": True}})
    store.save_annotation(views[3]["item_id"], "alice", comment="half done")  # partial: no fluency yet
    assert progress(store, "c", "alice") == (3, 48)
    nxt = next_item(store, "c", "alice")
    assert nxt["item_id"] == views[3]["item_id"] and nxt["annotation"]["comment"] == "half done"
    assert next_item(store, "c", "bob")["item_id"] == items_for(store, "c", "bob")[0]["item_id"]
    for v in views:
        store.save_annotation(v["item_id"], "alice", fluency=4)
    assert next_item(store, "c", "alice") is None and progress(store, "c", "alice") == (48, 48)
    with pytest.raises(AnnotationError, match="not allowed"):
        items_for(store, "c", "al ice")


# --- uploads ----------------------------------------------------------------------------------

def test_upload_tsv_with_bom_crlf_quotes_header(inputs: list[Input]) -> None:
    a, b = inputs[0], inputs[30]
    shuffled_mr = ", ".join(f"{r.attribute}[{r.value}]" for r in reversed(b.records))  # slot order differs
    text = f'\ufeffmr\toutput\r\n"{a.input_id}"\t"It is ""great""."\r\n{shuffled_mr}\tSecond one.\r\n\r\n'
    outs = parse_uploaded_outputs(text.encode("utf-8"), "e2e", inputs)
    assert outs == [Output(a.input_id, 'It is "great".'), Output(b.input_id, "Second one.")]
    # no header works too
    assert parse_uploaded_outputs(f"{a.input_id}\tx\n", "e2e", inputs) == [Output(a.input_id, "x")]


def test_upload_one_line_per_input(inputs: list[Input]) -> None:
    text = "\n".join(f"out {n}" for n in range(len(inputs))) + "\n"
    outs = parse_uploaded_outputs(text, "webnlg", inputs)
    assert [o.input_id for o in outs] == [i.input_id for i in inputs] and outs[5].text == "out 5"


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("\n  \n", "empty"),
    ("mr\toutput\n", "no outputs"),
    ("name[Place 3-0]\tx\ty\n", "3 columns"),
    ("name[Nowhere], food[Thai]\tx\nname[Elsewhere]\ty\n", r"2 MR\(s\) are not in this split.*Nowhere"),
    ("name[Nowhere\tx\n", "cannot read the MR"),
    ("one line\ntwo lines\n", "2 lines but the split has 53 inputs"),
])
def test_upload_errors_store_nothing(store: Store, inputs: list[Input], text: str, message: str) -> None:
    with pytest.raises(AnnotationError, match=message):
        outs = parse_uploaded_outputs(text, "e2e", inputs)
        create_campaign(store, "upload", "e2e", "dev", {"upload:f.tsv": outs}, inputs)
    assert store.campaigns() == []


def test_upload_errors_name_the_line_of_the_file(inputs: list[Input]) -> None:
    """Lines are counted as in the file (header and blank lines too), like the inspector's."""
    a = inputs[0].input_id
    text = f"mr\toutput\n\n{a}\tfine\nname[Nowhere\tx\n"
    with pytest.raises(AnnotationError, match=r"^line 4: cannot read the MR"):
        parse_uploaded_outputs(text, "e2e", inputs)
    with pytest.raises(AnnotationError, match=r"^line 3: the MR .* appears twice"):
        parse_uploaded_outputs(f"{a}\tx\n\n{a}\ty\n", "e2e", inputs)
    with pytest.raises(AnnotationError, match=r"^line 2 has 3 columns"):
        parse_uploaded_outputs(f"mr\toutput\n{a}\tx\ty\n", "e2e", inputs)


def test_upload_other_errors(inputs: list[Input]) -> None:
    with pytest.raises(AnnotationError, match="not UTF-8"):
        parse_uploaded_outputs(b"\xff\xfe\x00bad", "e2e", inputs)
    with pytest.raises(AnnotationError, match="only read for E2E"):
        parse_uploaded_outputs("a\tb\n", "webnlg", inputs)
    dup = f"{inputs[0].input_id}\tx\n{inputs[0].input_id}\ty\n"
    with pytest.raises(AnnotationError, match="appears twice"):
        parse_uploaded_outputs(dup, "e2e", inputs)


def test_uploaded_system_in_campaign(store: Store, inputs: list[Input]) -> None:
    tsv = "".join(f"{i.input_id}\tUploaded {n}.\n" for n, i in enumerate(inputs))
    outs = parse_uploaded_outputs(tsv, "e2e", inputs)
    c = create_campaign(store, "u", "e2e", "dev", {"e2e-pg": outputs(inputs, "pg"), "upload:f.tsv": outs}, inputs)
    assert c["config"]["systems"] == ["e2e-pg", "upload:f.tsv"]
    assert sum(it["system"] == "upload:f.tsv" for it in store.items("u")) == 48
