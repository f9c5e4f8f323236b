"""The what-went-wrong page of a run that was not clean (chaos/what_went_wrong.py),
on histories written by chaos/history.py's recorder: what it names, where it
marks, what it leaves out, and that a clean run gets no page."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from chaos import what_went_wrong as www
from chaos.history import read_history
from chaos.queue_checks import analyze, summarize
from chaos.runner import recheck, write_summary
from chaos.txn_checks import analyze as analyze_txn, summarize as summarize_txn
from tests.chaos.test_queue_checks import final, poll, record, send

KRAFTLOG = Path(sys.executable).with_name("kraftlog")
NO_CHECKER = {"log": None, "offsets": None, "metadata": None}


def checked(tmp_path, build, verdicts=NO_CHECKER):
    """The run's files as runner._check leaves them (without the Go checker), and its summary."""
    history = record(tmp_path, build)
    report = analyze(history)
    (tmp_path / "anomalies.json").write_text(json.dumps(report.anomalies))
    summary = summarize(report, faults=1, verdicts=verdicts)
    summary.update(notes=[], corrupt_reads=0, scenario="kill-leaders", seed=3)
    return history, summary


def failing(h):
    send(h, 1, "t-0", "a", offset=0)
    h.fault("kill", "start", nodes=[4])
    send(h, 1, "t-0", "gone-1", offset=1)  # acknowledged, never read finally: lost
    send(h, 2, "t-1", "twice", offset=0)   # read at two offsets: a duplicate
    send(h, 2, "t-1", "maybe", "info")     # unknown outcome, absent: allowed, counted
    h.fault("kill", "stop")
    poll(h, 3, "c1", {"t-0": [[0, "a"]], "t-1": [[0, "twice"]]})
    poll(h, 3, "c1", {"t-1": [[1, "twice"]]})
    final(h, "t-0", [[0, "a"]])
    final(h, "t-1", [[0, "twice"], [1, "twice"]])


def test_a_failing_run_gets_a_page_naming_its_fault_and_anomalous_values(tmp_path) -> None:
    history, summary = checked(tmp_path, failing)
    page = www.attach(tmp_path, summary)
    assert page == tmp_path / www.PAGE and page.is_file()
    assert summary[www.SUMMARY_KEY] == www.PAGE
    text = page.read_text()
    assert "anomalies: lost 1, duplicate 1" in text  # why the page exists
    assert "kill nodes [4]" in text  # the fault band's label
    assert "gone-1" in text and "twice" in text
    assert "maybe" not in text  # an allowed absent unknown send is only counted
    assert "1 operations of unknown outcome" in text
    # the lost write is marked at its acknowledgement, the duplicate where its second offset was read
    ack = next(line["time"] for line in history if line["type"] == "ok" and line["f"] == "send"
               and line["key"] == "t-0" and line["value"] == 1)
    lost_title = re.search(r"<title>(lost at [^<]*)</title>", text).group(1)
    assert lost_title.startswith(f"lost at {round(ack / 1e9, 3)} s") and "producer process=1" in lost_title
    second_poll = [line["time"] for line in history if line["f"] == "poll" and line["type"] == "ok"][1]
    dup_title = re.search(r"<title>(duplicate at [^<]*)</title>", text).group(1)
    assert dup_title.startswith(f"duplicate at {round(second_poll / 1e9, 3)} s") and "c1 (process 3)" in dup_title
    assert "<script" not in text and "http" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_a_clean_run_writes_no_page_and_no_summary_key(tmp_path) -> None:
    def clean(h):
        send(h, 1, "t-0", "a", offset=0)
        send(h, 1, "t-0", "b", "info")  # unknown and absent: allowed
        h.fault("pause", "start", nodes=[2])
        h.fault("pause", "stop")
        final(h, "t-0", [[0, "a"]])

    _, summary = checked(tmp_path, clean, {"log": "ok", "offsets": "ok", "metadata": None})
    (tmp_path / www.PAGE).write_text("an earlier check's page")
    summary[www.SUMMARY_KEY] = www.PAGE
    assert www.attach(tmp_path, summary) is None
    assert not (tmp_path / www.PAGE).exists() and www.SUMMARY_KEY not in summary
    assert www.reasons(summary) == []


def test_each_reason_alone_makes_a_page(tmp_path) -> None:
    for wrong, reason in (({"linearizable": "unknown"}, "checker, log model: unknown"),
                          ({"offsets_linearizable": "illegal"}, "checker, offsets model: illegal"),
                          ({"corrupt_reads": 2}, "corrupt reads: 2"),
                          ({"valid": False}, "the run is invalid")):
        summary = {"valid": True, "anomalies": {"lost": 0, "lost-unacked-ok": 5}, **wrong}
        assert any(r.startswith(reason) for r in www.reasons(summary)), (wrong, www.reasons(summary))
        assert www.attach(tmp_path, summary) == tmp_path / www.PAGE


def test_scripted_steps_open_their_band_and_one_off_faults_are_ticks(tmp_path) -> None:
    def scripted(h):
        send(h, 1, "t-0", "lost-here", offset=0)
        h.fault("last-replica-standing", "step", step="cut", partition=0, leader=4, followers=[5, 6])
        h.fault("last-replica-standing", "step", step="power-loss", leader=4)
        h.fault("last-replica-standing", "start", partition=0, leader=4)
        h.fault("last-replica-standing", "stop")
        h.fault("kill", "start", nodes=[5], why="ISR shrinks to the leader")  # unclean-election: no stop line
        h.fault("follower-bitflip", "start", nodes=[5, 4], follower=5, leader=4, position=1234)
        h.fault("follower-bitflip", "stop")
        final(h, "t-0", [])

    history, summary = checked(tmp_path, scripted)
    text = www.build(tmp_path, summary)
    first_step = next(line["time"] for line in history if line["process"] == "nemesis")
    row = re.search(r"<tr><td>([0-9.]+)</td><td>[0-9.]+</td><td>last-replica-standing</td>.*?</tr>", text).group(0)
    assert row.startswith(f"<tr><td>{round(first_step / 1e9, 3)}</td>")  # the band opens at its first step
    assert "power-loss" in row and "cut" in row
    assert "no stop line" in text and "ISR shrinks to the leader" in text
    assert "follower 5, leader 4" in text and "1234" in text


def test_marks_tables_and_bands_are_capped_and_say_how_many_were_left_out(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(www, "MAX_MARKS_PER_LANE", 5)
    monkeypatch.setattr(www, "MAX_TABLE_ROWS", 4)
    monkeypatch.setattr(www, "MAX_BANDS", 3)

    def big(h):
        for i in range(12):
            send(h, 1, "t-0", f"v{i}", offset=i)
            h.fault("pause", "start", nodes=[i % 3])
            h.fault("pause", "stop")
        final(h, "t-0", [])

    _, summary = checked(tmp_path, big)
    text = www.build(tmp_path, summary)
    assert text.count("<circle") == 5
    assert "t-0: 5 of 12 marks drawn" in text
    assert "8 more rows left out" in text
    assert "9 more faults not drawn" in text
    assert "6 more faults left out" in text  # the fault table keeps twice as many


def test_recheck_writes_the_page_for_a_failing_history_only(tmp_path) -> None:
    failing_run = tmp_path / "failing"
    failing_run.mkdir()
    record(failing_run, failing)
    summary = recheck(failing_run / "history.jsonl")
    assert summary[www.SUMMARY_KEY] == www.PAGE and (failing_run / www.PAGE).is_file()
    clean_run = tmp_path / "clean"
    clean_run.mkdir()
    record(clean_run, lambda h: (send(h, 1, "t-0", "a", offset=0), final(h, "t-0", [[0, "a"]])))
    summary = recheck(clean_run / "history.jsonl")
    assert www.SUMMARY_KEY not in summary and not (clean_run / www.PAGE).exists()


def test_a_transactions_run_marks_a_lost_transaction_in_each_partition_it_wrote(tmp_path) -> None:
    def txns(h):
        call = h.invoke(1, "txn", "tid-0", {"id": "T1", "writes": {"txn-0": ["x1"], "txn-2": ["x2"]},
                                            "consumed": {}, "offsets": {}, "intent": "commit"})
        h.complete(call, "ok", "commit", end_ns=1)
        for partition in ("txn-0", "txn-1", "txn-2"):
            h.complete(h.invoke(9, "final-read", partition, {"isolation": "read_committed"}), "ok", [])

    history = record(tmp_path, txns)
    report = analyze_txn(history)
    assert report.counts["lost"] == 1
    (tmp_path / "anomalies.json").write_text(json.dumps(report.anomalies))
    summary = summarize_txn(report, faults=0)
    www.attach(tmp_path, summary)
    text = (tmp_path / www.PAGE).read_text()
    committed = next(line["time"] for line in read_history(tmp_path / "history.jsonl")
                     if line["f"] == "txn" and line["type"] == "ok")
    titles = re.findall(r"<title>(lost at [^<]*)</title>", text)
    assert len(titles) == 2 and all(t.startswith(f"lost at {round(committed / 1e9, 3)} s") for t in titles)
    assert "<h3>txn-0</h3>" in text and "<h3>txn-2</h3>" in text and "T1" in text


def test_chaos_check_prints_the_pages_path_for_a_failing_history(tmp_path) -> None:
    record(tmp_path, failing)
    done = subprocess.run([str(KRAFTLOG), "chaos", "check", str(tmp_path / "history.jsonl")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)[www.SUMMARY_KEY] == www.PAGE  # stdout stays the summary's JSON
    assert f"what went wrong: {tmp_path / www.PAGE}" in done.stderr
    assert (tmp_path / www.PAGE).is_file()


def test_a_page_that_cannot_be_built_costs_the_run_only_a_note(tmp_path, monkeypatch) -> None:
    _, summary = checked(tmp_path, failing)

    def broken(*args, **kwargs):
        raise KeyError("no such thing")

    monkeypatch.setattr(www, "build", broken)
    write_summary(tmp_path, summary)
    written = json.loads((tmp_path / "summary.json").read_text())
    assert www.SUMMARY_KEY not in written and not (tmp_path / www.PAGE).exists()
    assert written["notes"] == [f"{www.PAGE} not written: KeyError: 'no such thing'"]
    assert written["anomalies"]["lost"] == 1


def test_every_queue_anomaly_kind_is_placed_in_time(tmp_path) -> None:
    def broken(h):  # tests/chaos/test_queue_checks.py's history with every kind
        send(h, 1, "t-0", "a", offset=0)
        send(h, 1, "t-0", "b", offset=1)
        send(h, 1, "t-0", "c", offset=2)
        send(h, 1, "t-0", "d", offset=3)
        poll(h, 3, "c1", {"t-0": [[0, "a"], [3, "d"]]})
        poll(h, 3, "c1", {"t-0": [[2, "c"], [3, "e"]]})
        final(h, "t-0", [[0, "a"], [2, "x"], [3, "d"], [4, "a"]])

    history, summary = checked(tmp_path, broken)
    kinds = {k for k, n in summary["anomalies"].items() if n and k != www.ALLOWED}
    assert kinds == {"lost", "wrong-offset", "duplicate", "unexpected", "inconsistent-offset", "non-monotonic",
                     "skip"}
    text = www.build(tmp_path, summary)
    assert "does not place" not in text
    polls = [line["time"] for line in history if line["f"] == "poll" and line["type"] == "ok"]
    for kind, at in (("skip", polls[0]), ("non-monotonic", polls[1]), ("inconsistent-offset", polls[1])):
        title = re.search(rf"<title>({kind} at [^<]*)</title>", text).group(1)
        assert title.startswith(f"{kind} at {round(at / 1e9, 3)} s"), title
