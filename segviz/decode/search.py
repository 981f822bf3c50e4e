"""Segment-by-segment beam search for the segment model (paper §4 "Decoding", docs/design.md §1).

Letters as in :mod:`segviz.model`: ``S = K + 1`` states, ``V`` vocabulary, ``n_ext = V + #oov``
extended ids, ``H`` hidden size, ``M_w`` hypotheses inside a segment (about to emit a word or
``$``), ``M_b`` hypotheses at a boundary (about to choose a record).

One step of :meth:`SegmentDecoder.search_n`: word candidates (the token distribution under each
hypothesis' record with the rule masks applied), record candidates at a boundary (the transition
model), selection into two beams, advancing the chosen hypotheses, and one batched decoder step
for those that emitted a word.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import torch

from segviz import dp
from segviz.constraints import Constraint, constraint
from segviz.data import BOS_ID, EOS_ID, EOSEG_ID, UNK_ID, Vocab
from segviz.decode.beam import _banned, _beam_done, _prepare, _ranked
from segviz.decode.rules import (
    ValueRules,
    _absent_ids,
    _accent_twins,
    _alien_ids,
    _continues,
    _distinct_mask,
    _echo_entries,
    _entities,
    _force,
    _function_mask,
    _has,
    _inner_ids,
    _just_said,
    _literal_mask,
    _mentioned_now,
    _month_mask,
    _next_words,
    _owed_after,
    _own_mask,
    _phrases,
    _punct_mask,
    _ran_on,
    _run_on,
    _said_ids,
    _said_once,
    _says_mask,
    _stranger_ids,
    _subject_phrases,
    _unheld_ids,
    _value_forms,
    _value_ids,
    _values_mask,
    babbled,
    checker_reading,
    date_phrases,
    dates_again,
    dates_open,
    doubled,
    doubled_ok,
    entity_starts,
    foreign_ends,
    foreign_names,
    longer_than,
    number_room,
    numbers_spent,
    plain_words,
    repeated_ngram_ends,
    spelling_twins,
    spent_groups,
    spent_ids,
)
from segviz.model import SegEncoding, SegmentModel
from segviz.records import Record

BRIEF = 1  # ValueRules.brief: the most tokens of a filler segment ("[name: .]", "[name: the]"; 2 and 3 measured, session 37)
Cand = tuple[float, int, str, int]  # (score, hypothesis index, "w" word / "r" record, id)


def _name_owed(x, h) -> bool:
    """``ValueRules.names``: the current segment owes its record's proper name (or its unseen
    subject) and may not end, nor may the text, until it is said whole."""
    return (bool(x.must.get(h.k)) and not h.named or not h.subject_said) and not h.filler


def _owed_len(x, h) -> int:
    """Tokens a segment may run past ``L`` while a name is owed: its value's and its subject's."""
    value = max(map(len, x.must[h.k])) if x.must.get(h.k) and not h.named else 0
    return value + (0 if h.subject_said else len(x.subjects.get(h.k, ())))


def _spelt(x, tokens: list[int]) -> list[int]:
    """``tokens`` read through ``x.spelt`` (``ValueRules.spellings``, :func:`spelling_twins`): a
    value word said unaccented or as a possessive word is that word; as they are without it."""
    return [x.spelt.get(t, t) for t in tokens] if x.spelt else tokens


def _mentioned_with_subjects(x, tokens: list[int]) -> frozenset:
    """Records said verbatim by ``tokens`` (``_mentioned_now``), where a record with a named
    subject (names rule, WebNLG) counts only once its subject is in the text too: the object
    alone ("... home to Ladywell Fields") does not state the triple (Halberd_Court | location |
    Ladywell_Fields), nor does "Gujarat" in "Anandiben Patel is the leader of Gujarat" state
    (Amdavad_ni_Gufa | location | Gujarat). Such a record also counts when its subject comes
    after its value. ``tokens`` as :func:`_spelt` reads them ("nasa's" says "nasa": spellings)."""
    now = {k for k in _mentioned_now(x.values, tokens) if k not in x.longer}
    now |= {k for k, longer in x.longer.items() if _alone(tokens, tuple(x.values[k]), longer)}
    if x.values:  # forms: a value said in a short form ("french" of French_language)
        now |= {k for k, es in x.forms.items() if any(_alone(tokens, f, longer) for f, _, longer, _ in es)}
    if not x.said_subjects:
        return now
    late = {k for k, ids in x.values.items() if k in x.said_subjects and _alone(tokens, tuple(ids), x.longer.get(k, []))}
    return frozenset(k for k in now | late if _has(tokens, x.said_subjects.get(k), x.twins))


def _said_before(x, tokens: list[int], k: int) -> bool:
    """Whether ``tokens`` (as :func:`_spelt` reads them) have said record ``k``'s value, held by
    one slot of the input (*once*): whole or, with ``forms``, in a short form, outside the longer
    entities that hold it."""
    read = _spelt(x, tokens)
    entries = ([x.once[k]] if k in x.once else []) + x.forms.get(k, [])
    return any(_alone(read, value, longer) for value, _, longer, _ in entries)


def _name_said(x, tokens: list[int], k: int) -> bool:
    """``ValueRules.names``: whether ``tokens`` (as :func:`_spelt` reads them) have already said
    record ``k``'s proper name whole, outside the input's longer names that hold it ("Blue Heron"
    inside "Blue Heron Café" is not said), so that a segment of ``k`` does not owe it again
    (without a plan: a planned segment says its record's name). Owing it barred the model's
    closing segment ``[name: .]`` under an unseen name: a text with an invented name ended
    without its full stop (session 19)."""
    owed = x.must.get(k)
    if not owed:  # most records: nothing to read (this runs for every record choice of the beam)
        return False
    read = _spelt(x, tokens)
    names = {tuple(p) for ps in x.phrases.values() for p in ps}
    return any(
        _alone(read, tuple(q), [p for p in names if len(p) > len(q) and _has(list(p), tuple(q))])
        for q in owed
    )


def _alone(tokens: list[int], phrase: tuple, longer: list[tuple]) -> bool:
    """Whether ``tokens`` say ``phrase`` (a value) outside the longer entities of the input that
    hold it, as far as the tokens so far tell: an occurrence inside an occurrence of one of
    ``longer``, or one that may still grow into one (the tokens end inside its prefix), does not
    count yet. The object "Angola" of (Ícolo_e_Bengo | country | Angola) is not said by "Angola
    International Airport": taken as said, it made +R / +RM skip the record and repeat "ícolo e
    bengo" instead ("… is located in icolo e bengo, Ícolo e Bengo")."""
    n = len(phrase)
    return any(
        tuple(tokens[i : i + n]) == phrase and not any(_within(tokens, i, phrase, e) for e in longer)
        for i in range(len(tokens) - n + 1)
    )


def _within(tokens: list[int], i: int, phrase: tuple, entity: tuple) -> bool:
    """Whether ``phrase``, said at ``i``, lies inside an occurrence of ``entity`` that is said, or
    that the tokens so far may still complete (they end inside it)."""
    n = len(phrase)
    for j in range(len(entity) - n + 1):
        if i - j < 0 or entity[j : j + n] != phrase:
            continue
        seen = tuple(tokens[i - j : i - j + len(entity)])
        if seen == entity[: len(seen)]:  # said whole, or still a prefix at the end of the tokens
            return True
    return False


def _ban_again(x, tokens: list[int], entries: list[tuple], row: torch.Tensor) -> None:
    """Ban in ``row`` (n_ext,) the word where a phrase of ``entries`` (*once* entries,
    :func:`_once_entry`) that ``tokens`` have said would be said again (:meth:`SegmentDecoder._mask_once`);
    for an *onward* entry (:func:`_onward_entry`, position ``len(value)``), said again whole and
    not as the end of another entity, leave only the words that go on as an entity it begins."""
    for value, j, longer, others in entries:
        if tuple(tokens[len(tokens) - j :]) != value[:j] or not _alone(tokens, value, longer):
            continue
        if j == len(value):  # onward: said again whole, it goes on as an entity it begins
            if not _ends_inside(tokens, value, others):  # not "the Battle of Baku"
                _go_on(tokens, others, row)
        elif not _continues(tokens, value[j], others):
            row[[value[j], *(t for t, w in x.spelt.items() if w == value[j])]] = -math.inf


def _ends_inside(tokens: list[int], phrase: tuple, entities: list[tuple]) -> bool:
    """Whether ``tokens`` end with ``phrase`` as the later words of one of ``entities`` that they
    are saying ("… the Battle of Baku" for "Baku" and "Ottoman Army soldiers killed in the Battle
    of Baku")."""
    n = len(phrase)
    return any(
        e[j : j + n] == phrase and tuple(tokens[len(tokens) - j - n :]) == e[: j + n]
        for e in entities
        for j in range(1, len(e) - n + 1)
    )


def _go_on(tokens: list[int], entities: list[tuple], row: torch.Tensor) -> None:
    """Leave in ``row`` (n_ext,) only the words that go on with one of ``entities`` whose
    beginning the tokens end with; the row as it was when the other rules ban them all."""
    nxt = _next_words(tokens, entities)
    if not torch.isfinite(row[nxt]).any():  # no way on that the other rules allow: leave the row
        return
    keep = row[nxt].clone()
    row.fill_(-math.inf)
    row[nxt] = keep


def _either(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """``a | b | ...`` of optional masks of one shape (None: no mask; all None: None)."""
    given = [m for m in masks if m is not None]
    return functools.reduce(torch.logical_or, given) if given else None


def _says(x, h, v: int) -> bool:
    """Whether word ``v`` meets the content rule in the segment of ``h``'s record ``k``: a word
    that is not a function word, or with ``rules.stating`` one of ``x.says[k]``, with
    ``rules.literal`` one of ``x.literal[k]`` unless the text said the value before the segment
    began (``h.loose``; :func:`_content_mask`)."""
    if x.func is None:
        return False
    says = x.literal if x.literal is not None and not h.loose else x.says
    return bool(says[max(h.k, 0), v]) if says is not None else not bool(x.func[v])


def _led_in(longer: dict[int, list[tuple]], values: dict[int, list[int]]) -> dict[int, list[tuple]]:
    """``rules.outside``: record id -> its longer entities (``longer``, :func:`longer_than`) whose
    words before the value lead into it ("abilene ," of "Abilene, Texas" for ``Texas``), each as
    (entity ids, the offset where the value begins in it); entities that begin with the value
    are left out ("New York City" says ``New_York`` first)."""
    out = {}
    for k, es in longer.items():
        v, n = tuple(values[k]), len(values[k])
        led = [(e, o) for e in es for o in [next(i for i in range(len(e) - n + 1) if e[i : i + n] == v)] if o > 0]
        if led:
            out[k] = led
    return out


def _nested_values(vocab, oov: list[str], records: list[Record], rules, planned: bool, values: dict) -> dict:
    """The values ``outside`` and ``begun`` read (record id -> ids): the mention rule's ``values``
    (:func:`segviz.decode.rules._value_ids`), which is empty under a forced plan; there, with
    ``rules.planned``, every specific value's, so that a forced segment of ``mainIngredients |
    Bacon`` does not state its value by the "bacon" of "Bacon Explosion" (docs/design.md §6;
    the names rule then lets "bacon" end there: :func:`_ends`)."""
    if values or not (planned and rules and rules.planned):
        return values
    return _value_ids(vocab, oov, records)


def _inside_names(tokens: list[int], phrases: list[tuple]) -> list[tuple[tuple, int]]:
    """``(name, j)`` for every name of ``phrases`` whose first ``j`` words (not all) ``tokens`` end with."""
    return [(p, j) for p in phrases for j in range(1, len(p)) if len(tokens) >= j and tuple(tokens[-j:]) == p[:j]]


def _going_on(tokens: list[int], phrases: list[tuple]) -> set[int]:
    """The next words of the ``phrases`` that ``tokens`` end inside (a name begun, not said whole)."""
    return {p[j] for p, j in _inside_names(tokens, phrases)}


def _owed_on(tokens: list[int], phrases: list[tuple], v: int) -> tuple:
    """``rules.begun`` (:func:`_ends`): the rests owed once ``v`` takes ``tokens`` on past a value that ended
    there into a longer name of ``phrases`` ("ashgabat" then "international": "airport" is owed
    again, as :func:`segviz.decode.rules._owed_after` owes a name begun), ``()`` for none."""
    rests = [p[j + 1 :] for p, j in _inside_names(tokens, phrases) if p[j] == v]
    return () if not rests or not all(rests) else tuple(dict.fromkeys(rests))


def _ends(own: dict, begun: dict, func: torch.Tensor) -> dict[int, list[tuple]]:
    """``rules.begun`` (``_Input.ends``): record id -> [its value from its first content word]
    where the value begins a longer name of the input (``begun``), so that the names rule, which
    copies a name begun whole (every name under a plan, an unseen one without), may end the name
    there: ``begun`` does not count "zorvak" of an unseen "Zorvak International Airport" as
    ``cityServed | Zorvak``, and owing the whole name left +RM no way to say the city (session
    43). A value of function words only has none."""
    out = {}
    for k in begun:
        first = next((i for i, t in enumerate(own[k]) if not func[t]), None)
        if first is not None:
            out[k] = [tuple(own[k][first:])]
    return out


def _begun_with(longer: dict[int, list[tuple]], values: dict[int, list[int]]) -> dict[int, list[tuple]]:
    """``rules.begun``: record id -> its longer entities (:func:`longer_than`) that begin with its
    value ("ashgabat international airport" for ``cityServed | Ashgabat``)."""
    out = {k: [e for e in es if e[: len(values[k])] == tuple(values[k])] for k, es in longer.items()}
    return {k: es for k, es in out.items() if es}


def _continued(x, k: int, read: list[int], i: int) -> bool:
    """``rules.begun``: whether the word at ``i`` of ``read`` lies in an occurrence of record
    ``k``'s value that the text goes on with as one of ``x.begun[k]`` (past the value's words)."""
    v = tuple(x.own[k])
    for s in range(max(0, i - len(v) + 1), i + 1):
        if tuple(read[s : s + len(v)]) == v and any(
            len(seen := tuple(read[s : s + len(e)])) > len(v) and seen == e[: len(seen)] for e in x.begun[k]
        ):
            return True
    return False


def _stated_now(x, h, tokens: list[int], read: list[int]) -> bool:
    """``rules.begun``: the content flag of ``h``'s segment read again over its ``tokens``: a word
    that states its record (:func:`_says`) outside the longer entities that lead into the value
    (:func:`_inside_longer`) or that the text goes on with from it (:func:`_continued`): the
    airport's name "Ashgabat International Airport" does not state ``cityServed | Ashgabat``."""
    start = h.segments[-1][0] if h.segments else 0
    return any(
        _says(x, h, tokens[i]) and not _inside_longer(x, h.k, read[: i + 1]) and not _continued(x, h.k, read, i)
        for i in range(start, len(tokens))
    )


def _goes_past(x, h) -> list[int]:
    """``rules.begun`` across a boundary: the words that would take the text on with a longer
    entity of an earlier segment's record past that record's value, when that segment would then
    have stated nothing (:func:`_stated_now` read again over the longer text): "… Ashgabat |
    International Airport" may not leave `location | Ashgabat`'s segment "ashgabat" alone."""
    read, out = _spelt(x, h.tokens), set()
    for start, end, k in h.segments[:-1]:
        nxt = {e[j] for e in x.begun.get(k, ()) for j in range(1, len(e))
               if start <= len(read) - j < end and read[-j:] == list(e[:j])}  # fmt: skip
        if nxt:
            seg = replace(h, k=k, segments=[[start, end, k]], loose=_said_own(x, h.tokens[:start], k))
            out |= {w for w in nxt if not _stated_now(x, seg, h.tokens[:end], _spelt(x, [*h.tokens, w]))}
    return sorted(out)


def _inside_longer(x, k: int, read: list[int]) -> bool:
    """``rules.outside``: whether the last word of ``read`` (tokens as :func:`_spelt` reads them)
    is a word of record ``k``'s value said inside one of its longer entities begun before the
    value (``x.outside``, :func:`_led_in`): the checker does not read "Abilene, Texas" as saying
    ``Abilene,_Texas | isPartOf | Texas``, so such a word does not state it."""
    for e, o in x.outside.get(k, ()):
        n = len(x.own[k])
        if any(read[-j:] == list(e[:j]) for j in range(o + 1, min(o + n, len(read)) + 1)):
            return True
    return False


def _only(row: torch.Tensor, ids: list[int]) -> None:
    """Leave ``row`` (n_ext,) only ``ids``, with their scores (a banned one stays banned)."""
    keep = row[ids].clone()
    row.fill_(-math.inf)
    row[ids] = keep


def _only_ends(row: torch.Tensor) -> None:
    """Leave ``row`` (n_ext,) only "$" and "<eos>", with their scores: the segment ends here."""
    _only(row, [EOSEG_ID, EOS_ID])


def _only_forced(forced: list[int], t: int, row: torch.Tensor) -> None:
    """``forced`` (``ValueRules.resegment``): leave in ``row`` (n_ext,) only the ``t``-th forced
    word and ``$`` (the masks' scores kept; a word they banned stays banned)."""
    _only(row, [EOSEG_ID, *forced[t : t + 1]])


def _goes_on(x: _Input, h: _SegHyp, j: int) -> bool:
    """``rules.split``: whether record ``j``, chosen at ``h``'s boundary, goes on with the segment
    before the null one ``h`` ends: a segment of ``j`` that ran to ``L`` tokens, where the search
    cut it. Training reads a record said in more than ``L`` tokens this way (eq. 3 has no
    self-transition), so it is not a repeat."""
    if not x.split or j <= 0 or h.k != 0 or len(h.segments) < 2:
        return False
    start, end, k = h.segments[-2]
    return k == j and end - start >= x.L


def _hangs(x: _Input, h: _SegHyp) -> bool:
    """``rules.hanging``: whether ``h``'s segment ends with the first words of its record's value
    (two or more, not all) and the last of them is a function word ("tudor and" of "Tudor and
    Jacabian")."""
    v, seg = x.values.get(h.k, []), h.tokens[len(h.tokens) - h.seg_len :]
    return any(seg[-i:] == v[:i] and bool(x.func_all[v[i - 1]]) for i in range(2, min(len(v), len(seg) + 1)))


def _stays_open(x, h) -> bool:
    """Whether ``h``'s segment may not end here, neither with ``$`` nor with the text (``<eos>``,
    or the length budget spent, :meth:`SegmentDecoder._select`): a proper name owed, a record's
    segment that has said nothing yet (content rule), or ``hanging`` ("… style of tudor and")."""
    nothing_said = x.func is not None and h.k > 0 and not h.content and not h.filler
    return _name_owed(x, h) or nothing_said or x.hanging and h.seg_len < x.L and _hangs(x, h)


def _taken(x, row: torch.Tensor, ids: list[int]) -> bool:
    """Whether one of ``ids`` (finite in ``row``, ``(n_ext,)``) ranks among the words the beam
    takes from ``row`` (one when sampling): *read* and *heard* ask the checker only then."""
    top = 1 if x.sample is not None else min(x.beam, x.n_ext)
    best = max(float(row[i]) for i in ids)
    return math.isfinite(best) and best >= float(row.topk(top).values[-1])


def _left(x: _Input, h: _SegHyp) -> bool:
    """Whether a record is left that ``h`` may still give a segment (none realised or mentioned)."""
    if x.plan:
        return h.plan_pos < len(x.plan)
    return bool(x.all_recs - h.realised - h.mentioned)


def _links(x: _Input, h: _SegHyp) -> bool:
    """``ValueRules.brief``: ``h`` is in, or just ended, a filler segment of a word, not punctuation."""
    return x.brief and h.filler and h.seg_len > 0 and not bool(x.punct[h.tokens[-1]])


def _said_own(x, tokens: list[int], k: int) -> bool:
    """Whether ``tokens`` hold a word of record ``k``'s own value that no other entity of the
    input holds (``x.distinct[k]``: a segment of ``k`` then needs none, ``rules.literal``)."""
    return x.distinct is not None and k > 0 and bool(x.distinct[k, tokens].any())


def _content_mask(says: torch.Tensor | None, func: torch.Tensor) -> torch.Tensor | None:
    """(S, n_ext) bool: the words that meet the content rule in each record's segment: those
    that state it (``says``, :func:`_says_mask`), or for a row that holds none (the null
    record, a record without known value words) any word that is not a function word."""
    if says is None:
        return None
    empty = ~says.any(dim=1)  # (S,)
    return torch.where(empty[:, None], ~func[None, :], says)


def _said_now(said: dict[int, frozenset[int]], v: int) -> frozenset:
    """Records that word ``v`` states by a paraphrase (``ValueRules.paraphrases``)."""
    return frozenset(k for k, ids in said.items() if v in ids)


@dataclass
class _SegHyp:
    """A partial output: its actions' log-probability, words, segments and decoder state."""

    state: tuple  # LSTM (h, c) after the last token, each (H,)
    d: torch.Tensor  # decoder output that reads the next token (H,)
    A_last: torch.Tensor  # context of the last token under k (H,)
    score: float = 0.0
    tokens: list[int] = field(default_factory=list)
    segments: list[list] = field(default_factory=list)  # [start, end, state]
    attn: list = field(default_factory=list)  # (pos (R,), a (R,)) per token; (N,) once finished
    k: int = -1  # current record, -1 before the first segment
    boundary: bool = True  # the next action chooses a record (after "$" or at the start)
    seg_len: int = 0
    realised: frozenset = frozenset()
    plan_pos: int = 0  # plan records realised so far
    content: bool = False  # the current segment has a word that is not a function word
    loose: bool = False  # the text said a word of the current record's own value (no other entity's) before its segment began (rules.literal)
    mentioned: frozenset = frozenset()  # records whose value appears verbatim in the tokens
    owed: tuple = ()  # the rests of the proper names being copied, one tuple each (ValueRules.names, rules._owed_after)
    named: bool = False  # the current segment has said its record's proper name whole
    subject_said: bool = True  # the current record's unseen subject is in the text (WebNLG)
    filler: bool = False  # a realised record's segment again: function words and punctuation only
    before: frozenset = frozenset()  # records realised or mentioned before the current segment began (rules.spent)


@dataclass
class _Input:
    """What one search reads about its input and settings, computed once per call."""

    enc: SegEncoding
    oov: list[str]
    src_rec: list[int]
    V: int
    n_ext: int
    S: int
    L: int  # longest segment (more while a proper name is owed)
    max_len: int
    level: Constraint
    plan: list[int] | None
    beam: int
    sample: torch.Generator | None
    no_repeat_ngram: int
    ban: torch.Tensor  # (n_ext,) bool: never a word
    own_mask: torch.Tensor | None  # (S, n_ext) bool: row k bans other records' lexicon words (own, values, months rules)
    phrases: dict  # k -> proper names that, once begun, are copied whole
    inner: dict  # k -> ids that only continue one of its names (said only after the name's first word)
    run_on: dict  # unseen name -> ids that would run it on into a value (names rule)
    must: dict  # k -> proper names record k's segment must say before it ends
    subjects: dict  # k -> its unseen subject's ids: the text says it by the end of k's segment
    said_subjects: dict  # k -> its named subject's ids: its value counts as a mention only with them (names rule)
    longer: dict  # k -> the input's subjects and values longer than its value that hold it (a mention inside one does not count)
    outside: dict  # k -> (longer entity, offset of the value in it) whose words lead into the value (rules.outside, _led_in), {} when off
    begun: dict  # k -> the longer entities that begin with its value (rules.begun, _begun_with), {} when off
    func: torch.Tensor | None  # (n_ext,) bool function words (content rule), None when off
    says: torch.Tensor | None  # (S, n_ext) bool: words that meet the content rule in k's segment (rules.stating), None when off
    literal: torch.Tensor | None  # (S, n_ext) bool: the same of k's own value's words (rules.literal), None when off
    distinct: torch.Tensor | None  # (S, n_ext) bool: those of them no other entity of the input holds (rules.literal)
    values: dict  # k -> ids of a specific value (mention rule), {} when off
    own: dict  # k -> ids of a specific value, as outside and begun read it (values; under a plan with rules.planned: _nested_values)
    ends: dict  # k -> [its value] where it begins a longer name (begun): a name the names rule may end there (_ends), {} when off
    said: dict  # k -> ids of lexicon words that state its value (ValueRules.paraphrases), {} when off
    fillers: bool  # ValueRules.fillers: a realised record may open a segment of function words only
    brief: bool  # ValueRules.brief: a filler segment holds at most BRIEF tokens and never follows another
    split: bool  # ValueRules.split: a record's segment cut at L may go on after one null segment (_goes_on)
    hanging: bool  # ValueRules.hanging: a segment does not end on a function word inside its value (_hangs)
    func_all: torch.Tensor  # (n_ext,) bool function words, for filler segments
    punct: torch.Tensor | None  # (n_ext,) bool punctuation (no letter or digit), with ValueRules.brief only
    all_recs: frozenset
    once: dict = field(default_factory=dict)  # k -> (value ids, position of the word to ban or len(value): onward, longer entities, other entities): rules._said_once
    forms: dict = field(default_factory=dict)  # k -> once entries of its value's short forms ("french"): rules._value_forms, {} when off
    echo: list = field(default_factory=list)  # once entries of the input's subjects and values, read inside one segment: rules._echo_entries
    twins: dict = field(default_factory=dict)  # id -> its unaccented twin's id, for the subjects' words (rules._accent_twins)
    spelt: dict = field(default_factory=dict)  # id -> the value or subject word it spells another way (rules.spelling_twins), {} when off
    doubles: frozenset | None = None  # ids the input says twice in a row (rules.doubled_ok), None when the rule is off
    numbers: dict | None = None  # number id -> how often the input holds it (rules.number_room), None when the rule is off
    read: Callable | None = None  # tokens -> the records the checker reads as said (rules.checker_reading), None when off
    foreign: dict | None = None  # training names the input does not hold (rules.foreign_names), None when off
    spent: list | None = None  # lexicon words grouped by the records that hold their attributes (rules.spent_groups), None when off
    dates: dict = field(default_factory=dict)  # k -> its date written out, copied whole once begun (rules.date_phrases), {} when off
    forced: list[int] | None = None  # the words every hypothesis must say, <eos> last (rules.resegment), None: free
    plain: torch.Tensor | None = None  # (n_ext,) bool: words a segment says once (rules.plain_words, babble), None when off
    renorm: bool = False  # ValueRules.renorm: the record choice renormalised over the records left (_record_cands)
    heard: bool = False  # ValueRules.heard: a record's segment ends only once x.read reads its record (_mask_unheard)


@dataclass
class _Emitted:
    """The record-local attention of the word step, to extend the hypotheses that emit a word:
    row ``at[m]`` of ``pos, a (M_w, R)`` and ``A (M_w, H)``."""

    at: dict[int, int]
    pos: torch.Tensor | None = None
    a: torch.Tensor | None = None
    A: torch.Tensor | None = None


class SegmentDecoder:
    """Beam search that follows the paper's generative process, one action per step.

    A hypothesis either emits a word (or ``$``) from its current record's distribution, which
    costs an attention over that record's tokens only (O(N)), or, after ``$``, chooses the next
    record from the transition model (eq. 3, O(M)). The decoder state is not advanced by ``$``
    nor by the record choice. Hypotheses of one beam may thus sit at different positions; all
    scores are log-probabilities of the actions taken.
    """

    def __init__(self, model: SegmentModel, vocab: Vocab):
        self.model, self.vocab = model, vocab

    def search(self, records: list[Record], constraints: str | Constraint = "rm", beam: int = 5, **kw):
        """Best hypothesis (or ``None``), the source OOV words and the source record ids; the
        arguments are those of :meth:`search_n` (without ``n``)."""
        ranked, oov, src_rec = self.search_n(records, constraints, beam, n=1, **kw)
        return (ranked[0] if ranked else None), oov, src_rec

    @torch.no_grad()
    def search_n(
        self,
        records: list[Record],
        constraints: str | Constraint = "rm",
        beam: int = 5,
        plan: list[int] | None = None,
        max_len: int | None = None,
        length_penalty: float = 1.0,
        sample: torch.Generator | None = None,
        content_rule: bool | None = None,
        mentions: bool | None = None,
        no_repeat_ngram: int = 0,
        rules: ValueRules | None = None,
        n: int = 1,
        forced: list[int] | None = None,
    ) -> tuple[list[_SegHyp], list[str], torch.Tensor]:
        """Up to ``n`` finished hypotheses with distinct token sequences, best first by
        ``log p / length ** length_penalty``, the source OOV words and the source record ids.
        The search stops once ``beam`` outputs are finished (and no live one ranks higher), so
        ``n <= beam`` outputs are what is guaranteed when any is; fewer when fewer finish.

        ``constraints``: a level of :data:`segviz.constraints.CONSTRAINTS` (or a
        :class:`~segviz.constraints.Constraint`). ``plan`` is a list of record ids (1..K): the
        segment records must follow it in order (null segments allowed between) and ``<eos>``
        waits until it is complete. ``sample`` draws each record choice from the transition
        model instead of maximising (words stay greedy); used with ``beam=1`` for
        :func:`sample_structures`. ``content_rule`` (default: on when the level tracks realised
        records, and with plans) keeps a real record's segment open until it holds a word that
        is not a function word. ``mentions`` (default: on for such levels without a plan)
        counts a record as realised once its value appears verbatim anywhere in the text.
        ``no_repeat_ngram`` = n > 0 forbids any word n-gram twice in one output. ``rules``: the
        lexicon rules of :class:`ValueRules` (none by default). ``forced`` (extended ids, ``<eos>``
        last) leaves each hypothesis only its next word or ``$``: the search then segments those
        words under the constraints and rules (``ValueRules.resegment``).
        """
        self.model.eval()
        x = self._input(records, constraint(constraints), beam, plan, max_len, sample, content_rule, mentions,
                        no_repeat_ngram, rules)  # fmt: skip
        x.forced = forced
        finished = self._run(x, length_penalty)
        ranked = _ranked(finished, n, length_penalty)
        for h in ranked:  # record-local attention -> rows over all source tokens
            h.attn = [self.model.full_attention(x.enc, p, a) for p, a in h.attn]
        return ranked, x.oov, torch.tensor(x.src_rec)

    def _input(
        self, records, level, beam, plan, max_len, sample, content_rule, mentions, no_repeat_ngram, rules
    ):
        """The :class:`_Input` of one call: the encoding and the rule masks (docs/design.md §6)."""
        vocab, planned = self.vocab, bool(plan)
        enc_ex, batch = _prepare(vocab, records)
        V, oov = len(vocab), enc_ex.oov
        n_ext = V + len(oov)
        ban = _banned(n_ext)
        ban[EOSEG_ID] = False  # "$" is an action here
        ban[_absent_ids(vocab, oov, records, rules, planned)] = True
        ban[_unheld_ids(vocab, oov, records, rules)] = True
        ban[_stranger_ids(vocab, oov, records, rules)] = True
        ban[_alien_ids(vocab, oov, records, rules)] = True
        if content_rule is None:
            content_rule = level.counts_realised or planned
        if mentions is None:
            mentions = level.counts_realised and not planned
        func = _function_mask(vocab, oov)  # (n_ext,): the content rule and filler segments read it
        values = _value_ids(vocab, oov, records) if mentions else {}  # k -> ids of a specific value
        named = _subject_phrases(vocab, oov, records, rules, seen_too=True)  # k -> its named subject's ids
        starts = entity_starts(vocab, oov, records)  # no inner word of a name (rules._inner_ids)
        says = _says_mask(vocab, oov, records, rules) if content_rule else None  # (S, n_ext) or None
        literal = _literal_mask(vocab, oov, records, rules, says)  # (S, n_ext) or None (rules.literal)
        return _Input(
            enc=self.model.encode(batch), oov=oov, src_rec=enc_ex.src_rec, V=V, n_ext=n_ext, S=len(records) + 1,
            L=self.model.cfg.max_seg_len, max_len=max_len or 3 * len(enc_ex.src) + 20, level=level, plan=plan,
            beam=beam, sample=sample, no_repeat_ngram=no_repeat_ngram, ban=ban,
            own_mask=_either(_own_mask(vocab, oov, records, rules, planned), _values_mask(vocab, oov, records, rules, planned),
                             _month_mask(vocab, oov, records, rules)),
            phrases=(phrases := _phrases(vocab, oov, records, rules, seen_too=planned)),  # under a plan: every name
            inner={k: _inner_ids(vocab, oov, ps, starts) for k, ps in phrases.items()},
            run_on=_run_on(vocab, oov, records, rules, [p for ps in phrases.values() for p in ps]),
            must=_phrases(vocab, oov, records, rules, values_only=True, seen_too=planned),
            subjects=_subject_phrases(vocab, oov, records, rules, seen_too=planned),
            said_subjects=named if mentions else {},
            longer=(longer := longer_than(vocab, oov, records, values, rules)),
            own=(own := _nested_values(vocab, oov, records, rules, planned, values)),
            outside=_led_in(nested := longer if own is values else longer_than(vocab, oov, records, own, rules), own)
            if rules and rules.outside and rules.stating and content_rule else {},
            begun=(begun := _begun_with(nested, own) if rules and rules.begun and rules.outside and rules.stating and content_rule else {}),
            ends=_ends(own, begun, func),
            func=func if content_rule else None,
            says=_content_mask(says, func), literal=_content_mask(literal, func),
            distinct=_distinct_mask(vocab, oov, records, literal),
            values=values,
            said=_said_ids(vocab, oov, records, rules) if mentions else {},
            fillers=bool(rules and rules.fillers), brief=bool(rules and rules.fillers and rules.brief), func_all=func,
            split=bool(rules and rules.split), hanging=bool(rules and rules.hanging),
            punct=_punct_mask(vocab, oov) if rules and rules.fillers and rules.brief else None,
            all_recs=frozenset(range(1, len(records) + 1)),
            once=_said_once(vocab, oov, records, rules, func) if level.no_repeat or planned else {},
            forms=_value_forms(vocab, oov, records, rules, func) if level.no_repeat or planned else {},
            echo=_echo_entries(vocab, oov, records, rules, func) if level.no_repeat or planned else [],
            twins=_accent_twins(vocab, oov, list(named.values())),
            spelt=spelling_twins(vocab, oov, _entities(vocab, oov, records), rules.plurals, rules.numerals) if rules and rules.spellings else {},
            doubles=doubled_ok(vocab, oov, records, rules), numbers=number_room(vocab, oov, records, rules),
            read=checker_reading(vocab, oov, records, rules) if mentions else None,
            foreign=foreign_names(vocab, oov, records, rules),
            spent=spent_groups(vocab, oov, records, rules) if level.no_repeat or planned else None,
            dates=date_phrases(vocab, oov, records, rules), plain=plain_words(vocab, oov, records, rules),
            renorm=bool(rules and rules.renorm), heard=bool(rules and rules.heard and mentions),
        )  # fmt: skip

    def _run(self, x: _Input, length_penalty: float) -> list[_SegHyp]:
        """The beam search proper; returns the finished hypotheses in the order they finished."""
        d, state = self.model.step(torch.tensor([BOS_ID]), x.enc.state0)  # (1, H)
        hyps = [_SegHyp(state=(state[0][0], state[1][0]), d=d[0], A_last=torch.zeros_like(d[0]))]
        finished: list[_SegHyp] = []
        for _ in range(3 * x.max_len + 2 * x.S):
            cands, emitted = self._word_cands(x, hyps)
            cands += self._record_cands(x, hyps)
            cands = [c for c in cands if math.isfinite(c[0])]
            if not cands:
                break
            cands.sort(key=lambda c: -c[0])
            hyps = self._select(x, hyps, cands, emitted, finished)
            if not hyps or _beam_done(finished, hyps, x.beam, length_penalty):
                break
        return finished

    # ----- word candidates ---------------------------------------------------------------
    def _word_cands(self, x: _Input, hyps: list[_SegHyp]) -> tuple[list[Cand], _Emitted]:
        """Candidates of the hypotheses inside a segment: the ``beam`` best words (or ``$``) of
        each, from its record's distribution with every rule's mask applied."""
        words = [m for m, h in enumerate(hyps) if not h.boundary]
        emitted = _Emitted({m: i for i, m in enumerate(words)})
        if not words:
            return [], emitted
        dW = torch.stack([hyps[m].d for m in words])  # (M_w, H)
        kW = torch.tensor([hyps[m].k for m in words])  # (M_w,)
        raw, emitted.pos, emitted.a, emitted.A = self.model.token_dist(
            x.enc, dW, kW, x.n_ext - x.V
        )  # (M_w, n_ext)
        dist = raw.masked_fill(x.ban, -math.inf)
        if x.own_mask is not None:
            dist = dist.masked_fill(x.own_mask[kW.clamp(min=0)], -math.inf)
        cands: list[Cand] = []
        for i, m in enumerate(words):
            h, row = hyps[m], dist[i]  # (n_ext,)
            self._mask_structure(x, h, row)
            if h.filler:  # a filler segment says nothing: function words, punctuation, "$", "<eos>"
                row[~x.func_all] = -math.inf
                if x.brief:
                    self._mask_brief(x, h, row)
            rep = repeated_ngram_ends(h.tokens, x.no_repeat_ngram) + doubled(h.tokens, x.doubles) + numbers_spent(h.tokens, x.numbers)
            rep += foreign_ends(h.tokens, x.foreign) + spent_ids(x.spent, h.before) + dates_again(h.tokens, x.dates)
            rep += babbled(h.tokens[len(h.tokens) - h.seg_len :], x.plain)
            if rep:
                row[rep] = -math.inf
            self._mask_names(x, h, row, raw[i])
            self._mask_once(x, h, row)
            if x.begun:
                row[_goes_past(x, h)] = -math.inf
            if x.forced is not None:
                _only_forced(x.forced, len(h.tokens), row)
            self._mask_unread(x, h, row)
            self._mask_unheard(x, h, row)
            if x.sample is not None:
                w = int(row.argmax())
                cands.append((h.score + float(row[w]), m, "w", w))
            else:
                top = row.topk(min(x.beam, x.n_ext))
                cands += [
                    (h.score + float(v), m, "w", int(w)) for v, w in zip(top.values, top.indices, strict=True)
                ]
        return cands, emitted

    @staticmethod
    def _mask_brief(x: _Input, h: _SegHyp, row: torch.Tensor) -> None:
        """``ValueRules.brief``: a filler segment ends after ``BRIEF`` tokens; a word (not
        punctuation) links, so it comes only while a record is left to say and never ends the
        text ("... Rome, Italy. The"): the next segment is a record's (:meth:`_record_cands`)."""
        if h.seg_len >= BRIEF:
            _only_ends(row)
        if h.seg_len == 0 and not _left(x, h):
            row[~x.punct] = -math.inf
        if _links(x, h):
            row[EOS_ID] = -math.inf

    def _mask_structure(self, x: _Input, h: _SegHyp, row: torch.Tensor) -> None:
        """Where the segment may end (``$``) and the text may end (``<eos>``): segments are
        non-empty and cut at ``L`` tokens; ``<eos>`` waits for the constraint level or plan; a
        proper name owed and (content rule) a segment that has said nothing yet keep it open."""
        name_owed = _name_owed(x, h)
        if h.seg_len == 0:  # segments are non-empty
            row[EOSEG_ID] = row[EOS_ID] = -math.inf
        elif h.seg_len >= x.L + (_owed_len(x, h) if name_owed else 0):  # cut
            _only_ends(row)
        if not x.read and not self._may_end(x, h):  # read: the checker decides last (_mask_unread)
            row[EOS_ID] = -math.inf
        if _stays_open(x, h):
            row[EOSEG_ID] = row[EOS_ID] = -math.inf

    @staticmethod
    def _mask_names(x: _Input, h: _SegHyp, row: torch.Tensor, raw: torch.Tensor) -> None:
        """``ValueRules.names``: a proper name being copied leaves only its next token (with its
        unmasked score); a name just said whole may not repeat its words at once ("Café café") nor
        run on into a value ("Tollgate 3 out of 5", :func:`_run_on`); a name's later words come only
        after its first ("Castle Bridge", not "Bridge")."""
        if h.owed:
            _force(row, raw, h.owed)
        else:
            row[_just_said(h.tokens, x.phrases.get(h.k, []))] = -math.inf
            row[_ran_on(h.tokens, x.run_on)] = -math.inf
            inner = x.inner.get(h.k, [])
            if x.ends.get(h.k):  # rules.begun (_ends): the value said may still go on as the longer name ("bacon explosion")
                inner = [w for w in inner if w not in _going_on(h.tokens, x.phrases.get(h.k, []))]
            row[inner] = -math.inf

    @staticmethod
    def _mask_once(x: _Input, h: _SegHyp, row: torch.Tensor) -> None:
        """``ValueRules.once`` (+R, +RM, a plan): a value the text has said (outside a longer entity
        of the input that holds it), held by one slot of the input, is not said again: after its
        words up to the one where it parts from the input's other entities (:func:`_said_once`)
        that word is banned, unless it goes on with another entity of the input that the tokens
        are saying ("Alabama" in "Lee County, Alabama"). Its own record's segment, which the names
        rule would have say it, counts it as said (:meth:`_choose_record`). *onward*: a value
        that begins another entity, said again whole, goes on as one. *echo*: the same for every
        subject and value of the input inside the current segment, unless that would leave no
        word at all (a name the names rule is copying)."""
        entries = [*x.once.values(), *(e for es in x.forms.values() for e in es)]  # forms: "french"
        _ban_again(x, _spelt(x, h.tokens), entries, row)  # spellings: "nasa's" is "nasa"
        if x.echo and h.segments:  # echo: inside the current segment, every subject and value
            keep = row.clone()
            _ban_again(x, _spelt(x, h.tokens[h.segments[-1][0] :]), x.echo, row)
            if not torch.isfinite(row).any():  # a name being copied whole: echo gives way
                row.copy_(keep)

    # ----- record candidates -------------------------------------------------------------
    def _record_cands(self, x: _Input, hyps: list[_SegHyp]) -> list[Cand]:
        """Candidates of the hypotheses at a boundary: every record the constraints allow, from
        the initial (eq. 3 at t = 0) or transition distribution; one sampled record with ``sample``.
        ``renorm``: that distribution divided by its sum over the allowed records, so a record
        chosen because the constraints left nothing likelier costs no more than the choice itself
        (docs/design.md §6)."""
        bounds = [m for m, h in enumerate(hyps) if h.boundary]
        if not bounds:
            return []
        dB = torch.stack([hyps[m].d for m in bounds])  # (M_b, H)
        kB = torch.tensor([max(hyps[m].k, 0) for m in bounds])  # (M_b,)
        trans = self.model.transition_step(
            x.enc, torch.stack([hyps[m].A_last for m in bounds]), dB, kB
        )  # (M_b, S)
        init = self.model.initial(x.enc, dB)  # (M_b, S)
        cands: list[Cand] = []
        for i, m in enumerate(bounds):
            h = hyps[m]
            row = (trans[i] if h.k >= 0 else init[i]).clone()  # (S,)
            row[row < dp.NEG / 2] = -math.inf
            blocked = self._blocked(x, h)
            if x.fillers and not (x.brief and h.filler):  # a realised record may open a filler segment (docs/design.md §6); brief: not after one
                blocked = [j for j in blocked if j not in h.realised | h.mentioned]
            if _links(x, h):  # brief: a link leads into a record's segment
                blocked = [0, *blocked]
            if blocked:
                row[blocked] = -math.inf
                if x.renorm and torch.isfinite(row).any():  # p(j | q, allowed) = p(j | q) / sum over the allowed
                    row -= torch.logsumexp(row, 0)
            if x.sample is None:
                cands += [(h.score + float(row[j]), m, "r", j) for j in range(x.S) if math.isfinite(row[j])]
            elif torch.isfinite(row).any():
                j = int(torch.multinomial(torch.softmax(row, 0), 1, generator=x.sample))
                cands.append((h.score + float(row[j]), m, "r", j))
        return cands

    @staticmethod
    def _blocked(x: _Input, h: _SegHyp) -> list[int]:
        """Records that hypothesis ``h`` may not choose next (with ``split``, never the record whose
        cut segment goes on after ``h``'s null one, :func:`_goes_on`)."""
        if x.plan:
            nxt = x.plan[h.plan_pos] if h.plan_pos < len(x.plan) else None
            return [j for j in range(1, x.S) if j != nxt and not _goes_on(x, h, j)]
        if x.level.no_repeat:
            return [j for j in sorted(h.realised | h.mentioned) if not _goes_on(x, h, j)]
        return []

    def _mask_unread(self, x: _Input, h: _SegHyp, row: torch.Tensor) -> None:
        """*read*: ``<eos>`` only once the checker reads every record that no segment realised
        (:meth:`_may_end`). The checker is asked only when ``<eos>`` would be among the words
        taken: banning it changes nothing else, and the checker runs only near the end."""
        if x.read and _taken(x, row, [EOS_ID]) and not self._may_end(x, h):
            row[EOS_ID] = -math.inf

    @staticmethod
    def _mask_unheard(x: _Input, h: _SegHyp, row: torch.Tensor) -> None:
        """*heard* (with *read*, under r / rm): a record's segment shorter than ``L`` ends (``$`` or
        ``<eos>``) only once the checker reads its record in the text so far, asked only when an
        end is among the words taken, as :meth:`_mask_unread` does; a record whose reading is not
        its own alone (:func:`checker_reading`) is not asked about. At ``L`` it is cut as ever; a
        text the length budget ends is not asked about (:meth:`_select`)."""
        if not (x.heard and x.read) or h.k <= 0 or h.filler or h.seg_len >= x.L:
            return
        ends = [EOSEG_ID, EOS_ID]
        if _taken(x, row, ends) and h.k not in x.read(tuple(h.tokens), frozenset({h.k})):  # a record the checker cannot read alone: free
            row[ends] = -math.inf

    @staticmethod
    def _may_end(x: _Input, h: _SegHyp) -> bool:
        if x.plan:
            return h.plan_pos >= len(x.plan)
        if x.level.cover_all:
            said = x.read(tuple(h.tokens), h.mentioned) if x.read and not h.realised >= x.all_recs else h.mentioned
            return (h.realised | said) >= x.all_recs
        return True

    # ----- selection and advancing -------------------------------------------------------
    def _select(
        self, x: _Input, hyps: list[_SegHyp], cands: list[Cand], emitted: _Emitted, finished: list[_SegHyp]
    ) -> list[_SegHyp]:
        """The next beam from ``cands`` (best first). Two beams: hypotheses about to choose a
        record (after ``$``) and hypotheses inside a segment keep ``beam`` places each, so that
        boundary actions never starve the words. Finished ones go to ``finished``."""
        room = {True: 1 if x.sample is not None else x.beam, False: 1 if x.sample is not None else x.beam}
        new_hyps: list[_SegHyp] = []
        advance: list[tuple[_SegHyp, int]] = []  # hypotheses that emitted a word
        for score, m, kind, v in cands:
            if room[True] <= 0 and room[False] <= 0:
                break
            next_is_boundary = kind == "w" and v == EOSEG_ID
            if room[next_is_boundary] <= 0:
                continue
            room[next_is_boundary] -= 1
            if x.sample is not None:
                room = {True: 0, False: 0}
            h = hyps[m]
            if kind == "r":
                new_hyps.append(self._choose_record(x, h, score, v))
            elif v == EOSEG_ID:
                said = x.read(tuple(h.tokens), h.mentioned) if x.read else h.mentioned  # read: the checker's reading
                new_hyps.append(replace(h, score=score, boundary=True, owed=(), named=False, mentioned=said))
            else:
                nh = self._emit(x, h, m, score, v, emitted)
                if v == EOS_ID:
                    finished.append(nh)
                elif len(nh.tokens) >= x.max_len:  # length budget spent: keep it only if it may end
                    if self._may_end(x, nh) and not _stays_open(x, nh) and not _links(x, nh):  # as <eos> would
                        finished.append(nh)
                else:
                    new_hyps.append(nh)
                    advance.append((nh, v))
        self._step_decoder(x, advance)
        return new_hyps

    @staticmethod
    def _choose_record(x: _Input, h: _SegHyp, score: float, j: int) -> _SegHyp:
        """``h`` after choosing record ``j`` (0: null): a new, empty segment; a filler segment
        when ``j`` is a record the constraints or the plan have already had said."""
        again = h.realised if x.plan else h.realised | h.mentioned if x.level.no_repeat else frozenset()
        on = _goes_on(x, h, j)  # split: the record cut at L goes on, neither a repeat nor a plan step
        filler = x.fillers and j > 0 and j in again and not on
        said = _said_before(x, h.tokens, j) or not x.plan and _name_said(x, h.tokens, j)  # once / names: not owed again
        return replace(
            h, score=score, segments=[list(s) for s in h.segments] + [[len(h.tokens), len(h.tokens), j]], k=j,
            boundary=False, seg_len=0, realised=h.realised | {j} if j > 0 else h.realised,
            plan_pos=h.plan_pos + (1 if x.plan and j > 0 and not filler and not on else 0), content=False, owed=(),
            named=said, filler=filler, subject_said=_has(h.tokens, x.subjects.get(j), x.twins), loose=_said_own(x, h.tokens, j),
            before=(h.realised | h.mentioned) - {j},
        )  # fmt: skip

    @staticmethod
    def _emit(x: _Input, h: _SegHyp, m: int, score: float, v: int, emitted: _Emitted) -> _SegHyp:
        """Hypothesis ``m`` (``h``) after emitting word ``v`` in its current segment (its decoder
        state is advanced afterwards, in :meth:`_step_decoder`)."""
        i = emitted.at[m]
        segments = [list(s) for s in h.segments]
        segments[-1][1] = len(h.tokens) + 1
        tokens = h.tokens + [v]
        read = _spelt(x, tokens)  # spellings: the name owed may be said as its twin ("gerard larcher")
        said = any(read[-len(q) :] == list(q) and len(q) <= h.seg_len + 1 for q in x.must.get(h.k, ()))
        return replace(
            h, score=score, tokens=tokens, segments=segments, attn=h.attn + [(emitted.pos[i], emitted.a[i])],
            boundary=False, seg_len=h.seg_len + 1, A_last=emitted.A[i],
            content=_stated_now(x, h, tokens, read) if x.begun.get(h.k) else h.content or _says(x, h, v) and not _inside_longer(x, h.k, read),
            mentioned=h.mentioned | _mentioned_with_subjects(x, read) | _said_now(x.said, v),
            owed=_owed_after(h.owed, x.phrases.get(h.k, []) + x.ends.get(h.k, []) + dates_open(h.tokens, x.dates.get(h.k)), v)
            or (_owed_on(h.tokens, x.phrases.get(h.k, []), v) if x.ends.get(h.k) and not h.owed else ()), named=h.named or said,
            subject_said=h.subject_said or _has(tokens[-len(x.subjects.get(h.k, ())) :], x.subjects.get(h.k), x.twins),
        )  # fmt: skip

    def _step_decoder(self, x: _Input, advance: list[tuple[_SegHyp, int]]) -> None:
        """Advance the decoder of the word-emitting hypotheses in one batched step (OOV copies
        are fed back as ``<unk>``)."""
        if not advance:
            return
        y = torch.tensor([v if v < x.V else UNK_ID for _, v in advance])  # (M,)
        hs = torch.stack([nh.state[0] for nh, _ in advance])  # (M, H)
        cs = torch.stack([nh.state[1] for nh, _ in advance])  # (M, H)
        d_new, (hs, cs) = self.model.step(y, (hs, cs))
        for i, (nh, _) in enumerate(advance):
            nh.state, nh.d = (hs[i], cs[i]), d_new[i]
