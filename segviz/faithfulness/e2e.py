"""E2E slot checker: see :mod:`segviz.faithfulness` for the rules."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from segviz.faithfulness.common import FaithReport, RecordVerdict, ValueMention, normalise
from segviz.faithfulness.e2e_rules import (  # noqa: F401 (E2E_VENUES is re-exported)
    _AMB_LEVEL,
    _AMBIGUOUS,
    _ANAPHOR,
    _CLAUSE_BREAK,
    _CLAUSE_WINDOW,
    _ELABORATION,
    _NEGATION,
    _NUM,
    _PRICE_CUE,
    _RATING_CUE,
    _RATING_NUM,
    _RULES,
    _SENTENCE,
    _STARS_LEVEL,
    _TOKEN,
    E2E_ATTRIBUTES,
    E2E_VALUES,
    E2E_VENUES,
)
from segviz.records import Record


@dataclass
class _Mention:
    attribute: str
    level: str
    start: int
    end: int
    text: str
    weak: bool = False  # eatType "restaurant", anaphoric "the pub"


def _level(attribute: str, value: str) -> str:
    """Canonical level of an input value (so that ``cheap`` == ``less than £20``)."""
    v = normalise(value)
    if attribute == "priceRange":
        return {"cheap": "low", "less than £20": "low", "moderate": "mid", "£20-25": "mid"}.get(v, "high")
    if attribute == "customer rating":
        return {"low": "low", "1 out of 5": "low", "average": "mid", "3 out of 5": "mid"}.get(v, "high")
    return v


# Common alternative spellings / shortenings of venue names in human texts.
_VENUE_ALIASES = {
    "Crowne Plaza Hotel": ("Crown Plaza Hotel", "Crowne Plaza", "Crown Plaza"),
    "Express by Holiday Inn": ("Holiday Inn Express", "Holiday Inn"),
    "Travellers Rest Beefeater": ("Travelers Rest Beefeater", "Travellers Rest", "Beefeater"),
    "Rainbow Vegetarian Café": ("Rainbow Cafe", "Rainbow Vegetarian"),
    "Raja Indian Cuisine": ("Raja Cuisine", "Raja"),
    "Yippee Noodle Bar": ("Yippee",),
}


def _venue_regex(name: str) -> re.Pattern:
    """Tolerant name pattern: case/accents/apostrophes, optional leading "the", possessive s, aliases."""
    alts = []
    for variant in (name, *_VENUE_ALIASES.get(name, ())):
        words = normalise(variant).split()
        if words and words[0] == "the" and len(words) > 1:
            body = r"(?:the )?" + " ".join(map(re.escape, words[1:]))
        else:
            body = " ".join(map(re.escape, words))
        alts.append(body.replace(" ", r"[\s-]+"))
    return re.compile(r"(?<!\w)(?:" + "|".join(alts) + r")s?(?!\w)")  # not \b: a name may end in "." or ")"


def _last_words(name: str) -> tuple[str, ...] | None:
    """The last word of each spelling :func:`_venue_regex` accepts: a text without any of them
    cannot mention the venue (None: a spelling without words, always searched)."""
    words = [normalise(v).split() for v in (name, *_VENUE_ALIASES.get(name, ()))]
    return None if not all(words) else tuple(w[-1] for w in words)


_VENUE_RES = {normalise(v): (_venue_regex(v), _last_words(v)) for v in E2E_VENUES}


@functools.lru_cache(maxsize=4096)
def _name_pattern(name: str) -> tuple[re.Pattern, tuple[str, ...] | None]:
    """(:func:`_venue_regex`, :func:`_last_words`) of a normalised name, the shipped venues' own."""
    return _VENUE_RES.get(name) or (_venue_regex(name), _last_words(name))


def _find_venues(text: str, names: list[str]) -> list[tuple[str, int, int]]:
    """Non-overlapping venue mentions ``(normalised name, start, end)``, longest first."""
    found = []
    for name in dict.fromkeys([normalise(n) for n in names] + list(_VENUE_RES)):
        rx, last = _name_pattern(name)
        if last is None or any(w in text for w in last):  # the regex needs one of them
            found += [(name, m.start(), m.end()) for m in rx.finditer(text)]
    return _non_overlapping(found, key=lambda f: (f[1], f[2]))


def _non_overlapping(items: list, key) -> list:
    """Greedy: longest spans first, then earliest; drop anything overlapping a kept span."""
    kept: list = []
    for it in sorted(items, key=lambda x: (-(key(x)[1] - key(x)[0]), key(x)[0])):
        s, e = key(it)
        if all(e <= key(k)[0] or s >= key(k)[1] for k in kept):
            kept.append(it)
    return sorted(kept, key=lambda x: key(x)[0])


def _tokens_with_pos(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(text)]


def _clause_tokens(toks: list[tuple[str, int, int]], i: int, direction: int) -> list[tuple[int, str]]:
    """Up to _CLAUSE_WINDOW tokens from position i in ``direction`` (+1/-1), stopping at a clause break."""
    out = []
    j = i + direction
    while 0 <= j < len(toks) and len(out) < _CLAUSE_WINDOW:
        if _CLAUSE_BREAK.match(toks[j][0]):
            break
        out.append((abs(j - i), toks[j][0]))
        j += direction
    return out


def _resolve_ambiguous(word: str, toks: list, i: int) -> str | None:
    """'price' or 'rating' for an ambiguous adjective at token i, from the nearest cue; None if none."""
    best: tuple[int, int, str] | None = None  # (distance, prefer-following, kind)
    for direction in (1, -1):
        for dist, tok in _clause_tokens(toks, i, direction):
            kind = "price" if _PRICE_CUE.match(tok) else "rating" if _RATING_CUE.match(tok) else None
            if kind:
                cand = (dist, 0 if direction == 1 else 1, kind)
                best = min(best, cand) if best else cand
                break
    if best:
        return best[2]
    return "price" if word.startswith("moderate") else None


def _slot_mentions(text: str, masked: list[tuple[int, int]]) -> list[_Mention]:
    """All slot mentions in normalised ``text`` outside the ``masked`` (venue name) spans."""
    cands: list[_Mention] = []
    for attr, level, rx in _RULES:
        for m in rx.finditer(text):
            cands.append(_Mention(attr, level, m.start(), m.end(), m.group(0), weak=(level == "restaurant")))
    for m in _RATING_NUM.finditer(text):
        n = _NUM[next(g for g in m.groups() if g)]
        cands.append(_Mention("customer rating", _STARS_LEVEL[n], m.start(), m.end(), m.group(0)))
    toks = _tokens_with_pos(text)
    for i, (tok, s, e) in enumerate(toks):
        m = _AMBIGUOUS.fullmatch(tok)
        if not m:
            continue
        kind = _resolve_ambiguous(tok, toks, i)
        if kind:
            stem = re.sub(r"(?:er|est|ly)$", "", tok)
            attr = "priceRange" if kind == "price" else "customer rating"
            # a single word: any longer explicit rule covering it wins in _non_overlapping
            cands.append(_Mention(attr, _AMB_LEVEL.get(stem, "mid"), s, e, tok))
    cands = [c for c in cands if all(c.end <= ms or c.start >= me for ms, me in masked)]
    kept = _non_overlapping(cands, key=lambda c: (c.start, c.end))
    for c in kept:
        if c.attribute == "familyFriendly" and c.level == "yes" and _negated(text, toks, c.start):
            c.level = "no"
        if c.attribute == "eatType" and _ANAPHOR.search(text[: c.start]):
            c.weak = True
    return kept


def _negated(text: str, toks: list, start: int) -> bool:
    """A negation word earlier in the same clause (within the window) before position ``start``."""
    i = next((k for k, t in enumerate(toks) if t[1] >= start), len(toks))
    return any(_NEGATION.match(tok) for _, tok in _clause_tokens(toks, i, -1))


def _sentence_of(text: str, pos: int) -> int:
    return len(_SENTENCE.findall(text[:pos]))


def check_e2e(records: list[Record], text: str) -> FaithReport:
    """Verdicts for E2E slot records against one output ``text`` (see module docstring)."""
    norm = normalise(text)
    input_attrs = {r.attribute for r in records}
    found, said, verbatim = _venues_and_values(records, norm)
    venues = [v for v in found if not _overlaps(v[1:], verbatim)]
    mentions = _slot_mentions(norm, [(s, e) for _, s, e in venues] + verbatim)
    by_attr: dict[str, list[_Mention]] = {}
    for m in mentions:
        by_attr.setdefault(m.attribute, []).append(m)

    # venues not explained by the input name / near
    input_names = {normalise(r.value) for r in records if r.attribute in ("name", "near")}
    stray = [v for v in venues if v[0] not in input_names]

    report = FaithReport()
    for idx, r in enumerate(records):
        if r.attribute in ("name", "near"):
            verdict = _venue_verdict(r, norm, venues, stray)
        elif idx in said:  # no rule for its attribute or value: its value said verbatim
            verdict = _verbatim_verdict(said[idx], _strong(by_attr.get(r.attribute, [])), norm)
        else:
            verdict = _slot_verdict(r, by_attr.get(r.attribute, []), norm)
        report.per_record.append(RecordVerdict(idx, r.label, *verdict))

    for attr, ms in by_attr.items():
        if attr not in input_attrs and _strong(ms):
            report.hallucinated.append(attr)
    if "near" not in input_attrs and stray and "name" in input_attrs:
        name_found = any(v[0] == normalise(r.value) for v in venues for r in records if r.attribute == "name")
        if name_found or len(stray) > 1:
            report.hallucinated.append("near")
    elif stray and _venues_said(records, report):  # another venue beside the input's own (session 25)
        report.hallucinated.append("near")
    return report


def _venues_said(records: list[Record], report: FaithReport) -> bool:
    """Whether the input's ``name`` and ``near`` are both said (so a stray venue stands in for
    neither: "… near Burger King … It is located near to the portland arms.")."""
    said = [v.status in ("realised", "repeated") for v, r in zip(report.per_record, records, strict=True)
            if r.attribute in ("name", "near")]
    return len(said) == 2 and all(said)


def _venue_verdict(r: Record, norm: str, venues: list, stray: list) -> tuple[str, str]:
    target = normalise(r.value)
    hits = [v for v in venues if v[0] == target]
    if not hits:
        if stray:  # another venue stands where this one should be
            return "wrong", norm[stray[0][1] : stray[0][2]]
        return "missing", ""
    evidence = norm[hits[0][1] : hits[0][2]]
    if r.attribute == "name":
        sentences = [_sentence_of(norm, s) for _, s, _ in hits]
        repeated = len(sentences) != len(set(sentences))
    else:
        repeated = len(hits) >= 2
    return ("repeated" if repeated else "realised"), evidence


def _strong(ms: list[_Mention]) -> list[_Mention]:
    """Mentions that state a value of their attribute: all but the generic "restaurant"."""
    return [m for m in ms if not (m.attribute == "eatType" and m.level == "restaurant")]


def _verbatim_verdict(spans: list[tuple[int, int]], others: list[_Mention], norm: str) -> tuple[str, str]:
    """A value read word for word: another value of its attribute in the text ("French food" for
    ``food[Thai]``) is wrong; else said once realised, twice repeated, not at all missing."""
    if others:
        return "wrong", others[0].text
    if not spans:
        return "missing", ""
    return ("realised" if len(spans) == 1 else "repeated"), norm[slice(*spans[0])]


def read_verbatim(r: Record) -> bool:
    """Whether the slot rules do not read ``r`` and its value is read word for word instead: an
    attribute without rules ("colour[red]"), or a value the rules do not know ("food[Thai]")."""
    if r.attribute in ("name", "near"):
        return False
    return r.attribute not in E2E_ATTRIBUTES or normalise(r.value) not in E2E_VALUES[r.attribute]


def _verbatim_spans(
    records: list[Record], norm: str, names: list[tuple[int, int]] = ()
) -> dict[int, list[tuple[int, int]]]:
    """Record index -> the spans of ``norm`` saying its value word for word (:func:`_verbatim`),
    for each record :func:`read_verbatim` reads so; the other rules do not read those spans again
    ("pizza" of ``dish[pizza]`` is no food, "4 out of 5" of ``customer rating[4 out of 5]`` no
    high rating). A span inside a longer mention of the input's name or near (``names``) is part
    of that name: "harbour" of "Harbour Lights" does not say ``area[harbour]`` (session 25)."""
    inside = lambda sp: any(s <= sp[0] and sp[1] <= e and e - s > sp[1] - sp[0] for s, e in names)  # noqa: E731
    return {i: [sp for sp in _verbatim(r, norm) if not inside(sp)] for i, r in enumerate(records) if read_verbatim(r)}


def _venues_and_values(records: list[Record], norm: str) -> tuple[list, dict, list]:
    """What :func:`check_e2e` and :func:`value_mentions_e2e` read first: the dataset venues found
    in ``norm`` (:func:`_find_venues`), record index -> the spans saying its value word for word
    (:func:`_verbatim_spans`, values without rules, as typed) and those spans in one list."""
    found = _find_venues(norm, [r.value for r in records if r.attribute in ("name", "near")])
    said = _verbatim_spans(records, norm, _own_spans(records, found))
    return found, said, [sp for spans in said.values() for sp in spans]


def _own_spans(records: list[Record], venues: list[tuple[str, int, int]]) -> list[tuple[int, int]]:
    """The spans of ``venues`` (:func:`_find_venues`) that mention the input's own name or near."""
    own = {normalise(r.value) for r in records if r.attribute in ("name", "near")}
    return [(s, e) for v, s, e in venues if v in own]


def _overlaps(span: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    return any(span[0] < e and s < span[1] for s, e in spans)


def _verbatim(r: Record, norm: str) -> list[tuple[int, int]]:
    """Spans of normalised text ``norm`` that say ``r``'s value word for word: how a record of an
    attribute the E2E rules do not know ("colour[red]", typed in the Playground) is read."""
    value = normalise(r.value)
    if not value:
        return []
    return [m.span() for m in re.finditer(r"(?<!\w)" + re.escape(value) + r"(?!\w)", norm)]


def _slot_verdict(r: Record, ms: list[_Mention], norm: str) -> tuple[str, str]:
    level = _level(r.attribute, r.value)
    right = [m for m in ms if m.level == level]
    other = [m for m in ms if m.level != level]
    if r.attribute == "eatType":
        other = [m for m in other if m.level != "restaurant"]  # "restaurant" is generic
        if level == "restaurant":
            other = [m for m in other if not m.weak]
    if other:
        return "wrong", other[0].text
    if not right:
        return "missing", ""
    counted = [m for m in right if not (r.attribute == "eatType" and m.weak and m is not right[0])]
    return ("repeated" if _n_separate(counted, norm) >= 2 else "realised"), right[0].text


def _n_separate(ms: list[_Mention], norm: str) -> int:
    """Mentions, counting one within _ELABORATION tokens of the previous one in the same sentence
    as the same mention ("expensive: more than £30", "a low rating of 1 out of 5" state one fact)."""
    n, prev_end = 0, None
    for m in sorted(ms, key=lambda m: m.start):
        gap = norm[prev_end : m.start] if prev_end is not None else ""
        if prev_end is None or len(_TOKEN.findall(gap)) > _ELABORATION or _SENTENCE.search(gap + " "):
            n += 1
        prev_end = m.end
    return n


def value_mentions_e2e(records: list[Record], norm: str) -> list[ValueMention]:
    """Spans of normalised text ``norm`` that state a value, with the input record it states or
    None for a value absent from the input (another level of an input slot, a slot not in the
    input, a stray venue). The same rules as :func:`check_e2e`: generic "restaurant" states nothing wrong."""
    found, said, verbatim = _venues_and_values(records, norm)
    venue_of = {normalise(r.value): i for i, r in enumerate(records) if r.attribute in ("name", "near")}
    venues = [v for v in found if venue_of.get(v[0]) is not None or not _overlaps(v[1:], verbatim)]
    out = [ValueMention(s, e, venue_of.get(v)) for v, s, e in venues]
    taken = {(m.start, m.end) for m in out}  # an unknown attribute's value that is the name's: the name's mention
    out += [ValueMention(s, e, i) for i, spans in said.items() for s, e in spans if (s, e) not in taken]
    slot_of = {r.attribute: (i, _level(r.attribute, r.value)) for i, r in enumerate(records) if i not in said}
    for m in _slot_mentions(norm, [(s, e) for _, s, e in venues] + verbatim):
        i, level = slot_of.get(m.attribute, (None, None))
        if m.level == level:
            out.append(ValueMention(m.start, m.end, i))
        elif not (
            m.attribute == "eatType" and (m.level == "restaurant" or (level == "restaurant" and m.weak))
        ):
            out.append(ValueMention(m.start, m.end, None))
    return sorted(out, key=lambda m: (m.start, m.end))
