"""The datasets registry: everything that differs between datasets, one record each.

A :class:`Dataset` names where its train / dev files are and how to load them, how one input is
parsed, how the app's records editor shows a record, which checker judges an output, how the
generation CLI reads inputs and writes outputs, and how the evaluation CLI scores them. Code that
depends on the dataset reads ``get(name).field`` instead of branching on the name; adding a
dataset is one :func:`register` call (``tests/test_datasets.py`` adds a toy one). Importing this
module does not import torch (the loaders import :mod:`segviz.data` when called).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from segviz import formats, invented
from segviz.evaluate import evaluate_e2e, evaluate_webnlg
from segviz.faithfulness.common import FaithReport, ValueMention
from segviz.faithfulness.e2e import check_e2e, value_mentions_e2e
from segviz.faithfulness.e2e_rules import (  # one place: the checker's rules name them
    E2E_ATTRIBUTES,
    E2E_VALUES,
)
from segviz.faithfulness.webnlg import (
    attributable_webnlg,
    check_webnlg,
    own_entities_webnlg,
    value_mentions_webnlg,
)
from segviz.records import Record, parse_e2e_mr, parse_webnlg_triples


def _no_entities(record: Record) -> frozenset[str]:
    return frozenset()


def _every_record(records: list[Record]) -> frozenset[int]:
    return frozenset(range(len(records)))


def _no_names(records: list[Record]) -> list[str]:
    return []


def _attribute_key(rec: Record) -> tuple[tuple, str]:
    return (rec.attribute,), f"attribute {rec.attribute!r}"


def _triple_key(rec: Record) -> tuple[tuple, str]:
    return (rec.subject, rec.attribute, rec.value), f"triple {rec.label!r}"


@dataclass(frozen=True)
class Dataset:
    """One dataset. Paths in ``files`` are relative to the data folder, ``{split}`` filled in."""

    name: str  # registry key, stored in every checkpoint's config.json
    title: str  # in messages: "an E2E model"
    label: str  # the app's dataset switch
    files: str  # "e2e/{split}.csv": train / dev files (or folders) under the data folder
    loader: Callable[[Path], list]  # a split's file -> segviz.data.Example list
    parse: Callable[[str], list[Record]]  # one input as written in the data ("name[X], food[Y]")
    check: Callable[[list[Record], str], FaithReport]  # the automatic checker (segviz.faithfulness)
    value_mentions: Callable[[list[Record], str], list[ValueMention]]  # values stated in a normalised text
    read_inputs: Callable[[Path], list[formats.Located]]  # the generation CLI's input file
    input_kind: str  # what read_inputs reads, for messages
    write_outputs: Callable[[TextIO, Sequence[str], Sequence[str]], None]  # (file, keys, texts)
    output_suffix: str  # of the files write_outputs writes
    evaluate: Callable[..., dict]  # (references path, outputs path, meteor=) -> scores
    substitute: Callable[[list[Record], int], list[Record]]  # invented names (segviz.stress)
    figures: Callable[[list[Record], int], list[Record]] = invented.unchanged  # invented dates and numbers (segviz.stress)
    codes: Callable[[list[Record], int], list[Record]] = invented.unchanged  # codes replaced by invented ones (segviz.stress, session 33)
    closed: Callable[[list[Record], int], list[Record]] = invented.unchanged  # values outside the closed sets (segviz.stress)
    closed_values: dict[str, tuple[str, ...]] = field(default_factory=dict)  # attribute -> its closed set of values (lower case)
    names: Callable[[list[Record]], list[str]] = _no_names  # values that name something (segviz.augment)
    space: str = " "  # how a value writes a space (WebNLG entities: "_")
    article: str = "a"  # "an E2E model"
    foreign_suffixes: tuple[str, ...] = ()  # input files of another dataset, refused by name
    reads_folders: bool = True  # read_inputs accepts a folder
    own_entities: Callable[[Record], frozenset[str]] = _no_entities  # entities a record may restate
    attributable: Callable[[list[Record]], frozenset[int]] = _every_record  # records (0-based) the checker's reading gives to them alone (rules.read)
    columns: tuple[str, ...] = ("attribute", "value")  # the records editor
    row: Callable[[Record], list[str]] = lambda r: [r.attribute, r.value]  # a record's cells
    record: Callable[[list[str]], Record] = lambda cells: Record(cells[0], cells[1])  # cells -> record
    key: Callable[[Record], tuple[tuple, str]] = _attribute_key  # identity for duplicates, and its name
    empty_hint: str = ""  # added to "no records: add at least one row"
    reserved: tuple[str, ...] = ()  # signs that frame a record's parts where the data writes it: no cell holds one
    written: str = ""  # how the data writes a record, for messages: "subject | predicate | object"
    attributes: tuple[str, ...] | None = None  # known attributes (others warn); None: open-ended
    uploads: bool = False  # the app reads uploaded "MR<TAB>output" files of this dataset
    not_measured: frozenset[str] = field(default_factory=frozenset)  # checker counts that are always 0
    checker_note: str = ""  # what the checker's "realised" does not tell (shown beside its verdicts)
    relation_words: bool = False  # the segment model learns words only one relation's segments say
    # (the inspector's "other relation" flag, segviz.rerank.misplaced_relations; E2E's lexicon has none)
    entity_words: bool = False  # segviz/entities.json holds its entity words: the stress suites count invented
    # names, the inspector flags them, the strangers rule reads them (segviz.entities; E2E's checker reads names itself)
    parse_upload: Callable[[bytes, Sequence[list[Record]] | None], list] | None = None  # an uploaded output file
    # and the dev inputs its bare lines pair with -> (line, records, output); None: "MR<TAB>output" lines
    references: Callable[[Path], list[tuple[str, list[Record], list[str]]]] | None = None  # dev split file ->
    # (key, records, raw reference texts) per distinct input, in file order (segviz.stress); None: from the loader

    def split_path(self, data_dir: Path, split: str) -> Path:
        return Path(data_dir) / self.files.format(split=split)

    def load(self, data_dir: Path, split: str) -> list:
        """``split`` (train / dev) of this dataset under ``data_dir``, as Examples."""
        return self.loader(self.split_path(data_dir, split))


DATASETS: dict[str, Dataset] = {}


def register(dataset: Dataset) -> Dataset:
    """Add ``dataset`` (or replace the one of that name); every CLI and page then offers it."""
    DATASETS[dataset.name] = dataset
    return dataset


def get(name: str) -> Dataset:
    """The registered dataset called ``name``; ValueError naming the choices otherwise."""
    try:
        return DATASETS[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; choose one of {', '.join(map(repr, DATASETS))}") from None


def _load_e2e(path: Path) -> list:
    from segviz.data import load_e2e  # imports torch

    return load_e2e(path)


def _load_webnlg(path: Path) -> list:
    from segviz.data import load_webnlg  # imports torch

    return load_webnlg(path)


def _e2e_references(path: Path) -> list[tuple[str, list[Record], list[str]]]:
    from segviz.evaluate import read_e2e_refs

    return [(mr, parse_e2e_mr(mr), refs) for mr, refs in read_e2e_refs(path).items()]


def _webnlg_references(path: Path) -> list[tuple[str, list[Record], list[str]]]:
    from segviz.data_webnlg import read_webnlg

    return [(f"{e.category}/{e.size}/{e.eid}", parse_webnlg_triples(e.triples), e.lexs) for e in read_webnlg(path)]


def _webnlg_upload(data: bytes, entries: Sequence[list[Record]] | None) -> list:
    from segviz.uploads import parse_webnlg_lines

    return parse_webnlg_lines(data, entries)


def _parse_triples(text: str) -> list[Record]:
    """Triples ``subject | predicate | object``, one per line or several split by ";" (as an
    uploaded output file writes them; no WebNLG triple holds one)."""
    return parse_webnlg_triples([t for line in text.splitlines() for t in line.split(";") if t.strip()])


register(Dataset(
    name="e2e", title="E2E", article="an", label="E2E (restaurants)",
    files="e2e/{split}.csv", loader=_load_e2e, parse=parse_e2e_mr,
    check=check_e2e, value_mentions=value_mentions_e2e,
    read_inputs=formats.read_e2e, input_kind="a CSV with an 'mr' column", foreign_suffixes=(".xml",), reads_folders=False,
    write_outputs=formats.write_tsv, output_suffix="tsv", evaluate=evaluate_e2e,
    substitute=invented.substitute_e2e, names=invented.names_e2e, closed=invented.substitute_closed_e2e, closed_values=E2E_VALUES,
    empty_hint=" (attribute and value)", reserved=("[", "]"), written="attribute[value], …", attributes=E2E_ATTRIBUTES, uploads=True, references=_e2e_references,
))  # fmt: skip
register(Dataset(
    name="webnlg", title="WebNLG", label="WebNLG (DBpedia triples)",
    files="webnlg/{split}", loader=_load_webnlg, parse=_parse_triples,
    check=check_webnlg, value_mentions=value_mentions_webnlg, own_entities=own_entities_webnlg, attributable=attributable_webnlg,
    not_measured=frozenset({"wrong", "hallucinated"}), relation_words=True, entity_words=True,
    checker_note="The WebNLG checker finds each triple's object in the text (said, or said twice); it does not check "
    "whom the text says it of, so a triple marked realised can still be misattributed. The per-segment verdicts "
    "show which segment says each triple.",
    read_inputs=formats.read_webnlg_inputs, input_kind="WebNLG XML (a file or folder of <entry> elements)",
    foreign_suffixes=(".csv", ".tsv"),
    write_outputs=formats.write_lines, output_suffix="txt", evaluate=evaluate_webnlg,
    substitute=invented.substitute_webnlg, names=invented.names_webnlg, space="_", figures=invented.substitute_figures_webnlg,
    codes=invented.substitute_codes_webnlg,
    reserved=("|",), written="subject | predicate | object", columns=("subject", "predicate", "object"), row=lambda r: [r.subject or "", r.attribute, r.value],
    record=lambda cells: Record(attribute=cells[1], value=cells[2], subject=cells[0]), key=_triple_key,
    references=_webnlg_references, parse_upload=_webnlg_upload,
))  # fmt: skip
