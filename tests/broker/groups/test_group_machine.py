"""The group coordinator's state machine: KIP-848 membership, incremental
assignment, offsets and administration, with time as an input."""
from __future__ import annotations

from broker.errors import Error
from broker.groups.machine import GroupMachine
from broker.groups.records import MemberState
from kraftlog_api import groups_pb2 as gpb

from .sim import CONFIG, GROUP, WALL_START, Sim, owned_proto

TOPICS = {"orders": 6}
ALL = frozenset(("orders", p) for p in range(6))


def test_two_members_converge_to_disjoint_complete_balanced_ownership() -> None:
    sim = Sim(TOPICS)
    a = sim.join("a", ("orders",))
    assert a.told == ALL and a.epoch == 1  # alone, it gets everything at once
    b = sim.join("b", ("orders",))
    assert b.told == frozenset()  # nothing is free yet: a still holds all six
    sim.converge()
    sim.check_no_two_owners()
    assert a.owned | b.owned == ALL and len(a.owned) == len(b.owned) == 3


def test_a_third_member_gets_moved_partitions_only_after_they_are_revoked() -> None:
    sim = Sim(TOPICS)
    a, b = sim.join("a", ("orders",)), sim.join("b", ("orders",))
    sim.converge()
    before = {"a": a.owned, "b": b.owned}
    c = sim.join("c", ("orders",))
    assert c.told == frozenset()  # the two partitions it will get are still owned
    group = sim.group
    moved = group.members[c.member_id].target
    assert len(moved) == 2
    # a heartbeats without having acted yet: told to revoke, epoch unchanged.
    response = sim.heartbeat(a)
    lost_a = before["a"] - a.told
    assert lost_a and lost_a <= moved and a.told <= before["a"]
    assert group.members[a.member_id].current.state == MemberState.UNREVOKED_PARTITIONS
    sim.heartbeat(c)
    assert not (c.told & lost_a)  # a has not let go yet
    sim.process(a)
    sim.heartbeat(a)  # reports owned without them: the revocation is done
    assert response.error_code == 0 and group.members[a.member_id].current.state == MemberState.STABLE
    sim.heartbeat(c)
    assert lost_a <= c.told
    sim.converge()
    sim.check_no_two_owners()
    assert sorted(len(x.owned) for x in (a, b, c)) == [2, 2, 2]
    # Sticky: the old members only lost partitions, never swapped them.
    assert a.owned <= before["a"] and b.owned <= before["b"]
    for client in (a, b):  # every assignment they were sent only shrank
        assert all(after <= told_before or not told_before for told_before, after in client.history[1:])


def test_leaving_and_expiring_members_give_their_partitions_back() -> None:
    sim = Sim(TOPICS)
    a, b, c = (sim.join(n, ("orders",)) for n in "abc")
    sim.converge()
    assert sim.leave("c") == 0
    sim.converge()
    assert a.owned | b.owned == ALL
    epoch = sim.group.epoch
    sim.crash("b")
    sim.expire_all_silent()
    assert b.member_id not in sim.group.members and sim.group.epoch == epoch + 1
    sim.converge()
    assert a.owned == ALL
    assert sim.machine.next_deadline() == sim.group.members[a.member_id].session_deadline_ms


def test_a_member_that_does_not_revoke_in_time_is_removed() -> None:
    sim = Sim(TOPICS)
    a = sim.join("a", ("orders",))
    sim.process(a)
    b = sim.join("b", ("orders",))
    sim.heartbeat(a)  # told to revoke three; never does
    member = sim.group.members[a.member_id]
    assert member.revocation_deadline_ms == sim.now + 30_000
    sim.now += 30_001
    sim.group.members[b.member_id].session_deadline_ms = sim.now + 1
    sim.records += sim.machine.expire(sim.now, sim.topics, wall_ms=sim.wall)
    assert a.member_id not in sim.group.members
    sim.crash("a")
    sim.converge()
    assert b.owned == ALL


def test_stale_and_unknown_members_are_fenced() -> None:
    sim = Sim(TOPICS)
    a = sim.join("a", ("orders",))
    request = gpb.ConsumerGroupHeartbeatRequest(group_id=GROUP, member_id=a.member_id, member_epoch=a.epoch + 5)
    response, records = sim.machine.heartbeat(request, 0, TOPICS, wall_ms=WALL_START)
    assert response.error_code == Error.FENCED_MEMBER_EPOCH and records == []
    request.member_id, request.member_epoch = "nobody", 1
    assert sim.machine.heartbeat(request, 0, TOPICS, wall_ms=WALL_START)[0].error_code == Error.UNKNOWN_MEMBER_ID
    # A lost answer: the previous epoch is accepted while it owns nothing beyond its assignment.
    sim.process(a)
    sim.join("b", ("orders",))
    sim.heartbeat(a)
    sim.process(a)
    previous = a.epoch
    sim.heartbeat(a)
    assert a.epoch > previous
    request = gpb.ConsumerGroupHeartbeatRequest(group_id=GROUP, member_id=a.member_id, member_epoch=previous,
                                                owned_partitions=owned_proto(a.owned))
    response, _ = sim.machine.heartbeat(request, 0, TOPICS, wall_ms=WALL_START)
    assert response.error_code == 0 and response.member_epoch == a.epoch and response.HasField("assignment")
    # A fenced member rejoins with epoch 0 under its id and starts from nothing.
    a.epoch, a.owned = 0, frozenset()
    assert sim.heartbeat(a).error_code == 0 and a.epoch > 0


def test_bad_requests_change_nothing() -> None:
    machine = GroupMachine(CONFIG)
    join = gpb.ConsumerGroupHeartbeatRequest(group_id=GROUP, member_epoch=0, rebalance_timeout_ms=1000)
    # no subscription
    assert machine.heartbeat(join, 0, TOPICS, wall_ms=WALL_START)[0].error_code == Error.INVALID_REQUEST
    join.subscribed_topic_names.names.append("orders")
    join.server_assignor = "roundrobin"
    assert machine.heartbeat(join, 0, TOPICS, wall_ms=WALL_START)[0].error_code == Error.UNSUPPORTED_ASSIGNOR
    join.server_assignor = "range"
    join.subscribed_topic_regex = "orders("
    assert machine.heartbeat(join, 0, TOPICS, wall_ms=WALL_START)[0].error_code == Error.INVALID_REQUEST
    join.ClearField("subscribed_topic_regex")
    join.group_id = ""
    assert machine.heartbeat(join, 0, TOPICS, wall_ms=WALL_START)[0].error_code == Error.INVALID_GROUP_ID
    assert machine.state.groups == {}


def test_static_instance_ids_are_unique() -> None:
    sim = Sim(TOPICS)
    sim.join("a", ("orders",))
    request = gpb.ConsumerGroupHeartbeatRequest(group_id=GROUP, member_epoch=0, rebalance_timeout_ms=1000,
                                                instance_id="i-1", subscribed_topic_names={"names": ["orders"]})
    assert sim.machine.heartbeat(request, 0, TOPICS, wall_ms=WALL_START)[0].error_code == 0
    assert sim.machine.heartbeat(request, 0, TOPICS, wall_ms=WALL_START)[0].error_code == Error.UNRELEASED_INSTANCE_ID


def test_new_partitions_and_regex_subscriptions_bump_the_epoch() -> None:
    sim = Sim({"orders": 2, "payments": 2, "other": 1})
    request = gpb.ConsumerGroupHeartbeatRequest(group_id=GROUP, member_epoch=0, rebalance_timeout_ms=1000,
                                                subscribed_topic_regex="(orders|payments)")
    response, records = sim.machine.heartbeat(request, 0, sim.topics, wall_ms=WALL_START)
    sim.records += records
    got = {(t.topic, p) for t in response.assignment.topic_partitions for p in t.partitions}
    assert got == {("orders", 0), ("orders", 1), ("payments", 0), ("payments", 1)}
    sim.topics["orders"] = 3  # CreatePartitions
    request = gpb.ConsumerGroupHeartbeatRequest(group_id=GROUP, member_id=response.member_id,
                                                member_epoch=response.member_epoch)
    again, records = sim.machine.heartbeat(request, 0, sim.topics, wall_ms=WALL_START)
    sim.records += records
    assert again.member_epoch == response.member_epoch + 1
    assert ("orders", 2) in {(t.topic, p) for t in again.assignment.topic_partitions for p in t.partitions}


def test_range_assignor_gives_consecutive_ranges() -> None:
    sim = Sim({"orders": 5}, assignor="range")
    a, b = sim.join("a", ("orders",)), sim.join("b", ("orders",))
    sim.converge()
    first, second = sorted((a, b), key=lambda c: c.member_id)
    assert first.owned == {("orders", p) for p in range(3)} and second.owned == {("orders", 3), ("orders", 4)}
    assert sim.machine.describe(GROUP).assignor_name == "range"


def test_offsets_are_checked_against_the_member_epoch() -> None:
    sim = Sim(TOPICS)
    a = sim.join("a", ("orders",))

    def commit(member_id, epoch, offset=10, metadata=""):
        request = gpb.OffsetCommitRequest(group_id=GROUP, member_id=member_id, member_epoch=epoch, topics=[
            gpb.OffsetCommitRequest.Topic(name="orders", partitions=[gpb.OffsetCommitRequest.Partition(
                partition_index=0, committed_offset=offset, committed_leader_epoch=3, committed_metadata=metadata)])])
        response, records = sim.machine.commit(request, 5, sim.topics)
        sim.records += records
        return response.topics[0].partitions[0].error_code

    assert commit(a.member_id, a.epoch) == Error.NONE
    assert commit(a.member_id, a.epoch - 1) == Error.STALE_MEMBER_EPOCH
    assert commit(a.member_id, a.epoch + 1) == Error.FENCED_MEMBER_EPOCH
    assert commit("nobody", 1) == Error.UNKNOWN_MEMBER_ID
    assert commit("", -1, 99) == Error.UNKNOWN_MEMBER_ID  # an admin commit while members remain
    assert commit(a.member_id, a.epoch, 11, "x" * 5000) == Error.OFFSET_METADATA_TOO_LARGE
    fetched = sim.machine.fetch(gpb.OffsetFetchRequest(group_id=GROUP, member_epoch=-1))
    assert [(t.name, p.partition_index, p.committed_offset, p.committed_leader_epoch)
            for t in fetched.topics for p in t.partitions] == [("orders", 0, 10, 3)]
    asked = sim.machine.fetch(gpb.OffsetFetchRequest(group_id=GROUP, member_epoch=-1, topics=[
        gpb.TopicPartitions(topic="orders", partitions=[0, 1])]))
    assert [p.committed_offset for p in asked.topics[0].partitions] == [10, -1]
    stale = sim.machine.fetch(gpb.OffsetFetchRequest(group_id=GROUP, member_id=a.member_id, member_epoch=0))
    assert stale.error_code == Error.STALE_MEMBER_EPOCH
    assert sim.leave("a") == 0
    assert commit("", -1, 99) == Error.NONE  # an admin (reset-offsets) commit to an empty group
    assert sim.machine.fetch(gpb.OffsetFetchRequest(group_id=GROUP, member_epoch=-1)).topics[0] \
        .partitions[0].committed_offset == 99


def test_admin_commit_creates_a_group_and_delete_needs_it_empty() -> None:
    sim = Sim(TOPICS)
    request = gpb.OffsetCommitRequest(group_id="fresh", member_epoch=-1, topics=[gpb.OffsetCommitRequest.Topic(
        name="orders", partitions=[gpb.OffsetCommitRequest.Partition(partition_index=1, committed_offset=4)])])
    response, records = sim.machine.commit(request, 0, sim.topics)
    sim.records += records
    assert response.error_code == 0 and "fresh" in sim.machine.state.groups
    request.member_id, request.member_epoch = "m", 3
    assert sim.machine.commit(request, 0, sim.topics)[0].error_code == Error.UNKNOWN_MEMBER_ID
    request.group_id = "unknown"
    assert sim.machine.commit(request, 0, sim.topics)[0].error_code == Error.GROUP_ID_NOT_FOUND
    sim.join("a", ("orders",))
    response, records = sim.machine.delete([GROUP, "fresh", "unknown"])
    sim.records += records
    assert [(r.group_id, r.error_code) for r in response.results] == [
        (GROUP, Error.NON_EMPTY_GROUP), ("fresh", 0), ("unknown", Error.GROUP_ID_NOT_FOUND)]
    assert "fresh" not in sim.machine.state.groups
    assert [g.group_id for g in sim.machine.list_groups([], 1)] == [GROUP]
    assert sim.machine.list_groups(["Empty"], 1) == []
    assert sim.replayed().groups.keys() == sim.machine.state.groups.keys()


def test_describe_and_states() -> None:
    sim = Sim(TOPICS)
    a = sim.join("a", ("orders",))
    sim.process(a)
    sim.join("b", ("orders",))
    assert sim.group.state == "Reconciling"
    sim.converge()
    described = sim.machine.describe(GROUP)
    assert described.group_state == "Stable" and described.group_epoch == 2 and described.assignment_epoch == 2
    assert sorted(sum(len(t.partitions) for t in m.assignment) for m in described.members) == [3, 3]
    assert all(m.subscribed_topic_names == ["orders"] for m in described.members)
    assert sim.machine.describe("nope").error_code == Error.GROUP_ID_NOT_FOUND


def test_the_records_rebuild_the_same_state() -> None:
    sim = Sim({"orders": 6, "payments": 3})
    for name, topics in (("a", ("orders",)), ("b", ("orders", "payments")), ("c", ("payments",))):
        sim.join(name, topics)
        sim.converge()
    assert sim.leave("b") == 0
    sim.converge()
    rebuilt = sim.replayed().groups[GROUP]
    live = sim.group
    assert (rebuilt.epoch, rebuilt.assignment_epoch, rebuilt.subscription, rebuilt.owners) == \
        (live.epoch, live.assignment_epoch, live.subscription, live.owners)
    assert {m: (x.metadata, x.current, x.target) for m, x in rebuilt.members.items()} == \
        {m: (x.metadata, x.current, x.target) for m, x in live.members.items()}


def _commit_request(group_id: str, offsets: dict[tuple[str, int], int], member_id: str = "",
                    epoch: int = -1) -> gpb.OffsetCommitRequest:
    by_topic: dict[str, list[gpb.OffsetCommitRequest.Partition]] = {}
    for (topic, index), offset in sorted(offsets.items()):
        by_topic.setdefault(topic, []).append(gpb.OffsetCommitRequest.Partition(partition_index=index,
                                                                               committed_offset=offset))
    return gpb.OffsetCommitRequest(group_id=group_id, member_id=member_id, member_epoch=epoch, topics=[
        gpb.OffsetCommitRequest.Topic(name=t, partitions=ps) for t, ps in by_topic.items()])


def _codes(response: gpb.OffsetCommitResponse) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def test_a_commit_for_a_partition_that_does_not_exist_is_refused_and_writes_nothing() -> None:
    sim = Sim({"orders": 6, "payments": 3})
    response, records = sim.machine.commit(_commit_request("fresh", {("gone", 0): 5, ("orders", 6): 5,
                                                                     ("orders", -1): 5}), 0, sim.topics)
    assert set(_codes(response).values()) == {Error.UNKNOWN_TOPIC_OR_PARTITION}
    assert records == [] and "fresh" not in sim.machine.state.groups  # no empty group made either
    a = sim.join("a", ("orders",))
    response, records = sim.machine.commit(
        _commit_request(GROUP, {("orders", 0): 7, ("gone", 0): 5}, a.member_id, a.epoch), 0, sim.topics)
    assert _codes(response) == {("orders", 0): Error.NONE, ("gone", 0): Error.UNKNOWN_TOPIC_OR_PARTITION}
    assert [(k.topic, k.partition) for k, _ in records] == [("orders", 0)]


def test_deleting_a_topic_tombstones_its_offsets_in_every_group_and_keeps_the_rest() -> None:
    sim = Sim({"orders": 6, "payments": 3})
    for group_id in ("g1", "g2"):
        _, records = sim.machine.commit(_commit_request(group_id, {("orders", 0): 3, ("orders", 1): 4,
                                                                   ("payments", 2): 9}), 0, sim.topics)
        sim.records += records
    assert sim.machine.offset_topics() == {"orders", "payments"}
    records = sim.machine.delete_offsets({"orders"})
    sim.records += records
    assert sorted((k.group_id, k.topic, k.partition, v) for k, v in records) == [
        ("g1", "orders", 0, None), ("g1", "orders", 1, None), ("g2", "orders", 0, None), ("g2", "orders", 1, None)]
    for group_id in ("g1", "g2"):
        fetched = sim.machine.fetch(gpb.OffsetFetchRequest(group_id=group_id, member_epoch=-1))
        assert [(t.name, p.partition_index, p.committed_offset) for t in fetched.topics for p in t.partitions] == [
            ("payments", 2, 9)]
    assert sim.machine.delete_offsets({"orders", "never-committed"}) == []  # nothing left to remove
    assert {g: x.offsets for g, x in sim.replayed().groups.items()} == \
        {g: x.offsets for g, x in sim.machine.state.groups.items()}  # the tombstones rebuild the same state


# -- two clocks: deadlines on the monotonic one, what is written on the wall one ---------------

HOUR = 3_600_000


def test_a_wall_clock_jump_forward_expires_no_member() -> None:
    sim = Sim(TOPICS)
    a, b = sim.join("a", ("orders",)), sim.join("b", ("orders",))
    sim.converge()
    sim.skew = HOUR  # the coordinator's wall clock jumps an hour ahead between two calls
    sim.now += CONFIG.session_timeout_ms // 2
    sim.records += sim.machine.expire(sim.now, sim.topics, wall_ms=sim.wall)
    assert set(sim.group.members) == {a.member_id, b.member_id}
    assert sim.heartbeat(a).error_code == 0 and sim.heartbeat(b).error_code == 0
    sim.converge()
    assert a.owned | b.owned == ALL


def test_a_wall_clock_jump_back_keeps_no_expired_member() -> None:
    sim = Sim(TOPICS)
    a, b = sim.join("a", ("orders",)), sim.join("b", ("orders",))
    sim.converge()
    sim.crash("b")
    sim.skew = -HOUR  # an hour behind: a wall-clock deadline would hold b for an hour more
    sim.now += CONFIG.session_timeout_ms // 2
    assert sim.heartbeat(a).error_code == 0
    sim.now += CONFIG.session_timeout_ms // 2
    sim.records += sim.machine.expire(sim.now, sim.topics, wall_ms=sim.wall)
    assert b.member_id not in sim.group.members and a.member_id in sim.group.members
    sim.converge()
    assert a.owned == ALL


def test_commit_timestamps_are_the_wall_clock_and_deadlines_the_monotonic_one() -> None:
    sim = Sim(TOPICS)
    a = sim.join("a", ("orders",))
    sim.skew = HOUR
    sim.heartbeat(a)
    assert sim.group.members[a.member_id].session_deadline_ms == sim.now + CONFIG.session_timeout_ms
    assert sim.machine.next_deadline() == sim.now + CONFIG.session_timeout_ms  # nothing of the wall clock in it
    request = gpb.OffsetCommitRequest(group_id=GROUP, member_id=a.member_id, member_epoch=a.epoch, topics=[
        gpb.OffsetCommitRequest.Topic(name="orders", partitions=[
            gpb.OffsetCommitRequest.Partition(partition_index=0, committed_offset=7)])])
    _, records = sim.machine.commit(request, sim.wall, sim.topics)
    [(key, value)] = records
    assert value.offset == 7 and value.commit_timestamp == WALL_START + sim.now + HOUR
