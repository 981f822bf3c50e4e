"""Verdict types shared by the E2E and WebNLG checkers, and text normalisation."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

from segviz.records import strip_accents

STATUSES = ("realised", "missing", "repeated", "wrong")


class ValueMention(NamedTuple):
    """A span ``[start, end)`` of normalised text that states a value: that of input record
    ``record`` (0-based), or, with ``record`` None, a value absent from the input. ``entity`` is
    the normalised entity (WebNLG) that a segment may name without stating another record."""

    start: int
    end: int
    record: int | None
    entity: str = ""


@dataclass
class RecordVerdict:
    """The verdict for input record ``index`` (its ``label``); ``evidence`` is the text seen."""

    index: int
    label: str
    status: str  # one of STATUSES
    evidence: str = ""


@dataclass
class FaithReport:
    """Per-record verdicts for one output text plus slots expressed without being in the input."""

    per_record: list[RecordVerdict] = field(default_factory=list)
    hallucinated: list[str] = field(default_factory=list)  # E2E attributes, e.g. "familyFriendly"

    def _count(self, status: str) -> int:
        return sum(v.status == status for v in self.per_record)

    @property
    def wrong(self) -> int:
        return self._count("wrong")

    @property
    def repeated(self) -> int:
        return self._count("repeated")

    @property
    def missing(self) -> int:
        return self._count("missing")

    @property
    def realised(self) -> int:
        return self._count("realised")

    @property
    def n_hallucinated(self) -> int:
        return len(self.hallucinated)

    @property
    def total_records(self) -> int:
        return len(self.per_record)

    @property
    def errors(self) -> int:
        """wrong + repeated + missing + hallucinated (the slot-error numerator)."""
        return self.wrong + self.repeated + self.missing + self.n_hallucinated

    def to_dict(self) -> dict:
        d = asdict(self)
        d.update(
            wrong=self.wrong,
            repeated=self.repeated,
            missing=self.missing,
            n_hallucinated=self.n_hallucinated,
            total_records=self.total_records,
        )
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: dict) -> FaithReport:
        return cls([RecordVerdict(**v) for v in d["per_record"]], list(d["hallucinated"]))


def totals(reports: Iterable[FaithReport]) -> dict:
    """Sum over reports: ``{wrong, repeated, missing, hallucinated, total_records, slot_error_rate}``.

    SER = (wrong + missing + repeated + hallucinated) / total_records.
    """
    t = dict(wrong=0, repeated=0, missing=0, hallucinated=0, total_records=0)
    for r in reports:
        t["wrong"] += r.wrong
        t["repeated"] += r.repeated
        t["missing"] += r.missing
        t["hallucinated"] += r.n_hallucinated
        t["total_records"] += r.total_records
    err = t["wrong"] + t["repeated"] + t["missing"] + t["hallucinated"]
    t["slot_error_rate"] = err / t["total_records"] if t["total_records"] else 0.0
    return t


# ----------------------------------------------------------------------------- normalisation


@functools.lru_cache(maxsize=1 << 16)
def normalise(text: str) -> str:
    """Lower case, accents stripped, apostrophes removed, dashes unified, spaces collapsed
    (remembered: the checker normalises the same venue names and values on every call)."""
    text = strip_accents(text)
    text = text.lower().replace("’", "'").replace("‘", "'").replace("`", "'").replace("'", "")
    text = re.sub(r"[‐‑‒–—]", "-", text)
    return re.sub(r"\s+", " ", text).strip()
