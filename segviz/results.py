"""The Results page's backend: every checkpoint folder's dataset, kind, training history and
dev metrics, read without loading weights, and the metrics table. No Streamlit.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from segviz import names
from segviz.checkpoint import CheckpointError
from segviz.datasets import DATASETS
from segviz.systems import checkpoint_root


@dataclass
class CheckpointSummary:
    """What the Results page shows of one checkpoint folder (read without loading weights)."""

    name: str
    path: Path
    dataset: str = "?"
    kind: str = "?"
    history: list[dict] = field(default_factory=list)
    metrics: dict = field(default_factory=dict)
    error: str | None = None


def _read(path: Path, default):
    if not path.exists():
        return default
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path.name} is unreadable ({e})") from e


def summarise_checkpoints(root: Path | None = None) -> list[CheckpointSummary]:
    """Every checkpoint folder under ``root`` (default :func:`checkpoint_root`): dataset, kind,
    training history and dev metrics, or the reason it cannot be read."""
    root = Path(root) if root is not None else checkpoint_root()
    out = []
    if not root.is_dir():
        return out
    for d in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        s = CheckpointSummary(d.name, d)
        try:
            config = _read(d / "config.json", None)
            if not isinstance(config, dict):
                raise CheckpointError("no config.json (training has not written its first epoch yet?)")
            s.dataset = str(config.get("dataset", "?"))
            s.kind = str(config.get("model", {}).get("kind", "?"))
            hist = _read(d / "history.json", [])
            s.history = [h for h in hist if isinstance(h, dict)] if isinstance(hist, list) else []
            metrics = _read(d / "metrics.json", {})
            s.metrics = metrics if isinstance(metrics, dict) else {}
        except CheckpointError as e:
            s.error = str(e)
        out.append(s)
    return out


def metrics_rows(summaries: Sequence[CheckpointSummary]) -> list[dict]:
    """Flatten metrics into one row per (checkpoint, constraint level). A metrics dict is either
    flat (``{"bleu": …}``) or keyed by level (``{"rm": {"bleu": …}, …}``); both are shown."""
    rows = []
    for s in summaries:
        flat = {k: v for k, v in s.metrics.items() if not isinstance(v, dict)}
        nested = {k: v for k, v in s.metrics.items() if isinstance(v, dict)}
        if flat:
            rows.append({"checkpoint": s.name, "level": "—", **_numbers(flat)})
        for level, m in nested.items():
            rows.append(
                {"checkpoint": s.name, "level": names.LEVEL_NAMES.get(level, level), **_numbers(m)}
            )
    return rows


# readable headers of the Results table, in order: (metrics key, header, format)
RESULT_COLUMNS = (
    ("bleu", "BLEU", "{:.4f}"), ("rouge_l", "ROUGE-L", "{:.4f}"), ("meteor", "METEOR", "{:.4f}"),
    ("cider", "CIDEr", "{:.4f}"), ("wrong", "wrong", "{:,.0f}"), ("repeated", "repeated", "{:,.0f}"),
    ("missing", "missing", "{:,.0f}"), ("hallucinated", "hallucinated", "{:,.0f}"),
    ("slot_error_rate", "SER", "{:.2%}"), ("dist1", "Dist-1", "{:,.0f}"), ("dist3", "Dist-3", "{:,.0f}"),
    ("generation_seconds", "gen. time (s)", "{:,.0f}"),
)  # fmt: skip
# what the automatic checker does not measure, per dataset (WebNLG: its predicates are open-ended)
NOT_MEASURED = {name: set(ds.not_measured) for name, ds in DATASETS.items() if ds.not_measured}
LEVEL_NAMES = names.LEVEL_NAMES  # segviz.names


def _not_measured(dataset: str) -> frozenset[str]:
    return DATASETS[dataset].not_measured if dataset in DATASETS else frozenset()


def results_rows(summaries: Sequence[CheckpointSummary]) -> list[dict]:
    """The Results page's metrics table: one row per (checkpoint, system), readable headers,
    SER in %, "n/a" for what the checker does not measure for the dataset (WebNLG: wrong,
    hallucinated) or what was not computed (e.g. METEOR without Java). All cells are text."""
    rows = []
    for s in summaries:
        levels = {k: v for k, v in s.metrics.items() if isinstance(v, dict)}
        flat = {k: v for k, v in s.metrics.items() if not isinstance(v, dict)}
        if flat:
            levels = {"—": flat, **levels}
        order = ["—", *LEVEL_NAMES]
        for level, m in sorted(levels.items(), key=lambda lm: order.index(lm[0]) if lm[0] in order else len(order)):
            row = {"checkpoint": s.name, "system": LEVEL_NAMES.get(level, level)}
            for key, header, fmt in RESULT_COLUMNS:
                v = m.get(key)
                ok = isinstance(v, int | float) and not isinstance(v, bool) and v == v
                row[header] = "n/a" if key in _not_measured(s.dataset) or not ok else fmt.format(v)
            n = m.get("inputs") or m.get("n")
            row["inputs"] = f"{n:,}" if isinstance(n, int) else "n/a"
            rows.append(row)
    return rows


def shipped_epoch(history: Sequence[dict]) -> int | None:
    """The epoch whose weights a checkpoint holds: the one with the lowest validation NLL (the
    trainer keeps the best by validation loss); None without validation losses."""
    best = [(h["val_nll"], h["epoch"]) for h in history
            if isinstance(h.get("val_nll"), int | float) and h["val_nll"] == h["val_nll"] and "epoch" in h]  # fmt: skip
    return min(best)[1] if best else None


def last_epoch_rows(summaries: Sequence, shipped: dict[str, int | None]) -> list[dict]:
    """One row per checkpoint summary: its epoch count, the shipped epoch and its last epoch's
    numbers (the in-epoch validation curve and the recorded command, lists and dicts, left out:
    a table cell shows them as raw text)."""
    rows = []
    for s in summaries:
        last = s.history[-1] if s.history else {}
        rows.append({"checkpoint": s.name, "epochs": len(s.history), "shipped epoch": shipped.get(s.name),
                     **{k: v for k, v in last.items() if not isinstance(v, list | dict)}})
    return rows


# segviz.train's flags that change what a stretch trains on or how (a curve joins stretches as one line)
STRETCH_FLAGS = {"--resume": 0, "--init": 1, "--clean": 0, "--clean-list": 1, "--substitute": 1, "--figures": 1,
                 "--relation-dropout": 1, "--abbreviations": 0, "--lr": 1, "--val-half": 1, "--hidden": 1, "--reg-weight": 1}  # flag: its values


def training_stretches(summaries: Sequence[CheckpointSummary]) -> list[dict]:
    """One row per stretch of each checkpoint's training: a run of ``segviz.train`` (its history's
    ``command`` record, at the stretch's first epoch), the epochs it trained, and its flags that
    change the data, the start or the learning rate (:data:`STRETCH_FLAGS`). The curves draw the
    stretches of one checkpoint as one history; this table says where one run gave way to another."""
    rows = []
    for s in summaries:
        starts = [(h["epoch"], h.get("command")) for h in s.history
                  if "epoch" in h and (isinstance(h.get("command"), dict) or h is s.history[0])]  # fmt: skip
        last = max((h["epoch"] for h in s.history if "epoch" in h), default=None)
        for i, (first, command) in enumerate(starts):
            end = starts[i + 1][0] - 1 if i + 1 < len(starts) else last
            line = command.get("line", "") if isinstance(command, dict) else ""
            rows.append({"checkpoint": s.name, "epochs": f"{first}–{end}" if end != first else str(first),
                         "flags": _stretch_flags(line) if line else "(not recorded)", "command": line})
    return rows


def _stretch_flags(line: str) -> str:
    """The :data:`STRETCH_FLAGS` of a command line with their values ("--resume --lr 0.0002")."""
    try:
        words = shlex.split(line)
    except ValueError:
        words = line.split()
    out = []
    for i, w in enumerate(words):
        if w in STRETCH_FLAGS:
            out.append(" ".join(words[i : i + 1 + STRETCH_FLAGS[w]]))
    return " ".join(out) or "(a fresh start)"


def _numbers(d: dict) -> dict:
    return {k: v for k, v in d.items() if isinstance(v, int | float | str) and not isinstance(v, bool)}
