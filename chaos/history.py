"""Recording a chaos run's history as JSON lines, the checker's input format.

Every client operation is an `invoke` line and later one completion: `ok`
(it returned), `fail` (it definitely had no effect) or `info` (unknown: a
timeout or a lost connection - it may have taken effect). Faults are lines
of process "nemesis" with their time; the checker skips them
(chaos/checker/README.md has the format).

Times are nanoseconds since the recorder started, from one monotonic clock
shared by every thread of the run, so the order of events across workers is
the order they happened on this machine. Lines are written and flushed under
a lock as they happen: a run that dies leaves a readable prefix.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

INVOKE, OK, FAIL, INFO = "invoke", "ok", "fail", "info"
NEMESIS = "nemesis"


@dataclass(frozen=True)
class Call:
    """An invoked operation waiting for its completion."""

    process: int
    f: str
    key: Any
    value: Any
    time_ns: int


class HistoryRecorder:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._file = self.path.open("w", encoding="utf-8")
        self._lock = threading.Lock()
        self._start = time.monotonic_ns()
        self.counts = {OK: 0, FAIL: 0, INFO: 0}
        self.faults = 0

    def now_ns(self) -> int:
        return time.monotonic_ns() - self._start

    def _write(self, line: dict[str, Any]) -> int:
        with self._lock:
            line["time"] = self.now_ns()
            self._file.write(json.dumps(line, separators=(",", ":")) + "\n")
            self._file.flush()
            return line["time"]

    def invoke(self, process: int, f: str, key: Any = None, value: Any = None) -> Call:
        at = self._write({"process": process, "type": INVOKE, "f": f, "key": key, "value": value})
        return Call(process, f, key, value, at)

    def complete(self, call: Call, kind: str, value: Any = None, **notes: Any) -> None:
        """`kind`: ok, fail or info; `value` is the output of an ok; notes (an error name) are kept."""
        if kind not in self.counts:
            raise ValueError(f"a completion is ok, fail or info, not {kind!r}")
        line = {"process": call.process, "type": kind, "f": call.f, "key": call.key}
        if kind == OK:
            line["value"] = value
        line.update(notes)
        self._write(line)
        with self._lock:
            self.counts[kind] += 1

    def fault(self, f: str, phase: str, **details: Any) -> None:
        """A fault starting or ending (phase "start"/"stop"), with what it hit."""
        self._write({"process": NEMESIS, "type": INFO, "f": f, "value": {"phase": phase, **details}})
        if phase == "start":
            with self._lock:
                self.faults += 1

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()

    def __enter__(self) -> "HistoryRecorder":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_history(path: Path) -> Iterator[dict[str, Any]]:
    """Every line of a recorded history, in order."""
    with Path(path).open(encoding="utf-8") as lines:
        for text in lines:
            if text.strip():
                yield json.loads(text)


def paired(lines: Iterable[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], Optional[dict[str, Any]]]]:
    """Client operations as they happen: (invoke, None) when an operation is
    invoked, (invoke, completion) when it completes. Fault lines and
    completions of nothing are skipped."""
    open_calls: dict[Any, dict[str, Any]] = {}
    for line in lines:
        if line["process"] == NEMESIS:
            continue
        if line["type"] == INVOKE:
            open_calls[line["process"]] = line
            yield line, None
            continue
        call = open_calls.pop(line["process"], None)
        if call is not None:
            yield call, line
