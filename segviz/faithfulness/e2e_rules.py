"""E2E checker patterns: venue names, slot phrases per level, cue and negation words.

The rules are data; :mod:`segviz.faithfulness.e2e` applies them.
"""

from __future__ import annotations

import re

# The E2E attributes, in the editor's order; the checker has rules for these only.
E2E_ATTRIBUTES = ("name", "eatType", "food", "priceRange", "customer rating", "area", "familyFriendly", "near")

# The values the slot rules read, per attribute (normalised). Any other value of these attributes
# ("food[Thai]", "area[harbour front]", typed in the Playground) is read word for word, as the
# value of an attribute without rules is.
E2E_VALUES = {
    "eatType": ("coffee shop", "pub", "restaurant"),
    "food": ("english", "french", "italian", "japanese", "chinese", "indian", "fast food"),
    "priceRange": ("cheap", "moderate", "high", "less than £20", "£20-25", "more than £30"),
    "customer rating": ("low", "average", "high", "1 out of 5", "3 out of 5", "5 out of 5"),
    "area": ("riverside", "city centre"),
    "familyFriendly": ("yes", "no"),
}

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
