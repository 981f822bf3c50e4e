"""Data-parallel training: ``torchrun --nproc_per_node 2`` (two CPU processes, gloo) gives the
weights of one process trained on the same global batches, and ``--resume`` continues it."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest
import torch
from conftest import MRS, ROOT
from safetensors.torch import load_file

from segviz.model import ModelConfig, build_model
from segviz.train import TrainConfig, fit

SIZES = {"hidden": 16, "emb_dim": 8, "dropout": 0.0, "max_seg_len": 4}


def _tiny_data(folder):
    (folder / "e2e").mkdir(parents=True)
    rows = MRS * 3  # 24 examples: 6 global batches of 4, 2 examples per process
    for split, part in (("train", rows), ("dev", MRS)):
        with open(folder / "e2e" / f"{split}.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["mr", "ref"])
            w.writerows(part)
    return folder


def _torchrun(args, tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", "segviz.train", *args]
    r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r


@pytest.mark.parametrize("kind", ["seg", "pg"])
def test_two_gloo_processes_equal_one_process(tmp_path, kind):
    data = _tiny_data(tmp_path / "data")
    tcfg = TrainConfig(dataset="e2e", model=kind, epochs=2, batch_size=4, lr=1e-2, min_freq=1, threads=1, seed=7)
    fit(tcfg, SIZES, tmp_path / "one", data, device="cpu")
    common = ["--dataset", "e2e", "--model", kind, "--data-dir", str(data), "--out", str(tmp_path / "two"),
              "--batch-size", "4", "--lr", "0.01", "--min-freq", "1", "--threads", "1", "--seed", "7", "--device", "cpu"]
    sizes = ["--hidden", "16", "--emb-dim", "8", "--dropout", "0", "--max-seg-len", "4"]
    r = _torchrun([*common, *sizes, "--epochs", "1"], tmp_path)
    assert r.stdout.count("epoch 1:") == 1  # only rank 0 reports
    _torchrun([*common, "--epochs", "2", "--resume"], tmp_path)  # epoch 2 after a restart
    one = load_file(str(tmp_path / "one" / "last" / "model.safetensors"))
    two = load_file(str(tmp_path / "two" / "last" / "model.safetensors"))
    assert one.keys() == two.keys()
    for k in one:
        assert torch.allclose(one[k], two[k], atol=1e-5, rtol=0), (k, (one[k] - two[k]).abs().max().item())
    # two epochs were trained, and the weights moved away from the (seeded) initial ones
    assert [e["epoch"] for e in json.loads((tmp_path / "two" / "history.json").read_text())] == [1, 2]
    cfg = json.loads((tmp_path / "two" / "config.json").read_text())["model"]
    torch.manual_seed(7)
    init = build_model(ModelConfig.from_json(cfg)).state_dict()
    assert max((init[k] - two[k]).abs().max().item() for k in two) > 1e-3


def test_shards_partition_each_global_batch(vocab, examples):
    from segviz.data import batch_indices, batches, encode

    enc = [encode(vocab, e.records, e.target) for e in examples * 3]
    groups = batch_indices(enc, 5, shuffle=True, seed=3)
    shards = [list(batches(enc, len(vocab), 5, shuffle=True, seed=3, rank=r, world=2)) for r in range(2)]
    kept = [g for g in groups if len(g) >= 2]
    assert len(shards[0]) == len(shards[1]) == len(kept)  # the same number of steps everywhere
    for g, a, b in zip(kept, *shards, strict=True):
        assert a.global_size == b.global_size == len(g)
        assert a.global_tokens == sum(len(enc[i].tgt) for i in g) and a.tokens + b.tokens == a.global_tokens
        assert sorted(map(id, a.encoded + b.encoded)) == sorted(id(enc[i]) for i in g)


def test_time_steps_cli(tmp_path, capsys):
    from segviz.train import main

    data = _tiny_data(tmp_path / "data")
    args = ["--dataset", "e2e", "--model", "seg", "--data-dir", str(data), "--time-steps", "2", "--batch-size", "4",
            "--min-freq", "1", "--threads", "1", "--device", "cpu", "--hidden", "16", "--emb-dim", "8"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "examples/s on cpu, 1 threads" in out and "projected epoch over 24 examples" in out
