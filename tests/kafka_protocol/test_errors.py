"""The one table of Kafka's error codes, and that nobody writes it again."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kafka_protocol.error_table import ROWS
from kafka_protocol.errors import (CorruptRecordError, Errors, KafkaError, OffsetOutOfRangeError, error_message,
                                   error_name, is_retriable)

ROOT = Path(__file__).resolve().parents[2]


def test_codes_and_names_are_unique() -> None:
    codes = [row.code for row in ROWS]
    names = [row.name for row in ROWS]
    assert len(set(codes)) == len(codes)
    assert len(set(names)) == len(names)
    assert codes == sorted(codes)


def test_the_table_runs_from_unknown_server_error_with_no_gaps() -> None:
    codes = [row.code for row in ROWS]
    assert codes[0] == -1 and codes == list(range(-1, codes[-1] + 1))
    assert codes[-1] >= 133


def test_the_enum_is_the_table() -> None:
    assert [(e.name, e.value) for e in Errors] == [(row.name, row.code) for row in ROWS]
    for row in ROWS:
        member = Errors(row.code)
        assert (member.retriable, member.message, member.code) == (row.retriable, row.message, row.code)
        assert row.message and "\n" not in row.message


@pytest.mark.parametrize("code, name, retriable", [
    (-1, "UNKNOWN_SERVER_ERROR", False),
    (0, "NONE", False),
    (1, "OFFSET_OUT_OF_RANGE", False),
    (2, "CORRUPT_MESSAGE", True),
    (3, "UNKNOWN_TOPIC_OR_PARTITION", True),
    (6, "NOT_LEADER_OR_FOLLOWER", True),
    (7, "REQUEST_TIMED_OUT", True),
    (19, "NOT_ENOUGH_REPLICAS", True),
    (41, "NOT_CONTROLLER", True),
    (56, "KAFKA_STORAGE_ERROR", True),
    (87, "INVALID_RECORD", False),
    (90, "PRODUCER_FENCED", False),
    (94, "INCONSISTENT_VOTER_SET", False),
    (98, "SNAPSHOT_NOT_FOUND", False),
    (99, "POSITION_OUT_OF_RANGE", False),
    (104, "INCONSISTENT_CLUSTER_ID", False),
    (107, "INELIGIBLE_REPLICA", False),
    (108, "NEW_LEADER_ELECTED", False),
    (110, "FENCED_MEMBER_EPOCH", False),
    (113, "STALE_MEMBER_EPOCH", False),
    (128, "INVALID_REGULAR_EXPRESSION", False),
])
def test_well_known_rows(code: int, name: str, retriable: bool) -> None:
    assert Errors[name] == code and error_name(code) == name
    assert is_retriable(code) is retriable


def test_unknown_codes() -> None:
    assert error_name(12345) == "ERROR_CODE_12345"
    assert error_name(-2) == "ERROR_CODE_-2"
    assert not is_retriable(12345)
    assert "12345" in error_message(12345)
    with pytest.raises(ValueError):
        Errors(12345)


def test_kafka_errors_take_their_code_from_the_table() -> None:
    assert (CorruptRecordError.name, CorruptRecordError.code, CorruptRecordError.retriable) == \
        ("CORRUPT_MESSAGE", 2, True)
    assert (OffsetOutOfRangeError.code, OffsetOutOfRangeError.retriable) == (1, False)
    assert str(OffsetOutOfRangeError("offset 9 of t-0")) == "OFFSET_OUT_OF_RANGE: offset 9 of t-0"
    assert str(KafkaError()) == "UNKNOWN_SERVER_ERROR"


# --- the table is written once --------------------------------------------------

PACKAGES = [p for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists() or p.name == "tests"]
# NONE is also a plain word (Codec.NONE = 0, quorum-state NONE = -1): left out of the scan.
KNOWN = {row.name: row.code for row in ROWS if row.name != "NONE"}


def _python_files() -> list[Path]:
    files = []
    for package in PACKAGES:
        if package.name == "kraftlog_api":
            continue  # generated protobuf modules
        files += [f for f in package.rglob("*.py") if ".venv" not in f.parts]
    return files


def _kafka_codes_assigned(body: list[ast.stmt]) -> list[str]:
    """The `NAME = number` statements of `body` that restate a row of the table."""
    found = []
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = stmt.value
            if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) and isinstance(value.operand,
                                                                                                ast.Constant):
                number = -value.operand.value
            elif isinstance(value, ast.Constant):
                number = value.value
            else:
                continue
            name = stmt.targets[0].id
            if type(number) is int and KNOWN.get(name) == number:
                found.append(f"{name} = {number}")
    return found


def test_no_module_writes_kafka_error_codes_again() -> None:
    """No class (an IntEnum of codes, say) and no module restates a code of
    the table as `NAME = number`: use `Errors.NAME` instead."""
    offenders = []
    for path in _python_files():
        if path.parent.name == "kafka_protocol" and path.name in ("error_table.py", "errors.py"):
            continue
        tree = ast.parse(path.read_text(), str(path))
        bodies = [tree.body] + [node.body for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
        for body in bodies:
            offenders += [f"{path.relative_to(ROOT)}: {found}" for found in _kafka_codes_assigned(body)]
    assert not offenders, "Kafka error codes written outside kafka_protocol/error_table.py:\n" + "\n".join(offenders)


def test_the_scan_sees_our_packages() -> None:
    names = {p.name for p in PACKAGES}
    assert {"broker", "client", "metadata_quorum", "kafka_protocol", "tests"} <= names
