"""Word-level decoding rules shared by both systems (docs/design.md §1, §6): which words count as
saying something (:data:`FUNCTION_WORDS`, the content rule), verbatim value mentions, the
no-repeat n-gram rule, and the lexicon / proper-name rules of :class:`ValueRules`.

Each rule is a mask over the extended vocabulary of one input, ``n_ext = V + len(oov)`` ids;
:mod:`segviz.decode.seg` and :mod:`segviz.decode.pg` apply them to the token distribution.
"""

from __future__ import annotations

import functools
import math
import re
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import NamedTuple

import torch

from segviz.data import SPECIALS, Vocab
from segviz.entities import entity_tokens, held_words, stranger
from segviz.invented import code_kind
from segviz.lexicon import name_key
from segviz.records import (  # noqa: F401
    FUNCTION_WORDS,
    MONTHS,
    SENTENCE_ENDS,
    SUFFIXES,
    Record,
    date_month,
    date_spellings,
    detokenize,
    doubled_words,
    entity_text,
    figure_forms,
    held_figures,
    is_function_word,
    number_words,
    strip_accents,
    tokenize,
)
from segviz.result import GenerationResult

_PER_VOCAB: dict[int, tuple[weakref.ref, dict]] = {}  # id(vocab) -> (vocab, {what: value})


def _per_vocab(vocab: Vocab, what: str, make: Callable[[Vocab], object]):
    """``make(vocab)``, computed once per vocabulary object (not once per input) and kept as long
    as the vocabulary lives."""
    ref, store = _PER_VOCAB.get(id(vocab), (None, None))
    if ref is None or ref() is not vocab:
        store = {}
        _PER_VOCAB[id(vocab)] = (weakref.ref(vocab), store)
    if what not in store:
        store[what] = make(vocab)
    return store[what]


def _function_mask(vocab: Vocab, oov: list[str]) -> torch.Tensor:
    """(n_ext,) bool: ids whose word cannot by itself realise a record (the vocabulary's part is
    computed once per vocabulary object, not once per input)."""
    mask = _per_vocab(vocab, "function", lambda v: torch.tensor([is_function_word(w) for w in v.itos]))
    return torch.cat([mask, torch.tensor([is_function_word(w) for w in oov], dtype=torch.bool)])


def _punct_mask(vocab: Vocab, oov: list[str]) -> torch.Tensor:
    """(n_ext,) bool: ids whose word has no letter or digit ("." "," "–"; specials are not)."""
    punct = lambda w: not any(ch.isalnum() for ch in w) and not (w.startswith("<") and w.endswith(">"))  # noqa: E731
    return torch.tensor([punct(w) for w in [*vocab.itos, *oov]], dtype=torch.bool)


def specific_value(record: Record) -> bool:
    """Whether saying ``record``'s value verbatim states the record: two or more words with a
    non-function word ("coffee shop", "5 out of 5"), or one word with a capital or a digit
    ("Italian", "1934"). A bare "low", "yes" or "riverside" is left to segments: "low" in
    "low price range" says nothing about a customer rating."""
    toks = record.value_tokens
    if not toks or all(is_function_word(t) for t in toks):
        return False
    return len(toks) >= 2 or any(ch.isupper() or ch.isdigit() for ch in record.value)


def _ext_id(vocab: Vocab, oov: list[str], word: str) -> int | None:
    """The extended id of ``word``: its vocabulary id, else ``V + j`` for source OOV word ``j``;
    None when neither spells it."""
    return vocab.stoi[word] if word in vocab.stoi else len(vocab) + oov.index(word) if word in oov else None


def _spell(vocab: Vocab, oov: list[str], words) -> tuple[int, ...] | None:
    """Extended ids of ``words``, or None when a word is neither in the vocabulary nor the source."""
    ids = tuple(_ext_id(vocab, oov, w) for w in words)
    return ids if ids and None not in ids else None


def _value_ids(vocab: Vocab, oov: list[str], records: list[Record]) -> dict[int, list[int]]:
    """Record id (1..K) -> extended ids of its value, for :func:`specific_value` records."""
    out = {}
    for k, r in enumerate(records, 1):
        if specific_value(r) and (ids := _spell(vocab, oov, [t.lower() for t in r.value_tokens])):
            out[k] = list(ids)
    return out


def _slot(text: str) -> tuple[str, ...]:
    """The lower-cased tokens of a subject or value (underscores read as spaces, the quotes around
    a WebNLG literal dropped, as in :attr:`Record.value_tokens`)."""
    return tuple(t.lower() for t in tokenize(entity_text(text)))


def _entities(vocab: Vocab, oov: list[str], records: list[Record]) -> list[tuple]:
    """Extended-id sequences of the input's values and subjects (underscores read as spaces),
    those the vocabulary and the source OOV words can spell."""
    out = set()
    for r in records:
        for text in (r.value, r.subject or ""):
            if ids := _spell(vocab, oov, _slot(text)):
                out.add(ids)
    return sorted(out)


def _longer(values: dict[int, list[int]], entities: list[tuple]) -> dict[int, list[tuple]]:
    """Record id -> the input's entities longer than its value that hold it (``values``: its ids)."""
    out = {}
    for k, ids in values.items():
        v, n = tuple(ids), len(ids)
        holds = [e for e in entities if len(e) > n and any(e[j : j + n] == v for j in range(len(e) - n + 1))]
        if holds:
            out[k] = holds
    return out


def _qualified(
    longer: dict[int, list[tuple]], values: dict[int, list[int]], comma: int | None, subjects: dict[int, tuple]
) -> dict[int, list[tuple]]:
    """``longer`` (:func:`_longer`) less the entities that end with the record's value after a
    comma (``rules.qualifiers``): the value is then the place that qualifies the entity, and saying
    "Ithaca, New York" says ``New_York`` as the checker reads it (``faithfulness.webnlg``
    ``_containing_spans``; docs/design.md §6), unlike the "Angola" of "Angola International
    Airport", nor the record's own subject (``subjects``: record id -> its ids): "Potter County,
    Texas" names the county. Records left with no longer entity are dropped."""
    out = {}
    for k, es in longer.items():
        v = tuple(values[k])
        keep = [e for e in es if e[-len(v) - 1 :] != (comma, *v) or e == subjects.get(k)]
        if keep:
            out[k] = keep
    return out


def _subject_ids(vocab: Vocab, oov: list[str], records: list[Record]) -> dict[int, tuple]:
    """Record id (1..K) -> extended ids of its WebNLG subject, where the vocabulary and the source
    spell it (as :func:`_entities` reads it)."""
    out = {}
    for k, r in enumerate(records, 1):
        if ids := _spell(vocab, oov, _slot(r.subject or "")):
            out[k] = ids
    return out


def longer_than(vocab: Vocab, oov: list[str], records: list[Record], values: dict, rules: ValueRules | None) -> dict:
    """Record id -> the input's longer entities a mention of its value inside does not count in
    (:func:`_longer`; with ``rules.qualifiers`` not those it qualifies after a comma, :func:`_qualified`):
    read by the mention rule and by *once*."""
    longer = _longer(values, _entities(vocab, oov, records))
    if not (rules and rules.qualifiers):
        return longer
    return _qualified(longer, values, vocab.stoi.get(","), _subject_ids(vocab, oov, records))


def _said_once(
    vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None, func: torch.Tensor
) -> dict[int, tuple[tuple, int, list[tuple], list[tuple]]]:
    """``rules.once``: record id -> (its value's ids, the position of the word to ban, the input's
    longer entities that hold the value, the input's other entities), for the specific values (:func:`_value_ids`) that one slot of
    the input holds (among every record's subject and value, as the WebNLG checker counts). Said
    once, such a value said again repeats its fact ("… is located in Shuvalan, Shuvalan", "the
    leader is Jusuf Kalla and the leader is Jusuf Kalla"); once the value has been said the rule
    bans its word at that position after the words before it: the first content word at which the
    value parts from the beginnings of the input's other entities (docs/design.md §6). With
    ``rules.onward`` a value that begins another entity, and so never parts, gets an
    :func:`_onward_entry` instead."""
    if not rules or not rules.once:
        return {}
    slots: dict[tuple, int] = {}
    for r in records:
        for text in (r.subject, r.value):
            if text:
                slots[_slot(text)] = slots.get(_slot(text), 0) + 1
    values = _value_ids(vocab, oov, records)
    entities = _entities(vocab, oov, records)
    longer = longer_than(vocab, oov, records, values, rules)  # with qualifiers, "New York" is said in "Ithaca, New York"
    out = {}
    for k, ids in values.items():
        value = tuple(ids)
        others = [e for e in entities if e != value]
        entry = _once_entry(value, func, others, longer.get(k, []))
        if entry is None and rules.onward:  # "Baku", said again, goes on as "Baku Turkish Martyrs' Memorial"
            entry = _onward_entry(value, func, others, longer.get(k, []))
        if entry and slots.get(_slot(records[k - 1].value), 0) == 1:
            out[k] = entry
    return out


def _once_entry(value: tuple, func: torch.Tensor, others: list[tuple], longer: list[tuple]) -> tuple | None:
    """The *once* rule's entry of ``value`` (extended ids): (value, the position of the word to
    ban, ``longer``, ``others``), the position being the first content word at which the value
    parts from every other entity's beginning ("lankan" of "Sri Lankan rupee" beside "Sri
    Lanka"); None when it has no content word or never parts."""
    content = [i for i, v in enumerate(value) if not func[v]]
    apart = next((j for j in range(len(value)) if not any(e[: j + 1] == value[: j + 1] for e in others)), None)
    if not content or apart is None:
        return None
    return value, max(apart, content[0]), longer, others


def _onward_entry(value: tuple, func: torch.Tensor, others: list[tuple], longer: list[tuple]) -> tuple | None:
    """``rules.onward``: the entry of a value that never parts from the input's other entities,
    because it begins one ("Baku" of "Baku Turkish Martyrs' Memorial"): (value, ``len(value)``,
    ``longer``, ``others``); said again whole, the value must go on as one of those entities
    (:func:`segviz.decode.search._ban_again`). None when ``value`` has no content word."""
    if not any(not func[v] for v in value):
        return None
    return value, len(value), longer, others


def _slot_forms(
    vocab: Vocab, oov: list[str], records: list[Record], heads: bool = False
) -> dict[str, tuple[tuple | None, list[tuple]]]:
    """Slot text (every subject and value of the input) -> its ids (None where the vocabulary and
    the source cannot spell it) and its short forms' ids, spelt by its own words
    (:func:`segviz.faithfulness.webnlg.short_form_prefixes`): what *forms* and *echo* read. With
    ``heads`` (``rules.heads``) also its words before its first comma, which the checker reads
    as the entity too ("washington" of ``Washington,_D.C.``)."""
    from segviz.faithfulness.webnlg import short_form_prefixes

    out = {}
    for t in {t for r in records for t in (r.subject, r.value) if t}:
        words = list(_slot(t))
        e = _spell(vocab, oov, words)
        cuts = short_form_prefixes(t, words) if e else []
        if e and heads and "," in words[1:]:
            cuts.append(words.index(",", 1))
        out[t] = (e, list(dict.fromkeys(e[:n] for n in cuts if n)))
    return out


def _value_forms(
    vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None, func: torch.Tensor
) -> dict[int, list[tuple]]:
    """``rules.forms`` (with ``rules.once``): record id -> *once* entries (:func:`_once_entry`) of
    its value's short forms, the value said without its bracket or a generic last word ("national
    assembly" of ``National_Assembly_(Azerbaijan)``, "french" of ``French_language``;
    :func:`segviz.faithfulness.webnlg.short_forms`, as the checker reads them). A form counts only
    where one slot of the input holds the value and no other entity of the input is or yields
    that form ("japanese" beside ``Japanese_people`` and ``Japanese_language`` says neither); a
    mention inside another entity that holds it ("Old French Market") does not count, unless (with
    ``rules.qualifiers``) it is the place after that entity's comma. A form is spelt by the
    value's own words ("paraná" of ``Paraná_(state)``, as the spellings rule reads it). *once* bans the
    form again once said, the mention rule reads it as saying the record (docs/design.md §6)."""
    if not rules or not (rules.forms and rules.once):
        return {}
    slot_forms = _slot_forms(vocab, oov, records, rules.heads)
    spelt = {t: e for t, (e, _) in slot_forms.items()}
    yields: dict[tuple, set[str]] = {}  # a form or an entity's ids -> the slot texts that are or yield it
    for t, (e, forms) in slot_forms.items():
        for f in [*forms, *([e] if e else [])]:
            yields.setdefault(f, set()).add(t)
    held = [_slot(t) for r in records for t in (r.subject, r.value) if t]
    subjects = _subject_ids(vocab, oov, records) if rules.qualifiers else {}
    out = {}
    for k, r in enumerate(records, 1):
        if not specific_value(r) or held.count(_slot(r.value)) != 1:
            continue
        others = [e for t, e in spelt.items() if e and t != r.value]
        for f in slot_forms[r.value][1]:
            longer = _longer({k: list(f)}, others)
            if rules.qualifiers:  # "Auburn, Washington" says Washington_(state)
                longer = _qualified(longer, {k: list(f)}, vocab.stoi.get(","), subjects)
            entry = _once_entry(f, func, [e for e in others if e != f], longer.get(k, [])) if yields[f] == {r.value} else None
            if entry:
                out.setdefault(k, []).append(entry)
    return out


def _echo_entries(
    vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None, func: torch.Tensor
) -> list[tuple]:
    """``rules.echo``: *once* entries (:func:`_once_entry`) of every subject and value of the input
    and (with ``rules.forms``) of their short forms, for one segment: a segment realises one
    record, so it says none of them twice ("Cornell University is the nickname of Cornell
    University", "… created by Jerry Ordway and Jerry Ordway"; docs/design.md §6). A phrase parts
    from the other slots' entities and forms; a mention inside another slot's entity that holds it
    does not count; a phrase that two slots yield ("japanese" of ``Japanese_people`` and
    ``Japanese_language``, or a slot "Japanese" beside ``Japanese_people``) is left out."""
    if not rules or not rules.echo:
        return []
    family = {  # slot text -> its ids and (forms) its short forms' ids
        t: {e, *(forms if rules.forms else [])} for t, (e, forms) in _slot_forms(vocab, oov, records).items() if e
    }
    out = []
    for t, phrases in family.items():
        others = [p for u, ps in family.items() if u != t for p in ps]
        for p in phrases - set(others):
            entry = _once_entry(p, func, others, _longer({0: list(p)}, others).get(0, []))
            if entry:
                out.append(entry)
    return out


def _next_words(tokens: list[int], entities: list[tuple]) -> list[int]:
    """The words that go on with one of ``entities`` whose beginning the tokens end with."""
    return [e[j] for e in entities for j in range(1, min(len(e), len(tokens) + 1)) if tuple(tokens[-j:]) == e[:j]]


def _continues(tokens: list[int], v: int, entities: list[tuple]) -> bool:
    """Whether word ``v`` goes on with one of ``entities`` whose beginning the tokens end with."""
    return v in _next_words(tokens, entities)


def _mentioned_now(values: dict[int, list[int]], tokens: list[int]) -> frozenset:
    """Records whose value ends exactly at the last token of ``tokens``."""
    return frozenset(k for k, ids in values.items() if tokens[-len(ids) :] == ids)


def repeated_ngram_ends(tokens: list[int], n: int) -> list[int]:
    """Words that would repeat an ``n``-gram of ``tokens`` if emitted next (``n`` = 0: none)."""
    if n <= 0 or len(tokens) < n - 1:
        return []
    prefix = tokens[len(tokens) - n + 1 :]
    return [tokens[i + n - 1] for i in range(len(tokens) - n + 1) if tokens[i : i + n - 1] == prefix]


def checker_reading(vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None):
    """``rules.read``: a function of a hypothesis's tokens (extended ids) -> the records (1..K)
    that the automatic checker of ``rules.dataset`` reads as said in their text, realised or
    repeated (:func:`segviz.faithfulness.check`), remembered per token sequence; None when the
    rule is off. A record the checker's reading cannot give to it alone (the dataset's
    ``attributable``: a WebNLG object that is another entity of the input too is said for both)
    is read by the mention rule instead: the function's second argument, the hypothesis's own
    mentions. Under r / rm it replaces the mention rule's word-by-word reading at each segment's
    end and decides when the text may end (docs/design.md §6)."""
    if not rules or not rules.read or not rules.dataset:
        return None
    from segviz.datasets import get
    from segviz.faithfulness import check

    words = vocab.itos + oov
    alone = frozenset(i + 1 for i in get(rules.dataset).attributable(records))

    @functools.lru_cache(maxsize=4096)
    def checked(tokens: tuple[int, ...]) -> frozenset:
        text = detokenize([words[i] for i in tokens if i >= len(SPECIALS)], records)
        verdicts = check(rules.dataset, records, text).per_record
        return frozenset(v.index + 1 for v in verdicts if v.status in ("realised", "repeated"))

    def read(tokens: tuple[int, ...], mentioned: frozenset = frozenset()) -> frozenset:
        return checked(tokens) & alone | mentioned - alone

    return read


def doubled_ok(vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None) -> frozenset | None:
    """Rule ``doubles`` (session 22): the ids the input itself says twice in a row ("long long"
    of "A Long Long Way"), which may follow themselves; None when the rule is off."""
    if not (rules and rules.doubles):
        return None
    return frozenset(i for w in doubled_words(records) if (i := _ext_id(vocab, oov, w)) is not None)


def doubled(tokens: list[int], ok: frozenset | None) -> list[int]:
    """The word that would be said twice in a row next (``[last]``), unless ``ok`` holds it or
    the rule is off (``ok`` None): a model that cannot read a relation copies its word again
    ("the name name")."""
    return [tokens[-1]] if ok is not None and tokens and tokens[-1] not in ok else []


def plain_words(vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None) -> torch.Tensor | None:
    """Rule ``babble`` (session 45): (n_ext,) bool, the words with a letter that are no function
    word and no token of a subject or value of the input (relation words, "located", "country"),
    which a segment says at most once (:func:`babbled`); None when the rule is off."""
    if not (rules and rules.babble):
        return None
    held = entity_tokens(records)
    plain = _per_vocab(vocab, "plain", lambda v: torch.tensor(
        [any(c.isalpha() for c in w) and not is_function_word(w) and w not in SPECIALS for w in v.itos]))
    mask = torch.cat([plain, torch.zeros(len(oov), dtype=torch.bool)])  # (n_ext,): a copied word is the input's
    held_ids = [i for w in held if (i := _ext_id(vocab, oov, w)) is not None]
    mask[held_ids] = False
    return mask


def babbled(segment: list[int], plain: torch.Tensor | None) -> list[int]:
    """The words of ``segment`` (the current segment's ids) that it may not say again under rule
    ``babble`` (``plain``: :func:`plain_words`): a segment that loops on its relation's words ("is
    located in the location of the location", "a dish from the country of the country")."""
    if plain is None:
        return []
    return [t for t in set(segment) if plain[t]]


PAUSES = (",", ";", ":")  # fullstop: words a full stop takes the place of at a text's end
CLOSING_QUOTES = ('"', "'", "''", ")")


def closed_result(result: GenerationResult, records: list[Record], rules: ValueRules | None) -> GenerationResult:
    """Rule ``fullstop`` (session 47): a text that the model ends on a word ends on a full stop
    ("... and Alcobendas."), one that it ends on a pause ("... Gujarat university,") on a full stop
    in its place (a pause after a sentence end is dropped). The added full stop belongs to the
    last segment and shows the attention of the word before it. A text that ends on a sentence
    end, or any text when the rule is off, is as it was."""
    t = result.tokens
    if not (rules and rules.fullstop) or not t:
        return result
    if (t[-2] if t[-1] in CLOSING_QUOTES and len(t) > 1 else t[-1]) in SENTENCE_ENDS:
        return result
    if t[-1] in PAUSES:
        tokens = t[:-1] if len(t) > 1 and t[-2] in SENTENCE_ENDS else t[:-1] + ["."]
    else:
        tokens = t + ["."]
    attention = (result.attention + result.attention[-1:])[: len(tokens)]
    segments = [(s, len(tokens) if e == len(t) else e, k) for s, e, k in result.segments]
    segments = [(s, e, k) for s, e, k in segments if s < e]
    return replace(result, tokens=tokens, attention=attention, segments=segments, text=detokenize(tokens, records))


def closed_results(results: list[GenerationResult], records: list[Record], rules: ValueRules | None) -> list:
    """``fullstop`` over an n-best list, applied after every choice of the model so it moves none:
    each text closed (:func:`closed_result`), a text that closing made equal to a better one left
    out, so the texts stay distinct."""
    out, seen = [], set()
    for r in (closed_result(r, records, rules) for r in results):
        if tuple(r.tokens) not in seen:
            seen.add(tuple(r.tokens))
            out.append(r)
    return out


def number_room(vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None) -> dict | None:
    """Rule ``numbers`` (session 23): id -> how often the input's records hold that number
    (:func:`segviz.records.number_words`); None when the rule is off."""
    if not (rules and rules.numbers):
        return None
    return {i: n for w, n in number_words(records).items() if (i := _ext_id(vocab, oov, w)) is not None}


def numbers_spent(tokens: list[int], room: dict | None) -> list[int]:
    """The numbers ``tokens`` has said as often as the input holds them, banned next: a model
    writing out a date it has not seen says one figure twice ("24-02-24" of ``2006-02-24``)."""
    return [i for i, n in room.items() if tokens.count(i) >= n] if room else []


class DateForms(NamedTuple):
    """``rules.dates``: one record's date written out (:func:`date_phrases`)."""

    spellings: list[tuple]  # extended-id sequences of the date written out
    starts: frozenset[int]  # their first words and the month's abbreviations that no other record of the input holds


def date_phrases(vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None) -> dict[int, DateForms]:
    """Rule ``dates`` (session 30): record id (1..K) -> its date value written out
    (:func:`segviz.records.date_spellings`). Once its record's segment says the first word of a
    spelling, the date is copied whole in one of them, as a proper name is (:func:`_owed_after`,
    :func:`dates_open`): a model writing out a date it has not seen copies one figure for another
    ("13-11-13" of ``1874-11-13``). Once said, it is not begun again (:func:`dates_again`). {}
    when the rule is off."""
    if not (rules and rules.dates):
        return {}
    out = {}
    for k, r in enumerate(records, 1):
        ids = [s for w in date_spellings(r.value) if None not in (s := tuple(_ext_id(vocab, oov, t) for t in w))]
        held = {_ext_id(vocab, oov, t.lower()) for j, q in enumerate(records, 1) if j != k for t in q.tokens}
        month = set(_ids(vocab, oov, {w for w, m in _MONTH_WORDS.items() if m == date_month(r.value)}))  # "feb" too
        if ids:
            out[k] = DateForms(ids, frozenset({s[0] for s in ids} | month) - held)
    return out


def _has(tokens: list[int], phrase: tuple | None, twins: dict[int, int] | None = None) -> bool:
    """Whether ``tokens`` contain ``phrase`` (True when there is none); with ``twins``
    (:func:`_accent_twins`) a word and its unaccented twin count as the same word."""
    if not phrase:
        return True
    if twins:
        tokens, phrase = [twins.get(t, t) for t in tokens], tuple(twins.get(t, t) for t in phrase)
    n = len(phrase)
    return any(tuple(tokens[i : i + n]) == phrase for i in range(len(tokens) - n + 1))


def _said_whole(tokens: list[int], spellings: list[tuple]) -> bool:
    """Whether ``tokens`` hold one of ``spellings`` (extended-id sequences) whole."""
    return any(_has(tokens, s) for s in spellings)


def dates_open(tokens: list[int], forms: DateForms | None) -> list[tuple]:
    """``rules.dates``: the spellings of a date (:func:`date_phrases`) a segment that begins one
    must finish, until ``tokens`` have said the date whole; then none."""
    return [] if not forms or _said_whole(tokens, forms.spellings) else forms.spellings


def dates_again(tokens: list[int], dates: dict[int, DateForms]) -> list[int]:
    """``rules.dates``: the words that would say a date of ``dates`` (:func:`date_phrases`) a
    second time once ``tokens`` hold it whole: the first words of its spellings and its month's
    abbreviations ("feb"), but those another record holds, and the last word of a spelling whose
    other words ``tokens`` end with ("… on july 23 rd, 1927 and was born on july 23 rd," does not
    go on "1927")."""
    said = [f for f in dates.values() if _said_whole(tokens, f.spellings)]
    return [w for f in said for w in f.starts] + [s[-1] for f in said for s in f.spellings if _ends_with(tokens, s[:-1])]


def foreign_names(vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None) -> dict | None:
    """Rule ``foreign`` (session 28): the training names (``rules.known``) that the input does not
    hold, as ``{n: {ids of n - 1 words: ids of the word banned after them}}``; None when the rule
    is off. A name is read from its first content word ("the portland arms" -> portland arms) and
    is held when its words stand in a row in one of the input's values or subjects ("eagle" of an
    invented "Eagle Rock"). A name whose first word no value or subject of the input says may not
    begin ("portland" is banned, ``n = 1``); one that begins with such a word may not end ("king"
    after "burger" of an invented "Burger Palace"). A model that has learnt a venue may say it of
    a venue it has not seen ("… Its near the portland arms." of ``near[Thornbury Abbey]``)."""
    if not (rules and rules.foreign and rules.known):
        return None
    held = [_slot(text) for r in records for text in (r.value, r.subject or "")]
    said = {w for h in held for w in h}
    out: dict[int, dict[tuple, set]] = {}
    for name in rules.known:
        words = tuple(_name_words(name, entity=True))
        n = len(words)
        if not words or any(any(h[j : j + n] == words for j in range(len(h) - n + 1)) for h in held):
            continue
        if ids := _spell(vocab, oov, words if words[0] in said else words[:1]):
            out.setdefault(len(ids), {}).setdefault(ids[:-1], set()).add(ids[-1])
    return out


def foreign_ends(tokens: list[int], table: dict | None) -> list[int]:
    """The ids that would end a name of ``table`` (:func:`foreign_names`) after ``tokens``."""
    if not table:
        return []
    return [i for n, ends in table.items() if len(tokens) >= n - 1 for i in ends.get(tuple(tokens[len(tokens) - n + 1 :]), ())]


def spent_groups(vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None) -> list | None:
    """Rule ``spent`` (session 28): the lexicon words (:mod:`segviz.lexicon`) whose ``attr:``
    features are all attributes of the input, as ``[(ids of the records that hold them, word
    ids)]``; a word of the input's values and subjects is never one. None when the rule is off."""
    if not (rules and rules.spent and rules.lexicon):
        return None
    holders: dict[str, set[int]] = {}
    for k, r in enumerate(records, 1):
        holders.setdefault(r.attribute, set()).add(k)
    words = {t for r in records for text in (r.value, r.subject or "") for t in _slot(text)}
    groups: dict[frozenset, list[int]] = {}
    for w, fs in rules.lexicon.items():
        attrs = {f[5:] for f in fs if f.startswith("attr:")}
        if attrs and attrs <= holders.keys() and w not in words and (i := _ext_id(vocab, oov, w)) is not None:
            groups.setdefault(frozenset().union(*(holders[a] for a in attrs)), []).append(i)
    return list(groups.items())


def spent_ids(groups: list | None, said: frozenset) -> list[int]:
    """The ids of ``groups`` (:func:`spent_groups`) whose attributes only records of ``said``
    hold: words that could only say again what the text has said ("… and is also very good for
    the whole family" after "it is not kid friendly")."""
    return [i for held, ids in groups if held <= said for i in ids] if groups else []


@dataclass(frozen=True)
class ValueRules:
    """Decoding rules for values (docs/design.md §6): ``absent`` and ``own`` read the value lexicon
    (:mod:`segviz.lexicon`) and do nothing without one; ``names`` acts on unseen proper names (a
    capitalised value or WebNLG subject with a word outside the vocabulary): once its first
    content word is out it is copied whole, and its record's segment ends only after the value
    has been said (without a plan: in it or before it, session 19). ``rules=None`` is the paper's
    decoding."""

    lexicon: dict[str, frozenset[str]] = field(default_factory=dict)  # word -> features (segviz.lexicon)
    absent: bool | None = True  # no lexicon word that the input does not hold (None: with a plan)
    own: bool | None = (
        True  # a segment says no other record's lexicon word, a null one none (None: with a plan)
    )
    names: bool = (
        True  # a proper name once begun is copied whole, and its record's segment says it unless said (no lexicon)
    )
    fillers: bool = False  # with r / rm / a plan: a realised record may open a segment of function words only
    brief: bool = False  # with fillers: a filler segment holds at most search.BRIEF tokens and never follows another (sessions 37-38)
    paraphrases: bool = False  # with r / rm: a lexicon word of a record's value mentions it
    values: bool | None = True  # a segment says no word its attribute's segments say of other values only (None: with a plan)
    stating: bool = False  # with r / rm / a plan: a record's segment ends only after a word that states its value
    literal: bool = False  # with stating (WebNLG): that word is one of the value's own, unless the text said the value before (session 36)
    outside: bool = False  # with stating, under r / rm: that word does not count inside a longer input entity begun before it ("abilene, texas": session 37)
    begun: bool = False  # with outside: nor inside a longer input entity that begins with the value, once the text goes on with it ("ashgabat international airport": session 39)
    planned: bool = False  # with outside (and begun): under a forced plan too ("bacon" said in "Bacon Explosion" does not state mainIngredients | Bacon: session 43)
    rerank: bool = False  # return the n-best candidate with the fewest checker faults (segviz.rerank)
    widen: bool = False  # with rerank: when every candidate has a fault, rerank a 4x wider beam's too
    free: bool = False  # with rerank, under r / rm: the unconstrained output when the record checker finds it exact
    keep: bool = False  # with free: the unconstrained system and the free text are the model's own search (no rerank, no widen)
    close: bool = False  # with free: when the free text has a fault, the pick is nearest it (with widen: the wider beam always joins)
    relations: bool = False  # with rerank: then the fewest records said with a word only other relations' segments say
    once: bool = False  # with r / rm / a plan: a value said, held by one slot of the input, is not begun again
    qualifiers: bool = False  # with r / rm: a value said after the comma of a longer entity ("Ithaca, New York") is said
    spellings: bool = False  # with r / rm / a plan: a value word said unaccented or as a possessive word ("nasa's") is said
    forms: bool = False  # with once: a value said in a short form ("french" of French_language) is said (echo: its forms too)
    heads: bool = False  # with forms: a value's words before its first comma ("washington" of Washington,_D.C.) are a form, as the checker reads them (session 38)
    numerals: bool = False  # with spellings: a figure's other spellings ("1,121", "1121" of 1121.0) are that figure, as the checker reads them (session 46)
    echo: bool = False  # with r / rm / a plan: a segment says no subject or value of the input twice
    onward: bool = False  # with once: a value that begins another entity, said again, goes on as that entity
    plurals: bool = False  # with spellings: an entity's last word said as a plural or demonym ("plants") is that word
    months: bool = False  # a month no date of the input holds is never said ("october" of 1827-11-26: session 21)
    doubles: bool = False  # no word said twice in a row unless the input says it so ("the name name": session 22)
    numbers: bool = False  # a number said no more often than the input's records hold it ("24-02-24": session 23)
    unheld: bool = False  # no word with a digit that no figure of the input holds ("911 metres" of 213.0: session 42)
    strangers: bool = False  # no entity word the input does not hold ("malaysia and java": segviz.entities, session 44)
    alien: bool = False  # no relation word none of whose relations the input holds ("born" of a launch date: session 46; WebNLG's lexicon)
    fullstop: bool = False  # a text the model ends on a word or a pause ends on a full stop ("... Alcobendas": session 47)
    renorm: bool = False  # under r / rm / a plan: the record choice is renormalised over the records the constraints leave (session 48, docs/design.md §6)
    heard: bool = False  # with read, under r / rm: a record's segment ends (before L) only once the checker reads its record (session 49)
    babble: bool = False  # a segment says no word twice that no subject or value of the input holds ("the location of the location": session 45; segment model)
    open: bool = False  # names: a value outside its attribute's closed set ("area[old town]") is said whole, as an unseen name (session 24)
    read: bool = False  # with r / rm: what the text has said is what the checker reads there, and it may end once it reads every record (session 27)
    spent: bool = False  # with r / rm / a plan: a segment says no lexicon word of only records said before it began (session 28)
    foreign: bool = False  # no training name (known) that the input does not hold is begun, or ended ("the portland arms": session 28)
    dates: bool = False  # a date begun in its record's segment is written out whole ("13-11-13" of 1874-11-13: session 30)
    second: bool = False  # the segment model's n-best ranked with the PG baseline's log-probability too (segviz.decode.second: session 31)
    hanging: bool = False  # a record's segment does not end on a function word inside its value ("tudor and": session 40; +R/+RM without a plan)
    split: bool = False  # a record's segment cut at L may go on after one null segment, not a repeat (training's reading of a longer span: session 40)
    resegment: bool = False  # under r / rm: the unconstrained text, segmented again by the constrained search (its words forced), joins the n-best (session 39)
    codes: bool = False  # names: an unseen code ("978-0-14-303943-3", "09L/27R") is said whole, as an unseen name (session 33)
    dataset: str = ""  # whose checker ``rerank`` reads (set by Checkpoint.rules)
    entities: frozenset = frozenset()  # entity words of the dataset (segviz.entities.shipped), for ``strangers``
    known: frozenset = frozenset()  # training names (segviz.lexicon.name_key): not "unseen" for ``names``
    segment_words: dict = field(default_factory=dict)  # attribute -> word -> values (segviz.lexicon.segment_words)
    relation_words: dict = field(default_factory=dict)  # word -> attributes whose segments say it (segviz.lexicon.relation_words)
    closed: dict = field(default_factory=dict)  # attribute -> its closed set of values (segviz.datasets: E2E's), for ``open``
    partner: object = field(default=None, compare=False, repr=False)  # the PG checkpoint ``second`` reads (set by Checkpoint.rules)

    @cached_property
    def value_bigrams(self) -> dict[str, frozenset[str]]:
        """Word -> the words that follow it inside a value the lexicon knows (``value:A=V``
        features: "3" -> {"out"} from "3 out of 5"); the names rule keeps a copied name from
        running on into one (:func:`_run_on`)."""
        values = {f.split("=", 1)[1] for fs in self.lexicon.values() for f in fs if f.startswith("value:")}
        return _bigrams(values)

    @cached_property
    def attribute_words(self) -> dict[str, frozenset[str]]:
        """Attribute -> the lexicon words of its ``attr:A`` feature ("star", "3" for customer
        rating)."""
        out: dict[str, set[str]] = {}
        for w, fs in self.lexicon.items():
            for f in fs:
                if f.startswith("attr:"):
                    out.setdefault(f[5:], set()).add(w)
        return {a: frozenset(ws) for a, ws in out.items()}

    def run_on(self, word: str) -> frozenset[str]:
        """Words that would read ``word``, a name's last word, on as a value: those that follow
        it inside a value (:attr:`value_bigrams`) and, for a lexicon word, the other lexicon
        words of its attributes ("3" -> "out", "star", "rating")."""
        attrs = [f[5:] for f in self.lexicon.get(word, ()) if f.startswith("attr:")]
        return self.value_bigrams.get(word, frozenset()).union(*(self.attribute_words[a] for a in attrs))


GUIDED = "+rerank+widen+free+keep+close+relations"  # the checker-guided setting (the app's "Checker-guided" option; +keep: session 16, +close: 17, +relations: 18)


def guided_rules(name: str | None) -> str:
    """The value rules ``name`` (None: :data:`DEFAULT_VALUE_RULES`) with the checker-guided
    switches :data:`GUIDED`: the model's own unconstrained text is kept where the checker finds it
    exact (``free``, ``keep``); elsewhere the checker reranks the constrained n-best (``rerank``)
    and a wider search joins (``widen``), and of the candidates with the fewest faults (then the
    fewest records said with another relation's words, ``relations``) the one nearest the
    model's own text is taken (``close``)."""
    return (name or DEFAULT_VALUE_RULES) + GUIDED


VALUE_RULES = ("none", "names", "absent", "auto", "all")  # the presets of value_rules()
RULE_SWITCHES = ("names", "absent", "own", "values", "fillers", "brief", "paraphrases", "stating", "literal", "outside", "rerank", "widen", "free", "keep", "close", "relations", "once", "qualifiers", "spellings", "forms", "echo", "onward", "plurals", "months", "doubles", "numbers", "open", "read", "foreign", "spent", "dates", "second", "codes", "heads", "resegment", "begun", "split", "hanging", "unheld", "planned", "strangers", "babble", "numerals", "alien", "fullstop", "renorm", "heard")  # what "+rule" / "-rule" switch on or off
DEFAULT_VALUE_RULES = "auto"
VALUE_RULES_HELP = (  # the CLIs' --value-rules help
    f"decoding rules: a preset {', '.join(VALUE_RULES)} (none: the paper), then +rule / -rule switches "
    f"({', '.join(RULE_SWITCHES)}), e.g. auto+fillers (segviz.decode.value_rules); default: the "
    "checkpoint's, chosen on the tuning half (lexicon.json), else auto"
)
_OFF = dict.fromkeys(RULE_SWITCHES, False)
_PRESETS = {  # preset -> ValueRules fields (None: only when a plan is forced)
    "none": _OFF,
    "names": {**_OFF, "names": True},
    "absent": {**_OFF, "names": True, "absent": True},
    "auto": {**_OFF, "names": True, "absent": None, "own": None, "values": None},
    "all": {**_OFF, "names": True, "absent": True, "own": True, "values": True},
}


def value_rules(name: str, lexicon: dict[str, frozenset[str]] | None = None) -> ValueRules | None:
    """The :class:`ValueRules` called ``name``: a preset of :data:`VALUE_RULES`, optionally
    followed by switches ``+rule`` / ``-rule`` (:data:`RULE_SWITCHES`), e.g. ``auto+fillers`` or
    ``none+fillers``; None when nothing is on (the paper's decoding). Presets: ``names`` completes
    unseen proper names, ``absent`` adds the absent rule, ``auto`` (the default) adds the absent
    and own rules (and the values rule, with segment words) when a plan is forced (where each
    segment must say its own record: the Plan editor), ``all`` adds them always. ``fillers`` lets a realised record open a segment of
    function words only under r / rm / a plan, and ``brief`` (with ``fillers``) keeps such a segment
    to at most ``search.BRIEF`` tokens and never lets one follow another; ``paraphrases`` counts a record as mentioned (as a
    verbatim value is) once a lexicon word of its value is said ("moderately priced" for
    ``priceRange[moderate]``, :func:`_said_ids`) under r / rm; ``rerank`` returns the candidate of
    the n-best list with the fewest faults of the automatic checker (:mod:`segviz.rerank`), a
    separately reported setting, and ``widen`` (with ``rerank``) searches again with a beam four
    times wider when every candidate has a fault, the checker picking among both lists, and ``free``
    (with ``rerank``, under r / rm) returns the unconstrained output (under the same rules) when the
    record checker finds it exact, the constrained pick otherwise, and ``keep`` (with ``free``) takes
    that free text, and the unconstrained system's output, from the model's own search (no rerank,
    no widen: the checker guides only +R / +RM), and ``close`` (with ``free``), when the free text
    has a fault, always lets the wider search join and picks, of the candidates with the fewest
    faults, the one the fewest word edits from the free text (:func:`segviz.rerank.word_edits`), and
    ``relations`` (with ``rerank``) takes, of the candidates with the fewest faults, those with
    the fewest records said with a word that, in training, only other relations' segments say,
    in their segment or in the words that lead into their value ("the oclc number was Diane
    Duane" for ``author``, :func:`segviz.rerank.relation_faults`; needs the lexicon's
    ``relations``, ``python -m segviz.lexicon --relations``);
    ``once`` (under r / rm / a plan) keeps a value that the text has said,
    and that one slot of the input holds, from being begun again (:func:`_said_once`); ``values`` bans inside a record's segment the words its
    attribute's segments say of other values only (:func:`_values_mask`); ``stating`` lets a
    record's segment end (under r / rm / a plan) only after a word that states its value
    (:func:`_says_mask`), and ``literal`` (with ``stating``; WebNLG) only after one of its value's own
    words, unless the text said the value before the segment began (:func:`_literal_mask`), and
    ``outside`` (with ``stating``, under r / rm) does not count such a word where it goes on a
    longer entity of the input that holds the value, begun before the word ("texas" of "Abilene,
    Texas" for ``Abilene,_Texas | isPartOf | Texas``: ``segviz.decode.search._inside_longer``), and
    ``begun`` (with ``outside``) nor where the text goes on from it with a longer entity that begins
    with the value ("Ashgabat International Airport" for ``location | Ashgabat``:
    ``segviz.decode.search._continued``); ``resegment`` (under r / rm, no plan) searches the
    unconstrained output again under the constraints with its words forced and lets a segmentation
    that meets them join the n-best (``segviz.decode.seg._resegmented``); ``hanging`` keeps a
    record's segment from ending on a function word inside its value, its first words said ("… of
    tudor and" of "Tudor and Jacabian": ``segviz.decode.search._hangs``); ``split`` lets a record
    whose segment ran to ``L`` tokens take the segment after the next, a null one, as its own
    still, neither a repeat under r / rm nor a step of a plan: the forward algorithm reads a value
    said in more than ``L`` tokens so, with no self-transition (``segviz.decode.search._goes_on``); ``qualifiers`` (under r / rm) counts a value as said when the text says it
    as the place after the comma of a longer entity of the input ("New York" in "Ithaca, New
    York", :func:`_qualified`); ``spellings`` (under r / rm / a plan) lets the mention rule and
    *once* read a value word said without its accents or as a possessive word ("nasa's",
    :func:`spelling_twins`); ``forms`` (with *once*) lets *once*, the mention rule and the owed-name
    check read a value said in a short form, without its bracket or a generic last word ("french"
    of ``French_language``, :func:`_value_forms`); ``echo`` (under r / rm / a plan) keeps a segment
    from saying a subject or value of the input twice (:func:`_echo_entries`); ``onward`` (with
    *once*) has a value that begins another entity of the input, said again, go on as that entity
    (:func:`_onward_entry`); ``plurals`` (with ``spellings``) reads an entity's last word said as a
    plural or demonym as that word (:func:`spelling_twins`); ``months`` bans the name of a month
    that no date of the input holds (:func:`_month_ids`); ``doubles`` bans the word just said
    unless a subject or value of the input says it twice in a row (:func:`doubled_ok`,
    :func:`doubled`); ``numbers`` says a number no more often than the input's records hold it
    (:func:`number_room`, :func:`numbers_spent`); ``unheld`` never says a word with a digit that
    no figure of the input holds in any form the references write it (:func:`_unheld_ids`);
    ``strangers`` never says a word that training references say almost only as a word of an
    entity of their input, where this input holds no such word (:func:`_stranger_ids`); ``babble``
    keeps a segment of the segment model from saying a word twice that no subject or value of the
    input holds (:func:`plain_words`, :func:`babbled`: "the location of the location");
    ``alien`` never says a relation word none of whose relations the input holds
    (:func:`_alien_ids`: "was born in" of a launch date); ``numerals`` (with ``spellings``)
    reads a figure's other spellings as that figure ("1,121" of ``1121.0``,
    :func:`spelling_twins`), so that *once* does not let it be said again; ``fullstop`` ends a
    text that the model ends on a word or a pause on a full stop (:func:`closed_results`);
    ``renorm`` (segment model, under r / rm / a plan) renormalises the record choice over the
    records the constraints leave (``search.SegmentDecoder._record_cands``);
    ``read`` (under r / rm; ``e2e-seg``'s rules since session 27, ``webnlg-seg``'s since 34) takes what the automatic checker reads in
    the text as what it has said: at each segment's end the records it reads said are the
    mentioned ones (a record whose reading is not its own alone, by the mention rule), and the
    text may end only once it reads every record not realised by a segment (:func:`checker_reading`);
    ``heard`` (with ``read``, under r / rm) lets a record's segment shorter than ``L`` end only once
    the checker reads its record in the text so far, a record it cannot read alone excepted ("… the
    architectural style of tudor" did not say "Tudor and Jacabian":
    ``segviz.decode.search.SegmentDecoder._mask_unheard``);
    ``foreign`` never lets a text begin (or, when the input says its first word, end) a training
    name that the input does not hold (:func:`foreign_names`, :func:`foreign_ends`); ``spent``
    (under r / rm / a plan) bans in a segment the lexicon words whose attributes only records said
    before the segment began hold (:func:`spent_groups`, :func:`spent_ids`); ``dates`` has a
    record's segment that begins its date write it out whole (:func:`date_phrases`); ``second``
    ranks the segment model's n-best by its own score plus the PG baseline's log-probability of
    each text (:mod:`segviz.decode.second`; ``partner``, set by :meth:`Checkpoint.rules`);
    ``codes`` (with ``names``) has an unseen code, which has no capital ("978-0-14-303943-3"),
    copied whole once begun and said by its record's segment, as an unseen name is
    (:func:`segviz.invented.code_kind`). Chosen on the tuning half of dev (docs/design.md §6)."""
    preset, *switches = re.split(r"(?=[+-])", name.strip())
    if preset not in _PRESETS or any(s[1:] not in RULE_SWITCHES for s in switches):
        raise ValueError(
            f"value rules must be one of {VALUE_RULES} followed by +rule / -rule switches "
            f"(rules: {', '.join(RULE_SWITCHES)}), got {name!r}"
        )
    fields = dict(_PRESETS[preset])
    for s in switches:
        fields[s[1:]] = s[0] == "+"
    if not any(v is not False for v in fields.values()):
        return None
    return ValueRules(lexicon or {}, **fields)


def parse_value_rules(name: str) -> str:
    """argparse ``type=`` for ``--value-rules``: ``name`` if :func:`value_rules` accepts it."""
    import argparse

    try:
        value_rules(name)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return name


def _ids(vocab: Vocab, oov: list[str], words: set[str]) -> list[int]:
    return [
        vocab.stoi[w] if w in vocab.stoi else len(vocab) + oov.index(w)
        for w in words
        if w in vocab.stoi or w in oov
    ]


def _absent_ids(
    vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None, planned: bool = False
) -> list[int]:
    """Ids of lexicon words none of whose features the input holds (banned under ``rules.absent``)."""
    if not rules or not (rules.absent or (rules.absent is None and planned)) or not rules.lexicon:
        return []
    from segviz.lexicon import features

    held = set().union(*(features(r) for r in records))
    words = {t.lower() for r in records for t in r.tokens}
    return _ids(vocab, oov, {w for w, fs in rules.lexicon.items() if not fs & held} - words)


def _unheld_ids(vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None) -> list[int]:
    """Ids of the words with a digit that no figure of the input holds, banned under
    ``rules.unheld`` (:func:`segviz.records.held_figures`: its own numbers, without a zero fraction
    or with thousands commas, a date's figures written out): a model that has read many airports
    says an elevation the input does not give ("… 213.0 metres above sea level. It is located 911
    metres above the sea level"). A copied word of the input (``oov``) is held."""
    if not rules or not rules.unheld:
        return []
    figures = _per_vocab(vocab, "figures", lambda v: [(i, w) for i, w in enumerate(v.itos) if any(c.isdigit() for c in w)])
    held = held_figures(records)
    return [i for i, w in figures if w not in held]


def _stranger_ids(vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None) -> list[int]:
    """Ids of the entity words (``rules.entities``, :mod:`segviz.entities`) that the input does not
    hold in any spelling (:func:`segviz.entities.stranger`), banned under ``rules.strangers``: a model that has
    read many dishes adds a place the input does not give ("Ayam penyet is a dish from Malaysia
    and java"). A copied word of the input (``oov``) is held."""
    if not rules or not rules.strangers or not rules.entities:
        return []
    held = held_words(records)
    return _ids(vocab, oov, {w for w in rules.entities if stranger(w, rules.entities, held)})


def _alien_ids(vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None) -> list[int]:
    """Ids of the relation words (``rules.relation_words``, :func:`segviz.lexicon.relation_words`)
    none of whose relations the input holds, banned under ``rules.alien`` (session 46): a model
    that reads a relation it has not learned says another's ("Kestrel 7 was born in 2019-04-11"
    of a ``launchDate``, "… is one of the ingredients in the dish" of an ``office``;
    :func:`segviz.lexicon.alien_relation_words`). A word of the input's values, subjects or
    relations stays ("ingredients" of ``mainIngredient``), and so do the source's copied words."""
    if not rules or not rules.alien or not rules.relation_words:
        return []
    from segviz.lexicon import alien_relation_words, plain_word

    alien = alien_relation_words(records, rules.relation_words)
    plain = _per_vocab(vocab, "plain words", lambda v: [plain_word(w) for w in v.itos])
    return [i for i, w in enumerate(plain) if w in alien]


_MONTH_WORDS = {  # a month's name and its abbreviations ("may" is a verb too: never banned)
    **{m: m for m in MONTHS if m != "may"},
    **{m[:3]: m for m in MONTHS if m != "may"},
    "sept": "september",
}


def _month_ids(
    vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None, held_by: list[Record] | None = None
) -> list[int]:
    """Ids of the months that no date of ``held_by`` (default: the input) holds, banned under
    ``rules.months``: the model writes a date out from its figures and, for a date it has not seen,
    may pick the wrong month ("the 26 th of october 1827" of ``1827-11-26``). A month the input
    writes in words stays."""
    if not rules or not rules.months:
        return []
    held = {m for r in (records if held_by is None else held_by) if (m := date_month(r.value))}
    words = {t.lower() for r in records for t in r.tokens}
    return _ids(vocab, oov, {w for w, m in _MONTH_WORDS.items() if m not in held and w not in words})


def _month_mask(vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None) -> torch.Tensor | None:
    """(K+1, n_ext) bool under ``rules.months``: row k bans the months that record k's own date
    does not hold (with two dates, "born on the 26 th of march 1827" of ``1827-11-26`` took the
    other date's month), row 0 (null) those that no date of the input holds. None when off."""
    if not rules or not rules.months:
        return None
    mask = torch.zeros(len(records) + 1, len(vocab) + len(oov), dtype=torch.bool)
    mask[0, _month_ids(vocab, oov, records, rules)] = True
    for k, r in enumerate(records, 1):
        mask[k, _month_ids(vocab, oov, records, rules, held_by=[r])] = True
    return mask


NEGATIONS = frozenset("not no non n't nor never without".split())  # never a paraphrase alone


def _said_ids(
    vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None
) -> dict[int, frozenset[int]]:
    """Record id (1..K) -> ids of lexicon words that state its value (``rules.paraphrases``):
    words of its ``value:`` or ``tok:`` features ("moderately" for ``priceRange[moderate]``,
    "families" for ``familyFriendly[yes]``), and for a yes / no value any word of its attribute
    ("friendly"); negations, and words of another record's value, never. Words of an attribute
    alone ("serving", "rating") do not state a value and do not count, unless the word is the
    record's own one-word value and the lexicon ties it to that attribute only ("cheap" of
    ``priceRange[cheap]``, unlike "low", which rates a price and a customer rating alike)."""
    if not rules or not rules.paraphrases or not rules.lexicon:
        return {}
    from segviz.lexicon import features

    out = {}
    for k, r in enumerate(records, 1):
        mine = features(r) - ({f"attr:{r.attribute}"} if r.value.lower() not in ("yes", "no") else set())
        others = {t.lower() for j, q in enumerate(records, 1) if j != k for t in q.tokens}
        words = {w for w, fs in rules.lexicon.items() if fs & mine} | _own_value_words(r, rules.lexicon)
        words = words - NEGATIONS - others
        out[k] = frozenset(_ids(vocab, oov, words))
    return out


def _own_value_words(record: Record, lexicon: dict[str, frozenset[str]]) -> set[str]:
    """``record``'s value if it is one word that the lexicon knows of its attribute and of no other
    ("cheap", "riverside", "pub"; not "low"; longer values are mentioned verbatim or not at all)."""
    toks = [t.lower() for t in record.value_tokens]
    attrs = {f for f in lexicon.get(toks[0], ()) if f.startswith("attr:")} if len(toks) == 1 else set()
    return set(toks) if attrs == {f"attr:{record.attribute}"} else set()


def _values_mask(
    vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None, planned: bool = False
) -> torch.Tensor | None:
    """(K+1, n_ext) bool: row k bans the words that the segments of record k's attribute say of
    its other values only (``rules.values``, :func:`segviz.lexicon.segment_words`: "low" in the
    segment of ``customer rating[5 out of 5]``), its own value's words excepted ("eagle" of an
    unseen "The Eagle Rock"); row 0 (null) bans the words null segments never say (under
    ``""``: "low", "located"). None when the rule is
    off or the checkpoint has no segment words."""
    if not rules or not (rules.values or (rules.values is None and planned)) or not rules.segment_words:
        return None
    mask = torch.zeros(len(records) + 1, len(vocab) + len(oov), dtype=torch.bool)
    mask[0, _ids(vocab, oov, set(rules.segment_words.get("", {})))] = True
    for k, r in enumerate(records, 1):
        words = rules.segment_words.get(r.attribute, {})
        other = {w for w, vs in words.items() if r.value.lower() not in vs} - {t.lower() for t in r.tokens}
        mask[k, _ids(vocab, oov, other)] = True
    return mask


def _says_mask(vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None) -> torch.Tensor | None:
    """(K+1, n_ext) bool: row k holds the words that state record k's value (``rules.stating``):
    the content words of its value (WebNLG: not the subject's, which every record of the entity
    shares; session 32), lexicon words of its value or value tokens (for a yes/no
    value also of its attribute: "friendly"), and segment words its attribute's segments say of
    its value ("high" for ``customer rating[high]``; "out of 5" says none of it). None when off."""
    if not rules or not rules.stating:
        return None
    from segviz.lexicon import features, value_words

    mask = torch.zeros(len(records) + 1, len(vocab) + len(oov), dtype=torch.bool)
    for k, r in enumerate(records, 1):
        said = value_words([r])  # its value's content words, and (WebNLG) its subject's
        subject = said - {t.lower() for t in r.value_tokens}  # the subject states no record
        mine = features(r) - ({f"attr:{r.attribute}"} if r.value.lower() not in ("yes", "no") else set())
        mine -= {f"tok:{w}" for w in subject}
        words = (said - subject) | {w for w, fs in rules.lexicon.items() if fs & mine}
        words |= {w for w, vs in rules.segment_words.get(r.attribute, {}).items() if r.value.lower() in vs}
        mask[k, _ids(vocab, oov, words)] = True
    return mask


def _literal_words(record: Record) -> set[str]:
    """The words that state ``record``'s value under ``literal``: the content words of its value
    and of every spelling the WebNLG checker reads as it (``faithfulness.webnlg.spellings``:
    "uk" of ``United_Kingdom``, "973" of 973.0, "july" of 1907-07-11), never its subject's."""
    from segviz.faithfulness.webnlg import spellings
    from segviz.lexicon import value_words

    own = value_words([replace(record, subject=None)])
    return own | {w for s in spellings(record.value) for w in tokenize(s) if not is_function_word(w)}


def _literal_mask(
    vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None, says: torch.Tensor | None
) -> torch.Tensor | None:
    """(K+1, n_ext) bool: row k holds the words that state record k's value under ``literal``
    (:func:`_literal_words`; session 36), from ``says`` (:func:`_says_mask`, left as it is). The
    lexicon's words of a WebNLG value, which ``says`` holds, come from the references it was said
    in, and so hold the entities it came with ("athens", "chelsea" state ``manager | Gus_Poyet``):
    with them a segment could end on its relation alone ("He is now manager of afc athens fc.").
    A record without a subject (E2E) keeps its ``says`` row. With ``spellings`` a word's twins
    count as it (:func:`spelling_twins`: "gerard", "texans"). None when off."""
    if says is None or not rules.literal:
        return None
    out = says.clone()
    twins = spelling_twins(vocab, oov, _entities(vocab, oov, records), rules.plurals, rules.numerals) if rules.spellings else {}
    for k, r in enumerate(records, 1):
        if r.subject:
            out[k] = False
            out[k, _ids(vocab, oov, _literal_words(r))] = True
            out[k, [i for i, t in twins.items() if out[k, t]]] = True
    return out


def _distinct_mask(vocab: Vocab, oov: list[str], records: list[Record], literal: torch.Tensor | None) -> torch.Tensor | None:
    """``literal`` (:func:`_literal_mask`) without, in each WebNLG row, the words of the input's
    other entities ("university" of ``European_University_Association`` beside
    ``Aarhus_University``): the words whose saying shows the value said. None when ``literal`` is."""
    if literal is None:
        return None
    out = literal.clone()
    for k, r in enumerate(records, 1):
        if r.subject:
            out[k, _ids(vocab, oov, _entity_words(records, r.value))] = False
    return out


def _entity_words(records: list[Record], but: str) -> set[str]:
    """The words of the input's subjects and values other than the entity ``but``."""
    entities = {e for r in records for e in (r.subject, r.value) if e and e != but}
    return {w for e in entities for w in tokenize(e.replace("_", " "))}


def _own_mask(
    vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None, planned: bool = False
) -> torch.Tensor | None:
    """(K+1, n_ext) bool: row k bans the lexicon words of the other records' features that record
    k does not hold itself; row 0 (null) bans every record's. None when the rule is off."""
    if not rules or not (rules.own or (rules.own is None and planned)) or not rules.lexicon:
        return None
    from segviz.lexicon import features

    feats = [features(r) for r in records]
    owned = [{w for w, fs in rules.lexicon.items() if fs & f} for f in feats]
    mask = torch.zeros(len(records) + 1, len(vocab) + len(oov), dtype=torch.bool)
    mask[0, _ids(vocab, oov, set().union(*owned))] = True
    for k, r in enumerate(records, 1):
        own = owned[k - 1] | {t.lower() for t in r.tokens}
        mask[k, _ids(vocab, oov, set().union(*owned[: k - 1], *owned[k:]) - own)] = True
    return mask


def _phrases(
    vocab: Vocab,
    oov: list[str],
    records: list[Record],
    rules: ValueRules | None,
    values_only: bool = False,
    seen_too: bool = False,
    entities: bool = False,
) -> dict[int, list[tuple]]:
    """Record id (1..K) -> extended-id sequences of its unseen proper names (``rules.names``): its
    capitalised value and WebNLG subject when a word of it is out of the vocabulary or (with the
    training names ``rules.known``) the name is not one of them, from their
    first content word ("The Quiet Walrus" -> quiet walrus: "the" begins too much). Names of 2+
    tokens only, or with ``values_only`` (the names a segment must say) the value alone.
    ``seen_too`` (under a forced plan, where every segment must say its own record): every name.
    ``entities``: the records are WebNLG entities even without a subject (:func:`_subject_phrases`)."""
    if not rules or not rules.names:
        return {}
    out: dict[int, list[tuple]] = {}
    for k, r in enumerate(records, 1):
        for text in (r.value,) if values_only else (r.value, r.subject or ""):
            toks = _name_words(text, entities or r.subject is not None)
            unseen = any(t not in vocab.stoi for t in toks) or bool(  # a name the model has not learnt
                rules.known and name_key(text) not in rules.known
            )
            opened = text == r.value and open_value(r, rules)  # lower case too ("old town")
            coded = rules.codes and text == r.value and code_kind(text)  # "978-0-14-303943-3": no capital
            if (
                (unseen or seen_too or opened)
                and len(toks) >= (1 if values_only else 2)
                and (opened or coded or any(ch.isupper() for ch in text))
            ):
                ids = tuple(_ext_id(vocab, oov, t) for t in toks)
                if None not in ids:  # every word is one the encoder read
                    out.setdefault(k, []).append(ids)
    return out


def _name_words(text: str, entity: bool) -> list[str]:
    """The words of a value or subject as the encoder read them, from its first content word
    ("The Quiet Walrus" -> quiet walrus): a WebNLG ``entity`` with its underscores as spaces, an
    E2E value as typed ("food[_Thai_]" is one word, "_thai_")."""
    text = text.replace("_", " ") if entity else text
    toks = tokenize(text.strip().strip('"'))
    return toks[next((i for i, t in enumerate(toks) if not is_function_word(t)), len(toks)) :]


def open_value(r: Record, rules: ValueRules) -> bool:
    """``rules.open``: whether ``r``'s value lies outside its attribute's closed set
    (``rules.closed``: "food[Thai]", "area[old town]", "eatType[wine bar]" in E2E): such a value
    is a name the model has not learnt, even in lower case."""
    closed = rules.closed.get(r.attribute)
    return bool(rules.open and closed and r.subject is None and r.value.strip().lower() not in closed)


def entity_starts(vocab: Vocab, oov: list[str], records: list[Record]) -> frozenset[int]:
    """The first ids of the input's values and subjects (:func:`_entities`), for :func:`_inner_ids`."""
    return frozenset(e[0] for e in _entities(vocab, oov, records))


def _inner_ids(vocab: Vocab, oov: list[str], phrases: list[tuple], starts: frozenset[int] = frozenset()) -> list[int]:
    """Content words that only continue one of ``phrases`` (unseen names): they may be said
    only as the name's next word, after its first ("Castle Bridge", never "Bridge" alone). A word
    that begins a value or subject of the input (``starts``, :func:`entity_starts`) is no such
    word (session 26): "texas" continues "Abilene, Texas" but is also ``Abilene,_Texas | isPartOf
    | Texas``'s value, which a plan's segment for that record could not say."""
    firsts = {p[0] for p in phrases} | starts
    inner = {t for p in phrases for t in p[1:]} - firsts
    word = lambda t: vocab.itos[t] if t < len(vocab) else oov[t - len(vocab)]  # noqa: E731
    return sorted(t for t in inner if not is_function_word(word(t)))


def _subject_phrases(
    vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None, seen_too: bool = False
) -> dict[int, tuple]:
    """Record id (1..K) -> extended ids of its unseen proper-name subject (WebNLG; ``rules.names``,
    as in :func:`_phrases`): the text must say it, in this record's segment if not before."""
    subjects = [Record(r.attribute, r.subject, None) if r.subject else None for r in records]
    out = {}
    for k, r in enumerate(subjects, 1):
        if r is not None:
            ps = _phrases(vocab, oov, [r], rules, values_only=True, seen_too=seen_too, entities=True).get(1)
            if ps:
                out[k] = ps[0]
    return out


def _accent_twins(vocab: Vocab, oov: list[str], phrases) -> dict[int, int]:
    """Id -> the id of the same word without its accents, for the words of ``phrases`` (extended-id
    sequences) that have such a twin in the vocabulary or the source: "arròs" (copied from
    ``Arròs_negre``) and the vocabulary's "arros" say the same subject, as the checker reads them
    (:func:`segviz.records.strip_accents`)."""
    word = lambda t: vocab.itos[t] if t < len(vocab) else oov[t - len(vocab)]  # noqa: E731
    out = {}
    for t in {t for p in phrases for t in p}:
        plain = strip_accents(word(t))
        if plain != word(t) and (plain in vocab.stoi or plain in oov):
            out[t] = vocab.stoi[plain] if plain in vocab.stoi else len(vocab) + oov.index(plain)
    return out


def spelling_twins(
    vocab: Vocab, oov: list[str], phrases, plurals: bool = False, numerals: bool = False
) -> dict[int, int]:
    """``ValueRules.spellings``: id -> the id of the word of ``phrases`` (the input's values and
    subjects, extended-id sequences) it spells another way: the word without its accents
    ("gerard" for the "gérard" of ``Gérard_Larcher``) and the word with a possessive "'s" that the
    vocabulary holds as one word ("nasa's"). The mention rule and *once* read the tokens through
    it, so "nasa's Apollo 8" says ``NASA`` as the checker reads it (docs/design.md §6). A word of
    the input itself ("california's" of ``California's_11th_State_Assembly_district``) is never
    read as another. With ``plurals`` (``rules.plurals``), also a phrase's last word with a suffix
    of :data:`SUFFIXES` (a plural or a demonym: "plants" of ``Flowering_plant``, "indonesian" of
    ``Indonesia``), as the checker reads an entity (``faithfulness.webnlg._variants``). With
    ``numerals`` (``rules.numerals``), a figure's other spellings (:func:`segviz.records.figure_forms`:
    "1121", "1,121" of ``1121.0``): a text that said "a runway length of 1,121" went on "located
    in 1121.0, Texas" (session 46)."""
    word = lambda t: vocab.itos[t] if t < len(vocab) else oov[t - len(vocab)]  # noqa: E731
    own = {t for p in phrases for t in p}
    last = {p[-1] for p in phrases if p} if plurals else set()
    out = {}
    for t in sorted(own):
        others = {strip_accents(word(t)), word(t) + "'s", strip_accents(word(t)) + "'s"}
        if t in last and word(t)[-1:].isalpha():
            others |= {word(t) + x for x in SUFFIXES}
        if numerals and not re.match(r"0\d", word(t)):  # not a date's "04": its "4" is no figure's
            others |= set(figure_forms(word(t)))
        for other in sorted(others - {word(t)}):
            if (i := _ext_id(vocab, oov, other)) is not None and i not in own:  # an input word is read as itself
                out.setdefault(i, t)
    return out


def _owed_after(owed: tuple, phrases: list[tuple], v: int) -> tuple:
    """The rests still owed after emitting ``v`` (a tuple of token tuples, ``()`` for none): of
    the names being copied that go on with ``v``, or of the names that ``v`` begins. Every name
    that ``v`` may be copying stays open until one is said whole (session 26): "abilene" begins
    both "Abilene Regional Airport" and "Abilene, Texas", and owing only the first one listed
    barred the other for good (7% of WebNLG's forced random plans fell back to no plan)."""
    rests = tuple(p[1:] for p in (owed or phrases) if p and p[0] == v)
    return () if not rests or not all(rests) else tuple(dict.fromkeys(rests))


def _bigrams(values) -> dict[str, frozenset[str]]:
    """Word -> the words that follow it in one of ``values`` (lower-cased tokens)."""
    out: dict[str, set[str]] = {}
    for v in values:
        toks = [t.lower() for t in tokenize(v)]
        for a, b in zip(toks[:-1], toks[1:], strict=True):
            out.setdefault(a, set()).add(b)
    return {a: frozenset(bs) for a, bs in out.items()}


def _run_on(
    vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None, phrases: list[tuple]
) -> dict[tuple, list[int]]:
    """Name of ``phrases`` -> ids that would run it on into a value (``rules.names``): the words
    that follow its last word inside a value of the input, and :meth:`ValueRules.run_on`. An
    unseen name ending in a digit, "Tollgate 3", is otherwise read on as a rating, in its own
    segment or the next: "Tollgate 3 out of 5 is a coffee shop", "Tollgate 3 star coffee shop".
    Names with no such word are left out."""
    if not rules or not rules.names or not phrases:
        return {}
    given = _bigrams(r.value for r in records)
    word = lambda t: vocab.itos[t] if t < len(vocab) else oov[t - len(vocab)]  # noqa: E731
    follow = lambda w: rules.run_on(w) | given.get(w, frozenset())  # noqa: E731
    out = {p: _ids(vocab, oov, set(follow(word(p[-1])))) for p in phrases}
    return {p: ids for p, ids in out.items() if ids}


def _ran_on(tokens: list[int], run_on: dict[tuple, list[int]]) -> list[int]:
    """The words that may not come next because ``tokens`` end with a name of ``run_on``
    (:func:`_run_on`), whichever record's segment the next word is in."""
    return [t for p, ids in run_on.items() if _ends_with(tokens, p) for t in ids]


def _just_said(tokens: list[int], phrases: list[tuple]) -> list[int]:
    """The words of a name that ``tokens`` end with (not to be repeated right away)."""
    return [t for p in phrases if _ends_with(tokens, p) for t in p]


def _ends_with(tokens: list[int], phrase: tuple) -> bool:
    """Whether ``tokens`` end with ``phrase``."""
    return len(tokens) >= len(phrase) and tuple(tokens[-len(phrase) :]) == phrase


def _force(row: torch.Tensor, raw: torch.Tensor, owed: tuple) -> None:
    """Leave only the next token of each owed rest (:func:`_owed_after`) in ``row`` (with its
    unmasked score)."""
    nxt = sorted({rest[0] for rest in owed})
    keep = raw[nxt].clone()
    row.fill_(-math.inf)
    row[nxt] = keep
