"""Checkpoints: a directory with safetensors weights and JSON config, vocab, history, metrics.

Layout::

    DIR/model.safetensors   weights (best validation loss so far)
    DIR/config.json         {"model": ModelConfig, "train": TrainConfig fields, "dataset": ...}
    DIR/vocab.json          the vocabulary (list of words, ids are positions)
    DIR/history.json        one entry per epoch (loss, validation loss, E[#seg] vs K, time); the
                            first epoch of each stretch of training also holds "command":
                            {"line": the command, shell-quoted, "started": UTC time,
                             "epochs": [first, last]} (see :func:`commands`); the shipped
                            checkpoints' were added afterwards from scripts/train_all.sh
                            ("started": null, and a "source" that says so)
    DIR/metrics.json        dev-set scores, written by the evaluation (optional)
    DIR/last/               resume state: weights + optimizer of the last finished epoch

Nothing is ever unpickled: a corrupted or foreign file raises :class:`CheckpointError`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from segviz.data import DATASETS, Vocab
from segviz.model import MODEL_KINDS, ModelConfig, PGModel, SegmentModel, build_model

log = logging.getLogger(__name__)

FORMAT = "segviz-checkpoint/1"


class CheckpointError(RuntimeError):
    """A checkpoint directory is missing, corrupted or not a segviz checkpoint."""


@dataclass
class Checkpoint:
    model: SegmentModel | PGModel
    vocab: Vocab
    config: dict  # as stored: {"format", "dataset", "model": {...}, "train": {...}}
    history: list[dict] = field(default_factory=list)
    metrics: dict = field(default_factory=dict)
    path: Path | None = None
    lexicon: dict = field(default_factory=dict)  # value lexicon (lexicon.json): word -> features
    default_rules: str | None = None  # value rules chosen for this checkpoint (lexicon.json), if any
    known_names: frozenset = frozenset()  # proper names of the training inputs (lexicon.json "names")
    segment_words: dict = field(default_factory=dict)  # attribute -> word -> values (lexicon.json "segments")
    relation_words: dict = field(default_factory=dict)  # word -> attributes (lexicon.json "relations")
    _partner: Checkpoint | None = field(default=None, repr=False, compare=False)  # partner(), once loaded

    def rules(self, name: str | None = None, partner: Checkpoint | None = None):
        """The decoding :class:`segviz.decode.ValueRules` called ``name`` with this checkpoint's
        lexicon; by default the ones chosen for it on the tuning half (``lexicon.json``), else
        :data:`segviz.decode.DEFAULT_VALUE_RULES`. With ``second`` on, a segment model's rules
        read the PG checkpoint ``partner`` (default: :meth:`partner`); a PG reads its own text
        and ``second`` is off for it."""
        from segviz import datasets, entities
        from segviz.decode import DEFAULT_VALUE_RULES, value_rules

        rules = value_rules(name or self.default_rules or DEFAULT_VALUE_RULES, self.lexicon)
        if rules is None:
            return None
        second = rules.second and isinstance(self.model, SegmentModel)
        return dataclasses.replace(
            rules, dataset=self.dataset, known=self.known_names, segment_words=self.segment_words,
            relation_words=self.relation_words, closed=datasets.get(self.dataset).closed_values,
            entities=entities.shipped(self.dataset),
            second=second, partner=(partner or self.partner()) if second else None,
        )  # fmt: skip

    def partner(self) -> Checkpoint:
        """The PG checkpoint beside this one (``<dataset>-pg`` in the same folder, as
        ``checkpoints/`` and ``scripts/train_all.sh`` lay them out), which the ``second`` rule
        reads; loaded once. Raises :class:`CheckpointError` when there is none."""
        if self._partner is None:
            where = self.path.parent / f"{self.dataset}-pg" if self.path else None
            if where is None or not (where / "config.json").exists():
                raise CheckpointError(f"the rule 'second' reads a PG checkpoint beside {self.path or 'this one'}: "
                                      f"{where or f'{self.dataset}-pg'} not found (give --pg, or decode without +second)")  # fmt: skip
            pg = load(where, next(self.model.parameters()).device)
            if isinstance(pg.model, SegmentModel) or pg.dataset != self.dataset:
                raise CheckpointError(f"{where}: the rule 'second' needs a PG checkpoint of dataset {self.dataset!r}")
            self._partner = pg
        return self._partner

    @property
    def model_config(self) -> ModelConfig:
        return self.model.cfg

    @property
    def dataset(self) -> str:
        return self.config.get("dataset", "e2e")

    @property
    def name(self) -> str:
        return self.path.name if self.path else f"{self.dataset}-{self.model_config.kind}"


def _write_json(path: Path, obj) -> None:
    """Atomic write: a crash never leaves half a JSON file behind."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, ensure_ascii=False))
    os.replace(tmp, path)


def _save_tensors(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    tmp = path.with_suffix(".tmp")
    save_file({k: v.detach().contiguous() for k, v in tensors.items()}, str(tmp))
    os.replace(tmp, path)


def save(
    path: Path | str,
    model: SegmentModel | PGModel,
    vocab: Vocab,
    dataset: str,
    train_config: dict | None = None,
    history: list[dict] | None = None,
) -> None:
    """Write weights, config, vocab and history into ``path`` (created if needed)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    _save_tensors(path / "model.safetensors", model.state_dict())
    config = {"format": FORMAT, "dataset": dataset, "model": model.cfg.to_json(), "train": train_config or {}}
    _write_json(path / "config.json", config)
    _write_json(path / "vocab.json", vocab.to_json())
    _write_json(path / "history.json", history or [])


def write_history(path: Path | str, history: list[dict]) -> None:
    _write_json(Path(path) / "history.json", history)


def commands(history: list[dict]) -> list[dict]:
    """The command lines that trained a checkpoint, in order: ``{"line", "started", "epochs":
    [first, last]}`` per stretch of epochs (``--resume`` and ``--init`` add one; entries written
    before commands were recorded have none)."""
    return [e["command"] for e in history if isinstance(e, dict) and isinstance(e.get("command"), dict)]


def write_metrics(path: Path | str, metrics: dict) -> None:
    _write_json(Path(path) / "metrics.json", metrics)


def _read_json(path: Path, what: str):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise CheckpointError(f"{path.parent}: no {path.name} ({what}); not a segviz checkpoint") from e
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CheckpointError(f"{path}: corrupted {what} ({e})") from e


def load_weights(model: torch.nn.Module, file: Path) -> None:
    """Load safetensors weights into ``model``, checking names and shapes."""
    try:
        tensors = load_file(str(file))
    except FileNotFoundError as e:
        raise CheckpointError(f"{file.parent}: no {file.name}") from e
    except (SafetensorError, OSError, ValueError, RuntimeError) as e:
        raise CheckpointError(f"{file}: not a readable safetensors file ({e})") from e
    expected = model.state_dict()
    missing = sorted(set(expected) - set(tensors))
    extra = sorted(set(tensors) - set(expected))
    if missing or extra:
        raise CheckpointError(
            f"{file}: weights do not match the config (missing {missing[:3]}, unexpected {extra[:3]})"
        )
    for k, v in tensors.items():
        if v.shape != expected[k].shape:
            raise CheckpointError(
                f"{file}: tensor {k} has shape {tuple(v.shape)}, config wants {tuple(expected[k].shape)}"
            )
    model.load_state_dict(tensors)


def _int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


# model config field -> (check, what is expected); fields not listed are left to ModelConfig
_MODEL_FIELDS = {
    "kind": (
        lambda v: isinstance(v, str) and v in MODEL_KINDS,
        f"one of {', '.join(map(repr, MODEL_KINDS))}",
    ),
    "vocab_size": (lambda v: _int(v) and v >= 1, "a positive integer"),
    "emb_dim": (lambda v: _int(v) and v >= 1, "a positive integer"),
    "hidden": (lambda v: _int(v) and v >= 2 and v % 2 == 0, "an even integer of at least 2"),
    "dropout": (lambda v: _number(v) and 0 <= v < 1, "a number from 0 up to (not including) 1"),
    "max_seg_len": (lambda v: _int(v) and v >= 1, "an integer of at least 1"),
    "reg_weight": (lambda v: _number(v) and v >= 0, "a number of at least 0"),
    "reg_gamma": (lambda v: _number(v) and v >= 0, "a number of at least 0"),
}


def validate_config(config: dict, file: Path | str = "config.json") -> None:
    """Check types, ranges and known kinds of a stored config; raise :class:`CheckpointError` with
    one sentence naming the file, the field and what is expected."""
    dataset = config.get("dataset", "e2e")
    if dataset not in DATASETS:
        raise CheckpointError(
            f"{file}: field 'dataset' must be one of {', '.join(map(repr, DATASETS))}, got {dataset!r}"
        )
    model = config.get("model")
    if not isinstance(model, dict):
        raise CheckpointError(
            f"{file}: field 'model' must be an object with the model settings, got {model!r}"
        )
    for name, (ok, expected) in _MODEL_FIELDS.items():
        if name in model and not ok(model[name]):
            raise CheckpointError(f"{file}: field 'model.{name}' must be {expected}, got {model[name]!r}")


def load(path: Path | str, device: str | torch.device | None = None) -> Checkpoint:
    """Rebuild the model from a checkpoint directory alone (eval mode, CPU). ``device``
    (``cpu``, ``cuda``, ``auto``; :func:`segviz.device.resolve_device`) moves it there: the weights
    are stored on the host, so a checkpoint trained on any device loads on any other."""
    path = Path(path)
    if not path.is_dir():
        raise CheckpointError(f"{path}: checkpoint directory not found")
    config = _read_json(path / "config.json", "config")
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise CheckpointError(f"{path}/config.json: not a {FORMAT} config")
    validate_config(config, path / "config.json")
    try:
        mcfg = ModelConfig.from_json(config["model"])
        vocab = Vocab.from_json(_read_json(path / "vocab.json", "vocabulary"))
    except (KeyError, TypeError, ValueError) as e:
        raise CheckpointError(f"{path}: invalid config or vocabulary ({e})") from e
    if len(vocab) != mcfg.vocab_size:
        raise CheckpointError(f"{path}: vocabulary has {len(vocab)} words, config says {mcfg.vocab_size}")
    try:
        model = build_model(mcfg)
    except (TypeError, ValueError, RuntimeError) as e:  # a field the checks above do not know
        raise CheckpointError(f"{path}/config.json: the model cannot be built from this config ({e})") from e
    load_weights(model, path / "model.safetensors")
    if device is not None:
        from segviz.device import resolve_device

        model.to(resolve_device(device))
    model.eval()
    history = _read_json(path / "history.json", "history") if (path / "history.json").exists() else []
    metrics = _read_json(path / "metrics.json", "metrics") if (path / "metrics.json").exists() else {}
    from segviz import lexicon

    return Checkpoint(model, vocab, config, history, metrics, path, *lexicon.read(path))


# ----- resume state ---------------------------------------------------------------------------


def save_resume(
    path: Path | str, model: torch.nn.Module, optimizer: torch.optim.Optimizer, state: dict
) -> None:
    """Weights + Adam moments + loop state of the last finished epoch into ``path/last``."""
    last = Path(path) / "last"
    last.mkdir(parents=True, exist_ok=True)
    _save_tensors(last / "model.safetensors", model.state_dict())
    opt = optimizer.state_dict()
    tensors, scalars = {}, {}
    for pid, st in opt["state"].items():
        for k, v in st.items():
            if torch.is_tensor(v) and v.dim() > 0:
                tensors[f"{pid}.{k}"] = v
            else:
                scalars[f"{pid}.{k}"] = float(v)
    _save_tensors(last / "optimizer.safetensors", tensors or {"_empty": torch.zeros(1)})
    _write_json(last / "state.json", {**state, "opt_scalars": scalars, "param_groups": opt["param_groups"]})


def load_resume(path: Path | str, model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict | None:
    """Restore :func:`save_resume`'s state; ``None`` when there is nothing to resume."""
    last = Path(path) / "last"
    if not (last / "state.json").exists():
        return None
    state = _read_json(last / "state.json", "resume state")
    load_weights(model, last / "model.safetensors")
    try:
        tensors = load_file(str(last / "optimizer.safetensors"))
    except (SafetensorError, OSError, ValueError) as e:
        raise CheckpointError(f"{last}/optimizer.safetensors: unreadable ({e})") from e
    opt_state: dict[int, dict] = {}
    for key, v in tensors.items():
        if key == "_empty":
            continue
        pid, k = key.split(".", 1)
        opt_state.setdefault(int(pid), {})[k] = v
    for key, v in state.pop("opt_scalars").items():
        pid, k = key.split(".", 1)
        opt_state.setdefault(int(pid), {})[k] = torch.tensor(v)
    optimizer.load_state_dict({"state": opt_state, "param_groups": state.pop("param_groups")})
    return state
