"""The console tools as Kafka's behave, each a subprocess against one real
cluster (3 controllers + 3 brokers):

- SIGTERM ends `kraftlog consume --group` as Kafka's shutdown hook does: what it printed is
  committed and it leaves the group, so the next member starts right after, re-reading nothing;
- SIGTERM ends `kraftlog produce` by stopping its input and reporting how many records sent were
  acknowledged, and that is what a consumer reads back;
- produce and consume right after `topics create` wait for the brokers to learn the topic
  (max.block.ms; a topic that never comes: test_cli_console);
- reset-offsets messages read right for one partition and for several.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from typing import Iterator

import pytest

from client.consumer import Consumer, TopicPartition
from devcluster.local_cluster import LocalCluster

from .test_cli_admin import WAIT_S, fails, ok, ok_json, running_cluster
from .test_metrics import scrape, value

PROPERTIES = {"broker.session.timeout.ms": 2000, "broker.heartbeat.interval.ms": 500}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from running_cluster(tmp_path_factory.mktemp("console-hardening"), PROPERTIES)


class Cli:
    """`kraftlog ARGS` running in the background, stopped by its PID on the way out."""

    def __init__(self, cluster: LocalCluster, *args: str, stdin: bool = False) -> None:
        env = {**os.environ, "KRAFTLOG_BOOTSTRAP": cluster.bootstrap}
        self.proc = subprocess.Popen([sys.executable, "-m", "kraftlog", *args], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.proc.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]
        self._pending = b""

    def lines(self, count: int) -> list[str]:
        """The first `count` lines it prints, waiting for them at most WAIT_S in all."""
        deadline = time.monotonic() + WAIT_S
        while (have := self._pending.count(b"\n")) < count:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"printed {have} lines of {count}"
            if self._selector.select(remaining):
                chunk = os.read(self.proc.stdout.fileno(), 65536)  # type: ignore[union-attr]
                assert chunk, f"exited ({self.proc.wait()}) after {have} lines"
                self._pending += chunk
        lines = self._pending.split(b"\n")
        self._pending = b"\n".join(lines[count:])
        return [line.decode() for line in lines[:count]]

    def write(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode())
        self.proc.stdin.flush()

    def terminate(self, sig: signal.Signals = signal.SIGTERM) -> tuple[int, list[str], str]:
        """`sig` (SIGTERM) by PID; (exit code, the rest of stdout's lines, stderr) once it exited."""
        self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=WAIT_S)
        rest = (self._pending + out).decode().splitlines()
        return self.proc.returncode, rest, err.decode()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._selector.close()
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


@contextmanager
def cli(cluster: LocalCluster, *args: str, stdin: bool = False) -> Iterator[Cli]:
    running = Cli(cluster, *args, stdin=stdin)
    try:
        yield running
    finally:
        running.stop()


def committed(cluster: LocalCluster, group: str) -> dict[int, int]:
    return {o["partition"]: o["committed"] for o in ok_json(cluster, "groups", "describe", group)["offsets"]
            if o["committed"] is not None}


def create(cluster: LocalCluster, topic: str, partitions: int, *extra: str) -> None:
    ok(cluster, "topics", "create", topic, "--partitions", str(partitions), "--replication-factor", "3", *extra)


def requests_answered(cluster: LocalCluster, request: str, broker: int) -> float:
    return value(scrape(cluster.metrics_addresses[broker]), "kafka_network_requestmetrics_requests_total",
                 request=request) or 0.0


def end_offset(cluster: LocalCluster, topic: str, partition: int = 0) -> int:
    with Consumer({"bootstrap.servers": cluster.bootstrap}) as consumer:
        tp = TopicPartition(topic, partition)
        return consumer.end_offsets([tp])[tp]


def test_sigterm_makes_a_group_consumer_commit_what_it_printed_and_leave(cluster) -> None:
    create(cluster, "signals", 3)
    ok(cluster, "produce", "signals", stdin="".join(f"r{i}\n" for i in range(60)))
    with cli(cluster, "consume", "signals", "--group", "g1", "--from-beginning", "--json",
             "--consumer-property", "max.poll.records=5") as first:
        printed = [json.loads(line) for line in first.lines(10)]
        # While it runs it is a member: the group cannot be reset (and says so in good English).
        fails(cluster, "groups", "reset-offsets", "g1", "--all-topics", "--to-earliest", "--execute",
              error="has 1 active member (state")
        code, rest, err = first.terminate()
    printed += [json.loads(line) for line in rest]
    assert code == 0, err
    assert f"Processed a total of {len(printed)} messages" in err

    ends: dict[int, int] = {}
    for record in printed:
        ends[record["partition"]] = max(ends.get(record["partition"], 0), record["offset"] + 1)
    assert committed(cluster, "g1") == ends  # exactly what it printed, nothing more or less
    assert ok_json(cluster, "groups", "describe", "g1")["members"] == []  # it left; no session to time out

    # The next member of the group starts where the first stopped: together they read each record once
    # (a re-read would fill --max-messages before the last records came).
    ok(cluster, "produce", "signals", stdin="".join(f"r{i}\n" for i in range(60, 70)))
    out = ok(cluster, "consume", "signals", "--group", "g1", "--from-beginning", "--json",
             "--max-messages", str(70 - len(printed)))
    again = [json.loads(line) for line in out.splitlines()]
    assert sorted(r["value"] for r in printed + again) == sorted(f"r{i}" for i in range(70))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_makes_the_producer_report_what_was_acknowledged(cluster, sig) -> None:
    topic = f"signalled-input-{sig.name}"
    create(cluster, topic, 1)
    with cli(cluster, "produce", topic, stdin=True) as producer:
        producer.write("".join(f"line-{i}\n" for i in range(20)))
        deadline = time.monotonic() + WAIT_S  # until it surely runs (its signal handling in place)
        while end_offset(cluster, topic) == 0:
            assert time.monotonic() < deadline, "nothing produced"
            time.sleep(0.1)
        producer.write("".join(f"line-{i}\n" for i in range(20, 40)))  # input still open: the signal ends it
        code, _, err = producer.terminate(sig)
    assert code == 0, err
    report = [line for line in err.splitlines() if line.startswith(f"{sig.name}: stopped; ")]
    assert len(report) == 1 and "Traceback" not in err, err
    acknowledged, sent = (int(w) for w in report[0].split("; ")[1].split(" records sent")[0].split(" of "))
    assert acknowledged == sent >= 20 and report[0].endswith(", 0 were not")
    assert end_offset(cluster, topic) == sent  # what it said was acknowledged, no more
    out = ok(cluster, "consume", topic, "--partition", "0", "--offset", "earliest", "--max-messages", str(sent))
    assert out.splitlines() == [f"line-{i}" for i in range(sent)]


def test_a_stopped_producer_that_could_not_deliver_says_so_and_fails(cluster) -> None:
    # min.insync.replicas above the replication factor: every acks=all write is refused (NOT_ENOUGH_REPLICAS).
    create(cluster, "unwritable", 1, "--config", "min.insync.replicas=4")
    leader = cluster.wait_for_leaders("unwritable").partitions[0].leader_id
    before = requests_answered(cluster, "Produce", leader)
    with cli(cluster, "produce", "unwritable", "--producer-property",
             "delivery.timeout.ms=3000,request.timeout.ms=1000", stdin=True) as producer:
        producer.write("a\nb\nc\n")
        deadline = time.monotonic() + WAIT_S  # until it has tried (so it surely runs)
        while requests_answered(cluster, "Produce", leader) == before:
            assert time.monotonic() < deadline, "it never sent a Produce"
            time.sleep(0.1)
        code, _, err = producer.terminate()
    assert code == 1, err
    assert "SIGTERM: stopped; 0 of 3 records sent were acknowledged, 3 were not" in err
    assert "kraftlog: error: 3 of 3 records were not acknowledged" in err
    assert end_offset(cluster, "unwritable") == 0


def test_produce_right_after_create_waits_for_the_topic(cluster) -> None:
    for n in range(3):  # the brokers learn of a new topic a moment after the controller commits it
        create(cluster, f"fresh-{n}", 1)
        ok(cluster, "produce", f"fresh-{n}", stdin="a\nb\n")  # exit 0: both acknowledged
        assert end_offset(cluster, f"fresh-{n}") == 2


def test_produce_and_consume_asking_before_the_brokers_know_the_topic_wait_for_it(cluster) -> None:
    """The race above made certain: both tools have asked their broker about the topic before it
    is created (the broker's count of Metadata requests says so); they wait for it, then work."""
    broker = cluster.brokers[0]
    address = cluster.broker_addresses[broker]
    before = requests_answered(cluster, "Metadata", broker)
    with cli(cluster, "consume", "late", "--partition", "0", "--offset", "earliest", "--max-messages", "2",
             "--bootstrap", address) as consumer, \
            cli(cluster, "produce", "late", "--bootstrap", address, stdin=True) as producer:
        deadline = time.monotonic() + WAIT_S
        while requests_answered(cluster, "Metadata", broker) < before + 2:
            assert time.monotonic() < deadline, "the tools never asked for the topic"
            time.sleep(0.1)
        create(cluster, "late", 1)
        out, err = producer.proc.communicate(b"x\ny\n", timeout=WAIT_S)
        assert producer.proc.returncode == 0, err.decode()
        out, err = consumer.proc.communicate(timeout=WAIT_S)
        assert consumer.proc.returncode == 0, err.decode()
    assert out.decode().splitlines() == ["x", "y"]


def test_reset_offsets_messages_read_right_for_one_partition_and_several(cluster) -> None:
    create(cluster, "grammar", 3)
    ok(cluster, "groups", "reset-offsets", "words", "--topic", "grammar:0", "--to-offset", "0", "--execute")
    fails(cluster, "groups", "reset-offsets", "words", "--topic", "grammar", "--shift-by", "1",
          error="grammar-1, grammar-2 have none")
    fails(cluster, "groups", "reset-offsets", "words", "--topic", "grammar:2", "--shift-by", "1",
          error="grammar-2 has none")
