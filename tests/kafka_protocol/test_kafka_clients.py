"""Kafka clients nobody here wrote, against the Kafka-protocol listener of a
real cluster (two combined nodes, one cluster for the module):
librdkafka 2.16 through confluent-kafka, kcat (librdkafka 2.0, Debian),
aiokafka and kafka-python 2.x (in a subprocess: it is the same package
`kafka` as the venv's 3.x). Every record a Kafka client writes is read back
through kraftlog's own gRPC consumer, key, value, headers and timestamp byte
for byte, and the gRPC producer's records through confluent-kafka.
Groups, admin calls and SASL are other modules' business."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition as AioTp
from confluent_kafka import OFFSET_BEGINNING, Producer as CKProducer, TopicPartition as CKTp

from client.producer import Producer
from devcluster.local_cluster import LocalCluster
from devcluster.read_back import read_back
from kafka_protocol.compression import Codec
from kafka_protocol.wire import versions
from kraftlog_server.server_config import KAFKA_PROTOCOL_LISTENERS

from .kafka_client_reads import read_assigned, stored_batches

IDLE_S = 10.0          # how long a read-back waits for a record that does not come; never in an assert
RUN_TIMEOUT_S = 60     # bounds every client subprocess
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
ACKS = ["0", "1", "all"]
FIND_COORDINATOR = 10  # Kafka's api key
PER_PRODUCER = 8
# Record timestamps the tests choose (CreateTime), so that a record written
# with acks=0 (no offset comes back) is still known whole; one second apart
# from each other so that a lookup by timestamp has one right answer.
T0 = int(time.time() * 1000) - 3_600_000

# kafka-python 2.x: where `make test` puts it (Makefile, kafka-clients), or
# KRAFTLOG_KAFKA_PYTHON_2 naming another --target directory.
KAFKA_PYTHON_2 = Path(os.environ.get("KRAFTLOG_KAFKA_PYTHON_2", Path(sys.prefix) / "kafka-python-2"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("kafka-clients")
    try:
        with LocalCluster(root, combined=2, client_listener="PLAINTEXT",
                          properties={KAFKA_PROTOCOL_LISTENERS: "CLIENTS"}).running() as c:
            yield c
    finally:
        shutil.rmtree(root, ignore_errors=True)


def new_topic(cluster: LocalCluster, name: str, partitions: int = 1) -> str:
    cluster.create_topic(name, partitions, 2)
    cluster.wait_for_leaders(name)
    return name


def read_all(cluster: LocalCluster, topic: str, count: int, partitions=(0,)) -> list:
    """The topic through kraftlog's gRPC consumer."""
    return read_back(cluster.bootstrap, topic, list(partitions), max_messages=count, idle_timeout_s=IDLE_S)


def as_written(got: list) -> dict:
    """gRPC-consumed records by key: (value, headers, timestamp)."""
    return {r.key: (r.value, [(k, bytes(v)) for k, v in r.headers], r.timestamp) for r in got}


def record(tag: str, i: int) -> tuple[bytes, bytes, list, int]:
    """(key, value, headers, timestamp) of the i-th record a test writes;
    values of some size, so that compression has something to do."""
    return (f"{tag}-{i}".encode(), (f"{tag}:{i}:" * (20 + i)).encode(),
            [("n", str(i).encode()), ("bin", bytes([i, 0, 255]))], T0 + i * 1000)


def delivered(errors: list):
    def report(err, msg) -> None:
        if err is not None:
            errors.append(err)
    return report


# -- confluent-kafka (librdkafka 2.16) ------------------------------------------------------

def test_confluent_kafka_produces_with_every_codec_and_acks_setting(cluster):
    topic = new_topic(cluster, "ck-codecs")
    sent, errors = {}, []
    for codec in CODECS:
        for acks in ACKS:
            producer = CKProducer({"bootstrap.servers": cluster.client_bootstrap, "compression.type": codec,
                                   "acks": acks, "enable.idempotence": False, "linger.ms": 5})
            for i in range(PER_PRODUCER):
                key, value, headers, ts = record(f"{codec}-{acks}", i)
                producer.produce(topic, value, key, partition=0, headers=headers, timestamp=ts,
                                 on_delivery=delivered(errors))
                sent[key] = (value, headers, ts)
            assert producer.flush(30) == 0
    assert errors == []
    assert as_written(read_all(cluster, topic, len(sent))) == sent
    # each producer's batch is stored as it came, compressed with its codec;
    # librdkafka compresses with lz4 only once FindCoordinator is advertised
    # (its feature map ties LZ4 to that API: brokers since 0.8.2 have both)
    expected = set(CODECS) if FIND_COORDINATOR in versions.ADVERTISED else set(CODECS) - {"lz4"}
    assert {Codec(h.codec).name.lower() for h in stored_batches(cluster, topic)} == expected


def test_confluent_kafkas_idempotent_producer(cluster):
    topic = new_topic(cluster, "ck-idempotent")
    sent, errors = {}, []
    producer = CKProducer({"bootstrap.servers": cluster.client_bootstrap, "enable.idempotence": True,
                           "linger.ms": 20, "batch.num.messages": 10})
    for i in range(50):
        key, value, headers, ts = record("idem", i)
        producer.produce(topic, value, key, partition=0, headers=headers, timestamp=ts, on_delivery=delivered(errors))
        sent[key] = (value, headers, ts)
        if i % 10 == 9:
            producer.poll(0)
    assert producer.flush(30) == 0 and errors == []
    got = read_all(cluster, topic, len(sent))
    assert len(got) == len(sent) and as_written(got) == sent  # nothing twice
    batches = stored_batches(cluster, topic)
    assert len({h.producer_id for h in batches}) == 1 and batches[0].producer_id >= 0
    # sequences run on from batch to batch, from 0: what InitProducerId and the broker's checks agreed on
    assert [h.base_sequence for h in batches] == [h.base_offset for h in batches]


def test_the_grpc_producer_writes_and_confluent_kafka_reads_the_same_records(cluster):
    topic = new_topic(cluster, "grpc-to-ck")
    written = [record("grpc", i) for i in range(40)]
    with Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "compression.type": "zstd"}) as producer:
        futures = [producer.produce(topic, value, key=key, headers=headers, partition=0, timestamp=ts)
                   for key, value, headers, ts in written]
        producer.flush()
        offsets = [f.result(timeout=30).offset for f in futures]
    got = read_assigned({"bootstrap.servers": cluster.client_bootstrap}, [CKTp(topic, 0, OFFSET_BEGINNING)],
                        len(written), RUN_TIMEOUT_S)
    assert [m.offset() for m in got] == offsets
    assert [(m.key(), m.value(), m.headers(), m.timestamp()[1]) for m in got] == written


# -- kcat (librdkafka 2.0) ------------------------------------------------------------------

def kcat(cluster: LocalCluster, *args: str, stdin: str | None = None) -> str:
    path = shutil.which("kcat")
    if path is None:
        pytest.skip("kcat is not installed (make test installs it from Debian where it can)")
    done = subprocess.run([path, "-b", cluster.client_bootstrap, *args], input=stdin, capture_output=True,
                          text=True, timeout=RUN_TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    return done.stdout


def kcat_consume(cluster: LocalCluster, topic: str, start: str) -> list[dict]:
    out = kcat(cluster, "-C", "-t", topic, "-p", "0", "-o", start, "-e", "-J", "-q")
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_kcat_lists_produces_and_consumes(cluster):
    topic = new_topic(cluster, "kcat-io", partitions=2)
    listing = json.loads(kcat(cluster, "-L", "-J"))
    assert {b["id"] for b in listing["brokers"]} == set(cluster.brokers)
    (listed,) = [t for t in listing["topics"] if t["topic"] == topic]
    assert sorted(p["partition"] for p in listed["partitions"]) == [0, 1]
    lines = [f"k{i}:v{i}" for i in range(20)]
    kcat(cluster, "-P", "-t", topic, "-p", "0", "-K", ":", "-H", "origin=kcat", "-z", "gzip",
         stdin="\n".join(lines) + "\n")
    got = kcat_consume(cluster, topic, "beginning")
    assert [(m["key"], m["payload"], m["offset"]) for m in got] == [(f"k{i}", f"v{i}", i) for i in range(20)]
    assert [m["offset"] for m in kcat_consume(cluster, topic, "15")] == list(range(15, 20))
    # and the gRPC consumer reads what kcat wrote
    back = read_all(cluster, topic, 20)
    assert [(r.key, r.value, list(r.headers)) for r in back] == [
        (f"k{i}".encode(), f"v{i}".encode(), [("origin", b"kcat")]) for i in range(20)]


def test_kcat_consumes_from_a_timestamp(cluster):
    topic = new_topic(cluster, "kcat-time")
    producer = CKProducer({"bootstrap.servers": cluster.client_bootstrap, "linger.ms": 0})
    for i in range(10):
        key, value, headers, ts = record("t", i)
        producer.produce(topic, value, key, partition=0, timestamp=ts)
        producer.flush(30)  # a batch each: the time index has an entry per record to find
    got = kcat_consume(cluster, topic, f"s@{T0 + 6500}")
    assert [(m["offset"], m["ts"]) for m in got] == [(i, T0 + i * 1000) for i in range(7, 10)]


# -- aiokafka -------------------------------------------------------------------------------

def test_aiokafka_produces_and_consumes_from_offsets_and_timestamps(cluster):
    topic = new_topic(cluster, "aiokafka-io")
    written = [record("aio", i) for i in range(12)]
    tp = AioTp(topic, 0)

    async def run() -> tuple[list, list, list, object]:
        producer = AIOKafkaProducer(bootstrap_servers=cluster.client_bootstrap, acks="all",
                                    compression_type="lz4", request_timeout_ms=10000)
        await producer.start()
        try:
            metas = [await producer.send_and_wait(topic, value, key=key, partition=0, timestamp_ms=ts,
                                                  headers=headers)
                     for key, value, headers, ts in written]
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=cluster.client_bootstrap, enable_auto_commit=False,
                                    request_timeout_ms=10000)
        await consumer.start()
        try:
            consumer.assign([tp])

            async def read_from(offset: int) -> list:
                consumer.seek(tp, offset)
                got: list = []
                async with asyncio.timeout(RUN_TIMEOUT_S):
                    while len(got) < len(written) - offset:
                        got += (await consumer.getmany(tp, timeout_ms=500)).get(tp, [])
                return got

            from_start, from_eight = await read_from(0), await read_from(8)
            found = (await consumer.offsets_for_times({tp: T0 + 4500}))[tp]
            from_time = await read_from(found.offset)
        finally:
            await consumer.stop()
        return metas, from_start, from_eight, (found, from_time)

    metas, from_start, from_eight, (found, from_time) = asyncio.run(run())
    assert [m.offset for m in metas] == list(range(len(written)))
    assert [(m.key, m.value, [(k, bytes(v)) for k, v in m.headers], m.timestamp) for m in from_start] == written
    assert [m.offset for m in from_eight] == list(range(8, len(written)))
    assert (found.offset, found.timestamp) == (5, T0 + 5000)
    assert [m.offset for m in from_time] == list(range(5, len(written)))
    assert as_written(read_all(cluster, topic, len(written))) == {k: (v, h, ts) for k, v, h, ts in written}
    assert {Codec(h.codec) for h in stored_batches(cluster, topic)} == {Codec.LZ4}


# -- kafka-python 2.x, in a subprocess -------------------------------------------------------

KAFKA_PYTHON_2_SCRIPT = """
import json, sys
import kafka
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
bootstrap, topic, t0 = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = [("kp2-%d" % i, "value-%d" % i * (i + 1), t0 + i * 1000) for i in range(15)]
producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type="snappy",
                         request_timeout_ms=10000)
futures = [producer.send(topic, key=k.encode(), value=v.encode(), partition=0, timestamp_ms=ts,
                         headers=[("i", str(n).encode())]) for n, (k, v, ts) in enumerate(rows)]
producer.flush(30)
offsets = [f.get(timeout=30).offset for f in futures]
producer.close(10)
consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                         consumer_timeout_ms=10000, request_timeout_ms=10000)
tp = TopicPartition(topic, 0)
consumer.assign([tp])
consumer.seek(tp, 3)
got = []
for m in consumer:
    got.append([m.offset, m.key.decode(), m.value.decode(), m.timestamp, [[k, v.decode()] for k, v in m.headers]])
    if m.offset == len(rows) - 1:
        break
consumer.close()
print(json.dumps({"version": kafka.__version__, "offsets": offsets, "got": got}))
"""


def test_kafka_python_2_produces_and_consumes(cluster):
    if not (KAFKA_PYTHON_2 / "kafka").is_dir():
        pytest.skip(f"kafka-python 2.x is not installed in {KAFKA_PYTHON_2} (make test installs it: kafka-clients)")
    topic = new_topic(cluster, "kafka-python-2")
    done = subprocess.run([sys.executable, "-c", KAFKA_PYTHON_2_SCRIPT, cluster.client_bootstrap, topic, str(T0)],
                          env={**os.environ, "PYTHONPATH": str(KAFKA_PYTHON_2)}, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["version"].startswith("2.")  # the 2.x line, not the venv's 3.x
    assert out["offsets"] == list(range(15))
    assert out["got"] == [[i, f"kp2-{i}", f"value-{i}" * (i + 1), T0 + i * 1000, [["i", str(i)]]]
                          for i in range(3, 15)]
    assert as_written(read_all(cluster, topic, 15)) == {
        f"kp2-{i}".encode(): ((f"value-{i}" * (i + 1)).encode(), [("i", str(i).encode())], T0 + i * 1000)
        for i in range(15)}
    assert {Codec(h.codec) for h in stored_batches(cluster, topic)} == {Codec.SNAPPY}
