"""The names of the models and systems (one place for every page, table, message and export), and
the app's other fixed words: dataset and status labels, the two views and what the posterior means.

A *model* is a checkpoint kind (the segment model of paper §4, the pointer-generator baseline);
a *system* is a model decoded one way, named as the rows of paper Tables 2-3: "PG", "ours",
"ours (+R)", "ours (+RM)" (:data:`segviz.decode.CONSTRAINT_LABELS` for the constraint levels).
"""

from __future__ import annotations

from segviz.datasets import DATASETS
from segviz.decode import CONSTRAINT_LABELS

MODEL_LABELS = {"seg": "Segment model (ours)", "pg": "Pointer-generator (PG)"}  # checkpoints: sidebar, messages
LEVEL_NAMES = {"pg": "PG", **CONSTRAINT_LABELS}  # systems: PG, ours, ours (+R), ours (+RM)


def system_name(kind: str, constraints: str | None = None) -> str:
    """The paper's name of ``kind`` decoded under ``constraints``: "PG", "ours (+RM)", …; a
    name that is neither (an uploaded system, "your text") is its own name."""
    if kind == "pg":
        return LEVEL_NAMES["pg"]
    if kind == "seg":
        return LEVEL_NAMES.get(constraints or "none", LEVEL_NAMES["none"])
    return kind


def system_label(kind: str, constraints: str | None = None) -> str:
    """The heading of one system's output: its model and its name, "Segment model · ours (+RM)",
    "Pointer-generator · PG"; the model alone when the level is unknown (no output); other
    systems by their own name."""
    if kind not in MODEL_LABELS:
        return kind
    if kind == "seg" and constraints is None:
        return MODEL_LABELS["seg"]
    return f"{MODEL_LABELS[kind].split(' (')[0]} · {system_name(kind, constraints)}"


DATASET_LABELS = {name: ds.label for name, ds in DATASETS.items()}  # the registry (segviz.datasets)
STATUS_ICONS = {"realised": "✓ realised", "missing": "– missing", "repeated": "↻ repeated", "wrong": "✗ wrong",
                "hallucinated": "+ hallucinated"}  # fmt: skip  (no emoji: not every browser has the font)
VIEWS = {"attention": "Attention", "posterior": "Posterior over segmentations"}
POSTERIOR_CAPTION = (
    "Posterior: for every token, the probability that it lies in a segment of each record (or of no record), "
    "given the whole text and the records, summed exactly over all segmentations (forward-backward; each row "
    "sums to 1). Red frames: the most probable segmentation (Viterbi). Bars: the probability that a new segment "
    "starts at the token. Attention shows where a decoder looked while writing a word; the posterior shows which "
    "record the segment model says the text realises, for any text (PG's included, which has no segments of its own)."
)
