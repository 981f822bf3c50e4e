"""Value lexicon: the words that state a fact of the input, learnt from the training data.

Every record holds *features*: its attribute (``attr:familyFriendly``), its value
(``value:familyFriendly=no``) and the content words of its value and subject (``tok:eagle``). A
word ``w`` belongs to feature ``f`` when the references say it with ``f`` and almost never
without it: ``P(w in ref | f not in input) < THRESHOLD`` and ``P(w in ref | f in input) >=
MIN_RATE`` (for ``tok:`` features only the token itself), or, with ``--min-lift L``, a rarer word
said with ``f`` in at least ``MIN_SUPPORT`` references and ``L`` times more often with ``f`` than
without it ("end" of "high-end", said in 0.6% of references with a price range and in none
without). So "family" and "friendly" belong to
``attr:familyFriendly``, "non" to ``value:familyFriendly=no``, "eagle" to ``tok:eagle``;
"restaurant", which references say of any venue, belongs to nothing.

Two decoding rules read it (docs/design.md §6; named switches of
:class:`segviz.decode.ValueRules`):

- ``absent``: no lexicon word none of whose features the input holds ("near The Portland Arms"
  when ``near`` is "The Old Mill"; "family friendly" with no ``familyFriendly`` record);
- ``own``: inside the segment of record ``k`` no word of another record's features that ``k``
  does not hold too, and inside a null segment no lexicon word of any record: each segment says
  only its own record, which is what a forced plan relies on.

With ``--relations`` (segment-model checkpoints) it learns, from the same alignment, which
attributes' segments say each word that is not a value (:func:`relation_words`: "oclc" only
``OCLC_number``'s, "born" those of birth places and dates); the ``relations`` switch of
checker-guided decoding reads it (:func:`segviz.rerank.relation_faults`).

With ``--segments`` (segment-model checkpoints) it also learns which words the segments of an
attribute say of which of its values, from the model's own Viterbi segmentation of the training
references (:func:`segment_words`): "low" in a ``customer rating`` segment says ``low`` or ``1 out
of 5``, never ``5 out of 5``. The ``values`` rule reads it: inside record ``k``'s segment no word
that its attribute's segments say only of other values ("a low-rated" for ``customer
rating[5 out of 5]``).

``python -m segviz.lexicon --checkpoint DIR`` writes ``DIR/lexicon.json`` from the training
split of the checkpoint's dataset, so that decoding needs no data at run time.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from segviz.data import DataError, Example, default_data_dir, load_split
from segviz.records import Record, date_month, is_function_word, strip_accents, tokenize
from segviz.records import relation_words as relation_words_of

log = logging.getLogger(__name__)

FILE = "lexicon.json"
THRESHOLD = 0.01  # max share of references that say the word although their input lacks the feature
MIN_RATE = 0.05  # min share of references that say it when their input holds the feature
MIN_SUPPORT = 20  # features held by fewer training inputs are not learnt (tok: features excepted)
NULL = ("", "")  # the null record's key in segment counts; "" in SegmentWords: the words null segments never say
SEGMENT_LIFT = 10  # a segment word is said this many times more often of its values than of any other
ATTRIBUTE_LIFT = 2.0  # ... and by its attribute's segments this many times more often than by other records' (0: off)

Lexicon = dict[str, frozenset[str]]  # word -> features it states
SegmentWords = dict[str, dict[str, frozenset[str]]]  # attribute -> word -> the values its segments say it of
Relations = dict[str, frozenset[str]]  # word -> the attributes whose segments may say it ("": the attributes judged)


def _is_content(word: str) -> bool:
    return not is_function_word(word)


_FOLD = str.maketrans({"ı": "i", "ø": "o", "ł": "l", "đ": "d", "æ": "ae", "œ": "oe", "ß": "ss"})  # letters NFKD keeps


def plain_word(word: str) -> str:
    """``word`` lower-cased, without accents or a possessive ending ("Hüseyin's" -> "huseyin",
    "Anıtı" -> "aniti"): how :func:`relation_words` and the ``relations`` fault compare words."""
    w = strip_accents(word.lower()).translate(_FOLD)
    return w[:-2] if w.endswith("'s") else w.rstrip("'")


def plain_value_words(records: Iterable[Record]) -> set[str]:
    """:func:`value_words` read by :func:`plain_word`, and the month of a date value ("august"
    of ``"1930-08-05"``): the words that say the input's own values, never relation words."""
    words = {plain_word(w) for w in value_words(records)}
    return (words | {m for r in records if (m := date_month(r.value))}) - {""}


def alien_relation_words(records: list[Record], relations: Relations) -> frozenset[str]:
    """The relation words (:func:`relation_words`, read by :func:`plain_word`) none of whose
    relations the input holds: "born" (birth places and dates) beside a satellite's
    ``launchDate``. A word of the input's values and subjects or of its relations' names, or such
    a word with a plural "s" ("ingredients" of an unseen ``mainIngredient``), is the input's own.
    What the ``alien`` rule bans (``decode.rules._alien_ids``) and the *relations* suite counts
    (:func:`alien_words`)."""
    attrs = {r.attribute for r in records}
    held = plain_value_words(records) | {plain_word(w) for w in relation_words_of(records)}
    held |= {w + "s" for w in held}
    return frozenset(w for w, owners in relations.items() if w and not owners & attrs and w not in held)


def alien_words(records: list[Record], text: str, relations: Relations) -> list[str]:
    """The words of ``text`` that say a relation the input does not hold
    (:func:`alien_relation_words`): "ingredients" of "Native americans are one of the
    ingredients in the United States" for an ``ethnicGroup``."""
    alien = alien_relation_words(records, relations)
    return [w for w in tokenize(text) if plain_word(w) in alien]


def value_words(records: Iterable[Record]) -> set[str]:
    """Lower-cased content words of the records' values (WebNLG: of objects and subjects)."""
    words = set()
    for r in records:
        subject = tokenize(r.subject.replace("_", " ")) if r.subject else []
        words |= {t.lower() for t in r.value_tokens + subject if _is_content(t)}
    return words


def features(record: Record) -> set[str]:
    """What ``record`` holds: ``attr:A``, ``value:A=V`` and ``tok:W`` for its value's words."""
    return {f"attr:{record.attribute}", f"value:{record.attribute}={record.value.lower()}"} | {
        f"tok:{w}" for w in value_words([record])
    }


def _belongs(with_f: int, without_f: int, n_f: int, n: int, rates: tuple[float, float, float | None]) -> bool:
    """Whether a word said in ``with_f`` of the ``n_f`` references holding a feature and in
    ``without_f`` of the ``n - n_f`` others belongs to it; ``rates`` = (threshold, min_rate,
    min_lift) of :func:`build`. The lift uses add-one counts without the feature (none seen is
    not infinitely rare)."""
    threshold, min_rate, min_lift = rates
    if n <= n_f or without_f / (n - n_f) >= threshold:
        return False
    lifted = min_lift is not None and with_f >= MIN_SUPPORT and (
        with_f / n_f >= min_lift * (without_f + 1) / (n - n_f + 1)
    )
    return with_f / n_f >= min_rate or lifted


def build(
    examples: list[Example],
    threshold: float = THRESHOLD,
    min_rate: float = MIN_RATE,
    min_lift: float | None = None,
) -> Lexicon:
    """Word -> features for ``examples`` (one per reference; see the module docstring;
    ``min_lift`` None: the share ``min_rate`` alone admits a word)."""
    n_f, n_w, n_wf = Counter(), Counter(), Counter()
    for ex in examples:
        feats = set().union(*(features(r) for r in ex.records))
        words = {w for w in ex.target if _is_content(w)}
        n_f.update(feats)
        n_w.update(words)
        for w in words:
            n_wf.update((w, f) for f in feats if not f.startswith("tok:") or f == f"tok:{w}")
    N, out = len(examples), {}
    for (w, f), with_f in n_wf.items():
        without_f = n_w[w] - with_f
        if f.startswith("tok:") or n_f[f] >= MIN_SUPPORT:
            if _belongs(with_f, without_f, n_f[f], N, (threshold, min_rate, min_lift)):
                out.setdefault(w, set()).add(f)
    return {w: frozenset(fs) for w, fs in sorted(out.items())}


def _aligned_counts(model, vocab, examples: list[Example], batch_size: int = 64) -> tuple[Counter, Counter, Counter]:
    """Viterbi-align every reference to its records (paper eq. 4-5 with max for sum): how many
    segments of each ``(attribute, value)`` (``NULL`` for the null record) there are, how
    many of them say each content word ``((attribute, value), word)``, and the same for the
    words of letters alone that are not among their input's value words, read by
    :func:`plain_word` (:func:`plain_value_words`; what :func:`relation_words` reads)."""
    import torch

    from segviz import dp
    from segviz.data import collate, encode
    from segviz.decode.beam import _clip

    n_seg, n_word, n_frame = Counter(), Counter(), Counter()
    model.eval()
    with torch.no_grad():
        for b in range(0, len(examples), batch_size):
            chunk = examples[b : b + batch_size]
            batch = collate([encode(vocab, ex.records, ex.target) for ex in chunk], len(vocab))
            _, paths = dp.viterbi(model.potentials(batch).chain, batch.tgt_len, model.cfg.max_seg_len)
            for ex, path in zip(chunk, paths, strict=True):
                values = plain_value_words(ex.records)
                for s, e, j in _clip(path, len(ex.target)):
                    key = (ex.records[j - 1].attribute, ex.records[j - 1].value.lower()) if j else NULL
                    words = {w for w in ex.target[s:e] if _is_content(w)}
                    n_seg[key] += 1
                    n_word.update((key, w) for w in words)
                    n_frame.update((key, p) for p in {plain_word(w) for w in words} - values if p.isalpha())
    return n_seg, n_word, n_frame


def segment_words(
    model,
    vocab,
    examples: list[Example],
    threshold: float = THRESHOLD,
    min_rate: float = MIN_RATE,
    attribute_lift: float = ATTRIBUTE_LIFT,
) -> SegmentWords:
    """Attribute -> word -> values: a content word belongs to the values of an attribute whose
    segments say it in at least ``min_rate`` of them (and ``MIN_SUPPORT`` segments), when the
    segments of every other value of that attribute say it in under ``threshold`` of theirs and
    ``SEGMENT_LIFT`` times less often (add-one counts) than the least of its own, and (session
    25, ``attribute_lift``; 0 is off) the attribute's segments say it at least that many times
    as often as the other records' segments (:func:`_attribute_words`). Under ``""``: the words
    null segments never say (of the segments that say a word said ``MIN_SUPPORT`` times or
    more, under ``threshold`` are null ones), each with no values."""
    return _segment_words(*_aligned_counts(model, vocab, examples)[:2], threshold, min_rate, attribute_lift)


def _segment_words(
    n_seg: Counter, n_word: Counter, threshold: float, min_rate: float, attribute_lift: float = ATTRIBUTE_LIFT
) -> SegmentWords:
    """:func:`segment_words` from the Viterbi counts of :func:`_aligned_counts`."""
    values: dict[str, list[str]] = {}
    for a, v in n_seg:
        if (a, v) != NULL:
            values.setdefault(a, []).append(v)
    ours = _attribute_words(n_seg, n_word, attribute_lift)
    out: SegmentWords = {"": _null_never(n_word, threshold)}
    for a, w in sorted({(key[0], w) for key, w in n_word if key != NULL}):  # each attribute's word once
        if (a, w) in ours and (vs := _values_of(a, w, values[a], n_seg, n_word, (threshold, min_rate))):
            out.setdefault(a, {})[w] = vs
    return out


def _attribute_words(n_seg: Counter, n_word: Counter, lift: float) -> set[tuple[str, str]]:
    """The ``(attribute, word)`` pairs whose attribute's segments say the word, per segment, at
    least ``lift`` times as often as the other records' segments (null ones aside): "located",
    said alike in the segments of names, foods and venues, is no word of a name, and "coffee
    shop", which the eatType's segments say, no word of a food that coffee shops serve
    (session 25: "Located near Burger King …, is a … place called '." stated
    ``name[Alimentum]`` by "located"). Every pair when ``lift`` is 0."""
    segs, said, words = Counter(), Counter(), Counter()
    for (a, _), n in n_seg.items():
        segs[a] += n if a else 0
    for ((a, _), w), n in n_word.items():
        if a:
            said[a, w] += n
            words[w] += n
    total = sum(segs.values())
    out = set()
    for (a, w), n in said.items():
        others = (words[w] - n) / max(total - segs[a], 1)  # rate in the other records' segments
        if lift <= 0 or n / segs[a] >= lift * others:
            out.add((a, w))
    return out


def _values_of(a: str, w: str, values: list[str], n_seg: Counter, n_word: Counter, rates) -> frozenset[str]:
    """The values of attribute ``a`` that word ``w`` says in its segments (:func:`segment_words`;
    empty when it says none, or all)."""
    threshold, min_rate = rates
    rate = {v: n_word[((a, v), w)] / n_seg[(a, v)] for v in values}
    mine = {v for v, r in rate.items() if r >= min_rate and n_word[((a, v), w)] >= MIN_SUPPORT}
    others = [v for v in values if v not in mine]
    if not mine or not others or max(rate[v] for v in others) >= threshold:
        return frozenset()
    smoothed = max((n_word[((a, v), w)] + 1) / (n_seg[(a, v)] + 1) for v in others)
    return frozenset(mine) if min(rate[v] for v in mine) >= SEGMENT_LIFT * smoothed else frozenset()


RELATION_SHARE = 0.9  # a relation word is said this share of times (or more) in its relations' segments
RELATION_OWNERS = 3  # ... and names at most this many relations (a word of many, "located", names none)
RELATION_VALUES = 2  # ... each owner saying it of at least this many of its values


def relation_words(n_seg: Counter, n_frame: Counter, threshold: float = THRESHOLD, min_rate: float = MIN_RATE) -> Relations:
    """Word -> the attributes (WebNLG: relations) whose segments may say it, from the Viterbi
    counts of :func:`_aligned_counts` (``n_frame``: the words that are not their input's values)
    summed over values: a content word is a relation word when the attributes whose segments say
    it in at least ``min_rate`` of theirs, ``MIN_SUPPORT`` times and of ``RELATION_VALUES``
    values or more (its *owners*, at most ``RELATION_OWNERS``; a word said of one value only is
    a piece of that value spelled otherwise, "carrol" of ``Carroll_County``) hold at least
    ``RELATION_SHARE`` of its record segments ("born" of ``birthPlace`` and ``birthDate``, "oclc"
    of ``OCLC_number``). Its attributes are the owners and every attribute whose segments say it
    in ``threshold`` of theirs or more. Under ``""``: the attributes with ``MIN_SUPPORT``
    segments or more, the only ones the ``relations`` fault judges
    (:func:`segviz.rerank.relation_faults`)."""
    S, W, V, by_word = Counter(), Counter(), Counter(), {}
    for key, n in n_seg.items():
        if key != NULL:
            S[key[0]] += n
    for (key, w), n in n_frame.items():
        if key != NULL and n:
            W[(key[0], w)] += n
            V[(key[0], w)] += 1  # one more value of the attribute says it
            by_word.setdefault(w, set()).add(key[0])
    out: Relations = {"": frozenset(a for a in S if S[a] >= MIN_SUPPORT)}
    for w, attrs in sorted(by_word.items()):
        owners = [a for a in attrs if S[a] >= MIN_SUPPORT and W[(a, w)] >= MIN_SUPPORT
                  and V[(a, w)] >= RELATION_VALUES and W[(a, w)] / S[a] >= min_rate]  # fmt: skip
        if 0 < len(owners) <= RELATION_OWNERS and sum(W[(a, w)] for a in owners) >= RELATION_SHARE * sum(W[(a, w)] for a in attrs):
            out[w] = frozenset(owners) | {a for a in attrs if W[(a, w)] / S[a] >= threshold}
    return out


def _null_never(n_word: Counter, threshold: float) -> dict[str, frozenset[str]]:
    """Words said in ``MIN_SUPPORT`` segments or more, under ``threshold`` of them null ones."""
    said, null = Counter(), Counter()
    for (key, w), n in n_word.items():
        said[w] += n
        null[w] += n if key == NULL else 0
    return {w: frozenset() for w in sorted(said) if said[w] >= MIN_SUPPORT and null[w] / said[w] < threshold}


def name_key(text: str) -> str:
    """How a proper name is compared with the training names: its tokens, lower-cased, with
    WebNLG underscores read as spaces ("Crowne_Plaza_Hotel" -> "crowne plaza hotel")."""
    return " ".join(t.lower() for t in tokenize(text.replace("_", " ").strip().strip('"')))


def known_names(examples: list[Example]) -> list[str]:
    """:func:`name_key` of every capitalised value and subject of the training inputs: the names
    the model has seen (``ValueRules.names`` leaves these to the model)."""
    texts = {t for ex in examples for r in ex.records for t in (r.value, r.subject or "")}
    return sorted({name_key(t) for t in texts if any(ch.isupper() for ch in t)})


def read(checkpoint_dir: Path | str | None) -> tuple[Lexicon, str | None, frozenset[str], SegmentWords, Relations]:
    """The lexicon stored beside a checkpoint, the value rules chosen for it on the tuning half
    (its ``value_rules`` field, written by ``--value-rules``), the training names (``names``,
    :func:`known_names`), the segment words (``segments``, :func:`segment_words`) and the
    relation words (``relations``, :func:`relation_words`); ``({}, None, frozenset(), {}, {})``
    when there is none or it is unreadable. One read of the file for all five."""
    path = Path(checkpoint_dir or ".") / FILE
    if not path.exists():
        return {}, None, frozenset(), {}, {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        words = {str(w): frozenset(map(str, fs)) for w, fs in data["words"].items()}
        names = frozenset(map(str, data.get("names", [])))
        segs = {
            str(a): {str(w): frozenset(map(str, vs)) for w, vs in ws.items()}
            for a, ws in data.get("segments", {}).items()
        }
        relations = {str(w): frozenset(map(str, attrs)) for w, attrs in data.get("relations", {}).items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        log.warning("%s: unreadable value lexicon (%s); decoding without it", path, e)
        return {}, None, frozenset(), {}, {}
    name = data.get("value_rules")
    return words, name if isinstance(name, str) else None, names, segs, relations


def load(checkpoint_dir: Path | str | None) -> Lexicon:
    """The lexicon stored beside a checkpoint (empty when there is none or it is unreadable)."""
    return read(checkpoint_dir)[0]


def default_rules(checkpoint_dir: Path | str | None) -> str | None:
    """The decoding value rules chosen for this checkpoint on the tuning half, if any."""
    return read(checkpoint_dir)[1]


def _checkpoint_counts(path: Path, examples: list[Example]) -> tuple[Counter, Counter, Counter]:
    """:func:`_aligned_counts` by the segment model stored at ``path`` (ValueError for another kind)."""
    from segviz import checkpoint
    from segviz.model import SegmentModel

    ck = checkpoint.load(path)
    if not isinstance(ck.model, SegmentModel):
        raise ValueError(f"{path}: --segments and --relations need a segment-model checkpoint (this one is {ck.model_config.kind})")
    return _aligned_counts(ck.model, ck.vocab, examples)


def _lines(entries: dict) -> str:
    """``{word: set}`` as JSON object members, one per line (sorted sets): how lexicon.json
    writes its ``words`` and ``relations``."""
    return ",\n".join(f"{json.dumps(w, ensure_ascii=False)}: {json.dumps(sorted(v), ensure_ascii=False)}" for w, v in entries.items())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m segviz.lexicon",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--checkpoint", type=Path, required=True, help="checkpoint folder; writes lexicon.json there"
    )
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--threshold", type=float, default=THRESHOLD)
    p.add_argument(
        "--min-rate", type=float, default=MIN_RATE, help="min share of references with the feature that say the word"
    )
    p.add_argument(
        "--min-lift", type=float, default=None,
        help="also learn a rarer word said with the feature in >= 20 references and this many "
        "times more often with it than without (off by default)",
    )
    p.add_argument(
        "--segments", action="store_true",
        help="also learn the words each attribute's segments say of each value, by the "
        "checkpoint's own alignment of the training references (segment models; the values rule)",
    )
    p.add_argument(
        "--attribute-lift", type=float, default=ATTRIBUTE_LIFT,
        help="with --segments: a segment word's attribute's segments say it this many times as often "
        "as the other records' segments (0: off, the lexicons before session 25)",
    )
    p.add_argument(
        "--relations", action="store_true",
        help="also learn which attributes' segments say each word, by the checkpoint's own alignment "
        "of the training references (segment models; the relations switch)",
    )
    p.add_argument(
        "--clean", action="store_true",
        help="learn from the references the automatic checker finds exact only (as train --clean)",
    )
    p.add_argument(
        "--value-rules",
        default=None,
        help="decoding value rules to use by default with this checkpoint "
        "(segviz.decode.value_rules), chosen on the tuning half of dev",
    )
    args = p.parse_args(argv)
    try:
        config = json.loads((args.checkpoint / "config.json").read_text(encoding="utf-8"))
        dataset = config["dataset"]
        examples = load_split(dataset, "train", args.data_dir or default_data_dir())
        if args.clean:  # a reference that says a venue is in the centre when it is by the river teaches nothing
            from segviz.train import clean_examples

            examples = clean_examples(dataset, examples)
    except (OSError, ValueError, KeyError, DataError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    words = build(examples, args.threshold, args.min_rate, args.min_lift)
    try:
        counts = _checkpoint_counts(args.checkpoint, examples) if args.segments or args.relations else None
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    segs = _segment_words(*counts[:2], args.threshold, args.min_rate, args.attribute_lift) if args.segments else None
    rels = relation_words(counts[0], counts[2], args.threshold, args.min_rate) if args.relations else None
    out = {
        "dataset": dataset,
        "threshold": args.threshold,
        "min_rate": args.min_rate,
        **({"min_lift": args.min_lift} if args.min_lift is not None else {}),
        "train_references": len(examples),
        **({"clean": True} if args.clean else {}),
        **({"value_rules": args.value_rules} if args.value_rules else {}),
        **({"attribute_lift": args.attribute_lift} if args.segments else {}),
        **({"segments": {a: {w: sorted(vs) for w, vs in ws.items()} for a, ws in segs.items()}} if segs else {}),
        "names": known_names(examples),
        "words": {w: sorted(fs) for w, fs in words.items()},
    }
    lines = _lines(out.pop("words"))
    names = json.dumps(out.pop("names"), ensure_ascii=False)
    head = json.dumps(out, ensure_ascii=False)[:-1] + f', "names": {names}'  # one line per word below
    tail = f', "relations": {{\n{_lines(rels)}\n}}' if rels else ""
    (args.checkpoint / FILE).write_text(f'{head}, "words": {{\n{lines}\n}}{tail}}}\n', encoding="utf-8")
    print(
        f"{len(words)} lexicon words from {len(examples)} {dataset} training references -> {args.checkpoint / FILE}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
