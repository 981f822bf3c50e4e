"""scripts/train_all.sh replays the shipped checkpoints: run as written (here: --dry-run, read back),
its steps give every checkpoint the epochs, learning rate per epoch, data cleaning and loss
settings that checkpoints/NAME/history.json and config.json record."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT

from segviz import checkpoint as ckpt

SCRIPT = ROOT / "scripts" / "train_all.sh"
SHIPPED = sorted(p.name for p in (ROOT / "checkpoints").iterdir() if (p / "history.json").exists())
REPLAY_OUT = "runs/replay"  # the script's default OUT: the folder the recorded commands write
DEFAULT_LR = 0.002  # segviz.train.TrainConfig.lr when the checkpoints were trained


def _replay(out: str = "OUT") -> dict[str, dict]:
    """Per checkpoint name: ``lr`` per epoch, ``clean``, last ``reg_weight`` / ``max_seg_len``,
    and ``commands``: ``[(command line, [first epoch, last epoch]), ...]`` as history.json
    records them (``python -m segviz.train ...``), as the script's steps would leave them."""
    printed = subprocess.run(["bash", str(SCRIPT), "--dry-run", out], capture_output=True, text=True, check=True).stdout
    runs: dict[str, dict] = {}
    for line in printed.splitlines():
        argv = shlex.split(line)
        if argv[:1] == ["mv"]:
            runs[argv[2].removeprefix(f"{out}/")] = runs.pop(argv[1].removeprefix(f"{out}/"))
            continue
        if argv[1:3] != ["-m", "segviz.train"]:
            continue
        opts, flags, i = {}, set(), 3
        while i < len(argv):
            if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                opts[argv[i]], i = argv[i + 1], i + 2
            else:
                flags.add(argv[i])
                i += 1
        name = opts["--out"].removeprefix(f"{out}/")
        if "--init" in opts:
            src = runs[opts["--init"].removeprefix(f"{out}/")]
            run = dict(src, lr=list(src["lr"]), commands=list(src["commands"]))
        elif "--resume" in flags:
            run = runs[name]
        else:
            assert name not in runs, f"{name} trained from scratch twice"
            run = {"lr": [], "clean": False, "--reg-weight": None, "--max-seg-len": None, "commands": []}
        run["commands"].append((shlex.join(["python", *argv[1:]]), [len(run["lr"]) + 1, int(opts["--epochs"])]))
        if "--lr" in opts:  # the step sets the rate: the trainer's decays so far no longer apply
            run["new_rate"] = [*run.get("new_rate", []), len(run["lr"])]
        rate = float(opts.get("--lr", run["lr"][-1] if run["lr"] else DEFAULT_LR))
        run["lr"] += [rate] * (int(opts["--epochs"]) - len(run["lr"]))
        run["clean"] = run["clean"] or "--clean" in flags
        for key in ("--reg-weight", "--max-seg-len"):
            run[key] = opts.get(key, run[key])
        runs[name] = run
    return runs


def _with_decays(recipe_lr: list[float], history: list[dict], decay: float = 0.1, new_rate: tuple = ()) -> list[float]:
    """The recipe's learning rate per epoch with the trainer's own decays (paper §5: x0.1 after an
    epoch whose validation loss is no new best) where history.json shows them: an epoch's rate
    may be the recipe's times a power of ``decay`` only after such an epoch, and never rises
    within a stretch the recipe gives no new rate (a rate other than the last, or the same rate
    given again by a step's ``--lr``: ``new_rate``, the epoch indices where such a step begins;
    the trainer keeps its best validation loss across a ``--resume``)."""
    out, factor, best, before_last = [], 1.0, float("inf"), float("inf")  # before_last: best before epoch i-1
    for i, (lr, e) in enumerate(zip(recipe_lr, history, strict=True)):
        if i and i in new_rate and lr == recipe_lr[i - 1]:
            factor = 1.0  # the same --lr given again: the recipe's rate, the best so far kept
        elif i and lr != recipe_lr[i - 1]:
            factor, best = 1.0, float("inf")  # a new --lr: the recipe's rate again
        elif i and e["lr"] < out[-1] * (1 - 1e-9):  # the trainer decayed: only after no new best
            assert history[i - 1]["val_nll"] >= before_last, f"epoch {i + 1}: lr decayed after a new best"
            factor *= decay
        out.append(lr * factor)
        before_last, best = best, min(best, e["val_nll"])
    return out


def test_every_shipped_checkpoint_has_a_recipe() -> None:
    assert set(SHIPPED) <= set(_replay())  # plus intermediate copies such as e2e-pg-epoch4


@pytest.mark.parametrize("name", SHIPPED)
def test_recipe_gives_the_shipped_history_and_settings(name: str) -> None:
    run = _replay()[name]
    history = json.loads((ROOT / "checkpoints" / name / "history.json").read_text(encoding="utf-8"))
    config = json.loads((ROOT / "checkpoints" / name / "config.json").read_text(encoding="utf-8"))
    assert len(run["lr"]) == len(history), f"{name}: the recipe trains {len(run['lr'])} epochs, history.json has {len(history)}"
    assert [e["lr"] for e in history] == pytest.approx(_with_decays(run["lr"], history, new_rate=run.get("new_rate", ())), rel=1e-9)
    assert run["clean"] == config["train"].get("clean", False)
    model = config["model"]
    if model["kind"] == "seg":  # the loss settings the recipe gives are the stored ones
        assert float(run["--reg-weight"]) == model["reg_weight"]
        assert int(run["--max-seg-len"] or 8) == model["max_seg_len"]


@pytest.mark.parametrize("name", SHIPPED)
def test_history_records_the_recipe_commands(name: str) -> None:
    """history.json names the command of every stretch of epochs: the CPU-trained checkpoints were
    annotated afterwards with the script's replay commands (default OUT), which say so; the
    GPU-trained ones keep the command lines as run, each with its replay step beside it."""
    history = ckpt.load(ROOT / "checkpoints" / name).history  # the extra key loads like any other
    recorded = ckpt.commands(history)
    assert [(c.get("replay", c["line"]), c["epochs"]) for c in recorded] == _replay(REPLAY_OUT)[name]["commands"]
    ranges = [c["epochs"] for c in recorded]
    assert ranges[0][0] == 1 and ranges[-1][1] == len(history)  # the stretches cover every epoch once
    assert all(a[1] + 1 == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    for c in recorded:
        assert history[c["epochs"][0] - 1]["command"] is c  # on the stretch's first epoch
        if "replay" in c:  # recorded as run (the lent GPU's runs): its own line, time and the replay step
            assert c["started"] and c["line"].startswith("python -m segviz.train ") and " --out " in c["line"] and "scripts/train_all.sh" in c["source"]
        else:  # annotated afterwards from the script
            assert c["started"] is None and "scripts/train_all.sh" in c["source"]


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    _replay(str(tmp_path / "replay"))
    assert not (tmp_path / "replay").exists()


def test_lexicon_steps_match_the_shipped_lexicons():
    """The script's ``segviz.lexicon`` steps write what each shipped lexicon.json records: its
    ``--min-rate``, ``--min-lift``, ``--clean``, ``--segments``, ``--relations`` and the default ``--value-rules``
    chosen on the tune half."""
    from segviz.lexicon import MIN_RATE

    printed = subprocess.run(["bash", str(SCRIPT), "--dry-run", "OUT"], capture_output=True, text=True, check=True).stdout
    steps = {}
    for line in printed.splitlines():
        argv = shlex.split(line)
        if argv[1:3] == ["-m", "segviz.lexicon"]:
            bare = ("--clean", "--segments", "--relations")  # the flags without a value
            rest = [a for a in argv[3:] if a not in bare]
            opts = {**dict(zip(rest[::2], rest[1::2], strict=False)), **{f: f in argv for f in bare}}
            steps[opts["--checkpoint"].removeprefix("OUT/")] = opts
    assert sorted(steps) == [n for n in SHIPPED if (ROOT / "checkpoints" / n / "lexicon.json").exists()]
    for name, opts in steps.items():
        stored = json.loads((ROOT / "checkpoints" / name / "lexicon.json").read_text(encoding="utf-8"))
        assert stored["min_rate"] == float(opts.get("--min-rate", MIN_RATE)), name
        assert stored.get("value_rules") == opts.get("--value-rules"), name
        assert stored.get("clean", False) == opts["--clean"], name
        assert ("segments" in stored) == opts["--segments"], name
        assert ("relations" in stored) == opts["--relations"], name
        assert stored.get("min_lift") == (float(opts["--min-lift"]) if "--min-lift" in opts else None), name
        assert stored["names"], name  # the training names are listed
