"""Invented names, places and values for the stress suites (``python -m segviz.stress``).

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
OPEN_VALUES: dict[str, tuple[str, ...]] = {  # E2E values outside the closed sets (the ``closed`` suite)
    "food": tuple(_LISTS["foods"]),  # 30 cuisines, none an E2E food
    "area": tuple(_LISTS["areas"]),  # 12 areas, neither riverside nor city centre
    "eatType": tuple(_LISTS["venue_types"]),  # 12 kinds of venue, none a pub, coffee shop or restaurant
}


def _rng(records: list[Record], seed: int) -> random.Random:
    key = "\n".join(sorted(r.label for r in records))
    return random.Random(f"{seed}:{hashlib.sha1(key.encode()).hexdigest()}")


def substitute_e2e(records: list[Record], seed: int = 0) -> list[Record]:
    """``records`` with ``name`` from :data:`NAMES` and ``near`` from :data:`PLACES`."""
    rng = _rng(records, seed)
    return _with_values(records, {"name": rng.choice(NAMES), "near": rng.choice(PLACES)})


def _with_values(records: list[Record], values: dict[str, str]) -> list[Record]:
    """``records`` with the value of each attribute in ``values`` replaced (E2E)."""
    return [Record(r.attribute, values[r.attribute]) if r.attribute in values else r for r in records]


def substitute_closed_e2e(records: list[Record], seed: int = 0) -> list[Record]:
    """``records`` with ``food``, ``area`` and ``eatType`` from :data:`OPEN_VALUES`: values a user
    types ("food[Thai]") that no E2E input holds, each attribute drawn from its own list."""
    rng = _rng(records, seed)
    return _with_values(records, {a: rng.choice(vs) for a, vs in OPEN_VALUES.items()})


def unchanged(records: list[Record], seed: int = 0) -> list[Record]:
    """No substitution: a suite that does not apply to a dataset (E2E figures, WebNLG closed sets)."""
    return records


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


# ----------------------------------------------------------------------------- figures (session 21)

_DATE = re.compile(r'("?)(\d{4})-(\d{2})-(\d{2})(\1)')
_NUMBER = re.compile(r'("?)(-?\d+(?:\.\d+)?)((?: \([^)]*\)| [^\W\d_][\w ]*)?)(\1)')  # "1.8288", 125800.0 (millimetres)


def figure_kind(value: str) -> str | None:
    """``"date"`` (``1827-11-26``), ``"number"`` (a number, with a unit after it: ``1.8288``,
    ``"125800.0 (millimetres)"``) or None (names, codes such as ``"1/19"``, seasons)."""
    v = value.replace("_", " ")
    return "date" if _DATE.fullmatch(v) else "number" if _NUMBER.fullmatch(v) else None


def new_figure(value: str, rng: random.Random) -> str:
    """Another date (1850-2020, days 1-28), year (1850-2020) or number of the same shape (each
    digit drawn anew, the first not 0 unless it was, sign, decimals and unit kept)."""
    v = value.replace("_", " ")
    if m := _DATE.fullmatch(v):
        y, mo, d = rng.randint(1850, 2020), rng.randint(1, 12), rng.randint(1, 28)
        return f"{m.group(1)}{y}-{mo:02d}-{d:02d}{m.group(5)}"
    q, num, unit, _ = _NUMBER.fullmatch(v).groups()
    if re.fullmatch(r"1\d{3}|20\d\d", num):  # a year stays a year
        return f"{q}{rng.randint(1850, 2020)}{unit}{q}".replace(" ", "_" if "_" in value else " ")
    sign, body = num[: len(num) - len(num.lstrip("-"))], num.lstrip("-")
    whole, zeros = re.fullmatch(r"(.*?)(\.0+)?", body).groups()  # "2014.0": an integer, kept so
    return (q + sign + _redrawn(whole, rng) + (zeros or "") + unit + q).replace(" ", "_" if "_" in value else " ")


def _redrawn(text: str, rng: random.Random) -> str:
    """``text`` with every digit drawn anew, the first not 0 unless it was; the rest kept."""
    return "".join(rng.choice("123456789" if i == 0 and c != "0" else "0123456789") if c.isdigit() else c
                   for i, c in enumerate(text))  # fmt: skip


def _substitute_objects(records: list[Record], seed: int, kind, new) -> list[Record]:
    """``records`` with every object that ``kind`` accepts replaced by ``new(value, rng)`` (the
    same value always by the same one within an input, never one the input holds)."""
    rng, held, table = _rng(records, seed), {r.value for r in records}, {}
    for v in dict.fromkeys(r.value for r in records if kind(r.value)):
        made = new(v, rng)
        while made in held or made in table.values():
            made = new(v, rng)
        table[v] = made
    return [Record(r.attribute, table.get(r.value, r.value), r.subject) for r in records]


def substitute_figures_webnlg(records: list[Record], seed: int = 0) -> list[Record]:
    """``records`` with every date and number object (:func:`figure_kind`) replaced by an invented one."""
    return _substitute_objects(records, seed, figure_kind, new_figure)


# ----------------------------------------------------------------------------- codes (session 33)

_CODE = re.compile(r'("?)([\w./:-]*\d[\w./:-]*)(\1)')  # one word with a digit: "978-0-14-303943-3", "09L/27R"


def code_kind(value: str) -> bool:
    """Whether ``value`` is a code: one word (no space) with a digit and a sign or a letter
    beside it ("978-0-14-303943-3", "09L/27R", "0001-8392", "3XN"), not a date or a number
    (:func:`figure_kind`) and not a name ("Apollo_12")."""
    v = value.replace("_", " ")
    m = _CODE.fullmatch(v)
    return bool(m) and figure_kind(value) is None and not re.search(r"[^\W\d_]{4}", m.group(2)) and not v.isdigit()


def substitute_codes_webnlg(records: list[Record], seed: int = 0) -> list[Record]:
    """``records`` with every code object (:func:`code_kind`) replaced by one of the same shape:
    its digits drawn anew, letters and signs kept ("09L/27R" -> "41L/83R")."""
    return _substitute_objects(records, seed, code_kind, _redrawn)


def invented_figures(original: list[Record], substituted: list[Record]) -> list[tuple[int, str, str]]:
    """``(record index, kind, value)`` of every figure the substitution put in."""
    return [(i, figure_kind(new.value), new.value) for i, (old, new) in enumerate(zip(original, substituted, strict=True))
            if new.value != old.value]  # fmt: skip
