"""The datasets registry: the two shipped entries, and a toy third dataset added by one
``register`` call that then runs through the generation, evaluation and report CLIs."""

from __future__ import annotations

import csv
import json

import pytest
import torch

from segviz import checkpoint as ckpt
from segviz import datasets, formats, rows
from segviz.data import Example, Vocab, collate, encode, load_split
from segviz.evaluate import evaluate_outputs
from segviz.evaluate import main as evaluate_main
from segviz.faithfulness import FaithReport, RecordVerdict, check
from segviz.generate import generate_all, read_inputs
from segviz.generate import main as generate_main
from segviz.model import ModelConfig, build_model
from segviz.records import Record, RecordError, tokenize
from segviz.report import main as report_main

TRAIN = [
    ("colour: red; shape: ball", "a red ball ."),
    ("colour: blue; shape: cube", "a blue cube ."),
    ("colour: green; shape: ball; size: big", "a big green ball ."),
    ("colour: red; shape: cube; size: small", "a small red cube ."),
]
DEV = [("colour: blue; shape: ball", "a blue ball ."), ("colour: green; shape: cube", "a green cube ."),
       ("colour: green; shape: cube", "the cube is green ."), ("colour: red; shape: ball; size: small", "a small red ball .")]  # fmt: skip


# ----- the toy dataset: "key: value; key: value<TAB>reference" lines ---------------------------------


def parse_toy(text: str) -> list[Record]:
    parts = [p.split(":", 1) for p in text.split(";") if p.strip()]
    if not parts or any(len(p) != 2 for p in parts):
        raise RecordError(f"{text!r}: expected 'key: value; key: value'")
    return [Record(k.strip(), v.strip()) for k, v in parts]


def _pairs(path) -> list[tuple[str, str, int]]:
    with open(path, encoding="utf-8", newline="") as f:
        return [(r[0], r[1], n) for n, r in enumerate(csv.reader(f, delimiter="\t"), start=1)]


def load_toy(path) -> list[Example]:
    refs: dict[str, list[str]] = {}
    for key, ref, _ in _pairs(path):
        refs.setdefault(key, []).append(ref)
    return [Example(key, parse_toy(key), tokenize(ref), refs[key]) for key, ref, _ in _pairs(path)]


def read_toy(path) -> list[formats.Located]:
    first = {key: n for key, _, n in reversed(_pairs(path))}
    return [(key, parse_toy(key), f"{path}:{n}") for key, n in sorted(first.items(), key=lambda kv: kv[1])]


def evaluate_toy(refs_path, hyps_path, meteor=True) -> dict:
    examples = {ex.key: ex for ex in load_toy(refs_path)}
    hyps = open(hyps_path, encoding="utf-8").read().splitlines()
    inputs = [ex.records for ex in examples.values()]
    return evaluate_outputs("toy", inputs, [ex.refs for ex in examples.values()], hyps, meteor)


def check_toy(records: list[Record], text: str) -> FaithReport:
    words = tokenize(text)
    status = {0: "missing", 1: "realised"}
    return FaithReport([RecordVerdict(k, r.label, status.get(words.count(r.value), "repeated"))
                        for k, r in enumerate(records)])  # fmt: skip


TOY = datasets.Dataset(
    name="toy", title="Toy", label="Toy (key: value)", files="toy/{split}.tsv", loader=load_toy, parse=parse_toy,
    check=check_toy, value_mentions=lambda records, norm: [], read_inputs=read_toy, input_kind="toy TSV",
    write_outputs=formats.write_lines, output_suffix="txt", evaluate=evaluate_toy,
    substitute=lambda records, seed: records,
)  # fmt: skip


@pytest.fixture
def toy(tmp_path):
    """The toy dataset registered, its data written, and a segment model fitted on it for a few steps."""
    datasets.register(TOY)
    data = tmp_path / "data"
    (data / "toy").mkdir(parents=True)
    for split, pairs in (("train", TRAIN), ("dev", DEV)):
        (data / "toy" / f"{split}.tsv").write_text("".join(f"{k}\t{r}\n" for k, r in pairs), encoding="utf-8")
    train = load_split("toy", "train", data)
    vocab = Vocab(sorted({t for ex in train for t in ex.target + ex.src_tokens}))
    batch = collate([encode(vocab, ex.records, ex.target) for ex in train], len(vocab))
    torch.manual_seed(0)
    model = build_model(ModelConfig(kind="seg", vocab_size=len(vocab), emb_dim=16, hidden=32, max_seg_len=4, dropout=0.0))
    opt = torch.optim.Adam(model.parameters(), lr=0.03)
    for _ in range(30):
        loss, _ = model.loss(batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
    ckpt.save(tmp_path / "toy-seg", model.eval(), vocab, "toy")
    yield tmp_path
    del datasets.DATASETS["toy"]


def test_shipped_entries():
    assert list(datasets.DATASETS) == ["e2e", "webnlg"]
    e2e, webnlg = datasets.get("e2e"), datasets.get("webnlg")
    assert e2e.split_path("D", "dev").as_posix() == "D/e2e/dev.csv"
    assert webnlg.split_path("D", "train").as_posix() == "D/webnlg/train"
    assert e2e.parse("name[Zizzi], food[Thai]") == [Record("name", "Zizzi"), Record("food", "Thai")]
    assert webnlg.parse("A | country | B\nA | leader | C")[1] == Record("leader", "C", "A")
    assert webnlg.not_measured == {"wrong", "hallucinated"} and not e2e.not_measured
    with pytest.raises(ValueError, match="unknown dataset 'nope'; choose one of 'e2e', 'webnlg'"):
        datasets.get("nope")


def test_toy_dataset_in_the_app_backend(toy):
    assert rows.columns("toy") == ["attribute", "value"]
    parsed = rows.records_from_rows("toy", [{"attribute": "colour", "value": "red"}, {"attribute": "size", "value": "big"}])
    assert parsed.records == [Record("colour", "red"), Record("size", "big")] and parsed.warnings == []
    assert rows.records_from_param("toy", rows.records_to_param(parsed.records)) == parsed.records
    assert check("toy", parsed.records, "a red red thing").per_record[0].status == "repeated"


def test_toy_dataset_generate_and_evaluate_clis(toy, capsys):
    data, out, scores_file = toy / "data", toy / "out.txt", toy / "scores.json"
    dev = data / "toy" / "dev.tsv"
    assert generate_main(["--checkpoint", str(toy / "toy-seg"), "--input", str(dev), "--output", str(out), "--beam", "2"]) == 0
    inputs = read_inputs("toy", dev)
    assert [k for k, _ in inputs] == [DEV[0][0], DEV[1][0], DEV[3][0]]  # distinct inputs, file order
    expected = [r.text for r in generate_all(ckpt.load(toy / "toy-seg"), [r for _, r in inputs], "rm", 2)]
    assert out.read_text(encoding="utf-8").splitlines() == expected
    assert evaluate_main(["--dataset", "toy", "--refs", str(dev), "--hyps", str(out), "--no-meteor", "--json", str(scores_file)]) == 0
    scores = json.loads(scores_file.read_text(encoding="utf-8"))
    reports = [check_toy(r, text) for (_, r), text in zip(inputs, expected, strict=True)]
    assert scores["n"] == 3 and scores["total_records"] == 7
    assert scores["missing"] == sum(r.missing for r in reports) and scores["repeated"] == sum(r.repeated for r in reports)
    assert scores["wrong"] == scores["hallucinated"] == 0
    assert scores["bleu"] == pytest.approx(evaluate_toy(dev, out, meteor=False)["bleu"])
    assert report_main(["--checkpoint", str(toy / "toy-seg"), "--constraints", "rm", "--beam", "2", "--data-dir", str(data),
                        "--out-dir", str(toy / "runs"), "--no-meteor"]) == 0  # fmt: skip
    metrics = json.loads((toy / "toy-seg" / "metrics.json").read_text(encoding="utf-8"))["rm"]
    assert (toy / "runs" / "toy-seg-rm.txt").read_text(encoding="utf-8").splitlines() == expected
    assert metrics["inputs"] == 3 and metrics["bleu"] == pytest.approx(scores["bleu"])
    assert metrics["missing"] == scores["missing"]
