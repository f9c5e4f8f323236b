"""The committed modules in kraftlog_api/ are exactly what proto/ generates."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def load_generator():
    spec = importlib.util.spec_from_file_location("proto_generate", REPO / "proto" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_modules_are_up_to_date(tmp_path: Path) -> None:
    generator = load_generator()
    fresh = generator.generate(tmp_path)
    assert fresh, "no .proto files found"
    stale = []
    for path in fresh:
        committed = REPO / generator.PACKAGE / path.name
        if not committed.exists() or committed.read_bytes() != path.read_bytes():
            stale.append(path.name)
    committed_names = {p.name for p in (REPO / generator.PACKAGE).glob("*_pb2*.py*")}
    orphans = committed_names - {p.name for p in fresh}
    assert not stale, f"stale generated modules {stale}: run `make proto` and commit"
    assert not orphans, f"generated modules without a .proto: {sorted(orphans)}"
