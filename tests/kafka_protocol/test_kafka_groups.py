"""Consumer groups over Kafka's protocol, driven by clients nobody here
wrote: confluent-kafka (librdkafka) consumers of one classic group with the
range and the cooperative-sticky assignor while members join and leave
(every record consumed once), offsets committed and read back, the admin
calls (ListGroups, DescribeGroups, OffsetFetch, DeleteGroups), kafka-python
3's and aiokafka's group consumers, kcat -G, a librdkafka group.protocol=consumer member
sharing a KIP-848 group with the gRPC consumer, and the online migration: the gRPC consumer
joining a classic librdkafka group (upgrade) and leaving it (downgrade). Raw frames for what no
client sends: requests in the wrong state, hostile values, mixing the two
kinds of group. One cluster for the module."""
from __future__ import annotations

import shutil
import subprocess
import time
import uuid
from typing import Callable

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kio.schema.errors import ErrorCode

from client.consumer import Consumer as GrpcConsumer
from devcluster.local_cluster import LocalCluster
from kafka_protocol.wire import versions
from kraftlog_server.server_config import KAFKA_PROTOCOL_LISTENERS

from .test_kafka_listener import RawKafka, kafka_address, request

TOPIC = "group-input"
PARTITIONS = 4
RECORDS = 120
DEADLINE_S = 30.0  # bounds every wait; never part of an assert
CLASSIC = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 250, "max.poll.interval.ms": 20000}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("kafka-groups"), controllers=1, brokers=2,
                      client_listener="PLAINTEXT",
                      properties={KAFKA_PROTOCOL_LISTENERS: "CLIENTS", "offsets.topic.replication.factor": 2,
                                  "offsets.topic.num.partitions": 4, "group.initial.rebalance.delay.ms": 100,
                                  "group.consumer.heartbeat.interval.ms": 250,
                                  "transaction.state.log.replication.factor": 2, "transaction.state.log.min.isr": 1,
                                  "transaction.state.log.num.partitions": 2}).running() as c:
        c.create_topic(TOPIC, PARTITIONS, 2)
        c.wait_for_leaders(TOPIC)
        producer = Producer({"bootstrap.servers": c.client_bootstrap})
        for i in range(RECORDS):
            producer.produce(TOPIC, value=b"v%d" % i, partition=i % PARTITIONS)
        assert producer.flush(DEADLINE_S) == 0
        yield c


def consumer(cluster: LocalCluster, group: str, **config) -> Consumer:
    return Consumer({"bootstrap.servers": cluster.client_bootstrap, "group.id": group,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False, **config})


def commit_quietly(c: Consumer, *_partitions) -> None:
    """What a careful consumer does on revocation: commit what it has consumed."""
    try:
        c.commit(asynchronous=False)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError._NO_OFFSET:
            raise


def poll_until(consumers: list, seen: dict, done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not done() and time.monotonic() < deadline:
        for c in consumers:
            m = c.poll(0.05)
            if m is not None and m.error() is None:
                seen[(m.partition(), m.offset())] = seen.get((m.partition(), m.offset()), 0) + 1


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_members_join_and_leave_and_every_record_is_consumed_once(cluster, strategy):
    group = f"classic-{strategy}"
    seen: dict = {}
    members: list[Consumer] = []

    def join() -> None:
        c = consumer(cluster, group, **{"partition.assignment.strategy": strategy, **CLASSIC})
        c.subscribe([TOPIC], on_revoke=commit_quietly)
        members.append(c)

    def balanced(n: int) -> Callable[[], bool]:
        return lambda: sorted(len(c.assignment()) for c in members) == sorted(
            PARTITIONS // n + (i < PARTITIONS % n) for i in range(n))

    admin = AdminClient({"bootstrap.servers": cluster.client_bootstrap})

    def stable() -> bool:
        """No rebalance under way: a member closing now commits in a generation the group still takes."""
        return admin.describe_consumer_groups([group])[group].result(timeout=10).state.name == "STABLE"

    try:
        join()
        poll_until(members, seen, lambda: len(seen) >= RECORDS // 4)
        join()
        poll_until(members, seen, balanced(2))
        join()
        poll_until(members, seen, lambda: balanced(3)() and stable())
        assert {tp.partition for c in members for tp in c.assignment()} == set(range(PARTITIONS))
        leaving = members.pop(0)
        commit_quietly(leaving)  # what it consumed is committed before it leaves
        leaving.close()
        poll_until(members, seen, lambda: len(seen) >= RECORDS and balanced(2)())
        assert sorted(len(c.assignment()) for c in members) == [2, 2]
    finally:
        for c in members:
            c.close()
    assert len(seen) == RECORDS and set(seen.values()) == {1}, "a record consumed twice or not at all"
    check = consumer(cluster, group)
    try:
        committed = check.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=10)
    finally:
        check.close()
    assert sum(tp.offset for tp in committed) == RECORDS  # every partition committed to its end


def test_a_static_member_restarts_without_a_rebalance(cluster):
    group = "classic-static"
    members = {name: consumer(cluster, group, **{"group.instance.id": name, **CLASSIC}) for name in ("s1", "s2")}
    assigned = {"s1": 0, "s2": 0}

    def counting(name: str) -> Callable:
        def on_assign(c, partitions) -> None:
            assigned[name] += 1
        return on_assign

    for name, c in members.items():
        c.subscribe([TOPIC], on_assign=counting(name))
    seen: dict = {}
    try:
        poll_until(list(members.values()), seen, lambda: all(len(c.assignment()) == 2 for c in members.values()))
        before, rebalances = {tp.partition for tp in members["s2"].assignment()}, assigned["s1"]
        members.pop("s2").close()  # a static member leaves no LeaveGroup behind: its place is kept
        members["s2"] = consumer(cluster, group, **{"group.instance.id": "s2", **CLASSIC})
        members["s2"].subscribe([TOPIC])
        poll_until(list(members.values()), seen, lambda: bool(members["s2"].assignment()))
        settled = time.monotonic() + 1.0  # long enough for s1 to hear of a rebalance, were there one
        poll_until(list(members.values()), seen, lambda: time.monotonic() > settled)
        assert {tp.partition for tp in members["s2"].assignment()} == before
        assert assigned["s1"] == rebalances  # s1 saw no rebalance: the group stayed in its generation
    finally:
        for c in members.values():
            c.close()


def test_admin_lists_describes_fetches_offsets_and_deletes_groups(cluster):
    group = "admin-classic"
    c = consumer(cluster, group, **{"partition.assignment.strategy": "roundrobin", **CLASSIC})
    c.subscribe([TOPIC])
    seen: dict = {}
    poll_until([c], seen, lambda: len(seen) >= 10)
    c.commit(asynchronous=False)
    admin = AdminClient({"bootstrap.servers": cluster.client_bootstrap})
    try:
        described = admin.describe_consumer_groups([group])[group].result(timeout=10)
        assert described.state.name == "STABLE" and described.partition_assignor == "roundrobin"
        assert {tp.partition for tp in described.members[0].assignment.topic_partitions} == set(range(PARTITIONS))
        listed = admin.list_consumer_groups().result(timeout=10)
        assert group in {g.group_id for g in listed.valid}
        failed = admin.delete_consumer_groups([group])[group]
        with pytest.raises(KafkaException) as refused:
            failed.result(timeout=10)
        assert refused.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
    finally:
        c.close()
    from confluent_kafka import ConsumerGroupTopicPartitions
    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(timeout=10)
    assert sum(tp.offset for tp in offsets.topic_partitions if tp.offset >= 0) == len(seen)
    admin.delete_consumer_groups([group])[group].result(timeout=10)
    assert group not in {g.group_id for g in admin.list_consumer_groups().result(timeout=10).valid}


def test_kafka_python_consumer_group_commits_and_reads_back(cluster):
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KpTopicPartition
    c = KafkaConsumer(TOPIC, bootstrap_servers=cluster.client_bootstrap, group_id="kafka-python",
                      auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=10000,
                      session_timeout_ms=6000, heartbeat_interval_ms=500)
    try:
        got = []
        for record in c:
            got.append((record.partition, record.offset))
            if len(got) == RECORDS:
                break
        c.commit()
        assert len(set(got)) == RECORDS
        assert sum(c.committed(KpTopicPartition(TOPIC, p)) for p in range(PARTITIONS)) == RECORDS
    finally:
        c.close()


def test_aiokafka_consumer_group_commits_and_reads_back(cluster):
    import asyncio

    from aiokafka import AIOKafkaConsumer
    from aiokafka import TopicPartition as AioTopicPartition

    async def consume() -> tuple[int, int]:
        c = AIOKafkaConsumer(TOPIC, bootstrap_servers=cluster.client_bootstrap, group_id="aiokafka",
                             auto_offset_reset="earliest", enable_auto_commit=False, session_timeout_ms=6000,
                             heartbeat_interval_ms=500)
        await c.start()
        try:
            got = set()
            async with asyncio.timeout(DEADLINE_S):
                async for record in c:
                    got.add((record.partition, record.offset))
                    if len(got) == RECORDS:
                        break
            await c.commit()
            committed = [await c.committed(AioTopicPartition(TOPIC, p)) for p in range(PARTITIONS)]
            return len(got), sum(committed)
        finally:
            await c.stop()

    assert asyncio.run(consume()) == (RECORDS, RECORDS)


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_balanced_consumer_reads_every_record(cluster):
    done = subprocess.run(["kcat", "-b", cluster.client_bootstrap, "-G", "kcat-group", "-X",
                           "auto.offset.reset=earliest", "-c", str(RECORDS), "-f", "%p:%o\\n", TOPIC],
                          capture_output=True, text=True, timeout=DEADLINE_S)
    assert done.returncode == 0, done.stderr
    assert len(set(done.stdout.split())) == RECORDS


def test_librdkafka_kip848_member_and_grpc_member_share_a_group(cluster):
    group = "shared-kip848"
    rd = consumer(cluster, group, **{"group.protocol": "consumer"})
    rd.subscribe([TOPIC])
    grpc_member = GrpcConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                                "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    grpc_member.subscribe([TOPIC])
    try:
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            rd.poll(0.05)
            grpc_member.poll(0.05)
            mine = {tp.partition for tp in rd.assignment()}
            theirs = {tp.partition for tp in grpc_member.assignment()}
            if mine and theirs and not mine & theirs and mine | theirs == set(range(PARTITIONS)):
                break
        assert len(mine) == len(theirs) == PARTITIONS // 2 and not mine & theirs
        got = None
        while got is None and time.monotonic() < deadline:
            m = rd.poll(0.1)
            got = m if m is not None and m.error() is None else None
            grpc_member.poll(0.05)
        assert got is not None
        rd.commit(message=got, asynchronous=False)  # OffsetCommit v9: the member's epoch
        (committed,) = rd.committed([TopicPartition(TOPIC, got.partition())], timeout=10)
        assert committed.offset == got.offset() + 1
        admin = AdminClient({"bootstrap.servers": cluster.client_bootstrap})
        described = admin.describe_consumer_groups([group])[group].result(timeout=10)
        assert len(described.members) == 2
    finally:
        rd.close()
        grpc_member.close()


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_a_grpc_member_joins_a_classic_group_and_they_share_its_partitions(cluster, strategy):
    """KIP-848's online migration (group.consumer.migration.policy, bidirectional
    by default): a KIP-848 gRPC member joins a classic librdkafka group, which
    becomes a consumer group whose classic member keeps speaking JoinGroup/
    SyncGroup and gets its share from the coordinator's assignor; when the
    gRPC member leaves, the group is classic again."""
    topic, group, first, more = f"mixed-{strategy}", f"mixed-classic-kip848-{strategy}", 60, 20
    cluster.create_topic(topic, PARTITIONS, 2)
    cluster.wait_for_leaders(topic)
    producer = Producer({"bootstrap.servers": cluster.client_bootstrap})

    def produce(start: int, count: int) -> None:
        for i in range(start, start + count):
            producer.produce(topic, value=b"m%d" % i, partition=i % PARTITIONS)
        assert producer.flush(DEADLINE_S) == 0

    produce(0, first)
    seen: dict = {}

    def count(partition: int, offset: int) -> None:
        seen[(partition, offset)] = seen.get((partition, offset), 0) + 1

    classic = consumer(cluster, group, **{"partition.assignment.strategy": strategy, **CLASSIC})
    classic.subscribe([topic], on_revoke=commit_quietly)  # what it consumed is committed as it gives it up
    grpc_member = None
    try:
        deadline = time.monotonic() + DEADLINE_S
        while len(seen) < first // 4 and time.monotonic() < deadline:
            m = classic.poll(0.05)
            if m is not None and m.error() is None:
                count(m.partition(), m.offset())
        grpc_member = GrpcConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                                    "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        grpc_member.subscribe([topic])

        def step() -> tuple[set, set]:
            m = classic.poll(0.05)
            if m is not None and m.error() is None:
                count(m.partition(), m.offset())
            for r in grpc_member.poll(0.05):
                count(r.partition, r.offset)
            return {tp.partition for tp in classic.assignment()}, {tp.partition for tp in grpc_member.assignment()}

        mine, theirs = step()
        while time.monotonic() < deadline and not (
                mine and theirs and not mine & theirs and mine | theirs == set(range(PARTITIONS))
                and len(seen) >= first):
            mine, theirs = step()
        assert len(mine) == len(theirs) == PARTITIONS // 2 and not mine & theirs
        produce(first, more)  # records arriving while the two kinds share the group
        while len(seen) < first + more and time.monotonic() < deadline:
            mine, theirs = step()
        assert {tp.partition for tp in classic.assignment()} == mine and not mine & theirs
        admin = AdminClient({"bootstrap.servers": cluster.client_bootstrap})
        described = admin.describe_consumer_groups([group])[group].result(timeout=10)
        assert len(described.members) == 2 and described.type.name == "CONSUMER"
        # The gRPC member leaves: the group goes back to classic (the downgrade) and its
        # classic member takes every partition in a classic rebalance.
        grpc_member.commit()
        grpc_member.close()
        grpc_member = None
        while len(classic.assignment()) < PARTITIONS and time.monotonic() < deadline:
            m = classic.poll(0.05)
            if m is not None and m.error() is None:
                count(m.partition(), m.offset())
        assert len(classic.assignment()) == PARTITIONS
        assert admin.describe_consumer_groups([group])[group].result(timeout=10).type.name == "CLASSIC"
        produce(first + more, more)
        while len(seen) < first + 2 * more and time.monotonic() < deadline:
            m = classic.poll(0.05)
            if m is not None and m.error() is None:
                count(m.partition(), m.offset())
    finally:
        classic.close()
        if grpc_member is not None:
            grpc_member.close()
    assert len(seen) == first + 2 * more and set(seen.values()) == {1}, "a record consumed twice or not at all"


# -- raw frames: wrong states, hostile values, the two kinds of group -------------------------

def find_coordinator(cluster: LocalCluster, version: int, values: dict) -> object:
    """FindCoordinator until the internal topic it creates on first use has its leaders."""
    deadline = time.monotonic() + DEADLINE_S
    with RawKafka(kafka_address(cluster)) as raw:
        while True:
            found = raw.call(request(versions.FIND_COORDINATOR, version, values))
            codes = [c.error_code for c in found.coordinators] if version >= 4 else [found.error_code]
            if ErrorCode.coordinator_not_available not in codes or time.monotonic() > deadline:
                return found
            time.sleep(0.2)


def coordinator(cluster: LocalCluster, group: str) -> str:
    (c,) = find_coordinator(cluster, 4, {"key_type": 0, "coordinator_keys": [group]}).coordinators
    assert c.error_code == ErrorCode.none
    return f"{c.host}:{c.port}"


def join(raw: RawKafka, group: str, member_id: str = "", version: int = 5, protocol_type: str = "consumer",
         metadata: bytes = b"meta", session_ms: int = 6000) -> object:
    return raw.call(request(versions.JOIN_GROUP, version, {
        "group_id": group, "session_timeout": session_ms, "rebalance_timeout": 5000, "member_id": member_id,
        "group_instance_id": None, "protocol_type": protocol_type, "reason": None,
        "protocols": [{"name": "range", "metadata": metadata}]}))


def test_find_coordinator_for_groups_and_transactions_in_every_version(cluster):
    v0 = find_coordinator(cluster, 0, {"key": "some-group"})
    v4 = find_coordinator(cluster, 4, {"key_type": 0, "coordinator_keys": ["some-group", ""]})
    txn = find_coordinator(cluster, 3, {"key": "some-txn", "key_type": 1})
    assert v0.error_code == ErrorCode.none and v0.node_id in cluster.brokers
    assert [c.error_code for c in v4.coordinators] == [ErrorCode.none, ErrorCode.invalid_group_id]
    assert v4.coordinators[0].node_id == v0.node_id
    assert txn.error_code == ErrorCode.none and txn.node_id in cluster.brokers


def test_classic_requests_in_the_wrong_state(cluster):
    group = "raw-wrong-state"
    with RawKafka(coordinator(cluster, group)) as raw:
        sync = raw.call(request(versions.SYNC_GROUP, 3, {"group_id": group, "generation_id": 1, "member_id": "m",
                                                          "group_instance_id": None, "assignments": []}))
        assert sync.error_code == ErrorCode.unknown_member_id
        leave = raw.call(request(versions.LEAVE_GROUP, 1, {"group_id": group, "member_id": "m"}))
        assert leave.error_code == ErrorCode.unknown_member_id
        first = join(raw, group)
        assert first.error_code == ErrorCode.member_id_required and first.member_id
        joined = join(raw, group, first.member_id)  # alone: answered once the initial delay passed
        assert joined.error_code == ErrorCode.none and joined.leader == first.member_id
        beat = raw.call(request(versions.HEARTBEAT, 3, {"group_id": group, "generation_id": joined.generation_id + 5,
                                                         "member_id": first.member_id, "group_instance_id": None}))
        assert beat.error_code == ErrorCode.illegal_generation
        other_type = join(raw, group, protocol_type="connect")
        assert other_type.error_code == ErrorCode.inconsistent_group_protocol
        bad_session = join(raw, group, session_ms=10)
        assert bad_session.error_code == ErrorCode.invalid_session_timeout
        empty_id = join(raw, "")
        assert empty_id.error_code == ErrorCode.invalid_group_id
        # A KIP-848 member cannot join a classic group whose member's metadata is no
        # consumer-protocol subscription: no upgrade (Kafka's answer).
        kip848 = raw.call(request(versions.CONSUMER_GROUP_HEARTBEAT, 0, {
            "group_id": group, "member_id": "", "member_epoch": 0, "instance_id": None, "rack_id": None,
            "rebalance_timeout": 5000, "subscribed_topic_names": [TOPIC], "server_assignor": None,
            "topic_partitions": []}))
        assert kip848.error_code == ErrorCode.group_id_not_found
        left = raw.call(request(versions.LEAVE_GROUP, 3, {"group_id": group, "members": [
            {"member_id": first.member_id, "group_instance_id": None}, {"member_id": "ghost", "group_instance_id": None}]}))
        assert [m.error_code for m in left.members] == [ErrorCode.none, ErrorCode.unknown_member_id]


def test_huge_member_metadata_is_carried_or_refused_and_the_broker_keeps_serving(cluster):
    group = "raw-huge"
    with RawKafka(coordinator(cluster, group)) as raw:
        joined = join(raw, group, version=3, metadata=b"x" * 600_000)  # v3: no member id round trip
        assert joined.error_code == ErrorCode.none and len(joined.members[0].metadata) == 600_000
        sync = raw.call(request(versions.SYNC_GROUP, 3, {
            "group_id": group, "generation_id": joined.generation_id, "member_id": joined.member_id,
            "group_instance_id": None, "assignments": [{"member_id": joined.member_id, "assignment": b"y" * 600_000}]}))
        # The group's record would be over the offsets topic's max.message.bytes: Kafka's answer, nothing written.
        assert sync.error_code == ErrorCode.unknown_server_error
        again = join(raw, group, joined.member_id, version=3)  # the group rebalances; the member is still in it
        assert again.error_code == ErrorCode.none and again.generation_id == joined.generation_id + 1


def test_metadata_resolves_a_topic_asked_for_by_id(cluster):
    topic_id = uuid.UUID(bytes=cluster.metadata(topics=[TOPIC]).topics[0].topic_id)
    with RawKafka(kafka_address(cluster)) as raw:
        answer = raw.call(request(versions.METADATA, 12, {
            "topics": [{"topic_id": topic_id, "name": None}], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False}))
    (found,) = answer.topics
    assert (found.error_code, found.name, len(found.partitions)) == (ErrorCode.none, TOPIC, PARTITIONS)
