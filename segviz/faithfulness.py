"""Automatic faithfulness checks: per-record realised / missing / repeated / wrong verdicts.

The paper's human evaluation (§6) counts, per output, *wrong*, *repeated* and *missing* facts.
This module approximates those counts automatically so whole dev sets can be screened.

**E2E** (rule-based slot matcher, in the spirit of Dušek et al.'s slot-error scripts):

1. The text is normalised (lower case, accents stripped, apostrophes removed, dashes unified).
2. Venue names are found first: the input ``name`` / ``near`` values and every venue name of
   the dataset; their spans are masked so that "Raja Indian Cuisine" or "Café Rouge" do not
   count as food / eatType mentions.
3. Every slot has regular expressions that map a phrase to a *level* of the slot. Values that
   mean the same level are merged: priceRange ``cheap`` = ``less than £20`` (low), ``moderate``
   = ``£20-25`` (mid), ``high`` = ``more than £30`` (high); customer rating ``low`` = ``1 out of
   5``, ``average`` = ``3 out of 5``, ``high`` = ``5 out of 5``. Overlapping matches keep the
   longest ("not family friendly" beats "family friendly").
4. Bare "high", "low", "average", "moderate" are resolved by the nearest price cue ("price",
   "cost", "£") or rating cue ("rating", "rated", "customer", "stars") within the clause; with no
   cue they are ignored (except "moderate", which is a price in E2E usage).
5. familyFriendly phrases are negated by "not / isn't / no / non / without ..." earlier in the
   same clause.

Verdict for an input record: ``wrong`` if the slot is expressed with another level (even if the
right one is also there: the text then states a false fact); else ``repeated`` if the right value
is expressed 2+ times; else ``realised``; else ``missing``. Deliberate exceptions, so that
normal human writing is not flagged:

* ``name``: repeating the subject name across sentences is ordinary prose, not a repeated fact;
  the name is ``repeated`` only when it occurs twice within one sentence. It is never ``wrong``
  unless it is missing and another dataset venue takes its place.
* ``eatType``: anaphoric mentions ("the pub", "this coffee shop") are not counted as repeats;
  "restaurant" is a weak mention: it realises ``eatType[restaurant]`` but is never a wrong value
  for pub / coffee shop, nor a hallucination (human texts call every venue a restaurant).
* ``near``: a dataset venue name that is not the input name appearing where ``near`` is absent is
  a hallucinated ``near``; where ``near`` is present but not found it makes ``near`` wrong.

A slot absent from the input but expressed in the text is *hallucinated* (listed by attribute).

**WebNLG**: the object of each triple is matched after entity normalisation (underscores ->
spaces, quotes / accents / parentheticals dropped, numbers like ``3500.0`` ~ ``3,500``, ISO
dates ~ "March 15, 1930"); ``missing`` when no variant is found, ``repeated`` when it is mentioned
2+ times but occurs only once among the input's subjects and objects. WebNLG predicates are
open-ended, so ``wrong`` and ``hallucinated`` are always 0 for WebNLG.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from .records import Record

__all__ = [
    "RecordVerdict",
    "FaithReport",
    "check",
    "check_e2e",
    "check_webnlg",
    "totals",
    "STATUSES",
    "E2E_VENUES",
]

STATUSES = ("realised", "missing", "repeated", "wrong")


@dataclass
class RecordVerdict:
    """The verdict for input record ``index`` (its ``label``); ``evidence`` is the text seen."""

    index: int
    label: str
    status: str  # one of STATUSES
    evidence: str = ""


@dataclass
class FaithReport:
    """Per-record verdicts for one output text plus slots expressed without being in the input."""

    per_record: list[RecordVerdict] = field(default_factory=list)
    hallucinated: list[str] = field(default_factory=list)  # E2E attributes, e.g. "familyFriendly"

    def _count(self, status: str) -> int:
        return sum(v.status == status for v in self.per_record)

    @property
    def wrong(self) -> int:
        return self._count("wrong")

    @property
    def repeated(self) -> int:
        return self._count("repeated")

    @property
    def missing(self) -> int:
        return self._count("missing")

    @property
    def realised(self) -> int:
        return self._count("realised")

    @property
    def n_hallucinated(self) -> int:
        return len(self.hallucinated)

    @property
    def total_records(self) -> int:
        return len(self.per_record)

    @property
    def errors(self) -> int:
        """wrong + repeated + missing + hallucinated (the slot-error numerator)."""
        return self.wrong + self.repeated + self.missing + self.n_hallucinated

    def to_dict(self) -> dict:
        d = asdict(self)
        d.update(
            wrong=self.wrong,
            repeated=self.repeated,
            missing=self.missing,
            n_hallucinated=self.n_hallucinated,
            total_records=self.total_records,
        )
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: dict) -> FaithReport:
        return cls([RecordVerdict(**v) for v in d["per_record"]], list(d["hallucinated"]))


def totals(reports: Iterable[FaithReport]) -> dict:
    """Sum over reports: ``{wrong, repeated, missing, hallucinated, total_records, slot_error_rate}``.

    SER = (wrong + missing + repeated + hallucinated) / total_records.
    """
    t = dict(wrong=0, repeated=0, missing=0, hallucinated=0, total_records=0)
    for r in reports:
        t["wrong"] += r.wrong
        t["repeated"] += r.repeated
        t["missing"] += r.missing
        t["hallucinated"] += r.n_hallucinated
        t["total_records"] += r.total_records
    err = t["wrong"] + t["repeated"] + t["missing"] + t["hallucinated"]
    t["slot_error_rate"] = err / t["total_records"] if t["total_records"] else 0.0
    return t


def check(dataset: str, records: list[Record], text: str) -> FaithReport:
    """Dispatch to :func:`check_e2e` or :func:`check_webnlg` by dataset name."""
    if dataset == "e2e":
        return check_e2e(records, text)
    if dataset == "webnlg":
        return check_webnlg(records, text)
    raise ValueError(f"unknown dataset {dataset!r} (expected 'e2e' or 'webnlg')")


# ----------------------------------------------------------------------------- normalisation


def normalise(text: str) -> str:
    """Lower case, accents stripped, apostrophes removed, dashes unified, spaces collapsed."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(c for c in text if not unicodedata.combining(c))
    text = text.lower().replace("’", "'").replace("‘", "'").replace("`", "'").replace("'", "")
    text = re.sub(r"[‐‑‒–—]", "-", text)
    return re.sub(r"\s+", " ", text).strip()


# ----------------------------------------------------------------------------- E2E

# Every venue name of the E2E train+dev sets (name and near values).
E2E_VENUES = (
    "Alimentum", "Aromi", "Bibimbap House", "Blue Spice", "Browns Cambridge", "Clowns", "Cocum",
    "Cotto", "Fitzbillies", "Giraffe", "Green Man", "Loch Fyne", "Midsummer House", "Strada",
    "Taste of Cambridge", "The Cambridge Blue", "The Cricketers", "The Dumpling Tree", "The Eagle",
    "The Golden Curry", "The Golden Palace", "The Mill", "The Olive Grove", "The Phoenix",
    "The Plough", "The Punter", "The Rice Boat", "The Twenty Two", "The Vaults", "The Waterman",
    "The Wrestlers", "Travellers Rest Beefeater", "Wildwood", "Zizzi", "All Bar One", "Avalon",
    "Burger King", "Café Adriatic", "Café Brazil", "Café Rouge", "Café Sicilia", "Clare Hall",
    "Crowne Plaza Hotel", "Express by Holiday Inn", "Rainbow Vegetarian Café", "Raja Indian Cuisine",
    "Ranch", "The Bakers", "The Portland Arms", "The Six Bells", "The Sorrento", "Yippee Noodle Bar",
)  # fmt: skip

_W = r"[\s-]*"  # word separator inside patterns ("family-friendly", "family friendly")


def _p(*alts: str) -> re.Pattern:
    """Alternatives -> one regex bounded by non-word characters; a space means ``[\\s-]*``."""
    return re.compile(r"(?<!\w)(?:" + "|".join(a.replace(" ", _W) for a in alts) + r")(?!\w)")


_NUM = {"1": 1, "one": 1, "2": 2, "two": 2, "3": 3, "three": 3, "4": 4, "four": 4, "5": 5, "five": 5}
_STARS_LEVEL = {1: "low", 2: "low", 3: "mid", 4: "high", 5: "high"}
_N = r"(?:[1-5]|one|two|three|four|five)"

# (attribute, level, pattern). Levels: price/rating low|mid|high; familyFriendly yes|no;
# area riverside|city centre; eatType and food values (lower case).
_RULES: list[tuple[str, str, re.Pattern]] = [
    # priceRange
    (
        "priceRange",
        "low",
        _p(
            r"cheap(?:ly|er|est)?",
            r"inexpensive(?:ly)?",
            r"low (?:cost|priced?|prices?|pricing)",
            r"(?:less|lower) than £ ?20",
            r"(?:under|below|beneath) £ ?20",
            r"£ ?20 or (?:less|under)",
            r"less than (?:20|twenty) (?:pounds|gbp|quid)",
            r"under (?:20|twenty) (?:pounds|gbp)",
            r"budget(?: friendly)?",
            r"not (?:very |too |that |so )?expensive",
            r"bargain",
        ),
    ),
    (
        "priceRange",
        "mid",
        _p(
            r"moderate(?:ly)? (?:priced|price[ds]?|pricing)",
            r"mid (?:range|priced|price)",
            r"medium (?:priced?|prices?)",
            r"average(?:ly)? (?:priced|prices?|pricing)",
            r"reasonabl[ey] (?:priced|prices?)",
            r"(?:between )?£ ?20 ?(?:-|to|and) ?£? ?25(?: pounds)?",
            r"20 ?(?:-|to|and) ?25 (?:pounds|gbp|£)",
            r"fairly priced",
        ),
    ),
    (
        "priceRange",
        "high",
        _p(
            r"expensive",
            r"pricey",
            r"pricy",
            r"costly",
            r"high (?:end|priced?|prices?|pricing|cost)",
            r"highly priced",
            r"(?:more|higher) than £ ?30",
            r"(?:over|above|exceeding) £ ?30",
            r"£ ?30 (?:or more|plus|and (?:over|above|up))",
            r"£ ?30\+",
            r"more than (?:30|thirty) (?:pounds|gbp)",
            r"over (?:30|thirty) (?:pounds|gbp)",
            r"not cheap",
            r"upscale",
            r"premium pric\w*",
        ),
    ),
    # customer rating
    (
        "customer rating",
        "low",
        _p(
            r"(?:poor|bad)(?:ly)? (?:rated|ratings?|reviews?|reviewed)",
            r"low(?:ly)? rated",
            r"rated (?:poorly|low|badly)",
            r"low (?:customer )?(?:ratings?|reviews?)",
            r"(?:poor|bad|terrible|negative) (?:customer )?(?:ratings?|reviews?|feedback)",
        ),
    ),
    (
        "customer rating",
        "mid",
        _p(
            r"average(?:ly)? rated",
            r"moderate(?:ly)? rated",
            r"moderate (?:customer )?(?:ratings?|reviews?)",
            r"rated (?:as )?average",
            r"average (?:customer )?(?:ratings?|reviews?)",
            r"mediocre",
            r"(?:decent|ok|okay|fair) (?:customer )?(?:ratings?|reviews?)",
        ),
    ),
    (
        "customer rating",
        "high",
        _p(
            r"high(?:ly)? rated",
            r"rated (?:very )?(?:highly|high|well)",
            r"top rated",
            r"well rated",
            r"high (?:customer )?(?:ratings?|reviews?)",
            r"highly (?:reviewed|recommended)",
            r"(?:excellent|great|outstanding|stellar|positive|top|amazing) (?:customer )?(?:ratings?|reviews?|feedback)",
            r"well reviewed",
        ),
    ),
    # area
    (
        "area",
        "riverside",
        _p(
            r"river ?side",
            r"river",
            r"waterfront",
            r"water ?side",
            r"out ?side (?:of )?(?:the )?(?:city|town) cent(?:re|er)",
            r"out ?side (?:of )?(?:the )?cent(?:re|er)",
        ),
    ),
    (
        "area",
        "city centre",
        _p(
            r"(?:city|town)s? cent(?:re|er|ral)",
            r"cent(?:re|er) of (?:the )?(?:city|town)",
            r"downtown",
            r"central(?:ly)?",
            r"(?:in|at) the cent(?:re|er)",
            r"city ?cent(?:re|er)",
            r"centre",
        ),
    ),
    # familyFriendly (yes phrases can be negated by a preceding clause negation)
    (
        "familyFriendly",
        "yes",
        _p(
            r"(?:family|families|kids?|child|children|toddler) friendly",
            r"friendly (?:to|for|towards|with) (?:the )?(?:whole )?(?:famil(?:y|ies)|kids|children)",
            r"(?:welcomes?|welcoming|allows?|allowing|permits?|accepts?|caters? (?:to|for)|great for|good for|suitable for|ideal for|perfect for|fine for|fun for|appropriate for|geared towards|open to|accommodates?|accommodating)(?: of| to)? (?:the )?(?:whole )?(?:famil(?:y|ies)|kids|children|young ones)",
            r"(?:families|kids|children) (?:are )?(?:welcome|allowed|welcomed|permitted)",
            r"family (?:oriented|style|restaurant|place|venue|atmosphere|setting|environment|establishment|dining|pub|coffee shop|eatery|friendly)",
            r"for (?:the )?(?:whole )?(?:family|families|kids|children)",
            r"bring (?:the|your) (?:kids|children|family)",
        ),
    ),
    (
        "familyFriendly",
        "no",
        _p(
            r"adults? only",
            r"adults?",
            r"(?:no|not for) (?:kids|children|famil(?:y|ies))",
            r"(?:families|kids|children) (?:are )?not (?:welcome|allowed|welcomed|permitted)",
            r"non (?:family|kids?|child|children)(?: friendly)?",
            r"(?:family|kids?|child|children) unfriendly",
            r"unfriendly (?:to|for|towards) (?:famil(?:y|ies)|kids|children)",
            r"unsuitable for (?:famil(?:y|ies)|kids|children)",
            r"over 18s?",
            r"grown ups",
        ),
    ),
    # eatType ("restaurant" is weak: see module docstring)
    (
        "eatType",
        "coffee shop",
        _p(r"coffee (?:shop|house|bar)s?", r"coffeeshops?", r"cafe", r"cafes", r"coffee place"),
    ),
    ("eatType", "pub", _p(r"pubs?", r"tavern", r"inn")),
    ("eatType", "restaurant", _p(r"restaurants?")),
    # food
    ("food", "english", _p(r"english", r"british", r"fish and chips")),
    ("food", "french", _p(r"french")),
    ("food", "italian", _p(r"italian", r"pasta", r"pizzas?")),
    ("food", "japanese", _p(r"japanese", r"sushi")),
    ("food", "chinese", _p(r"chinese")),
    ("food", "indian", _p(r"indian", r"curr(?:y|ies)")),
    ("food", "fast food", _p(r"fast food", r"burgers?", r"take ?away")),
]

# Star / "x out of 5" ratings with a number, and "rated 3" style.
_RATING_NUM = re.compile(
    rf"\b(?:({_N}) ?(?:out of|out|/|of) ?(?:5|five)(?: stars?)?|({_N}) stars?|({_N})[\s-]star|rat(?:ed|ing)(?: of| is| at)? ({_N})\b(?! ?(?:pounds|£)))"
)
# Words whose price / rating reading depends on nearby cues.
_AMBIGUOUS = re.compile(r"\b(high(?:er|est|ly)?|low(?:er|est)?|average|moderate(?:ly)?|medium|mid)\b")
_AMB_LEVEL = {
    "high": "high",
    "low": "low",
    "average": "mid",
    "moderate": "mid",
    "medium": "mid",
    "mid": "mid",
}
_PRICE_CUE = re.compile(
    r"^(?:price[sd]?|pricing|pricey|cost|costs|costing|expensive|cheap|£|pounds|pay|spend|budget|affordable|money|menu)$"
)
_RATING_CUE = re.compile(
    r"^(?:ratings?|rated|rate|rates|customers?|reviews?|reviewed|stars?|score[sd]?|quality|rank|ranks|ranked|ranking|satisfaction|feedback)$"
)
_CLAUSE_BREAK = re.compile(r"^(?:[.;!?,]|but|while|whereas|although|though|however|yet)$")
_NEGATION = re.compile(
    r"^(?:not|no|isnt|arent|wasnt|doesnt|dont|didnt|cannot|cant|never|non|nor|neither|without|unsuitable|unfriendly|wont)$"
)
_TOKEN = re.compile(r"£|\w+|[^\w\s]")
_SENTENCE = re.compile(r"[.!?]+(?:\s|$)")
_ANAPHOR = re.compile(r"\b(?:the|this|that|these|its|our)\s*$")
_CLAUSE_WINDOW = 5  # tokens either side searched for cues / negation
_ELABORATION = 6  # same-value mentions at most this many tokens apart count once


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
    return re.compile(r"\b(?:" + "|".join(alts) + r")s?\b")


_VENUE_RES = {normalise(v): _venue_regex(v) for v in E2E_VENUES}


def _find_venues(text: str, names: list[str]) -> list[tuple[str, int, int]]:
    """Non-overlapping venue mentions ``(normalised name, start, end)``, longest first."""
    found = []
    for name in dict.fromkeys([normalise(n) for n in names] + list(_VENUE_RES)):
        rx = _VENUE_RES.get(name) or _venue_regex(name)
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
    names = [r.value for r in records if r.attribute in ("name", "near")]
    venues = _find_venues(norm, names)
    mentions = _slot_mentions(norm, [(s, e) for _, s, e in venues])
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
        else:
            verdict = _slot_verdict(r, by_attr.get(r.attribute, []), norm)
        report.per_record.append(RecordVerdict(idx, r.label, *verdict))

    for attr, ms in by_attr.items():
        strong = [m for m in ms if not (attr == "eatType" and m.level == "restaurant")]
        if attr not in input_attrs and strong:
            report.hallucinated.append(attr)
    if "near" not in input_attrs and stray and "name" in input_attrs:
        name_found = any(v[0] == normalise(r.value) for v in venues for r in records if r.attribute == "name")
        if name_found or len(stray) > 1:
            report.hallucinated.append("near")
    return report


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


# ----------------------------------------------------------------------------- WebNLG

_MONTHS = "january february march april may june july august september october november december".split()
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
_SUFFIXES = (" language", " f.c.", " a.f.c.", " fc", " afc")


def _variants(entity: str) -> list[str]:
    """Regex variants of a WebNLG entity to search for (most specific first)."""
    e = _entity_norm(entity)
    plain = [e]
    no_paren = re.sub(r"\s*\([^)]*\)", "", e).strip()
    plain.append(no_paren)
    for suf in _SUFFIXES:
        if no_paren.endswith(suf):
            plain.append(no_paren[: -len(suf)].strip())
    if "," in no_paren:
        plain.append(no_paren.split(",")[0].strip())
    plain += _ALIASES.get(no_paren, [])
    plain += _number_variants(no_paren)
    num = re.fullmatch(r"(-?\d+(?:\.\d+)?)\s*(.*)", no_paren)  # "125.0 (minutes)" / "3.5 metres"
    if num:
        plain += _number_variants(num.group(1)) or [num.group(1)]
    out = []
    for v in dict.fromkeys(p for p in plain if p):
        rx = re.escape(v).replace(r"\ ", r"[\s-]+")
        if re.search(r"[a-z]$", v):  # plurals and demonyms: "condiments", "indonesian"
            rx += r"(?:s|es|n|an|ian)?"
        out.append(rx)
    date = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", no_paren)
    if date:
        y, mo, d = date.groups()
        month, day = _MONTHS[int(mo) - 1], str(int(d))
        out += [rf"{month} {day}(?:st|nd|rd|th)?,? {y}", rf"{day}(?:st|nd|rd|th)? (?:of )?{month},? {y}"]
    return out


def _count_entity(entity: str, norm_text: str, masked: list[tuple[int, int]]) -> tuple[int, str]:
    """Mentions of ``entity`` outside ``masked`` spans (first variant that matches) and the evidence."""
    for v in _variants(entity):
        rx = re.compile(r"(?<!\w)" + v + r"(?!\w)")
        hits = [m for m in rx.finditer(norm_text) if all(m.end() <= s or m.start() >= e for s, e in masked)]
        if hits:
            return len(hits), hits[0].group(0)
    words = [w for w in re.findall(r"\w+", _entity_norm(entity)) if w not in _STOP]
    if len(words) >= 2:  # partial: most content words present
        present = [w for w in words if re.search(rf"\b{re.escape(w)}", norm_text)]
        if len(present) * 3 >= len(words) * 2:
            return 1, " ".join(present)
    return 0, ""


def _containing_spans(entity: str, others: list[str], norm_text: str) -> list[tuple[int, int]]:
    """Spans of other input entities whose name contains ``entity`` ("Athens" in "Athens Airport")."""
    e = _entity_norm(entity)
    spans = []
    for o in others:
        on = re.sub(r"\s*\([^)]*\)", "", _entity_norm(o)).strip()
        if on != e and len(on) > len(e) and re.search(rf"(?<!\w){re.escape(e)}(?!\w)", on):
            rx = re.compile(r"(?<!\w)" + re.escape(on).replace(r"\ ", r"[\s-]+") + r"(?!\w)")
            spans += [(m.start(), m.end()) for m in rx.finditer(norm_text)]
    return spans


def check_webnlg(records: list[Record], text: str) -> FaithReport:
    """Verdicts for WebNLG triples: object found (realised), 2+ times (repeated) or not (missing)."""
    norm = normalise(text)
    entities = [e for r in records for e in (r.subject or "", r.value) if e]
    in_input: dict[str, int] = {}
    for e in entities:
        in_input[_entity_norm(e)] = in_input.get(_entity_norm(e), 0) + 1
    report = FaithReport()
    for idx, r in enumerate(records):
        n, ev = _count_entity(r.value, norm, _containing_spans(r.value, entities, norm))
        if n == 0:
            status = "missing"
        elif n >= 2 and in_input.get(_entity_norm(r.value), 0) <= 1:
            status = "repeated"
        else:
            status = "realised"
        report.per_record.append(RecordVerdict(idx, r.label, status, ev))
    return report
