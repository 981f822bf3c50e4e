"""Datasets, vocabulary and padded batches.

An :class:`Example` is one (records, reference text) pair. Source tokens are the records'
tokens flattened in input order, each tagged with the record it belongs to (1..K; 0 is the null
record, which owns no tokens). A :class:`Vocab` maps frequent words to ids; words seen only in
the source of one example get *extended* ids ``V + j`` so that the pointer-generator can copy
them (See et al., 2017).
"""

from __future__ import annotations

import copy
import csv
import dataclasses
import json
import logging
import os
import random
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from segviz.datasets import DATASETS  # noqa: F401 (re-exported: the registry, by name)
from segviz.datasets import get as get_dataset
from segviz.records import Record, RecordError, parse_e2e_mr, parse_webnlg_triples, tokenize

log = logging.getLogger(__name__)

PAD, UNK, BOS, EOS, EOSEG = "<pad>", "<unk>", "<bos>", "<eos>", "<$>"
SPECIALS = (PAD, UNK, BOS, EOS, EOSEG)
PAD_ID, UNK_ID, BOS_ID, EOS_ID, EOSEG_ID = range(5)
DATA_ENV = "SEGVIZ_DATA"


class DataError(RuntimeError):
    """Missing or unreadable data files; the message says where to get them."""


def default_data_dir() -> Path:
    """``$SEGVIZ_DATA`` if set, else ``../shared/data`` next to the repository root."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent.parent / "shared" / "data"


@dataclass
class Example:
    """One input with one reference.

    ``key`` identifies the input (E2E: the MR string; WebNLG: ``category/size/eid``) so that
    several references of one input can be grouped.
    """

    key: str
    records: list[Record]
    target: list[str]  # reference tokens, without <eos>
    refs: list[str] = field(default_factory=list)  # all raw references of this input (eval)

    @property
    def src_tokens(self) -> list[str]:
        return [tok for r in self.records for tok in r.tokens]

    @property
    def src_records(self) -> list[int]:
        """Record index (1..K) of every source token."""
        return [k + 1 for k, r in enumerate(self.records) for _ in r.tokens]


def _check_file(path: Path, dataset: str) -> None:
    if not path.exists():
        raise DataError(
            f"{dataset} data not found at {path}. Point --data-dir (or ${DATA_ENV}) at a folder "
            f"holding e2e/{{train,dev}}.csv and webnlg/{{train,dev}}/ (the E2E NLG Challenge "
            f"dataset, github.com/tuetschek/e2e-dataset, and the WebNLG 2017 challenge data, "
            f"gitlab.com/shimorina/webnlg-dataset); see ../shared/data/README.md."
        )


def load_e2e(path: Path) -> list[Example]:
    """E2E CSV (``mr,ref``) -> one example per row; ``refs`` holds all refs of the same MR."""
    _check_file(path, "E2E")
    with open(path, encoding="utf-8-sig", newline="") as f:
        rows = [(row["mr"], row["ref"]) for row in csv.DictReader(f)]
    refs: dict[str, list[str]] = {}
    for mr, ref in rows:
        refs.setdefault(mr, []).append(ref)
    parsed = {mr: parse_e2e_mr(mr) for mr in refs}
    return [Example(mr, parsed[mr], tokenize(ref), refs[mr]) for mr, ref in rows]


def load_webnlg(path: Path) -> list[Example]:
    """WebNLG XML tree -> one example per ``<lex>`` (modified triples as input)."""
    _check_file(path, "WebNLG")
    from segviz.data_webnlg import read_webnlg  # XML reading shared with evaluation

    out = []
    for entry in read_webnlg(path):
        key = f"{entry.category}/{entry.size}/{entry.eid}"
        try:
            records = parse_webnlg_triples(entry.triples)
        except RecordError as e:
            raise RecordError(f"{entry.where}: {e}") from None
        for lex in entry.lexs:
            out.append(Example(key, records, tokenize(lex), list(entry.lexs)))
    return out


def load_split(dataset: str, split: str, data_dir: Path | str | None = None) -> list[Example]:
    """``load_split("e2e", "train")`` from ``data_dir`` (default :func:`default_data_dir`)."""
    root = Path(data_dir) if data_dir is not None else default_data_dir()
    try:
        ds = get_dataset(dataset)
    except ValueError as e:
        raise DataError(str(e)) from None
    return ds.load(root, split)


def unique_inputs(examples: Iterable[Example]) -> list[Example]:
    """First example of every distinct input, in order of first appearance."""
    seen: set[str] = set()
    out = []
    for ex in examples:
        if ex.key not in seen:
            seen.add(ex.key)
            out.append(ex)
    return out


class Vocab:
    """Word <-> id map. Ids 0..4 are the specials ``<pad> <unk> <bos> <eos> <$>``."""

    def __init__(self, words: Sequence[str]):
        self.itos: list[str] = list(SPECIALS) + [w for w in words if w not in SPECIALS]
        self.stoi: dict[str, int] = {w: i for i, w in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self.itos == other.itos

    def id(self, word: str) -> int:
        return self.stoi.get(word, UNK_ID)

    @classmethod
    def build(cls, examples: Iterable[Example], min_freq: int = 5, max_size: int | None = None) -> Vocab:
        """Words of targets and sources seen at least ``min_freq`` times, most frequent first."""
        counts: Counter[str] = Counter()
        for ex in examples:
            counts.update(ex.target)
            counts.update(ex.src_tokens)
        words = [w for w, n in sorted(counts.items(), key=lambda x: (-x[1], x[0])) if n >= min_freq]
        return cls(words[:max_size] if max_size else words)

    def hiding(self, words: Iterable[str]) -> Vocab:
        """This vocabulary as if ``words`` had never been seen: the same ids, but :meth:`id` of a
        hidden word is ``<unk>``, so :func:`encode` reads it as a source-only word (copied, never
        embedded). Unseen relations (docs/design.md): ``train --relation-dropout`` and the stress
        suite ``relations``."""
        hidden = set(words) - set(SPECIALS)
        if not hidden:
            return self
        view = copy.copy(self)
        view.stoi = {w: i for w, i in self.stoi.items() if w not in hidden}
        return view

    def to_json(self) -> list[str]:
        return list(self.itos)

    @classmethod
    def from_json(cls, itos: list[str]) -> Vocab:
        if list(itos[: len(SPECIALS)]) != list(SPECIALS):
            raise ValueError("vocabulary does not start with the special tokens")
        return cls(itos[len(SPECIALS) :])

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), ensure_ascii=False))


@dataclass
class Encoded:
    """One example as ids. ``oov`` lists the source-only words; word ``oov[j]`` has id ``V + j``."""

    src: list[int]  # (N,) vocab ids, <unk> for OOV (embedding input)
    src_ext: list[int]  # (N,) extended ids (copy targets)
    src_rec: list[int]  # (N,) record 1..K of each source token
    n_records: int  # K
    tgt: list[int]  # (T,) extended ids of y_1..y_T, last is <eos>
    oov: list[str]
    forbid: list[tuple[int, int]] = field(default_factory=list)  # (t, state) emissions set to log 0 (train --anchor, segviz.anchor)


def encode(vocab: Vocab, records: list[Record], target: list[str] | None = None) -> Encoded:
    """Records (+ optional target tokens) -> ids over the extended vocabulary."""
    src_tok = [tok for r in records for tok in r.tokens]
    src_rec = [k + 1 for k, r in enumerate(records) for _ in r.tokens]
    oov: list[str] = []
    src_ext = []
    for w in src_tok:
        i = vocab.id(w)
        if i == UNK_ID:
            if w not in oov:
                oov.append(w)
            i = len(vocab) + oov.index(w)
        src_ext.append(i)
    tgt = []
    for w in target or []:
        i = vocab.id(w)
        if i == UNK_ID and w in oov:
            i = len(vocab) + oov.index(w)
        tgt.append(i)
    if target is not None:
        tgt.append(EOS_ID)
    return Encoded([vocab.id(w) for w in src_tok], src_ext, src_rec, len(records), tgt, oov)


@dataclass
class Batch:
    """Padded tensors for B examples. S = K_max + 1 states (record 0 is null).

    src      (B, N) long   vocab ids of source tokens (pad 0)
    src_ext  (B, N) long   extended ids (copy targets)
    src_rec  (B, N) long   record 1..K of each source token, 0 on padding
    src_len  (B,)   long
    rec_mask (B, S) bool   valid states: null + the example's K records
    n_rec    (B,)   long   K of each example
    tgt_in   (B, T) long   <bos> y_1 .. y_{T-1}  (vocab ids, OOV -> <unk>)
    tgt      (B, T) long   y_1 .. y_T  extended ids, pad 0
    tgt_len  (B,)   long
    n_oov    int           max number of source-only words (extended vocab is V + n_oov)
    forbid   (B, T, S) bool emissions set to log 0 (train --anchor), None when no example has any
    """

    src: torch.Tensor
    src_ext: torch.Tensor
    src_rec: torch.Tensor
    src_len: torch.Tensor
    rec_mask: torch.Tensor
    n_rec: torch.Tensor
    tgt_in: torch.Tensor
    tgt: torch.Tensor
    tgt_len: torch.Tensor
    n_oov: int
    encoded: list[Encoded]
    global_size: int = 0  # data-parallel training: examples / target tokens of the whole
    global_tokens: int = 0  # global batch this shard belongs to (0: this batch is the whole)
    forbid: torch.Tensor | None = None

    @property
    def size(self) -> int:
        return self.src.size(0)

    @property
    def tokens(self) -> int:
        """Target tokens (``<eos>`` included), counted on the host."""
        return sum(len(e.tgt) for e in self.encoded)

    @property
    def host_src_len(self) -> torch.Tensor:
        """``src_len`` on the host, from the examples (what packing wants, with no device sync)."""
        return torch.tensor([len(e.src) for e in self.encoded])

    def to(self, device: torch.device | str, non_blocking: bool = False) -> Batch:
        """The same batch with every tensor on ``device`` (itself when already there)."""
        device = torch.device(device)
        if self.src.device == device:
            return self
        moved = {f: getattr(self, f).to(device, non_blocking=non_blocking) for f in _TENSOR_FIELDS}
        if self.forbid is not None:
            moved["forbid"] = self.forbid.to(device, non_blocking=non_blocking)
        return dataclasses.replace(self, **moved)


_TENSOR_FIELDS = ("src", "src_ext", "src_rec", "src_len", "rec_mask", "n_rec", "tgt_in", "tgt", "tgt_len")


def collate(items: Sequence[Encoded], vocab_size: int) -> Batch:
    """Pad a list of encoded examples into a :class:`Batch` (see its shape table)."""
    B = len(items)
    N = max(1, max(len(e.src) for e in items))
    T = max(1, max(len(e.tgt) for e in items))
    S = max(e.n_records for e in items) + 1
    src = torch.zeros(B, N, dtype=torch.long)
    src_ext = torch.zeros(B, N, dtype=torch.long)
    src_rec = torch.zeros(B, N, dtype=torch.long)
    tgt = torch.zeros(B, T, dtype=torch.long)
    tgt_in = torch.zeros(B, T, dtype=torch.long)
    rec_mask = torch.zeros(B, S, dtype=torch.bool)
    for b, e in enumerate(items):
        n, t = len(e.src), len(e.tgt)
        src[b, :n] = torch.tensor(e.src)
        src_ext[b, :n] = torch.tensor(e.src_ext)
        src_rec[b, :n] = torch.tensor(e.src_rec)
        if t:
            tgt[b, :t] = torch.tensor(e.tgt)
            prev = [BOS_ID] + [i if i < vocab_size else UNK_ID for i in e.tgt[:-1]]
            tgt_in[b, :t] = torch.tensor(prev)
        rec_mask[b, : e.n_records + 1] = True
    forbid = None
    if any(e.forbid for e in items):  # train --anchor (segviz.anchor)
        forbid = torch.zeros(B, T, S, dtype=torch.bool)
        for b, e in enumerate(items):
            if e.forbid:
                t, s = zip(*e.forbid, strict=True)
                forbid[b, list(t), list(s)] = True
    return Batch(
        src=src,
        src_ext=src_ext,
        src_rec=src_rec,
        src_len=torch.tensor([len(e.src) for e in items]),
        rec_mask=rec_mask,
        n_rec=torch.tensor([e.n_records for e in items]),
        tgt_in=tgt_in,
        tgt=tgt,
        tgt_len=torch.tensor([len(e.tgt) for e in items]),
        n_oov=max(len(e.oov) for e in items),
        encoded=list(items),
        forbid=forbid,
    )


def batch_indices(
    encoded: Sequence[Encoded], batch_size: int = 64, shuffle: bool = True, seed: int = 0, bucket: int = 50
) -> list[list[int]]:
    """Example indices of every batch, batched by length: chunks of ``bucket`` batches sorted by
    (number of records, target length), so that both the ``T`` and the ``S = K + 1`` of a
    batch are padded little (the segment model's emission table is ``B·T·S·V``), then the
    batch order shuffled. Deterministic for a given ``seed``."""
    idx = list(range(len(encoded)))
    rng = random.Random(seed)
    if shuffle:
        rng.shuffle(idx)
    chunk = batch_size * bucket
    groups = []
    for s in range(0, len(idx), chunk):
        part = sorted(idx[s : s + chunk], key=lambda i: (encoded[i].n_records, len(encoded[i].tgt)))
        groups += [part[j : j + batch_size] for j in range(0, len(part), batch_size)]
    if shuffle:
        rng.shuffle(groups)
    return groups


def batches(
    encoded: Sequence[Encoded],
    vocab_size: int,
    batch_size: int = 64,
    shuffle: bool = True,
    seed: int = 0,
    bucket: int = 50,
    rank: int = 0,
    world: int = 1,
) -> Iterator[Batch]:
    """Padded batches of :func:`batch_indices`.

    With ``world > 1`` (data-parallel training) every process forms the same global batches of
    ``batch_size`` and collates only its shard (examples ``rank, rank + world, ...`` of each);
    ``global_size`` / ``global_tokens`` record the whole. A global batch with fewer than
    ``world`` examples (at most the last one) is skipped, so every process takes the same number
    of steps.
    """
    for g in batch_indices(encoded, batch_size, shuffle, seed, bucket):
        if world == 1:
            yield collate([encoded[i] for i in g], vocab_size)
            continue
        if len(g) < world:
            continue
        b = collate([encoded[i] for i in g[rank::world]], vocab_size)
        b.global_size, b.global_tokens = len(g), sum(len(encoded[i].tgt) for i in g)
        yield b
