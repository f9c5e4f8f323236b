"""CreateTopics, DeleteTopics, CreatePartitions, AllocateProducerIds; error responses; determinism."""

from __future__ import annotations

from collections import Counter

import pytest

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.controller import PRODUCER_ID_BLOCK_SIZE, ControllerConfig, Error, error_response

from .test_controller_harness import Harness, kinds


def test_a_topic_becomes_topic_config_and_partition_records() -> None:
    h = Harness()
    h.brokers(3, racks="ab")
    result = h.create("orders", partitions=3, rf=2, configs={"retention.ms": "1000", "cleanup.policy": "compact"})
    assert result.error_code == Error.NONE
    assert (result.num_partitions, result.replication_factor) == (3, 2)
    assert {(c.name, c.value) for c in result.configs} == {("retention.ms", "1000"), ("cleanup.policy", "compact")}
    assert kinds(h.last) == ["topic", "config", "config", "partition", "partition", "partition"]
    assert result.topic_id == h.topic_id("orders") and len(result.topic_id) == 16
    assert h.image.topic_config("orders") == {"retention.ms": "1000", "cleanup.policy": "compact"}
    for p in range(3):
        state = h.state("orders", p)
        assert state.isr == state.replicas and state.leader == state.replicas[0]
        assert (state.leader_epoch, state.partition_epoch) == (0, 0)
        assert len({h.image.brokers[b].rack for b in state.replicas}) == 2
    assert len({h.state("orders", p).leader for p in range(3)}) == 3


def test_defaults_come_from_the_config() -> None:
    h = Harness(ControllerConfig(num_partitions=4, default_replication_factor=2))
    h.brokers(3)
    result = h.create("t", partitions=-1, rf=-1)
    assert (result.num_partitions, result.replication_factor) == (4, 2)


def test_leaders_rotate_across_topics() -> None:
    h = Harness()
    h.brokers(3)
    for name in ("a", "b", "c"):
        h.create(name)
    assert sorted(h.state(n).leader for n in ("a", "b", "c")) == [0, 1, 2]


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "with space", "slash/name", "ünï", "tab\t"])
def test_invalid_topic_names(name: str) -> None:
    h = Harness()
    h.brokers(1)
    result = h.create(name)
    assert result.error_code == Error.INVALID_TOPIC_EXCEPTION and result.error_message
    assert not h.last.records  # type: ignore[union-attr]


def test_legal_topic_names() -> None:
    h = Harness()
    h.brokers(1)
    for name in ("a", "A-b_c.9", "x" * 249, "..."):
        assert h.create(name).error_code == Error.NONE, name


def test_names_differing_only_by_dot_and_underscore_collide() -> None:
    h = Harness()
    h.brokers(1)
    h.create("audit.log.v1")
    result = h.create("audit_log.v1")
    assert result.error_code == Error.INVALID_TOPIC_EXCEPTION and "collides" in result.error_message
    many = ".".join("x" * 14)  # more separators than variants worth trying: checked by a scan
    assert h.create(many).error_code == Error.NONE
    assert h.create(many.replace(".", "_")).error_code == Error.INVALID_TOPIC_EXCEPTION


def test_an_existing_topic_or_a_repeated_name_is_refused() -> None:
    h = Harness()
    h.brokers(1)
    h.create("t")
    assert h.create("t").error_code == Error.TOPIC_ALREADY_EXISTS
    request = cpb.CreateTopicsRequest(topics=[cpb.CreateTopicsRequest.CreatableTopic(name="u", num_partitions=1,
                                                                                     replication_factor=1)] * 2)
    response = h.apply(h.controller.handle_create_topics(request))
    assert [r.error_code for r in response.topics] == [Error.INVALID_REQUEST] * 2
    assert "u" not in h.image.topic_ids


@pytest.mark.parametrize(("partitions", "rf", "expected"), [
    (0, 1, Error.INVALID_PARTITIONS),
    (-5, 1, Error.INVALID_PARTITIONS),
    (10**7, 1, Error.INVALID_PARTITIONS),
    (1, 0, Error.INVALID_REPLICATION_FACTOR),
    (1, -3, Error.INVALID_REPLICATION_FACTOR),
    (1, 4, Error.INVALID_REPLICATION_FACTOR),
])
def test_bad_counts(partitions: int, rf: int, expected: Error) -> None:
    h = Harness()
    h.brokers(3)
    assert h.create("t", partitions=partitions, rf=rf).error_code == expected


def test_the_replication_factor_counts_only_usable_brokers() -> None:
    h = Harness()
    h.brokers(3)
    h.heartbeat(2, want_fence=True)
    result = h.create("t", rf=3)
    assert result.error_code == Error.INVALID_REPLICATION_FACTOR and "2 usable" in result.error_message
    assert h.create("t", rf=2).error_code == Error.NONE
    assert 2 not in h.state("t").replicas


def test_invalid_configs_name_the_key() -> None:
    h = Harness()
    h.brokers(1)
    result = h.create("t", configs={"retention.ms": "soon"})
    assert result.error_code == Error.INVALID_CONFIG and result.error_message.startswith("retention.ms")
    result = h.create("t", configs={"no.such.thing": "1"})
    assert result.error_code == Error.INVALID_CONFIG and "no.such.thing" in result.error_message
    assert not h.image.topics


def test_validate_only_writes_nothing() -> None:
    h = Harness()
    h.brokers(2)
    result = h.create("t", partitions=2, rf=2, validate_only=True)
    assert result.error_code == Error.NONE and result.num_partitions == 2
    assert not h.last.records and not h.image.topics  # type: ignore[union-attr]


def test_an_explicit_assignment_puts_live_replicas_in_the_isr() -> None:
    h = Harness()
    h.brokers(3)
    h.heartbeat(0, want_fence=True)
    result = h.create("t", assignments=[[0, 1], [2, 0]])
    assert result.error_code == Error.NONE and (result.num_partitions, result.replication_factor) == (2, 2)
    assert (h.state("t", 0).replicas, h.state("t", 0).isr, h.state("t", 0).leader) == ((0, 1), (1,), 1)
    assert (h.state("t", 1).replicas, h.state("t", 1).isr, h.state("t", 1).leader) == ((2, 0), (2,), 2)


def test_bad_explicit_assignments() -> None:
    h = Harness()
    h.brokers(3)
    h.heartbeat(0, want_fence=True)
    assert h.create("t", assignments=[[0, 9]]).error_code == Error.INVALID_REPLICA_ASSIGNMENT
    assert h.create("t", assignments=[[0, 1], [2]]).error_code == Error.INVALID_REPLICA_ASSIGNMENT
    only_fenced = h.create("t", assignments=[[0]])
    assert only_fenced.error_code == Error.INVALID_REPLICA_ASSIGNMENT and "fenced" in only_fenced.error_message
    topic = cpb.CreateTopicsRequest.CreatableTopic(name="t", num_partitions=1, replication_factor=-1)
    topic.assignments.add(partition_index=0, broker_ids=[1])
    response = h.apply(h.controller.handle_create_topics(cpb.CreateTopicsRequest(topics=[topic])))
    assert response.topics[0].error_code == Error.INVALID_REQUEST
    assert not h.image.topics


def test_several_topics_in_one_request_succeed_or_fail_each_on_its_own() -> None:
    h = Harness()
    h.brokers(2)
    request = cpb.CreateTopicsRequest(topics=[
        cpb.CreateTopicsRequest.CreatableTopic(name=name, num_partitions=p, replication_factor=1)
        for name, p in (("a", 2), ("bad name", 1), ("b", 0), ("c", 1))])
    response = h.apply(h.controller.handle_create_topics(request))
    assert [r.error_code for r in response.topics] == [
        Error.NONE, Error.INVALID_TOPIC_EXCEPTION, Error.INVALID_PARTITIONS, Error.NONE]
    assert sorted(h.image.topic_ids) == ["a", "c"]
    assert h.image.topic_ids["a"] != h.image.topic_ids["c"]


# --- DeleteTopics -------------------------------------------------------------------------------

def test_delete_topics() -> None:
    h = Harness()
    h.brokers(1)
    h.create("t", configs={"retention.ms": "5"})
    topic_id = h.topic_id("t")
    response = h.apply(h.controller.handle_delete_topics(cpb.DeleteTopicsRequest(names=["t", "nope"])))
    assert [(r.name, r.error_code) for r in response.topics] == [
        ("t", Error.NONE), ("nope", Error.UNKNOWN_TOPIC_OR_PARTITION)]
    assert h.last.records[0].remove_topic.topic_id == topic_id  # type: ignore[union-attr]
    assert not h.image.topics and h.image.topic_config("t") == {}
    assert h.create("t").error_code == Error.NONE and h.topic_id("t") != topic_id
    twice = h.apply(h.controller.handle_delete_topics(cpb.DeleteTopicsRequest(names=["t", "t"])))
    assert [r.error_code for r in twice.topics] == [Error.INVALID_REQUEST] * 2 and "t" in h.image.topic_ids


# --- CreatePartitions -----------------------------------------------------------------------------

def create_partitions(h: Harness, name: str, count: int, assignments: list[tuple[int, list[int]]] = ()
                      ) -> cpb.CreatePartitionsResponse.Result:  # type: ignore[assignment]
    topic = cpb.CreatePartitionsRequest.Topic(name=name, count=count)
    for p, brokers in assignments:
        topic.assignments.add(partition_index=p, broker_ids=brokers)
    response = h.apply(h.controller.handle_create_partitions(cpb.CreatePartitionsRequest(topics=[topic])))
    return response.topics[0]


def test_partitions_are_added_with_the_topics_replication_factor() -> None:
    h = Harness()
    h.brokers(4)
    h.create("t", partitions=2, rf=3)
    assert create_partitions(h, "t", 6).error_code == Error.NONE
    topic = h.image.topic("t")
    assert topic is not None and sorted(topic.partitions) == list(range(6))
    assert all(len(s.replicas) == 3 for s in topic.partitions.values())
    leaders = Counter(s.leader for s in topic.partitions.values())
    assert max(leaders.values()) <= 2


def test_bad_partition_counts_and_unknown_topics() -> None:
    h = Harness()
    h.brokers(2)
    h.create("t", partitions=3)
    assert create_partitions(h, "t", 2).error_code == Error.INVALID_PARTITIONS
    assert create_partitions(h, "t", 3).error_code == Error.INVALID_PARTITIONS
    assert create_partitions(h, "nope", 5).error_code == Error.UNKNOWN_TOPIC_OR_PARTITION


def test_explicit_assignments_for_new_partitions() -> None:
    h = Harness()
    h.brokers(3)
    h.create("t", partitions=1, rf=2)
    assert create_partitions(h, "t", 2, [(0, [0, 1])]).error_code == Error.INVALID_REPLICA_ASSIGNMENT
    assert create_partitions(h, "t", 2, [(1, [0])]).error_code == Error.INVALID_REPLICA_ASSIGNMENT
    assert create_partitions(h, "t", 3, [(1, [2, 0])]).error_code == Error.INVALID_REPLICA_ASSIGNMENT
    assert create_partitions(h, "t", 3, [(1, [2, 0]), (2, [1, 2])]).error_code == Error.NONE
    assert h.state("t", 1).replicas == (2, 0) and h.state("t", 2).replicas == (1, 2)


# --- producer ids -----------------------------------------------------------------------------

def test_producer_ids_come_in_blocks_of_a_thousand() -> None:
    h = Harness()
    h.brokers(2)
    starts = []
    for b in (0, 1, 0):
        request = cpb.AllocateProducerIdsRequest(broker_id=b, broker_epoch=h.epochs[b])
        response = h.apply(h.controller.handle_allocate_producer_ids(request))
        assert response.error_code == Error.NONE and response.producer_id_len == PRODUCER_ID_BLOCK_SIZE == 1000
        starts.append(response.producer_id_start)
    assert starts == [0, 1000, 2000] and h.image.next_producer_id == 3000
    stale = cpb.AllocateProducerIdsRequest(broker_id=0, broker_epoch=h.epochs[0] + 1)
    assert h.apply(h.controller.handle_allocate_producer_ids(stale)).error_code == Error.STALE_BROKER_EPOCH
    unknown = cpb.AllocateProducerIdsRequest(broker_id=5, broker_epoch=0)
    assert h.apply(h.controller.handle_allocate_producer_ids(unknown)).error_code == Error.BROKER_ID_NOT_REGISTERED


# --- the rest ---------------------------------------------------------------------------------

def test_a_standby_answers_not_controller_with_the_active_ones_id() -> None:
    response = error_response(cpb.CreateTopicsResponse, Error.NOT_CONTROLLER, controller_id=2)
    assert (response.error_code, response.controller_id) == (41, 2)
    response = error_response(cpb.BrokerRegistrationResponse, Error.NOT_CONTROLLER, -1, "no leader yet")
    assert (response.error_code, response.controller_id, response.error_message) == (41, -1, "no leader yet")


def test_the_same_seed_and_requests_give_the_same_records() -> None:
    def run(seed: int) -> list[bytes]:
        h = Harness(seed=seed)
        h.brokers(4, racks="xy")
        h.create("a", partitions=5, rf=3)
        h.create("b", partitions=2, rf=2)
        h.now = 9500
        h.heartbeat_all(except_=[1])
        h.tick(9000 + 9001)
        return [r.SerializeToString(deterministic=True) for r in _log(h)]

    assert run(7) == run(7)
    assert run(7) != run(8)  # topic ids come from the injected generator


def _log(h: Harness) -> list[mpb.MetadataRecord]:
    return list(h.image.to_records())
