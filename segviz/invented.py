"""Invented names and places for the unseen-value stress suite (``python -m segviz.stress``).

E2E train, dev and the usual test set share the same 34 names and 19 ``near`` values, so no
benchmark sees a name the model has never read; every user who types their own records does.
These values (``invented.json``) are made up for that purpose: multi-word, with apostrophes, digits and accents,
and none occurs in the E2E or WebNLG training data (``tests/test_stress.py`` checks this where
the data are present). Substitution is seeded by the input, so a suite is reproducible.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path

from segviz.records import Record

_LISTS = json.loads(Path(__file__).with_name("invented.json").read_text(encoding="utf-8"))
NAMES: tuple[str, ...] = tuple(_LISTS["names"])  # 60 venue names
PLACES: tuple[str, ...] = tuple(_LISTS["places"])  # 30 landmarks, for E2E ``near``


def _rng(records: list[Record], seed: int) -> random.Random:
    key = "\n".join(sorted(r.label for r in records))
    return random.Random(f"{seed}:{hashlib.sha1(key.encode()).hexdigest()}")


def substitute_e2e(records: list[Record], seed: int = 0) -> list[Record]:
    """``records`` with ``name`` from :data:`NAMES` and ``near`` from :data:`PLACES`."""
    rng = _rng(records, seed)
    pools = {"name": rng.choice(NAMES), "near": rng.choice(PLACES)}
    return [Record(r.attribute, pools[r.attribute]) if r.attribute in pools else r for r in records]


def _replaceable(entity: str) -> bool:
    """A named entity (letters, no digits): dates, numbers and measures are kept."""
    return bool(re.search(r"[^\W\d_]", entity)) and not re.search(r"\d", entity)


def names_e2e(records: list[Record]) -> list[str]:
    """The values of ``records`` that name a venue: ``name`` and ``near``."""
    return [r.value for r in records if r.attribute in ("name", "near")]


def names_webnlg(records: list[Record]) -> list[str]:
    """The named subjects and objects of ``records`` (letters, no digits), in input order."""
    return [e for r in records for e in (r.subject or "", r.value) if _replaceable(e)]


def substitute_webnlg(records: list[Record], seed: int = 0) -> list[Record]:
    """``records`` with every named subject / object replaced by an invented one (the same
    entity always by the same name within an input; underscores for spaces, as in WebNLG)."""
    entities = list(dict.fromkeys(names_webnlg(records)))
    new = _rng(records, seed).sample(NAMES + PLACES, len(entities))
    table = {e: n.replace(" ", "_") for e, n in zip(entities, new, strict=True)}
    return [Record(r.attribute, table.get(r.value, r.value), table.get(r.subject or "", r.subject)) for r in records]


def invented_values(original: list[Record], substituted: list[Record]) -> list[tuple[str, str]]:
    """``(kind, value)`` for every value the substitution put in (underscores read as spaces),
    each once: kind is the E2E attribute (``name`` / ``near``) or ``entity`` for WebNLG."""
    out = []
    for old, new in zip(original, substituted, strict=True):
        if new.subject is None:
            out += [(new.attribute, new.value)] if new.value != old.value else []
        else:
            out += [("entity", n) for o, n in ((old.subject, new.subject), (old.value, new.value)) if n != o]
    return list(dict.fromkeys((k, v.replace("_", " ")) for k, v in out))


def states_verbatim(value: str, text: str) -> bool:
    """``value`` appears in ``text`` as a whole phrase: case-insensitive, any run of spaces, but
    every letter, accent, apostrophe and digit as written."""
    words = value.split()
    rx = r"(?<!\w)" + r"\s+".join(map(re.escape, words)) + r"(?!\w)"
    return re.search(rx, text, flags=re.IGNORECASE) is not None
