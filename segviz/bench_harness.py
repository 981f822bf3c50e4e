"""What :mod:`segviz.bench` times and how: the median of repeated runs, two functions timed
alternately (so a slow spell of a shared machine hits both sides of a ratio), synthetic inputs
of K records of N tokens, and real (or E2E-sized synthetic) training batches.
:mod:`segviz.bench` re-exports these names."""

from __future__ import annotations

import itertools
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

from segviz.data import Vocab, batches, collate, encode
from segviz.records import Record

CHECKPOINTS = Path(__file__).resolve().parent.parent / "checkpoints"


def write_json(path, obj) -> None:
    """Write ``obj`` as indented JSON to ``path`` (its folder made if needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=1))


def median_time(fn: Callable[[], object], reps: int, warmup: int = 1) -> float:
    """Median wall time of ``fn`` in seconds over ``reps`` runs after ``warmup`` runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def paired_times(fa: Callable[[], object], fb: Callable[[], object], reps: int, warmup: int = 1) -> tuple[float, float, float]:
    """Medians of ``fa`` and ``fb`` timed alternately (a, b, a, b, ...) and the median of the
    per-pair ratios a/b: a slow spell of a shared machine then hits both sides of a ratio."""
    for _ in range(warmup):
        fa()
        fb()
    ta, tb = [], []
    for _ in range(reps):
        for f, out in ((fa, ta), (fb, tb)):
            t0 = time.perf_counter()
            f()
            out.append(time.perf_counter() - t0)
    return statistics.median(ta), statistics.median(tb), statistics.median(a / b for a, b in zip(ta, tb, strict=True))


# ----- synthetic inputs -----------------------------------------------------------------------


def _word(i: int) -> str:
    """Synthetic lower-case word number ``i`` (letters only, so it is one token)."""
    s = ""
    i += 26
    while i:
        i, r = divmod(i, 26)
        s = chr(97 + r) + s
    return s


def synthetic_vocab(V: int) -> Vocab:
    return Vocab([_word(i) for i in range(V - 5)])


def synthetic_records(K: int, N: int, V: int, seed: int = 0) -> list[Record]:
    """K records of exactly N tokens each (attribute word + N - 1 value words; N >= 2)."""
    g = torch.Generator().manual_seed(seed)
    words = torch.randint(0, V - 5, (K, max(N, 2)), generator=g).tolist()
    return [Record(_word(ws[0]), " ".join(_word(w) for w in ws[1:])) for ws in words]


def synthetic_batch(vocab: Vocab, B: int, K: int, N: int, T: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    items = []
    for b in range(B):
        recs = synthetic_records(K, N, len(vocab), seed + b)
        tgt = [_word(i) for i in torch.randint(0, len(vocab) - 5, (T,), generator=g).tolist()]
        items.append(encode(vocab, recs, tgt))
    return collate(items, len(vocab))


def e2e_batches(n: int, B: int = 64, data_dir: Path | None = None, with_size: bool = False):
    """``n`` real E2E training batches as training forms them (vocabulary of the whole training
    set, min_freq 5; batched by length) or, without data, E2E-sized synthetic ones (K = 6,
    ~4 tokens per record, T = 24, V = 1000). ``with_size``: also the number of training
    examples (42,061 for E2E) for an epoch estimate."""
    try:
        from segviz.data import load_split

        train = load_split("e2e", "train", data_dir)
        vocab = Vocab.build(train, min_freq=5)
        enc = [encode(vocab, e.records, e.target) for e in train]
        out = vocab, list(itertools.islice(batches(enc, len(vocab), B, shuffle=True, seed=0), n)), "E2E train"
        size = len(enc)
    except Exception:  # noqa: BLE001 - any data problem: fall back to synthetic batches
        vocab = synthetic_vocab(1000)
        out = vocab, [synthetic_batch(vocab, B, 6, 4, 24, seed=i) for i in range(n)], "synthetic E2E-sized"
        size = 42061
    return (*out, size) if with_size else out
