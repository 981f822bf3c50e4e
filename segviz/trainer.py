"""One training update and what surrounds it (paper §5): the :class:`Trainer` (device, mixed
precision, gradient clipping, DistributedDataParallel), this process's place in a data-parallel
run (:class:`Parallel`, ``torchrun``), torch threads, and the validation loss. The epoch loop and
the CLI are in :mod:`segviz.train`, which re-exports these names."""

from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass

import torch

from segviz.data import BOS_ID, PAD_ID, UNK_ID, Batch, batches

log = logging.getLogger(__name__)


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


@dataclass
class Trainer:
    """The model, its optimiser and how a step runs: device, mixed precision, data parallelism."""

    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    device: torch.device = torch.device("cpu")
    par: Parallel = dataclasses.field(default_factory=Parallel)
    amp: bool = False
    clip: float = 5.0
    word_dropout: float = 0.0  # share of decoder input words replaced by <unk> (TrainConfig.word_dropout)

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
        batch = drop_words(batch.to(self.device, non_blocking=True), self.word_dropout)
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


def drop_words(batch: Batch, p: float) -> Batch:
    """``batch`` with each decoder input word (``tgt_in`` (B, T), not ``<bos>`` or padding)
    replaced by ``<unk>`` with probability ``p``, so that the next word is read off the records
    rather than the words before it (word dropout, Bowman et al. 2016; the targets stay)."""
    if p <= 0:
        return batch
    words = (batch.tgt_in != PAD_ID) & (batch.tgt_in != BOS_ID)  # (B, T)
    drop = words & (torch.rand(batch.tgt_in.shape, device=batch.tgt_in.device) < p)
    return dataclasses.replace(batch, tgt_in=batch.tgt_in.masked_fill(drop, UNK_ID))


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
