"""Decoding: segment-by-segment beam search with constraints, PG beam search, plan forcing,
sampling of diverse structures, and forced alignment (Viterbi) of any text.

Constraints (paper §4 "Decoding"), selectable per call:

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
"""

from __future__ import annotations

import logging
import math
import re
import time
import weakref
from dataclasses import dataclass, field

import torch

from segviz import dp
from segviz.data import BOS_ID, EOS_ID, EOSEG_ID, PAD_ID, UNK_ID, Vocab, collate, encode
from segviz.model import PGModel, SegmentModel
from segviz.records import Record, detokenize, tokenize
from segviz.result import GenerationResult  # noqa: F401  (re-exported; torch-free)

log = logging.getLogger(__name__)

CONSTRAINTS = ("none", "r", "rm")
NO_REPEAT_NGRAM = 3  # default for both systems: no word trigram twice in one output
CONSTRAINT_LABELS = {"none": "ours", "r": "ours (+R)", "rm": "ours (+RM)"}


def _records_info(records: list[Record]):
    return [(k + 1, r.label, r.tokens) for k, r in enumerate(records)]


# Closed-class English words: a segment of these alone does not realise a record.
FUNCTION_WORDS = frozenset(
    "a an the this that these those it its it's they their there here he she his her "
    "is are was were be been being am has have had having do does did will would can could "
    "and or but nor so yet also as than then too very which who whom whose where when what "
    "of in on at to for with by from into onto near off out up down over under about "
    "within without between among through during before after around against along "
    "`` '' 's".split()
)


def is_function_word(word: str) -> bool:
    """True for punctuation, specials and :data:`FUNCTION_WORDS` (case-insensitive)."""
    w = word.lower()
    return w in FUNCTION_WORDS or not any(ch.isalnum() for ch in w) or (w.startswith("<") and w.endswith(">"))


_VOCAB_FUNCTION_MASKS: dict[int, tuple[weakref.ref, torch.Tensor]] = {}  # id(vocab) -> (vocab, mask)


def _function_mask(vocab: Vocab, oov: list[str]) -> torch.Tensor:
    """(n_ext,) bool: ids whose word cannot by itself realise a record (the vocabulary's part is
    computed once per vocabulary object, not once per input)."""
    ref, mask = _VOCAB_FUNCTION_MASKS.get(id(vocab), (None, None))
    if ref is None or ref() is not vocab:
        mask = torch.tensor([is_function_word(w) for w in vocab.itos])
        _VOCAB_FUNCTION_MASKS[id(vocab)] = (weakref.ref(vocab), mask)
    return torch.cat([mask, torch.tensor([is_function_word(w) for w in oov], dtype=torch.bool)])


def specific_value(record: Record) -> bool:
    """Whether saying ``record``'s value verbatim states the record: two or more words with a
    non-function word ("coffee shop", "5 out of 5"), or one word with a capital or a digit
    ("Italian", "1934"). A bare "low", "yes" or "riverside" is left to segments: "low" in
    "low price range" says nothing about a customer rating."""
    toks = record.value_tokens
    if not toks or all(is_function_word(t) for t in toks):
        return False
    return len(toks) >= 2 or any(ch.isupper() or ch.isdigit() for ch in record.value)


def _value_ids(vocab: Vocab, oov: list[str], records: list[Record]) -> dict[int, list[int]]:
    """Record id (1..K) -> extended ids of its value, for :func:`specific_value` records."""
    out = {}
    for k, r in enumerate(records, 1):
        if specific_value(r):
            toks = [t.lower() for t in r.value_tokens]
            ids = [
                vocab.stoi[t] if t in vocab.stoi else len(vocab) + oov.index(t) if t in oov else None
                for t in toks
            ]
            if None not in ids:
                out[k] = ids
    return out


def _mentioned_now(values: dict[int, list[int]], tokens: list[int]) -> frozenset:
    """Records whose value ends exactly at the last token of ``tokens``."""
    return frozenset(k for k, ids in values.items() if tokens[-len(ids) :] == ids)


def repeated_ngram_ends(tokens: list[int], n: int) -> list[int]:
    """Words that would repeat an ``n``-gram of ``tokens`` if emitted next (``n`` = 0: none)."""
    if n <= 0 or len(tokens) < n - 1:
        return []
    prefix = tokens[len(tokens) - n + 1 :]
    return [tokens[i + n - 1] for i in range(len(tokens) - n + 1) if tokens[i : i + n - 1] == prefix]


def _prepare(vocab: Vocab, records: list[Record]):
    enc = encode(vocab, records)
    batch = collate([enc], len(vocab))
    return enc, batch


def _word(vocab: Vocab, oov: list[str], i: int) -> str:
    return vocab.itos[i] if i < len(vocab) else oov[i - len(vocab)]


def _banned(n_ext: int) -> torch.Tensor:
    """Ids never emitted as words: <pad> <unk> <bos> <$>.  (n_ext,) bool."""
    ban = torch.zeros(n_ext, dtype=torch.bool)
    ban[[PAD_ID, UNK_ID, BOS_ID, EOSEG_ID]] = True
    return ban


@dataclass(frozen=True)
class ValueRules:
    """Decoding rules for values (docs/design.md §6): ``absent`` and ``own`` read the value lexicon
    (:mod:`segviz.lexicon`) and do nothing without one; ``names`` acts on unseen proper names (a
    capitalised value or WebNLG subject with a word outside the vocabulary): once its first
    content word is out it is copied whole, and its record's segment ends only after the value
    has been said. ``rules=None`` is the paper's decoding."""

    lexicon: dict[str, frozenset[str]] = field(default_factory=dict)  # word -> features (segviz.lexicon)
    absent: bool | None = True  # no lexicon word that the input does not hold (None: with a plan)
    own: bool | None = (
        True  # a segment says no other record's lexicon word, a null one none (None: with a plan)
    )
    names: bool = (
        True  # a proper name once begun is copied whole, and its record's segment says it (no lexicon)
    )
    fillers: bool = False  # with r / rm / a plan: a realised record may open a segment of function words only
    paraphrases: bool = False  # with r / rm: a lexicon word of a record's attribute or value mentions it


VALUE_RULES = ("none", "names", "absent", "auto", "all")  # the presets of value_rules()
RULE_SWITCHES = ("names", "absent", "own", "fillers", "paraphrases")  # what "+rule" / "-rule" switch on or off
DEFAULT_VALUE_RULES = "auto"
_PRESETS = {  # preset -> ValueRules fields (None: only when a plan is forced)
    "none": dict(names=False, absent=False, own=False, fillers=False, paraphrases=False),
    "names": dict(names=True, absent=False, own=False, fillers=False, paraphrases=False),
    "absent": dict(names=True, absent=True, own=False, fillers=False, paraphrases=False),
    "auto": dict(names=True, absent=None, own=None, fillers=False, paraphrases=False),
    "all": dict(names=True, absent=True, own=True, fillers=False, paraphrases=False),
}


def value_rules(name: str, lexicon: dict[str, frozenset[str]] | None = None) -> ValueRules | None:
    """The :class:`ValueRules` called ``name``: a preset of :data:`VALUE_RULES`, optionally
    followed by switches ``+rule`` / ``-rule`` (:data:`RULE_SWITCHES`), e.g. ``auto+fillers`` or
    ``none+fillers``; None when nothing is on (the paper's decoding). Presets: ``names`` completes
    unseen proper names, ``absent`` adds the absent rule, ``auto`` (the default) adds the absent
    and own rules when a plan is forced (where each segment must say its own record: the Plan
    editor), ``all`` adds them always. ``fillers`` lets a realised record open a segment of
    function words only under r / rm / a plan; ``paraphrases`` counts a record as mentioned (as a
    verbatim value is) once a lexicon word of its attribute or value is said ("moderately priced"
    for ``priceRange[moderate]``) under r / rm. Chosen on the tuning half of dev
    (docs/design.md §6)."""
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


NEGATIONS = frozenset("not no non n't nor never without".split())  # never a paraphrase alone


def _said_ids(
    vocab: Vocab, oov: list[str], records: list[Record], rules: ValueRules | None
) -> dict[int, frozenset[int]]:
    """Record id (1..K) -> ids of lexicon words that state its attribute or its value
    (``rules.paraphrases``): "priced" for ``priceRange``, "families" for ``familyFriendly[yes]``;
    negations, and words of another record's value, never."""
    if not rules or not rules.paraphrases or not rules.lexicon:
        return {}
    out = {}
    for k, r in enumerate(records, 1):
        mine = {f"attr:{r.attribute}", f"value:{r.attribute}={r.value.lower()}"}
        others = {t.lower() for j, q in enumerate(records, 1) if j != k for t in q.tokens}
        words = {w for w, fs in rules.lexicon.items() if fs & mine} - NEGATIONS - others
        out[k] = frozenset(_ids(vocab, oov, words))
    return out


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
) -> dict[int, list[tuple]]:
    """Record id (1..K) -> extended-id sequences of its unseen proper names (``rules.names``): its
    capitalised value and WebNLG subject when a word of it is out of the vocabulary, from their
    first content word ("The Quiet Walrus" -> quiet walrus: "the" begins too much). Names of 2+
    tokens only, or with ``values_only`` (the names a segment must say) the value alone.
    ``seen_too`` (under a forced plan, where every segment must say its own record): every name."""
    if not rules or not rules.names:
        return {}
    out: dict[int, list[tuple]] = {}
    for k, r in enumerate(records, 1):
        for text in (r.value,) if values_only else (r.value, r.subject or ""):
            toks = tokenize(text.replace("_", " ").strip().strip('"'))
            toks = toks[next((i for i, t in enumerate(toks) if not is_function_word(t)), len(toks)) :]
            unseen = any(t not in vocab.stoi for t in toks)  # a name the model cannot say from its vocabulary
            if (
                (unseen or seen_too)
                and len(toks) >= (1 if values_only else 2)
                and any(ch.isupper() for ch in text)
            ):
                ids = tuple(vocab.stoi[t] if t in vocab.stoi else len(vocab) + oov.index(t) for t in toks)
                out.setdefault(k, []).append(ids)
    return out


def _owed_after(owed: tuple, phrases: list[tuple], v: int) -> tuple:
    """Tokens still owed after emitting ``v``: the rest of the name being copied, or of a name
    that ``v`` begins."""
    if owed:
        return owed[1:]
    return next((p[1:] for p in phrases if p[0] == v), ())


def _just_said(tokens: list[int], phrases: list[tuple]) -> list[int]:
    """The words of a name that ``tokens`` end with (not to be repeated right away)."""
    return [t for p in phrases if len(tokens) >= len(p) and tuple(tokens[-len(p) :]) == p for t in p]


def _force(row: torch.Tensor, raw: torch.Tensor, owed: tuple) -> None:
    """Leave only the next owed token in ``row`` (with its unmasked score)."""
    keep = raw[owed[0]].clone()
    row.fill_(-math.inf)
    row[owed[0]] = keep


@dataclass
class _SegHyp:
    score: float
    tokens: list[int]
    segments: list[list]  # [start, end, state]
    attn: list[torch.Tensor]
    k: int  # current record, -1 before the first segment
    boundary: bool  # the next action chooses a record (after "$" or at the start)
    seg_len: int
    realised: frozenset
    plan_pos: int  # plan records realised so far
    state: tuple  # LSTM (h, c) after the last token, each (H,)
    d: torch.Tensor  # decoder output that reads the next token (H,)
    A_last: torch.Tensor  # context of the last token under k (H,)
    content: bool = False  # the current segment has a word that is not a function word
    mentioned: frozenset = frozenset()  # records whose value appears verbatim in the tokens
    owed: tuple = ()  # rest of a proper name being copied (ValueRules.names)
    named: bool = False  # the current segment has said its record's proper name whole
    filler: bool = False  # a realised record's segment again: function words and punctuation only


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

    @torch.no_grad()
    def search(
        self,
        records: list[Record],
        constraints: str = "rm",
        beam: int = 5,
        plan: list[int] | None = None,
        max_len: int | None = None,
        length_penalty: float = 1.0,
        sample: torch.Generator | None = None,
        content_rule: bool | None = None,
        mentions: bool | None = None,
        no_repeat_ngram: int = 0,
        rules: ValueRules | None = None,
    ) -> tuple[_SegHyp | None, list[str], torch.Tensor]:
        """Best hypothesis (or ``None``), the source OOV words and the source record ids.

        ``plan`` is a list of record ids (1..K): the segment records must follow it in order
        (null segments allowed between) and ``<eos>`` waits until it is complete. ``sample``
        draws each record choice from the transition model instead of maximising (words stay
        greedy); used with ``beam=1`` for :func:`sample_structures`. ``content_rule`` (default:
        on for ``r``, ``rm`` and plans) keeps a real record's segment open until it holds a word
        that is not a function word. ``mentions`` (default: on for ``r`` / ``rm`` without a plan)
        counts a record as realised once its value appears verbatim anywhere in the text.
        ``no_repeat_ngram`` = n > 0 forbids any word n-gram twice in one output. ``rules``: the
        lexicon rules of :class:`ValueRules` (none by default).
        """
        if constraints not in CONSTRAINTS:
            raise ValueError(f"constraints must be one of {CONSTRAINTS}, got {constraints!r}")
        model, V = self.model, len(self.vocab)
        model.eval()
        enc_ex, batch = _prepare(self.vocab, records)
        S = len(records) + 1
        n_ext = V + len(enc_ex.oov)
        enc = model.encode(batch)
        max_len = max_len or 3 * len(enc_ex.src) + 20
        L = model.cfg.max_seg_len
        ban = _banned(n_ext)
        ban[EOSEG_ID] = False  # "$" is an action here
        ban[_absent_ids(self.vocab, enc_ex.oov, records, rules, bool(plan))] = True
        own_mask = _own_mask(self.vocab, enc_ex.oov, records, rules, bool(plan))
        phrases = _phrases(
            self.vocab, enc_ex.oov, records, rules, seen_too=bool(plan)
        )  # under a plan: every name
        must = _phrases(self.vocab, enc_ex.oov, records, rules, values_only=True, seen_too=bool(plan))
        if content_rule is None:
            content_rule = constraints != "none" or bool(plan)
        func = _function_mask(self.vocab, enc_ex.oov) if content_rule else None
        func_all = _function_mask(self.vocab, enc_ex.oov)  # (n_ext,)
        if mentions is None:
            mentions = constraints != "none" and not plan
        values = _value_ids(self.vocab, enc_ex.oov, records) if mentions else {}
        said = _said_ids(self.vocab, enc_ex.oov, records, rules) if mentions else {}
        all_recs = frozenset(range(1, S))
        h0, c0 = enc.state0
        d, state = model.step(torch.tensor([BOS_ID]), (h0, c0))
        hyps = [
            _SegHyp(
                0.0,
                [],
                [],
                [],
                -1,
                True,
                0,
                frozenset(),
                0,
                (state[0][0], state[1][0]),
                d[0],
                torch.zeros_like(d[0]),
            )
        ]
        finished: list[_SegHyp] = []
        for _ in range(3 * max_len + 2 * S):
            cands: list[tuple[float, int, str, int]] = []  # (score, hyp, kind, value)
            words = [m for m, h in enumerate(hyps) if not h.boundary]
            bounds = [m for m, h in enumerate(hyps) if h.boundary]
            dist = pos = a = A = None
            if words:
                dW = torch.stack([hyps[m].d for m in words])
                kW = torch.tensor([hyps[m].k for m in words])
                dist, pos, a, A = model.token_dist(enc, dW, kW, n_ext - V)  # (M_w, n_ext)
                raw = dist
                dist = dist.masked_fill(ban, -math.inf)
                if own_mask is not None:
                    dist = dist.masked_fill(own_mask[kW.clamp(min=0)], -math.inf)
                for i, m in enumerate(words):
                    h = hyps[m]
                    row = dist[i]
                    if h.seg_len == 0:  # segments are non-empty
                        row[EOSEG_ID] = row[EOS_ID] = -math.inf
                    elif h.seg_len >= L + (
                        max(map(len, must[h.k])) if must.get(h.k) and not h.named and not h.filler else 0
                    ):  # cut
                        keep = row[[EOSEG_ID, EOS_ID]].clone()
                        row.fill_(-math.inf)
                        row[[EOSEG_ID, EOS_ID]] = keep
                    if not self._may_end(h, constraints, plan, all_recs):
                        row[EOS_ID] = -math.inf
                    if h.filler:  # a filler segment says nothing: function words, punctuation, "$"
                        row[~func_all] = -math.inf
                    if must.get(h.k) and not h.named and not h.filler:  # a proper name ends its segment only once said whole
                        row[EOSEG_ID] = row[EOS_ID] = -math.inf
                    if content_rule and h.k > 0 and not h.content and not h.filler:  # nothing said yet: no end
                        row[EOSEG_ID] = row[EOS_ID] = -math.inf
                    rep = repeated_ngram_ends(h.tokens, no_repeat_ngram)
                    if rep:
                        row[rep] = -math.inf
                    if h.owed:  # a proper name is being copied: only its next token
                        _force(row, raw[i], h.owed)
                    else:  # a name just said whole: none of its words again at once ("Café café")
                        row[_just_said(h.tokens, phrases.get(h.k, []))] = -math.inf
                    if sample is not None:
                        w = int(row.argmax())
                        cands.append((h.score + float(row[w]), m, "w", w))
                    else:
                        top = row.topk(min(beam, n_ext))
                        cands += [
                            (h.score + float(v), m, "w", int(w))
                            for v, w in zip(top.values, top.indices, strict=True)
                        ]
            if bounds:
                dB = torch.stack([hyps[m].d for m in bounds])
                kB = torch.tensor([max(hyps[m].k, 0) for m in bounds])
                trans = model.transition_step(enc, torch.stack([hyps[m].A_last for m in bounds]), dB, kB)
                init = model.initial(enc, dB)
                for i, m in enumerate(bounds):
                    h = hyps[m]
                    row = (trans[i] if h.k >= 0 else init[i]).clone()
                    row[row < dp.NEG / 2] = -math.inf
                    blocked = self._blocked(h, constraints, plan, S)
                    if rules is not None and rules.fillers:  # docs/design.md §6: filler segments
                        blocked = [j for j in blocked if j not in h.realised | h.mentioned]
                    if blocked:
                        row[blocked] = -math.inf
                    if sample is not None:
                        if torch.isfinite(row).any():
                            j = int(torch.multinomial(torch.softmax(row, 0), 1, generator=sample))
                            cands.append((h.score + float(row[j]), m, "r", j))
                    else:
                        cands += [
                            (h.score + float(row[j]), m, "r", j) for j in range(S) if math.isfinite(row[j])
                        ]
            cands = [c for c in cands if math.isfinite(c[0])]
            if not cands:
                break
            cands.sort(key=lambda c: -c[0])
            new_hyps: list[_SegHyp] = []
            advance: list[tuple[_SegHyp, int]] = []  # hypotheses that emitted a word
            wpos = {m: i for i, m in enumerate(words)}
            # two beams: hypotheses about to choose a record (after "$") and hypotheses inside a
            # segment keep `beam` places each, so that boundary actions never starve the words
            room = {True: 1 if sample is not None else beam, False: 1 if sample is not None else beam}
            for score, m, kind, v in cands:
                if room[True] <= 0 and room[False] <= 0:
                    break
                next_is_boundary = kind == "w" and v == EOSEG_ID
                if room[next_is_boundary] <= 0:
                    continue
                room[next_is_boundary] -= 1
                if sample is not None:
                    room = {True: 0, False: 0}
                h = hyps[m]
                if kind == "r":
                    segs = [list(x) for x in h.segments] + [[len(h.tokens), len(h.tokens), v]]
                    filler = v > 0 and v in h.realised | h.mentioned and constraints != "none" or (
                        bool(plan) and v in h.realised
                    )
                    plan_pos = h.plan_pos + (1 if plan and v > 0 and not filler else 0)
                    realised = h.realised | {v} if v > 0 else h.realised
                    new_hyps.append(
                        _SegHyp(
                            score,
                            h.tokens,
                            segs,
                            h.attn,
                            v,
                            False,
                            0,
                            realised,
                            plan_pos,
                            h.state,
                            h.d,
                            h.A_last,
                            False,
                            h.mentioned,
                            filler=filler,
                        )
                    )
                elif v == EOSEG_ID:
                    new_hyps.append(
                        _SegHyp(
                            score,
                            h.tokens,
                            h.segments,
                            h.attn,
                            h.k,
                            True,
                            h.seg_len,
                            h.realised,
                            h.plan_pos,
                            h.state,
                            h.d,
                            h.A_last,
                            h.content,
                            h.mentioned,
                        )
                    )
                else:
                    i = wpos[m]
                    segs = [list(x) for x in h.segments]
                    segs[-1][1] = len(h.tokens) + 1
                    tokens = h.tokens + [v]
                    mentioned = h.mentioned | _mentioned_now(values, tokens) if values else h.mentioned
                    mentioned = mentioned | {k for k, ids in said.items() if v in ids} if said else mentioned
                    nh = _SegHyp(
                        score,
                        tokens,
                        segs,
                        h.attn + [(pos[i], a[i])],
                        h.k,
                        False,
                        h.seg_len + 1,
                        h.realised,
                        h.plan_pos,
                        h.state,
                        h.d,
                        A[i],
                        h.content or (func is not None and not bool(func[v])),
                        mentioned,
                        _owed_after(h.owed, phrases.get(h.k, []), v),
                        h.named
                        or any(
                            tokens[-len(q) :] == list(q) and len(q) <= h.seg_len + 1
                            for q in must.get(h.k, ())
                        ),
                        filler=h.filler,
                    )
                    if v == EOS_ID:
                        finished.append(nh)
                    elif len(nh.tokens) >= max_len:  # length budget spent: keep it only if it may end
                        if self._may_end(nh, constraints, plan, all_recs):
                            finished.append(nh)
                    else:
                        new_hyps.append(nh)
                        advance.append((nh, v))
            if advance:  # advance the decoder for the word-emitting hypotheses in one batched step
                y = torch.tensor([v if v < V else UNK_ID for _, v in advance])
                hs = torch.stack([nh.state[0] for nh, _ in advance])
                cs = torch.stack([nh.state[1] for nh, _ in advance])
                d_new, (hs, cs) = model.step(y, (hs, cs))
                for i, (nh, _) in enumerate(advance):
                    nh.state, nh.d = (hs[i], cs[i]), d_new[i]
            hyps = new_hyps
            if not hyps or _beam_done(finished, hyps, beam, length_penalty):
                break
        best = max(finished, key=lambda f: _norm(f, length_penalty)) if finished else None
        if best is not None:  # record-local attention -> rows over all source tokens
            best.attn = [model.full_attention(enc, p, a) for p, a in best.attn]
        return best, enc_ex.oov, torch.tensor(enc_ex.src_rec)

    @staticmethod
    def _blocked(h: _SegHyp, constraints: str, plan, S) -> list[int]:
        """Records that hypothesis ``h`` may not choose next."""
        blocked = set()
        if plan:
            nxt = plan[h.plan_pos] if h.plan_pos < len(plan) else None
            blocked |= {j for j in range(1, S) if j != nxt}
        elif constraints in ("r", "rm"):
            blocked |= set(h.realised | h.mentioned)
        return sorted(blocked)

    @staticmethod
    def _may_end(h: _SegHyp, constraints: str, plan, all_recs) -> bool:
        if plan:
            return h.plan_pos >= len(plan)
        if constraints == "rm":
            return (h.realised | h.mentioned) >= all_recs
        return True


def _norm(h, length_penalty: float) -> float:
    return h.score / (max(len(h.tokens), 1) ** length_penalty)


def _beam_done(
    finished, alive, beam: int, length_penalty: float, key=lambda h: (h.score, len(h.tokens))
) -> bool:
    """Stop once ``beam`` outputs are finished and none of the live hypotheses ranks above the
    best of them by length-normalised score (stopping at the first ``beam`` finished outputs
    would favour short texts that leave records out)."""
    if len(finished) < beam:
        return False

    def norm(h):
        score, n = key(h)
        return score / (max(n, 1) ** length_penalty)

    return max(norm(h) for h in alive) <= max(norm(f) for f in finished)


def _result_from_seg(
    hyp: _SegHyp, vocab: Vocab, oov, records, src_rec, system, constraints, plan, fallback, t0
) -> GenerationResult:
    ids = hyp.tokens[:-1] if hyp.tokens and hyp.tokens[-1] == EOS_ID else hyp.tokens
    T = len(ids)
    tokens = [_word(vocab, oov, i) for i in ids]
    segments = []
    for s, e, j in hyp.segments:
        e = min(e, T)
        if e > s:
            segments.append((s, e, j if j > 0 else None))
    attn = [a.tolist() for a in hyp.attn[:T]]
    return GenerationResult(
        system=system,
        records=_records_info(records),
        tokens=tokens,
        text=detokenize(tokens, records),
        segments=segments,
        attention=attn,
        source_tokens=[t for r in records for t in r.tokens],
        record_of_source_token=src_rec.tolist(),
        plan=plan,
        constraints=constraints,
        scores={"log_prob": hyp.score, "length": len(hyp.tokens)},
        fallback_used=fallback,
        elapsed_ms=(time.perf_counter() - t0) * 1000,
    )


def generate_seg(
    model: SegmentModel,
    vocab: Vocab,
    records: list[Record],
    constraints: str = "rm",
    beam: int = 5,
    plan: list[int] | None = None,
    system: str = "seg",
    length_penalty: float = 1.0,
    max_len: int | None = None,
    no_repeat_ngram: int = NO_REPEAT_NGRAM,
    content_rule: bool | None = None,
    mentions: bool | None = None,
    rules: ValueRules | None = None,
) -> GenerationResult:
    """Segment model output for ``records`` under ``constraints`` (optionally a forced ``plan``);
    ``content_rule`` / ``mentions`` / ``rules`` as in :meth:`SegmentDecoder.search` (default:
    content and mention rules on with r/rm, no value rules)."""
    t0 = time.perf_counter()
    if plan is not None:
        K = len(records)
        if sorted(plan) != sorted(set(plan)) or any(not 1 <= p <= K for p in plan):
            raise ValueError(f"plan must list distinct record ids in 1..{K}, got {plan}")
    dec = SegmentDecoder(model, vocab)
    common = dict(max_len=max_len, length_penalty=length_penalty, no_repeat_ngram=no_repeat_ngram)
    # what the constraints ask, then with a 4x wider beam, then without constraints (the result
    # says so), then without the value rules too
    tries = [(constraints, beam, plan, rules, content_rule, mentions), (constraints, 4 * beam, plan, rules, content_rule, mentions),
             ("none", beam, None, rules, None, None), ("none", beam, None, None, None, None)]  # fmt: skip
    for n, (level, width, p, r, content, ment) in enumerate(tries):
        if n == 3 and rules is None:
            break
        hyp, oov, src_rec = dec.search(
            records, level, width, p, rules=r, content_rule=content, mentions=ment, **common
        )
        if hyp is not None:
            break
        if n == 1:
            log.warning(
                "constraints %r (plan %s) could not be met; falling back to unconstrained decoding",
                constraints,
                plan,
            )
    fallback = n >= 2
    if hyp is None:  # pragma: no cover - unconstrained search always ends at max_len
        raise RuntimeError("decoding produced no hypothesis")
    return _result_from_seg(hyp, vocab, oov, records, src_rec, system, constraints, plan, fallback, t0)


def sample_structures(
    model: SegmentModel, vocab: Vocab, records: list[Record], n: int = 5, seed: int = 0, beam: int = 5
) -> list[GenerationResult]:
    """Diverse structures (paper appendix B): sample record orders from the transition model,
    then decode each distinct plan with plan forcing. Returns up to ``n`` distinct plans."""
    gen = torch.Generator().manual_seed(seed)
    dec = SegmentDecoder(model, vocab)
    plans: list[list[int]] = []
    for _ in range(4 * n):
        # sample under +R (sampling under +RM can wander until the length budget runs out);
        # records the sample skipped are appended to its order
        hyp, _, _ = dec.search(records, "r", beam=1, sample=gen)
        if hyp is None:
            continue
        order = []
        for _, _, j in hyp.segments:
            if j > 0 and j not in order:
                order.append(j)
        order += [j for j in range(1, len(records) + 1) if j not in order]
        if order not in plans:
            plans.append(order)
        if len(plans) >= n:
            break
    return [
        generate_seg(model, vocab, records, "rm", beam, plan=p, system="seg (sampled plan)") for p in plans
    ]


# ----- PG --------------------------------------------------------------------------------------


@torch.no_grad()
def generate_pg(
    model: PGModel,
    vocab: Vocab,
    records: list[Record],
    beam: int = 5,
    max_len: int | None = None,
    system: str = "pg",
    length_penalty: float = 1.0,
    no_repeat_ngram: int = NO_REPEAT_NGRAM,
    rules: ValueRules | None = None,
) -> GenerationResult:
    """Beam search for the pointer-generator baseline (no structural constraints exist for it;
    ``no_repeat_ngram`` and ``rules.absent`` as for the segment model)."""
    t0 = time.perf_counter()
    model.eval()
    V = len(vocab)
    enc_ex, batch = _prepare(vocab, records)
    n_ext = V + len(enc_ex.oov)
    enc = model.encode(batch)
    ban = _banned(n_ext)
    ban[_absent_ids(vocab, enc_ex.oov, records, rules)] = True
    names = [p for ps in _phrases(vocab, enc_ex.oov, records, rules).values() for p in ps]
    max_len = max_len or 3 * len(enc_ex.src) + 20
    st = model.start_state(enc)
    hyps = [(0.0, [], [], (st[0][0], st[1][0], st[2][0]), ())]  # (score, ids, attention, state, owed)
    finished = []
    for _ in range(max_len):
        y = torch.tensor([h[1][-1] if h[1] and h[1][-1] < V else (UNK_ID if h[1] else BOS_ID) for h in hyps])
        state = tuple(torch.stack([h[3][i] for h in hyps]) for i in range(3))
        raw, alpha, state = model.token_dist(enc, y, state, n_ext - V)
        logp = raw.masked_fill(ban, -math.inf)
        for m, h in enumerate(hyps):
            rep = repeated_ngram_ends(h[1], no_repeat_ngram)
            if rep:
                logp[m, rep] = -math.inf
            if h[4]:  # a proper name is being copied: only its next token
                _force(logp[m], raw[m], h[4])
            else:
                logp[m, _just_said(h[1], names)] = -math.inf
        total = logp + torch.tensor([h[0] for h in hyps]).unsqueeze(1)
        flat = total.view(-1)
        new = []
        for idx in flat.topk(min(2 * beam, flat.numel())).indices.tolist():
            m, w = divmod(idx, n_ext)
            h = hyps[m]
            nh = (
                float(flat[idx]),
                h[1] + [w],
                h[2] + [alpha[m]],
                (state[0][m], state[1][m], state[2][m]),
                _owed_after(h[4], names, w),
            )
            (finished if w == EOS_ID else new).append(nh)
            if len(new) >= beam:
                break
        hyps = new
        if not hyps or _beam_done(finished, hyps, beam, length_penalty, key=lambda h: (h[0], len(h[1]))):
            break
    pool = finished or hyps

    def norm(h):
        return h[0] / (max(len(h[1]), 1) ** length_penalty)

    score, ids, attn, _, _ = max(pool, key=norm)
    ids = ids[:-1] if ids and ids[-1] == EOS_ID else ids
    tokens = [_word(vocab, enc_ex.oov, i) for i in ids]
    return GenerationResult(
        system=system,
        records=_records_info(records),
        tokens=tokens,
        text=detokenize(tokens, records),
        segments=[],
        attention=[a.tolist() for a in attn[: len(ids)]],
        source_tokens=[t for r in records for t in r.tokens],
        record_of_source_token=list(enc_ex.src_rec),
        constraints=None,
        scores={"log_prob": score, "length": len(ids) + 1},
        elapsed_ms=(time.perf_counter() - t0) * 1000,
    )


# ----- forced alignment --------------------------------------------------------------------------


@torch.no_grad()
def force_align(
    model: SegmentModel, vocab: Vocab, records: list[Record], tokens: list[str]
) -> list[tuple[int, int, int | None]]:
    """Viterbi segmentation and record of any tokenised text for ``records``.

    Returns ``(start, end, record)`` over ``tokens`` (record 1..K or ``None`` for null); the
    segments cover the text exactly, in order.
    """
    if not tokens:
        return []
    model.eval()
    enc_ex = encode(vocab, records, tokens)
    batch = collate([enc_ex], len(vocab))
    pot = model.potentials(batch)
    _, paths = dp.viterbi(
        pot.log_init, pot.log_trans, pot.log_emit, pot.log_end, batch.tgt_len, model.cfg.max_seg_len
    )
    T = len(tokens)  # drop the trailing <eos>
    out = []
    for s, e, j in paths[0]:
        e = min(e, T)
        if e > s:
            out.append((s, e, j if j > 0 else None))
    return out


def align_result(
    result: GenerationResult, model: SegmentModel, vocab: Vocab, records: list[Record]
) -> GenerationResult:
    """Fill ``result.segments`` by forced alignment (used for PG and uploaded outputs)."""
    result.segments = force_align(model, vocab, records, result.tokens)
    return result
