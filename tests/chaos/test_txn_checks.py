"""The transactional checks on hand-made histories: a clean one passes, and
each anomaly - among them the Bufstream-style late marker that aborts or
commits part of a later transaction - is found and named."""
from __future__ import annotations

from chaos.history import HistoryRecorder, read_history
from chaos.txn_checks import ANOMALY_KINDS, analyze

RC, RU = "read_committed", "read_uncommitted"


def record(tmp_path, *builders):
    path = tmp_path / "history.jsonl"
    with HistoryRecorder(path) as h:
        for build in builders:
            build(h)
    return list(read_history(path))


def txn(h, process, tid, txn_id, writes, outcome="commit", consumed=None, offsets=None, *, intent=None,
        zombie=False, asked=True):
    call = h.invoke(process, "txn", tid, {"id": txn_id, "writes": writes, "consumed": consumed or {},
                                          "offsets": offsets or {}, "intent": intent or outcome})
    notes = {"end_ns": h.now_ns()} if asked else {}
    if zombie:
        notes["zombie"] = True
    if outcome == "info":
        h.complete(call, "info", error="timed out", **notes)
    else:
        h.complete(call, "ok", outcome, **notes)
    return call


def poll(h, process, consumer, isolation, records):
    h.complete(h.invoke(process, "poll", None, {"consumer": consumer, "isolation": isolation}), "ok", records)


def final(h, partition, isolation, records):
    h.complete(h.invoke(99, "final-read", partition, {"isolation": isolation}), "ok", records)


# t-0: 0 a1, 1 T1's marker, 2 d1, 3 T4's marker
# t-1: 0 a2, 1 b1, 2 T1's marker, 3 T2's abort marker, 4 e1, 5 T5's abort marker
# t-2: 0 b2, 1 T2's abort marker, 2 c1, 3 T3's marker
def clean(h):
    txn(h, 1, "w0", "T1", {"t-0": ["a1"], "t-1": ["a2"]})
    txn(h, 2, "w1", "T2", {"t-1": ["b1"], "t-2": ["b2"]}, "abort")
    poll(h, 5, "r1", RC, {"t-0": [[0, "a1"]], "t-1": [[0, "a2"]]})
    poll(h, 6, "u1", RU, {"t-1": [[0, "a2"], [1, "b1"]]})
    txn(h, 1, "w0", "T3", {"t-2": ["c1"]}, consumed={"t-0": [[0, "a1"]]}, offsets={"t-0": 2})
    txn(h, 2, "w1", "T4", {"t-0": ["d1"]}, "info")  # unknown; committed, as the final read shows
    txn(h, 2, "w1", "T5", {"t-1": ["e1"]}, "info")  # unknown; aborted
    h.complete(h.invoke(7, "late-end-txn", "w0", {"epoch": 3}), "ok", "INVALID_TXN_STATE")
    h.fault("kill", "start", nodes=[4])


def clean_finals(h, extra_rc=None, extra_ru=None, group=None):
    rc = {"t-0": [[0, "a1"], [2, "d1"]], "t-1": [[0, "a2"]], "t-2": [[2, "c1"]]}
    ru = {"t-0": [[0, "a1"], [2, "d1"]], "t-1": [[0, "a2"], [1, "b1"], [4, "e1"]], "t-2": [[0, "b2"], [2, "c1"]]}
    for partition, records in (extra_rc or {}).items():
        rc[partition] = sorted(rc.get(partition, []) + records)
    for partition, records in (extra_ru or {}).items():
        ru[partition] = sorted(ru.get(partition, []) + records)
    for partition, records in rc.items():
        final(h, partition, RC, records)
    for partition, records in ru.items():
        final(h, partition, RU, records)
    h.complete(h.invoke(98, "group-offsets", "g"), "ok", {"t-0": 2, **(group or {})})


def only(report, *kinds):
    """Every anomaly found is of these kinds, and each of them was found."""
    found = {k for k, n in report.counts.items() if n}
    assert found == set(kinds), report.anomalies
    return report


def test_a_clean_history_is_valid_and_counted(tmp_path) -> None:
    report = analyze(record(tmp_path, clean, clean_finals))
    assert report.valid, report.anomalies
    assert report.transactions == {"committed": 2, "aborted": 1, "unknown": 2, "unknown_committed": 1,
                                   "unknown_aborted": 1, "intended_aborts": 1, "zombies": 0}
    assert report.late_end_txn == {"INVALID_TXN_STATE": 1}
    assert set(report.counts) == set(ANOMALY_KINDS)


def test_aborted_reads_of_aborted_and_unknown_then_aborted_transactions(tmp_path) -> None:
    def dirty(h):
        poll(h, 5, "r1", RC, {"t-1": [[1, "b1"], [4, "e1"]]})  # T2 aborted; T5 unknown, then aborted
    report = only(analyze(record(tmp_path, clean, dirty, clean_finals)), "aborted-read")
    assert sorted((a["txn"], a["told"]) for a in report.anomalies["aborted-read"]) == [("T2", "abort"),
                                                                                    ("T5", "unknown")]


def test_a_late_abort_marker_that_tore_a_later_transaction_is_found(tmp_path) -> None:
    """Bufstream's finding: T1's abort, delayed in flight, lands at t-0 while
    the same producer's next transaction T6 is open there (same epoch, were
    the partition to accept it) and aborts T6's part at t-0; T6 commits.
    The final read shows T6 torn, and so does a reader past both writes."""
    def late_abort(h):
        txn(h, 3, "w2", "T6", {"t-0": ["f1"], "t-2": ["f2"]})
        poll(h, 5, "r2", RC, {"t-0": [[0, "a1"], [2, "d1"], [5, "g1"]], "t-2": [[2, "c1"], [4, "f2"], [6, "g2"]]})
        txn(h, 3, "w2", "T7", {"t-0": ["g1"], "t-2": ["g2"]})

    def finals(h):
        clean_finals(h, extra_rc={"t-2": [[4, "f2"], [6, "g2"]], "t-0": [[5, "g1"]]},
                     extra_ru={"t-0": [[4, "f1"], [5, "g1"]], "t-2": [[4, "f2"], [6, "g2"]]})
    report = only(analyze(record(tmp_path, clean, late_abort, finals)), "torn", "skip", "intermediate-read")
    assert {(t["txn"], t["reader"]) for t in report.anomalies["torn"]} == {("T6", "final read_committed"),
                                                                         ("T6", "r2")}
    assert report.anomalies["skip"][0]["value"] == "f1"  # r2 passed over f1
    # r2's poll returned T7's records before T7's commit was even asked for
    assert {a["txn"] for a in report.anomalies["intermediate-read"]} == {"T7"}


def test_a_late_commit_marker_that_committed_part_of_an_aborted_transaction_is_an_aborted_read(tmp_path) -> None:
    def late_commit(h):
        txn(h, 3, "w2", "T6", {"t-0": ["f1"], "t-2": ["f2"]}, "abort")

    def finals(h):
        clean_finals(h, extra_rc={"t-0": [[4, "f1"]]}, extra_ru={"t-0": [[4, "f1"]], "t-2": [[4, "f2"]]})
    report = only(analyze(record(tmp_path, clean, late_commit, finals)), "aborted-read")
    assert report.anomalies["aborted-read"][0]["txn"] == "T6"


def test_lost_duplicate_inconsistent_unexpected_and_skipped(tmp_path) -> None:
    def broken(h):
        txn(h, 3, "w2", "T6", {"t-2": ["f1"]})  # told commit, never read finally: lost
        poll(h, 5, "r1", RC, {"t-0": [[0, "a1"], [3, "zz"]]})  # zz nobody wrote; 2 (d1) passed over
        poll(h, 6, "u1", RU, {"t-0": [[2, "a1"]]})  # a1 at 0 and at 2; 2 holds d1 too
    report = only(analyze(record(tmp_path, clean, broken, clean_finals)), "lost", "unexpected", "skip",
                  "duplicate", "inconsistent-offset", "non-monotonic")
    assert report.anomalies["lost"][0]["txn"] == "T6"
    assert report.anomalies["skip"][0] == {"consumer": "r1", "partition": "t-0", "offset": 2, "value": "d1"}
    assert report.anomalies["non-monotonic"][0]["consumer"] == "r1"  # 3 then 0: the same stream went back


def test_intermediate_read_of_an_open_transaction(tmp_path) -> None:
    def early(h):
        call = h.invoke(3, "txn", "w2", {"id": "T6", "writes": {"t-2": ["f1"]}, "intent": "commit"})
        poll(h, 5, "r1", RC, {"t-2": [[4, "f1"]]})  # before the commit was asked
        h.complete(call, "ok", "commit", end_ns=h.now_ns())

    def finals(h):
        clean_finals(h, extra_rc={"t-2": [[4, "f1"]]}, extra_ru={"t-2": [[4, "f1"]]})
    report = only(analyze(record(tmp_path, clean, early, finals)), "intermediate-read")
    assert report.anomalies["intermediate-read"][0]["txn"] == "T6"


def test_write_read_cycle_across_partitions(tmp_path) -> None:
    """Ta finished before Tb began and wrote t-3 before it (ww Ta -> Tb), yet
    Ta consumed Tb's value from t-4 (wr Tb -> Ta): Ta read the future."""
    def cycle(h):
        txn(h, 4, "w3", "Ta", {"t-3": ["x1"]}, consumed={"t-4": [[0, "y1"]]}, offsets={"t-4": 2})
        txn(h, 3, "w2", "Tb", {"t-3": ["y2"], "t-4": ["y1"]})

    def finals(h):
        clean_finals(h, extra_rc={"t-3": [[0, "x1"], [1, "y2"]], "t-4": [[0, "y1"]]},
                     extra_ru={"t-3": [[0, "x1"], [1, "y2"]], "t-4": [[0, "y1"]]}, group={"t-4": 2})
    report = only(analyze(record(tmp_path, clean, cycle, finals)), "g1c")
    [found] = report.anomalies["g1c"]
    assert found["txns"] == ["Ta", "Tb"] and "Ta -ww-> Tb" in found["edges"] and "Tb -wr-> Ta" in found["edges"]


def test_concurrent_transactions_may_interleave_their_writes(tmp_path) -> None:
    """Tc and Td run at once and write t-3 and t-4 in opposite orders; Te,
    after Tc committed, consumes Tc's value. Kafka allows all of it: no cycle."""
    def interleaved(h):
        tc = h.invoke(3, "txn", "w2", {"id": "Tc", "writes": {"t-3": ["m1"], "t-4": ["m2"]}, "intent": "commit"})
        td = h.invoke(4, "txn", "w3", {"id": "Td", "writes": {"t-3": ["n1"], "t-4": ["n2"]}, "intent": "commit"})
        h.complete(tc, "ok", "commit", end_ns=h.now_ns())
        txn(h, 5, "w4", "Te", {"t-4": ["q1"]}, consumed={"t-3": [[0, "m1"]]}, offsets={"t-3": 1})
        h.complete(td, "ok", "commit", end_ns=h.now_ns())

    def finals(h):
        logs = {"t-3": [[0, "m1"], [1, "n1"]], "t-4": [[0, "n2"], [1, "m2"], [2, "q1"]]}
        clean_finals(h, extra_rc=logs, extra_ru=logs, group={"t-3": 1})
    report = analyze(record(tmp_path, clean, interleaved, finals))
    assert report.valid, report.anomalies


def test_committed_offsets_must_match_what_was_consumed(tmp_path) -> None:
    def offsets(h):
        # consumed t-0's 0 again (T3 did), committed past 2 (d1) without consuming it
        txn(h, 3, "w0", "T6", {"t-2": ["f1"]}, consumed={"t-0": [[0, "a1"]]}, offsets={"t-0": 4})
        # committed an offset at its own last record: that record would be consumed again
        txn(h, 3, "w0", "T7", {"t-2": ["f2"]}, consumed={"t-1": [[0, "a2"]]}, offsets={"t-1": 0})

    def finals(h):
        clean_finals(h, extra_rc={"t-2": [[4, "f1"], [6, "f2"]]}, extra_ru={"t-2": [[4, "f1"], [6, "f2"]]})
    report = only(analyze(record(tmp_path, clean, offsets, finals)), "double-consume", "consume-skip",
                  "offsets-mismatch")
    assert report.anomalies["double-consume"][0] == {"partition": "t-0", "offset": 0, "txns": ["T3", "T6"]}
    assert report.anomalies["consume-skip"] == [{"partition": "t-0", "offset": 2}]
    mismatches = report.anomalies["offsets-mismatch"]
    assert {"txn": "T6", "partition": "t-0", "committed": 4, "not_consumed": [2]} in mismatches
    assert {"txn": "T7", "partition": "t-1", "committed": 0, "last_consumed": 0} in mismatches
    # the group's final offset of t-0 (2) is not the last one committed (4)
    assert {"partition": "t-0", "group_offset": 2, "last_committed": 4} in mismatches


def test_a_fenced_zombie_must_not_commit(tmp_path) -> None:
    def zombie(h):
        txn(h, 3, "w2", "T6", {"t-2": ["f1"]}, "info", zombie=True)

    def finals(h):
        clean_finals(h, extra_rc={"t-2": [[4, "f1"]]}, extra_ru={"t-2": [[4, "f1"]]})
    report = only(analyze(record(tmp_path, clean, zombie, finals)), "zombie-commit")
    assert report.transactions["zombies"] == 1


def test_a_partition_left_unstable_is_a_hanging_transaction(tmp_path) -> None:
    def unstable(h):
        h.complete(h.invoke(97, "stable", None), "ok", {"t-0": [4, 4], "t-1": [2, 6]})
    report = only(analyze(record(tmp_path, clean, unstable, clean_finals)), "hanging")
    assert report.anomalies["hanging"] == [{"partition": "t-1", "last_stable_offset": 2, "high_watermark": 6}]


def test_what_lies_behind_a_hanging_transaction_is_not_called_torn(tmp_path) -> None:
    """t-1 hangs at 2: the final read_committed read stops there, so T6's
    value at t-1 offset 6 is unjudged (its t-2 value was read: T6 is not torn)."""
    def hung(h):
        txn(h, 3, "w2", "T6", {"t-1": ["f1"], "t-2": ["f2"]})
        h.complete(h.invoke(97, "stable", None), "ok", {"t-0": [4, 4], "t-1": [2, 7], "t-2": [5, 5]})

    def finals(h):
        clean_finals(h, extra_rc={"t-2": [[4, "f2"]]}, extra_ru={"t-1": [[6, "f1"]], "t-2": [[4, "f2"]]})
    report = only(analyze(record(tmp_path, clean, hung, finals)), "hanging")
    assert report.counts["hanging"] == 1
