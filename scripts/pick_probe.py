"""The tune-half probe behind the ``close`` switch (docs/history.md "Checker-guided decoding", session 17; README, session 19):
which candidate the checker should take where the model's own free text leaves a record out.

From a stress run of the checker-guided setting without ``close`` (``python -m segviz.stress
--merge ... --json RUN``, ``--value-rules <rules>+rerank+widen+free+keep``), the +RM n-best lists
(beam 5 and the 4x wider one) of every input whose +RM text is not the free text are decoded
once; each pick rule then takes a candidate of the fewest faults, and the +RM cost against plain
ours is printed per K bucket with every other output as the run had it. The first rule, the
model's order, reproduces the run's texts (the script says how many differ: 0 expected).

    python scripts/pick_probe.py --run runs/s16/wk.json --checkpoint checkpoints/webnlg-seg --half tune
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

import torch

from segviz import checkpoint as ckpt
from segviz import stress
from segviz.data import default_data_dir
from segviz.decode.seg import WIDEN, generate_seg_nbest
from segviz.metrics import bleu
from segviz.posterior import text_posterior
from segviz.records import tokenize
from segviz.rerank import faults, word_edits


def pools(run: dict, seg, items: dict, half: str) -> dict[int, dict]:
    """item -> the free text and the candidates [(text, faults, log p(y|X), words)] of both lists."""
    texts = _texts(run)
    rules, out = seg.rules(run["value_rules"]), {}
    for i, t in texts.items():
        it = run["items"][i]
        if it["half"] != half or t["none"] == t["rm"]:
            continue
        recs = items[it["key"]].records
        first = generate_seg_nbest(seg.model, seg.vocab, recs, "rm", run["beam"], run["beam"], rules=rules)
        wide = generate_seg_nbest(seg.model, seg.vocab, recs, "rm", WIDEN * run["beam"], WIDEN * run["beam"], rules=rules)
        seen = {c.text for c in first}
        wide = [c for c in wide if c.text not in seen and not c.fallback_used] if not first[0].fallback_used else []
        out[i] = {"own": t["none"], "first": [_cand(seg, recs, c, run["dataset"]) for c in first],
                  "wide": [_cand(seg, recs, c, run["dataset"]) for c in wide]}
    return out


def _cand(seg, recs, c, dataset: str) -> tuple:
    words = tokenize(c.text)
    return c.text, faults(dataset, recs, c), text_posterior(seg.model, seg.vocab, recs, words).log_prob, len(words)


def _texts(run: dict) -> dict[int, dict[str, str]]:
    out: dict[int, dict[str, str]] = {}
    for r in run["rows"]["long"]:
        out.setdefault(r["item"], {})[r["system"]] = r["text"]
    return out


def precision(text: str, own: str) -> float:
    """``close``'s measure in session 17 (the mean over n = 1..4 of the share of ``text``'s n-grams,
    clipped and lower-cased, that ``own`` holds) on the detokenised texts split at spaces."""
    a, b = text.lower().split(), own.lower().split()
    shares = []
    for n in range(1, 5):
        A, B = (Counter(tuple(w[i : i + n]) for i in range(len(w) - n + 1)) for w in (a, b))
        shares.append(sum((A & B).values()) / max(1, sum(A.values())))
    return sum(shares) / 4


def f1(text: str, own: str) -> float:
    p, r = precision(text, own), precision(own, text)
    return 2 * p * r / (p + r) if p + r else 0.0


def prefix(text: str, own: str) -> int:
    a, b = text.lower().split(), own.lower().split()
    return next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


RULES = {  # name -> (the wider list always joins, key of a candidate (text, faults, logp, words) given own; None: model order)
    "the model's order (session 16)": (False, None),
    "nearest (n-gram precision), wider only when all have a fault": (False, lambda c, own: precision(c[0], own)),
    "nearest (n-gram F1), wider only when all have a fault": (False, lambda c, own: f1(c[0], own)),
    "longest common beginning, wider always": (True, lambda c, own: prefix(c[0], own)),
    "exact log p(y|X), wider always": (True, lambda c, own: c[2]),
    "exact log p(y|X) per word, wider always": (True, lambda c, own: c[2] / c[3]),
    "nearest (n-gram precision), wider always (close, session 17)": (True, lambda c, own: precision(c[0], own)),
    "fewest word edits, wider always (close since session 19)": (True, lambda c, own: -word_edits(tokenize(c[0]), tokenize(own))),
}


def pick(pool: dict, always: bool, key) -> str:
    cands = pool["first"] + (pool["wide"] if always or min(c[1] for c in pool["first"]) > 0 else [])
    fewest = [c for c in cands if c[1] == min(c[1] for c in cands)]
    return fewest[0][0] if key is None else max(enumerate(fewest), key=lambda x: (key(x[1], pool["own"]), -x[0]))[1][0]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", type=Path, required=True, help="merged stress JSON without close")
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--half", default="tune")
    p.add_argument("--data-dir", type=Path, default=None)
    args = p.parse_args()
    torch.set_num_threads(1)
    run = json.loads(args.run.read_text())
    items = {it.key: it for it in stress.dev_items(run["dataset"], args.data_dir or Path(default_data_dir()))}
    with torch.no_grad():
        got = pools(run, ckpt.load(args.checkpoint), items, args.half)
    texts = _texts(run)
    print(f"{len(got)} inputs where +RM is not the free text; the model's order differs from the run in "
          f"{sum(pick(q, *RULES[next(iter(RULES))]) != texts[i]['rm'] for i, q in got.items())}")
    for name, (always, key) in RULES.items():
        costs = []
        for K in sorted({it["K"] for it in run["items"] if it["half"] == args.half}):
            idx = [i for i, it in enumerate(run["items"]) if it["K"] == K and it["half"] == args.half]
            if len(idx) < 30:
                continue
            refs = [items[run["items"][i]["key"]].refs for i in idx]
            rm = [pick(got[i], always, key) if i in got else texts[i]["rm"] for i in idx]
            costs.append(f"K={K}: {100 * (bleu([texts[i]['none'] for i in idx], refs) - bleu(rm, refs)):+.2f}")
        print(f"{name}: {', '.join(costs)}")


if __name__ == "__main__":
    main()
