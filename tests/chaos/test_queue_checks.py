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


def test_sends_of_unknown_outcome_may_or_may_not_be_written_but_never_twice(tmp_path) -> None:
    """A long fault's sends end `info` (past delivery.timeout.ms) or stay open:
    written or not, neither is lost; written twice is a duplicate, and the
    log model cannot place one send at two offsets either."""
    def timed_out(h):
        send(h, 1, "t-0", "a", offset=0)
        send(h, 1, "t-0", "b", "info")  # written: its answer was lost
        send(h, 1, "t-0", "c", "info")  # never written
        h.invoke(2, "send", "t-0", "d")  # still open at the end, written
        h.invoke(3, "send", "t-0", "e")  # still open at the end, never written
        final(h, "t-0", [[0, "a"], [1, "b"], [2, "d"]])
    history = record(tmp_path, timed_out)
    report = analyze(history)
    assert report.valid, report.anomalies
    assert report.sends["info"] == 2 and report.open_sends == 2 and report.unknown_written == 2
    assert [a["value"] for a in report.anomalies["lost-unacked-ok"]] == ["c", "e"]
    assert checked(tmp_path, history) == lincheck.OK

    def twice(h):
        send(h, 1, "t-0", "a", offset=0)
        send(h, 1, "t-0", "b", "info")
        final(h, "t-0", [[0, "a"], [1, "b"], [2, "b"]])  # an unknown send appended twice
    history = record(tmp_path, twice)
    report = analyze(history)
    assert not report.valid and [a["value"] for a in report.anomalies["duplicate"]] == ["b"]
    assert checked(tmp_path, history) == lincheck.ILLEGAL


def checked(tmp_path, history) -> int:
    """The Go checker's exit code on the history's log model (skipped without Go)."""
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in to_log_model(history)))
    try:
        return lincheck.check(log, model="log", time_limit=10).exit_code
    except lincheck.CheckerUnavailable as exc:
        import pytest
        pytest.skip(str(exc))


def test_the_log_model_resolves_unknown_sends_by_what_was_read(tmp_path) -> None:
    """Read back: an ok at the offset read, returning when the first read
    that saw it returned; never read: left out (it could only come last)."""
    def unknown(h):
        send(h, 1, "t-0", "a", offset=0)
        send(h, 2, "t-0", "b", "info")
        h.invoke(3, "send", "t-0", "c")  # open
        send(h, 4, "t-0", "d", "info")  # never read
        poll(h, 5, "c1", {"t-0": [[0, "a"], [1, "b"]]})
        final(h, "t-0", [[0, "a"], [1, "b"], [2, "c"]])
    history = record(tmp_path, unknown)
    sends = {}
    for line in to_log_model(history):
        if line["f"] == "send":
            sends.setdefault(line["process"], []).append(line)
    assert sorted(sends) == [1, 2, 3]  # "d" left out
    poll_done = next(line["time"] for line in history if line["f"] == "poll" and line["type"] == "ok")
    final_done = next(line["time"] for line in history if line["f"] == "final-read" and line["type"] == "ok")
    assert [(x["type"], x.get("value"), x["time"]) for x in sends[2][1:]] == [("ok", 1, poll_done)]
    assert [(x["type"], x.get("value"), x["time"]) for x in sends[3][1:]] == [("ok", 2, final_done)]
    assert checked(tmp_path, history) == lincheck.OK


def test_an_acknowledged_write_past_the_final_end_is_illegal(tmp_path) -> None:
    """The unclean election's loss when the new leader's log is the shorter:
    nobody read offset 1 again, but the final read ended before it."""
    def truncated(h):
        send(h, 1, "t-0", "a", offset=0)
        send(h, 1, "t-0", "b", offset=1)
        final(h, "t-0", [[0, "a"]])
    history = record(tmp_path, truncated)
    ops = list(to_log_model(history))
    assert ops[-2]["f"] == "read" and ops[-2]["value"] == 1 and "value" not in ops[-1]
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(line) + "\n" for line in ops))
    try:
        verdict = lincheck.check(log, model="log", time_limit=10)
    except lincheck.CheckerUnavailable as exc:
        import pytest
        pytest.skip(str(exc))
    assert verdict.exit_code == lincheck.ILLEGAL, verdict.result
    assert "read(1) saw nothing" in verdict.result["counterexample"]["reason"]


def test_a_send_acknowledged_without_an_offset_must_be_read_back_somewhere(tmp_path) -> None:
    """librdkafka acknowledges a batch without an offset when a later batch's
    success covers it (a retry answered NOT_ENOUGH_REPLICAS_AFTER_APPEND, then
    the next batch written: "implicitly acked") or on DUPLICATE_SEQUENCE_NUMBER;
    the history holds ok with a null offset. It counts as acknowledged - lost
    if no read has it - and the log model places it where it was read."""
    def implicit(h):
        send(h, 1, "t-0", "a", offset=0)
        send(h, 1, "t-0", "b")             # acknowledged, no offset: read at 1
        send(h, 1, "t-0", "c", offset=2)
        send(h, 2, "t-0", "d")             # acknowledged, no offset, never read: lost
        poll(h, 3, "c1", {"t-0": [[0, "a"], [1, "b"]]})
        final(h, "t-0", [[0, "a"], [1, "b"], [2, "c"]])
    history = record(tmp_path, implicit)
    report = analyze(history)
    assert report.sends == {"ok": 4, "fail": 0, "info": 0}
    assert report.anomalies["lost"] == [{"value": "d", "partition": "t-0", "offset": None}]
    assert not report.anomalies["wrong-offset"] and not report.anomalies["duplicate"]
    poll_done = next(line["time"] for line in history if line["f"] == "poll" and line["type"] == "ok")
    resolved = [line for line in to_log_model(history) if line["f"] == "send" and line.get("resolved")]
    assert [(x["type"], x["value"], x["time"]) for x in resolved] == [("ok", 1, poll_done)]
    assert all(line.get("value") is not None for line in to_log_model(history)
               if line["f"] == "send" and line["type"] == "ok")
    assert checked(tmp_path, history) == lincheck.OK
