"""Value lexicon: the words that state a fact of the input, learnt from the training data.

Every record holds *features*: its attribute (``attr:familyFriendly``), its value
(``value:familyFriendly=no``) and the content words of its value and subject (``tok:eagle``). A
word ``w`` belongs to feature ``f`` when the references say it with ``f`` and almost never
without it: ``P(w in ref | f not in input) < THRESHOLD`` and ``P(w in ref | f in input) >=
MIN_RATE`` (for ``tok:`` features only the token itself). So "family" and "friendly" belong to
``attr:familyFriendly``, "non" to ``value:familyFriendly=no``, "eagle" to ``tok:eagle``;
"restaurant", which references say of any venue, belongs to nothing.

Two decoding rules read it (docs/design.md §6; named switches of
:class:`segviz.decode.ValueRules`):

- ``absent``: no lexicon word none of whose features the input holds ("near The Portland Arms"
  when ``near`` is "The Old Mill"; "family friendly" with no ``familyFriendly`` record);
- ``own``: inside the segment of record ``k`` no word of another record's features that ``k``
  does not hold too, and inside a null segment no lexicon word of any record: each segment says
  only its own record, which is what a forced plan relies on.

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
from segviz.records import Record, is_function_word, tokenize

log = logging.getLogger(__name__)

FILE = "lexicon.json"
THRESHOLD = 0.01  # max share of references that say the word although their input lacks the feature
MIN_RATE = 0.05  # min share of references that say it when their input holds the feature
MIN_SUPPORT = 20  # features held by fewer training inputs are not learnt (tok: features excepted)

Lexicon = dict[str, frozenset[str]]  # word -> features it states


def _is_content(word: str) -> bool:
    return not is_function_word(word)


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


def build(examples: list[Example], threshold: float = THRESHOLD, min_rate: float = MIN_RATE) -> Lexicon:
    """Word -> features for ``examples`` (one per reference; see the module docstring)."""
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
            if with_f / n_f[f] >= min_rate and N > n_f[f] and without_f / (N - n_f[f]) < threshold:
                out.setdefault(w, set()).add(f)
    return {w: frozenset(fs) for w, fs in sorted(out.items())}


def name_key(text: str) -> str:
    """How a proper name is compared with the training names: its tokens, lower-cased, with
    WebNLG underscores read as spaces ("Crowne_Plaza_Hotel" -> "crowne plaza hotel")."""
    return " ".join(t.lower() for t in tokenize(text.replace("_", " ").strip().strip('"')))


def known_names(examples: list[Example]) -> list[str]:
    """:func:`name_key` of every capitalised value and subject of the training inputs: the names
    the model has seen (``ValueRules.names`` leaves these to the model)."""
    texts = {t for ex in examples for r in ex.records for t in (r.value, r.subject or "")}
    return sorted({name_key(t) for t in texts if any(ch.isupper() for ch in t)})


def read(checkpoint_dir: Path | str | None) -> tuple[Lexicon, str | None, frozenset[str]]:
    """The lexicon stored beside a checkpoint, the value rules chosen for it on the tuning half
    (its ``value_rules`` field, written by ``--value-rules``) and the training names (``names``,
    :func:`known_names`); ``({}, None, frozenset())`` when there is none or it is unreadable. One
    read of the file for all three."""
    path = Path(checkpoint_dir or ".") / FILE
    if not path.exists():
        return {}, None, frozenset()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        words = {str(w): frozenset(map(str, fs)) for w, fs in data["words"].items()}
        names = frozenset(map(str, data.get("names", [])))
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        log.warning("%s: unreadable value lexicon (%s); decoding without it", path, e)
        return {}, None, frozenset()
    name = data.get("value_rules")
    return words, name if isinstance(name, str) else None, names


def load(checkpoint_dir: Path | str | None) -> Lexicon:
    """The lexicon stored beside a checkpoint (empty when there is none or it is unreadable)."""
    return read(checkpoint_dir)[0]


def default_rules(checkpoint_dir: Path | str | None) -> str | None:
    """The decoding value rules chosen for this checkpoint on the tuning half, if any."""
    return read(checkpoint_dir)[1]


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
    words = build(examples, args.threshold, args.min_rate)
    out = {
        "dataset": dataset,
        "threshold": args.threshold,
        "min_rate": args.min_rate,
        "train_references": len(examples),
        **({"clean": True} if args.clean else {}),
        **({"value_rules": args.value_rules} if args.value_rules else {}),
        "names": known_names(examples),
        "words": {w: sorted(fs) for w, fs in words.items()},
    }
    lines = ",\n".join(
        f"{json.dumps(w, ensure_ascii=False)}: {json.dumps(fs, ensure_ascii=False)}"
        for w, fs in out.pop("words").items()
    )
    names = json.dumps(out.pop("names"), ensure_ascii=False)
    head = json.dumps(out, ensure_ascii=False)[:-1] + f', "names": {names}'  # one line per word below
    (args.checkpoint / FILE).write_text(f'{head}, "words": {{\n{lines}\n}}}}\n', encoding="utf-8")
    print(
        f"{len(words)} lexicon words from {len(examples)} {dataset} training references -> {args.checkpoint / FILE}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
