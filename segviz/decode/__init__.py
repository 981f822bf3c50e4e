"""Decoding: segment-by-segment beam search with constraints, PG beam search, plan forcing,
sampling of diverse structures, and forced alignment (Viterbi) of any text.

Constraints (paper §4 "Decoding"), selectable per call (the registry
:data:`segviz.constraints.CONSTRAINTS`; the search reads its flags):

- ``none``: segments are non-empty (always on; the paper's "ours")
- ``r``:    + a record is realised at most once (the null record is exempt)  ("+R")
- ``rm``:   + ``<eos>`` is blocked until every record has been realised      ("+RM")

With ``r``, ``rm`` and forced plans a record counts as realised only by a segment that says
something: a segment of a real record may not end (by ``$`` or ``<eos>``) while all its words
are punctuation or English function words (:data:`FUNCTION_WORDS`). This is the "simple
filtering rule" of the paper's error analysis (appendix A: +RM's remaining misses were
segments aligned to a record that generated only a period); without it "near" or "it is"
could stand in for a whole record and the constraint would be met in name only.

Also with ``r`` and ``rm`` (no plan), a record whose whole value appears verbatim in the text,
inside another record's segment ("an English coffee shop" aligned to ``food`` states
``eatType[coffee shop]`` too), counts as realised: ``r`` then does not let it be said again and
``rm`` does not demand it a second time. This is the entity string-matching the paper's
footnote on heuristic rules allows; without it +RM appended "... and it is a coffee shop".

Our choices where the paper is silent: ``<eos>`` is a word of the last segment (it may only
continue a segment, never open one); a segment is cut at ``L`` tokens; finished hypotheses are
ranked by log-probability divided by ``length ** length_penalty``; when no hypothesis can meet
the constraints within ``max_len`` tokens the best unconstrained output is returned with
``fallback_used = True``. Both systems (segment model and PG) block a word trigram from
occurring twice in one output by default (``no_repeat_ngram``, Paulus et al., 2018): the
paper's error analysis names repetition *inside* a segment as what +R cannot prevent.

Layout: :mod:`~segviz.decode.rules` (function words, mentions, no-repeat n-grams, value rules:
the masks), :mod:`~segviz.decode.beam` (what both searches share), :mod:`~segviz.decode.search`
(:class:`SegmentDecoder`), :mod:`~segviz.decode.seg` (:func:`generate_seg`, n-best, sampled
structures), :mod:`~segviz.decode.pg` (the PG baseline), :mod:`~segviz.decode.forced` (Viterbi
alignment). Everything public is importable from ``segviz.decode``.
"""

from __future__ import annotations

from segviz.constraints import CONSTRAINT_LABELS, CONSTRAINTS, Constraint
from segviz.decode.beam import NO_REPEAT_NGRAM
from segviz.decode.forced import align_result, force_align
from segviz.decode.pg import generate_pg, generate_pg_nbest
from segviz.decode.rules import (
    DEFAULT_VALUE_RULES,
    FUNCTION_WORDS,
    GUIDED,
    RULE_SWITCHES,
    VALUE_RULES,
    VALUE_RULES_HELP,
    ValueRules,
    _absent_ids,
    _own_mask,
    guided_rules,
    is_function_word,
    parse_value_rules,
    repeated_ngram_ends,
    specific_value,
    value_rules,
)
from segviz.decode.search import SegmentDecoder
from segviz.decode.seg import generate_seg, generate_seg_nbest, sample_structures
from segviz.result import GenerationResult

__all__ = [
    "CONSTRAINTS", "CONSTRAINT_LABELS", "Constraint", "NO_REPEAT_NGRAM", "align_result", "force_align", "generate_pg",
    "generate_pg_nbest", "DEFAULT_VALUE_RULES", "FUNCTION_WORDS", "GUIDED", "guided_rules", "RULE_SWITCHES", "VALUE_RULES", "VALUE_RULES_HELP", "parse_value_rules", "ValueRules", "_absent_ids",
    "_own_mask", "is_function_word", "repeated_ngram_ends", "specific_value", "value_rules", "SegmentDecoder",
    "generate_seg", "generate_seg_nbest", "sample_structures", "GenerationResult",
]  # fmt: skip
