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
  a hallucinated ``near``; where ``near`` is present but not found it makes ``near`` wrong; where
  the input's ``name`` and ``near`` are both said, it is a hallucinated ``near`` too (session 25:
  "… near Burger King … It is located near to the portland arms.").

A slot absent from the input but expressed in the text is *hallucinated* (listed by attribute).

A value the slot rules do not know (an attribute without rules, ``colour[red]``, or a value
outside its closed set, ``food[Thai]``) is read word for word; a span of it inside a longer
mention of the input's ``name`` or ``near`` is part of that name, not the value ("harbour" of
"Harbour Lights" for ``area[harbour]``, session 25).

**WebNLG**: the object of each triple is matched after entity normalisation (underscores ->
spaces, quotes / accents / parentheticals dropped, numbers like ``3500.0`` ~ ``3,500``, ISO
dates ~ "March 15, 1930", a suffix such as " language" or " people" dropped, a people by its
adjective, "american" for ``Americans``); a variant said inside another input entity that holds
it is no mention ("Appleton" of ``Appleton,_Wisconsin`` inside "Appleton International Airport");
``missing`` when no variant is found, ``repeated`` when it is mentioned
2+ times but occurs only once among the input's subjects and objects. WebNLG predicates are
open-ended, so ``wrong`` and ``hallucinated`` are always 0 for WebNLG.
"""

from segviz.faithfulness.common import STATUSES, FaithReport, RecordVerdict, normalise, totals
from segviz.faithfulness.e2e import E2E_VENUES, check_e2e
from segviz.faithfulness.segments import SEGMENT_VERDICTS, SegmentVerdict, segment_totals, segment_verdicts
from segviz.faithfulness.webnlg import check_webnlg
from segviz.records import Record

__all__ = [
    "RecordVerdict",
    "FaithReport",
    "check",
    "check_e2e",
    "check_webnlg",
    "normalise",
    "totals",
    "STATUSES",
    "E2E_VENUES",
    "SEGMENT_VERDICTS",
    "SegmentVerdict",
    "segment_verdicts",
    "segment_totals",
]


def check(dataset: str, records: list[Record], text: str) -> FaithReport:
    """The checker of ``dataset`` (:func:`check_e2e`, :func:`check_webnlg`: its registry entry)."""
    from segviz.datasets import get  # the registry imports the checkers

    return get(dataset).check(records, text)
