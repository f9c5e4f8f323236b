"""The producer against a real cluster (3 combined nodes): every setting has
an effect one can see in the partition's batches, keys land where Kafka puts
them and keep their order, the async and sync APIs, flush and close."""
from __future__ import annotations

import asyncio
import threading
from collections import defaultdict

import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from client.errors import InvalidConfigError, KafkaError
from client.producer import AsyncProducer, Producer, RecordMetadata
from client.record_future import RecordFuture
from devcluster.local_cluster import LocalCluster
from devcluster.local_processes import wait_until
from kafka_protocol.compression import Codec

from .producer_helpers import read_batches, read_records

PROPERTIES = {"broker.session.timeout.ms": 2000, "broker.heartbeat.interval.ms": 500}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("producer"), combined=3, properties=PROPERTIES).running() as c:
        yield c


@pytest.fixture(scope="module")
def bootstrap(cluster) -> str:
    return cluster.bootstrap


def topic(cluster: LocalCluster, name: str, partitions: int = 1, configs: dict | None = None) -> str:
    cluster.create_topic(name, partitions, 3, configs=configs)
    cluster.wait_for_leaders(name)
    return name


def produce_all(bootstrap: str, config: dict, records: list[dict], metrics: dict | None = None) -> list:
    """Produce every record (produce()'s keyword arguments) with one AsyncProducer
    and wait; each record's RecordMetadata or exception. The producer's
    metrics go into `metrics`."""
    async def run() -> list:
        async with AsyncProducer({"bootstrap.servers": bootstrap, **config}) as producer:
            futures = [producer.produce(**r) for r in records]
            results = await asyncio.gather(*futures, return_exceptions=True)
            if metrics is not None:
                metrics.update(producer.metrics())
            return results
    return asyncio.run(run())


def test_every_record_lands_once_in_order_with_offsets_timestamps_and_headers(cluster, bootstrap) -> None:
    name = topic(cluster, "basic")
    records = [{"topic": name, "value": f"v{i}".encode(), "headers": [("n", str(i).encode()), ("empty", None)],
                "timestamp": 1_700_000_000_000 + i} for i in range(500)]
    results = produce_all(bootstrap, {}, records)
    assert all(isinstance(r, RecordMetadata) for r in results), results[:3]
    assert [r.offset for r in results] == list(range(500))
    assert [r.timestamp for r in results] == [1_700_000_000_000 + i for i in range(500)]
    assert {r.topic for r in results} == {name} and {r.partition for r in results} == {0}
    stored = read_records(cluster, name, 0, 500)
    assert [r.value for r in stored] == [f"v{i}".encode() for i in range(500)]
    assert [r.offset for r in stored] == list(range(500))
    assert stored[7].headers == (("n", b"7"), ("empty", None)) and stored[7].timestamp == 1_700_000_000_007


def test_keyed_records_land_in_their_murmur2_partition_and_keep_per_key_order(cluster, bootstrap) -> None:
    name = topic(cluster, "keyed", partitions=6)
    keys = [f"user-{k}".encode() for k in range(40)]
    records = [{"topic": name, "key": keys[i % 40], "value": f"{i}".encode()} for i in range(2000)]
    results = produce_all(bootstrap, {"linger.ms": 20}, records)
    for record, result in zip(records, results):
        # kafka-python's murmur2, as Kafka's Java client partitions keys.
        assert result.partition == (kafka_python_murmur2(record["key"]) & 0x7FFFFFFF) % 6
    per_key: dict[bytes, list[int]] = defaultdict(list)
    for p in range(6):
        for r in read_records(cluster, name, p):
            assert (kafka_python_murmur2(r.key) & 0x7FFFFFFF) % 6 == p
            per_key[r.key].append(int(r.value))
    assert sorted(per_key) == sorted(keys)
    for key, values in per_key.items():
        assert values == sorted(values) and len(values) == 50  # once each, in production order


def test_keyless_records_stick_to_a_partition_per_batch(cluster, bootstrap) -> None:
    name = topic(cluster, "sticky", partitions=3)
    records = [{"topic": name, "value": f"{i:05d}".encode() * 20} for i in range(3000)]
    results = produce_all(bootstrap, {"batch.size": 4096, "linger.ms": 50}, records)
    assert {r.partition for r in results} == {0, 1, 2}
    batches = [b for p in range(3) for b in read_batches(cluster, name, p, 1)]
    assert sum(len(b.records) for b in batches) == 3000
    for batch in batches:
        # A batch holds consecutive records: the partition changed only between batches.
        numbers = [int(r.value[:5]) for r in batch.records]
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    assert len(batches) >= 3000 * 121 // 4096  # full batches, each on one partition


def test_keyless_records_between_keyed_headed_stamped_and_placed_ones_keep_every_outcome(cluster, bootstrap) -> None:
    """produce() takes a keyless record straight into its sticky partition's open
    batch; the records around it take the general path into the same batches.
    Every record's metadata is where it is read back, callbacks run in record
    order per partition, the idempotent sequences stay consecutive, and the
    batches (most of them encoded by the compiled encoder) hold each record's
    key, value, timestamp and headers."""
    name = topic(cluster, "mixed", partitions=3)
    records: list[dict] = []
    for i in range(3000):
        r: dict = {"topic": name, "value": f"{i:05d}".encode() * (1 + i % 7)}
        kind = i % 50
        if kind == 7:
            r["key"] = f"key-{i % 13}".encode()
        elif kind == 11:
            r["headers"] = [("n", str(i).encode()), ("none", None)]
        elif kind == 19:
            r["partition"] = i % 3
        elif kind == 23:
            r["timestamp"] = 1_600_000_000_000 + i
        elif kind == 29:
            r["value"] = None
            r["key"] = b"tombstone"
        elif kind == 31:
            r["value"] = f"{i:05d}"  # str: UTF-8
        records.append(r)
    told: dict[int, list[int]] = defaultdict(list)

    async def run() -> list:
        async with AsyncProducer({"bootstrap.servers": bootstrap, "batch.size": 8192, "linger.ms": 20}) as producer:
            futures = []
            for i, r in enumerate(records):
                if i % 3 == 0:
                    r = {**r, "on_delivery": lambda err, md, i=i: told[md.partition].append(i)}
                futures.append(producer.produce(**r))
                if i % 500 == 0:
                    await asyncio.sleep(0.01)  # batches leave while others fill
            done = await asyncio.gather(*futures)
            # produce()'s fast path builds futures without __init__: every slot is set all the same.
            assert all(hasattr(f, slot) for f in futures for slot in RecordFuture.__slots__)
            return done

    results = asyncio.run(run())
    by_place = {(md.partition, md.offset): i for i, md in enumerate(results)}
    assert len(by_place) == 3000
    for p in range(3):
        batches = read_batches(cluster, name, p, 1)
        expected_sequence = 0
        for batch in batches:
            assert batch.header.base_sequence == expected_sequence
            expected_sequence += len(batch.records)
            for stored in batch.records:
                i = by_place[(p, stored.offset)]
                sent = records[i]
                value = sent["value"]
                assert stored.value == (value.encode() if isinstance(value, str) else value)
                assert stored.key == sent.get("key")
                assert tuple(stored.headers) == tuple(sent.get("headers", ()))
                assert stored.timestamp == results[i].timestamp
                if "timestamp" in sent:
                    assert stored.timestamp == sent["timestamp"]
                if "partition" in sent:
                    assert p == sent["partition"]
        assert told[p] == sorted(told[p]) and all(results[i].partition == p for i in told[p])
    assert sum(len(t) for t in told.values()) == 1000


def test_batch_size_bounds_the_records_of_a_batch(cluster, bootstrap) -> None:
    name = topic(cluster, "batch-size", partitions=2)
    value = b"x" * 100  # 100 bytes + 21 bytes of record overhead at most
    small = produce_all(bootstrap, {"batch.size": 1000, "linger.ms": 1000},
                        [{"topic": name, "value": value, "partition": 0} for _ in range(200)])
    large = produce_all(bootstrap, {"batch.size": 65536, "linger.ms": 1000},
                        [{"topic": name, "value": value, "partition": 1} for _ in range(200)])
    assert all(isinstance(r, RecordMetadata) for r in small + large)
    small_batches = read_batches(cluster, name, 0, 200)
    large_batches = read_batches(cluster, name, 1, 200)
    assert max(len(b.records) for b in small_batches) == (1000 - 61) // 121  # 7: what fits in 1000 bytes
    assert len(small_batches) >= 200 // 7
    assert max(len(b.records) for b in large_batches) > 7


def test_linger_ms_gathers_records_produced_apart_into_one_batch(cluster, bootstrap) -> None:
    name = topic(cluster, "linger", partitions=1)

    async def spaced(config: dict, await_each: bool) -> list[RecordMetadata]:
        futures = []
        async with AsyncProducer({"bootstrap.servers": bootstrap, **config}) as producer:
            for i in range(5):
                futures.append(producer.produce(name, f"{config['linger.ms']}-{i}".encode()))
                if await_each:
                    await futures[-1]
                else:
                    await asyncio.sleep(0.05)
        # awaited once the block closed the producer: close() delivers what lingers
        return await asyncio.gather(*futures)

    asyncio.run(spaced({"linger.ms": 0}, await_each=True))
    lingered = asyncio.run(spaced({"linger.ms": 30000}, await_each=False))  # close() flushes: no 30 s wait
    assert len({r.offset for r in lingered}) == 5
    batches = read_batches(cluster, name, 0, 10)
    assert [len(b.records) for b in batches] == [1, 1, 1, 1, 1, 5]


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_compression_type_is_the_codec_of_every_batch(cluster, bootstrap, codec: str) -> None:
    name = topic(cluster, f"compressed-{codec}")
    values = [f"record {i} ".encode() * 30 for i in range(300)]
    produce_all(bootstrap, {"compression.type": codec, "linger.ms": 100},
                [{"topic": name, "value": v} for v in values])
    batches = read_batches(cluster, name, 0, 300)
    assert {b.header.codec for b in batches} == {Codec.from_name(codec)}
    assert [r.value for b in batches for r in b.records] == values
    if codec != "none":
        raw = sum(b.header.size for b in batches)
        assert raw < sum(len(v) for v in values) / 3  # repetitive values compress well


def test_acks_0_returns_no_offset_but_the_records_arrive(cluster, bootstrap) -> None:
    name = topic(cluster, "acks0")
    results = produce_all(bootstrap, {"acks": 0}, [{"topic": name, "value": f"{i}".encode()} for i in range(100)])
    assert [r.offset for r in results] == [-1] * 100
    assert [r.value for r in read_records(cluster, name, 0, 100)] == [f"{i}".encode() for i in range(100)]


def test_acks_1_and_all_return_offsets(cluster, bootstrap) -> None:
    name = topic(cluster, "acks1")
    one = produce_all(bootstrap, {"acks": "1"}, [{"topic": name, "value": b"a"}] * 10)
    every = produce_all(bootstrap, {"acks": "all"}, [{"topic": name, "value": b"b"}] * 10)
    assert [r.offset for r in one + every] == list(range(20))


def test_idempotence_puts_producer_id_and_consecutive_sequences_in_the_batches(cluster, bootstrap) -> None:
    name = topic(cluster, "idempotent", partitions=2)
    records = [{"topic": name, "value": b"x" * 50, "partition": i % 2} for i in range(1000)]
    produce_all(bootstrap, {"batch.size": 2048, "linger.ms": 20}, records)
    produce_all(bootstrap, {"enable.idempotence": False}, [{"topic": name, "value": b"plain", "partition": 0}])
    producer_ids = set()
    for p in (0, 1):
        batches = read_batches(cluster, name, p, 500)
        idempotent, plain = batches[:-1] if p == 0 else batches, batches[-1:] if p == 0 else []
        expected_sequence = 0
        for b in idempotent:
            assert b.header.producer_id >= 0 and b.header.producer_epoch == 0
            assert b.header.base_sequence == expected_sequence
            expected_sequence += len(b.records)
        assert expected_sequence == 500
        producer_ids |= {b.header.producer_id for b in idempotent}
        for b in plain:
            assert (b.header.producer_id, b.header.base_sequence) == (-1, -1)
    assert len(producer_ids) == 1


def test_produce_requests_go_on_one_stream_per_leader_several_at_once_in_order(cluster, bootstrap) -> None:
    """Small batches, each its own request (batch.size 200 B, max.in.flight 5): the sender keeps one
    ProduceStream per leader, writes the next request before the answer to the last, and each request's
    answer settles its own batches: the offsets follow the records' order, with no gap and nothing twice."""
    name = topic(cluster, "streamed", partitions=3)

    async def run() -> tuple[list, set, set]:
        async with AsyncProducer({"bootstrap.servers": bootstrap, "batch.size": 200, "linger.ms": 0,
                                  "acks": "all", "max.in.flight.requests.per.connection": 5}) as producer:
            futures = [producer.produce(name, f"{i:04d}".encode() * 30, partition=i % 3) for i in range(600)]
            results = await asyncio.gather(*futures)
            sender = producer._sender
            streamed = set(sender._produce_streams._calls)
            return results, streamed, set(sender._metadata.brokers.values())

    results, streamed, brokers = asyncio.run(run())
    assert streamed and streamed <= brokers
    for p in range(3):
        assert [r.offset for r in results[p::3]] == list(range(200))
    assert [r.value for r in read_records(cluster, name, 0, 200)] == [f"{i:04d}".encode() * 30
                                                                     for i in range(0, 600, 3)]


def test_oversized_records_fail_with_message_too_large_without_being_sent(cluster, bootstrap) -> None:
    name = topic(cluster, "too-large")
    results = produce_all(bootstrap, {"max.request.size": 1000}, [
        {"topic": name, "value": b"a" * 2000},
        {"topic": name, "value": b"b" * 800},  # fits: 61 + 21 + 800
    ])
    assert isinstance(results[0], KafkaError) and results[0].name == "MESSAGE_TOO_LARGE"
    assert "max.request.size" in str(results[0])
    assert isinstance(results[1], RecordMetadata) and results[1].offset == 0
    assert [r.value for r in read_records(cluster, name, 0, 1)] == [b"b" * 800]


def test_a_batch_the_broker_refuses_fails_alone_and_the_idempotent_producer_goes_on(cluster, bootstrap) -> None:
    name = topic(cluster, "small-messages", configs={"max.message.bytes": "2000"})
    metrics: dict = {}
    # The large record is a batch of its own (over batch.size); the small one follows in the next.
    results = produce_all(bootstrap, {"batch.size": 4096}, [{"topic": name, "value": b"z" * 5000},
                                                            {"topic": name, "value": b"small"}], metrics)
    assert isinstance(results[0], KafkaError) and results[0].name == "MESSAGE_TOO_LARGE"
    # Its sequence number is a gap the broker would wait for forever: the
    # producer bumped its epoch (KIP-360) and the next batch went through.
    assert isinstance(results[1], RecordMetadata) and results[1].offset == 0
    assert metrics["producer-epoch-bump-total"] >= 1 and metrics["record-error-total"] == 1
    [batch] = read_batches(cluster, name, 0, 1)
    assert batch.header.producer_epoch >= 1 and batch.header.base_sequence == 0


def test_unknown_topic_and_partition_out_of_range(cluster, bootstrap) -> None:
    name = topic(cluster, "two", partitions=2)
    results = produce_all(bootstrap, {"max.block.ms": 1500}, [
        {"topic": "no-such-topic", "value": b"x"},
        {"topic": name, "value": b"x", "partition": 2},
        {"topic": name, "value": b"x", "partition": 1},
    ])
    assert results[0].name == "UNKNOWN_TOPIC_OR_PARTITION" and "1500 ms" in str(results[0])
    assert results[1].name == "UNKNOWN_TOPIC_OR_PARTITION" and "[0...1]" in str(results[1])
    assert isinstance(results[2], RecordMetadata) and results[2].partition == 1


def test_sync_producer_futures_callbacks_flush_and_close(cluster, bootstrap) -> None:
    name = topic(cluster, "sync", partitions=3)
    delivered: list[tuple] = []
    threads: set[str] = set()

    def on_delivery(err, metadata) -> None:
        threads.add(threading.current_thread().name)
        delivered.append((err, metadata))

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 10000})
    try:
        futures = [producer.produce(name, f"{i}", key=f"k{i % 7}", on_delivery=on_delivery) for i in range(300)]
        assert producer.flush(timeout=60) == 0  # without flush, linger.ms would hold them 10 s
        assert all(f.done() for f in futures)
        results = [f.result() for f in futures]
    finally:
        producer.close()
    assert len(delivered) == 300 and all(err is None for err, _ in delivered)
    assert threads == {"kraftlog-producer"}
    assert sorted((r.partition, r.offset) for r in results) == sorted((m.partition, m.offset) for _, m in delivered)
    for p in range(3):
        assert len({r.offset for r in results if r.partition == p}) == len([r for r in results if r.partition == p])
    with pytest.raises(RuntimeError, match="closed"):
        producer.produce(name, b"late")
    assert sum(len(read_records(cluster, name, p)) for p in range(3)) == 300


def test_buffer_memory_is_held_per_batch_and_send_and_produce_wait_at_the_limit(cluster, bootstrap) -> None:
    """buffer.memory counted per batch, as Kafka's BufferPool: an open batch holds batch.size
    however few records it has; at the limit send() and the sync produce() wait up to
    max.block.ms, then raise; a flush delivers what was queued and frees it all."""
    name = topic(cluster, "per-batch-memory", partitions=3)
    config = {"bootstrap.servers": bootstrap, "batch.size": 4000, "buffer.memory": 12000, "linger.ms": 60000,
              "max.block.ms": 300}

    async def run() -> tuple[list, BaseException, int]:
        async with AsyncProducer(config) as producer:
            await producer.partition_count(name)  # metadata first: the records go straight into batches
            queued = [await producer.send(name, b"x" * 10, partition=p) for p in range(3)]
            assert producer.buffered_bytes == 12000  # three batches of one 10-byte record each
            with pytest.raises(KafkaError) as blocked:
                await producer.send(name, b"y", partition=0)  # even into an open batch: full is full
            assert await producer.flush(30) == 0
            return [await f for f in queued], blocked.value, producer.buffered_bytes

    delivered, blocked, left = asyncio.run(run())
    assert blocked.name == "REQUEST_TIMED_OUT" and "buffer.memory" in str(blocked)
    assert [(m.partition, m.offset) for m in delivered] == [(0, 0), (1, 0), (2, 0)] and left == 0
    with Producer(config) as producer:
        futures = [producer.produce(name, b"z" * 10, partition=p) for p in range(3)]
        wait_until(lambda: producer.buffered_bytes >= 12000, 30, "three batches open")
        with pytest.raises(KafkaError, match="REQUEST_TIMED_OUT.*buffer.memory"):
            producer.produce(name, b"w", partition=1)
        assert producer.flush(30) == 0 and producer.buffered_bytes == 0
    assert [f.result(timeout=0).offset for f in futures] == [1, 1, 1]


def test_close_delivers_what_is_queued(cluster, bootstrap) -> None:
    name = topic(cluster, "close")
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 60000}) as producer:
        futures = [producer.produce(name, f"{i}") for i in range(50)]
    assert [f.result(timeout=0).offset for f in futures] == list(range(50))


def test_bad_config_names_the_key(bootstrap) -> None:
    for config, key in [
        ({"acks": "2"}, "acks"),
        ({"linger.ms": -1}, "linger.ms"),
        ({"batch.size": "big"}, "batch.size"),
        ({"compression.type": "brotli"}, "compression.type"),
        ({"enable.idempotence": "maybe"}, "enable.idempotence"),
        ({"enable.idempotence": True, "acks": 1}, "acks"),
        ({"enable.idempotence": True, "max.in.flight.requests.per.connection": 6},
         "max.in.flight.requests.per.connection"),
        ({"delivery.timeout.ms": 1000, "request.timeout.ms": 30000}, "delivery.timeout.ms"),
        ({"linger.ms.typo": 5}, "linger.ms.typo"),
        ({"bootstrap.servers": "nohostport"}, "bootstrap.servers"),
    ]:
        with pytest.raises(InvalidConfigError, match=key.replace(".", r"\.")):
            Producer({"bootstrap.servers": bootstrap, **config})
    with pytest.raises(InvalidConfigError, match="bootstrap.servers"):
        AsyncProducer({})


def test_metadata_from_any_bootstrap_broker_and_a_topic_created_while_records_wait(cluster, bootstrap) -> None:
    from client.metadata import Metadata
    from devcluster.local_processes import free_ports

    dead = f"127.0.0.1:{free_ports(1)[0]}"

    async def run() -> tuple:
        metadata = Metadata(f"{dead},{bootstrap}", retry_backoff_ms=50)
        try:
            # A dead bootstrap address is skipped; the live ones answer.
            await metadata.update()
            brokers = dict(metadata.brokers)
            # Records for a topic that does not exist yet wait (up to max.block.ms) and go once it does.
            async with AsyncProducer({"bootstrap.servers": f"{dead},{bootstrap}", "max.block.ms": 60000}) as producer:
                waiting = producer.produce("created-later", b"early", key=b"k")
                await asyncio.sleep(0.3)
                assert not waiting.done()
                await asyncio.get_running_loop().run_in_executor(None, topic, cluster, "created-later", 4)
                delivered = await asyncio.wait_for(waiting, 60)
            parts = await metadata.partitions_for("created-later")
            return brokers, delivered, parts, metadata.leader_for("created-later", 0)
        finally:
            await metadata.close()

    brokers, delivered, parts, leader = asyncio.run(run())
    assert brokers == {b: a for b, a in cluster.broker_addresses.items()}
    assert delivered.partition == (kafka_python_murmur2(b"k") & 0x7FFFFFFF) % 4 and delivered.offset == 0
    assert [p.partition for p in parts] == [0, 1, 2, 3] and leader is not None and leader.leader in cluster.brokers


def test_metadata_with_no_broker_reachable_is_a_network_error() -> None:
    from client.errors import NetworkError
    from client.metadata import Metadata
    from devcluster.local_processes import free_ports

    async def run() -> None:
        metadata = Metadata([f"127.0.0.1:{p}" for p in free_ports(2)], retry_backoff_ms=10)
        try:
            with pytest.raises(NetworkError, match="no broker answered Metadata"):
                await metadata.update()
            with pytest.raises(KafkaError, match="UNKNOWN_TOPIC_OR_PARTITION.*after 300 ms.*NETWORK_EXCEPTION"):
                await metadata.partitions_for("t", max_block_ms=300)
        finally:
            await metadata.close()

    asyncio.run(run())
