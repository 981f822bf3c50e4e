"""Write the indices of the references ``train --clean`` keeps (the checker finds them exact), for
``train --clean-list``: a recipe step then trains on the same references after the checker
changes. Runs against whichever ``segviz`` is importable, so a past checker's list is made with
that commit on ``PYTHONPATH`` (README "Reproduce"):

    python scripts/clean_list.py --dataset webnlg --val-half tune --out scripts/webnlg-clean-s11.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from segviz import faithfulness
from segviz.data import load_split
from segviz.records import half_of


def exact(dataset: str, examples: list) -> list[int]:
    """Indices of ``examples`` whose reference has no checker error (``train.clean_examples``)."""
    return [i for i, e in enumerate(examples) if faithfulness.check(dataset, e.records, " ".join(e.target)).errors == 0]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", required=True, choices=("e2e", "webnlg"))
    p.add_argument("--val-half", default="all", choices=("all", "tune", "report"), help="the validation set, as train --val-half")
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--note", default="", help="what made the list (a commit, a session)")
    a = p.parse_args()
    train, dev = load_split(a.dataset, "train", a.data_dir), load_split(a.dataset, "dev", a.data_dir)
    dev = dev if a.val_half == "all" else [e for e in dev if half_of(e.records) == a.val_half]
    out = {"dataset": a.dataset, "val_half": a.val_half, "note": a.note, "train": exact(a.dataset, train), "dev": exact(a.dataset, dev)}
    a.out.write_text(json.dumps(out, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{a.out}: kept {len(out['train'])} of {len(train)} train and {len(out['dev'])} of {len(dev)} dev references")


if __name__ == "__main__":
    main()
