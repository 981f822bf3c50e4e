"""WebNLG object checker: see :mod:`segviz.faithfulness` for the rules."""

from __future__ import annotations

import re
from collections import Counter

from segviz.faithfulness.common import FaithReport, RecordVerdict, ValueMention, normalise
from segviz.records import MONTHS, Record

# ----------------------------------------------------------------------------- WebNLG

_STOP = {"the", "of", "a", "an", "and", "in", "on", "at", "for", "to", "de", "la", "le"}


def _entity_norm(s: str) -> str:
    s = s.replace("_", " ").strip()
    if len(s) >= 2 and s[0] == s[-1] == '"':
        s = s[1:-1]
    s = normalise(s).replace('"', "")
    return re.sub(r"\s+", " ", s).strip()


def _number_variants(s: str) -> list[str]:
    """``3500.0`` -> ``3500``, ``3,500``; ``1.5`` stays."""
    m = re.fullmatch(r"(-?\d+)(?:\.0+)?", s.replace(",", ""))
    if not m:
        return []
    n = int(m.group(1))
    return list(dict.fromkeys([str(n), f"{n:,}"]))


_ALIASES = {
    "united states": ["united states of america", "usa", "u.s.a.", "u.s.", "us", "america", "american"],
    "united kingdom": ["uk", "u.k.", "britain", "great britain", "british"],
}
_SUFFIXES = (" language", " f.c.", " a.f.c.", " fc", " afc", " people")


def _no_paren(norm: str) -> str:
    """A normalised entity without its bracketed part: "ardmore airport (new zealand)" -> "ardmore airport"."""
    return re.sub(r"\s*\([^)]*\)", "", norm).strip()


def short_forms(entity: str) -> list[str]:
    """A WebNLG entity said without its qualifier, normalised: without its bracket ("national
    assembly" of ``National_Assembly_(Azerbaijan)``) and without a generic last word ("french" of
    ``French_language``, "japanese" of ``Japanese_people``). The checker reads each as stating
    the entity; the decoder's *forms* rule reads them too (``decode.rules._value_forms``)."""
    no_paren = _no_paren(_entity_norm(entity))
    forms = [no_paren, *(no_paren[: -len(suf)].strip() for suf in _SUFFIXES if no_paren.endswith(suf))]
    return [f for f in dict.fromkeys(forms) if f and f != _entity_norm(entity)]


def short_form_prefixes(entity: str, tokens: list[str]) -> list[int]:
    """For each short form of ``entity`` (:func:`short_forms`), the length of the shortest prefix
    of its ``tokens`` (the decoder's words of it) whose normalised text is that form: "paraná" of
    ``Paraná_(state)``, whose form reads "parana"; forms no prefix says are left out."""
    norms = [_entity_norm(" ".join(tokens[:n])) for n in range(len(tokens) + 1)]
    return [norms.index(f) for f in short_forms(entity) if f in norms]


def _plain_variants(entity: str) -> list[str]:
    """Spellings of a WebNLG entity that state it (most specific first): its short forms (without
    its bracket or a suffix, "Japanese people" -> "japanese", :func:`short_forms`) or what comes
    before its first comma ("Abilene" of "Abilene, Texas"), an alias, a number written otherwise,
    and a one-word people by its adjective ("Americans" -> "american"; "African Americans" is not
    read so)."""
    e = _entity_norm(entity)
    no_paren = _no_paren(e)
    plain = [e, *short_forms(entity)]
    if "," in no_paren:
        plain.append(no_paren.split(",")[0].strip())
    plain += _ALIASES.get(no_paren, [])
    if re.fullmatch(r"[a-z]+ans", no_paren):  # a people: "Americans", "Italians", "Mexicans"
        plain.append(no_paren[:-1])
    plain += _number_variants(no_paren)
    num = re.fullmatch(r"(-?\d+(?:\.\d+)?)\s*((?!e[+-]?\d)[a-z(].*)?", no_paren)  # "125.0 (minutes)" / "3.5 metres", not "6.5e+11"
    if num:  # (not the year of a date "1988-11-22": the year alone does not state the date)
        plain += _number_variants(num.group(1)) or [num.group(1)]
    return list(dict.fromkeys(p for p in plain if p))


def spellings(entity: str) -> list[str]:
    """The normalised spellings the checker reads as stating a WebNLG entity
    (:func:`_plain_variants`: short forms, the place before a comma, aliases, numbers written
    otherwise) and, for a date, its month, day and year ("july 11 1907" of ``1907-07-11``,
    written out in any order); the decoder's *literal* rule reads their words
    (``decode.rules._literal_words``)."""
    out = _plain_variants(entity)
    date = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", _no_paren(_entity_norm(entity)))
    if date:
        y, mo, d = date.groups()
        out.append(f"{MONTHS[int(mo) - 1]} {int(d)} {y}")
    return out


def _spaced(spelling: str) -> str:
    """Regex of a normalised spelling that also reads it with its words joined by a dash, with a
    space around a full stop and between letters and digits, as a detokenised output ("a. d.
    isidro metapan", "ps 3523. e 55") or a tokenised reference ("a . d . isidro metapan") writes
    "a.d. isidro metapan" and "ps3523.e55". The closing full stop of a name of several words may
    be the sentence's or give way to a comma ("… Bangalore – 560090, Karnataka" of a campus
    ending "560090.", "Chelsea F.C, …"; session 46)."""
    out = ""
    for a, b in zip(spelling, spelling[1:] + " ", strict=True):
        out += r"[\s-]+" if a == " " else r"\s*\." if a == "." else re.escape(a)
        if b != " " and a != " " and (a == "." or a.isalpha() and b.isdigit() or a.isdigit() and b.isalpha()
                                      or _symbol(a) or _symbol(b)):  # fmt: skip
            out += r"\s*"
    if spelling.endswith(".") and " " in spelling[:-2]:  # without it, not before a decimal part
        out = out[: -len(r"\s*\.")] + r"(?:\s*\.|(?!\.\d))"
    return out


def _symbol(ch: str) -> bool:
    """A sign a detokenised output may set apart by spaces: "1 / 19" of ``"1/19"``, "6.5 e + 11"."""
    return not (ch.isalnum() or ch.isspace() or ch in ".-")


def _variants(entity: str) -> list[tuple[str, str]]:
    """(regex, the spelling it was made from) of a WebNLG entity (:func:`_plain_variants`, then a
    date written out), most specific first."""
    out = []
    for v in _plain_variants(entity):
        rx = _spaced(v)
        if re.search(r"[a-z]$", v):  # plurals and demonyms: "condiments", "indonesian"
            rx += r"(?:s|es|n|an|ian)?"
        out.append((rx, v))
    no_paren = _no_paren(_entity_norm(entity))
    date = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", no_paren)
    if date:  # every written form in one regex: two forms of one date are a repetition
        out.append(("(?:" + "|".join(_date_forms(*date.groups())) + ")", no_paren))
    return out


def _date_forms(y: str, mo: str, d: str) -> list[str]:
    """Regexes of a date written out: "november 22nd, 1988", "november the 22 nd 1988", "the 22nd
    of nov. 1988", or in figures with slashes, month or day first ("11 / 22 / 1988", "22/11/1988")."""
    month, day = MONTHS[int(mo) - 1], str(int(d))
    name = rf"(?:{month}|{month[:3]}\.?)"
    th = r"\s?(?:st|nd|rd|th)?"
    m, dd = rf"0?{int(mo)}", rf"0?{day}"
    return [rf"{name} (?:the )?{day}{th},? (?:of )?{y}", rf"(?:the )?{day}{th} (?:of )?{name},? {y}",
            rf"{m}\s?/\s?{dd}\s?/\s?{y}", rf"{dd}\s?/\s?{m}\s?/\s?{y}"]


def _entity_spans(
    entity: str, norm_text: str, others: list[str], subject: str | None = None
) -> list[tuple[int, int]]:
    """Spans of ``entity`` for the first variant that matches outside the mentions of ``others``
    (the input's entities) that hold that variant: "Angola" in "Angola International Airport",
    the "Appleton" of ``Appleton,_Wisconsin`` in "Appleton International Airport". A variant that
    begins with a sign may follow a word ("-3.3528" in the detokenised "is-3.3528")."""
    for rx, plain in _variants(entity):
        masked = _containing_spans(entity, plain, others, norm_text, subject)
        hits = [
            m.span()
            for m in re.finditer((r"(?<!\w)" if plain[0].isalnum() else "") + rx + r"(?!\w)", norm_text)
            if all(m.end() <= s or m.start() >= e for s, e in masked)
        ]
        if hits:
            return hits
    return []


def _count_entity(
    entity: str, norm_text: str, others: list[str], subject: str | None = None
) -> tuple[int, str]:
    """Mentions of ``entity`` (first variant that matches, outside the input's other entities that
    hold it) and the evidence; ``subject``: the record's own subject. A many-word entity none of
    whose variants matches may still be said in part (:func:`_partial_mention`)."""
    hits = _entity_spans(entity, norm_text, others, subject)
    if hits:
        return len(hits), norm_text[hits[0][0] : hits[0][1]]
    present = _partial_mention(entity, norm_text, others, subject)
    return (1, " ".join(present)) if present else (0, "")


def _partial_mention(entity: str, norm_text: str, others: list[str], subject: str | None = None) -> list[str]:
    """The content words of a many-word ``entity`` said in ``norm_text`` when at least two thirds
    of them are ("university of texas at austin" by "the university in austin, texas"), else [].
    Each is a whole word (a plural -s / -es allowed: "bo" is not said by "book") outside the
    mentions of the other input entities that hold it: "frederick" and "maryland" inside
    "Frederick County, Maryland" do not say ``Frederick,_Maryland``. The record's own subject
    is not masked for a single word (its name may share the object's words). The words are those
    outside the entity's bracket, a number whole ("3.5" is no "5" of "1.5", "6.5e+11" one word), and every number of
    the entity must be among them (session 21): "26 th of october 1827" does not say
    ``1827-11-26``, nor "the 2014 season" ``2014–15_Lega_Pro``."""
    no_paren = _no_paren(_entity_norm(entity))
    words = [w for w in re.findall(r"\d+(?:[.,]\d+)*(?:e[+-]?\d+)?|\w+", no_paren) if w not in _STOP]
    if len(words) < 2:
        return []
    spans = _containing_spans(entity, no_paren, others, norm_text, subject)
    own = _no_paren(_entity_norm(subject)) if subject else None
    not_own = [o for o in others if _no_paren(_entity_norm(o)) != own]
    for w in words:
        spans += _containing_spans(entity, w, not_own, norm_text, subject)
    rest = "".join(" " if any(s <= i < e for s, e in spans) else c for i, c in enumerate(norm_text))
    present = [w for w in words if re.search(_whole_word(w), rest)]
    figures = [w for w in words if w[0].isdigit()]  # a date, season or code: its every number (session 21)
    if any(w not in present for w in figures):
        return []
    return present if len(present) * 3 >= len(words) * 2 else []


def _whole_word(w: str) -> str:
    """Regex of ``w`` as a whole word: a word with a plural -s / -es, a number not inside a longer
    one ("5" is not in "1.5", "3.5" not in "13.5")."""
    if w[0].isdigit():
        return rf"(?<![\w.,]){re.escape(w)}(?![\w]|[.,]\d)"
    return rf"(?<!\w){re.escape(w)}(?:s|es)?(?!\w)"


def _containing_spans(
    entity: str, variant: str, others: list[str], norm_text: str, subject: str | None = None
) -> list[tuple[int, int]]:
    """Spans of the other input entities whose name holds ``variant`` of ``entity`` ("Athens" in
    "Athens Airport"), but not of those it qualifies after their comma: "Ithaca, New York" says
    ``New_York`` (as the decoder's *qualifiers* rule reads it, ``decode.rules._qualified``),
    unless that entity is the record's own ``subject`` ("Potter County, Texas" names the county,
    it does not say ``Potter_County,_Texas | state | Texas``)."""
    e = _entity_norm(entity)
    own = _no_paren(_entity_norm(subject)) if subject else None
    spans = []
    for o in others:
        on = _no_paren(_entity_norm(o))
        if on.endswith(", " + variant) and on != own:
            continue
        if on != e and len(on) > len(variant) and re.search(rf"(?<!\w){re.escape(variant)}(?!\w)", on):
            plural = r"(?:s|es)?" if re.search(r"[a-z]$", on) else ""  # "bacon sandwiches" holds "bacon"
            rx = re.compile(r"(?<!\w)" + _spaced(on) + plural + r"(?!\w)")
            spans += [(m.start(), m.end()) for m in rx.finditer(norm_text)]
    return spans


def check_webnlg(records: list[Record], text: str) -> FaithReport:
    """Verdicts for WebNLG triples: object found (realised), 2+ times (repeated) or not (missing)."""
    norm = normalise(text)
    entities = [e for r in records for e in (r.subject or "", r.value) if e]
    in_input = _entity_counts(records)
    report = FaithReport()
    for idx, r in enumerate(records):
        n, ev = _count_entity(r.value, norm, entities, r.subject)
        if n == 0:
            status = "missing"
        elif n >= 2 and in_input.get(_entity_norm(r.value), 0) <= 1:
            status = "repeated"
        else:
            status = "realised"
        report.per_record.append(RecordVerdict(idx, r.label, status, ev))
    return report


_NUMBER = re.compile(r"\d+")


def value_mentions_webnlg(records: list[Record], norm: str) -> list[ValueMention]:
    """Spans of normalised text ``norm`` that state a value: every mention of a triple's object
    (an object shared by several triples gives one mention per triple), and a number that no
    input entity contains (record None: a date or figure absent from the input). Subjects are
    not values; each mention carries its normalised entity."""
    entities = [e for r in records for e in (r.subject or "", r.value) if e]
    out = []
    for i, r in enumerate(records):
        spans = _entity_spans(r.value, norm, entities, r.subject)
        out += [ValueMention(s, e, i, _entity_norm(r.value)) for s, e in spans]
    known = {int(n) for e in entities for n in _NUMBER.findall(_entity_norm(e))}
    out += [
        ValueMention(m.start(), m.end(), None) for m in _NUMBER.finditer(norm) if int(m.group()) not in known
    ]
    return sorted(out, key=lambda m: (m.start, m.end))


def attributable_webnlg(records: list[Record]) -> frozenset[int]:
    """Indices (0-based) of the triples whose object the checker's reading gives to them alone:
    no other entity of the input (subject or object) is the same ("United States" of
    ``X | country | United_States`` and ``United_States | leader | Y`` is said for both)."""
    in_input = _entity_counts(records)
    return frozenset(i for i, r in enumerate(records) if in_input[_entity_norm(r.value)] <= 1)


def _entity_counts(records: list[Record]) -> Counter:
    """How often each normalised entity stands in the input, as a subject or an object."""
    return Counter(_entity_norm(e) for r in records for e in (r.subject or "", r.value) if e)


def own_entities_webnlg(record: Record) -> frozenset[str]:
    """Entities a segment of ``record`` may name: its subject and its object."""
    return frozenset(_entity_norm(e) for e in (record.subject or "", record.value) if e)
