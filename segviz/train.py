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
from segviz.data import DATASETS, Batch, DataError, Vocab, batches, encode, load_split
from segviz.device import DEVICES, DeviceError, resolve_device
from segviz.model import MODEL_KINDS, ModelConfig, build_model

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
    substitute: float = 0.0  # share of training examples with invented names (segviz.augment; 0 = the paper)


RESUME_OVERRIDABLE = ("reg_weight", "reg_gamma", "dropout", "max_seg_len")


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


@dataclass
class Parallel:
    """This process's place in a data-parallel run (``torchrun``); one process: rank 0 of 1."""

    rank: int = 0
    world: int = 1
    local_world: int = 1

    @property
    def main(self) -> bool:
        return self.rank == 0

    def all_reduce(self, t: torch.Tensor) -> torch.Tensor:
        """Sum ``t`` over the processes, in place (nothing to do with one process)."""
        if self.world > 1:
            torch.distributed.all_reduce(t)
        return t


def init_parallel(device: torch.device) -> Parallel:
    """Join the process group that ``torchrun`` describes in the environment (``WORLD_SIZE``,
    ``RANK``, ...): gloo on the CPU, NCCL on CUDA. Without ``torchrun``: one process."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Parallel()
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    return Parallel(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_WORLD_SIZE", world)))


def set_threads(threads: int, par: Parallel | None = None) -> int:
    """``threads`` torch threads, or with 0 all cores of this machine shared evenly among its
    training processes; returns the number set."""
    if not threads:
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover - not Linux
            cores = os.cpu_count() or 1
        threads = max(1, cores // (par.local_world if par else 1))
    torch.set_num_threads(threads)
    return threads


def evaluate_loss(model, encoded, vocab_size: int, batch_size: int = 64, par: Parallel | None = None) -> dict:
    """Validation: per-token NLL (``-log p(y|X)`` summed over examples / tokens) and mean E[#seg].

    With several processes each evaluates its share of ``encoded`` and the sums are combined."""
    par = par or Parallel()
    device = next(model.parameters()).device
    model.eval()
    tot = torch.zeros(5, dtype=torch.float64, device=device)  # nll, tokens, seg·n, K·n, n
    with torch.no_grad():
        for b in batches(encoded[par.rank :: par.world], vocab_size, batch_size, shuffle=False):
            _, st = model.objective(b.to(device))
            n = st["n"]
            tot[:4] += torch.stack([st["nll"].double(), st["tokens"].double(), (st["exp_seg"] * n).double(), (st["K"] * n).double()])
            tot[4] += n
    model.train()
    nll, tokens, seg, k, n = par.all_reduce(tot).tolist()
    return {"val_nll": nll / max(tokens, 1), "val_exp_seg": seg / max(n, 1), "val_K": k / max(n, 1)}


def _progress(total: int, desc: str):
    try:
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, unit="ex", dynamic_ncols=True, file=sys.stderr)
    except ImportError:  # pragma: no cover
        return None


@dataclass
class Trainer:
    """The model, its optimiser and how a step runs: device, mixed precision, data parallelism."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    device: torch.device = torch.device("cpu")
    par: Parallel = dataclasses.field(default_factory=Parallel)
    amp: bool = False
    clip: float = 5.0

    def __post_init__(self):
        self.objective = _Objective(self.model)
        if self.par.world > 1:
            from torch.nn.parallel import DistributedDataParallel

            ids = [self.device.index] if self.device.type == "cuda" else None
            self.objective = DistributedDataParallel(self.objective, device_ids=ids)
        self.amp_dtype = None
        self.scaler = None
        if self.amp:
            if self.device.type != "cuda":
                log.warning("--amp is for CUDA only; training in float32 on %s", self.device)
                self.amp = False
            else:
                self.amp_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
                if self.amp_dtype == torch.float16:
                    self.scaler = torch.amp.GradScaler("cuda")

    def step(self, batch: Batch) -> dict:
        """One update; returns the stats as tensors on the device (nothing copied to the host)."""
        batch = batch.to(self.device, non_blocking=True)
        with torch.autocast(self.device.type, dtype=self.amp_dtype or torch.float32, enabled=self.amp):
            loss, stats = self.objective(batch)
        stats["loss"] = loss.detach()
        if batch.global_size:  # a shard: weight it by its share of the global batch, whose mean
            # DistributedDataParallel's gradient average then gives (examples for seg, tokens for pg)
            local, whole = (batch.size, batch.global_size) if self.model.cfg.kind == "seg" else (batch.tokens, batch.global_tokens)
            loss = loss * (local * self.par.world / whole)
        self.optimizer.zero_grad(set_to_none=True)
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
            self.optimizer.step()
        return stats


class _Objective(torch.nn.Module):
    """``forward(batch) = model.objective(batch)``: what DistributedDataParallel wraps."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, batch: Batch):
        return self.model.objective(batch)


def train_step(model, optimizer, batch: Batch, clip: float) -> dict:
    """One update on the CPU, one process; stats as Python numbers."""
    st = Trainer(model, optimizer, clip=clip).step(batch)
    return {k: (int(v) if k in ("tokens", "n") else float(v)) for k, v in st.items()}


def clean_examples(dataset: str, examples: list) -> list:
    """Examples whose reference the automatic checker (:mod:`segviz.faithfulness`) finds with no
    missing, repeated, wrong or hallucinated record: training-data cleaning in the manner of
    Dušek et al. (2019), whose cleaned E2E data cut omissions without hurting fluency."""
    kept = [e for e in examples if faithfulness.check(dataset, e.records, " ".join(e.target)).errors == 0]
    log.info("--clean: kept %d of %d %s examples", len(kept), len(examples), dataset)
    return kept


def prepare(tcfg: TrainConfig, mcfg_overrides: dict, data_dir: Path | None, vocab: Vocab | None = None):
    """Load the splits, build (or reuse) the vocabulary and encode every example."""
    train = load_split(tcfg.dataset, "train", data_dir)[: tcfg.max_examples or None]
    dev = load_split(tcfg.dataset, "dev", data_dir)[: tcfg.max_val_examples or None]
    if tcfg.clean:
        train, dev = clean_examples(tcfg.dataset, train), clean_examples(tcfg.dataset, dev)
    vocab = vocab or Vocab.build(train, min_freq=tcfg.min_freq)
    train = augment.substitute_values(tcfg.dataset, train, tcfg.substitute, tcfg.seed)  # after the vocabulary
    mcfg = ModelConfig(**{**mcfg_overrides, "kind": tcfg.model, "vocab_size": len(vocab)})
    enc_train = [encode(vocab, e.records, e.target) for e in train]
    enc_dev = [encode(vocab, e.records, e.target) for e in dev]
    return vocab, mcfg, enc_train, enc_dev


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


def fit(
    tcfg: TrainConfig,
    mcfg_overrides: dict,
    out: Path,
    data_dir: Path | None = None,
    resume: bool = False,
    on_epoch: Callable[[dict], None] | None = None,
    resume_lr: float | None = None,
    device: str | torch.device = "cpu",
    amp: bool = False,
) -> list[dict]:
    """Train until early stopping or ``tcfg.epochs``; returns the history.

    ``resume_lr`` (``--lr`` given with ``--resume``) replaces the stored learning rate and resets
    the patience counter, e.g. to fine-tune a stopped run at the decayed rate. ``device`` is
    ``auto``, ``cpu`` or ``cuda``; ``amp`` runs the networks in mixed precision on CUDA (the
    dynamic program stays in float32). Under ``torchrun`` this is one process of a
    data-parallel run (see the module docstring).
    """
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
    out = Path(out)
    was_clean = False
    if resume and (out / "vocab.json").exists():
        vocab = Vocab.from_json(ckpt._read_json(out / "vocab.json", "vocabulary"))
        stored = ckpt._read_json(out / "config.json", "config")
        # loss and regularisation settings may change on resume; sizes may not (the weights fix them)
        changeable = {k: v for k, v in mcfg_overrides.items() if k in RESUME_OVERRIDABLE}
        ignored = sorted(set(mcfg_overrides) - set(changeable))
        if ignored:
            log.warning("on --resume the stored sizes are kept; ignoring %s", ignored)
        mcfg = ModelConfig.from_json({**stored["model"], **changeable})
        was_clean = stored["train"].get("clean", False)
        tcfg = TrainConfig(**{**stored["train"], "epochs": tcfg.epochs, "clean": tcfg.clean or was_clean,
                              "substitute": tcfg.substitute})
        _, _, enc_train, enc_dev = prepare(tcfg, {}, data_dir, vocab)
    else:
        vocab, mcfg, enc_train, enc_dev = prepare(tcfg, mcfg_overrides, data_dir)
    model = build_model(mcfg).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=tcfg.lr)
    state = {"epoch": 0, "best": math.inf, "bad": 0, "lr": tcfg.lr, "history": []}
    if resume:
        loaded = ckpt.load_resume(out, model, optimizer)
        if loaded is None:
            log.info("nothing to resume in %s; starting fresh", out)
        else:
            state = loaded
            log.info("resuming %s after epoch %d", out, state["epoch"])
            if tcfg.clean and not was_clean:  # another validation set: its losses start afresh
                log.info("--clean from epoch %d on: best validation loss reset", state["epoch"] + 1)
                state["best"], state["bad"] = math.inf, 0
            if resume_lr is not None:
                log.info("learning rate %g -> %g (--lr on --resume)", state["lr"], resume_lr)
                state["lr"], state["bad"] = resume_lr, 0
    trainer = Trainer(model, optimizer, device, par, amp, tcfg.clip)
    train_cfg = dataclasses.asdict(tcfg)
    V = len(vocab)
    log.info("%s %s: %d train / %d dev examples, V=%d, %s on %s x %d process(es), %d thread(s) each",
             tcfg.dataset, tcfg.model, len(enc_train), len(enc_dev), V, mcfg, device, par.world, torch.get_num_threads())
    history = state["history"]
    say = print if par.main else (lambda *a, **k: None)
    while state["epoch"] < tcfg.epochs and state["lr"] >= tcfg.min_lr and state["bad"] < tcfg.patience:
        epoch = state["epoch"] + 1
        torch.manual_seed(tcfg.seed + epoch + 7919 * par.rank)  # dropout: other masks on every process
        for g in optimizer.param_groups:
            g["lr"] = state["lr"]
        model.train()
        t0 = time.perf_counter()
        bar = _progress(len(enc_train), f"epoch {epoch}") if par.main else None
        tot = torch.zeros(6, dtype=torch.float64, device=device)  # loss·n, nll, tokens, seg·n, K·n, n
        seen = 0  # global examples, counted on the host
        curve = []  # in-epoch validation on a dev subset (--val-every)
        for step, b in enumerate(batches(enc_train, V, tcfg.batch_size, shuffle=True, seed=tcfg.seed + epoch,
                                         rank=par.rank, world=par.world), 1):
            st = trainer.step(b)
            n = b.size
            tot[:5] += torch.stack([st["loss"].double() * n, st["nll"].double(), st["tokens"].double(),
                                    st["exp_seg"].double() * n, st["K"].double() * n])
            tot[5] += n
            seen += b.global_size or n
            if tcfg.val_every and step % tcfg.val_every == 0:
                v = evaluate_loss(model, enc_dev[: tcfg.val_subset], V, tcfg.batch_size, par)
                curve.append({"step": step, **v})
                line = f"  step {step}: val nll/token {v['val_nll']:.4f}"
                if tcfg.model == "seg":
                    line += f" | E[#seg] {v['val_exp_seg']:.2f} vs K {v['val_K']:.2f}"
                if par.main:
                    (bar.write if bar is not None else print)(line)
            if bar is not None:
                if step % 10 == 1:  # the loss shown is copied to the host only every 10 steps
                    post = {"loss": f"{float(st['loss']):.3f}", "ex/s": f"{seen / (time.perf_counter() - t0):.0f}"}
                    if tcfg.model == "seg":
                        post["E[#seg]"] = f"{float(st['exp_seg']):.2f}"
                        post["K"] = f"{float(st['K']):.2f}"
                    bar.set_postfix(post, refresh=False)
                bar.update(b.global_size or n)
        if bar is not None:
            bar.close()
        loss_n, nll, tokens, seg, k, n = par.all_reduce(tot).tolist()
        train_time = time.perf_counter() - t0
        val = evaluate_loss(model, enc_dev, V, tcfg.batch_size, par)
        n = max(n, 1)
        entry = {
            "epoch": epoch,
            "lr": state["lr"],
            "train_loss": loss_n / n,
            "train_nll": nll / max(tokens, 1),
            "train_exp_seg": seg / n,
            "train_K": k / n,
            **val,
            "train_seconds": train_time,
            "examples_per_second": n / train_time,
            "val_curve": curve,
        }
        if par.world > 1 or device.type != "cpu":
            entry.update(processes=par.world, device=str(device))
        history.append(entry)
        improved = val["val_nll"] < state["best"]
        if improved:
            state["best"], state["bad"] = val["val_nll"], 0
        else:
            state["bad"] += 1
            state["lr"] *= tcfg.lr_decay  # paper: decay by an order of magnitude when val loss rises
        state["epoch"] = epoch
        if par.main:
            if improved:
                ckpt.save(out, model, vocab, tcfg.dataset, train_cfg, history)
            else:
                ckpt.write_history(out, history)
            ckpt.save_resume(out, model, optimizer, state)
        msg = (
            f"epoch {epoch}: train loss {entry['train_loss']:.4f} nll/token {entry['train_nll']:.4f} | "
            f"val nll/token {val['val_nll']:.4f}{' (best)' if improved else ''}"
        )
        if tcfg.model == "seg":
            msg += f" | E[#seg] {val['val_exp_seg']:.2f} vs K {val['val_K']:.2f}"
        msg += f" | {entry['examples_per_second']:.0f} ex/s, {train_time:.0f} s"
        say(msg, flush=True)
        if on_epoch and par.main:
            on_epoch(entry)
    if par.world > 1:
        torch.distributed.barrier()  # rank 0 has written the last checkpoint
    return history


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
        fit(tcfg, mover, args.out, args.data_dir, resume=resume, resume_lr=args.lr if resume else None,
            device=args.device, amp=args.amp)
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
