"""Regression fixture of the shipped E2E checkpoints (issue 15, "tests that can fail").

60 fixed dev inputs (every n-th distinct MR of ``e2e/dev.csv``, so every record count is
there) are decoded as ``python -m segviz.generate`` does by default: ``checkpoints/e2e-seg``
with constraints ``rm`` and ``checkpoints/e2e-pg``, beam 5, the default value rules. For each
system the fixture stores corpus BLEU (sacrebleu, E2E settings; no Java needed), the automatic
checker's counts (wrong / repeated / missing / hallucinated), the fallbacks and the 60 outputs.
``tests/test_regression_e2e.py`` (marked ``slow``) decodes again and compares within
:data:`TOLERANCE`.

Refresh the fixture after a shipped E2E checkpoint, the decoder or the checker changes on
purpose (from the repository root; about a minute)::

    python tests/regression_e2e.py

It rewrites ``tests/data/regression_e2e.json``; commit it with the change that moved the numbers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "data" / "regression_e2e.json"
COMMAND = "python tests/regression_e2e.py"
N_INPUTS = 60
SYSTEMS = {"e2e-seg:rm": ("e2e-seg", "rm"), "e2e-pg": ("e2e-pg", None)}  # name: (checkpoint, constraints)
BEAM = 5
COUNTS = ("wrong", "repeated", "missing", "hallucinated", "fallbacks")
# What a run may differ by from the fixture and still pass: BLEU by 0.01 (one point), each
# count by 2, and at most 6 of the 60 outputs may read differently (ties in the beam can flip
# with another thread count or CPU). A change to the model, the decoder or the checker that
# moves more than that fails until the fixture is refreshed on purpose.
TOLERANCE = {"bleu": 0.01, "count": 2, "changed_outputs": 6}


def fixed_inputs(dev_csv: Path, n: int = N_INPUTS) -> list[str]:
    """``n`` distinct MRs of ``dev_csv`` spread evenly over the file (file order)."""
    from segviz.evaluate import read_e2e_refs

    mrs = list(read_e2e_refs(dev_csv))
    step = max(1, len(mrs) // n)
    return mrs[::step][:n]


def run(dev_csv: Path, mrs: list[str], checkpoints: Path = ROOT / "checkpoints") -> dict:
    """Decode ``mrs`` with every system of :data:`SYSTEMS`; BLEU, checker counts and outputs."""
    from segviz import checkpoint as ckpt
    from segviz.evaluate import read_e2e_refs
    from segviz.faithfulness import check, totals
    from segviz.generate import generate_all
    from segviz.metrics import bleu
    from segviz.records import parse_e2e_mr

    refs = read_e2e_refs(dev_csv)
    inputs = [parse_e2e_mr(m) for m in mrs]
    out = {}
    for name, (checkpoint, constraints) in SYSTEMS.items():
        c = ckpt.load(checkpoints / checkpoint)
        results = generate_all(c, inputs, constraints or "none", BEAM)  # default value rules
        texts = [r.text for r in results]
        faith = totals(check("e2e", recs, t) for recs, t in zip(inputs, texts, strict=True))
        out[name] = {
            "bleu": round(bleu(texts, [refs[m] for m in mrs]), 6),
            **{k: faith[k] for k in COUNTS if k in faith},
            "fallbacks": sum(r.fallback_used for r in results),
            "total_records": faith["total_records"],
            "outputs": texts,
        }
    return out


def make(dev_csv: Path, path: Path = FIXTURE) -> dict:
    """Write the fixture for the checkpoints and code as they are now."""
    import torch

    mrs = fixed_inputs(dev_csv)
    fixture = {
        "command": COMMAND,
        "about": "tests/regression_e2e.py: shipped E2E checkpoints on 60 fixed dev inputs, beam 5, "
        "e2e-seg with constraints rm, default value rules",
        "torch": torch.__version__,
        "tolerance": TOLERANCE,
        "inputs": mrs,
        "systems": run(dev_csv, mrs),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return fixture


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    from segviz.data import default_data_dir

    dev_csv = Path(default_data_dir()) / "e2e" / "dev.csv"
    if not dev_csv.exists():
        print(f"error: {dev_csv} not found (set SEGVIZ_DATA)", file=sys.stderr)
        return 2
    fixture = make(dev_csv)
    for name, m in fixture["systems"].items():
        print(name, " ".join(f"{k}={m[k]}" for k in ("bleu", *COUNTS)))
    print(f"wrote {FIXTURE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
