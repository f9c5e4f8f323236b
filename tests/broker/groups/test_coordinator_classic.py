"""The group coordinator's shell with classic groups, on a real
__consumer_offsets log: JoinGroup answers held until the join phase ends
(the timer task ends it), SyncGroup answers once the leader's assignment is
written, a coordinator that loads the partition again (a failover) finding
the group as its GroupMetadataValue left it, and waiting requests answered
NOT_COORDINATOR when the shard stops."""
from __future__ import annotations

import asyncio

from broker.config import BrokerConfig
from broker.errors import Error
from broker.groups.coordinator import GroupCoordinator
from kraftlog_api import groups_pb2 as gpb

from .test_coordinator_txn import cluster, loaded  # noqa: F401 - the fixture

GROUP = "classic"
CONFIG = BrokerConfig(offsets_topic_num_partitions=1, offsets_commit_timeout_ms=2000,
                      group_initial_rebalance_delay_ms=200)
WAIT_S = 10.0  # bounds every wait; never part of an assert


def join(member_id: str = "", protocols: bytes = b"m") -> gpb.JoinGroupRequest:
    return gpb.JoinGroupRequest(group_id=GROUP, session_timeout_ms=10000, rebalance_timeout_ms=5000,
                                member_id=member_id, protocol_type="consumer", require_known_member_id=True,
                                protocols=[gpb.ClassicProtocol(name="range", metadata=protocols)])


async def new_member(coordinator: GroupCoordinator) -> str:
    first = await coordinator.join_group(join(), client_id="c")
    assert first.error_code == Error.MEMBER_ID_REQUIRED
    return first.member_id


def classic_coordinator(offsets_cluster) -> GroupCoordinator:
    coordinator = GroupCoordinator(1, offsets_cluster[1], None, CONFIG)
    coordinator.on_replica_changes(offsets_cluster.last_changes[1])
    return coordinator


def test_joins_wait_for_the_group_and_a_failover_reloads_it(cluster) -> None:  # noqa: F811 - the fixture
    async def scenario() -> None:
        coordinator = classic_coordinator(cluster)
        await loaded(coordinator)
        a, b = await new_member(coordinator), await new_member(coordinator)
        ja, jb = await asyncio.wait_for(asyncio.gather(coordinator.join_group(join(a)),
                                                       coordinator.join_group(join(b))), WAIT_S)
        assert ja.generation_id == jb.generation_id == 1 and ja.leader == jb.leader
        leader, follower = (a, b) if ja.leader == a else (b, a)
        assignments = [gpb.SyncGroupRequest.Assignment(member_id=leader, assignment=b"L"),
                       gpb.SyncGroupRequest.Assignment(member_id=follower, assignment=b"F")]
        synced = await asyncio.wait_for(asyncio.gather(
            coordinator.sync_group(gpb.SyncGroupRequest(group_id=GROUP, generation_id=1, member_id=follower)),
            coordinator.sync_group(gpb.SyncGroupRequest(group_id=GROUP, generation_id=1, member_id=leader,
                                                        assignments=assignments))), WAIT_S)
        assert [s.assignment for s in synced] == [b"F", b"L"]

        # A newcomer waits for the two to rejoin; the coordinator stops meanwhile.
        c = await new_member(coordinator)
        waiting = asyncio.ensure_future(coordinator.join_group(join(c)))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        await asyncio.gather(*coordinator.unload(0), return_exceptions=True)
        assert (await asyncio.wait_for(waiting, WAIT_S)).error_code == Error.NOT_COORDINATOR

        # Loaded again from the log: the generation and assignments the record holds.
        coordinator.on_replica_changes(cluster.last_changes[1])
        await loaded(coordinator)
        beat = coordinator.heartbeat_classic(gpb.HeartbeatRequest(group_id=GROUP, generation_id=1, member_id=follower))
        assert beat.error_code == Error.NONE
        again = await coordinator.sync_group(gpb.SyncGroupRequest(group_id=GROUP, generation_id=1, member_id=follower))
        assert again.assignment == b"F"
        described = coordinator.describe_groups(gpb.DescribeGroupsRequest(group_ids=[GROUP])).groups[0]
        assert described.group_state == "Stable" and {m.member_id for m in described.members} == {leader, follower}
        left = await coordinator.leave_group(gpb.LeaveGroupRequest(group_id=GROUP, members=[
            gpb.LeaveGroupRequest.Member(member_id=leader), gpb.LeaveGroupRequest.Member(member_id=follower)]))
        assert [m.error_code for m in left.members] == [Error.NONE, Error.NONE]
        await coordinator.stop()

    asyncio.run(scenario())
