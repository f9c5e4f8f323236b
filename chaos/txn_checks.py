"""Checks over a transactional workload's history (chaos/txn_workload.py),
in the spirit of Jepsen's Kafka, Redpanda and Bufstream analyses.

The history's ops (chaos/history.py lines):
- `txn`: key = the transactional id; invoke value = {"id": T, "writes":
  {"topic-partition": [value, ...]}, "consumed": {"topic-partition":
  [[offset, value], ...]}, "offsets": {"topic-partition": next offset
  committed with it}, "intent": "commit"|"abort"}. Completion: ok value
  "commit" or "abort" (what the producer was told), info (unknown: a
  timeout, a crash, a fenced zombie; note "zombie": true for a producer
  that was replaced while the transaction was open). Every completion has
  "end_ns", the time EndTxn was asked for (absent: never asked).
- `poll`: invoke value = {"consumer": C, "isolation": "read_committed" |
  "read_uncommitted"}; ok value = {"topic-partition": [[offset, value], ...]}.
  `assign` lines (ok value = partitions) restart a consumer's streams.
- `final-read`: key = partition, invoke value = {"isolation": ...}; ok value
  = [[offset, value], ...], the whole partition after every fault healed
  and every transaction ended.
- `stable`: ok value = {"topic-partition": [last stable offset, high
  watermark]} before the final reads (they read up to each).
- `group-offsets`: ok value = {"topic-partition": offset}, the group's
  committed offsets at the end.
- `late-end-txn`: a raw EndTxn re-sent with an ended epoch; ok value = the
  error name it got (counted, not judged: the data is).

An unknown transaction is resolved by the final read_committed read: it
committed if any of its values is there, else it aborted. Then, over
committed (C) and aborted (A) transactions:

aborted-read        a read_committed read (a poll, a final read, or what a
                    transaction consumed) holds a value of a transaction in A
torn                a transaction in C whose values the final read_committed
                    read holds only in part; or a read_committed consumer
                    that read past every value of it in every partition and
                    saw some of them only
lost                a transaction told "commit" with none of its values read finally
skip                a read_committed stream of a partition passed over a
                    value of a transaction in C
duplicate           one value at two offsets
inconsistent-offset one offset read with two values
non-monotonic       a consumer's stream of a partition went backwards
intermediate-read   a read_committed poll returned a value of T before T's
                    commit was asked for (it saw an open transaction)
unexpected          a value read that no transaction wrote
g1c                 a cycle of write-write (log order in a partition, between
                    transactions that did not overlap in time) and
                    write-read (a transaction consumed another's value)
                    dependencies between transactions in C
double-consume      an input record consumed by two transactions in C
consume-skip        an input record visible to read_committed that no
                    transaction in C consumed, below the group's last
                    committed offset
offsets-mismatch    a transaction in C whose committed offset is not just
                    past what it consumed (at or below its last record, or
                    past a visible record it did not consume), or the
                    group's final offset differs from the last one committed
zombie-commit       a transaction of a fenced (replaced) producer committed
hanging             a partition whose last stable offset stayed below its
                    high watermark after healing, past every transaction's
                    timeout (a transaction open there that nobody ends)
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

from .history import INFO, OK, paired

TXN, POLL, ASSIGN, FINAL_READ, STABLE, GROUP_OFFSETS, LATE_END_TXN = (
    "txn", "poll", "assign", "final-read", "stable", "group-offsets", "late-end-txn")
READ_COMMITTED, READ_UNCOMMITTED = "read_committed", "read_uncommitted"
COMMIT, ABORT, UNKNOWN = "commit", "abort", "unknown"

ANOMALY_KINDS = ("aborted-read", "torn", "lost", "skip", "duplicate", "inconsistent-offset", "non-monotonic",
                 "intermediate-read", "unexpected", "g1c", "double-consume", "consume-skip", "offsets-mismatch",
                 "zombie-commit", "hanging")
# The listing of each kind keeps this many examples; the counts are exact.
EXAMPLES = 50


@dataclass
class Txn:
    id: str
    tid: str
    writes: dict[str, list[str]]
    consumed: dict[str, list[tuple[int, str]]]
    offsets: dict[str, int]
    intent: str
    invoked_ns: int
    told: Optional[str] = None  # "commit" | "abort" | None (unknown)
    end_ns: Optional[int] = None
    completed_ns: Optional[int] = None  # when the client heard (None: never)
    zombie: bool = False
    resolved: str = UNKNOWN  # commit | abort, once resolved

    @property
    def values(self) -> list[str]:
        return [v for values in self.writes.values() for v in values]


@dataclass
class Stream:
    """What one consumer read of one partition, in order, since its last (re)assignment."""
    consumer: str
    partition: str
    isolation: str
    records: list[tuple[int, str, int]] = field(default_factory=list)  # offset, value, completion time


@dataclass
class TxnReport:
    anomalies: dict[str, list[Any]] = field(default_factory=lambda: {k: [] for k in ANOMALY_KINDS})
    counts: dict[str, int] = field(default_factory=lambda: {k: 0 for k in ANOMALY_KINDS})
    transactions: dict[str, int] = field(default_factory=dict)
    late_end_txn: dict[str, int] = field(default_factory=dict)
    polled_records: int = 0
    final_records: int = 0

    def add(self, kind: str, detail: Any) -> None:
        self.counts[kind] += 1
        if len(self.anomalies[kind]) < EXAMPLES:
            self.anomalies[kind].append(detail)

    @property
    def valid(self) -> bool:
        return not any(self.counts.values())


@dataclass
class _Parsed:
    txns: dict[str, Txn] = field(default_factory=dict)
    streams: list[Stream] = field(default_factory=list)
    final: dict[str, dict[str, list[tuple[int, str]]]] = field(
        default_factory=lambda: {READ_COMMITTED: {}, READ_UNCOMMITTED: {}})
    group_offsets: Optional[dict[str, int]] = None
    stable: dict[str, list[int]] = field(default_factory=dict)
    late_end_txn: dict[str, int] = field(default_factory=lambda: defaultdict(int))


def _parse(history: Iterable[dict[str, Any]], report: TxnReport) -> _Parsed:
    parsed = _Parsed()
    open_streams: dict[tuple[str, str], Stream] = {}
    for call, line in paired(history):
        f = call["f"]
        if line is None:
            if f == TXN:  # never completed (the run ended first): unknown
                v = call["value"]
                parsed.txns[v["id"]] = Txn(v["id"], call["key"], v["writes"],
                                           {p: [(int(o), val) for o, val in rs]
                                            for p, rs in v.get("consumed", {}).items()},
                                           {p: int(o) for p, o in v.get("offsets", {}).items()},
                                           v.get("intent", COMMIT), call["time"])
            continue
        kind = line["type"]
        if f == TXN:
            txn = parsed.txns[call["value"]["id"]]
            txn.end_ns, txn.zombie, txn.completed_ns = line.get("end_ns"), bool(line.get("zombie")), line["time"]
            if kind == OK:
                txn.told = line["value"]
            elif kind != INFO:  # fail: it definitely had no effect
                txn.told = ABORT
        elif f == POLL and kind == OK:
            consumer = call["value"]["consumer"]
            isolation = call["value"].get("isolation", READ_UNCOMMITTED)
            for partition, records in (line["value"] or {}).items():
                stream = open_streams.get((consumer, partition))
                if stream is None:
                    stream = open_streams[(consumer, partition)] = Stream(consumer, partition, isolation)
                    parsed.streams.append(stream)
                for offset, value in records:
                    report.polled_records += 1
                    stream.records.append((int(offset), value, line["time"]))
        elif f == ASSIGN and kind == OK:
            consumer = call["value"]["consumer"]
            for partition in line["value"] or ():
                open_streams.pop((consumer, partition), None)
        elif f == FINAL_READ and kind == OK:
            isolation = (call["value"] or {}).get("isolation", READ_UNCOMMITTED)
            records = [(int(o), v) for o, v in line["value"] or ()]
            report.final_records += len(records)
            parsed.final[isolation][call["key"]] = records
        elif f == STABLE and kind == OK:
            parsed.stable = line["value"]
        elif f == GROUP_OFFSETS and kind == OK:
            parsed.group_offsets = {p: int(o) for p, o in line["value"].items()}
        elif f == LATE_END_TXN and kind == OK:
            parsed.late_end_txn[str(line["value"])] += 1
    return parsed


def analyze(history: Iterable[dict[str, Any]]) -> TxnReport:
    report = TxnReport()
    parsed = _parse(history, report)
    txns = parsed.txns
    writer = {value: txn for txn in txns.values() for value in txn.values}
    committed_final = {v for records in parsed.final[READ_COMMITTED].values() for _, v in records}
    positions = _positions(parsed, report)
    # A final read_committed read stops at the last stable offset: what lies
    # beyond it (behind a hanging transaction) it cannot judge.
    beyond = {v for v, (p, o) in positions.items() if p in parsed.stable and o >= parsed.stable[p][0]}
    read_committed = committed_final | {v for s in parsed.streams if s.isolation == READ_COMMITTED
                                        for _, v, _ in s.records}
    _resolve(txns, committed_final, beyond, read_committed, report)
    _final_reads(txns, committed_final, beyond, report)
    _reads(parsed, txns, writer, positions, report)
    _consumption(parsed, txns, writer, positions, report)
    _cycles(txns, writer, positions, report)
    for txn in txns.values():
        if txn.zombie and txn.resolved == COMMIT:
            report.add("zombie-commit", {"txn": txn.id, "tid": txn.tid})
    for partition, (stable, end) in sorted(parsed.stable.items()):
        if stable < end:
            report.add("hanging", {"partition": partition, "last_stable_offset": stable, "high_watermark": end})
    report.late_end_txn = dict(sorted(parsed.late_end_txn.items()))
    return report


def _resolve(txns: dict[str, Txn], committed_final: set[str], beyond: set[str], read_committed: set[str],
             report: TxnReport) -> None:
    """An unknown transaction committed if the final read_committed read has a
    value of it; one wholly beyond that read, if any read_committed reader saw it."""
    told = {COMMIT: 0, ABORT: 0, UNKNOWN: 0}
    unknown_committed = 0
    for txn in txns.values():
        told[txn.told or UNKNOWN] += 1
        if txn.told is not None:
            txn.resolved = txn.told
        else:
            judged = committed_final if not set(txn.values) <= beyond else read_committed
            txn.resolved = COMMIT if any(v in judged for v in txn.values) else ABORT
            unknown_committed += txn.resolved == COMMIT
    report.transactions = {"committed": told[COMMIT], "aborted": told[ABORT], "unknown": told[UNKNOWN],
                           "unknown_committed": unknown_committed,
                           "unknown_aborted": told[UNKNOWN] - unknown_committed,
                           "intended_aborts": sum(t.intent == ABORT for t in txns.values()),
                           "zombies": sum(t.zombie for t in txns.values())}


def _positions(parsed: _Parsed, report: TxnReport) -> dict[str, tuple[str, int]]:
    """Every value's (partition, offset), from every read; a value at two
    offsets is a duplicate, an offset with two values inconsistent."""
    at_offset: dict[tuple[str, int], set[str]] = defaultdict(set)
    places: dict[str, set[tuple[str, int]]] = defaultdict(set)

    def seen(partition: str, offset: int, value: str) -> None:
        at_offset[(partition, offset)].add(value)
        places[value].add((partition, offset))

    for finals in parsed.final.values():
        for partition, records in finals.items():
            for offset, value in records:
                seen(partition, offset, value)
    for stream in parsed.streams:
        for offset, value, _ in stream.records:
            seen(stream.partition, offset, value)
    for txn in parsed.txns.values():
        for partition, records in txn.consumed.items():
            for offset, value in records:
                seen(partition, offset, value)
    for value, where in sorted(places.items()):
        if len(where) > 1:
            report.add("duplicate", {"value": value, "at": sorted(where)})
    for (partition, offset), values in sorted(at_offset.items()):
        if len(values) > 1:
            report.add("inconsistent-offset", {"partition": partition, "offset": offset, "values": sorted(values)})
    return {value: min(where) for value, where in places.items()}


def _final_reads(txns: dict[str, Txn], committed_final: set[str], beyond: set[str], report: TxnReport) -> None:
    for txn in txns.values():
        judged = [v for v in txn.values if v not in beyond]
        if txn.resolved != COMMIT or not judged:
            continue
        present = [v for v in txn.values if v in committed_final]
        if not present and len(judged) == len(txn.values):
            report.add("lost", {"txn": txn.id, "values": txn.values})
        elif len(present) < len(judged):
            report.add("torn", {"txn": txn.id, "reader": "final read_committed",
                                "missing": sorted(set(txn.values) - set(present))})


def _reads(parsed: _Parsed, txns: dict[str, Txn], writer: dict[str, Txn],
           positions: dict[str, tuple[str, int]], report: TxnReport) -> None:
    rc_streams = [s for s in parsed.streams if s.isolation == READ_COMMITTED]
    rc_streams += [Stream("final", p, READ_COMMITTED, [(o, v, -1) for o, v in records])
                   for p, records in parsed.final[READ_COMMITTED].items()]
    for stream in parsed.streams + [Stream("final-uncommitted", p, READ_UNCOMMITTED, [(o, v, -1) for o, v in rs])
                                    for p, rs in parsed.final[READ_UNCOMMITTED].items()]:
        offsets = [o for o, _, _ in stream.records]
        for before, after in zip(offsets, offsets[1:]):
            if after <= before:
                report.add("non-monotonic", {"consumer": stream.consumer, "partition": stream.partition,
                                             "from": before, "to": after})
        for offset, value, _ in stream.records:
            if value not in writer:
                report.add("unexpected", {"value": value, "partition": stream.partition, "offset": offset,
                                          "consumer": stream.consumer})
    # Committed values per partition in log order, for skips.
    committed_at: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for value, (partition, offset) in positions.items():
        txn = writer.get(value)
        if txn is not None and txn.resolved == COMMIT:
            committed_at[partition].append((offset, value))
    for records in committed_at.values():
        records.sort()
    seen_by: dict[str, set[str]] = defaultdict(set)
    read_up_to: dict[str, dict[str, int]] = defaultdict(dict)
    for stream in rc_streams:
        key = stream.consumer
        if not stream.records:
            continue
        for offset, value, done_ns in stream.records:
            seen_by[key].add(value)
            txn = writer.get(value)
            if txn is None:
                continue
            if txn.resolved == ABORT:
                report.add("aborted-read", {"value": value, "txn": txn.id, "told": txn.told or UNKNOWN,
                                            "consumer": stream.consumer, "partition": stream.partition,
                                            "offset": offset})
            elif done_ns >= 0 and (txn.end_ns is None or done_ns < txn.end_ns):
                report.add("intermediate-read", {"value": value, "txn": txn.id, "consumer": stream.consumer,
                                                 "read_ns": done_ns, "commit_asked_ns": txn.end_ns})
        if stream.consumer == "final":
            continue  # the final read's gaps are lost or torn transactions, counted once above
        first, last = stream.records[0][0], stream.records[-1][0]
        read_up_to[key][stream.partition] = max(read_up_to[key].get(stream.partition, -1), last)
        read = {o for o, _, _ in stream.records}
        for offset, value in committed_at.get(stream.partition, ()):
            if first <= offset <= last and offset not in read:
                report.add("skip", {"consumer": stream.consumer, "partition": stream.partition,
                                    "offset": offset, "value": value})
    # Atomicity: a consumer past every write of a committed transaction saw all or nothing of it.
    for consumer, up_to in read_up_to.items():
        for txn in txns.values():
            if txn.resolved != COMMIT or not txn.values:
                continue
            where = [positions.get(v) for v in txn.values]
            if any(w is None or up_to.get(w[0], -1) <= w[1] for w in where):
                continue
            seen = [v for v in txn.values if v in seen_by[consumer]]
            if 0 < len(seen) < len(txn.values):
                report.add("torn", {"txn": txn.id, "reader": consumer,
                                    "missing": sorted(set(txn.values) - set(seen))})


def _consumption(parsed: _Parsed, txns: dict[str, Txn], writer: dict[str, Txn],
                 positions: dict[str, tuple[str, int]], report: TxnReport) -> None:
    """What transactions consumed: read_committed reads themselves, and exactly
    the records between the group's offsets before and after each commit."""
    visible = {p: sorted(o for o, _ in records) for p, records in parsed.final[READ_COMMITTED].items()}
    consumed_by: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    last_committed: dict[str, int] = {}
    for txn in txns.values():
        for partition, records in txn.consumed.items():
            for offset, value in records:
                source = writer.get(value)
                if source is not None and source.resolved == ABORT:
                    report.add("aborted-read", {"value": value, "txn": source.id, "told": source.told or UNKNOWN,
                                                "consumer": f"transaction {txn.id}", "partition": partition,
                                                "offset": offset})
        if txn.resolved != COMMIT:
            continue
        for partition, next_offset in txn.offsets.items():
            records = txn.consumed.get(partition, [])
            for offset, _ in records:
                consumed_by[partition][offset].append(txn.id)
            last_committed[partition] = max(last_committed.get(partition, 0), next_offset)
            last = max((o for o, _ in records), default=None)
            if last is not None and next_offset <= last:
                report.add("offsets-mismatch", {"txn": txn.id, "partition": partition, "committed": next_offset,
                                                "last_consumed": last})
            elif last is not None:
                passed = [o for o in visible.get(partition, ()) if last < o < next_offset]
                if passed:
                    report.add("offsets-mismatch", {"txn": txn.id, "partition": partition,
                                                    "committed": next_offset, "not_consumed": passed[:10]})
    for partition, by_offset in sorted(consumed_by.items()):
        for offset, who in sorted(by_offset.items()):
            if len(who) > 1:
                report.add("double-consume", {"partition": partition, "offset": offset, "txns": who})
    for partition, upto in sorted(last_committed.items()):
        missed = [o for o in visible.get(partition, ()) if o < upto and o not in consumed_by[partition]]
        for offset in missed:
            report.add("consume-skip", {"partition": partition, "offset": offset})
    if parsed.group_offsets is not None:
        for partition, upto in sorted(last_committed.items()):
            found = parsed.group_offsets.get(partition, -1)
            if found != upto:
                report.add("offsets-mismatch", {"partition": partition, "group_offset": found,
                                                "last_committed": upto})


def _cycles(txns: dict[str, Txn], writer: dict[str, Txn], positions: dict[str, tuple[str, int]],
            report: TxnReport) -> None:
    """G1c: strongly connected components of more than one committed
    transaction in the graph of wr edges (a transaction consumed another's
    value) and ww edges (log order in a partition). Kafka lets concurrent
    transactions interleave their writes in a partition, so the log orders
    two transactions only when one had finished before the other began: ww
    edges join only such pairs (each transaction to the first later one in
    the partition's log that began after it finished). A cycle then means
    some transaction consumed a value before its writer committed."""
    edges: dict[str, set[str]] = defaultdict(set)
    kinds: dict[tuple[str, str], str] = {}
    by_partition: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for value, (partition, offset) in positions.items():
        txn = writer.get(value)
        if txn is not None and txn.resolved == COMMIT:
            by_partition[partition].append((offset, txn.id))
    for records in by_partition.values():
        order = list(dict.fromkeys(t for _, t in sorted(records)))  # each transaction once, at its first write
        for i, a in enumerate(order):
            finished = txns[a].completed_ns
            if finished is None:
                continue
            later = next((b for b in order[i + 1:] if txns[b].invoked_ns > finished), None)
            if later is not None:
                edges[a].add(later)
                kinds.setdefault((a, later), "ww")
    for txn in txns.values():
        if txn.resolved != COMMIT:
            continue
        for records in txn.consumed.values():
            for _, value in records:
                source = writer.get(value)
                if source is not None and source.resolved == COMMIT and source.id != txn.id:
                    edges[source.id].add(txn.id)
                    kinds[(source.id, txn.id)] = "wr"
    for component in _strongly_connected(edges):
        if len(component) > 1:
            members = set(component)
            report.add("g1c", {"txns": sorted(component)[:20], "size": len(component),
                               "edges": sorted(f"{a} -{kinds[(a, b)]}-> {b}" for a in members
                                               for b in edges.get(a, ()) if b in members)[:20]})


def _strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative (histories have thousands of transactions)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    nodes = set(edges) | {b for targets in edges.values() for b in targets}
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(component)
    return components


def summarize(report: TxnReport, *, faults: int) -> dict[str, Any]:
    """The run's summary, shaped like the queue scenarios' (no checker models here)."""
    t = report.transactions
    return {"transactions": t, "late_end_txn": report.late_end_txn,
            "sends": {OK: t.get("committed", 0), "fail": t.get("aborted", 0), INFO: t.get("unknown", 0)},
            "polled_records": report.polled_records, "final_records": report.final_records, "faults": faults,
            "anomalies": dict(report.counts), "valid": report.valid, "linearizable": None,
            "offsets_linearizable": None, "metadata_linearizable": None}
