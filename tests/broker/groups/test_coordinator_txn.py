"""The group coordinator's shell with transactions: loading a real
__consumer_offsets log that holds transactional batches and markers, the
markers the marker writer reports (on_txn_completed), and TxnOffsetCommit
appended as the producer's transactional batch."""
from __future__ import annotations

import asyncio

import pytest

from broker import produce
from broker.config import BrokerConfig
from broker.errors import Error
from broker.groups.coordinator import GroupCoordinator, ImageTopicIds
from broker.groups.placement import OFFSETS_TOPIC
from broker.groups.records import Key, OffsetCommit, RecordType, encode_record
from kafka_protocol.control_records import encode_txn_marker
from kafka_protocol.records import Record, encode_batch
from kraftlog_api import groups_pb2 as gpb

from ..helpers import Cluster
from .test_txn_offsets import txn_request

GROUP = "g"


def offset_record(topic: str, index: int, offset: int, ids) -> Record:
    key, value = encode_record((Key(RecordType.OFFSET_COMMIT, GROUP, topic=topic, partition=index),
                                OffsetCommit(offset, -1, "", 1)), ids)
    return Record(key=key, value=value, timestamp=1)


def raw_append(lg, make) -> None:
    """A batch written as a replica would receive it (the leader's checks are not what is tested here)."""
    lg.append_as_follower(make(lg.log_end_offset))


def fetch(coordinator: GroupCoordinator, indexes) -> dict[int, tuple[int, int]]:
    response = coordinator.fetch(gpb.OffsetFetchRequest(group_id=GROUP, member_epoch=-1, require_stable=True,
                                                        topics=[gpb.TopicPartitions(topic="orders", partitions=indexes)]))
    assert response.error_code == 0, response
    return {p.partition_index: (p.committed_offset, p.error_code) for t in response.topics for p in t.partitions}


async def loaded(coordinator: GroupCoordinator) -> None:
    for _ in range(200):
        shard = coordinator.shards.get(0)
        if shard is not None and shard.loaded:
            return
        assert shard is None or shard.failed is None, shard.failed
        await asyncio.sleep(0.01)
    raise AssertionError("the coordinator did not load")


@pytest.fixture
def cluster(tmp_path):
    cluster = Cluster(tmp_path, [1])
    cluster.create_topic("orders", {i: [1] for i in range(4)})
    cluster.create_topic(OFFSETS_TOPIC, {0: [1]})
    yield cluster
    cluster[1].log_manager.close()


def coordinator_for(cluster: Cluster) -> GroupCoordinator:
    coordinator = GroupCoordinator(1, cluster[1], None, BrokerConfig(offsets_topic_num_partitions=1,
                                                                    offsets_commit_timeout_ms=2000))
    coordinator.on_replica_changes(cluster.last_changes[1])
    return coordinator


def test_loading_replays_transactions_and_later_markers_reach_the_loaded_machine(cluster) -> None:
    replicas = cluster[1]
    lg = replicas.get(OFFSETS_TOPIC, 0).log
    ids = ImageTopicIds(lambda: replicas.image)
    raw_append(lg, lambda at: encode_batch([offset_record("orders", 0, 1, ids)], base_offset=at))
    raw_append(lg, lambda at: encode_batch([offset_record("orders", 0, 2, ids), offset_record("orders", 1, 3, ids)],
                                           base_offset=at, producer_id=7, producer_epoch=0, transactional=True))
    raw_append(lg, lambda at: encode_txn_marker(7, 1, True, 0, 1, base_offset=at))
    raw_append(lg, lambda at: encode_batch([offset_record("orders", 2, 4, ids)], base_offset=at, producer_id=8,
                                           producer_epoch=0, transactional=True))
    raw_append(lg, lambda at: encode_batch([offset_record("orders", 3, 5, ids)], base_offset=at, producer_id=9,
                                           producer_epoch=0, transactional=True))
    raw_append(lg, lambda at: encode_txn_marker(9, 1, False, 0, 1, base_offset=at))

    async def scenario() -> None:
        coordinator = coordinator_for(cluster)
        coordinator.on_txn_completed(0, 8, True)  # while loading: ignored, the log has (or will have) the marker
        await loaded(coordinator)
        assert fetch(coordinator, [0, 1, 2, 3]) == {0: (2, 0), 1: (3, 0), 2: (-1, Error.UNSTABLE_OFFSET_COMMIT),
                                                    3: (-1, 0)}
        raw_append(lg, lambda at: encode_txn_marker(8, 1, True, 0, 1, base_offset=at))
        coordinator.on_txn_completed(0, 8, True)
        coordinator.on_txn_completed(5, 8, True)  # a partition not coordinated here: nothing happens
        assert fetch(coordinator, [2]) == {2: (4, 0)}
        await coordinator.stop()

        again = coordinator_for(cluster)  # loading again ends in the same offsets
        await loaded(again)
        assert fetch(again, [0, 1, 2, 3]) == {0: (2, 0), 1: (3, 0), 2: (4, 0), 3: (-1, 0)}
        await again.stop()

    asyncio.run(scenario())


def test_txn_offset_commit_refusals_write_nothing(cluster) -> None:
    async def scenario() -> None:
        coordinator = coordinator_for(cluster)
        await loaded(coordinator)
        end = cluster[1].get(OFFSETS_TOPIC, 0).log.log_end_offset
        for request, code in ((txn_request({("orders", 0): 1}, group="h", generation=3), Error.ILLEGAL_GENERATION),
                              (txn_request({("orders", 9): 1}), Error.UNKNOWN_TOPIC_OR_PARTITION),
                              (txn_request({("orders", 0): 1}, tid=""), Error.INVALID_REQUEST)):
            response = await coordinator.txn_offset_commit(request)
            assert {p.error_code for t in response.topics for p in t.partitions} == {code}
        response = await coordinator.txn_offset_commit(txn_request({("orders", 0): 1}, group=""))
        assert {p.error_code for t in response.topics for p in t.partitions} == {Error.INVALID_GROUP_ID}
        assert cluster[1].get(OFFSETS_TOPIC, 0).log.log_end_offset == end
        await coordinator.stop()

    asyncio.run(scenario())


@pytest.mark.skipif(not hasattr(produce, "AppendOrigin"),
                    reason="needs produce.append(origin=COORDINATOR) from the partition-txn branch")
def test_txn_offset_commit_appends_a_transactional_batch(cluster) -> None:
    async def scenario() -> None:
        coordinator = coordinator_for(cluster)
        await loaded(coordinator)
        response = await coordinator.txn_offset_commit(txn_request({("orders", 0): 11}, pid=21, epoch=0))
        assert {p.error_code for t in response.topics for p in t.partitions} == {0}
        lg = cluster[1].get(OFFSETS_TOPIC, 0).log
        headers = list(lg.iter_batch_headers())
        assert headers[-1].is_transactional and headers[-1].producer_id == 21 and headers[-1].base_sequence == -1
        assert fetch(coordinator, [0]) == {0: (-1, Error.UNSTABLE_OFFSET_COMMIT)}
        await coordinator.stop()

    asyncio.run(scenario())


def test_the_rpc_checks_acls_as_kafka(cluster) -> None:
    from security.acl import AclBinding, AclIndex, AclOperation, AclPermissionType, PatternType, ResourceType
    from security.authorization import STANDARD_AUTHORIZER, AuthorizerSettings, NodeAuthorizer
    from security.principal import KafkaPrincipal
    from security.request_context import RequestSession, reset_session, set_session
    from broker.groups.service import GroupCoordinatorService

    def allow(resource: ResourceType, name: str, operation: AclOperation) -> AclBinding:
        return AclBinding(resource, name, PatternType.LITERAL, "User:alice", "*", operation, AclPermissionType.ALLOW)

    access = NodeAuthorizer(AuthorizerSettings.from_properties({"authorizer.class.name": STANDARD_AUTHORIZER}))
    access.load_acls(AclIndex([allow(ResourceType.TRANSACTIONAL_ID, "tid", AclOperation.WRITE),
                               allow(ResourceType.GROUP, GROUP, AclOperation.READ),
                               allow(ResourceType.TOPIC, "orders", AclOperation.READ)]))

    def codes(response) -> dict[tuple[str, int], int]:
        return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}

    async def scenario() -> None:
        coordinator = coordinator_for(cluster)
        await loaded(coordinator)
        service = GroupCoordinatorService(coordinator, listener="PLAINTEXT", ready=lambda: True, access=access)
        token = set_session(RequestSession(KafkaPrincipal.user("alice"), "10.0.0.1", "SASL_SSL"))
        try:
            # orders-9 does not exist: the allowed part reaches the coordinator and writes nothing
            request = txn_request({("orders", 9): 1, ("secret", 0): 1})
            assert codes(await service.TxnOffsetCommit(request, None)) == {
                ("orders", 9): Error.UNKNOWN_TOPIC_OR_PARTITION, ("secret", 0): Error.TOPIC_AUTHORIZATION_FAILED}
            request = txn_request({("orders", 0): 1, ("secret", 0): 1}, tid="someone-else")
            assert set(codes(await service.TxnOffsetCommit(request, None)).values()) == {
                Error.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
            request = txn_request({("orders", 0): 1}, group="not-mine")
            assert codes(await service.TxnOffsetCommit(request, None)) == {
                ("orders", 0): Error.GROUP_AUTHORIZATION_FAILED}
            fetched = coordinator.fetch(gpb.OffsetFetchRequest(group_id=GROUP, member_epoch=-1))
            assert fetched.error_code == 0 and list(fetched.topics) == []  # nothing was committed or made pending
            assert coordinator.shards[0].machine.state.pending == {}
        finally:
            reset_session(token)
            await coordinator.stop()

    asyncio.run(scenario())
