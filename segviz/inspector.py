"""The Hallucination inspector's backend: both systems (or an uploaded system's outputs) over
many inputs, the checker's flags as rows, counts per attribute, and where a flag is in its text
(through the segments). No Streamlit.
"""

from __future__ import annotations

import csv
import io
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from segviz import decode
from segviz.checkpoint import Checkpoint
from segviz.datasets import DATASETS, get
from segviz.entities import invented_names, shipped
from segviz.formats import csv_rows
from segviz.records import Record, RecordError, tokenize, unheld_figures
from segviz.rows import MAX_RECORDS, output_problem
from segviz.systems import SystemView, _check, _threads, cased_tokens, compare

FLAG_KINDS = ("wrong", "repeated", "missing", "hallucinated", "other relation", "invented number", "invented name")
_BESIDE = ("other relation", "invented number", "invented name")  # not the checker's: a lexicon's guess (WebNLG), word checks


def flag_kinds(dataset: str) -> list[str]:
    """The flag kinds ``dataset`` can raise: its checker's measured counts, "other relation"
    where its segment model learns relation words (:attr:`segviz.datasets.Dataset.relation_words`),
    and "invented number" where its checker reads no fact the input does not hold (WebNLG: E2E's
    reads "3 out of 5" as an average rating, so a number there is the checker's to judge), and
    "invented name" where an entity-word list is shipped (:mod:`segviz.entities`: WebNLG)."""
    ds = get(dataset)
    beside = {"other relation": bool(ds.relation_words), "invented number": "hallucinated" in ds.not_measured,
              "invented name": ds.entity_words}
    return [k for k in FLAG_KINDS if k not in ds.not_measured and beside.get(k, True)]


_FLAG_WORDS = {  # how the inspector's intro names each kind
    "wrong": "a record stated wrongly",
    "repeated": "a record repeated",
    "missing": "a record missing",
    "hallucinated": "a fact not in the input",
    "other relation": "\"other relation\": a record said with words that, in training, only other relations' "
                      "segments say (the segment model's relation words, a guess beside the checker)",
    "invented number": "\"invented number\": a number that no figure of the input holds in any form "
                       "(\"911\" of an airport 213.0 metres high)",
    "invented name": "\"invented name\": a word that training texts say almost only as a word of a name of their "
                     "input, where this input holds no such word (\"java\" of a dish from Malaysia)",
}


def flag_intro(dataset: str) -> str:
    """The inspector's intro: the flags ``dataset`` can raise (:func:`flag_kinds`) in words."""
    kinds = flag_kinds(dataset)
    checker = [_FLAG_WORDS[k] for k in kinds if k not in _BESIDE]
    text = "Flags from the automatic checker: " + ", ".join(checker[:-1]) + (" or " if len(checker) > 1 else "") + checker[-1]
    text += "".join("; and " + _FLAG_WORDS[k] for k in _BESIDE if k in kinds) + "."
    return " ".join(filter(None, (text, get(dataset).checker_note)))  # what "realised" does not tell


def flag_summary(n_flags: int, n_flagged: int, n_cases: int) -> str:
    """The count over the flag table: "1 flag in 1 of 1 case.", "3 flags in 2 of 10 cases."."""
    return f"{n_flags} flag{'' if n_flags == 1 else 's'} in {n_flagged} of {n_cases} case{'' if n_cases == 1 else 's'}."


class OutputFileError(ValueError):
    """An uploaded system-output file cannot be read; the message names the line."""


def align_text(dataset: str, records: list[Record], text: str, seg: Checkpoint | None, system: str = "your text") -> SystemView:
    """Any text (a reference, a typed text) aligned by the segment model and checked, its case kept."""
    if not tokenize(text):
        raise RecordError("the text has no words")
    return cases_from_outputs(dataset, [(list(records), text)], seg, system)[0].views[system]


@dataclass
class Case:
    """One input of a batch run and every system's output for it."""

    index: int  # 0-based position in the run (``flagged_rows``' "case")
    key: str
    records: list[Record]
    views: dict[str, SystemView]

    @property
    def number(self) -> int:
        """The case as the app names it, counted from 1 like the lines of an uploaded file."""
        return self.index + 1


def run_systems(
    dataset: str,
    inputs: Sequence[tuple[str, list[Record]]],
    seg: Checkpoint | None,
    pg: Checkpoint | None,
    constraints: str = "rm",
    beam: int = 5,
    progress: Callable[[int, int], None] | None = None,
) -> list[Case]:
    """Both systems over ``inputs`` (``(key, records)`` pairs); ``progress(done, total)`` after each."""
    cases = []
    total = len(inputs)
    for i, (key, records) in enumerate(inputs):
        cmp = compare(dataset, records, seg, pg, constraints, beam)
        views = {v.system: v for v in (cmp.seg, cmp.pg) if v.result is not None}
        cases.append(Case(i, key, list(records), views))
        if progress:
            progress(i + 1, total)
    return cases


SAMPLES = {"first": "the first N", "random": "a random sample (seed)", "stratified": "stratified by K (seed)"}


def sample_inputs(inputs: Sequence[tuple[str, list[Record]]], n: int, how: str = "first", seed: int = 0) -> list:
    """``n`` of ``inputs``: the first ``n``; a seeded random sample (in input order); or a seeded
    sample stratified by the number of records K (as even a share of every K as ``n`` allows,
    the smallest strata first). The same seed always gives the same sample."""
    inputs = list(inputs)
    n = max(0, min(n, len(inputs)))
    if how == "first" or n == len(inputs):
        return inputs[:n]
    rng = random.Random(seed)
    if how == "random":
        return [inputs[i] for i in sorted(rng.sample(range(len(inputs)), n))]
    if how != "stratified":
        raise ValueError(f"sample must be one of {sorted(SAMPLES)}, got {how!r}")
    strata: dict[int, list[int]] = {}
    for i, (_, records) in enumerate(inputs):
        strata.setdefault(len(records), []).append(i)
    for idx in strata.values():
        rng.shuffle(idx)
    chosen: list[int] = []
    left = n
    for j, K in enumerate(sorted(strata, key=lambda K: len(strata[K]))):
        share = left // (len(strata) - j)
        take = strata[K][:share]
        chosen += take
        left -= len(take)
    taken = set(chosen)
    rest = [i for K in sorted(strata) for i in strata[K] if i not in taken]
    chosen += rest[:left]  # strata too small for their share: the others fill up
    return [inputs[i] for i in sorted(chosen)]


def attribute_of(label: str) -> str:
    """The attribute (E2E) or predicate (WebNLG) of a flag's record label: ``food[Thai]`` -> food,
    ``A | country | B`` -> country, ``familyFriendly`` (a hallucinated slot) -> familyFriendly."""
    if " | " in label:
        parts = label.split(" | ")
        return parts[1] if len(parts) == 3 else label
    return label.split("[", 1)[0].strip()


def attribute_counts(rows: Sequence[dict], kinds: Sequence[str] = FLAG_KINDS) -> list[dict]:
    """Flags per attribute and system: one row per (attribute, system), a column per flag kind of
    ``kinds`` (:func:`flag_kinds`: E2E has no "other relation")."""
    table: dict[tuple[str, str], dict] = {}
    for r in rows:
        key = (attribute_of(r["record"]), r["system"])
        row = table.setdefault(key, {"attribute": key[0], "system": key[1], **{k: 0 for k in kinds}})
        row[r["kind"]] = row.get(r["kind"], 0) + 1
    return [table[k] for k in sorted(table)]


def case_label(case: Case, n: int = 90, with_key: bool = False) -> str:
    """A case as its records (``name[X] · food[Y] …``), shortened to about ``n`` characters;
    ``with_key``: after its key (``line 3``, an example's name) unless the key is the MR itself."""
    return input_label(case.key, case.records, n, with_key)


def input_label(key: str, records: list[Record], n: int = 90, with_key: bool = True) -> str:
    """An input as :func:`case_label` writes a case: its records joined by " · " (an E2E MR), after
    its key where the key is not the MR itself (a WebNLG dev key, "Airport/2/Id7 — …"), cut to
    about ``n`` characters."""
    text = " · ".join(r.label for r in records)
    text = text if len(text) <= n else text[: n - 1] + "…"
    return f"{key} — {text}" if with_key and "[" not in key and key != text else text


def parse_output_file(dataset: str, data: bytes) -> list[tuple[list[Record], str]]:
    """An E2E system-output file, one ``MR<TAB>output`` per line (a ``mr``/``output`` header line
    is skipped), into ``(records, text)`` pairs. Raises :class:`OutputFileError` naming the line."""
    return [(records, text) for _, records, text in parse_output_lines(dataset, data)]


def text_of(data: bytes, what: str = "a text file") -> str:
    """An uploaded file as text: UTF-8 (a BOM allowed), not binary; else :class:`OutputFileError`."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise OutputFileError(f"the file is not UTF-8 text ({e.reason} at byte {e.start})") from e
    if "\x00" in text:
        raise OutputFileError(f"the file is binary, not {what}")
    return text


def parse_output_lines(dataset: str, data: bytes) -> list[tuple[int, list[Record], str]]:
    """Like :func:`parse_output_file`, with the line of the file each pair is on (1-based, the
    header and blank lines counted)."""
    ds = get(dataset)
    if not ds.uploads:
        only = " and ".join(d.title for d in DATASETS.values() if d.uploads)
        raise OutputFileError(f"uploaded output files are supported for {only} only (MR<TAB>output lines)")
    text = text_of(data, "a tab-separated text file").replace("\r\n", "\n").replace("\r", "\n")  # old Mac line ends too
    pairs = []
    reader = csv.reader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE)
    for n, cols in enumerate(csv_rows(reader, OutputFileError), start=1):
        if not cols or not "".join(cols).strip():
            continue
        if n == 1 and cols[0].strip().lower() in ("mr", "meaning representation"):
            continue
        if len(cols) != 2:
            raise OutputFileError(
                f"line {n}: expected 2 tab-separated columns (MR<TAB>output), found {len(cols)}"
            )
        mr, out = cols[0].strip(), cols[1].strip()
        try:
            records = ds.parse(mr)
        except RecordError as e:
            raise OutputFileError(f"line {n}: {e}") from e
        if problem := output_problem(out):
            raise OutputFileError(f"line {n}: {problem}")
        if len(records) > MAX_RECORDS:
            raise OutputFileError(f"line {n}: {len(records)} records; at most {MAX_RECORDS} are supported")
        pairs.append((n, records, out))
    if not pairs:
        raise OutputFileError("the file holds no MR<TAB>output lines")
    return pairs


def cases_from_outputs(
    dataset: str,
    pairs: Sequence[tuple[list[Record], str]],
    seg: Checkpoint | None,
    system: str = "uploaded",
    progress: Callable[[int, int], None] | None = None,
    lines: Sequence[int] | None = None,
) -> list[Case]:
    """Another system's texts as cases: aligned by the segment model (when loaded) and checked.
    They have no attention (it belongs to the system that wrote them). A case is called "line N"
    after ``lines`` (the line of the file each pair is on), "output N" without them."""
    cases = []
    for i, (records, text) in enumerate(pairs):
        t0 = time.perf_counter()
        tokens = tokenize(text)
        res = decode.GenerationResult(
            system=system,
            records=[(k + 1, r.label, r.tokens) for k, r in enumerate(records)],
            tokens=tokens,
            text=text,
            segments=[],
            attention=[],
            source_tokens=[t for r in records for t in r.tokens],
            record_of_source_token=[k + 1 for k, r in enumerate(records) for _ in r.tokens],
        )
        if seg is not None and tokens:
            with _threads(1):
                decode.align_result(res, seg.model, seg.vocab, records)
        res.elapsed_ms = (time.perf_counter() - t0) * 1000
        view = _check(dataset, records, SystemView(system, res), "forced alignment", seg.relation_words if seg else None)
        view.cased = cased_tokens(text, tokens)
        cases.append(Case(i, f"line {lines[i]}" if lines else f"output {i + 1}", list(records), {system: view}))
        if progress:
            progress(i + 1, len(pairs))
    return cases


def invented_words(dataset: str, records: Sequence[Record], text: str) -> list[tuple[str, str]]:
    """(kind, word) of each invented number (:func:`segviz.records.unheld_figures`) and invented
    name (:func:`segviz.entities.invented_names`) ``text`` says, where ``dataset`` raises that flag
    (:func:`flag_kinds`): [("invented number", "911"), ("invented name", "java")]."""
    kinds = flag_kinds(dataset)
    out = [("invented number", w) for w in unheld_figures(list(records), text)] if "invented number" in kinds else []
    if "invented name" in kinds:
        out += [("invented name", w) for w in invented_names(list(records), text, shipped(dataset))]
    return out


_WORD_LABEL = {"invented number": "number", "invented name": "name"}  # "number[911]": the attribute tables read "number"


def flagged_rows(cases: Sequence[Case], dataset: str | None = None) -> list[dict]:
    """One row per flag of any system in any case: wrong / repeated / missing / hallucinated (the
    checker), "other relation" for a record said with another relation's words (the segment
    model's relation words, :func:`segviz.rerank.misplaced_relations`), and "invented number" /
    "invented name" for each number or name the input does not hold (:func:`invented_words`),
    where ``dataset`` raises them (:func:`flag_kinds`)."""
    rows = []
    for case in cases:
        for view in case.views.values():
            if view.report is None:
                continue
            flags = [(v.status, v.label, v.index + 1) for v in view.report.per_record if v.status != "realised"]
            flags += [("hallucinated", h, None) for h in view.report.hallucinated]
            flags += [("other relation", case.records[k - 1].label, k) for k in view.misplaced]
            if dataset is not None:
                flags += [(kind, f"{_WORD_LABEL[kind]}[{w}]", None) for kind, w in invented_words(dataset, case.records, view.result.text)]
            for kind, record, k in flags:
                rows.append(
                    {
                        "case": case.index,
                        "system": view.label,
                        "kind": kind,
                        "record": record,
                        "text": view.result.text if view.result else "",
                        "k": k,  # the input record 1..K (None: a fact not in the input)
                        "system_key": view.system,
                    }
                )
    return rows


def numbered_rows(rows: Sequence[dict]) -> list[dict]:
    """``flagged_rows`` as the app shows them: each "case" counted from 1 (:attr:`Case.number`)."""
    return [{**r, "case": r["case"] + 1} for r in rows]


@dataclass
class FlagLocation:
    """Where a checker flag is in its text: the record whose segments to mark, one segment span
    to frame, and a sentence saying what is marked."""

    record: int | None
    span: tuple[int, int] | None
    note: str


def invented_note(dataset: str, records: Sequence[Record], view: SystemView) -> str | None:
    """The numbers and names ``view``'s text says that the input does not hold
    (:func:`invented_words`), in words for the app; None when none."""
    if view.result is None:
        return None
    found = invented_words(dataset, records, view.result.text)
    parts = []
    for kind, what in (("invented number", "a number no figure of the input holds"), ("invented name", "a name the input does not hold")):
        words = list(dict.fromkeys(w for k, w in found if k == kind))
        if words:
            parts.append(f"{what}: " + ", ".join(f'"{w}"' for w in words))
    if not parts:
        return None
    facts = "a fact" if len({w for _, w in found}) == 1 else "facts"
    return "Says " + "; and ".join(parts) + f" ({facts} the checker cannot see)."


def _word_location(view: SystemView, kind: str, label: str) -> FlagLocation:
    """An invented number's or name's place (``label``: ``number[911]``, ``name[java]``, as
    :func:`flagged_rows` names it): the segment that says it first, framed."""
    word = label.partition("[")[2].rstrip("]")
    tokens = [t.lower() for t in view.result.tokens] if view.result else []
    t = tokens.index(word) if word in tokens else None
    span = next(((v.start, v.end) for v in view.segment_verdicts if t is not None and v.start <= t < v.end), None)
    held = "no input figure holds it" if kind == "invented number" else "the input holds no such name"
    if span is None:
        return FlagLocation(None, None, f"{kind} {word}: {held}")
    return FlagLocation(None, span, f"{kind} {word}: framed, the segment that says it ({held})")


def flag_location(view: SystemView, kind: str, k: int | None, label: str = "") -> FlagLocation:
    """Locate a flag of :func:`flagged_rows` in ``view``'s text through its segments: wrong /
    repeated / missing record ``k`` -> the segments aligned to ``k`` (underlined); hallucinated ->
    the first segment that states a value absent from the input (framed); invented number or
    name -> the segment that says it (framed)."""
    segs = [(v.start, v.end) for v in view.segment_verdicts if k is not None and v.record == k]
    if kind == "hallucinated":
        absent = [v for v in view.segment_verdicts if v.absent]
        if absent:
            v = absent[0]
            return FlagLocation(None, (v.start, v.end), f"hallucinated {label}: framed, the segment that states "
                                f"{', '.join(repr(a) for a in v.absent)}")
        return FlagLocation(None, None, f"hallucinated {label}: no single segment states it (the text as a whole does)")
    if kind in _WORD_LABEL:
        return _word_location(view, kind, label)
    if kind == "other relation":
        said = ", ".join(f'"{w}"' for w in view.misplaced.get(k, []))
        return FlagLocation(k, segs[0] if len(segs) == 1 else None,
                            f"record {k} ({label}) is said with {said}, words that in training only other "
                            f"relations' segments say (in its segment or just before its value); its segments underlined")
    if not segs:
        return FlagLocation(k, None, f"{kind} record {k} ({label}): no segment of the text is aligned to it")
    return FlagLocation(k, segs[0] if len(segs) == 1 else None,
                        f"{kind} record {k} ({label}): its {len(segs)} segment{'s' * (len(segs) > 1)} underlined")
