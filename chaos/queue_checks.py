"""Queue checks over a recorded queue-workload history, in the manner of
Jepsen's Kafka analyses: what acknowledged writes were lost, what was read
twice or out of order, what was read that nobody wrote.

The workload's history (chaos/history.py) holds, per process:
- `send`: invoke value = the unique value, key = "topic-partition";
  ok value = the offset it was written at (null: acknowledged without one -
  librdkafka's implicit ack of a batch a later batch's success covers, or
  DUPLICATE_SEQUENCE_NUMBER - so it must be in the log, at an offset only
  the reads tell); fail = not written; info = unknown
  (indeterminate: a timeout - e.g. past delivery.timeout.ms in a long
  fault - or a broken connection). A send still open when the history ends
  is unknown too. An unknown send may or may not be in the log: absent it
  is never "lost" (only counted, `lost-unacked-ok`), present it must be
  there once (the `duplicate` check holds it as any other value).
- `poll`: invoke value = {"consumer": C, "mode": "assign"|"subscribe"};
  ok value = {"topic-partition": [[offset, value], ...]} in the order polled.
  A consumer whose assignment changes writes an `assigned` note line
  (f "assign", ok value = the list of partitions it owns from then on).
- `final-read`: key = "topic-partition"; ok value = [[offset, value], ...],
  the whole partition read after every fault was healed.

`analyze()` is pure: the anomalies by kind, each with enough detail to find
it in the history. `to_log_model()` turns the same history into the input of
the checker's `log` model (sends as they are; every polled or finally read
record a `read` of its offset), so linearizability of each partition's log
is checked too.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Optional

from .history import FAIL, INFO, INVOKE, OK, paired

SEND, POLL, ASSIGN, FINAL_READ = "send", "poll", "assign", "final-read"

ANOMALY_KINDS = (
    "lost",              # acknowledged, absent from the final read
    "lost-unacked-ok",   # info send absent: allowed, counted for the summary only
    "duplicate",         # one value at two offsets
    "inconsistent-offset",  # one offset read with two values
    "wrong-offset",      # acknowledged at offset o, but o holds another value
    "non-monotonic",     # a consumer's stream of a partition went backwards without a reassignment
    "skip",              # an assigned consumer's stream jumped over an offset that holds a value
    "unexpected",        # a value read that no send invoked
)
# Kinds that break the promise (acks=all + clean election loses nothing);
# lost-unacked-ok is information.
FAILURES = tuple(k for k in ANOMALY_KINDS if k != "lost-unacked-ok")


@dataclass
class QueueReport:
    sends: dict[str, int] = field(default_factory=lambda: {OK: 0, FAIL: 0, INFO: 0})
    polled_records: int = 0
    final_records: int = 0
    open_sends: int = 0  # invoked, never completed: unknown outcome
    unknown_written: int = 0  # unknown sends (info or open) found in the final read
    anomalies: dict[str, list[Any]] = field(default_factory=lambda: {k: [] for k in ANOMALY_KINDS})

    @property
    def valid(self) -> bool:
        return not any(self.anomalies[k] for k in FAILURES)

    def counts(self) -> dict[str, int]:
        return {k: len(v) for k, v in self.anomalies.items()}


def analyze(history: Iterable[dict[str, Any]]) -> QueueReport:
    report = QueueReport()
    acked: dict[str, tuple[str, Optional[int]]] = {}  # value -> (partition, offset; None: not given)
    unknown: dict[str, str] = {}  # info sends: value -> partition
    invoked_values: set[str] = set()
    pending: dict[str, str] = {}  # sends not yet completed: value -> partition
    final: dict[str, dict[int, Any]] = {}
    # every (partition, offset) -> values seen, and value -> offsets seen
    at_offset: dict[tuple[str, int], set[Any]] = defaultdict(set)
    offsets_of: dict[Any, set[tuple[str, int]]] = defaultdict(set)
    streams: dict[tuple[Any, str], list[int]] = defaultdict(list)  # (consumer, partition) -> offsets
    stream_modes: dict[Any, str] = {}

    def seen(partition: str, offset: int, value: Any) -> None:
        at_offset[(partition, offset)].add(value)
        offsets_of[value].add((partition, offset))

    for call, line in paired(history):
        if line is None:
            if call["f"] == SEND:
                invoked_values.add(call["value"])
                pending[call["value"]] = call["key"]
            continue
        f, kind = call["f"], line["type"]
        if f == SEND:
            pending.pop(call["value"], None)
            report.sends[kind] += 1
            if kind == OK:
                offset = line["value"]
                acked[call["value"]] = (call["key"], None if offset is None else int(offset))
            elif kind == INFO:
                unknown[call["value"]] = call["key"]
        elif f == POLL and kind == OK:
            consumer = call["value"]["consumer"]
            stream_modes[consumer] = call["value"].get("mode", "assign")
            for partition, records in (line["value"] or {}).items():
                for offset, value in records:
                    report.polled_records += 1
                    seen(partition, offset, value)
                    streams[(consumer, partition)].append(offset)
        elif f == ASSIGN and kind == OK:
            consumer = call["value"]["consumer"]
            for partition in line["value"] or ():
                # a new assignment may restart from the committed offset: a new stream
                streams[(consumer, partition)].append(-1)
        elif f == FINAL_READ and kind == OK:
            records = final.setdefault(call["key"], {})
            for offset, value in line["value"] or ():
                report.final_records += 1
                records[offset] = value
                seen(call["key"], offset, value)

    report.open_sends = len(pending)
    for value, partition in pending.items():
        unknown.setdefault(value, partition)
    anomalies = report.anomalies
    final_values = {value for records in final.values() for value in records.values()}
    report.unknown_written = sum(1 for value in unknown if value in final_values)
    for value, (partition, offset) in sorted(acked.items(), key=lambda kv: (kv[1][0], kv[1][1] is not None,
                                                                              kv[1][1] or 0)):
        if value not in final_values:
            anomalies["lost"].append({"value": value, "partition": partition, "offset": offset})
        if offset is not None and final.get(partition, {}).get(offset, value) != value:
            anomalies["wrong-offset"].append({"value": value, "partition": partition, "acked_offset": offset,
                                              "holds": final[partition][offset]})
    for value, partition in sorted(unknown.items()):
        if value not in final_values:
            anomalies["lost-unacked-ok"].append({"value": value, "partition": partition})
    for value, places in offsets_of.items():
        if len(places) > 1:
            anomalies["duplicate"].append({"value": value, "at": sorted(places)})
        if value not in invoked_values:
            anomalies["unexpected"].append({"value": value, "at": sorted(places)})
    for (partition, offset), values in sorted(at_offset.items()):
        if len(values) > 1:
            anomalies["inconsistent-offset"].append({"partition": partition, "offset": offset,
                                                     "values": sorted(map(str, values))})
    for (consumer, partition), offsets in sorted(streams.items(), key=lambda kv: str(kv[0])):
        for stream in _split_streams(offsets):
            _check_stream(consumer, partition, stream, stream_modes.get(consumer) == "assign",
                          final.get(partition, {}), anomalies)
    return report


def _split_streams(offsets: list[int]) -> Iterator[list[int]]:
    stream: list[int] = []
    for offset in offsets:
        if offset == -1:
            if stream:
                yield stream
            stream = []
        else:
            stream.append(offset)
    if stream:
        yield stream


def _check_stream(consumer: Any, partition: str, stream: list[int], assigned: bool,
                  final: dict[int, Any], anomalies: dict[str, list[Any]]) -> None:
    for before, after in zip(stream, stream[1:]):
        if after <= before:
            anomalies["non-monotonic"].append({"consumer": consumer, "partition": partition,
                                               "from": before, "to": after})
        elif assigned:
            holes = [o for o in range(before + 1, after) if o in final]
            if holes:
                anomalies["skip"].append({"consumer": consumer, "partition": partition, "from": before,
                                          "to": after, "skipped": holes[:10]})


def to_log_model(history: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The history as the `log` model's input: sends as recorded, and each
    record of a poll or final read a `read` op of its own (its own process
    number, the poll's invoke and completion times). A final read also says
    where the log ends: nothing at the offset after its last record (it
    read up to the high watermark, after the workload stopped), so an
    acknowledged write past the end of the surviving log is a contradiction
    the checker sees, not just a value nobody read.

    A send of unknown outcome (info, or still open) is resolved where the
    reads decide it, which keeps the checker's search small after a long
    fault has left hundreds of them: one that some read saw took effect
    before that read returned, so it becomes an ok of the offset it was read
    at, returning when the earliest such read returned (the true
    linearization point lies in that narrower window, so no legal history
    turns illegal). One that no read ever saw is left out: had it taken
    effect it could always be placed after every other operation, so it
    changes no verdict. A value read at two offsets keeps the first: the
    other read then fails the check, as it must (never allowed twice)."""
    lines = list(history)
    first_seen: dict[Any, tuple[int, str, int]] = {}  # value -> (read return time, partition, offset)
    for call, line in paired(lines):
        if line is None or line["type"] != OK or call["f"] not in (POLL, FINAL_READ):
            continue
        for partition, offset, value in _records(call, line):
            if value not in first_seen or line["time"] < first_seen[value][0]:
                first_seen[value] = (line["time"], partition, offset)
    sends: dict[tuple[Any, int], dict[str, Any]] = {}  # a send's (process, invoke time) -> its completion
    for call, line in paired(lines):
        if call["f"] == SEND and line is not None:
            sends[(call["process"], call["time"])] = line
    next_process = 1 << 20  # above the workload's own process numbers
    for call, line in paired(lines):
        if call["f"] == SEND:
            if line is None:
                yield from _send_as_checked(call, sends.get((call["process"], call["time"])), first_seen)
            continue
        if line is None or line["type"] != OK or call["f"] not in (POLL, FINAL_READ):
            continue
        for partition, offset, value in _records(call, line):
            yield {"process": next_process, "type": INVOKE, "f": "read", "key": partition,
                   "value": offset, "time": call["time"]}
            yield {"process": next_process, "type": OK, "f": "read", "key": partition,
                   "value": value, "time": line["time"]}
            next_process += 1
        if call["f"] == FINAL_READ and line["value"]:
            end = line["value"][-1][0] + 1
            yield {"process": next_process, "type": INVOKE, "f": "read", "key": call["key"],
                   "value": end, "time": call["time"]}
            yield {"process": next_process, "type": OK, "f": "read", "key": call["key"], "time": line["time"]}
            next_process += 1


def _records(call: dict[str, Any], line: dict[str, Any]) -> Iterator[tuple[str, int, Any]]:
    """(partition, offset, value) of every record a poll or final read returned."""
    groups = line["value"].items() if call["f"] == POLL else [(call["key"], line["value"])]
    for partition, records in groups:
        for offset, value in records or ():
            yield partition, offset, value


def _send_as_checked(call: dict[str, Any], completion: Optional[dict[str, Any]],
                     first_seen: dict[Any, tuple[int, str, int]]) -> Iterator[dict[str, Any]]:
    if completion is not None and completion["type"] == OK and completion.get("value") is None:
        # Acknowledged without an offset: the reads place it, as an unknown
        # send's (analyze() holds it to being in the final read).
        completion = {**completion, "type": INFO}
    if completion is not None and completion["type"] != INFO:
        yield call
        yield completion
        return
    seen = first_seen.get(call["value"])
    if seen is None:
        return  # never observed: placed last in any linearization, it decides nothing
    returned, partition, offset = seen
    yield call
    if partition != call["key"] or returned < call["time"]:
        # read elsewhere, or before it was sent: left unknown, for the checker to refuse
        if completion is not None:
            yield completion
        return
    yield {"process": call["process"], "type": OK, "f": SEND, "key": call["key"], "value": offset,
           "time": returned, "resolved": "read back"}


# The checker models fed from the same history, and the ops of each.
MODEL_OPS = {"offsets": ("commit", "fetch"), "metadata": ("create", "delete", "describe")}


def model_history(history: Iterable[dict[str, Any]], model: str) -> Iterator[dict[str, Any]]:
    """The lines of one checker model's ops (offsets: the group members'
    commits and fetches; metadata: topic creates, deletes and describes)."""
    ops = MODEL_OPS[model]
    for call, line in paired(history):
        if call["f"] in ops:
            yield call if line is None else line


def summarize(report: QueueReport, *, faults: int, verdicts: dict[str, Optional[str]]) -> dict[str, Any]:
    """`verdicts`: the checker's per model (log, offsets, metadata); None if not checked."""
    return {"sends": report.sends, "polled_records": report.polled_records,
            "final_records": report.final_records, "faults": faults, "anomalies": report.counts(),
            "indeterminate_sends": {"info": report.sends[INFO], "open": report.open_sends,
                                    "written": report.unknown_written,
                                    "absent": len(report.anomalies["lost-unacked-ok"])},
            "valid": report.valid, "linearizable": verdicts["log"],
            "offsets_linearizable": verdicts["offsets"], "metadata_linearizable": verdicts["metadata"]}
