"""Value substitution: training references whose names are replaced by random invented ones.

E2E train, dev and test share the same 34 names and 19 ``near`` values, so a model can learn to
*generate* "the eagle" from its vocabulary instead of copying it from the record, and a name it
has never read comes out garbled ("The Copper Kettle" -> "The Copper"). With ``--substitute p``
a share ``p`` of the training examples get fresh names made of random syllables (so the words
are out of the vocabulary and only the copy path can say them), changed in the records and in
the reference alike (docs/design.md, "Value substitution"). Applied to both systems.

A value is substituted only where the reference says it verbatim and says none of its content
words elsewhere: otherwise the reference would mention the old name next to records that no
longer hold it, and teach the model to invent it. The names made here never equal a value of
the stress suite (:mod:`segviz.invented`), which measures what this is for.
"""

from __future__ import annotations

import random
import re

from segviz import datasets
from segviz.data import Example
from segviz.faithfulness.e2e_rules import E2E_VALUES
from segviz.invented import NAMES, OPEN_VALUES, PLACES, figure_kind, new_figure
from segviz.records import MONTHS, Record, entity_text, relation_words, tokenize

_ONSETS = ("b", "br", "c", "ch", "cl", "d", "dr", "f", "g", "gr", "h", "k", "l", "m", "n", "p", "pr", "r", "s", "st",
           "t", "th", "tr", "v", "w", "z")  # fmt: skip
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "ou", "a", "e", "i", "o", "é", "ø")
_CODAS = ("", "", "n", "r", "l", "s", "m", "ck", "nd", "rt")
_PATTERNS = ("{A}", "The {A}", "{A} {B}", "The {A} {B}", "{A}'s", "{A} & {B}", "Café {A}", "{A} {n}", "{A}-on-{B}",
             "The {A} of {B}")  # fmt: skip
# ``train --abbreviations`` (off = the patterns above only): names with an abbreviation's full stop
# inside them, as real places and venues have ("St. Agnes Quay", "Dr. Brown's"): the stop is a
# token of its own, which a model that never copied one through reads as the end of a sentence.
_ABBREVIATED = ("St. {A}", "St. {A} {B}", "Mt. {A}", "Dr. {A}'s", "Ft. {A} {B}")
_FORBIDDEN = {v.lower() for v in NAMES + PLACES}


def _word(rng: random.Random, pool: list[str]) -> str:
    """A made-up word of 1-3 syllables, or (half the time, if ``pool``) a real word from it:
    names are often ordinary words ("The Copper Kettle"), which must be copied all the same."""
    if pool and rng.random() < 0.5:
        return rng.choice(pool).capitalize()
    syl = [
        rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
        for _ in range(rng.choice((1, 2, 2, 3)))
    ]
    return "".join(syl).capitalize()


def random_name(rng: random.Random, pool: list[str] = (), abbreviations: bool = False) -> str:
    """A made-up name such as "The Brouthal Lantern", "Krimor's" or "Vaslo 17" (with
    ``abbreviations`` also "St. Brouthal" or "Dr. Krimor's")."""
    patterns = _PATTERNS + _ABBREVIATED if abbreviations else _PATTERNS
    while True:
        name = rng.choice(patterns).format(A=_word(rng, pool), B=_word(rng, pool), n=rng.randint(2, 99))
        if name.lower() not in _FORBIDDEN:
            return name


def word_pool(examples: list[Example], min_count: int = 20) -> list[str]:
    """Alphabetic words of 4+ letters seen at least ``min_count`` times in the references."""
    counts: dict[str, int] = {}
    for ex in examples:
        for t in ex.target:
            if len(t) >= 4 and t.isalpha():
                counts[t] = counts.get(t, 0) + 1
    return sorted(w for w, c in counts.items() if c >= min_count)


def _content(tokens: list[str]) -> set[str]:
    return {t for t in tokens if re.search(r"[^\W\d_]", t) and t not in ("the", "of", "and", "&", "on", "'s")}


def _replace(target: list[str], old: list[str], new: list[str], others: set[str]) -> list[str] | None:
    """``target`` with every occurrence of ``old`` replaced by ``new``; None when ``old`` does not
    occur or one of its content words is left elsewhere (the reference says it in other words),
    unless that word belongs to another name of the input (``others``: "aarhus" of Aarhus)."""
    out, i, hits = [], 0, 0
    while i < len(target):
        if target[i : i + len(old)] == old:
            out += new[1:] if new[0] == "the" and out and out[-1] == "the" else new  # no "the the"
            i += len(old)
            hits += 1
        else:
            out.append(target[i])
            i += 1
    if not hits or _content(old) & set(out) - _content(new) - others:
        return None
    return out


def _entity_tokens(value: str) -> list[str]:
    s = value.replace("_", " ").strip()
    return tokenize(s[1:-1] if len(s) >= 2 and s[0] == s[-1] == '"' else s)


def _names(dataset: str, records: list[Record]) -> list[str]:
    """The values to substitute, longest first (so "Aarhus Airport" goes before "Aarhus")."""
    names = datasets.get(dataset).names(records)
    return sorted(dict.fromkeys(names), key=lambda v: -len(_entity_tokens(v)))


def _inside(short: list[str], long: list[str]) -> bool:
    return any(long[i : i + len(short)] == short for i in range(len(long) - len(short) + 1))


def substitute_example(
    dataset: str, ex: Example, rng: random.Random, pool: list[str] = (), abbreviations: bool = False
) -> Example:
    """``ex`` with its names (E2E ``name`` / ``near``; WebNLG named subjects and objects)
    replaced by :func:`random_name` values wherever that keeps records and reference in step."""
    table, kept, target = {}, [], ex.target
    names = _names(dataset, ex.records)
    for value in names:
        others = set().union(*(_content(_entity_tokens(v)) for v in names if v != value))
        new = random_name(rng, pool, abbreviations)
        new_value = new.replace(" ", datasets.get(dataset).space)
        old_toks = _entity_tokens(value)
        replaced = (
            None
            if any(_inside(old_toks, k) for k in kept)
            else _replace(target, old_toks, _entity_tokens(new_value), others)
        )
        if replaced is None:
            kept.append(old_toks)  # its mentions stay; nothing inside them may change
        else:
            table[value], target = new_value, replaced
    if not table:
        return ex
    records = [Record(r.attribute, table.get(r.value, r.value), table.get(r.subject, r.subject) if r.subject else None)
               for r in ex.records]  # fmt: skip
    return Example(ex.key + "#sub", records, target, ex.refs)


def substitute_values(
    dataset: str, examples: list[Example], share: float, seed: int, abbreviations: bool = False
) -> list[Example]:
    """A seeded share ``share`` of ``examples`` passed through :func:`substitute_example`, with
    half of the name words drawn from the references' own words (:func:`word_pool`)."""
    if share <= 0:
        return examples
    rng, pool = random.Random(seed), word_pool(examples)
    return [
        substitute_example(dataset, ex, rng, pool, abbreviations) if rng.random() < share else ex
        for ex in examples
    ]


# ----------------------------------------------------------------------------- open values (session 24)
# ``train --open-values p``: a share ``p`` of the E2E training examples get their ``food``, ``area``
# and ``eatType`` values replaced by invented ones outside the closed sets, where the reference
# says the value verbatim, so the model copies a cuisine, an area or a kind of venue that users
# type ("food[Thai]", "area[old town]") instead of saying one of the seven foods it knows. The
# values made here never equal a closed-set value or one of the stress suite's (``--suites closed``).

_OPEN_FORMS = {"food": ("{A}", "{A}", "{A} {B}"), "area": ("{a}", "{a} {b}"), "eatType": ("{a}", "{a} {b}")}
_CLOSED = {v.lower() for vs in OPEN_VALUES.values() for v in vs} | {v for a in _OPEN_FORMS for v in E2E_VALUES[a]}


def random_value(rng: random.Random, attribute: str, pool: list[str] = ()) -> str:
    """An invented value of ``attribute`` (E2E ``food``: "Brouthal"; ``area``, ``eatType``: lower
    case, "krimor quay"), half its words drawn from ``pool`` (:func:`word_pool`)."""
    while True:
        a, b = _word(rng, pool), _word(rng, pool)
        value = rng.choice(_OPEN_FORMS[attribute]).format(A=a, B=b, a=a.lower(), b=b.lower())
        if value.lower() not in _CLOSED:
            return value


def open_values_example(ex: Example, rng: random.Random, pool: list[str] = ()) -> Example:
    """``ex`` with each ``food`` / ``area`` / ``eatType`` value the reference says verbatim (and
    none of whose words it says elsewhere) replaced by :func:`random_value`, records and
    reference alike."""
    table, target = {}, ex.target
    names = {t for r in ex.records if r.attribute in ("name", "near") for t in _content(tokenize(r.value))}
    for r in ex.records:
        if r.attribute in _OPEN_FORMS:
            new = random_value(rng, r.attribute, pool)
            said = _replace(target, tokenize(r.value), tokenize(new), names)
            if said is not None:
                table[r.attribute], target = new, said
    if not table:
        return ex
    records = [Record(r.attribute, table.get(r.attribute, r.value)) if r.subject is None else r for r in ex.records]
    return Example(ex.key + "#open", records, target, ex.refs)


def open_values(dataset: str, examples: list[Example], share: float, seed: int) -> list[Example]:
    """A seeded share ``share`` of the E2E ``examples`` through :func:`open_values_example`
    (WebNLG: unchanged, its values are open already)."""
    if share <= 0 or dataset != "e2e":
        return examples
    venues = {t for ex in examples for r in ex.records if r.attribute in ("name", "near") for t in tokenize(r.value.lower())}
    rng, pool = random.Random(f"open:{seed}"), [w for w in word_pool(examples) if w not in venues | _CLOSED]
    return [open_values_example(ex, rng, pool) if rng.random() < share else ex for ex in examples]


# ----------------------------------------------------------------------------- figures (session 21)
# ``train --figures p``: a share ``p`` of the WebNLG training examples get their dates and numbers
# replaced by invented ones (:func:`segviz.invented.new_figure`, as the stress suite's figures
# are made), in the records and the reference alike, so that the model copies a figure's digits
# and says the month of *its* date, not one it has learnt with a year. A value whose reference
# does not say it whole (the year alone, a rounded number) is left as it is.

_ORDINALS = ("st", "nd", "rd", "th")


def _ordinal(day: int) -> str:
    return "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


def _date_tokens(target: list[str], value: str, new: str) -> list[str] | None:
    """``target`` with the date ``value`` (``1827-11-26``) said as ``new``: in figures ("1827 - 11
    - 26") or written out ("26 th of november 1827", "nov . 26 , 1827"): its year, month word
    (the same style: a name or its abbreviation) and day, each within six tokens of the year;
    None when some mention of the year is not the whole date."""
    (y, mo, d), (y2, mo2, d2) = (entity_text(v).split("-") for v in (value, new))
    month, month2 = MONTHS[int(mo) - 1], MONTHS[int(mo2) - 1]
    out, years = list(target), [i for i, t in enumerate(target) if t == y]
    for i in years:
        if target[i + 1 : i + 5] == ["-", mo, "-", d]:
            out[i : i + 5] = [y2, "-", mo2, "-", d2]
            continue
        near = range(max(0, i - 6), min(len(target), i + 7))
        m = [j for j in near if target[j] in (month, month[:3])]
        day = [j for j in near if target[j] in (d, str(int(d)))]
        if not m or not day:
            return None
        out[i], out[m[0]] = y2, month2 if target[m[0]] == month else month2[:3]
        out[day[0]] = d2 if target[day[0]].startswith("0") else str(int(d2))  # "02" stays padded, "2" not
        if day[0] + 1 < len(out) and out[day[0] + 1] in _ORDINALS:
            out[day[0] + 1] = _ordinal(int(d2))
    return out if years else None


def _number_tokens(target: list[str], value: str, new: str) -> list[str] | None:
    """``target`` with the number of ``value`` said as ``new``'s: the figure as written ("1.8288")
    or, for a whole number, without its ".0" ("2014" of ``2014.0``); None when it is not said so."""
    head = lambda v: tokenize(entity_text(v))[0 if not entity_text(v).startswith("-") else 1]  # noqa: E731
    old, new_head = head(value), head(new)
    if len(old) < 2:  # "5": too likely to be another figure of the text
        return None
    forms = {old: new_head, **({old[:-2]: new_head[:-2]} if old.endswith(".0") else {})}
    if not any(t in forms for t in target):
        return None
    return [forms.get(t, t) for t in target]


def substitute_figures_example(ex: Example, rng: random.Random) -> Example:
    """``ex`` with each date and number object replaced by an invented one wherever the
    reference says it whole (:func:`_date_tokens`, :func:`_number_tokens`)."""
    table, target = {}, ex.target
    for value in dict.fromkeys(r.value for r in ex.records if figure_kind(r.value)):
        new = new_figure(value, rng)
        said = (_date_tokens if figure_kind(value) == "date" else _number_tokens)(target, value, new)
        if said is not None:
            table[value], target = new, said
    if not table:
        return ex
    records = [Record(r.attribute, table.get(r.value, r.value), r.subject) for r in ex.records]
    return Example(ex.key + "#fig", records, target, ex.refs)


def substitute_figures(examples: list[Example], share: float, seed: int) -> list[Example]:
    """A seeded share ``share`` of ``examples`` through :func:`substitute_figures_example`."""
    if share <= 0:
        return examples
    rng = random.Random(f"figures:{seed}")
    return [substitute_figures_example(ex, rng) if rng.random() < share else ex for ex in examples]


# ----------------------------------------------------------------------------- unseen relations (session 22)
# ``train --relation-dropout p``: each record of a WebNLG training example has its relation words
# hidden with probability ``p`` (:meth:`segviz.data.Vocab.hiding`): read as words the model never
# saw, so it learns to say a record whose relation it does not know (WebNLG's unseen categories:
# ``discoverer``, ``shipBeam``) from the words it can copy, as it says an unseen name.


def relation_dropout(examples: list[Example], share: float, seed: int) -> list[set[str]]:
    """For each example, the relation words to hide (:func:`segviz.records.relation_words` of a
    seeded draw of its records, each with probability ``share``); empty sets when ``share`` is 0."""
    if share <= 0:
        return [set() for _ in examples]
    rng = random.Random(f"relations:{seed}")
    out = []
    for ex in examples:
        drawn = [k for k in range(len(ex.records)) if rng.random() < share]
        out.append(relation_words(ex.records, drawn) if drawn else set())
    return out
