"""Records: parse E2E meaning representations and WebNLG triples; tokenise and detokenise.

A *record* is one input fact: an E2E slot (``customer rating[5 out of 5]``) or a WebNLG triple
(``Abilene,_Texas | isPartOf | Texas``). docs/design.md §1: E2E record tokens are attribute words +
value words; WebNLG record tokens are subject + predicate (camelCase and underscores split) +
object. Everything is lower-cased with punctuation split off.
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

__all__ = [
    "RecordError",
    "Record",
    "parse_e2e_mr",
    "parse_webnlg_triple",
    "parse_webnlg_triples",
    "format_e2e_mr",
    "tokenize",
    "detokenize",
    "split_camel",
    "strip_accents",
]


class RecordError(ValueError):
    """Malformed input records; the message names the offending piece."""


@dataclass(frozen=True)
class Record:
    """One input record.

    ``attribute``/``value`` for E2E; for WebNLG ``attribute`` is the predicate, ``value`` the
    object and ``subject`` the subject. ``label`` is a short human-readable name for the UI.
    """

    attribute: str
    value: str
    subject: str | None = None

    @property
    def label(self) -> str:
        if self.subject is None:
            return f"{self.attribute}[{self.value}]"
        return f"{self.subject} | {self.attribute} | {self.value}"

    @property
    def tokens(self) -> list[str]:
        """Source tokens of this record (docs/design.md §1)."""
        if self.subject is None:
            return tokenize(split_camel(self.attribute)) + tokenize(self.value)
        return (
            tokenize(entity_text(self.subject))
            + tokenize(split_camel(self.attribute))
            + tokenize(entity_text(self.value))
        )

    @property
    def value_tokens(self) -> list[str]:
        """Tokens of the value (E2E) / object (WebNLG) alone."""
        return tokenize(entity_text(self.value) if self.subject is not None else self.value)

    def to_json(self) -> dict:
        d = {"attribute": self.attribute, "value": self.value}
        if self.subject is not None:
            d["subject"] = self.subject
        return d

    @classmethod
    def from_json(cls, d: dict) -> Record:
        return cls(d["attribute"], d["value"], d.get("subject"))


_SLOT = re.compile(r"\s*([^\[\],]*?)\s*\[([^\[\]]*)\]\s*")


def parse_e2e_mr(mr: str) -> list[Record]:
    """``name[The Eagle], eatType[coffee shop]`` -> records, in input order.

    Raises :class:`RecordError` on empty input, unbalanced brackets, an empty attribute or
    value, text outside ``attr[value]`` pieces, or a duplicate attribute.
    """
    if mr is None or not mr.strip():
        raise RecordError("empty meaning representation")
    if mr.count("[") != mr.count("]"):
        raise RecordError(f"unbalanced brackets in {mr!r}")
    records: list[Record] = []
    seen: set[str] = set()
    pos = 0
    text = mr.strip()
    while pos < len(text):
        m = _SLOT.match(text, pos)
        if not m:
            raise RecordError(f"cannot parse slot at {_clip(text[pos:], 30)!r} (expected attr[value])")
        attr, value = m.group(1).strip(), m.group(2).strip()
        if not attr:
            raise RecordError(f"empty attribute in {m.group(0).strip()!r}")
        if not value:
            raise RecordError(f"empty value for attribute {attr!r}")
        if attr in seen:
            raise RecordError(f"duplicate attribute {attr!r}")
        seen.add(attr)
        records.append(Record(attr, value))
        pos = m.end()
        if pos < len(text):
            if text[pos] != ",":
                raise RecordError(f"expected ',' after {m.group(0).strip()!r}, got {_clip(text[pos:], 20)!r}")
            pos += 1
            if not text[pos:].strip():
                raise RecordError("trailing ',' with no slot after it")
    return records


def _clip(text: str, n: int) -> str:
    """``text`` cut to ``n`` characters, with "…" where it was cut."""
    return text if len(text) <= n else text[:n] + "…"


def format_e2e_mr(records: list[Record]) -> str:
    """Inverse of :func:`parse_e2e_mr`: records -> canonical MR string."""
    return ", ".join(f"{r.attribute}[{r.value}]" for r in records)


def parse_webnlg_triple(triple: str) -> Record:
    """``subject | predicate | object`` -> a record (whitespace around parts stripped)."""
    if triple is None or not triple.strip():
        raise RecordError("empty triple")
    parts = [p.strip() for p in triple.split("|")]
    if len(parts) != 3:
        raise RecordError(f"triple must have 3 parts 'subject | predicate | object', got {len(parts)}: {triple!r}")
    names = ("subject", "predicate", "object")
    for name, p in zip(names, parts, strict=True):
        if not p:
            raise RecordError(f"empty {name} in triple {triple!r}")
    return Record(attribute=parts[1], value=parts[2], subject=parts[0])


def parse_webnlg_triples(triples: list[str]) -> list[Record]:
    """Several triples; raises on an empty list or a duplicate triple."""
    if not triples:
        raise RecordError("no triples given")
    out = [parse_webnlg_triple(t) for t in triples]
    if len(set(out)) != len(out):
        dup = next(r for r in out if out.count(r) > 1)
        raise RecordError(f"duplicate triple {dup.label!r}")
    return out


def split_camel(s: str) -> str:
    """``customerRating`` -> ``customer Rating``; ``birth_place`` -> ``birth place``."""
    s = s.replace("_", " ")
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", s)


def entity_text(s: str) -> str:
    """WebNLG entity -> words: underscores to spaces, surrounding quotes dropped."""
    s = s.replace("_", " ").strip()
    if len(s) >= 2 and s[0] == s[-1] == '"':
        s = s[1:-1]
    return s


MONTHS = "january february march april may june july august september october november december".split()


def date_month(value: str) -> str | None:
    """The month of a date value, by name: ``"1930-08-05"`` -> "august"; None for any other value."""
    date = re.fullmatch(r"\d{4}-(\d{2})-\d{2}", entity_text(value).strip())
    return MONTHS[int(date.group(1)) - 1] if date and 1 <= int(date.group(1)) <= 12 else None


def _ordinal(day: int) -> str:
    """The suffix of a day of the month written as an ordinal: 1 "st", 2 "nd", 3 "rd", 11 "th"."""
    return "th" if 10 < day < 14 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


def date_spellings(value: str) -> list[tuple[str, ...]]:
    """Token sequences of a date value written out as WebNLG's training references write it and
    its checker reads it (``faithfulness.webnlg._date_forms``): ``"1874-11-13"`` -> "1874 - 11 -
    13", "november 13 , 1874", "13 th of november 1874", "11 / 13 / 1874", … (the ``dates`` rule,
    docs/design.md §6). Written out, a day is said without its leading zero; [] for any other value."""
    month = date_month(value)
    if month is None:
        return []
    y, mo, d = entity_text(value).strip().split("-")
    day, th = str(int(d)), _ordinal(int(d))
    out = [(y, "-", mo, "-", d)]
    out += [(month, day, *o, *c, y) for o in ((), (th,)) for c in ((), (",",))]  # november 13 th , 1874
    out += [(day, *o, month, *c, y) for o in ((), (th,), (th, "of")) for c in ((), (",",))]  # 13 th of november 1874
    for m, dd in dict.fromkeys([(mo, d), (str(int(mo)), day)]):  # 11 / 13 / 1874, 13 / 11 / 1874
        out += [(m, "/", dd, "/", y), (dd, "/", m, "/", y)]
    return list(dict.fromkeys(out))


# A token is a run of word characters (letters, digits, with inner . or , for numbers like 3.5
# and 1,000, and an exponent: 6.5e+11 is one word, session 22), a word with its possessive
# apostrophe (Martyrs'), a possessive 's after a word that has an apostrophe already
# (O'Malley's), or a single non-space non-word character. Currency symbols split off:
# "£30" -> £ 30.
_TOKEN = re.compile(r"\d+(?:[.,]\d+)*(?:e[+-]?\d+)?|[^\W\d_]+(?:'[^\W\d_]+)?(?:(?<=s)'(?![^\W\d_]))?|'s(?![^\W\d_])|\w+|[^\w\s]", re.UNICODE)


def tokenize(text: str) -> list[str]:
    """Lower-case and split punctuation: ``"£30, isn't it."`` -> ``['£', '30', ',', "isn't", 'it', '.']``."""
    return _TOKEN.findall(text.lower())


SENTENCE_ENDS = (".", "!", "?")  # tokens that end a sentence (detokenize capitalises after one; decode rule fullstop)
_NO_SPACE_BEFORE = {".", ",", "!", "?", ";", ":", "%", ")", "]", "}", "'s", "n't"}
_NO_SPACE_AFTER = {"£", "$", "€", "(", "[", "{"}


def detokenize(tokens: list[str], records: list[Record] | None = None) -> str:
    """Tokens -> readable text: no space before punctuation, none after currency / opening brackets,
    hyphens glued (``family - friendly`` -> ``family-friendly``), sentences capitalised.

    With ``records``, every occurrence of a whole record value (or WebNLG subject) is written as
    the input writes it (:func:`restore_surface`): its casing (``the vaults`` -> ``The Vaults``)
    and its spacing (``24 / 7`` -> ``24/7``); a lone ``the`` elsewhere stays as is."""
    return "".join((" " if space else "") + word for word, space, _ in written(tokens, records or []))


def written(tokens: list[str], records: list[Record]) -> list[tuple[str, bool, bool]]:
    """``(word, space before, begins a sentence)`` per token, as :func:`detokenize` writes it:
    the words of whole values as the input writes them (:func:`restore_surface`), a sentence's
    first word capitalised. A value's own final stop ("D.C.", "S.p.A.") ends no sentence (after a
    number it does: "… 560090. It has", :func:`_closes_number`), and a
    stop after it is written once ("Washington, D.C." then "." is "Washington, D.C."): its word
    is ""."""
    cased, spaced, ends = restore_surface(tokens, records)
    out, start = [], True
    for i, tok in enumerate(cased):
        if tok == "." and i and ends[i - 1] and cased[i - 1] == ".":  # the value's stop ends the sentence too
            out.append(("", False, False))
            start = True
            continue
        space = bool(i) and (_spaced(cased[i - 1], tok) if spaced[i] is None else spaced[i])
        out.append((tok[:1].upper() + tok[1:] if start else tok, space, start))
        start = tok in SENTENCE_ENDS and not (ends[i] and not _closes_number(cased[i - 1] if i else ""))
    return out


def _closes_number(word: str) -> bool:
    """Whether a value's own stop after ``word`` ends the value's sentence ("… Bangalore –
    560090.") rather than an abbreviation ("D.C.", "S.p.A.", "Inf. Syst."), which ends none."""
    return word[:1].isdigit()


def _spaced(prev: str, tok: str) -> bool:
    """Whether the joiner puts a space between ``prev`` and ``tok`` (outside a record's value)."""
    low, before = tok.lower(), prev.lower()
    if unicodedata.combining(tok[:1] or "a") or unicodedata.combining(prev[-1:] or "a"):  # "i ̇ zmir": one word
        return False
    return not (low in _NO_SPACE_BEFORE or before in _NO_SPACE_AFTER or low == "-" or before == "-")


@functools.lru_cache(maxsize=256)
def _value_surfaces(records: tuple[Record, ...]) -> tuple[tuple[list[str], list[str], list[bool]], ...]:
    """(lower-cased tokens, tokens as written, whether a space stands before each token) of every
    record value and WebNLG subject, as typed and as an entity (``Washington,_D.C.`` ->
    "Washington, D.C."), where the joiner alone would not write it so; longest first. Once per
    input (decoding writes every hypothesis's text for ``read``); never mutated."""
    out = []
    for r in records:  # a value as typed (E2E's "_Thai_", which its encoder reads so) and as a WebNLG entity
        for text in dict.fromkeys((r.value, entity_text(r.value), r.subject or "", entity_text(r.subject or ""))):
            found = list(_TOKEN.finditer(text))
            cased = [m.group() for m in found]
            gaps = [False] + [a.end() < b.start() for a, b in zip(found, found[1:], strict=False)]  # every other character is a token's
            joined = [False] + [_spaced(a, b) for a, b in zip(cased, cased[1:], strict=False)]
            if cased and (any(w != w.lower() for w in cased) or gaps != joined):
                out.append(_lowered(cased, gaps))
    return tuple(sorted(out, key=lambda p: -len(p[0])))


def _lowered(cased: list[str], gaps: list[bool]) -> tuple[list[str], list[str], list[bool]]:
    """(lower-cased tokens, tokens as written, spaces before them) of a value's written tokens
    ``cased``, as :func:`tokenize` reads the value: a word whose lower case it splits ("İzmir" ->
    "i", "̇", "zmir": Python lower-cases "İ" to "i" and a combining dot) is written whole by its
    first piece, the others written as nothing."""
    low, out, spaces = [], [], []
    for word, gap in zip(cased, gaps, strict=True):
        pieces = _TOKEN.findall(word.lower()) or [word.lower()]
        low += pieces
        out += [word] + [""] * (len(pieces) - 1)
        spaces += [gap] + [False] * (len(pieces) - 1)
    return low, out, spaces


def restore_surface(tokens: list[str], records: list[Record]) -> tuple[list[str], list[bool | None], list[bool]]:
    """``tokens`` with every whole occurrence of a record value (or subject) in its written
    tokens; for each token whether a space stands before it there (None outside a value: the
    joiner decides, :func:`_spaced`), and whether it ends such an occurrence."""
    read = [t.lower() for t in tokens]  # every surface matched against the tokens as given
    tokens, spaced, ends = list(tokens), [None] * len(tokens), [False] * len(tokens)
    for low, cased, gaps in _value_surfaces(tuple(records)):
        n = len(low)
        for i in range(len(tokens) - n + 1):
            if read[i : i + n] == low:
                tokens[i : i + n], spaced[i + 1 : i + n] = cased, gaps[1:]
                ends[i + n - 1] = True
    return tokens, spaced, ends


# Closed-class English words: a segment of these alone does not realise a record.
FUNCTION_WORDS = frozenset(
    "a an the this that these those it its it's they their there here he she his her "
    "is are was were be been being am has have had having do does did will would can could "
    "and or but nor so yet also as than then too very which who whom whose where when what "
    "of in on at to for with by from into onto near off out up down over under about "
    "within without between among through during before after around against along "
    "`` '' 's".split()
)


SUFFIXES = ("s", "es", "n", "an", "ian")  # plurals and demonyms, as the WebNLG checker reads an entity's last word


def strip_accents(text: str) -> str:
    """``text`` without its accents ("Arròs" -> "Arros"), as the checker and the names rule read it."""
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def is_function_word(word: str) -> bool:
    """True for punctuation, specials and :data:`FUNCTION_WORDS` (case-insensitive)."""
    w = word.lower()
    return w in FUNCTION_WORDS or not any(ch.isalnum() for ch in w) or (w.startswith("<") and w.endswith(">"))


def relation_words(records: list[Record], which: list[int] | None = None) -> set[str]:
    """The words of the relations (WebNLG predicates) of ``records[k]`` for ``k`` in ``which``
    (default all), less function words and the words of any subject or object of the input:
    what a model that never read these relations would not know (docs/design.md, "Unseen
    relations"): ``leaderName`` -> {"leader", "name"}."""
    ks = range(len(records)) if which is None else which
    words = {t for k in ks for t in tokenize(split_camel(records[k].attribute)) if not is_function_word(t)}
    entities = {t for r in records for e in (r.subject or "", r.value) for t in tokenize(entity_text(e))}
    return words - entities


def doubled_words(records: list[Record]) -> set[str]:
    """Words the input itself says twice in a row ("long" of "A Long Long Way"): the ``doubles``
    rule lets them follow themselves, and the ``relations`` suite's stutters do not count them."""
    return {a for r in records for a, b in zip(r.tokens, r.tokens[1:], strict=False) if a == b}


def number_words(records: list[Record]) -> Counter:
    """Words with a digit and how often the input's records hold them (a subject once per record):
    the ``numbers`` rule says a number no more often (docs/design.md §6)."""
    return Counter(w for r in records for w in r.tokens if any(c.isdigit() for c in w))


def figure_forms(word: str) -> list[str]:
    """A number as the references write it too: ``3500.0`` -> 3500, 3,500; ``3992.88`` -> 3,992.88."""
    m = re.fullmatch(r"(\d+)(?:\.(\d+))?", word.replace(",", ""))
    if not m:
        return [word]
    n, frac = int(m.group(1)), m.group(2)
    whole = [str(n), f"{n:,}"] if not frac or not frac.strip("0") else []
    return [word, *whole, *([f"{n}.{frac}", f"{n:,}.{frac}"] if frac else [])]


def held_figures(records: list[Record]) -> frozenset[str]:
    """The words with a digit that say a figure of the input (lower case): its own words with a
    digit, each also without a zero fraction and with thousands commas (:func:`figure_forms`),
    and a date's figures written out (:func:`date_spellings`: "13", "1874" of ``1874-11-13``).
    Of 18,102 WebNLG training references 146 (0.8%) say another ("over 69 days" of 100305.0
    minutes); the ``unheld`` rule and the stress suites' *invented numbers* read it."""
    words = set(number_words(records))
    words |= {w for r in records for s in date_spellings(r.value) for w in s if any(c.isdigit() for c in w)}
    return frozenset(f for w in words for f in figure_forms(w.lower()))


def unheld_figures(records: list[Record], text: str) -> list[str]:
    """The words with a digit ``text`` says that no figure of the input holds
    (:func:`held_figures`): "911" of "located 911 metres above the sea level" for an airport
    whose input says 213.0 metres."""
    held = held_figures(records)
    return [w for w in tokenize(text) if any(c.isdigit() for c in w) and w not in held]


HALVES = ("tune", "report")  # dev split: choices are made on "tune", figures reported on both


def half_of(records: list[Record]) -> str:
    """``tune`` or ``report``: a stable hash of the input's records (order-free)."""
    key = "\n".join(sorted(r.label for r in records))
    return HALVES[hashlib.sha1(key.encode("utf-8")).digest()[0] % 2]
