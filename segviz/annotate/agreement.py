"""Human-evaluation results in the paper's shape (Tables 2 and 3) and agreement statistics.

Which annotations count: *complete* ones only — rated for fluency and not skipped. Partial
autosaves and skipped items are left out everywhere below.

Aggregation over annotators is by **majority vote**, and the same rule is used for the table
and for the checker's agreement: a record is wrong / repeated / missing for an item when
strictly more than half of the item's annotators flagged it (a tie counts as *not* flagged).
For the count of wrong facts outside all records (``extra_wrong``) the majority count is the
largest ``c`` that more than half of the annotators reached (= ``sorted_desc[n // 2]``), which
is the same rule applied to "the c-th extra wrong fact exists". With one annotator per item
both reduce to that annotator's judgements.

Agreement between annotators: Krippendorff's alpha (the ``krippendorff`` package), ordinal
for fluency (values 1..5, units = items) and nominal for each flag (units = (item, record)).
Alpha is NaN when undefined: no unit has two ratings, or all pairable ratings are equal.
Agreement of the automatic checker with the humans: per flag, over (item, record) units of
items that have both automatic verdicts and at least one complete annotation, accuracy and
Cohen's kappa between the checker and the majority human verdict (kappa NaN when chance
agreement is 1).
"""

from __future__ import annotations

import logging
import math
from collections import defaultdict
from collections.abc import Sequence

import krippendorff
import numpy as np
import pandas as pd

from segviz.annotate.store import FLAG_NAMES, Store

__all__ = [
    "RESULT_COLUMNS",
    "results_table",
    "agreement",
    "auto_rows",
    "krippendorff_alpha",
    "cohen_kappa",
    "majority",
    "majority_count",
    "complete_annotations",
]

log = logging.getLogger(__name__)

RESULT_COLUMNS = ["system", "items", "annotators", "fluent", "wrong", "repeat", "miss"]
_TABLE_FLAG = {"wrong": "wrong", "repeated": "repeat", "missing": "miss"}


def majority(votes: Sequence[bool]) -> bool:
    """True when strictly more than half of the votes are True (ties are False)."""
    return sum(bool(v) for v in votes) * 2 > len(votes)


def majority_count(counts: Sequence[int]) -> int:
    """Largest ``c`` such that more than half of the annotators counted at least ``c``."""
    if not counts:
        return 0
    return sorted(counts, reverse=True)[len(counts) // 2]


def krippendorff_alpha(reliability: np.ndarray, level: str, value_domain: Sequence | None = None) -> float:
    """Alpha for a ``(raters, units)`` matrix with NaN for missing ratings; NaN when undefined."""
    data = np.asarray(reliability, dtype=float)
    if data.ndim != 2 or data.size == 0:
        return math.nan
    pairable = data[:, (~np.isnan(data)).sum(axis=0) >= 2]  # units with at least two ratings
    values = pairable[~np.isnan(pairable)]
    if values.size < 2 or np.unique(values).size < 2:
        return math.nan
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement=level,
                                    value_domain=value_domain))


def cohen_kappa(a: Sequence, b: Sequence) -> float:
    """Cohen's kappa of two equally long label sequences; NaN when chance agreement is 1 or empty."""
    if len(a) != len(b):
        raise ValueError("kappa needs two sequences of the same length")
    n = len(a)
    if n == 0:
        return math.nan
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    labels = set(a) | set(b)
    p_e = sum((list(a).count(c) / n) * (list(b).count(c) / n) for c in labels)
    return math.nan if p_e >= 1 else (p_o - p_e) / (1 - p_e)


def complete_annotations(store: Store, campaign: str | int) -> tuple[list[dict], dict[int, list[dict]]]:
    """``(items, {item_id: [complete annotations]})``: rated for fluency and not skipped."""
    items = store.items(campaign)
    by_item: dict[int, list[dict]] = defaultdict(list)
    for a in store.annotations(campaign):
        if a["fluency"] is not None and not a["skipped"]:
            by_item[a["item_id"]].append(a)
    return items, by_item


def _flag(a: dict, k: int, name: str) -> bool:
    return bool(a["flags"].get(str(k), {}).get(name, False))


def results_table(store: Store, campaign: str | int) -> pd.DataFrame:
    """One row per system, the paper's human-evaluation columns.

    - ``items``: items of the system with at least one complete annotation;
    - ``annotators``: distinct annotators who completed at least one of them;
    - ``fluent``: mean over those items of the item's mean fluency (each item weighs the same);
    - ``wrong`` / ``repeat`` / ``miss``: **totals of the majority vote** (the paper reports
      "definite numbers"): the number of (item, record) pairs that a majority of the item's
      annotators flagged; ``wrong`` adds each item's majority count of wrong facts outside the
      records (``extra_wrong``). See the module docstring for the exact majority rule.

    Rows follow the campaign's system order; systems without annotations show 0 and NaN.
    """
    config = store.campaign(campaign)["config"]
    items, by_item = complete_annotations(store, campaign)
    rows = []
    for system in config.get("systems") or sorted({it["system"] for it in items}):
        n_items, fluent, people = 0, [], set()
        totals = dict.fromkeys(_TABLE_FLAG.values(), 0)
        for it in (it for it in items if it["system"] == system):
            anns = by_item.get(it["id"], [])
            if not anns:
                continue
            n_items += 1
            people |= {a["annotator"] for a in anns}
            fluent.append(sum(a["fluency"] for a in anns) / len(anns))
            for name, col in _TABLE_FLAG.items():
                totals[col] += sum(majority([_flag(a, k, name) for a in anns]) for k in range(it["K"]))
            totals["wrong"] += majority_count([a["extra_wrong"] for a in anns])
        rows.append({"system": system, "items": n_items, "annotators": len(people),
                     "fluent": float(np.mean(fluent)) if fluent else math.nan, **totals})
    df = pd.DataFrame(rows, columns=RESULT_COLUMNS)
    return df.astype({"items": "int64", "annotators": "int64", "fluent": "float64", "wrong": "int64",
                      "repeat": "int64", "miss": "int64"})


def agreement(store: Store, campaign: str | int) -> dict:
    """Inter-annotator agreement and checker-vs-human agreement for a campaign.

    Returns ``{"annotators": n, "items_multi": items with >= 2 complete annotations,
    "alpha": {"fluency", "wrong", "repeated", "missing"},
    "auto": {flag: {"n", "accuracy", "kappa", "tp", "fp", "fn", "tn"}}}`` (``auto`` is empty
    when the campaign has no automatic verdicts). NaN marks an undefined statistic.
    """
    items, by_item = complete_annotations(store, campaign)
    raters = sorted({a["annotator"] for anns in by_item.values() for a in anns})
    row = {r: i for i, r in enumerate(raters)}
    done = [it for it in items if by_item.get(it["id"])]
    units = [(it, k) for it in done for k in range(it["K"])]

    fluency = np.full((len(raters), len(done)), np.nan)
    flags = {name: np.full((len(raters), len(units)), np.nan) for name in FLAG_NAMES}
    col = 0
    for j, it in enumerate(done):
        for a in by_item[it["id"]]:
            fluency[row[a["annotator"]], j] = a["fluency"]
            for k in range(it["K"]):
                for name in FLAG_NAMES:
                    flags[name][row[a["annotator"]], col + k] = float(_flag(a, k, name))
        col += it["K"]
    alpha = {"fluency": krippendorff_alpha(fluency, "ordinal", value_domain=[1, 2, 3, 4, 5])}
    alpha |= {name: krippendorff_alpha(m, "nominal", value_domain=[0.0, 1.0]) for name, m in flags.items()}

    auto: dict[str, dict] = {}
    checked = [(it, k) for it, k in units if it["auto"] is not None]
    if checked:
        for name in FLAG_NAMES:
            machine = [bool(it["auto"].get(str(k), {}).get(name, False)) for it, k in checked]
            human = [majority([_flag(a, k, name) for a in by_item[it["id"]]]) for it, k in checked]
            pairs = list(zip(machine, human, strict=True))
            auto[name] = {"n": len(pairs),
                          "accuracy": sum(m == h for m, h in pairs) / len(pairs),
                          "kappa": cohen_kappa(machine, human),
                          "tp": pairs.count((True, True)), "fp": pairs.count((True, False)),
                          "fn": pairs.count((False, True)), "tn": pairs.count((False, False))}
    return {"annotators": len(raters), "items_multi": sum(len(by_item[it["id"]]) >= 2 for it in done),
            "alpha": alpha, "auto": auto}


def auto_rows(ag: dict) -> list[dict]:
    """The checker-vs-human table of :func:`agreement` (``ag["auto"]``) as rows to show: accuracy
    and kappa written to 3 decimals, "n/a" where undefined (kappa when no item has the flag)."""
    fmt = lambda v: "n/a" if v is None or isinstance(v, float) and math.isnan(v) else f"{v:.3f}"  # noqa: E731
    return [{"flag": f, **v, "accuracy": fmt(v["accuracy"]), "kappa": fmt(v["kappa"])} for f, v in ag["auto"].items()]
