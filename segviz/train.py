"""Training CLI (paper §5): Adam, batch 64, dropout 0.3, lr x0.1 when validation loss rises,
early stopping, fixed seeds, a checkpoint after every epoch, ``--resume`` after an interruption.

    python -m segviz.train --dataset e2e --model seg --out checkpoints/e2e-seg [--epochs N]
        [--max-examples N] [--resume] [--hidden 256 --emb-dim 100 --max-seg-len 8 ...]
        [--device auto|cpu|cuda] [--amp]
    torchrun --nproc_per_node N -m segviz.train ...   # data-parallel (gloo on CPU, NCCL on CUDA)

With several processes every one forms the same global batches of ``--batch-size`` and
trains on its shard; gradients are averaged by DistributedDataParallel so that an update
equals the one-process update on the whole global batch. Only rank 0 writes checkpoints,
logs and the progress bar.

Every field of :class:`TrainConfig` and :class:`segviz.model.ModelConfig` is a ``--flag``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# OpenMP threads that wait for work sleep instead of spinning (unless the environment says
# otherwise): on this 2-core machine shared with other jobs, a 2-thread training step was
# measured about 3x slower with spinning threads (README, "Train on a GPU / several GPUs"). Read
# when torch loads OpenMP, so it is set before the first `import torch`.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch

from segviz import augment, faithfulness
from segviz import checkpoint as ckpt
from segviz.data import DATASETS, DataError, Vocab, batches, encode, load_split
from segviz.device import DEVICES, DeviceError, resolve_device
from segviz.model import MODEL_KINDS, ModelConfig, build_model
from segviz.records import HALVES, half_of
from segviz.train_console import Console, command_line
from segviz.trainer import Parallel, Trainer, evaluate_loss, init_parallel, set_threads, train_step

__all__ = ["TrainConfig", "Run", "Step", "fit", "setup", "train_epoch", "validate", "record_epoch", "prepare", "init_from",
           "clean_examples", "read_clean_list", "time_steps", "main", "add_config_args", "pick", "command_line",
           "Parallel", "Trainer", "evaluate_loss", "init_parallel", "set_threads", "train_step"]  # the last six: segviz.trainer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings; stored in the checkpoint."""

    dataset: str = "e2e"  # e2e | webnlg
    model: str = "seg"  # seg | pg
    epochs: int = 12  # upper bound; early stopping usually ends sooner
    batch_size: int = 64  # paper: 64
    lr: float = 2e-3  # Adam learning rate (paper: 0.01; lower is steadier for our sizes)
    lr_decay: float = 0.1  # multiply lr when validation loss rises (paper: x0.1)
    patience: int = 2  # stop after this many epochs without a new best validation loss
    min_lr: float = 1e-5  # stop once lr decays below this
    clip: float = 5.0  # gradient-norm clipping
    min_freq: int = 5  # vocabulary: words seen at least this often (others are copied or <unk>)
    max_examples: int = 0  # use only the first N training examples (0 = all)
    max_val_examples: int = 0  # validation subset (0 = the whole dev set)
    seed: int = 1234  # torch / shuffling seed (the epoch number is added each epoch)
    threads: int = 0  # torch threads per process (0 = all cores, shared among the processes of this machine)
    val_every: int = 0  # also validate every N steps on `val_subset` dev examples (0 = only per epoch)
    val_subset: int = 500  # dev examples used by the in-epoch validation
    clean: bool = False  # keep only references the faithfulness checker finds complete and exact
    clean_list: str = ""  # with clean: keep the references a recorded list names (scripts/clean_list.py), not today's checker's
    substitute: float = 0.0  # share of training examples with invented names (segviz.augment; 0 = the paper)
    abbreviations: bool = False  # invented names also with an abbreviation's full stop ("St. Brouthal"; segviz.augment)
    open_values: float = 0.0  # share of E2E training examples with food / area / eatType outside the closed sets (segviz.augment; 0 = the paper)
    figures: float = 0.0  # share of WebNLG training examples with invented dates and numbers (segviz.augment; 0 = the paper)
    val_half: str = "all"  # validation loss (so the checkpoint choice) on: all of dev | its tune half (records.half_of)
    word_dropout: float = 0.0  # share of decoder input words replaced by <unk> while training (0 = the paper)
    relation_dropout: float = 0.0  # share of WebNLG training records whose relation words are read as unseen (segviz.augment; 0 = the paper)
    anchor: bool = False  # seg: a word of only some records' values is emitted under one of them (segviz.anchor; off = the paper)


RESUME_OVERRIDABLE = ("reg_weight", "reg_gamma", "dropout", "max_seg_len")
STORED_ON_RESUME = ("batch_size", "lr_decay", "patience", "min_lr", "clip", "min_freq", "seed", "val_every", "val_subset")  # TrainConfig fields --resume / --init take from the stored run


def add_config_args(parser: argparse.ArgumentParser, cls, skip: tuple[str, ...] = ()) -> None:
    """One ``--field`` option per dataclass field, defaulting to ``None`` (= keep the default)."""
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        if isinstance(f.default, bool):
            parser.add_argument("--" + f.name.replace("_", "-"), dest=f.name, action="store_true", default=None, help="off by default")
            continue
        typ = {int: int, float: float, str: str}.get(type(f.default), str)
        parser.add_argument("--" + f.name.replace("_", "-"), dest=f.name, type=typ, default=None, help=f"default {f.default!r}")


def pick(cls, args: argparse.Namespace, **extra):
    """Build dataclass ``cls`` from the non-None command-line values."""
    vals = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if getattr(args, f.name, None) is not None}
    return cls(**{**vals, **extra})


def clean_examples(dataset: str, examples: list, keep: list[int] | None = None) -> list:
    """Examples whose reference the automatic checker (:mod:`segviz.faithfulness`) finds with no
    missing, repeated, wrong or hallucinated record: training-data cleaning in the manner of
    Dušek et al. (2019), whose cleaned E2E data cut omissions without hurting fluency. With
    ``keep`` (indices into ``examples``, from ``--clean-list``) those a checker of the past kept:
    a recipe step replays on the same references after the checker improves."""
    if keep is None:
        kept = [e for e in examples if faithfulness.check(dataset, e.records, " ".join(e.target)).errors == 0]
    elif all(type(i) is int and 0 <= i < len(examples) for i in keep) and len(set(keep)) == len(keep):
        kept = [examples[i] for i in keep]
    else:
        raise DataError(f"--clean-list must name distinct references among the {len(examples)} {dataset} examples read")
    log.info("--clean: kept %d of %d %s examples%s", len(kept), len(examples), dataset, " (--clean-list)" if keep is not None else "")
    return kept


def read_clean_list(path: str, dataset: str, val_half: str) -> dict[str, list[int]]:
    """``--clean-list``: {"train": [...], "dev": [...]} indices of the references to keep, as
    ``scripts/clean_list.py`` writes them for ``dataset`` and the validation half ``val_half``."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DataError(f"--clean-list {path}: cannot read it as JSON ({e})") from None
    if not isinstance(data, dict) or data.get("dataset") != dataset or not all(isinstance(data.get(k), list) for k in ("train", "dev")):
        raise DataError(f"--clean-list {path}: not a {dataset} list of kept train and dev references")
    if data.get("val_half", "all") != val_half:
        raise DataError(f"--clean-list {path}: its dev references are of --val-half {data.get('val_half', 'all')}, not {val_half}")
    return {k: data[k] for k in ("train", "dev")}


def prepare(tcfg: TrainConfig, mcfg_overrides: dict, data_dir: Path | None, vocab: Vocab | None = None):
    """Load the splits, build (or reuse) the vocabulary and encode every example."""
    train = load_split(tcfg.dataset, "train", data_dir)[: tcfg.max_examples or None]
    dev = load_split(tcfg.dataset, "dev", data_dir)
    if tcfg.val_half not in ("all", *HALVES):
        raise DataError(f"--val-half must be all, {' or '.join(HALVES)}, not {tcfg.val_half!r}")
    if tcfg.anchor and tcfg.model != "seg":
        raise DataError("--anchor restricts the segment model's alignments: the PG baseline has none")
    if not 0.0 <= tcfg.word_dropout < 1.0:
        raise DataError(f"--word-dropout must be in [0, 1), not {tcfg.word_dropout}")
    if not 0.0 <= tcfg.figures <= 1.0 or (tcfg.figures and tcfg.dataset != "webnlg"):
        raise DataError(f"--figures takes a share in [0, 1] of WebNLG examples (E2E has no dates or free numbers), not {tcfg.figures}")
    if not 0.0 <= tcfg.relation_dropout < 1.0 or (tcfg.relation_dropout and tcfg.dataset != "webnlg"):
        raise DataError(f"--relation-dropout takes a share in [0, 1) of WebNLG records (E2E's eight attributes are all in training), not {tcfg.relation_dropout}")
    if not 0.0 <= tcfg.open_values <= 1.0 or (tcfg.open_values and tcfg.dataset != "e2e"):
        raise DataError(f"--open-values takes a share in [0, 1] of E2E examples (WebNLG's values are open already), not {tcfg.open_values}")
    if tcfg.val_half != "all":  # choices on the tune half only (the report half stays unseen)
        dev = [e for e in dev if half_of(e.records) == tcfg.val_half]
    dev = dev[: tcfg.max_val_examples or None]
    if tcfg.clean_list and not tcfg.clean:
        raise DataError("--clean-list names the references --clean keeps: give --clean too")
    if tcfg.clean:
        keep = read_clean_list(tcfg.clean_list, tcfg.dataset, tcfg.val_half) if tcfg.clean_list else {}
        train, dev = clean_examples(tcfg.dataset, train, keep.get("train")), clean_examples(tcfg.dataset, dev, keep.get("dev"))
    vocab = vocab or Vocab.build(train, min_freq=tcfg.min_freq)
    train = augment.substitute_values(tcfg.dataset, train, tcfg.substitute, tcfg.seed, tcfg.abbreviations)  # after the vocabulary
    train = augment.substitute_figures(train, tcfg.figures, tcfg.seed)
    train = augment.open_values(tcfg.dataset, train, tcfg.open_values, tcfg.seed)
    mcfg = ModelConfig(**{**mcfg_overrides, "kind": tcfg.model, "vocab_size": len(vocab)})
    hidden = augment.relation_dropout(train, tcfg.relation_dropout, tcfg.seed)
    enc_train = [encode(vocab.hiding(h) if h else vocab, e.records, e.target) for e, h in zip(train, hidden, strict=True)]
    enc_dev = [encode(vocab, e.records, e.target) for e in dev]
    if tcfg.anchor:  # the training objective only: validation stays the paper's likelihood
        _anchor(vocab, train, enc_train, mcfg.max_seg_len)
    return vocab, mcfg, enc_train, enc_dev


def _anchor(vocab: Vocab, train: list, enc_train: list, L: int) -> None:
    """``--anchor``: each encoded example's forbidden emissions (:func:`segviz.anchor.forbidden`)."""
    from segviz.anchor import forbidden

    for e, enc in zip(train, enc_train, strict=True):
        enc.forbid = forbidden(vocab, e.records, enc, L)
    log.info("--anchor: %d of %d examples anchored", sum(bool(e.forbid) for e in enc_train), len(enc_train))


def init_from(src: Path, out: Path) -> None:
    """Start ``out`` as a copy of checkpoint ``src`` (weights, vocabulary, config, history) with a
    fresh optimiser, so that ``fit(..., resume=True)`` fine-tunes it (``--init``). Training
    settings the source does not record take their defaults."""
    c = ckpt.load(src)
    out.mkdir(parents=True, exist_ok=True)
    for name in ("vocab.json", "model.safetensors", "history.json"):
        if (src / name).exists():
            shutil.copyfile(src / name, out / name)
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    stored = {k: v for k, v in c.config.get("train", {}).items() if k in known}
    train = TrainConfig(**{**stored, "dataset": c.dataset, "model": c.model_config.kind})
    ckpt._write_json(out / "config.json", {**c.config, "train": dataclasses.asdict(train)})
    state = {"epoch": len(c.history), "best": math.inf, "bad": 0, "lr": train.lr, "history": list(c.history)}
    ckpt.save_resume(out, c.model, torch.optim.Adam(c.model.parameters(), lr=train.lr), state)
    log.info("%s: fine-tuning %s from epoch %d", out, src, len(c.history))


@dataclass
class Step:
    """What ``on_step`` sees after every update; ``stats`` stay tensors on the device (reading one
    waits for the device), ``val`` is the in-epoch validation (``--val-every``) done at this step."""

    epoch: int
    step: int
    examples: int  # global examples in this batch
    seen: int  # global examples so far in this epoch
    total: int  # training examples in one epoch
    seconds: float  # since the epoch began
    stats: dict  # loss, nll, tokens, exp_seg, K, n
    val: dict | None = None


@dataclass
class Run:
    """A run as :func:`setup` leaves it: the encoded data, the trainer, and the early-stopping
    ``state`` (epoch, best validation NLL, epochs without a new best, lr, history) that
    ``--resume`` restores."""

    tcfg: TrainConfig
    vocab: Vocab
    enc_train: list
    enc_dev: list
    trainer: Trainer
    state: dict
    out: Path
    command: dict | None = None  # {"line", "started", "epochs": [first, last]} of this stretch

    @property
    def going(self) -> bool:
        s, t = self.state, self.tcfg
        return s["epoch"] < t.epochs and s["lr"] >= t.min_lr and s["bad"] < t.patience


def _stored_config(tcfg: TrainConfig, mcfg_overrides: dict, out: Path) -> tuple[TrainConfig, ModelConfig, Vocab, bool]:
    """``--resume``: the vocabulary and configs stored in ``out``; loss and regularisation settings
    may change, sizes may not (the weights fix them). A ``--val-half`` given replaces the stored
    one (``all``, the default, keeps it), as do ``--max-examples`` / ``--max-val-examples`` (0,
    the default, keeps them: a stored limit is not lifted on ``--resume``). Also whether the
    validation set changed (newly ``--clean``, another half or size): its losses cannot be
    compared with the stored best."""
    vocab = Vocab.from_json(ckpt._read_json(out / "vocab.json", "vocabulary"))
    stored = ckpt._read_json(out / "config.json", "config")
    changeable = {k: v for k, v in mcfg_overrides.items() if k in RESUME_OVERRIDABLE}
    ignored = sorted(set(mcfg_overrides) - set(changeable))
    if ignored:
        log.warning("on --resume the stored sizes are kept; ignoring %s", ignored)
    mcfg = ModelConfig.from_json({**stored["model"], **changeable})
    was_clean, was_half = stored["train"].get("clean", False), stored["train"].get("val_half", "all")
    half = tcfg.val_half if tcfg.val_half != "all" else was_half
    was_val_n = stored["train"].get("max_val_examples", 0)
    limits = {k: getattr(tcfg, k) or stored["train"].get(k, 0) for k in ("max_examples", "max_val_examples")}  # 0: keep
    tcfg = TrainConfig(**{**stored["train"], "epochs": tcfg.epochs, "clean": tcfg.clean or was_clean, "clean_list": tcfg.clean_list or stored["train"].get("clean_list", ""),
                          "substitute": tcfg.substitute, "abbreviations": tcfg.abbreviations, "open_values": tcfg.open_values, "figures": tcfg.figures, "word_dropout": tcfg.word_dropout, "relation_dropout": tcfg.relation_dropout, "anchor": tcfg.anchor, "val_half": half, **limits})
    new_list = tcfg.clean_list != stored["train"].get("clean_list", "")
    return tcfg, mcfg, vocab, (tcfg.clean and not was_clean) or new_list or half != was_half or tcfg.max_val_examples != was_val_n


def _resume_state(out: Path, model, optimizer, fresh: dict, new_val: bool, resume_lr: float | None) -> dict:
    """The early-stopping state saved after the last finished epoch in ``out`` (``fresh`` if none);
    another validation set (``new_val``: newly ``--clean``, another ``--val-half`` or
    ``--max-val-examples``) resets the best loss, ``--lr`` replaces the rate."""
    state = ckpt.load_resume(out, model, optimizer)
    if state is None:
        log.info("nothing to resume in %s; starting fresh", out)
        return fresh
    log.info("resuming %s after epoch %d", out, state["epoch"])
    if new_val:  # another validation set: its losses start afresh
        log.info("another validation set from epoch %d on: best validation loss reset", state["epoch"] + 1)
        state["best"], state["bad"] = math.inf, 0
    if resume_lr is not None:
        log.info("learning rate %g -> %g (--lr on --resume)", state["lr"], resume_lr)
        state["lr"], state["bad"] = resume_lr, 0
    return state


def setup(tcfg: TrainConfig, mcfg_overrides: dict, out: Path, data_dir: Path | None = None, resume: bool = False,
          resume_lr: float | None = None, device: str | torch.device = "cpu", amp: bool = False) -> Run:
    """Devices, processes, seeds, data, model and optimiser; on ``resume`` the stored ones."""
    device = resolve_device(device)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    par = init_parallel(device)
    if par.world > 1:
        torch.distributed.barrier()  # rank 0 has finished whatever it prepared in --out (--init)
    set_threads(tcfg.threads, par)
    if not par.main:
        log.setLevel(logging.WARNING)
    torch.manual_seed(tcfg.seed)
    out, new_val = Path(out), False
    if resume and (out / "vocab.json").exists():
        tcfg, mcfg, vocab, new_val = _stored_config(tcfg, mcfg_overrides, out)
        _, _, enc_train, enc_dev = prepare(tcfg, {}, data_dir, vocab)
    else:
        vocab, mcfg, enc_train, enc_dev = prepare(tcfg, mcfg_overrides, data_dir)
    model = build_model(mcfg).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=tcfg.lr)
    state = {"epoch": 0, "best": math.inf, "bad": 0, "lr": tcfg.lr, "history": []}
    if resume:
        state = _resume_state(out, model, optimizer, state, new_val, resume_lr)
    log.info("%s %s: %d train / %d dev examples, V=%d, %s on %s x %d process(es), %d thread(s) each",
             tcfg.dataset, tcfg.model, len(enc_train), len(enc_dev), len(vocab), mcfg, device, par.world, torch.get_num_threads())
    return Run(tcfg, vocab, enc_train, enc_dev, Trainer(model, optimizer, device, par, amp, tcfg.clip, tcfg.word_dropout), state, out)


def validate(run: Run, subset: int | None = None) -> dict:
    """Validation NLL per token and E[#seg] vs K on the dev set (its first ``subset`` examples)."""
    t = run.trainer
    return evaluate_loss(t.model, run.enc_dev[:subset], len(run.vocab), run.tcfg.batch_size, t.par)


def train_epoch(run: Run, epoch: int, on_step: Callable[[Step], None] | None = None) -> dict:
    """One pass over the training data at ``state["lr"]``: the epoch's training statistics
    (summed over the processes), its in-epoch validation curve and its time."""
    tcfg, t, par = run.tcfg, run.trainer, run.trainer.par
    torch.manual_seed(tcfg.seed + epoch + 7919 * par.rank)  # dropout: other masks on every process
    for g in t.optimizer.param_groups:
        g["lr"] = run.state["lr"]
    t.model.train()
    t0 = time.perf_counter()
    tot = torch.zeros(6, dtype=torch.float64, device=t.device)  # loss·n, nll, tokens, seg·n, K·n, n
    seen, curve = 0, []  # global examples, counted on the host; in-epoch validation (--val-every)
    for step, b in enumerate(batches(run.enc_train, len(run.vocab), tcfg.batch_size, shuffle=True, seed=tcfg.seed + epoch,
                                     rank=par.rank, world=par.world), 1):
        st = t.step(b)
        n = b.size
        tot[:5] += torch.stack([st["loss"].double() * n, st["nll"].double(), st["tokens"].double(),
                                st["exp_seg"].double() * n, st["K"].double() * n])
        tot[5] += n
        seen += b.global_size or n
        val = None
        if tcfg.val_every and step % tcfg.val_every == 0:
            val = validate(run, tcfg.val_subset)
            curve.append({"step": step, **val})
        if on_step and par.main:
            on_step(Step(epoch, step, b.global_size or n, seen, len(run.enc_train), time.perf_counter() - t0, st, val))
    loss_n, nll, tokens, seg, k, n = par.all_reduce(tot).tolist()
    seconds, n = time.perf_counter() - t0, max(n, 1)
    return {"train_loss": loss_n / n, "train_nll": nll / max(tokens, 1), "train_exp_seg": seg / n, "train_K": k / n,
            "seconds": seconds, "examples": n, "val_curve": curve}


def record_epoch(run: Run, epoch: int, train: dict, val: dict) -> tuple[dict, bool]:
    """The history step: append the epoch's entry (and this stretch's command line), update the
    early-stopping state (lr x ``lr_decay`` when validation loss rises, paper §5) and, on rank 0,
    write the checkpoint (weights only on a new best) and the resume state. Returns the entry and
    whether it is a new best."""
    s, t = run.state, run.trainer
    entry = {"epoch": epoch, "lr": s["lr"], **{k: train[k] for k in ("train_loss", "train_nll", "train_exp_seg", "train_K")},
             **val, "train_seconds": train["seconds"], "examples_per_second": train["examples"] / train["seconds"],
             "val_curve": train["val_curve"]}
    if t.par.world > 1 or t.device.type != "cpu":
        entry.update(processes=t.par.world, device=str(t.device))
    if run.command is not None:  # the first epoch of a stretch holds its command; later ones extend its range
        if not run.command["epochs"]:
            entry["command"] = run.command
        run.command["epochs"] = [run.command["epochs"][0] if run.command["epochs"] else epoch, epoch]
    s["history"].append(entry)
    improved = val["val_nll"] < s["best"]
    if improved:
        s["best"], s["bad"] = val["val_nll"], 0
    else:
        s["bad"] += 1
        s["lr"] *= run.tcfg.lr_decay
    s["epoch"] = epoch
    if t.par.main:
        if improved:
            ckpt.save(run.out, t.model, run.vocab, run.tcfg.dataset, dataclasses.asdict(run.tcfg), s["history"])
        else:
            ckpt.write_history(run.out, s["history"])
        ckpt.save_resume(run.out, t.model, t.optimizer, s)
    return entry, improved


def fit(
    tcfg: TrainConfig,
    mcfg_overrides: dict,
    out: Path,
    data_dir: Path | None = None,
    resume: bool = False,
    on_epoch: Callable[[dict, bool], None] | None = None,
    resume_lr: float | None = None,
    device: str | torch.device = "cpu",
    amp: bool = False,
    on_step: Callable[[Step], None] | None = None,
    command: str | None = None,
    time_limit: float | None = None,
) -> list[dict]:
    """Train until early stopping or ``tcfg.epochs``; returns the history. Prints nothing:
    ``on_step(Step)`` after every update and ``on_epoch(entry, is_new_best)`` after every epoch
    are called on rank 0 (``main`` draws its progress bar and epoch lines with them).

    ``resume_lr`` (``--lr`` given with ``--resume``) replaces the stored learning rate and resets
    the patience counter, e.g. to fine-tune a stopped run at the decayed rate. ``device`` is
    ``auto``, ``cpu`` or ``cuda``; ``amp`` runs the networks in mixed precision on CUDA (the
    dynamic program stays in float32). Under ``torchrun`` this is one process of a
    data-parallel run (see the module docstring). ``command`` (the command line) is recorded in
    history.json on the first epoch this call trains, with the start time and its epoch range.
    ``time_limit`` (seconds) ends the run before an epoch that, as long as the last one, would
    end past it (``--time-limit``: a fixed budget, e.g. a lent GPU, with every epoch saved whole).
    """
    run = setup(tcfg, mcfg_overrides, out, data_dir, resume, resume_lr, device, amp)
    if command is not None:
        run.command = {"line": command, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "epochs": []}
    t0, last = time.perf_counter(), 0.0
    while run.going and not _out_of_time(t0, last, time_limit, run.trainer):
        epoch, t1 = run.state["epoch"] + 1, time.perf_counter()
        train = train_epoch(run, epoch, on_step)
        entry, improved = record_epoch(run, epoch, train, validate(run))
        if on_epoch and run.trainer.par.main:
            on_epoch(entry, improved)
        last = time.perf_counter() - t1
    if run.trainer.par.world > 1:
        torch.distributed.barrier()  # rank 0 has written the last checkpoint
    return run.state["history"]


def _out_of_time(t0: float, last_epoch: float, limit: float | None, trainer: Trainer | None = None) -> bool:
    """Whether another epoch as long as the last one would end more than ``limit`` s after ``t0``
    (with several processes: whether it would for any of them, so that all stop together)."""
    if limit is None or last_epoch == 0.0:
        return False
    over = time.perf_counter() - t0 + last_epoch > limit
    if trainer is not None and trainer.par.world > 1:
        over = bool(trainer.par.all_reduce(torch.tensor([float(over)], device=trainer.device)).item() > 0)
    if over:
        log.info("--time-limit: stopping before another %.0f s epoch", last_epoch)
    return over


def time_steps(tcfg: TrainConfig, mcfg_overrides: dict, data_dir: Path | None, steps: int, device: str | torch.device = "cpu",
               amp: bool = False) -> dict:
    """Throughput of training steps on real batches: examples/s and the projected epoch time."""
    device = resolve_device(device)
    set_threads(tcfg.threads)
    torch.manual_seed(tcfg.seed)
    vocab, mcfg, enc_train, _ = prepare(dataclasses.replace(tcfg, max_val_examples=1), mcfg_overrides, data_dir)
    model = build_model(mcfg).to(device)
    trainer = Trainer(model, torch.optim.Adam(model.parameters(), lr=tcfg.lr), device, amp=amp, clip=tcfg.clip)
    it = batches(enc_train, len(vocab), tcfg.batch_size, shuffle=True, seed=tcfg.seed)
    float(trainer.step(next(it))["loss"])  # warm-up
    n, t0 = 0, time.perf_counter()
    for _ in range(steps):
        b = next(it)
        last = trainer.step(b)
        n += b.size
    float(last["loss"])  # wait for the device
    rate = n / (time.perf_counter() - t0)
    return {"model": tcfg.model, "examples_per_second": rate, "epoch_minutes": len(enc_train) / rate / 60,
            "train_examples": len(enc_train), "threads": torch.get_num_threads(), "device": str(device), "config": mcfg.to_json()}


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m segviz.train", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataset", choices=DATASETS, default="e2e")
    p.add_argument("--model", choices=MODEL_KINDS, default="seg")
    p.add_argument("--data-dir", type=Path, default=None, help="data folder (default $SEGVIZ_DATA or ../shared/data)")
    p.add_argument("--out", type=Path, help="checkpoint directory")
    p.add_argument("--resume", action="store_true", help="continue after the last finished epoch in --out")
    p.add_argument("--init", type=Path, default=None, help="fine-tune: start --out as a copy of this checkpoint, then as --resume")
    p.add_argument("--time-steps", type=int, default=0, help="only time N training steps and print examples/s")
    p.add_argument("--device", choices=DEVICES, default="auto", help="auto: CUDA when present, else the CPU")
    p.add_argument("--time-limit", type=float, default=None, metavar="MIN",
                   help="stop before an epoch that would end more than MIN minutes after the start")
    p.add_argument("--amp", action="store_true", help="mixed precision for the networks on CUDA (the dynamic program stays float32)")
    add_config_args(p, TrainConfig, skip=("dataset", "model"))
    add_config_args(p, ModelConfig, skip=("kind", "vocab_size"))
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    signal.signal(signal.SIGTERM, _interrupt)  # `kill` stops like Ctrl-C: the last epoch stays saved
    tcfg = pick(TrainConfig, args, dataset=args.dataset, model=args.model)
    mover = {f.name: getattr(args, f.name) for f in dataclasses.fields(ModelConfig) if f.name not in ("kind", "vocab_size") and getattr(args, f.name) is not None}
    try:
        if args.time_steps:
            r = time_steps(tcfg, mover, args.data_dir, args.time_steps, args.device, args.amp)
            print(f"{r['model']}: {r['examples_per_second']:.1f} examples/s on {r['device']}, {r['threads']} threads; "
                  f"projected epoch over {r['train_examples']} examples: {r['epoch_minutes']:.1f} min")
            return 0
        if args.out is None:
            p.error("--out is required")
        if args.init and int(os.environ.get("RANK", "0")) == 0:  # under torchrun: rank 0 only
            init_from(args.init, args.out)
        resume = args.resume or args.init is not None
        ignored = [f"--{f.replace('_', '-')}" for f in STORED_ON_RESUME if getattr(args, f, None) is not None]
        if resume and ignored:
            log.warning("on --resume / --init the stored run's training settings stay; ignoring %s", " ".join(ignored))
        stored = args.out / "config.json"  # on --resume the stored run decides the model kind
        con = Console(ckpt._read_json(stored, "config")["model"]["kind"] if resume and stored.exists() else tcfg.model)
        fit(tcfg, mover, args.out, args.data_dir, resume=resume, resume_lr=args.lr if resume else None,
            device=args.device, amp=args.amp, on_step=con.on_step, on_epoch=con.on_epoch,
            command=command_line(sys.argv[1:] if argv is None else argv),
            time_limit=args.time_limit * 60 if args.time_limit else None)
    except (DataError, DeviceError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ckpt.CheckpointError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\ninterrupted; the last finished epoch is saved in {args.out}. Continue with --resume.", file=sys.stderr)
        return 130
    finally:
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
