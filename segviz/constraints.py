"""Decoding constraint levels (paper §4 "Decoding"): one registry that the search, the CLIs, the
app, the report and the annotation campaign all read (docs/design.md §1).

Segments are always non-empty. A level adds two flags on top:

- ``no_repeat``: a real record is realised at most once (the null record is exempt)  ("+R")
- ``cover_all``: ``<eos>`` is blocked until every record has been realised            ("M")

Adding a level is one entry in :data:`CONSTRAINTS`; the search reads only the flags, and the
CLIs (``choices``, help), the app's picker, the report's tables and the annotation campaign's
levels read the registry. ``help`` is plain text (the app shows it as a tooltip).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Constraint:
    """One constraint level: its ``name`` (CLI / JSON value), ``label`` as in the paper's tables,
    a ``help`` line and the flags the search reads."""

    name: str
    label: str
    help: str
    no_repeat: bool = False  # a record may not be chosen again once realised (+R)
    cover_all: bool = False  # <eos> waits until every record is realised (+M)

    @property
    def counts_realised(self) -> bool:
        """Whether the level tracks realised records, so the content rule (a record's segment
        must say something) and verbatim value mentions apply by default (module doc of
        :mod:`segviz.decode`)."""
        return self.no_repeat or self.cover_all


CONSTRAINTS: dict[str, Constraint] = {
    c.name: c
    for c in (
        Constraint("none", "ours", "segments are non-empty (the paper's plain decoding)"),
        Constraint("r", "ours (+R)", "segments are non-empty, each record is realised at most once", no_repeat=True),
        Constraint(
            "rm",
            "ours (+RM)",
            "as +R, and the text ends only once every record is realised",
            no_repeat=True,
            cover_all=True,
        ),
    )
}


class _Labels(Mapping):
    """name -> label, a live view of :data:`CONSTRAINTS` (a level registered later shows too)."""

    def __getitem__(self, name: str) -> str:
        return CONSTRAINTS[name].label

    def __iter__(self):
        return iter(CONSTRAINTS)

    def __len__(self) -> int:
        return len(CONSTRAINTS)


CONSTRAINT_LABELS: Mapping[str, str] = _Labels()


def constraint(name: str | Constraint) -> Constraint:
    """The registered level called ``name`` (a :class:`Constraint` passes through)."""
    if isinstance(name, Constraint):
        return name
    if name not in CONSTRAINTS:
        raise ValueError(f"constraints must be one of {tuple(CONSTRAINTS)}, got {name!r}")
    return CONSTRAINTS[name]
