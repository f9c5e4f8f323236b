"""The group coordinator in a real cluster (3 controllers + 3 brokers),
driven with raw GroupCoordinator gRPC calls as a consumer would make them:
FindCoordinator creating __consumer_offsets, KIP-848 membership converging
without two owners of a partition, revocation before assignment, offsets
with epoch checks, expiry after the session timeout, and kill -9 of the
coordinator with the group and its offsets served by the next one."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import grpc
import pytest

from broker.errors import Error
from broker.groups.placement import OFFSETS_TOPIC, partition_for
from devcluster.local_cluster import LocalCluster
from devcluster.local_processes import wait_until
from kraftlog_api import groups_pb2 as gpb
from kraftlog_api import groups_pb2_grpc as gpb_grpc

TOPIC = "events"
PARTITIONS = 6
ALL = frozenset((TOPIC, p) for p in range(PARTITIONS))
PROPERTIES = {
    "broker.session.timeout.ms": 2000, "broker.heartbeat.interval.ms": 500,
    "offsets.topic.num.partitions": 6, "offsets.topic.replication.factor": 3,
    "group.consumer.heartbeat.interval.ms": 500, "group.consumer.session.timeout.ms": 6000,
}
RETRY = (Error.NOT_COORDINATOR, Error.COORDINATOR_LOAD_IN_PROGRESS, Error.COORDINATOR_NOT_AVAILABLE)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("groups"), properties=PROPERTIES).running() as c:
        c.create_topic(TOPIC, PARTITIONS, 3)
        c.wait_for_leaders(TOPIC)
        yield c


def stub(cluster: LocalCluster, broker_id: int) -> gpb_grpc.GroupCoordinatorStub:
    return gpb_grpc.GroupCoordinatorStub(cluster.channel(cluster.broker_addresses[broker_id]))


def find_coordinator(cluster: LocalCluster, group: str, timeout: float = 60.0,
                     not_: Optional[int] = None) -> int:
    """The coordinator's node id, as a live broker names it."""
    def found() -> Optional[int]:
        for b in cluster.live_brokers():
            try:
                answer = stub(cluster, b).FindCoordinator(gpb.FindCoordinatorRequest(keys=[group]), timeout=15)
            except grpc.RpcError:
                continue
            [c] = answer.coordinators
            assert c.error_code in (0, *RETRY), c
            if c.error_code == 0 and c.node_id != not_ and c.node_id in cluster.live_brokers():
                assert f"{c.host}:{c.port}" == cluster.broker_addresses[c.node_id]
                return c.node_id
        return None
    return wait_until(found, timeout, f"a coordinator for {group}", interval=0.2)


def call(cluster: LocalCluster, group: str, method: str, request, timeout: float = 60.0):
    """A request to the group's coordinator, found again while it moves or loads."""
    def answered():
        coordinator = find_coordinator(cluster, group)
        try:
            response = getattr(stub(cluster, coordinator), method)(request, timeout=15)
        except grpc.RpcError:
            return None
        return None if error_of(response) in RETRY else response
    return wait_until(answered, timeout, f"{method} for {group}", interval=0.2)


def error_of(response) -> int:
    """The top-level error, or the first group's (Describe, DeleteGroups answer per group)."""
    for name in ("groups", "results"):
        if name in response.DESCRIPTOR.fields_by_name and not hasattr(response, "error_code"):
            items = getattr(response, name)
            return items[0].error_code if items else 0
    return response.error_code


def owned_proto(owned) -> gpb.OwnedPartitions:
    return gpb.OwnedPartitions(topic_partitions=[gpb.TopicPartitions(
        topic=t, partitions=sorted(p for tt, p in owned if tt == t)) for t in sorted({t for t, _ in owned})])


@dataclass
class Member:
    """A consumer's side of the protocol: it owns what it was told once it has acted on it."""

    cluster: LocalCluster
    group: str
    member_id: str = ""
    epoch: int = 0
    told: frozenset = frozenset()
    owned: frozenset = frozenset()
    revoked_seen: list = field(default_factory=list)

    def beat(self, act: bool = True) -> gpb.ConsumerGroupHeartbeatResponse:
        if act:
            self.owned = self.told
        request = gpb.ConsumerGroupHeartbeatRequest(
            group_id=self.group, member_id=self.member_id, member_epoch=self.epoch, rebalance_timeout_ms=60_000,
            owned_partitions=owned_proto(self.owned))
        if self.epoch == 0:
            request.subscribed_topic_names.names.append(TOPIC)
        response = call(self.cluster, self.group, "ConsumerGroupHeartbeat", request)
        assert response.error_code == 0, response
        self.member_id, self.epoch = response.member_id, response.member_epoch
        if response.HasField("assignment"):
            new = frozenset((t.topic, p) for t in response.assignment.topic_partitions for p in t.partitions)
            self.revoked_seen.append(self.told - new)
            self.told = new
        return response

    def leave(self) -> None:
        request = gpb.ConsumerGroupHeartbeatRequest(group_id=self.group, member_id=self.member_id, member_epoch=-1)
        assert call(self.cluster, self.group, "ConsumerGroupHeartbeat", request).error_code == 0


def no_two_owners(members) -> None:
    seen: dict = {}
    for m in members:
        for tp in m.owned:
            assert tp not in seen, f"{tp} owned by {seen[tp]} and {m.member_id}"
            seen[tp] = m.member_id


def converge(members, timeout: float = 90.0) -> None:
    def stable() -> bool:
        for m in members:
            m.beat()
            no_two_owners(members)
        for m in members:
            m.beat()
            no_two_owners(members)
        return (len({m.epoch for m in members}) == 1 and all(m.owned == m.told for m in members)
                and frozenset().union(*(m.owned for m in members)) == ALL)
    wait_until(stable, timeout, "the group to converge", interval=0.1)


def commit(cluster, group, member_id, epoch, offsets: dict[int, int]) -> gpb.OffsetCommitResponse:
    request = gpb.OffsetCommitRequest(group_id=group, member_id=member_id, member_epoch=epoch, topics=[
        gpb.OffsetCommitRequest.Topic(name=TOPIC, partitions=[gpb.OffsetCommitRequest.Partition(
            partition_index=p, committed_offset=o, committed_leader_epoch=-1, committed_metadata=f"m{o}")
            for p, o in sorted(offsets.items())])])
    return call(cluster, group, "OffsetCommit", request)


def fetched(cluster, group) -> dict[int, int]:
    response = call(cluster, group, "OffsetFetch", gpb.OffsetFetchRequest(group_id=group, member_epoch=-1))
    assert response.error_code == 0
    return {p.partition_index: p.committed_offset for t in response.topics if t.name == TOPIC for p in t.partitions}


def test_find_coordinator_creates_the_offsets_topic(cluster) -> None:
    coordinator = find_coordinator(cluster, "first-group")
    offsets = cluster.wait_for_leaders(OFFSETS_TOPIC)
    assert len(offsets.partitions) == 6
    assert all(len(p.replica_nodes) == 3 for p in offsets.partitions)
    leader = {p.partition_index: p.leader_id for p in offsets.partitions}[partition_for("first-group", 6)]
    assert coordinator == leader
    # Every broker names the same coordinator (once its metadata has the
    # topic); an empty group id is refused.
    for b in cluster.live_brokers():
        def named(b=b):
            answer = stub(cluster, b).FindCoordinator(gpb.FindCoordinatorRequest(keys=["first-group", ""]),
                                                      timeout=15)
            assert answer.coordinators[1].error_code == Error.INVALID_GROUP_ID
            return answer.coordinators[0] if answer.coordinators[0].error_code == 0 else None
        assert wait_until(named, 30, f"broker {b} to name the coordinator").node_id == coordinator
    not_coordinator = next(b for b in cluster.brokers if b != coordinator)
    refused = stub(cluster, not_coordinator).OffsetFetch(gpb.OffsetFetchRequest(group_id="first-group"), timeout=15)
    assert refused.error_code == Error.NOT_COORDINATOR


def test_members_converge_and_moved_partitions_are_revoked_before_they_are_assigned(cluster) -> None:
    a, b = Member(cluster, "converge"), Member(cluster, "converge")
    a.beat()
    assert a.told == ALL
    b.beat()
    converge([a, b])
    assert len(a.owned) == len(b.owned) == 3
    before = {"a": a.owned, "b": b.owned}
    c = Member(cluster, "converge")
    c.beat()
    assert c.told == frozenset()  # everything is still owned by a and b
    a.beat(act=False)  # a hears of the revocation but does not act yet
    lost = before["a"] - a.told
    assert lost and a.told < before["a"]
    for _ in range(3):
        c.beat()
        assert not (c.told & lost), "given to c while a still owns it"
    a.beat()  # a lets go and says so
    converge([a, b, c])
    assert sorted(len(m.owned) for m in (a, b, c)) == [2, 2, 2]
    assert a.owned <= before["a"] and b.owned <= before["b"]  # sticky: old members only gave partitions up
    described = call(cluster, "converge", "ConsumerGroupDescribe",
                     gpb.ConsumerGroupDescribeRequest(group_ids=["converge"]), timeout=60)
    [group] = described.groups
    assert group.group_state == "Stable" and len(group.members) == 3 and group.assignor_name == "uniform"
    for m in (a, b, c):
        m.leave()
    assert call(cluster, "converge", "ConsumerGroupDescribe", gpb.ConsumerGroupDescribeRequest(
        group_ids=["converge"])).groups[0].group_state == "Empty"


def test_offsets_commit_and_fetch_with_member_epoch_checks(cluster) -> None:
    m = Member(cluster, "offsets")
    m.beat()
    answer = commit(cluster, "offsets", m.member_id, m.epoch, {0: 10, 1: 20})
    assert [p.error_code for t in answer.topics for p in t.partitions] == [0, 0]
    assert fetched(cluster, "offsets") == {0: 10, 1: 20}
    stale = commit(cluster, "offsets", m.member_id, m.epoch - 1, {0: 99})
    assert stale.topics[0].partitions[0].error_code == Error.STALE_MEMBER_EPOCH
    unknown = commit(cluster, "offsets", "nobody", 1, {0: 99})
    assert unknown.topics[0].partitions[0].error_code == Error.UNKNOWN_MEMBER_ID
    admin = commit(cluster, "offsets", "", -1, {0: 99})  # reset-offsets while a member is there
    assert admin.topics[0].partitions[0].error_code == Error.UNKNOWN_MEMBER_ID
    assert fetched(cluster, "offsets") == {0: 10, 1: 20}  # nothing refused was written
    deleted = call(cluster, "offsets", "DeleteGroups", gpb.DeleteGroupsRequest(group_ids=["offsets"]))
    assert deleted.results[0].error_code == Error.NON_EMPTY_GROUP
    coordinator = find_coordinator(cluster, "offsets")
    listed = stub(cluster, coordinator).ListGroups(gpb.ListGroupsRequest(), timeout=15)
    assert "offsets" in [g.group_id for g in listed.groups]
    m.leave()
    assert commit(cluster, "offsets", "", -1, {0: 5}).topics[0].partitions[0].error_code == 0
    assert fetched(cluster, "offsets") == {0: 5, 1: 20}
    deleted = call(cluster, "offsets", "DeleteGroups", gpb.DeleteGroupsRequest(group_ids=["offsets"]))
    assert deleted.results[0].error_code == 0
    assert fetched(cluster, "offsets") == {}


def test_a_silent_member_expires_after_the_session_timeout(cluster) -> None:
    quiet, busy = Member(cluster, "expiry"), Member(cluster, "expiry")
    quiet.beat()
    busy.beat()
    converge([quiet, busy])

    def quiet_gone() -> bool:
        busy.beat()  # only busy keeps heartbeating
        described = call(cluster, "expiry", "ConsumerGroupDescribe",
                         gpb.ConsumerGroupDescribeRequest(group_ids=["expiry"]))
        return [x.member_id for x in described.groups[0].members] == [busy.member_id]
    wait_until(quiet_gone, 90, "the silent member to expire", interval=0.3)
    converge([busy])
    assert busy.owned == ALL


def test_kill_9_of_the_coordinator_keeps_the_group_and_its_offsets(cluster) -> None:
    m = Member(cluster, "failover")
    m.beat()
    converge([m])
    assert commit(cluster, "failover", m.member_id, m.epoch, {p: 100 + p for p in range(PARTITIONS)}) \
        .topics[0].partitions[0].error_code == 0
    old = find_coordinator(cluster, "failover")
    cluster.kill(old)
    try:
        new = find_coordinator(cluster, "failover", timeout=90, not_=old)
        assert new != old
        assert fetched(cluster, "failover") == {p: 100 + p for p in range(PARTITIONS)}
        epoch = m.epoch
        m.beat()  # the member is still known, with its epoch and assignment
        assert m.epoch == epoch and m.owned == ALL
        assert commit(cluster, "failover", m.member_id, m.epoch, {0: 500}).topics[0].partitions[0].error_code == 0
        assert fetched(cluster, "failover")[0] == 500
    finally:
        cluster.start(old)
        cluster.wait_for_brokers(timeout=90)
