"""Shared fixtures: tiny random-initialised models over a handful of bundled records (no data needed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from segviz.data import Example, Vocab
from segviz.model import ModelConfig, build_model
from segviz.records import parse_e2e_mr, tokenize

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = Path(os.environ.get("SEGVIZ_DATA", ROOT.parent / "shared" / "data"))

MRS = [
    ("name[The Eagle], eatType[coffee shop], food[French], priceRange[moderate], customer rating[3 out of 5], area[riverside], familyFriendly[yes], near[Burger King]",
     "The Eagle is a family-friendly French coffee shop near Burger King by the riverside with moderate prices and a 3 out of 5 rating."),
    ("name[Alimentum], area[city centre], familyFriendly[no]", "Alimentum is in the city centre and is not family-friendly."),
    ("name[The Vaults], eatType[pub], priceRange[more than £30], customer rating[5 out of 5], near[Café Adriatic]",
     "The Vaults is a pub near Café Adriatic with prices of more than £30 and a rating of 5 out of 5."),
    ("name[Zizzi], eatType[restaurant], food[Italian]", "Zizzi is an Italian restaurant."),
    ("name[Loch Fyne], food[Japanese], area[riverside]", "Loch Fyne serves Japanese food in the riverside area."),
    ("name[The Mill], eatType[pub], priceRange[cheap], near[The Sorrento]", "The Mill is a cheap pub near The Sorrento."),
    ("name[Clowns], customer rating[low], familyFriendly[yes]", "Clowns has a low customer rating but is kid friendly."),
    ("name[Aromi], eatType[coffee shop], food[Chinese], area[city centre]", "Aromi is a Chinese coffee shop in the city centre."),
]


def tiny_examples() -> list[Example]:
    return [Example(mr, parse_e2e_mr(mr), tokenize(ref), [ref]) for mr, ref in MRS]


@pytest.fixture(scope="session")
def examples():
    return tiny_examples()


@pytest.fixture(scope="session")
def vocab(examples):
    # leave a few words out of the vocabulary so that copying of source-only words is exercised
    v = Vocab.build(examples, min_freq=1)
    return Vocab([w for w in v.itos[5:] if w not in ("zizzi", "alimentum", "vaults", "eagle")])


def make_model(kind: str, vocab: Vocab, seed: int = 0, **kw):
    torch.manual_seed(seed)
    cfg = ModelConfig(kind=kind, vocab_size=len(vocab), hidden=32, emb_dim=16, dropout=0.0, max_seg_len=4, **kw)
    return build_model(cfg).eval()


def data_available() -> bool:
    return (DATA_DIR / "e2e" / "dev.csv").exists()


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """Tiny fitted checkpoints (bundled examples, no data needed), built once per session."""
    from segviz.examples import make_tiny_checkpoints

    folder = tmp_path_factory.getbasetemp() / "segviz-tiny"
    if not (folder / "webnlg-pg" / "history.json").exists():
        make_tiny_checkpoints(folder)
    return folder


@pytest.fixture
def env(tiny, tmp_path, monkeypatch):
    """The app sees only the tiny checkpoints and no dev data (bundled examples only)."""
    monkeypatch.setenv("SEGVIZ_CHECKPOINTS", str(tiny))
    monkeypatch.setenv("SEGVIZ_DATA", str(tmp_path / "no-data"))
    return tiny
