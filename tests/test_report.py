"""python -m segviz.report on tiny checkpoints: the stored metrics are the outputs' own scores."""

from __future__ import annotations

import csv
import json
import shutil

import pytest
from conftest import MRS

from segviz import checkpoint as ckpt
from segviz.decode import DEFAULT_VALUE_RULES
from segviz.evaluate import evaluate_outputs
from segviz.generate import generate_all
from segviz.records import parse_e2e_mr
from segviz.report import main as report_main


@pytest.fixture
def dev(tmp_path):
    """A dev split of the 8 bundled MRs (the first with two references)."""
    (tmp_path / "data" / "e2e").mkdir(parents=True)
    with open(tmp_path / "data" / "e2e" / "dev.csv", "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["mr", "ref"])
        w.writerows(MRS)
        w.writerow([MRS[0][0], "The Eagle is a coffee shop."])
    return tmp_path / "data"


@pytest.mark.parametrize("kind", ["seg", "pg"])
def test_report_stores_the_scores_of_what_it_generated(tiny, tmp_path, dev, kind, capsys):
    path = shutil.copytree(tiny / f"e2e-{kind}", tmp_path / f"e2e-{kind}")
    rc = report_main(["--checkpoint", str(path), "--data-dir", str(dev), "--out-dir", str(tmp_path / "runs"),
                      "--beam", "2", "--no-meteor"])
    assert rc == 0
    metrics = json.loads((path / "metrics.json").read_text(encoding="utf-8"))
    levels = ["none", "r", "rm"] if kind == "seg" else ["pg"]
    assert [k for k in metrics if isinstance(metrics[k], dict)] == levels
    c = ckpt.load(path)
    inputs = [parse_e2e_mr(mr) for mr, _ in MRS]
    refs = [[ref, "The Eagle is a coffee shop."] if i == 0 else [ref] for i, (_, ref) in enumerate(MRS)]
    printed = capsys.readouterr().out
    for level in levels:
        m = metrics[level]
        out = tmp_path / "runs" / f"e2e-{kind}-{level}.tsv"
        rows = list(csv.reader(out.open(encoding="utf-8"), delimiter="\t"))[1:]
        results = generate_all(c, inputs, level if kind == "seg" else "none", 2)
        texts = [r.text for r in results]
        assert rows == [[mr, t] for (mr, _), t in zip(MRS, texts, strict=True)]  # what the decoder says
        want = evaluate_outputs("e2e", inputs, refs, texts, meteor=False)  # scored against every reference
        for key in ("bleu", "rouge_l", "cider", "wrong", "repeated", "missing", "hallucinated", "total_records"):
            assert m[key] == pytest.approx(want[key]), (level, key)
        assert (m["n"], m["inputs"], m["beam"], m["value_rules"], m["split"]) == (8, 8, 2, DEFAULT_VALUE_RULES, "dev")
        assert m["meteor"] is None and m["fallbacks"] == sum(r.fallback_used for r in results) and m["outputs"] == str(out)
        assert f"[{level}] bleu={m['bleu']:.4f}" in printed
