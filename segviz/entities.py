"""Entity words: words the training references say almost only as a word of an entity the input
holds ("java", "switzerland", "afit"), and the ones a text says that its own input does not hold.

WebNLG's checker reads records, not facts: a text that adds "… a dish from Malaysia and java"
or "he graduated from afit" (for ``almaMater | "NWC, M.A. 1957"``) passes it. A word that, in
18,102 training references, is said at least ``SHARE`` of the times as a token of one of that
reference's own subjects or objects (and at least ``MIN_COUNT`` times) names an entity; said
where the input holds no such token, it names one the input does not hold: an *invented name*
(docs/design.md §6, the ``strangers`` rule). The stress suites count texts with one and the
Hallucination inspector flags it beside the checker, as the invented numbers
(:func:`segviz.records.unheld_figures`); the ``strangers`` decoding rule never says one.

``python -m segviz.entities --dataset webnlg [--data-dir D]`` writes the list to
``segviz/entities.json`` (shipped, so that neither needs the data at run time).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from segviz.records import (
    SUFFIXES,
    Record,
    entity_text,
    is_function_word,
    split_camel,
    strip_accents,
    tokenize,
)

FILE = Path(__file__).with_name("entities.json")
SHARE = 0.9  # of a word's training occurrences, said as a token of its own input's entities
MIN_COUNT = 3  # training occurrences at least
MIN_LENGTH = 2  # characters: no single letter ("l" of runway "18 L / 36 R", said for "a. s. l." too)


def entity_tokens(records: Iterable[Record]) -> set[str]:
    """The lower-cased tokens of every subject and object of ``records``."""
    return {t.lower() for r in records for e in (r.subject or "", r.value) for t in tokenize(entity_text(e))}


def entity_words(examples: Iterable, share: float = SHARE, min_count: int = MIN_COUNT) -> list[str]:
    """Sorted content words (no digit, no single letter) of the references ``examples[i].target``
    that are a token of one of ``examples[i].records``' entities in at least ``share`` of their
    ``>= min_count`` occurrences: "java" 195 of 197, "airport" 2,560 of 2,565; not "president" (235 of 405) or
    "american" (174 of 550), which references say of relations and nationalities."""
    inside, total = Counter(), Counter()
    for ex in examples:
        ents = entity_tokens(ex.records)
        words = [w.lower() for w in ex.target]
        words = [w for w in words if len(w) >= MIN_LENGTH and not is_function_word(w) and not any(c.isdigit() for c in w)]
        total.update(words)
        inside.update(w for w in words if w in ents)
    return sorted(w for w, n in total.items() if n >= min_count and inside[w] >= share * n)


@functools.lru_cache(maxsize=4)
def shipped(dataset: str) -> frozenset[str]:
    """The entity words of ``dataset`` in :data:`FILE` (empty where it has none: E2E)."""
    data = json.loads(FILE.read_text(encoding="utf-8"))
    return frozenset(data.get(dataset, {}).get("words", ()))


def held_words(records: list[Record]) -> frozenset[str]:
    """:func:`_held_words` of ``records`` (remembered: the segment verdicts and the ``rerank``
    switch read it once per segment of every candidate)."""
    return _held_words(tuple(records))


@functools.lru_cache(maxsize=256)
def _held_words(records: tuple[Record, ...]) -> frozenset[str]:
    """What the input holds in words (lower case): its entities' tokens, each also as the WebNLG
    checker and the ``spellings`` / ``plurals`` rules read it (without accents, with a possessive
    "'s", with a suffix of :data:`segviz.records.SUFFIXES`: "indian" of India, "beans" of
    Kidney_bean; the words of every spelling the checker reads as the entity: "britain" of
    United_Kingdom, :func:`segviz.faithfulness.webnlg.spellings`), its attributes' words ("nasa" of ``was selected by NASA``) and the initials of
    each entity of two content words or more ("afit" of Air_Force_Institute_of_Technology)."""
    from segviz.faithfulness.webnlg import spellings  # the checker's: "britain" of United_Kingdom

    tokens = entity_tokens(records) | {t for r in records for e in (r.subject or "", r.value) for s in spellings(e) for t in tokenize(s)}
    held = {f for t in tokens for f in (t, strip_accents(t))}
    held |= {f"{t}'s" for t in held} | {t + x for t in held if t[-1:].isalpha() for x in SUFFIXES}
    held |= {t.lower() for r in records for t in tokenize(split_camel(r.attribute.replace("_", " ")))}
    for r in records:
        for e in (r.subject or "", r.value):
            words = [t.lower() for t in tokenize(entity_text(e)) if not is_function_word(t)]
            if len(words) >= 2:
                held.add("".join(w[0] for w in words))
    return frozenset(held)


def stranger(word: str, words: frozenset[str], held: frozenset[str]) -> bool:
    """True when ``word`` (lower case) is an entity word (``words``) that ``held``
    (:func:`held_words`) holds in no spelling, accents aside."""
    return word in words and word not in held and strip_accents(word) not in held


def invented_names(records: list[Record], text: str, words: frozenset[str]) -> list[str]:
    """The entity words (``words``: :func:`shipped`) ``text`` says that the input does not hold
    (:func:`stranger`), lower case, in text order: ["java"] of "Ayam penyet is a dish from
    Malaysia and Java." for an input without Java."""
    if not words:
        return []
    held = held_words(records)
    return [w for w in (t.lower() for t in tokenize(text)) if stranger(w, words, held)]


def main(argv: list[str] | None = None) -> int:
    from segviz.data import DataError, default_data_dir, load_split
    from segviz.datasets import DATASETS, get

    p = argparse.ArgumentParser(prog="python -m segviz.entities", description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", choices=[d for d in DATASETS if get(d).entity_words], default="webnlg")
    p.add_argument("--data-dir", type=Path, default=None, help="default: $SEGVIZ_DATA or ../shared/data")
    args = p.parse_args(argv)
    try:
        examples = load_split(args.dataset, "train", args.data_dir or default_data_dir())
    except (OSError, DataError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    data = json.loads(FILE.read_text(encoding="utf-8")) if FILE.exists() else {}
    words = entity_words(examples)
    data[args.dataset] = {"share": SHARE, "min_count": MIN_COUNT, "min_length": MIN_LENGTH,
                          "train_references": len(examples), "words": words}
    FILE.write_text(json.dumps(data, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(f"{len(words)} entity words from {len(examples)} {args.dataset} training references -> {FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
