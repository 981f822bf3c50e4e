"""Value lexicon: the words that state a specific value, learnt from the training data.

A word is in the lexicon when it occurs in the training *inputs* as part of a value, is not a
function word, and the references almost never say it unless their input holds it:
``P(w in reference | w not in input) < THRESHOLD``. "eagle", "riverside", "french", "moderate"
and "20" are in; "restaurant" and "food", which references say of any venue, are not.

Two decoding rules read it (docs/design.md, "Decoding rules"; both named switches of
:meth:`segviz.decode.SegmentDecoder.search`):

- ``lexicon``: no output word from the lexicon that the input does not hold (a value absent
  from the input cannot be said: "near The Portland Arms" when ``near`` is "The Old Mill");
- ``own_values``: inside the segment of record ``k`` no lexicon word of another record's value
  that ``k`` does not share, and inside a null segment none at all: each segment says only its
  own record, which is what a forced plan relies on.

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
from segviz.records import Record, tokenize

log = logging.getLogger(__name__)

FILE = "lexicon.json"
THRESHOLD = 0.01  # max share of references that say the word although their input lacks it


def _is_content(word: str) -> bool:
    from segviz.decode import is_function_word  # decode imports this module

    return not is_function_word(word)


def value_words(records: Iterable[Record]) -> set[str]:
    """Lower-cased content words of the records' values (WebNLG: of objects and subjects)."""
    words = set()
    for r in records:
        subject = tokenize(r.subject.replace("_", " ")) if r.subject else []
        words |= {t.lower() for t in r.value_tokens + subject if _is_content(t)}
    return words


def build(examples: list[Example], threshold: float = THRESHOLD) -> list[str]:
    """Sorted lexicon of ``examples`` (one per reference; see the module docstring)."""
    universe, absent, said = set(), Counter(), Counter()
    inputs = [
        ({t.lower() for r in ex.records for t in r.tokens}, set(ex.target), value_words(ex.records))
        for ex in examples
    ]
    for _, _, values in inputs:
        universe |= values
    for inp, ref, _ in inputs:
        said.update((ref - inp) & universe)
    present = Counter(w for inp, _, _ in inputs for w in inp & universe)
    for w in universe:
        absent[w] = len(inputs) - present[w]
    return sorted(w for w in universe if absent[w] and said[w] / absent[w] < threshold)


def load(checkpoint_dir: Path | str | None) -> frozenset[str]:
    """The lexicon stored beside a checkpoint (empty when there is none)."""
    path = Path(checkpoint_dir or ".") / FILE
    if not path.exists():
        return frozenset()
    try:
        words = json.loads(path.read_text(encoding="utf-8"))["words"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        log.warning("%s: unreadable value lexicon (%s); decoding without it", path, e)
        return frozenset()
    return frozenset(w for w in words if isinstance(w, str))


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
    args = p.parse_args(argv)
    try:
        config = json.loads((args.checkpoint / "config.json").read_text(encoding="utf-8"))
        dataset = config["dataset"]
        examples = load_split(dataset, "train", args.data_dir or default_data_dir())
    except (OSError, ValueError, KeyError, DataError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    words = build(examples, args.threshold)
    out = {"dataset": dataset, "threshold": args.threshold, "train_references": len(examples), "words": words}
    (args.checkpoint / FILE).write_text(
        json.dumps(out, ensure_ascii=False, indent=0) + "\n", encoding="utf-8"
    )
    print(
        f"{len(words)} lexicon words from {len(examples)} {dataset} training references -> {args.checkpoint / FILE}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
