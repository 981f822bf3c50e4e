"""Training results are fixed by the seed: a few real steps (fresh, ``--resume`` with ``--lr``,
in-epoch validation, a learning-rate decay) give the losses and weights recorded in
tests/data/train_golden.json, which were written by the code before ``fit`` was split into
steps (so a refactoring of the training loop that changes any update fails here).

    python tests/test_train_golden.py   # rewrite the golden file (only on purpose)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))
from conftest import data_available  # noqa: E402

from segviz import checkpoint as ckpt  # noqa: E402
from segviz.train import TrainConfig, fit  # noqa: E402

GOLDEN = Path(__file__).parent / "data" / "train_golden.json"
SMALL = {"hidden": 24, "emb_dim": 12, "max_seg_len": 4}
KEYS = ("epoch", "lr", "train_loss", "train_nll", "train_exp_seg", "train_K", "val_nll", "val_exp_seg", "val_K")


def _weights(path: Path) -> dict[str, list[float]]:
    """Per tensor of the saved best weights: sum and sum of squares (float64)."""
    sd = ckpt.load(path).model.state_dict()
    return {k: [v.double().sum().item(), v.double().square().sum().item()] for k, v in sorted(sd.items())}


def _run(tmp: Path, model: str) -> dict:
    """Epoch 1 fresh (validation every 2 steps), then epochs 2-3 on --resume with another --lr."""
    torch.set_num_threads(1)
    tcfg = TrainConfig(dataset="e2e", model=model, epochs=1, max_examples=48, max_val_examples=16, batch_size=16,
                       threads=1, val_every=2, val_subset=8, patience=5, seed=7)
    fit(tcfg, SMALL, tmp / model)
    hist = fit(TrainConfig(dataset="e2e", model=model, epochs=3, threads=1), {}, tmp / model, resume=True, resume_lr=0.01)
    rows = [{k: e[k] for k in KEYS} | {"val_curve": e["val_curve"]} for e in hist]
    return {"history": rows, "weights": _weights(tmp / model)}


def _close(a, b, rel: float = 1e-5) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], rel) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_close(x, y, rel) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and a != a:
        return b != b
    return a == pytest.approx(b, rel=rel, abs=1e-7)


# A tensor's sum cancels, so float32 kernels of another CPU move it more than the losses: an Intel
# Xeon gives encoder.rnn.weight_hh_l0's sum 1.2e-5 (relative) off the AMD EPYC that wrote the
# golden file, with every loss equal to 1e-8. A changed update moves the sums by far more.
WEIGHTS_REL = 1e-4


@pytest.mark.skipif(not data_available(), reason="needs ../shared/data (set SEGVIZ_DATA)")
@pytest.mark.parametrize("model", ["seg", "pg"])
def test_fit_gives_the_recorded_losses_and_weights(tmp_path: Path, model: str) -> None:
    got = _run(tmp_path, model)
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))[model]
    assert [e["epoch"] for e in got["history"]] == [1, 2, 3]
    assert [len(e["val_curve"]) for e in got["history"]] == [1, 1, 1]  # 3 steps per epoch, every 2nd validated
    for g, w in zip(got["history"], want["history"], strict=True):
        assert _close(g, w), (g, w)
    assert _close(got["weights"], want["weights"], WEIGHTS_REL)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        out = {m: _run(Path(d), m) for m in ("seg", "pg")}
    GOLDEN.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}")
