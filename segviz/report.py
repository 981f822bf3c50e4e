"""Dev-set report of a checkpoint: generate with each constraint level, evaluate, store metrics.

    python -m segviz.report --checkpoint checkpoints/e2e-seg [--constraints none r rm] [--beam 5]
        [--data-dir DIR] [--out-dir runs/] [--no-meteor]

For every level it runs the same steps as ``python -m segviz.generate`` then
``python -m segviz.evaluate`` on the dev set, writes the outputs to ``--out-dir`` and the scores
(plus generation time) to ``CHECKPOINT/metrics.json`` under ``<level>`` (``pg`` for PG).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

import torch

from segviz import checkpoint as ckpt
from segviz import datasets
from segviz.data import default_data_dir
from segviz.datasets import DATASETS
from segviz.decode import CONSTRAINT_LABELS, CONSTRAINTS, DEFAULT_VALUE_RULES, NO_REPEAT_NGRAM
from segviz.device import on_device
from segviz.evaluate import KEYS, EvaluationError
from segviz.generate import add_decoding_args, generate_all, read_inputs, write_outputs
from segviz.model import SegmentModel

log = logging.getLogger(__name__)


def dev_source(dataset: str, data_dir: Path) -> Path:
    """The dev file (or folder) of ``dataset`` under ``data_dir``."""
    return datasets.get(dataset).split_path(data_dir, "dev")


def report(
    checkpoint: Path,
    levels: list[str],
    beam: int,
    data_dir: Path,
    out_dir: Path,
    meteor: bool = True,
    no_repeat_ngram: int = NO_REPEAT_NGRAM,
    device: str = "cpu",
    value_rules: str | None = None,
) -> dict:
    c = ckpt.load(checkpoint, device)
    ds = datasets.get(c.dataset)
    src = dev_source(c.dataset, data_dir)
    items = read_inputs(c.dataset, src)
    metrics = dict(c.metrics)
    is_seg = isinstance(c.model, SegmentModel)
    for level in levels if is_seg else ["pg"]:
        t0 = time.perf_counter()
        results = generate_all(
            c,
            [r for _, r in items],
            level if is_seg else "none",
            beam,
            no_repeat_ngram=no_repeat_ngram,
            rules=value_rules,
        )
        seconds = time.perf_counter() - t0
        out = out_dir / f"{c.name}-{level}.{ds.output_suffix}"
        write_outputs(c.dataset, [k for k, _ in items], results, out)
        scores = ds.evaluate(src, out, meteor=meteor)
        scores.update(
            beam=beam,
            no_repeat_ngram=no_repeat_ngram,
            value_rules=value_rules or c.default_rules or DEFAULT_VALUE_RULES,
            generation_seconds=seconds,
            inputs=len(items),
            fallbacks=sum(r.fallback_used for r in results),
            outputs=str(out),
            split="dev",
        )
        metrics[level] = scores
        print(
            f"{c.name} [{level}] "
            + " ".join(
                f"{k}={scores[k]:.4f}" if isinstance(scores[k], float) else f"{k}={scores[k]}" for k in KEYS
            )
            + f" | {len(items)} inputs in {seconds:.0f} s, fallbacks {scores['fallbacks']}",
            flush=True,
        )
        ckpt.write_metrics(checkpoint, metrics)
    return metrics


def markdown_table(root: Path, dataset: str) -> str:
    """The dev-set table of every checkpoint of ``dataset`` under ``root``, in the shape of the
    paper's Tables 2 and 3 (automatic checker counts instead of human ones)."""
    head = "| system | BLEU | ROUGE-L | METEOR | CIDEr | wrong | repeated | missing | hallucinated | SER | Dist-1 | Dist-3 | gen. time |"
    lines = [head, "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    names = {"pg": "PG", **CONSTRAINT_LABELS}
    for d in sorted(root.iterdir()):
        mfile = d / "metrics.json"
        if not mfile.exists():
            continue
        config = json.loads((d / "config.json").read_text(encoding="utf-8"))
        if config.get("dataset") != dataset:
            continue
        metrics = json.loads(mfile.read_text(encoding="utf-8"))
        for level in ("pg", *CONSTRAINTS):
            m = metrics.get(level)
            if not isinstance(m, dict):
                continue

            def f(k, digits=4, m=m):
                v = m.get(k)
                return "n/a" if v is None else (f"{v:.{digits}f}" if isinstance(v, float) else str(v))

            lines.append(
                f"| {names[level]} (`{d.name}`) | {f('bleu')} | {f('rouge_l')} | {f('meteor')} | {f('cider')} | "
                f"{f('wrong')} | {f('repeated')} | {f('missing')} | {f('hallucinated')} | {100 * m['slot_error_rate']:.2f}% | "
                f"{f('dist1')} | {f('dist3')} | {m.get('generation_seconds', 0):.0f} s / {m.get('inputs', '?')} inputs |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m segviz.report",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--checkpoint", type=Path, help="checkpoint to generate with and evaluate")
    p.add_argument(
        "--table",
        choices=tuple(DATASETS),
        help="only print the markdown table of checkpoints/*/metrics.json",
    )
    p.add_argument("--constraints", nargs="+", choices=CONSTRAINTS, default=list(CONSTRAINTS))
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--out-dir", type=Path, default=Path("runs"))
    p.add_argument("--no-meteor", action="store_true")
    add_decoding_args(p)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.table:
        print(markdown_table(Path("checkpoints"), args.table))
        return 0
    if args.checkpoint is None:
        p.error("--checkpoint is required")
    try:
        with on_device(args.device):
            report(
                args.checkpoint,
                args.constraints,
                args.beam,
                args.data_dir or default_data_dir(),
                args.out_dir,
                not args.no_meteor,
                args.no_repeat_ngram,
                args.device,
                args.value_rules,
            )
    except (ckpt.CheckpointError, EvaluationError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
