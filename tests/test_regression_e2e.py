"""Slow regression test: the shipped E2E checkpoints still decode 60 fixed dev inputs to the
BLEU, checker counts and outputs stored in ``tests/data/regression_e2e.json``, within the
tolerance stored with them (see ``tests/regression_e2e.py``; refresh on purpose with
``python tests/regression_e2e.py``). Run by ``.ci/run`` as ``pytest -m slow tests/test_regression_e2e.py``."""

from __future__ import annotations

import json

import pytest
from conftest import DATA_DIR, data_available
from regression_e2e import COMMAND, COUNTS, FIXTURE, SYSTEMS, run

pytestmark = [
    pytest.mark.slow,
    pytest.mark.data,
    pytest.mark.skipif(not data_available(), reason="needs ../shared/data (set SEGVIZ_DATA)"),
]


@pytest.fixture(scope="module")
def fixture() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def now(fixture) -> dict:
    return run(DATA_DIR / "e2e" / "dev.csv", fixture["inputs"])


def test_fixture_is_current_in_shape(fixture) -> None:
    assert fixture["command"] == COMMAND and len(fixture["inputs"]) == 60
    assert set(fixture["systems"]) == set(SYSTEMS)
    for m in fixture["systems"].values():
        assert len(m["outputs"]) == 60 and 0.3 < m["bleu"] < 1


def _hint(system: str, what: str) -> str:
    return f"{system}: {what} (if the change is intended, refresh the fixture: {COMMAND})"


@pytest.mark.parametrize("system", list(SYSTEMS))
def test_shipped_checkpoint_still_scores_as_recorded(fixture, now, system) -> None:
    """BLEU within ±0.01 and every checker count within ±2 of the fixture."""
    want, got, tol = fixture["systems"][system], now[system], fixture["tolerance"]
    assert got["bleu"] == pytest.approx(want["bleu"], abs=tol["bleu"]), _hint(
        system, f"BLEU {got['bleu']:.4f}, recorded {want['bleu']:.4f}"
    )
    for k in COUNTS:
        assert abs(got[k] - want[k]) <= tol["count"], _hint(system, f"{k} {got[k]}, recorded {want[k]}")


@pytest.mark.parametrize("system", list(SYSTEMS))
def test_shipped_checkpoint_still_says_the_same(fixture, now, system) -> None:
    """At most 6 of the 60 outputs read differently: a refactoring of decoding changes none, so
    a change that moves many outputs without moving BLEU is still seen (and the fixture refreshed
    if it was meant)."""
    want, got, tol = fixture["systems"][system], now[system], fixture["tolerance"]
    changed = [i for i, (a, b) in enumerate(zip(got["outputs"], want["outputs"], strict=True)) if a != b]
    assert len(changed) <= tol["changed_outputs"], _hint(
        system,
        f"{len(changed)} of 60 outputs changed, e.g. {fixture['inputs'][changed[0]]!r}: "
        f"{got['outputs'][changed[0]]!r} (recorded {want['outputs'][changed[0]]!r})",
    )
