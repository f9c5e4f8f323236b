"""Scenario files: commands and the exact trace they must print.

Regenerate the expected traces after a deliberate change with
    REWRITE=1 .venv/bin/pytest -q tests/metadata_quorum/test_scenarios.py
and read the diff: it is the protocol's behaviour change.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metadata_quorum.sim.scenario import render, run_script

SCENARIOS = sorted((Path(__file__).parent / "scenarios").glob("*.txt"))


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(path: Path) -> None:
    text = path.read_text()
    blocks, outputs = run_script(text)
    actual = render(blocks, outputs)
    if os.environ.get("REWRITE"):
        path.write_text(actual)
        return
    assert actual == text


def test_there_are_scenarios() -> None:
    assert len(SCENARIOS) >= 6
