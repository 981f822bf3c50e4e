"""What the stress suites' rows (:mod:`segviz.stress`) add up to: pooled aggregates per system,
half of dev and record count K (SER, checker counts, faithful segments, BLEU, verbatim values),
and the Markdown tables of the report. :mod:`segviz.stress` re-exports these names."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from segviz.decode import CONSTRAINT_LABELS
from segviz.entities import entity_tokens
from segviz.metrics import bleu, bleu_gap_interval, bleu_stats
from segviz.records import HALVES, doubled_words, is_function_word, tokenize

if TYPE_CHECKING:
    from segviz.stress import DevItem

FORCED_MIN_K = 4
LABELS = {
    **CONSTRAINT_LABELS,
    "pg": "PG",
    "random": "ours, forced random plan",
    "reversed": "ours, forced reversed plan",
}
_FAITH_KEYS = ("wrong", "repeated", "missing", "hallucinated", "total_records")



# ----------------------------------------------------------------------------- aggregation

_STUTTER = re.compile(r"\b([^\W\d_]{2,})\s+\1\b", re.IGNORECASE)


def stutters(text: str, records: list = ()) -> bool:
    """True when a word is said twice in a row ("the discoverer discoverer"), unless a subject or
    value of ``records`` says it so ("A Long Long Way"): what a model writes about a relation it
    cannot read (the ``relations`` suite)."""
    twice = doubled_words(records)
    return any(m.group(1).lower() not in twice for m in _STUTTER.finditer(text))


LOOP = 4  # loops: the same word again within this many words


def loops(text: str, records: list = ()) -> bool:
    """True when a word that no subject or value of ``records`` holds (two letters or more, no
    function word) comes again within :data:`LOOP` words: a text that loops on its relation's
    words ("the location of the location", "the governing body of governing body") as a model
    does that cannot find its way from one record to the next under a forced plan. Read from the
    text alone, whichever system wrote it (the ``babble`` rule works on segments)."""
    held = entity_tokens(records)
    words = tokenize(text)
    return any(
        w in words[i + 1 : i + 1 + LOOP]
        for i, w in enumerate(words)
        if len(w) > 1 and any(c.isalpha() for c in w) and not is_function_word(w) and w not in held
    )


def aggregate(rows: list[dict], items: list[DevItem] | None = None, scored: bool = True) -> dict:
    """Pooled counts of ``rows``: SER, checker counts, faithful segment share, loops and stutters
    (read against ``items``' records where given), BLEU (with ``items``, unless not ``scored``:
    forced plans have no references)."""
    faith = {k: sum(r["faith"][k] for r in rows) for k in _FAITH_KEYS}
    errors = sum(faith[k] for k in _FAITH_KEYS[:-1])
    seg_rows = [r["seg"] for r in rows if r["seg"]]
    rec = sum(s["record_segments"] for s in seg_rows)
    out = {
        "outputs": len(rows),
        **faith,
        "ser": errors / faith["total_records"] if faith["total_records"] else 0.0,
        "faithful_share": sum(s["faithful"] for s in seg_rows) / rec if rec else None,
        "fallbacks": sum(r["fallback"] for r in rows),
        "unheld": sum(r["unheld"] > 0 for r in rows) / len(rows) if rows and all("unheld" in r for r in rows) else None,
        "invented": sum(r["invented"] > 0 for r in rows) / len(rows) if rows and all("invented" in r for r in rows) else None,
        "stutter": sum(stutters(r["text"], items[r["item"]].records if items else ()) for r in rows) / len(rows)
        if rows else 0.0,
        "loops": sum(loops(r["text"], items[r["item"]].records) for r in rows) / len(rows) if rows and items else None,
    }
    if items is not None and rows and scored:
        out["bleu"] = bleu([r["text"] for r in rows], [items[r["item"]].refs for r in rows])
    verbatim = [v for r in rows for v in r.get("verbatim") or []]
    for kind in dict.fromkeys(k for k, _, _ in verbatim):
        stated = [ok for k, _, ok in verbatim if k == kind]
        out[f"verbatim_{kind}"] = sum(stated) / len(stated)
    if verbatim:
        out["verbatim_all"] = sum(all(ok for _, _, ok in r["verbatim"]) for r in rows) / len(rows)
    return out


def _select(
    rows: list[dict], items: list[DevItem], half: str, system: str, keep=lambda it: True
) -> list[dict]:
    return [
        r for r in rows if r["system"] == system and items[r["item"]].half == half and keep(items[r["item"]])
    ]


def _errors(row: dict) -> int:
    return sum(row["faith"][k] for k in _FAITH_KEYS[:-1])


def references(long: list[dict], items: list[DevItem], dataset: str) -> dict:
    """What +RM's cost reads against, for the rows of one K: the share of the inputs' references
    that leave a record out (by the checker), the +RM cost (BLEU points) on the inputs whose
    unconstrained output the checker finds exact (``complete``: how many), and the +RM cost on
    every input scored against its references that the checker finds exact (``cost_exact_refs``;
    all of an input's references where none is): a text that says every record cannot match a
    reference that leaves one out, however well it is worded; and how sure the +RM cost on every
    input is (``cost_interval``: :func:`_cost_interval`)."""
    from segviz.faithfulness import check

    inputs = {r["item"]: items[r["item"]] for r in long}
    reports = {i: [(x, check(dataset, it.records, x)) for x in it.refs] for i, it in inputs.items()}
    exact = {i: [x for x, rep in reps if rep.errors == 0] for i, reps in reports.items()}
    n_refs = sum(len(reps) for reps in reports.values())
    gaps = sum(rep.missing > 0 for reps in reports.values() for _, rep in reps)
    done = {r["item"] for r in long if r["system"] == "none" and not _errors(r)}
    sel = {s: [r for r in long if r["system"] == s and r["item"] in done] for s in ("none", "rm")}
    cost = None
    if done and all(sel.values()):
        cost = (aggregate(sel["none"], items)["bleu"] - aggregate(sel["rm"], items)["bleu"]) * 100
    return {"refs_leaving_out": gaps / n_refs if n_refs else 0.0, "complete": len(done), "cost_complete": cost,
            "cost_exact_refs": _cost_against(long, {i: rs or inputs[i].refs for i, rs in exact.items()}),
            "cost_interval": _cost_interval(long, {i: it.refs for i, it in inputs.items()})}


def _cost_interval(long: list[dict], refs: dict[int, list[str]]) -> tuple[float, float] | None:
    """The 95% paired-bootstrap interval of +RM's cost (BLEU points, ``none`` minus ``rm``) over
    the inputs of ``long`` (1000 draws, seed 0; :func:`segviz.metrics.bleu_gap_interval`): with
    30 to 100 inputs a bucket's cost moves by a point or more from the draw of inputs alone."""
    by = _paired(long)
    if by is None:
        return None
    stats = {s: bleu_stats([t for _, t in rows], [refs[i] for i, _ in rows]) for s, rows in by.items()}
    return bleu_gap_interval(stats["none"], stats["rm"])


def _paired(long: list[dict]) -> dict[str, list[tuple[int, str]]] | None:
    """``{"none": [(item, text)], "rm": [...]}`` in item order; None unless both systems have the
    same inputs (and some)."""
    by = {s: sorted((r["item"], r["text"]) for r in long if r["system"] == s) for s in ("none", "rm")}
    return by if by["none"] and [i for i, _ in by["none"]] == [i for i, _ in by["rm"]] else None


def _cost_against(long: list[dict], refs: dict[int, list[str]]) -> float | None:
    """BLEU points that +RM (``rm`` rows) loses against ``none`` over the inputs of ``long``,
    each scored against ``refs[item]``."""
    by = _paired(long)
    if by is None:
        return None
    score = lambda rows: bleu([t for _, t in rows], [refs[i] for i, _ in rows])  # noqa: E731
    return (score(by["none"]) - score(by["rm"])) * 100


def summarise(
    results: dict[str, list[dict]], items: list[DevItem], systems: list[str], dataset: str | None = None,
    relations: dict | None = None,
) -> dict:
    """``{suite: {half: ...}}``: per-system aggregates (forced, unseen) and per-K ones (long);
    with ``dataset`` also :func:`references` per half and K (``"references"``); with
    ``relations`` (the segment checkpoint's relation words) the *relations* suite's share of
    outputs saying another relation's words."""
    long, out = results.get("long", []), {}
    big = lambda it: len(it.records) >= FORCED_MIN_K  # noqa: E731
    for half in [h for h in HALVES if any(it.half == h for it in items)]:
        if "forced" in results:
            own = {s: aggregate(_select(long, items, half, s, big), items, scored=False) for s in systems}
            forced = {
                s: aggregate(_select(results["forced"], items, half, s), items, scored=False) for s in ("random", "reversed")
            }
            out.setdefault("forced", {})[half] = {**own, **forced}
        for suite in [s for s in ("unseen", "figures", "closed", "codes") if results.get(s)]:
            sel = {s: _select(results[suite], items, half, s) for s in systems}
            real_items = {s: {r["item"] for r in sel[s]} for s in systems}
            out.setdefault(suite, {})[half] = {
                s: {
                    **aggregate(sel[s]),
                    "ser_real": aggregate(
                        [r for r in _select(long, items, half, s) if r["item"] in real_items[s]]
                    )["ser"],
                }
                for s in systems
            }
        if results.get("relations"):
            out.setdefault("relations", {})[half] = _relations(results["relations"], long, items, half, systems, relations)
        if long:
            Ks = sorted({len(it.records) for it in items if it.half == half})
            out.setdefault("long", {})[half] = {
                str(K): {
                    s: aggregate(_select(long, items, half, s, lambda it, K=K: len(it.records) == K), items)
                    for s in systems
                }
                for K in Ks
            }
            if dataset and {"none", "rm"} <= set(systems):
                out.setdefault("references", {})[half] = {
                    str(K): references(
                        [r for r in long if items[r["item"]].half == half and len(items[r["item"]].records) == K],
                        items, dataset,
                    )
                    for K in Ks
                }  # fmt: skip
    return out


def _relations(
    rows: list[dict], long: list[dict], items: list[DevItem], half: str, systems: list[str], relations: dict | None = None
) -> dict:
    """Per system: the ``relations`` suite's aggregate (with BLEU) and, as ``real``, the long
    suite's on the same inputs (relations read); with the checkpoint's ``relations`` (its
    lexicon's relation words) also the share of outputs that say a relation the input does not
    hold (``alien``, :func:`segviz.lexicon.alien_words`)."""
    out = {}
    for s in systems:
        sel = _select(rows, items, half, s)
        done = {r["item"] for r in sel}
        real = [r for r in _select(long, items, half, s) if r["item"] in done]
        if sel:
            out[s] = {**aggregate(sel, items), "real": aggregate(real, items) if real else None}
            if relations:
                out[s]["alien"] = _alien_share(sel, items, relations)
                if real:
                    out[s]["real"]["alien"] = _alien_share(real, items, relations)
    return out


def _alien_share(rows: list[dict], items: list[DevItem], relations: dict) -> float:
    """The share of ``rows`` whose text says a relation word none of whose relations the input
    holds (:func:`segviz.lexicon.alien_words`)."""
    from segviz.lexicon import alien_words

    return sum(bool(alien_words(items[r["item"]].records, r["text"], relations)) for r in rows) / len(rows)


# ----------------------------------------------------------------------------- tables


def _points(v: float | None) -> str:
    return "n/a" if v is None else f"{v:+.1f}"


def _interval(v: tuple[float, float] | None) -> str:
    return "n/a" if v is None else f"[{v[0]:+.1f}, {v[1]:+.1f}]"


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}%"


def _table(head: list[str], rows: Iterable[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _names(by_system: dict[str, dict]) -> bool:
    """Whether the rows count invented names (WebNLG, :mod:`segviz.entities`): their column is shown."""
    return any(a.get("invented") is not None for a in by_system.values())


def forced_table(by_system: dict[str, dict]) -> str:
    head = [
        "system (K >= 4)",
        "outputs",
        "SER",
        "wrong",
        "added",
        "missing",
        "repeated",
        "faithful segments",
        "invented numbers",
        *(["invented names"] if _names(by_system) else []),
        "loops",
        "fallbacks",
    ]

    def row(s: str, a: dict) -> list[str]:
        counts = [str(a[k]) for k in ("wrong", "hallucinated", "missing", "repeated")]
        return [
            LABELS[s],
            str(a["outputs"]),
            _pct(a["ser"]),
            *counts,
            _pct(a["faithful_share"]),
            _pct(a.get("unheld")),
            *([_pct(a.get("invented"))] if _names(by_system) else []),
            _pct(a.get("loops")),
            str(a["fallbacks"]),
        ]

    return _table(head, (row(s, a) for s, a in by_system.items()))


def unseen_table(by_system: dict[str, dict], word: str = "verbatim", stutter: bool = False) -> str:
    """Unseen values (``word``: "verbatim") or invented figures ("stated": in any written form);
    with ``stutter`` the share of outputs that say a word twice in a row."""
    kinds = [k for k in next(iter(by_system.values()), {}) if k.startswith("verbatim_")]
    head = [
        "system",
        "outputs",
        *(k.replace("verbatim_", "") + " " + word for k in kinds),
        "SER (invented)",
        "SER (real values)",
        "ratio",
        "faithful segments",
        "invented numbers",
        *(["invented names"] if _names(by_system) else []),
        *(["stutters"] if stutter else []),
    ]

    def row(s: str, a: dict) -> list[str]:
        ratio = a["ser"] / a["ser_real"] if a["ser_real"] else None
        return [
            LABELS[s],
            str(a["outputs"]),
            *(_pct(a[k]) for k in kinds),
            _pct(a["ser"]),
            _pct(a["ser_real"]),
            "n/a" if ratio is None else f"{ratio:.2f}x",
            _pct(a["faithful_share"]),
            _pct(a.get("unheld")),
            *([_pct(a.get("invented"))] if _names(by_system) else []),
            *([_pct(a["stutter"])] if stutter else []),
        ]

    return _table(head, (row(s, a) for s, a in by_system.items()))


def long_table(by_k: dict[str, dict[str, dict]], refs: dict[str, dict] | None = None) -> str:
    """Per K: BLEU and SER of every system and what +RM costs; with ``refs`` (:func:`references`)
    also the share of references that leave a record out, the cost where ours left none out and
    the cost against the exact references only."""
    systems = list(next(iter(by_k.values()), {}))
    head = [
        "K",
        "inputs",
        *(f"BLEU {LABELS[s]}" for s in systems),
        "+RM cost (BLEU)",
        *(["+RM cost, 95% interval", "references leaving a record out", "+RM cost where ours is exact (inputs)", "+RM cost against exact references"] if refs else []),
        *(f"SER {LABELS[s]}" for s in systems),
    ]
    names = any(_names(a) for a in by_k.values())  # WebNLG (segviz.entities)
    head += [f"invented names {LABELS[s]}" for s in systems] if names else []

    def row(K: str, a: dict[str, dict]) -> list[str]:
        cost = (a["none"]["bleu"] - a["rm"]["bleu"]) * 100 if a["none"]["outputs"] else None
        ref = refs.get(K) if refs else None
        exact = "n/a" if not ref or ref["cost_complete"] is None else f"{_points(ref['cost_complete'])} ({ref['complete']})"
        return [
            K,
            str(a["none"]["outputs"]),
            *(f"{a[s].get('bleu', 0):.4f}" for s in systems),
            _points(cost),
            *([_interval(ref and ref.get("cost_interval")), _pct(ref["refs_leaving_out"]) if ref else "n/a", exact,
               _points(ref and ref.get("cost_exact_refs"))] if refs else []),
            *(_pct(a[s]["ser"]) for s in systems),
            *((_pct(a[s].get("invented")) for s in systems) if names else ()),
        ]

    return _table(head, (row(K, a) for K, a in by_k.items()))


def relations_table(by_system: dict[str, dict]) -> str:
    """Relations unseen against read: BLEU, SER, stutters and (where counted) outputs saying
    another relation's words (same inputs)."""
    head = ["system", "outputs", "BLEU (unseen)", "BLEU (read)", "SER (unseen)", "SER (read)", "stutters (unseen)", "stutters (read)"]
    alien = any("alien" in a for a in by_system.values())
    head += ["another relation's words (unseen)", "another relation's words (read)"] if alien else []

    def row(s: str, a: dict) -> list[str]:
        real = a["real"] or {}
        return [
            LABELS[s],
            str(a["outputs"]),
            f"{a['bleu']:.4f}",
            f"{real['bleu']:.4f}" if "bleu" in real else "n/a",
            _pct(a["ser"]),
            _pct(real.get("ser")),
            _pct(a["stutter"]),
            _pct(real.get("stutter")),
            *([_pct(a.get("alien")), _pct(real.get("alien"))] if alien else []),
        ]

    return _table(head, (row(s, a) for s, a in by_system.items()))


def render(summary: dict) -> str:
    """Markdown tables of :func:`summarise`, one per suite and half."""
    titles = {
        "forced": ("Forced plans", forced_table),
        "unseen": ("Unseen values", unseen_table),
        "long": ("Long inputs", long_table),
        "figures": ("Invented dates and numbers", lambda data: unseen_table(data, "stated")),
        "relations": ("Unseen relations", relations_table),
        "closed": ("Values outside the closed sets", lambda data: unseen_table(data, stutter=True)),
        "codes": ("Invented codes", unseen_table),
    }
    parts = []
    for suite, (title, fmt) in titles.items():
        for half, data in summary.get(suite, {}).items():
            table = fmt(data, summary.get("references", {}).get(half)) if suite == "long" else fmt(data)
            parts.append(f"**{title}, {half} half**\n\n{table}")
    return "\n\n".join(parts)
