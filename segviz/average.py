"""Checkpoint averaging: the element-wise mean of the weights of several epochs of one run.

    python -m segviz.average --checkpoints runs/ep15 runs/ep16 runs/ep17 --out checkpoints/e2e-seg

Averaging the last few epoch checkpoints of a converged run (as in Vaswani et al., 2017) smooths
out the epoch-to-epoch wobble of the weights. The inputs must share the model configuration and
the vocabulary; the output keeps the first input's config and history; ``averaged.json`` says
what was averaged and the validation loss of the average (``--validate``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import torch

from segviz import checkpoint as ckpt
from segviz.train import TrainConfig, evaluate_loss, prepare


def average(paths: list[Path]) -> ckpt.Checkpoint:
    """The first checkpoint with its weights replaced by the mean over ``paths``."""
    if len(paths) < 2:
        raise ckpt.CheckpointError("averaging needs at least two checkpoints")
    cks = [ckpt.load(p) for p in paths]
    first = cks[0]
    for c, p in zip(cks[1:], paths[1:], strict=True):
        if c.config["model"] != first.config["model"] or c.vocab.itos != first.vocab.itos:
            raise ckpt.CheckpointError(f"{p}: model configuration or vocabulary differs from {paths[0]}")
    states = [c.model.state_dict() for c in cks]
    mean = {k: torch.stack([s[k].float() for s in states]).mean(0).to(states[0][k].dtype) for k in states[0]}
    first.model.load_state_dict(mean)
    return first


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m segviz.average", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoints", type=Path, nargs="+", required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--validate", action="store_true", help="print the validation loss of every input and of the average")
    p.add_argument("--data-dir", type=Path, default=None)
    args = p.parse_args(argv)
    try:
        avg = average(args.checkpoints)
    except ckpt.CheckpointError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    note = {"averaged": [str(x) for x in args.checkpoints]}
    if args.validate:
        tcfg = TrainConfig(**{**avg.config["train"], "max_examples": 1})
        _, _, _, enc_dev = prepare(tcfg, {}, args.data_dir, avg.vocab)
        for path in args.checkpoints:
            v = evaluate_loss(ckpt.load(path).model, enc_dev, len(avg.vocab))
            print(f"{path}: val nll/token {v['val_nll']:.4f}")
        v = evaluate_loss(avg.model, enc_dev, len(avg.vocab))
        print(f"average: val nll/token {v['val_nll']:.4f}")
        note["val_nll"] = v["val_nll"]
    ckpt.save(args.out, avg.model, avg.vocab, avg.dataset, dataclasses.asdict(TrainConfig(**avg.config["train"])), avg.history)
    (Path(args.out) / "averaged.json").write_text(json.dumps(note, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
