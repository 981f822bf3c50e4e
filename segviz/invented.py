"""Invented names and places for the unseen-value stress suite (``python -m segviz.stress``).

E2E train, dev and the usual test set share the same 34 names and 19 ``near`` values, so no
benchmark sees a name the model has never read; every user who types their own records does.
These values are made up for that purpose: multi-word, with apostrophes, digits and accents,
and none occurs in the E2E or WebNLG training data (``tests/test_stress.py`` checks this where
the data are present). Substitution is seeded by the input, so a suite is reproducible.
"""

from __future__ import annotations

import hashlib
import random
import re

from segviz.records import Record

NAMES = (
    "The Copper Kettle", "Blue Heron Café", "Quillfeather's", "The Brass Lantern", "Marigold & Thyme",
    "O'Malley's Tavern", "Café Ørsted", "The 7 Lanterns", "Juniper Hollow", "The Velvet Ladle",
    "Saffron Wharf", "Bramblewood Kitchen", "The Gilded Thimble", "Pemberton's Larder", "Zephyr Noodle House",
    "Ostrava Grill", "The Tin Pelican", "Lumière Bistro", "Hazelmere", "The Wandering Fig",
    "Kestrel & Crow", "Number 42 Dining Rooms", "The Salt Cellar", "Tamarind Terrace", "Château Brévent",
    "The Crooked Spoon", "Mulberry Yard", "Fennimore's", "The Ochre Door", "Nightjar Canteen",
    "Calloway Rooms", "The Lark and Lemon", "Ravensworth Inn", "Pickwick's Pantry", "The Amber Gull",
    "Sorrel Street Kitchen", "Dunmore Hall Café", "The Hollow Oak", "Wrenfield", "Piccadilly 88",
    "The Quiet Walrus", "Bellweather's", "Ember & Ash", "The Cobalt Pear", "Ashdown Smokehouse",
    "Gwendolyn's Tearoom", "The Paper Crane", "Harrowgate Diner", "Kittiwake", "The Stag's Antler",
    "Verbena", "Tollgate 3", "The Pewter Mug", "Coriander Court", "Mosswood Brasserie",
    "The Lantern Fish", "Penhallow's", "Ivory Teapot", "The Sable Fox", "Skylark Pavilion",
)  # fmt: skip

PLACES = (
    "Castle Bridge", "The Old Mill", "St. Agnes Quay", "Harbour Lights Cinema", "Elmstead Park",
    "The Wool Exchange", "Kingsmead Station", "Bishop's Gate", "Northcote Library", "The Corn Market",
    "Aldgate Pier 4", "Thornbury Abbey", "The Glasshouse Theatre", "Fenwick Green", "Mill Lane Baths",
    "Côte Blanche Gallery", "Riverside Mews", "The Clock Tower", "Barnaby's Yard", "Prospect Hill",
    "Ladywell Fields", "The Ferry Steps", "Holloway Arcade", "Swan's Nest Lock", "Linden Square",
    "The Tannery", "Westgate Museum", "Orchard Row 12", "Halberd Court", "Moorfield Chapel",
)  # fmt: skip


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


def substitute_webnlg(records: list[Record], seed: int = 0) -> list[Record]:
    """``records`` with every named subject / object replaced by an invented one (the same
    entity always by the same name within an input; underscores for spaces, as in WebNLG)."""
    entities = list(dict.fromkeys(e for r in records for e in (r.subject or "", r.value) if _replaceable(e)))
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
