"""What a system produced for one input (:class:`GenerationResult`): plain data, no torch, so the
drawing code (``segviz.viz``) and the annotation store can use it without importing the model.
``segviz.decode`` re-exports it; ``from segviz.decode import GenerationResult`` keeps working."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class GenerationResult:
    """What a system produced for one input; framework-free and JSON-serialisable (docs/design.md §2).

    ``segments`` are ``(start, end, record)`` over ``tokens`` with ``record`` 1..K, or ``None``
    for the null record. ``attention[t][i]`` is the attention of output token ``t`` on source
    token ``i``; ``record_of_source_token[i]`` is 1..K.
    """

    system: str
    records: list[tuple[int, str, list[str]]]  # (id 1..K, label, tokens)
    tokens: list[str]
    text: str
    segments: list[tuple[int, int, int | None]]
    attention: list[list[float]]
    source_tokens: list[str]
    record_of_source_token: list[int]
    plan: list[int] | None = None
    constraints: str | None = None
    scores: dict = field(default_factory=dict)
    fallback_used: bool = False
    elapsed_ms: float = 0.0

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> GenerationResult:
        d = dict(d)
        d["records"] = [tuple(r) for r in d["records"]]
        d["segments"] = [tuple(s) for s in d["segments"]]
        return cls(**d)

    def segment_records(self) -> list[int | None]:
        return [r for _, _, r in self.segments]
