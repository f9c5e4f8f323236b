"""The controller's refusals of internal and reserved topics, and of requests over Kafka's record cap."""

from __future__ import annotations

import pytest

from kraftlog_api import controller_pb2 as cpb
from kafka_protocol.internal_topics import CLUSTER_METADATA_TOPIC, GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC
from metadata_quorum.controller import Error
from metadata_quorum.controller.result import MAX_RECORDS_PER_USER_OP

from .test_controller_harness import Harness


def test_kafka_cap_is_ten_thousand_records() -> None:
    assert MAX_RECORDS_PER_USER_OP == 10_000


def harness() -> Harness:
    h = Harness()
    h.brokers(3)
    return h


def create_partitions(h: Harness, *counts: tuple[str, int], validate_only: bool = False
                      ) -> cpb.CreatePartitionsResponse:
    request = cpb.CreatePartitionsRequest(
        topics=[cpb.CreatePartitionsRequest.Topic(name=n, count=c) for n, c in counts], validate_only=validate_only)
    return h.apply(h.controller.handle_create_partitions(request))


def delete(h: Harness, *names: str) -> cpb.DeleteTopicsResponse:
    return h.apply(h.controller.handle_delete_topics(cpb.DeleteTopicsRequest(names=names)))


# --- __cluster_metadata: the quorum's log, never a topic ---------------------------------------

def test_creating_cluster_metadata_is_an_invalid_request() -> None:
    h = harness()
    result = h.create(CLUSTER_METADATA_TOPIC)
    assert result.error_code == Error.INVALID_REQUEST
    assert result.error_message == "Creation of internal topic __cluster_metadata is prohibited."
    assert not h.last.records and CLUSTER_METADATA_TOPIC not in h.image.topic_ids  # type: ignore[union-attr]


def test_cluster_metadata_cannot_be_deleted_or_grown_even_if_an_old_log_made_it() -> None:
    # A log written before this check may hold such a topic; it stays untouched
    # (deleting it would make brokers remove the quorum's own directory).
    h = harness()
    h.create("legacy")
    h.image.topic_ids[CLUSTER_METADATA_TOPIC] = h.image.topic_ids.pop("legacy")
    before = h.image.offset
    response = delete(h, CLUSTER_METADATA_TOPIC)
    assert response.topics[0].error_code == Error.INVALID_REQUEST
    assert "Deletion of internal topic __cluster_metadata" in response.topics[0].error_message
    response = create_partitions(h, (CLUSTER_METADATA_TOPIC, 2))
    assert response.topics[0].error_code == Error.INVALID_REQUEST
    assert h.image.offset == before


# --- __consumer_offsets, __transaction_state: the brokers' own topics ----------------------------

def test_the_brokers_may_create_the_offsets_topic() -> None:
    h = harness()
    assert h.create(GROUP_METADATA_TOPIC, partitions=50, rf=3).error_code == Error.NONE


@pytest.mark.parametrize("name", [GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC])
def test_internal_topics_are_not_deleted(name: str) -> None:
    h = harness()
    h.create(name, partitions=3, rf=3)
    h.create("user")
    response = delete(h, name, "user")
    internal, user = response.topics
    assert internal.error_code == Error.INVALID_TOPIC_EXCEPTION
    assert internal.error_message == (
        f"Topic {name} is a kafka internal topic and is not allowed to be marked for deletion.")
    assert user.error_code == Error.NONE
    assert name in h.image.topic_ids and "user" not in h.image.topic_ids


@pytest.mark.parametrize("name", [GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC])
def test_internal_topics_are_not_grown(name: str) -> None:
    h = harness()
    h.create(name, partitions=3, rf=3)
    result = create_partitions(h, (name, 6)).topics[0]
    assert result.error_code == Error.INVALID_TOPIC_EXCEPTION
    assert result.error_message == f"The number of partitions for the internal topic {name} cannot be changed."
    assert len(h.image.topic(name).partitions) == 3  # type: ignore[union-attr]


# --- MAX_RECORDS_PER_USER_OP --------------------------------------------------------------------

def test_create_topics_at_the_cap_is_accepted() -> None:
    # 1 TopicRecord + 1 ConfigRecord + 9,998 PartitionRecords: exactly the cap.
    h = harness()
    result = h.create("t", partitions=MAX_RECORDS_PER_USER_OP - 2, configs={"retention.ms": "1000"})
    assert result.error_code == Error.NONE
    assert len(h.last.records) == MAX_RECORDS_PER_USER_OP  # type: ignore[union-attr]


def test_create_topics_one_record_over_the_cap_writes_nothing() -> None:
    h = harness()
    before = h.image.offset
    result = h.create("t", partitions=MAX_RECORDS_PER_USER_OP - 1, configs={"retention.ms": "1000"})
    assert result.error_code == Error.POLICY_VIOLATION
    assert "10001" in result.error_message and str(MAX_RECORDS_PER_USER_OP) in result.error_message
    assert not h.last.records and h.image.offset == before  # type: ignore[union-attr]


def test_an_oversized_create_topics_is_refused_whole() -> None:
    # Each topic alone fits; together they do not: nothing is created, every topic says why.
    h = harness()
    h.create("exists")
    request = cpb.CreateTopicsRequest(topics=[
        cpb.CreateTopicsRequest.CreatableTopic(name="a", num_partitions=6000, replication_factor=1),
        cpb.CreateTopicsRequest.CreatableTopic(name="exists", num_partitions=1, replication_factor=1),
        cpb.CreateTopicsRequest.CreatableTopic(name="b", num_partitions=6000, replication_factor=1),
        cpb.CreateTopicsRequest.CreatableTopic(name="c", num_partitions=1, replication_factor=1),
    ])
    response = h.apply(h.controller.handle_create_topics(request))
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("a", Error.POLICY_VIOLATION), ("exists", Error.TOPIC_ALREADY_EXISTS),
        ("b", Error.POLICY_VIOLATION), ("c", Error.POLICY_VIOLATION)]
    assert not response.topics[0].topic_id and not response.topics[0].num_partitions
    assert not h.last.records and set(h.image.topic_ids) == {"exists"}  # type: ignore[union-attr]


def test_validate_only_counts_against_the_cap_too() -> None:
    h = harness()
    assert h.create("t", partitions=MAX_RECORDS_PER_USER_OP - 1, validate_only=True).error_code == Error.NONE
    assert h.create("t", partitions=MAX_RECORDS_PER_USER_OP, validate_only=True).error_code == Error.POLICY_VIOLATION


def test_create_partitions_over_the_cap_is_refused_before_placing() -> None:
    h = harness()
    h.create("t", partitions=3, rf=3)
    result = create_partitions(h, ("t", 100_003)).topics[0]
    assert result.error_code == Error.POLICY_VIOLATION and "100000" in result.error_message
    assert not h.last.records and len(h.image.topic("t").partitions) == 3  # type: ignore[union-attr]


def test_create_partitions_at_the_cap_is_accepted_and_the_cap_spans_topics() -> None:
    h = harness()
    h.create("t", partitions=1)
    h.create("u", partitions=1)
    response = create_partitions(h, ("t", 1 + MAX_RECORDS_PER_USER_OP), validate_only=True)
    assert response.topics[0].error_code == Error.NONE
    response = create_partitions(h, ("t", 1 + MAX_RECORDS_PER_USER_OP // 2), ("u", 2 + MAX_RECORDS_PER_USER_OP // 2))
    assert [t.error_code for t in response.topics] == [Error.POLICY_VIOLATION] * 2
    assert not h.last.records  # type: ignore[union-attr]


def test_delete_topics_over_the_cap_is_refused_whole() -> None:
    h = harness()
    names = [f"t{i}" for i in range(MAX_RECORDS_PER_USER_OP + 1)]
    for name in names:  # straight into the image: 10,001 topics through the handler would be slow
        h.image.topic_ids[name] = name.encode().ljust(16, b"\0")
    response = delete(h, *names)
    assert {t.error_code for t in response.topics} == {Error.POLICY_VIOLATION}
    assert len(response.topics) == len(names) and not h.last.records  # type: ignore[union-attr]


def test_elect_leaders_of_every_partition_over_the_cap_is_refused_at_the_request_level() -> None:
    # 21,000 partitions on brokers 0 and 1; broker 0 fenced and back: about
    # half of them want their preferred leader (0) back, more than the cap.
    h = Harness()
    h.brokers(2)
    for name in ("a", "b", "c"):
        assert h.create(name, partitions=7000, rf=2).error_code == Error.NONE
    h.heartbeat(0, want_fence=True)
    h.heartbeat(0)
    assert not h.image.brokers[0].fenced
    rejoin = cpb.AlterPartitionRequest(broker_id=1, broker_epoch=h.epochs[1])  # broker 1 leads all now
    for name in ("a", "b", "c"):
        items = []
        for p in range(7000):
            state = h.state(name, p)
            items.append(cpb.AlterPartitionRequest.PartitionData(
                partition_index=p, leader_epoch=state.leader_epoch, new_isr=[0, 1],
                partition_epoch=state.partition_epoch, leader_recovery_state=state.leader_recovery_state))
        rejoin.topics.add(topic_id=h.topic_id(name), partitions=items)
    assert h.apply(h.controller.handle_alter_partition(rejoin)).error_code == Error.NONE
    before = h.image.offset
    response = h.elect(cpb.PREFERRED)
    assert response.error_code == Error.POLICY_VIOLATION
    assert not h.last.records and h.image.offset == before  # type: ignore[union-attr]
    one_topic = h.elect(cpb.PREFERRED, {"a": list(range(7000))})  # a request under the cap still works
    assert one_topic.error_code == Error.NONE and len(h.last.records) > 0  # type: ignore[union-attr]
