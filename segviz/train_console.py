"""What ``python -m segviz.train`` prints: :func:`segviz.train.fit` itself prints nothing and
calls back; :class:`Console` turns those calls into a tqdm bar per epoch, the in-epoch validation
lines and one line per finished epoch. Also the command line that history.json records."""

from __future__ import annotations

import shlex
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from segviz.train import Step


def _progress(total: int, desc: str):
    try:
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, unit="ex", dynamic_ncols=True, file=sys.stderr)
    except ImportError:  # pragma: no cover
        return None


def command_line(argv: list[str]) -> str:
    """The command as typed, shell-quoted (what history.json records for each stretch of epochs)."""
    return shlex.join(["python", "-m", "segviz.train", *argv])


class Console:
    """``main``'s view of :func:`fit`: a tqdm bar per epoch (the loss copied to the host only every
    10 steps), the in-epoch validation lines and one line per finished epoch."""

    def __init__(self, kind: str):
        self.kind, self.bar = kind, None

    def _write(self, line: str) -> None:
        (self.bar.write if self.bar is not None else print)(line)

    def on_step(self, s: Step) -> None:
        if s.step == 1:
            self.bar = _progress(s.total, f"epoch {s.epoch}")
        if s.val is not None:
            line = f"  step {s.step}: val nll/token {s.val['val_nll']:.4f}"
            if self.kind == "seg":
                line += f" | E[#seg] {s.val['val_exp_seg']:.2f} vs K {s.val['val_K']:.2f}"
            self._write(line)
        if self.bar is None:
            return
        if s.step % 10 == 1:
            post = {"loss": f"{float(s.stats['loss']):.3f}", "ex/s": f"{s.seen / s.seconds:.0f}"}
            if self.kind == "seg":
                post["E[#seg]"] = f"{float(s.stats['exp_seg']):.2f}"
                post["K"] = f"{float(s.stats['K']):.2f}"
            self.bar.set_postfix(post, refresh=False)
        self.bar.update(s.examples)

    def on_epoch(self, e: dict, improved: bool) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        msg = (f"epoch {e['epoch']}: train loss {e['train_loss']:.4f} nll/token {e['train_nll']:.4f} | "
               f"val nll/token {e['val_nll']:.4f}{' (best)' if improved else ''}")
        if self.kind == "seg":
            msg += f" | E[#seg] {e['val_exp_seg']:.2f} vs K {e['val_K']:.2f}"
        print(msg + f" | {e['examples_per_second']:.0f} ex/s, {e['train_seconds']:.0f} s", flush=True)
