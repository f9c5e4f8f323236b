"""A leader checks every record of a produced batch before it appends it,
and acks=all answers NOT_ENOUGH_REPLICAS at once: real processes (one
controller, three brokers), raw gRPC Produce with batches whose CRC is
valid but whose contents are not.

Each bad batch gets Kafka's error and moves no log end offset; consumers
still read every good record of every partition. A batch that does not
decode, written straight into a segment (past the validator), makes the
consumer name the partition and offset and still deliver the other
partitions. One cluster serves the module.
"""
from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Mapping, Optional

import pytest

from client.consumer import Consumer, TopicPartition
from client.producer import Producer
from kafka_protocol.errors import Errors
from devcluster.local_cluster import RETRIABLE_ADMIN_ERRORS, LocalCluster
from devcluster.local_processes import wait_until
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb
from kafka_protocol import batch as b
from kafka_protocol.compression import Codec
from kafka_protocol.records import Record, encode_batch
from kafka_protocol.varint import zigzag_bytes as Z

from .test_isr_and_elections import PROPERTIES  # quick failure detection, so ISRs shrink fast

A, B, C = 2, 3, 4  # the brokers; node 1 is the controller
VALID = "valid"          # 3 partitions led by A, B, C (RF 1)
COMPACTED = "compacted"  # cleanup.policy=compact, on A
RECENT = "recent"        # message.timestamp.before.max.ms=1 hour, on A
ISR = "isr"              # RF 3, min.insync.replicas=3, led by A
ON_DISK = "on-disk"      # 3 partitions on C, one of them damaged on disk



def now_ms() -> int:
    return int(time.time() * 1000)


def create(c: LocalCluster, name: str, assignments: list[tuple[int, ...]],
           configs: Optional[Mapping[str, str]] = None) -> None:
    topic = cpb.CreateTopicsRequest.CreatableTopic(
        name=name, num_partitions=-1, replication_factor=-1,
        configs=[cpb.ConfigEntry(name=k, value=v) for k, v in (configs or {}).items()])
    for index, replicas in enumerate(assignments):
        topic.assignments.add(partition_index=index, broker_ids=replicas)

    def answered() -> Optional[cpb.CreateTopicsResponse]:
        response = c.broker_stub(A).CreateTopics(cpb.CreateTopicsRequest(topics=[topic]), timeout=30)
        return None if response.error_code in RETRIABLE_ADMIN_ERRORS else response

    response = wait_until(answered, 30, f"CreateTopics {name!r}", interval=0.2)
    assert response.error_code == Errors.NONE and response.topics[0].error_code == Errors.NONE, response
    wanted = [r[0] for r in assignments]
    wait_until(lambda: [p.leader_id for p in c.wait_for_leaders(name, timeout=30).partitions] == wanted,
               30, f"{name} led by {wanted}")


def isr_of(c: LocalCluster, topic: str) -> list[int]:
    answer = c.metadata(A, [topic])
    return sorted(answer.topics[0].partitions[0].isr_nodes) if answer is not None else []


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("produce-validation"), controllers=1, brokers=3,
                      properties=PROPERTIES).running() as c:
        create(c, VALID, [(A,), (B,), (C,)])
        create(c, COMPACTED, [(A,)], {"cleanup.policy": "compact"})
        create(c, RECENT, [(A,)], {"message.timestamp.before.max.ms": "3600000"})
        create(c, ISR, [(A, B, C)], {"min.insync.replicas": "3"})
        create(c, ON_DISK, [(C,), (C,), (C,)])
        yield c


def produce_many(c: LocalCluster, broker: int, parts: Mapping[tuple[str, int], bytes], acks: int = -1,
                 timeout_ms: int = 10000) -> dict[tuple[str, int], bpb.ProduceResponse.PartitionResponse]:
    topics: dict[str, list[bpb.ProduceRequest.PartitionData]] = {}
    for (topic, index), records in parts.items():
        topics.setdefault(topic, []).append(bpb.ProduceRequest.PartitionData(index=index, records=records))
    response = c.broker_stub(broker).Produce(bpb.ProduceRequest(acks=acks, timeout_ms=timeout_ms, topics=[
        bpb.ProduceRequest.TopicData(name=t, partitions=ps) for t, ps in topics.items()]),
        timeout=timeout_ms / 1000 + 20)
    return {(t.name, p.index): p for t in response.responses for p in t.partitions}


def produce(c: LocalCluster, broker: int, topic: str, records: bytes, partition: int = 0, acks: int = -1,
            timeout_ms: int = 10000) -> bpb.ProduceResponse.PartitionResponse:
    return produce_many(c, broker, {(topic, partition): records}, acks, timeout_ms)[(topic, partition)]


def log_end(c: LocalCluster, broker: int, topic: str, partition: int = 0) -> int:
    response = c.broker_stub(broker).ListOffsets(bpb.ListOffsetsRequest(replica_id=-1, topics=[
        bpb.ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
            bpb.ListOffsetsRequest.ListOffsetsPartition(partition_index=partition, current_leader_epoch=-1,
                                                        timestamp=-1)])]), timeout=10)
    answer = response.topics[0].partitions[0]
    assert answer.error_code == Errors.NONE, answer
    return answer.offset


def good(values: list[bytes], **kwargs) -> bytes:
    return encode_batch([Record(b"key", v, now_ms()) for v in values], **kwargs)


def with_crc(buf: bytearray) -> bytes:
    """One batch with its batchLength and CRC made to match its bytes: valid to every header check."""
    b._INT32.pack_into(buf, 8, len(buf) - b.LOG_OVERHEAD)
    buf[b.CRC_OFFSET:b.CRC_OFFSET + 4] = b.compute_crc(buf, 0, len(buf)).to_bytes(4, "big")
    return bytes(buf)


def patched(batch: bytes, *, attributes: Optional[int] = None, producer_id: Optional[int] = None,
            body: Optional[bytes] = None, count: Optional[int] = None) -> bytes:
    buf = bytearray(batch)
    if attributes is not None:
        struct.pack_into(">h", buf, b.ATTRIBUTES_OFFSET, attributes)
    if producer_id is not None:
        struct.pack_into(">q", buf, 43, producer_id)
    if count is not None:
        struct.pack_into(">i", buf, 23, count - 1)  # lastOffsetDelta
        struct.pack_into(">i", buf, 57, count)
    if body is not None:
        buf[b.HEADER_SIZE:] = body
    return with_crc(buf)


def record(offset_delta: int) -> bytes:
    inner = b"\x00" + Z(0) + Z(offset_delta) + Z(1) + b"k" + Z(1) + b"v" + Z(0)
    return Z(len(inner)) + inner


BAD_BATCHES: list[tuple[str, Callable[[], bytes], int]] = [
    ("garbage record bodies", lambda: patched(good([b"x" * 20]), body=b"\xfe" * 30), Errors.INVALID_RECORD),
    ("negative record length", lambda: patched(good([b"x"]), body=Z(-3) + b"\x00" * 8), Errors.INVALID_RECORD),
    ("compression codec 7", lambda: patched(good([b"x"]), attributes=7), Errors.UNSUPPORTED_COMPRESSION_TYPE),
    ("zstd flag on an uncompressed body", lambda: patched(good([b"x"]), attributes=int(Codec.ZSTD)),
     Errors.CORRUPT_MESSAGE),
    ("control bit from a client", lambda: patched(good([b"x"]), attributes=b.CONTROL_MASK), Errors.INVALID_RECORD),
    ("transactional bit without producer id", lambda: patched(good([b"x"]), attributes=b.TRANSACTIONAL_MASK),
     Errors.INVALID_RECORD),
    ("transactional bit, no transaction", lambda: patched(
        good([b"x"], producer_id=1000, producer_epoch=0, base_sequence=0), attributes=b.TRANSACTIONAL_MASK),
     Errors.INVALID_TXN_STATE),
    ("zero records", lambda: patched(good([b"x"]), body=b"", count=0), Errors.INVALID_RECORD),
    ("offset deltas out of order", lambda: patched(good([b"x", b"y"]), body=record(1) + record(0)),
     Errors.INVALID_RECORD),
    ("bytes after the last record", lambda: patched(good([b"x"]), body=record(0) + record(1)), Errors.INVALID_RECORD),
    ("fewer records than recordsCount", lambda: patched(good([b"x"]), body=record(0), count=2), Errors.INVALID_RECORD),
    ("a good batch then a bad one", lambda: good([b"fine"]) + patched(good([b"x"]), attributes=7),
     Errors.UNSUPPORTED_COMPRESSION_TYPE),
]
GOOD_VALUES = {p: [f"good-{p}-{i}".encode() for i in range(3)] for p in range(3)}


@pytest.fixture(scope="module")
def acknowledged(cluster) -> dict[int, list[bytes]]:
    """The values of VALID acknowledged so far per partition; the last test reads them back."""
    for p, leader in enumerate((A, B, C)):
        for codec in (Codec.NONE, Codec.LZ4, Codec.ZSTD):
            answer = produce(cluster, leader, VALID, good(GOOD_VALUES[p], codec=codec), p)
            assert answer.error_code == Errors.NONE, answer
    return {p: GOOD_VALUES[p] * 3 for p in range(3)}


@pytest.mark.parametrize("name, make, error", BAD_BATCHES, ids=[case[0] for case in BAD_BATCHES])
def test_a_bad_batch_with_a_valid_crc_is_refused_and_appends_nothing(cluster, acknowledged, name, make,
                                                                     error) -> None:
    end = log_end(cluster, A, VALID)
    answer = produce(cluster, A, VALID, make())
    assert answer.error_code == error, (name, answer)
    assert answer.error_message
    assert log_end(cluster, A, VALID) == end


def test_each_partition_of_a_request_is_decided_alone(cluster, acknowledged) -> None:
    """One request, two partitions of A: the bad one refused, the good one appended."""
    end = log_end(cluster, A, VALID)
    answers = produce_many(cluster, A, {(VALID, 0): good([b"beside a refused one"]),
                                        (COMPACTED, 0): good([b"with a key"])})
    assert [a.error_code for a in answers.values()] == [Errors.NONE, Errors.NONE]
    acknowledged[0].append(b"beside a refused one")
    answers = produce_many(cluster, A, {(VALID, 0): good([b"taken"]),
                                        (COMPACTED, 0): encode_batch([Record(None, b"no key", now_ms())])})
    assert answers[(VALID, 0)].error_code == Errors.NONE and answers[(COMPACTED, 0)].error_code == Errors.INVALID_RECORD
    acknowledged[0].append(b"taken")
    assert log_end(cluster, A, VALID) == end + 2


def test_topic_settings_the_validator_applies(cluster) -> None:
    keyless = produce(cluster, A, COMPACTED, encode_batch([Record(None, b"v", now_ms())]))
    assert keyless.error_code == Errors.INVALID_RECORD and "key" in keyless.error_message
    old = produce(cluster, A, RECENT, encode_batch([Record(b"k", b"v", now_ms() - 7_200_000)]))
    assert old.error_code == Errors.INVALID_TIMESTAMP, old
    assert produce(cluster, A, RECENT, good([b"recent"])).error_code == Errors.NONE
    assert log_end(cluster, A, RECENT) == 1


def test_acks_all_below_min_insync_replicas(cluster) -> None:
    """A follower stopped: the acks=all batch already waiting is answered
    NOT_ENOUGH_REPLICAS_AFTER_APPEND once the ISR shrinks; after that,
    NOT_ENOUGH_REPLICAS before any append, also to the client producer."""
    wait_until(lambda: isr_of(cluster, ISR) == [A, B, C], 30, "the full isr")
    assert produce(cluster, A, ISR, good([b"all three"])).error_code == Errors.NONE
    after_append = None
    cluster.signal(C, signal.SIGSTOP)
    try:
        for _ in range(3):
            # Sent at once, so normally appended before the ISR can shrink
            # (broker.session.timeout.ms / replica.lag.time.max.ms later);
            # where it was not, the follower comes back and it goes again.
            after_append = produce(cluster, A, ISR, good([b"while c stops"]), timeout_ms=60000)
            if after_append.error_code != Errors.NOT_ENOUGH_REPLICAS:
                break
            cluster.signal(C, signal.SIGCONT)
            wait_until(lambda: isr_of(cluster, ISR) == [A, B, C], 60, "c back in the isr")
            cluster.signal(C, signal.SIGSTOP)
        assert after_append.error_code == Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND, after_append
        wait_until(lambda: isr_of(cluster, ISR) == [A, B], 30, "the isr shrunk to [A, B]")
        end = log_end(cluster, A, ISR)
        refused = produce(cluster, A, ISR, good([b"refused"]))
        assert refused.error_code == Errors.NOT_ENOUGH_REPLICAS and "min.insync.replicas=3" in refused.error_message
        assert log_end(cluster, A, ISR) == end  # refused before the append
        # The producer: with retries=0 the error itself; retried, the expiry names it.
        settings = {"bootstrap.servers": cluster.broker_addresses[A], "acks": "all", "linger.ms": 0,
                    "request.timeout.ms": 1000, "delivery.timeout.ms": 5000, "retry.backoff.ms": 50}
        for extra, code in (({"retries": 0, "enable.idempotence": False}, Errors.NOT_ENOUGH_REPLICAS), ({}, 7)):
            with Producer({**settings, **extra}) as producer:
                future = producer.produce(ISR, b"v", partition=0)
                with pytest.raises(Exception) as failed:
                    future.result(timeout=60)
            assert failed.value.code == code, failed.value
            assert "NOT_ENOUGH_REPLICAS" in str(failed.value)
        assert log_end(cluster, A, ISR) == end
    finally:
        cluster.signal(C, signal.SIGCONT)
    wait_until(lambda: isr_of(cluster, ISR) == [A, B, C], 60, "c back in the isr")
    assert produce(cluster, A, ISR, good([b"all three again"])).error_code == Errors.NONE


def segment_of(c: LocalCluster, topic: str, partition: int) -> Path:
    found = sorted(Path(c.directory).rglob(f"{topic}-{partition}/*.log"))
    assert len(found) == 1, found
    return found[0]


def test_a_batch_that_does_not_decode_names_its_partition_and_offset(cluster) -> None:
    """C stopped, a batch with a valid CRC and garbage records appended to one
    partition's segment, C started: a consumer of the three partitions gets
    every good record, then the error naming that partition and offset."""
    values = {p: [f"disk-{p}-{i}".encode() for i in range(4)] for p in range(3)}
    for p in range(3):
        assert produce(cluster, C, ON_DISK, good(values[p]), p).error_code == Errors.NONE
    assert cluster.stop(C) == 0
    bad = bytearray(patched(good([b"x"]), body=Z(-3) + b"\x00" * 8))
    struct.pack_into(">q", bad, 0, 4)  # the next offset of partition 1
    with open(segment_of(cluster, ON_DISK, 1), "ab") as f:
        f.write(bad)
    cluster.start(C)
    cluster.wait_for_brokers([C], among=[A, B, C])
    wait_until(lambda: log_end(cluster, C, ON_DISK, 1) == 5, 30, "the damaged partition served to offset 5")
    got: dict[int, list[bytes]] = {p: [] for p in range(3)}
    errors = []
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(ON_DISK, p) for p in range(3)])
        deadline = time.monotonic() + 30
        while (sum(map(len, got.values())) < 12 or not errors) and time.monotonic() < deadline:
            try:
                for r in consumer.poll(0.5):
                    got[r.partition].append(r.value)
            except Exception as exc:  # noqa: BLE001 - the error under test
                errors.append(exc)
    finally:
        consumer.close()
    assert got == values
    assert len(errors) == 1, errors
    assert errors[0].code == Errors.CORRUPT_MESSAGE and f"{ON_DISK}-1 at offset 4" in str(errors[0]), errors[0]
    # The command line prints every good record before it stops on the error.
    done = subprocess.run([sys.executable, "-m", "kraftlog", "consume", ON_DISK, "--from-beginning",
                           "--timeout-ms", "10000"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "KRAFTLOG_BOOTSTRAP": cluster.bootstrap})
    assert sorted(done.stdout.split()) == sorted(v.decode() for vs in values.values() for v in vs), done
    assert done.returncode != 0 and f"{ON_DISK}-1 at offset 4" in done.stderr, done.stderr


def test_consumers_read_every_good_record(cluster, acknowledged) -> None:
    got: dict[int, list[bytes]] = {p: [] for p in range(3)}
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(VALID, p) for p in range(3)])
        deadline = time.monotonic() + 30
        while sum(map(len, got.values())) < sum(map(len, acknowledged.values())) and time.monotonic() < deadline:
            for r in consumer.poll(0.5):
                got[r.partition].append(r.value)
    finally:
        consumer.close()
    assert got == acknowledged
    nodes = (*cluster.controllers, *cluster.brokers)
    assert not [node for node in nodes if "Traceback" in cluster.log_text(node)]
