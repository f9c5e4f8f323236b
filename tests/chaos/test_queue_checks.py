"""The queue checks on hand-made histories: each anomaly found, clean histories pass."""
from __future__ import annotations

import json

from chaos.history import HistoryRecorder, read_history
from chaos.queue_checks import analyze, to_log_model
from chaos import lincheck


def record(tmp_path, build):
    path = tmp_path / "history.jsonl"
    with HistoryRecorder(path) as h:
        build(h)
    return list(read_history(path))


def send(h, process, partition, value, outcome="ok", offset=None):
    call = h.invoke(process, "send", partition, value)
    h.complete(call, outcome, offset)


def poll(h, process, consumer, records, mode="assign"):
    call = h.invoke(process, "poll", None, {"consumer": consumer, "mode": mode})
    h.complete(call, "ok", records)


def final(h, partition, records):
    h.complete(h.invoke(99, "final-read", partition), "ok", records)


def clean(h):
    send(h, 1, "t-0", "a", offset=0)
    send(h, 1, "t-0", "b", offset=1)
    send(h, 2, "t-0", "c", "info")  # unknown outcome, never written: allowed
    h.fault("kill", "start", nodes=[4])
    poll(h, 3, "c1", {"t-0": [[0, "a"], [1, "b"]]})
    final(h, "t-0", [[0, "a"], [1, "b"]])


def test_clean_history_is_valid_and_linearizable(tmp_path) -> None:
    history = record(tmp_path, clean)
    report = analyze(history)
    assert report.valid, report.anomalies
    assert report.sends == {"ok": 2, "fail": 0, "info": 1}
    assert report.anomalies["lost-unacked-ok"] == [{"value": "c", "partition": "t-0"}]
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in to_log_model(history)))
    try:
        verdict = lincheck.check(log, model="log", time_limit=10)
    except lincheck.CheckerUnavailable as exc:
        import pytest
        pytest.skip(str(exc))
    assert verdict.exit_code == lincheck.OK, verdict.result


def test_every_anomaly_kind_is_found(tmp_path) -> None:
    def broken(h):
        send(h, 1, "t-0", "a", offset=0)
        send(h, 1, "t-0", "b", offset=1)   # lost: not in the final read
        send(h, 1, "t-0", "c", offset=2)   # wrong-offset: 2 holds "x" finally
        send(h, 1, "t-0", "d", offset=3)
        poll(h, 3, "c1", {"t-0": [[0, "a"], [3, "d"]]})  # skip over 2 (which holds a value)
        poll(h, 3, "c1", {"t-0": [[2, "c"], [3, "e"]]})  # backwards; 3 read as "d" and "e"; "e" never sent
        final(h, "t-0", [[0, "a"], [2, "x"], [3, "d"], [4, "a"]])  # "a" twice; "x" never sent
    report = analyze(record(tmp_path, broken))
    counts = report.counts()
    assert not report.valid
    assert [a["value"] for a in report.anomalies["lost"]] == ["b", "c"]
    assert report.anomalies["wrong-offset"][0]["holds"] == "x"
    assert {a["value"] for a in report.anomalies["duplicate"]} >= {"a"}
    assert {a["value"] for a in report.anomalies["unexpected"]} == {"e", "x"}
    assert {a["offset"] for a in report.anomalies["inconsistent-offset"]} == {2, 3}
    assert counts["non-monotonic"] == 1 and counts["skip"] == 1


def test_a_new_assignment_may_reread_from_the_committed_offset(tmp_path) -> None:
    def rebalanced(h):
        send(h, 1, "t-0", "a", offset=0)
        send(h, 1, "t-0", "b", offset=1)
        poll(h, 3, "c1", {"t-0": [[0, "a"], [1, "b"]]}, mode="subscribe")
        h.complete(h.invoke(3, "assign", None, {"consumer": "c1"}), "ok", ["t-0"])
        poll(h, 3, "c1", {"t-0": [[1, "b"]]}, mode="subscribe")
        final(h, "t-0", [[0, "a"], [1, "b"]])
    report = analyze(record(tmp_path, rebalanced))
    assert report.valid, report.anomalies
