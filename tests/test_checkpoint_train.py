"""Checkpoints (save -> load -> identical outputs; corrupted and foreign files) and training."""

from __future__ import annotations

import json
import math
import pickle

import pytest
import torch
from conftest import data_available, make_model

from segviz import checkpoint as ckpt
from segviz.data import DataError, Vocab, batches, collate, encode, load_split
from segviz.decode import generate_pg, generate_seg
from segviz.train import TrainConfig, fit, main


@pytest.mark.parametrize("kind", ["seg", "pg"])
def test_save_load_gives_identical_outputs(tmp_path, vocab, examples, kind):
    model = make_model(kind, vocab)
    ckpt.save(tmp_path / kind, model, vocab, "e2e", {"lr": 0.1}, [{"epoch": 1, "val_nll": 2.0}])
    loaded = ckpt.load(tmp_path / kind)
    assert loaded.vocab == vocab and loaded.history == [{"epoch": 1, "val_nll": 2.0}]
    assert loaded.model_config == model.cfg and loaded.dataset == "e2e"
    batch = collate([encode(vocab, e.records, e.target) for e in examples], len(vocab))
    with torch.no_grad():
        assert torch.equal(model.loss(batch)[0], loaded.model.loss(batch)[0])
    recs = examples[2].records
    if kind == "seg":
        a, b = generate_seg(model, vocab, recs, "rm", 2, max_len=15), generate_seg(loaded.model, vocab, recs, "rm", 2, max_len=15)
    else:
        a, b = generate_pg(model, vocab, recs, 2, max_len=15), generate_pg(loaded.model, vocab, recs, 2, max_len=15)
    assert a.tokens == b.tokens and a.segments == b.segments


def test_corrupted_and_foreign_files_raise_clear_errors(tmp_path, vocab):
    model = make_model("seg", vocab)
    ckpt.save(tmp_path / "c", model, vocab, "e2e")
    with pytest.raises(ckpt.CheckpointError, match="not found"):
        ckpt.load(tmp_path / "nope")
    # truncated weights
    w = tmp_path / "c" / "model.safetensors"
    data = w.read_bytes()
    w.write_bytes(data[: len(data) // 2])
    with pytest.raises(ckpt.CheckpointError, match="not a readable safetensors"):
        ckpt.load(tmp_path / "c")
    # a pickle in its place is never unpickled
    w.write_bytes(pickle.dumps({"x": torch.zeros(2)}))
    with pytest.raises(ckpt.CheckpointError, match="not a readable safetensors"):
        ckpt.load(tmp_path / "c")
    # broken JSON / a foreign config / a vocabulary that does not fit
    ckpt.save(tmp_path / "d", model, vocab, "e2e")
    (tmp_path / "d" / "config.json").write_text("{not json")
    with pytest.raises(ckpt.CheckpointError, match="corrupted config"):
        ckpt.load(tmp_path / "d")
    (tmp_path / "d" / "config.json").write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(ckpt.CheckpointError, match="not a segviz-checkpoint"):
        ckpt.load(tmp_path / "d")
    ckpt.save(tmp_path / "e", model, vocab, "e2e")
    (tmp_path / "e" / "vocab.json").write_text(json.dumps(vocab.to_json()[:-1]))
    with pytest.raises(ckpt.CheckpointError, match="vocabulary has"):
        ckpt.load(tmp_path / "e")
    # weights of another size
    ckpt.save(tmp_path / "f", make_model("seg", Vocab(["a", "b"])), Vocab(["a", "b"]), "e2e")
    (tmp_path / "f" / "model.safetensors").write_bytes((tmp_path / "e" / "model.safetensors").read_bytes())
    with pytest.raises(ckpt.CheckpointError, match="shape"):
        ckpt.load(tmp_path / "f")


def test_batches_are_padded_with_lengths_and_masks(vocab, examples):
    enc = [encode(vocab, e.records, e.target) for e in examples]
    bs = list(batches(enc, len(vocab), batch_size=3, shuffle=True, seed=1))
    assert sum(b.size for b in bs) == 8
    again = list(batches(enc, len(vocab), batch_size=3, shuffle=True, seed=1))
    assert [b.tgt.tolist() for b in bs] == [b.tgt.tolist() for b in again]  # deterministic
    b = collate(enc[:2], len(vocab))
    assert b.rec_mask.tolist()[1] == [True] * 4 + [False] * 5  # 3 records + null, padded to 9 states
    assert b.tgt_len.tolist() == [len(examples[0].target) + 1, len(examples[1].target) + 1]
    e1 = enc[1]
    assert e1.tgt[-1] == 3 and e1.tgt[0] >= len(vocab)  # <eos>; "alimentum" copied via extended id
    assert b.tgt_in[1, 0].item() == 2 and b.tgt_in[1, 1].item() == 1  # <bos>, then <unk> for the OOV word


def test_missing_data_says_where_to_get_it(tmp_path):
    with pytest.raises(DataError, match="e2e-dataset"):
        load_split("e2e", "train", tmp_path)
    assert main(["--dataset", "e2e", "--data-dir", str(tmp_path), "--out", str(tmp_path / "o")]) == 2


@pytest.mark.skipif(not data_available(), reason="needs ../shared/data (set SEGVIZ_DATA)")
def test_fit_checkpoints_every_epoch_and_resumes(tmp_path):
    tcfg = TrainConfig(dataset="e2e", model="seg", epochs=1, max_examples=64, max_val_examples=32, batch_size=32, threads=1)
    small = {"hidden": 32, "emb_dim": 16, "max_seg_len": 4}
    h1 = fit(tcfg, small, tmp_path / "run")
    assert len(h1) == 1 and (tmp_path / "run" / "last" / "state.json").exists()
    assert {"val_nll", "train_exp_seg", "train_K", "train_seconds"} <= set(h1[0])
    # resume continues after epoch 1 with the stored config, optimizer and history
    h2 = fit(TrainConfig(dataset="e2e", model="seg", epochs=2, threads=1), {}, tmp_path / "run", resume=True)
    assert [e["epoch"] for e in h2] == [1, 2]
    c = ckpt.load(tmp_path / "run")
    assert c.model_config.hidden == 32 and [e["epoch"] for e in c.history] == [1, 2]


def test_clean_examples_keeps_only_complete_references():
    from segviz.data import Example
    from segviz.records import parse_e2e_mr, tokenize
    from segviz.train import add_config_args, clean_examples

    recs = parse_e2e_mr("name[Aromi], eatType[pub], area[riverside]")
    texts = ["Aromi is a pub in the riverside area.",  # complete
             "Aromi is a pub.",  # area missing
             "Aromi is a pub in the riverside area near Burger King."]  # near hallucinated
    exs = [Example("mr", recs, tokenize(t)) for t in texts]
    assert [e.target for e in clean_examples("e2e", exs)] == [tokenize(texts[0])]
    import argparse

    p = argparse.ArgumentParser()
    add_config_args(p, TrainConfig)
    assert p.parse_args([]).clean is None and p.parse_args(["--clean"]).clean is True


def test_clean_list_keeps_the_references_it_names_whatever_the_checker_says_now(tmp_path):
    """``--clean-list``: a recipe step replays on the references a past checker kept; a list of
    another dataset, or naming a reference that is not there, is refused with a clear error."""
    from segviz.data import Example
    from segviz.records import parse_e2e_mr, tokenize
    from segviz.train import clean_examples, read_clean_list

    recs = parse_e2e_mr("name[Aromi], eatType[pub], area[riverside]")
    exs = [Example("mr", recs, tokenize(t)) for t in ("Aromi is a pub in the riverside area.", "Aromi is a pub.")]
    assert [e.target for e in clean_examples("e2e", exs, [1])] == [tokenize("Aromi is a pub.")]  # not the checker's pick
    assert clean_examples("e2e", exs, []) == []
    with pytest.raises(DataError, match="distinct references among the 2 e2e examples"):
        clean_examples("e2e", exs, [2])
    with pytest.raises(DataError, match="distinct references"):
        clean_examples("e2e", exs, [0, 0])
    with pytest.raises(DataError, match="distinct references"):
        clean_examples("e2e", exs, [True])
    f = tmp_path / "keep.json"
    f.write_text(json.dumps({"dataset": "e2e", "val_half": "tune", "train": [0], "dev": [1, 3]}))
    assert read_clean_list(str(f), "e2e", "tune") == {"train": [0], "dev": [1, 3]}
    with pytest.raises(DataError, match="not a webnlg list"):
        read_clean_list(str(f), "webnlg", "tune")
    with pytest.raises(DataError, match="of --val-half tune, not all"):
        read_clean_list(str(f), "e2e", "all")
    f.write_text("{not json")
    with pytest.raises(DataError, match="cannot read it as JSON"):
        read_clean_list(str(f), "e2e", "tune")


def test_the_shipped_webnlg_clean_list_is_the_one_the_fine_tune_read():
    """scripts/webnlg-clean-s11.json names the 15,415 training and 947 validation (tune half)
    references that session 11's checker kept and the WebNLG exact-reference fine-tune read
    (checkpoints/webnlg-seg history: "kept 15415 of 18102")."""
    from conftest import ROOT

    data = json.loads((ROOT / "scripts" / "webnlg-clean-s11.json").read_text(encoding="utf-8"))
    assert data["dataset"] == "webnlg" and data["val_half"] == "tune"
    assert (len(data["train"]), len(data["dev"])) == (15415, 947)
    assert data["train"] == sorted(set(data["train"])) and 0 <= data["train"][0] and data["train"][-1] < 18102


def test_average_is_the_mean_of_the_weights(tmp_path, vocab, examples):
    from segviz.average import average
    from segviz.average import main as average_main

    for i in range(2):
        ckpt.save(tmp_path / f"c{i}", make_model("seg", vocab, seed=i), vocab, "e2e", {}, [])
    avg = average([tmp_path / "c0", tmp_path / "c1"])
    a, b = (ckpt.load(tmp_path / f"c{i}").model.state_dict() for i in range(2))
    for k, v in avg.model.state_dict().items():
        assert torch.allclose(v, (a[k] + b[k]) / 2)
    assert average_main(["--checkpoints", str(tmp_path / "c0"), str(tmp_path / "c1"), "--out", str(tmp_path / "avg")]) == 0
    assert torch.allclose(ckpt.load(tmp_path / "avg").model.state_dict()["out_d.weight"], (a["out_d.weight"] + b["out_d.weight"]) / 2)
    ckpt.save(tmp_path / "pg", make_model("pg", vocab), vocab, "e2e", {}, [])
    assert average_main(["--checkpoints", str(tmp_path / "c0"), str(tmp_path / "pg"), "--out", str(tmp_path / "bad")]) == 2


@pytest.mark.skipif(not data_available(), reason="needs ../shared/data (set SEGVIZ_DATA)")
def test_main_prints_fit_does_not_and_history_records_each_command(tmp_path, capsys):
    small = ["--max-examples", "32", "--max-val-examples", "16", "--batch-size", "16", "--threads", "1",
             "--hidden", "16", "--emb-dim", "8", "--max-seg-len", "4"]
    first = ["--dataset", "e2e", "--out", str(tmp_path / "a"), "--epochs", "1", "--val-every", "1", "--val-subset", "4", *small]
    assert main(first) == 0
    out = capsys.readouterr().out
    assert out.count("epoch 1: train loss") == 1 and out.count("  step 1: val nll/token") == 1  # 2 steps, both validated
    assert out.count("  step 2: val nll/token") == 1 and "E[#seg]" in out
    again = ["--dataset", "e2e", "--out", str(tmp_path / "a"), "--resume", "--epochs", "3", "--lr", "0.001"]
    assert main(again) == 0
    assert [ln.split(":")[0] for ln in capsys.readouterr().out.splitlines() if ln.startswith("epoch")] == ["epoch 2", "epoch 3"]
    hist = ckpt.load(tmp_path / "a").history
    cmds = ckpt.commands(hist)
    assert [c["line"] for c in cmds] == ["python -m segviz.train " + " ".join(first), "python -m segviz.train " + " ".join(again)]
    assert [c["epochs"] for c in cmds] == [[1, 1], [2, 3]]
    assert "command" in hist[0] and "command" in hist[1] and "command" not in hist[2]
    assert all(c["started"].endswith("Z") and c["started"][:2] == "20" for c in cmds)
    # --init copies the history: the source's commands come first, then the fine-tuning command
    tune = ["--dataset", "e2e", "--out", str(tmp_path / "b b"), "--init", str(tmp_path / "a"), "--epochs", "4"]
    assert main(tune) == 0
    cmds_b = ckpt.commands(ckpt.load(tmp_path / "b b").history)
    assert [c["epochs"] for c in cmds_b] == [[1, 1], [2, 3], [4, 4]]
    assert cmds_b[2]["line"].endswith(f"--out '{tmp_path}/b b' --init {tmp_path}/a --epochs 4")  # shell-quoted
    # fit itself prints nothing (its callbacks are main's)
    capsys.readouterr()
    fit(TrainConfig(dataset="e2e", model="pg", epochs=1, max_examples=16, max_val_examples=8, threads=1), {"hidden": 8, "emb_dim": 8},
        tmp_path / "quiet")
    assert capsys.readouterr().out == ""


@pytest.mark.skipif(not data_available(), reason="needs ../shared/data (set SEGVIZ_DATA)")
def test_val_half_keeps_only_that_half_of_dev_and_bad_values_are_refused():
    from segviz.records import half_of
    from segviz.train import prepare

    tcfg = TrainConfig(dataset="e2e", max_examples=16, val_half="tune")
    _, _, _, dev = prepare(tcfg, {}, None)
    full = load_split("e2e", "dev", None)
    assert len(dev) == sum(half_of(e.records) == "tune" for e in full) and 0 < len(dev) < len(full)
    with pytest.raises(DataError, match="--val-half"):
        prepare(TrainConfig(dataset="e2e", max_examples=16, val_half="test"), {}, None)


@pytest.mark.skipif(not data_available(), reason="needs ../shared/data (set SEGVIZ_DATA)")
def test_resume_takes_a_val_half_given_and_resets_the_best_loss(tmp_path):
    from segviz.train import _resume_state, _stored_config

    small = {"hidden": 16, "emb_dim": 8, "max_seg_len": 4}
    fit(TrainConfig(dataset="e2e", model="pg", epochs=1, max_examples=16, max_val_examples=8, threads=1), small, tmp_path / "r")
    kept = _stored_config(TrainConfig(dataset="e2e", epochs=2), {}, tmp_path / "r")
    assert kept[0].val_half == "all" and kept[3] is False  # nothing given: the stored validation set
    tcfg, _, _, new_val = _stored_config(TrainConfig(dataset="e2e", epochs=2, val_half="tune"), {}, tmp_path / "r")
    assert tcfg.val_half == "tune" and new_val is True and tcfg.max_examples == 16
    # --max-examples / --max-val-examples given on --resume / --init replace the stored ones (0 keeps)
    fewer, _, _, changed = _stored_config(TrainConfig(dataset="e2e", epochs=2, max_examples=8, max_val_examples=4), {}, tmp_path / "r")
    assert (fewer.max_examples, fewer.max_val_examples, changed) == (8, 4, True)
    same, _, _, changed = _stored_config(TrainConfig(dataset="e2e", epochs=2, max_examples=8), {}, tmp_path / "r")
    assert (same.max_examples, same.max_val_examples, changed) == (8, 8, False)
    val, _, _, changed = _stored_config(TrainConfig(dataset="e2e", epochs=2, max_val_examples=4), {}, tmp_path / "r")
    assert (val.max_examples, val.max_val_examples, changed) == (16, 4, True)
    model = ckpt.load(tmp_path / "r").model
    opt = torch.optim.Adam(model.parameters())
    assert math.isfinite(_resume_state(tmp_path / "r", model, opt, {}, False, None)["best"])
    assert _resume_state(tmp_path / "r", model, opt, {}, True, None)["best"] == math.inf
    fit(TrainConfig(dataset="e2e", model="pg", epochs=2, threads=1, val_half="tune"), {}, tmp_path / "r", resume=True)
    assert json.loads((tmp_path / "r" / "config.json").read_text())["train"]["val_half"] == "tune"
    # a --clean-list given on --resume / --init is kept and resets the best loss (another validation set)
    listed, _, _, changed = _stored_config(TrainConfig(dataset="e2e", epochs=2, clean=True, clean_list="k.json"), {}, tmp_path / "r")
    assert (listed.clean, listed.clean_list, changed) == (True, "k.json", True)


def test_prepare_trains_on_the_references_a_clean_list_names(tmp_path, caplog):
    """``--clean --clean-list``: prepare keeps exactly the listed training and validation
    references; ``--seed`` given with ``--resume`` is named as ignored (the stored run's stays)."""
    from segviz.train import main, prepare

    f = tmp_path / "keep.json"
    f.write_text(json.dumps({"dataset": "e2e", "val_half": "all", "train": [0, 2, 5], "dev": [1]}))
    tcfg = TrainConfig(dataset="e2e", model="pg", max_examples=16, max_val_examples=8, clean=True, clean_list=str(f))
    _, _, enc_train, enc_dev = prepare(tcfg, {"hidden": 16, "emb_dim": 8}, None)
    everything = prepare(TrainConfig(dataset="e2e", model="pg", max_examples=16, max_val_examples=8), {"hidden": 16, "emb_dim": 8}, None)
    assert len(enc_train) == 3 and len(enc_dev) == 1
    shape = lambda e: (e.src_rec, len(e.tgt))  # noqa: E731 - the vocabularies differ (built from what is kept)
    assert [shape(e) for e in enc_train] == [shape(everything[2][i]) for i in (0, 2, 5)]
    with pytest.raises(DataError, match="give --clean too"):
        prepare(TrainConfig(dataset="e2e", model="pg", max_examples=16, clean_list=str(f)), {}, None)
    small = ["--dataset", "e2e", "--model", "pg", "--hidden", "16", "--emb-dim", "8", "--max-examples", "16", "--max-val-examples", "8", "--threads", "1"]
    assert main([*small, "--out", str(tmp_path / "r"), "--epochs", "1"]) == 0
    assert main([*small, "--out", str(tmp_path / "r"), "--resume", "--epochs", "1", "--seed", "7"]) == 0
    assert "ignoring --seed" in caplog.text


def test_time_limit_stops_before_an_epoch_that_would_overrun(monkeypatch):
    from segviz import train

    clock = iter([100.0, 130.0])
    monkeypatch.setattr(train.time, "perf_counter", lambda: next(clock))
    assert train._out_of_time(0.0, 0.0, 60.0) is False  # no epoch yet: always go
    assert train._out_of_time(70.0, 20.0, 60.0) is False  # 30 s in + 20 s epoch < 60 s
    assert train._out_of_time(70.0, 20.0, 60.0) is True  # 60 s in + 20 s epoch > 60 s
    assert train._out_of_time(70.0, 20.0, None) is False


def test_pack_round_trip_halves_the_weights_and_refuses_foreign_tars(tmp_path, vocab):
    import tarfile

    from segviz.pack import main as pack_main

    model = make_model("seg", vocab)
    ckpt.save(tmp_path / "c", model, vocab, "e2e", {"lr": 0.1}, [{"epoch": 1, "val_nll": 2.0}])
    assert pack_main([str(tmp_path / "c"), str(tmp_path / "c.tar")]) == 0
    assert pack_main(["--unpack", str(tmp_path / "c.tar"), str(tmp_path / "d")]) == 0
    a, b = ckpt.load(tmp_path / "c"), ckpt.load(tmp_path / "d")
    for (k, x), y in zip(a.model.state_dict().items(), b.model.state_dict().values(), strict=False):
        assert y.dtype == x.dtype and torch.allclose(x, y, rtol=1e-3, atol=1e-4), k
    assert b.history == a.history and b.vocab.to_json() == a.vocab.to_json()
    assert pack_main(["--unpack", str(tmp_path / "c.tar"), str(tmp_path / "d")]) == 2  # never over a folder
    with tarfile.open(tmp_path / "x.tar", "w") as t:
        t.add(tmp_path / "c" / "config.json", arcname="../config.json")
    assert pack_main(["--unpack", str(tmp_path / "x.tar"), str(tmp_path / "e")]) == 2
    assert not (tmp_path / "e").exists() and not (tmp_path / "config.json").exists()


def test_word_dropout_replaces_decoder_inputs_only(vocab, examples):
    from segviz.data import BOS_ID, PAD_ID, UNK_ID
    from segviz.trainer import drop_words

    batch = collate([encode(vocab, e.records, e.target) for e in examples], len(vocab))
    assert drop_words(batch, 0.0) is batch  # the paper: no change
    torch.manual_seed(0)
    dropped = drop_words(batch, 0.5)
    changed = dropped.tgt_in != batch.tgt_in
    assert (dropped.tgt_in[changed] == UNK_ID).all() and torch.equal(dropped.tgt, batch.tgt)
    assert (dropped.tgt_in[:, 0] == BOS_ID).all() and torch.equal(dropped.tgt_in == PAD_ID, batch.tgt_in == PAD_ID)
    words = (batch.tgt_in != PAD_ID) & (batch.tgt_in != BOS_ID) & (batch.tgt_in != UNK_ID)
    assert 0.3 < changed.sum().item() / words.sum().item() < 0.7


@pytest.mark.skipif(not data_available(), reason="needs ../shared/data (set SEGVIZ_DATA)")
def test_word_dropout_out_of_range_is_refused():
    from segviz.train import prepare

    with pytest.raises(DataError, match="--word-dropout"):
        prepare(TrainConfig(dataset="e2e", max_examples=16, word_dropout=1.0), {}, None)


@pytest.mark.skipif(not data_available(), reason="needs ../shared/data (set SEGVIZ_DATA)")
def test_relation_dropout_hides_relation_words_of_webnlg_training_examples_only():
    """``train --relation-dropout p`` (session 22): WebNLG training sources read some relation
    words as never seen (copy ids); validation untouched; E2E and shares outside [0, 1) refused."""
    from segviz.data import UNK_ID
    from segviz.train import prepare

    base = dict(dataset="webnlg", max_examples=200, max_val_examples=20)
    vocab, _, plain, dev = prepare(TrainConfig(**base), {}, None)
    _, _, hid, dev2 = prepare(TrainConfig(**base, relation_dropout=0.5), {}, None, vocab)
    changed = [i for i, (a, b) in enumerate(zip(plain, hid, strict=True)) if a.src != b.src]
    assert 50 < len(changed) < 200 and [e.src for e in dev] == [e.src for e in dev2]
    a, b = plain[changed[0]], hid[changed[0]]
    assert all(y == UNK_ID and x != UNK_ID for x, y in zip(a.src, b.src, strict=True) if x != y) and b.oov
    for bad in (dict(dataset="e2e", relation_dropout=0.3), dict(dataset="webnlg", relation_dropout=1.0)):
        with pytest.raises(DataError, match="--relation-dropout"):
            prepare(TrainConfig(**bad, max_examples=16), {}, None)


@pytest.mark.skipif(not data_available(), reason="needs ../shared/data (set SEGVIZ_DATA)")
def test_anchor_bans_emissions_of_training_examples_only():
    """``train --anchor`` (session 35, :mod:`segviz.anchor`): most WebNLG training examples get
    banned emissions, validation none (its loss stays the paper's); the PG baseline refuses it."""
    from segviz.train import prepare

    base = dict(dataset="webnlg", max_examples=200, max_val_examples=20)
    _, _, train, dev = prepare(TrainConfig(**base, anchor=True), {"max_seg_len": 16}, None)
    assert sum(bool(e.forbid) for e in train) > 150 and not any(e.forbid for e in dev)
    e = next(e for e in train if e.forbid)
    assert all(0 <= t < len(e.tgt) and 0 <= s <= e.n_records for t, s in e.forbid)
    _, _, plain, _ = prepare(TrainConfig(**base), {}, None)
    assert not any(x.forbid for x in plain)
    with pytest.raises(DataError, match="--anchor"):
        prepare(TrainConfig(**base, model="pg", anchor=True), {}, None)
