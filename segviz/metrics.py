"""Corpus metrics with the official E2E challenge settings (docs/design.md §5).

The E2E ``measure_scores.py`` script runs the MS-COCO caption evaluator (PTB tokenisation, then
METEOR, ROUGE-L, CIDEr) and MT-Eval (BLEU). We reproduce that with:

* BLEU: ``sacrebleu.corpus_bleu(hyps, ref_streams, lowercase=True, tokenize="13a")`` / 100. MRs
  with fewer references are padded with ``None``: sacrebleu 2.x drops ``None`` entries per segment,
  so every MR is scored against exactly its own references. (Padding with ``""`` would keep a
  zero-length reference that can win the closest-reference-length choice for short outputs.)
* ROUGE-L (beta 1.2) and CIDEr (``Cider``, not CIDEr-D) from ``pycocoevalcap`` on PTB-tokenised,
  lower-cased text with punctuation removed, exactly like ``COCOEvalCap.evaluate``.
* METEOR 1.5 (``-l en -norm``) through the jar bundled with ``pycocoevalcap``, same protocol as
  its ``Meteor`` class. Needs ``java``; without it METEOR is ``None`` (logged, never raised).
* Dist-1 / Dist-3: number of distinct unigrams / trigrams over all outputs (lower-cased, simple
  word/punctuation tokens; n-grams do not cross outputs).

This module is a leaf: it imports nothing of segviz.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import sacrebleu

__all__ = ["corpus_scores", "bleu", "bleu_stats", "bleu_from_stats", "bleu_gap_interval", "ptb_tokenize", "distinct_ngrams", "java_available"]

log = logging.getLogger(__name__)

# the pycocoevalcap package folder, found without importing it (training imports this module
# through segviz.datasets and needs none of the scorers)
_COCO_SPEC = importlib.util.find_spec("pycocoevalcap")
_COCO_DIR = Path(list(_COCO_SPEC.submodule_search_locations)[0] if _COCO_SPEC else ".").resolve()
_PTB_JAR = _COCO_DIR / "tokenizer" / "stanford-corenlp-3.4.1.jar"
_METEOR_JAR = _COCO_DIR / "meteor" / "meteor-1.5.jar"
# Tokens the coco-caption PTBTokenizer wrapper drops after tokenising (its PUNCTUATIONS list).
_PTB_PUNCT = {
    "''",
    "'",
    "``",
    "`",
    "-lrb-",
    "-rrb-",
    "-lcb-",
    "-rcb-",
    ".",
    "?",
    "!",
    ",",
    ":",
    "-",
    "--",
    "...",
    ";",
}
# Java 17 reads/writes in the platform charset; force UTF-8 so "£" and "é" survive on any locale.
_JAVA_OPTS = ["-Dfile.encoding=UTF-8"]


def java_available() -> bool:
    """True when a ``java`` executable is on the PATH (PTB tokenizer and METEOR need it)."""
    return shutil.which("java") is not None


def bleu(hyps: list[str], refs: list[list[str]]) -> float:
    """Corpus BLEU in [0, 1] with E2E settings; ``refs[i]`` are the references of ``hyps[i]``."""
    _check(hyps, refs)
    k = max(len(r) for r in refs)
    # (k, N) streams; missing references are None, which sacrebleu removes per segment.
    streams = [[r[j] if j < len(r) else None for r in refs] for j in range(k)]
    return sacrebleu.corpus_bleu(hyps, streams, lowercase=True, tokenize="13a").score / 100.0


def bleu_stats(hyps: list[str], refs: list[list[str]]) -> np.ndarray:
    """What corpus BLEU (:func:`bleu`'s settings) adds up, per output: ``(N, 10)`` rows of the
    output's length, its closest reference length, the matched and the total n-grams for
    n = 1..4. Summed over any outputs, :func:`bleu_from_stats` gives their corpus BLEU."""
    _check(hyps, refs)
    scorer = sacrebleu.BLEU(lowercase=True, tokenize="13a", effective_order=True)  # order: the score only
    rows = []
    for h, rs in zip(hyps, refs, strict=True):
        s = scorer.sentence_score(h, [r for r in rs if r is not None])
        rows.append([s.sys_len, s.ref_len, *s.counts, *s.totals])
    return np.asarray(rows, dtype=np.int64)


def bleu_from_stats(total: np.ndarray) -> float:
    """Corpus BLEU in [0, 1] from the summed rows of :func:`bleu_stats` (``(10,)``)."""
    t = [int(v) for v in total]
    return sacrebleu.BLEU.compute_bleu(t[2:6], t[6:10], t[0], t[1]).score / 100.0


def bleu_gap_interval(
    a: np.ndarray, b: np.ndarray, n: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Paired bootstrap (Koehn, 2004) of BLEU(a) - BLEU(b) in BLEU points, ``a`` and ``b`` the
    :func:`bleu_stats` of two systems on the same N inputs (``(N, 10)``): the inputs drawn with
    replacement ``n`` times (seeded), the central ``level`` interval of the gap."""
    if a.shape != b.shape or not len(a):
        raise ValueError(f"two systems on the same inputs, got {a.shape} and {b.shape}")
    draws = np.random.default_rng(seed).integers(0, len(a), size=(n, len(a)))  # (n, N)
    A, B = a[draws].sum(1), b[draws].sum(1)  # (n, 10) each
    gaps = [100 * (bleu_from_stats(x) - bleu_from_stats(y)) for x, y in zip(A, B, strict=True)]
    lo, hi = np.quantile(gaps, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


def ptb_tokenize(texts: list[str]) -> list[str]:
    """Lower-case, PTB-tokenise and drop punctuation, like coco-caption's ``PTBTokenizer``.

    Runs the Stanford tokenizer bundled with pycocoevalcap; without ``java`` (or if it fails) a
    pure-Python approximation is used and a warning is logged.
    """
    texts = [t.replace("\n", " ").replace("\r", " ") for t in texts]
    if java_available():
        try:
            lines = _ptb_java(texts)
        except (OSError, subprocess.SubprocessError, ValueError) as e:
            log.warning("Stanford PTBTokenizer failed (%s); using the Python fallback tokenizer", e)
        else:
            return [" ".join(w for w in line.rstrip().split(" ") if w not in _PTB_PUNCT) for line in lines]
    else:
        log.warning("java not found: using the Python fallback tokenizer for ROUGE-L/CIDEr")
    return [" ".join(w for w in _ptb_python(t) if w not in _PTB_PUNCT) for t in texts]


def _ptb_java(texts: list[str]) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="segviz-ptb-") as tmp:
        path = Path(tmp) / "sents.txt"
        path.write_text("\n".join(texts), encoding="utf-8")
        cmd = ["java", *_JAVA_OPTS, "-cp", str(_PTB_JAR), "edu.stanford.nlp.process.PTBTokenizer"]
        cmd += ["-preserveLines", "-lowerCase", str(path)]
        out = subprocess.run(cmd, capture_output=True, check=True, timeout=600).stdout.decode("utf-8")
    lines = out.split("\n")
    if len(lines) < len(texts):
        raise ValueError(f"PTBTokenizer returned {len(lines)} lines for {len(texts)} inputs")
    return lines[: len(texts)]


_PTB_RE = re.compile(r"n't\b|'(?:s|re|ve|ll|d|m)\b|\d+(?:[.,-]\d+)*|\w+(?:[-.]\w+)*|\.\.\.|--|[^\w\s]")


def _ptb_python(text: str) -> list[str]:
    """Approximate PTB tokens (``isn't`` -> ``is n't``; ``£`` -> ``#`` as the Stanford tool does)."""
    text = text.lower().replace("£", "#").replace("(", " -lrb- ").replace(")", " -rrb- ")
    text = re.sub(r'"(?=\w)', "`` ", text).replace('"', " ''")
    toks: list[str] = []
    for word in text.split():
        if word in ("-lrb-", "-rrb-", "``", "''"):
            toks.append(word)
            continue
        word = re.sub(r"(\w)n't\b", r"\1 n't", word)
        toks.extend(_PTB_RE.findall(word))
    return toks


def meteor(hyps_tok: list[str], refs_tok: list[list[str]]) -> float | None:
    """Corpus METEOR 1.5 on tokenised text (protocol of pycocoevalcap's ``Meteor``); None without java."""
    if not java_available():
        log.warning("java not found: METEOR is not computed (returned as None)")
        return None
    cmd = ["java", *_JAVA_OPTS, "-jar", "-Xmx2G", str(_METEOR_JAR), "-", "-", "-stdio", "-l", "en", "-norm"]
    proc = subprocess.Popen(
        cmd,
        cwd=_METEOR_JAR.parent,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "LC_ALL": "C.UTF-8"},
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        eval_line = "EVAL"
        for hyp, refs in zip(hyps_tok, refs_tok, strict=True):
            hyp = hyp.replace("|||", "").replace("  ", " ")
            proc.stdin.write(("SCORE ||| " + " ||| ".join(refs) + " ||| " + hyp + "\n").encode("utf-8"))
            proc.stdin.flush()
            eval_line += " ||| " + proc.stdout.readline().decode("utf-8").strip()
        proc.stdin.write((eval_line + "\n").encode("utf-8"))
        proc.stdin.flush()
        for _ in hyps_tok:  # per-segment scores, then the corpus score
            proc.stdout.readline()
        return float(proc.stdout.readline().strip())
    except (OSError, ValueError) as e:
        log.warning("METEOR failed (%s): returned as None", e)
        return None
    finally:
        proc.stdin.close()
        proc.kill()
        proc.wait()
        proc.stdout.close()


_DIST_RE = re.compile(r"\w+|[^\w\s]")


def distinct_ngrams(hyps: list[str], n: int) -> int:
    """Number of distinct n-grams over all outputs (lower-cased word/punctuation tokens)."""
    seen: set[tuple[str, ...]] = set()
    for h in hyps:
        toks = _DIST_RE.findall(h.lower())
        seen.update(tuple(toks[i : i + n]) for i in range(len(toks) - n + 1))
    return len(seen)


def corpus_scores(hyps: list[str], refs: list[list[str]], meteor: bool = True) -> dict:
    """All corpus metrics: ``{bleu, rouge_l, meteor, cider, dist1, dist3, n}``.

    ``refs[i]`` lists the references of ``hyps[i]`` (any number >= 1). BLEU, ROUGE-L, METEOR are in
    [0, 1]; CIDEr is on its usual 0-10 scale; ``meteor`` is None when disabled or java is missing.
    """
    _check(hyps, refs)
    flat = ptb_tokenize(list(hyps) + [r for rs in refs for r in rs])
    hyps_tok, pos, refs_tok = flat[: len(hyps)], len(hyps), []
    for rs in refs:
        refs_tok.append(flat[pos : pos + len(rs)])
        pos += len(rs)
    gts = {i: rs for i, rs in enumerate(refs_tok)}
    res = {i: [h] for i, h in enumerate(hyps_tok)}
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    rouge_l, _ = Rouge().compute_score(gts, res)
    cider, _ = Cider().compute_score(gts, res)
    return {
        "bleu": bleu(hyps, refs),
        "rouge_l": float(rouge_l),
        "meteor": _meteor_fn(hyps_tok, refs_tok) if meteor else None,
        "cider": float(cider),
        "dist1": distinct_ngrams(hyps, 1),
        "dist3": distinct_ngrams(hyps, 3),
        "n": len(hyps),
    }


_meteor_fn = meteor  # corpus_scores' ``meteor`` flag shadows the function name


def _check(hyps: list[str], refs: list[list[str]]) -> None:
    if not hyps:
        raise ValueError("no hypotheses to score")
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} reference sets")
    empty = [i for i, r in enumerate(refs) if not r]
    if empty:
        raise ValueError(f"no references for items {empty[:5]}")
