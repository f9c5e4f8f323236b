"""KIP-848's online migration in the pure GroupMachine (migration.py,
mixed.py): group.consumer.migration.policy, a Stable classic group
upgraded by a ConsumerGroupHeartbeat join, classic members of a consumer
group served through JoinGroup/SyncGroup/Heartbeat/LeaveGroup with a
server-side assignment, the downgrade when the last consumer-protocol
member leaves, and replaying the records (through their bytes) rebuilding
the same group. Member ids come from a counter: every run is the same."""
from __future__ import annotations

import dataclasses
from typing import Optional

import pytest

from broker.errors import Error
from broker.groups.classic import ClassicState
from broker.groups.machine import GroupConfig, GroupMachine
from broker.groups.records import (ClassicMemberMetadata, Key, MemberMetadata, MemberState, RecordType, decode_record,
                                   encode_record)
from kafka_protocol.consumer_protocol import decode_assignment, encode_assignment, encode_subscription
from kafka_protocol.schema_types import SchemaError, Writer
from kraftlog_api import groups_pb2 as gpb

from .test_classic_machine import CONFIG, DELAY, GROUP, SESSION, Coordinator

TOPICS = {"orders": 4}
ALL = frozenset(("orders", p) for p in range(4))


class Ids:
    """Topic ids for the records' bytes: one per topic name."""

    def id_of(self, name: str) -> Optional[bytes]:
        return name.encode().ljust(16, b"\0")

    def name_of(self, topic_id: bytes) -> Optional[str]:
        return topic_id.rstrip(b"\0").decode()


def sub(owned=(), topics=("orders",), version: int = 1) -> bytes:
    return encode_subscription(topics, owned, version)


class Mixed(Coordinator):
    def classic_join(self, member_id: str = "", owned=(), protocols=None, **kw) -> gpb.JoinGroupResponse:
        """A classic member's JoinGroup, answered at once in a consumer group
        (a new member's after MEMBER_ID_REQUIRED handed it its id)."""
        protocols = protocols or (("range", sub(owned)),)
        answer = self.answers.pop(self.join(member_id=member_id, protocols=protocols, **kw))
        if answer.error_code == Error.MEMBER_ID_REQUIRED:
            assert not member_id and answer.member_id
            answer = self.answers.pop(self.join(member_id=answer.member_id, protocols=protocols, **kw))
        return answer

    def classic_sync(self, member_id: str, generation: int) -> gpb.SyncGroupResponse:
        return self.answers.pop(self.sync(member_id, generation))

    def consumer(self, member_id: str = "", epoch: int = 0, owned=None,
                 assignor: str = "") -> gpb.ConsumerGroupHeartbeatResponse:
        req = gpb.ConsumerGroupHeartbeatRequest(group_id=GROUP, member_id=member_id, member_epoch=epoch)
        if epoch == 0:
            req.rebalance_timeout_ms = 20_000
            req.subscribed_topic_names.names.append("orders")
        if assignor:
            req.server_assignor = assignor
        if owned is not None:
            by_topic: dict[str, list[int]] = {}
            for t, p in owned:
                by_topic.setdefault(t, []).append(p)
            req.owned_partitions.SetInParent()
            req.owned_partitions.topic_partitions.extend(
                gpb.TopicPartitions(topic=t, partitions=sorted(ps)) for t, ps in by_topic.items())
        response, records = self.machine.heartbeat(req, self.now, TOPICS, wall_ms=self.wall)
        self._collect(records)
        return response

    def classic_stable(self) -> tuple[str, str]:
        """A Stable classic group of two consumers: leader orders-0,1, follower orders-2,3."""
        ta, tb = self.new_member(protocols=(("range", sub()),)), self.new_member(protocols=(("range", sub()),))
        self.advance(DELAY)
        self.advance(DELAY)
        a, b = self.answers.pop(ta), self.answers.pop(tb)
        leader, follower = (a, b) if a.member_id == a.leader else (b, a)
        s_follower = self.sync(follower.member_id, 1)
        self.answers.pop(self.sync(leader.member_id, 1, {
            leader.member_id: encode_assignment({("orders", 0), ("orders", 1)}),
            follower.member_id: encode_assignment({("orders", 2), ("orders", 3)})}))
        self.answers.pop(s_follower)
        assert self.group.state == ClassicState.STABLE
        return leader.member_id, follower.member_id

    def g(self):
        return self.machine.state.groups[GROUP]

    def assert_replay_rebuilds(self) -> None:
        """Every record written, through its bytes, into a new machine: the same group."""
        fresh = GroupMachine(self.machine.config)
        for record in self.log:
            fresh.replay(decode_record(*encode_record(record, Ids()), Ids()))
        live, loaded = self.g(), fresh.state.groups[GROUP]
        assert (loaded.epoch, loaded.assignment_epoch, loaded.owners) == (live.epoch, live.assignment_epoch, live.owners)
        assert {m: (x.metadata, x.current, x.target) for m, x in loaded.members.items()} == {
            m: (x.metadata, x.current, x.target) for m, x in live.members.items()}
        assert (loaded.classic is None) == (live.classic is None)
        if live.classic is not None:
            assert loaded.classic.record() == live.classic.record()


def owned_by_all(c: Mixed) -> list[frozenset]:
    return [m.owns for m in c.g().members.values()]


def test_a_consumer_join_upgrades_a_stable_classic_group_and_its_classic_members_reconcile() -> None:
    c = Mixed()
    leader, follower = c.classic_stable()
    joined = c.consumer()
    assert joined.error_code == 0
    group = c.g()
    assert group.classic is None and group.type == "consumer" and len(group.members) == 3
    for member_id, held in ((leader, {("orders", 0), ("orders", 1)}), (follower, {("orders", 2), ("orders", 3)})):
        member = group.members[member_id]
        assert member.metadata.classic == ClassicMemberMetadata(SESSION, (("range", sub()),))
        assert member.current.assigned == held and member.current.member_epoch == 1  # the classic generation
    assert group.epoch == 2 and group.assignment_epoch == 2
    assert joined.member_epoch == 2 and not joined.assignment.topic_partitions  # nothing released yet
    c.assert_replay_rebuilds()
    # The classic member losing a partition hears it on its heartbeat, rejoins, and gives it up.
    losers = [m for m in (leader, follower) if group.members[m].target < group.members[m].current.assigned]
    assert len(losers) == 1
    loser = losers[0]
    keeper = follower if loser == leader else leader
    assert c.heartbeat(loser, 1) == Error.REBALANCE_IN_PROGRESS
    rejoin = c.classic_join(loser, owned=group.members[loser].current.assigned)
    assert rejoin.error_code == 0 and rejoin.generation_id == 1 and rejoin.leader == "" and not rejoin.members
    assert rejoin.protocol_type == "consumer" and rejoin.protocol_name == "range"
    kept = decode_assignment(c.classic_sync(loser, 1).assignment)
    assert kept == group.members[loser].target  # the revoked partition is out of its assignment
    assert c.heartbeat(loser, 1) == Error.NONE  # revoking: it rejoins by itself once done (Kafka's rule)
    done = c.classic_join(loser, owned=kept)
    assert done.generation_id == 2 and c.heartbeat(loser, 2) == Error.NONE
    assert decode_assignment(c.classic_sync(loser, 2).assignment) == kept
    # The consumer-protocol member gets the released partition; the keeper only sees a new epoch.
    got = c.consumer(joined.member_id, joined.member_epoch, owned=())
    mine = frozenset((t.topic, p) for t in got.assignment.topic_partitions for p in t.partitions)
    assert len(mine) == 1 and not mine & kept
    assert c.heartbeat(keeper, 1) == Error.REBALANCE_IN_PROGRESS
    assert c.classic_join(keeper, owned=group.members[keeper].current.assigned).generation_id == 2
    held = owned_by_all(c)
    assert frozenset().union(*held) == ALL and sum(len(h) for h in held) == 4  # disjoint, all of them
    assert group.state == "Stable"
    c.assert_replay_rebuilds()


def test_a_classic_join_enters_a_consumer_group_as_a_classic_member() -> None:
    c = Mixed()
    first = c.consumer()
    assert first.member_epoch == 1 and len(first.assignment.topic_partitions[0].partitions) == 4
    joined = c.classic_join()  # a new member: no id yet
    member_id = joined.member_id
    assert joined.error_code == 0 and member_id == "id2" and joined.generation_id == 2  # handed out first
    assert c.heartbeat(member_id, 2) == Error.NONE  # it waits: nothing of its target is released yet
    described = c.machine.describe(GROUP)
    assert {m.member_id: m.classic for m in described.members} == {first.member_id: False, member_id: True}
    assert decode_assignment(c.classic_sync(member_id, 2).assignment) == frozenset()
    keep = c.consumer(first.member_id, 1, owned=ALL)  # revoke half
    kept = frozenset((t.topic, p) for t in keep.assignment.topic_partitions for p in t.partitions)
    assert len(kept) == 2
    c.consumer(first.member_id, 1, owned=kept)
    assert c.heartbeat(member_id, 2) == Error.REBALANCE_IN_PROGRESS  # released: rejoin to take them
    again = c.classic_join(member_id)
    assigned = decode_assignment(c.classic_sync(member_id, again.generation_id).assignment)
    assert assigned == ALL - kept and c.heartbeat(member_id, again.generation_id) == Error.NONE
    assert c.commit(member_id, again.generation_id) == Error.NONE
    assert c.commit(member_id, again.generation_id + 1) == Error.ILLEGAL_GENERATION  # a classic member's answer
    left = c.leave(member_id)
    assert left.members[0].error_code == 0 and member_id not in c.g().members and c.g().classic is None
    c.assert_replay_rebuilds()


def test_the_last_consumer_member_leaving_downgrades_the_group_and_a_rebalance_follows() -> None:
    c = Mixed()
    leader, follower = c.classic_stable()
    joined = c.consumer()
    before = {m: c.g().members[m].current.assigned for m in (leader, follower)}
    c.consumer(joined.member_id, -1)  # leaves
    classic = c.group
    assert classic is not None and not c.g().members and classic.protocol_type == "consumer"
    assert classic.state == ClassicState.PREPARING_REBALANCE and classic.protocol_name == "range"
    assert {m: decode_assignment(x.assignment) for m, x in classic.members.items()} == before
    assert c.heartbeat(leader, classic.generation) == Error.REBALANCE_IN_PROGRESS
    c.assert_replay_rebuilds()
    ta = c.join(member_id=leader, protocols=(("range", sub()),))
    tb = c.join(member_id=follower, protocols=(("range", sub()),))
    a, b = c.answers.pop(ta), c.answers.pop(tb)  # everyone rejoined: the classic protocol goes on
    assert a.error_code == b.error_code == 0 and a.generation_id == classic.generation
    assert len((a if a.member_id == a.leader else b).members) == 2


def test_the_policy_decides_which_way_groups_may_go() -> None:
    for policy, up, down in (("disabled", False, False), ("upgrade", True, False), ("downgrade", False, True)):
        c = Mixed(dataclasses.replace(CONFIG, migration_policy=policy))
        c.classic_stable()
        refused = c.consumer()
        assert (refused.error_code == 0) == up, policy
        if not up:
            assert refused.error_code == Error.GROUP_ID_NOT_FOUND and c.g().type == "classic"
            continue
        c.consumer(refused.member_id, -1)
        assert (c.g().type == "classic") == down, policy
    c = Mixed(dataclasses.replace(CONFIG, migration_policy="downgrade"))
    c.consumer()
    refused_join = c.classic_join()
    assert refused_join.error_code == Error.GROUP_ID_NOT_FOUND


# -- hostile -----------------------------------------------------------------------------------------
def test_a_conversion_mid_rebalance_answers_the_waiting_requests_and_they_rejoin() -> None:
    c = Mixed()
    leader, follower = c.classic_stable()
    third = c.new_member(protocols=(("range", sub()),))  # a third member: the group rebalances
    assert c.group.state == ClassicState.PREPARING_REBALANCE
    joined = c.consumer()  # Kafka's convertToConsumerGroup: whatever the classic group's state
    waiting = c.answers.pop(third)
    assert joined.error_code == 0 and waiting.error_code == Error.REBALANCE_IN_PROGRESS
    group = c.g()
    assert set(group.members) == {leader, follower, waiting.member_id, joined.member_id}
    assert not group.members[waiting.member_id].current.assigned  # it had nothing yet
    again = c.classic_join(waiting.member_id)
    assert again.error_code == 0 and again.generation_id == group.epoch
    held = owned_by_all(c)
    assert sum(len(h) for h in held) == len(frozenset().union(*held))  # never one partition twice
    c.assert_replay_rebuilds()
    # CompletingRebalance: the follower's SyncGroup waits for the leader's, and is answered so too.
    d = Mixed()
    ta, tb = d.new_member(protocols=(("range", sub()),)), d.new_member(protocols=(("range", sub()),))
    d.advance(DELAY)
    d.advance(DELAY)
    a, b = d.answers.pop(ta), d.answers.pop(tb)
    follower_id = b.member_id if a.member_id == a.leader else a.member_id
    sync = d.sync(follower_id, 1)
    assert d.group.state == ClassicState.COMPLETING_REBALANCE
    assert d.consumer().error_code == 0
    assert d.answers.pop(sync).error_code == Error.REBALANCE_IN_PROGRESS


def test_conversion_needs_consumer_protocol_metadata_and_one_owner_per_partition() -> None:
    garbage = Mixed()
    garbage.stable_pair()  # metadata b"m", assignments b"L"/b"F": not the consumer protocol
    assert garbage.consumer().error_code == Error.GROUP_ID_NOT_FOUND and garbage.g().type == "classic"
    twice = Mixed()
    ta, tb = twice.new_member(protocols=(("range", sub()),)), twice.new_member(protocols=(("range", sub()),))
    twice.advance(DELAY)
    twice.advance(DELAY)
    a, b = twice.answers.pop(ta), twice.answers.pop(tb)
    both = encode_assignment({("orders", 0)})
    twice.sync(a.leader, 1, {a.member_id: both, b.member_id: both})  # one partition to both members
    assert twice.group.state == ClassicState.STABLE
    assert twice.consumer().error_code == Error.GROUP_ID_NOT_FOUND


def test_an_unsupported_assignor_or_a_bad_join_converts_nothing() -> None:
    c = Mixed()
    c.classic_stable()
    written = len(c.log)
    assert c.consumer(assignor="banana").error_code == Error.UNSUPPORTED_ASSIGNOR
    bad = gpb.ConsumerGroupHeartbeatRequest(group_id=GROUP, member_epoch=0)  # no subscription
    response, records = c.machine.heartbeat(bad, c.now, TOPICS, wall_ms=c.wall)
    assert response.error_code == Error.INVALID_REQUEST and not records
    assert len(c.log) == written and c.g().type == "classic"
    leader = c.g().classic.leader
    hijack = c.consumer(member_id=leader)  # a KIP-848 join naming a classic member's id
    assert hijack.error_code == Error.GROUP_ID_NOT_FOUND and len(c.log) == written


def test_hostile_classic_members_of_a_consumer_group() -> None:
    c = Mixed()
    first = c.consumer()
    written = len(c.log)
    garbage = c.classic_join(protocols=(("range", b"\x00\x01garbage"),))
    assert garbage.error_code == Error.INCONSISTENT_GROUP_PROTOCOL and len(c.log) == written
    other_type = c.answers.pop(c.join(protocols=(("range", sub()),), protocol_type="connect"))
    assert other_type.error_code == Error.INCONSISTENT_GROUP_PROTOCOL
    # A protocol name no assignor has: the assignment is the coordinator's anyway, under that name.
    odd = c.classic_join(protocols=(("banana", sub()),))
    assert odd.error_code == 0 and odd.protocol_name == "banana"
    sync = c.classic_sync(odd.member_id, odd.generation_id)
    assert sync.protocol_name == "banana"
    # Each protocol knows only its own members.
    assert c.heartbeat(first.member_id, 1) == Error.UNKNOWN_MEMBER_ID
    hijack = c.consumer(odd.member_id, odd.generation_id)
    assert hijack.error_code == Error.UNKNOWN_MEMBER_ID
    assert c.consumer(odd.member_id).error_code == Error.UNKNOWN_MEMBER_ID  # nor by joining with its id
    # Every classic member must share a protocol: "range" alone is refused next to "banana".
    assert c.classic_join("made-up").error_code == Error.INCONSISTENT_GROUP_PROTOCOL
    # An id the client names joins as a new member (Kafka's: the id need not be the coordinator's).
    named = c.classic_join("made-up", protocols=(("banana", sub()), ("range", sub())))
    assert named.error_code == 0 and "made-up" in c.g().members
    assert c.heartbeat(odd.member_id, odd.generation_id + 5) == Error.ILLEGAL_GENERATION
    assert c.answers.pop(c.sync(odd.member_id, -1)).error_code == Error.ILLEGAL_GENERATION
    # A classic member going silent is removed after its own session timeout.
    c.advance(SESSION + 1)
    assert odd.member_id not in c.g().members


def test_the_classic_member_metadata_record_and_a_corrupt_one() -> None:
    meta = MemberMetadata(None, None, "c", "h", ("orders",), None, 1000, None,
                          ClassicMemberMetadata(6000, (("range", sub()), ("roundrobin", b""))))
    key = Key(RecordType.MEMBER_METADATA, GROUP, "m")
    assert decode_record(*encode_record((key, meta), Ids()), Ids()) == (key, meta)
    plain = dataclasses.replace(meta, classic=None)
    assert decode_record(*encode_record((key, plain), Ids()), Ids()) == (key, plain)
    k, value = encode_record((key, plain), Ids())
    corrupt = value[:-1] + Writer().uvarint(1).uvarint(0).uvarint(3).raw(b"\x00\x00\x17").bytes()
    with pytest.raises(SchemaError):
        decode_record(k, corrupt, Ids())


def test_the_policy_setting_is_kafkas() -> None:
    from broker.config import BrokerConfig
    from kafka_protocol.errors import InvalidConfigError
    assert BrokerConfig().group_consumer_migration_policy == "bidirectional"
    assert BrokerConfig.from_properties({"group.consumer.migration.policy": "Upgrade"}
                                        ).group_consumer_migration_policy == "upgrade"
    with pytest.raises(InvalidConfigError):
        BrokerConfig.from_properties({"group.consumer.migration.policy": "sideways"})
    assert GroupConfig().migration_policy == "bidirectional"


def test_a_downgrade_while_a_classic_member_revokes_keeps_what_it_still_holds() -> None:
    c = Mixed()
    leader, follower = c.classic_stable()
    joined = c.consumer()
    group = c.g()
    loser = next(m for m in (leader, follower) if group.members[m].target < group.members[m].current.assigned)
    c.classic_join(loser, owned=group.members[loser].current.assigned)  # mid-revocation
    assert group.members[loser].current.state == MemberState.UNREVOKED_PARTITIONS
    keep = group.members[loser].current.assigned
    # The consumer-protocol member's session expires (the classic ones keep heartbeating).
    c.now += SESSION // 2
    assert c.heartbeat(leader, group.members[leader].current.member_epoch) in (Error.NONE,
                                                                                Error.REBALANCE_IN_PROGRESS)
    assert c.heartbeat(follower, group.members[follower].current.member_epoch) in (Error.NONE,
                                                                                    Error.REBALANCE_IN_PROGRESS)
    c.advance(SESSION // 2 + 1)
    assert joined.member_id not in c.g().members and c.group is not None  # downgraded
    held = {m: decode_assignment(x.assignment) for m, x in c.group.members.items()}
    assert held[loser] == keep and not held[leader] & held[follower]
    assert c.group.state == ClassicState.PREPARING_REBALANCE
    c.assert_replay_rebuilds()


def test_a_classic_member_that_does_not_rejoin_is_removed_after_its_rebalance_timeout() -> None:
    c = Mixed(dataclasses.replace(CONFIG, migration_policy="upgrade"))  # the silent KIP-848 members expire: no downgrade
    c.consumer()
    member = c.classic_join()
    assert member.generation_id == 2
    c.consumer()  # another consumer-protocol member: epoch 3
    assert c.answers.pop(c.sync(member.member_id, 2)).error_code == Error.REBALANCE_IN_PROGRESS
    for _ in range(2):
        assert c.heartbeat(member.member_id, 2) == Error.REBALANCE_IN_PROGRESS
        c.advance(9_000)  # its session is kept, its rebalance timeout (20 s) is not
    assert member.member_id in c.g().members
    c.advance(2_001)
    assert member.member_id not in c.g().members
    c.assert_replay_rebuilds()


def test_a_static_classic_member_restarting_takes_its_place_and_fences_the_old_id() -> None:
    c = Mixed()
    c.consumer()
    first = c.classic_join(instance="static-1")  # a static member gets its id at once
    assert first.error_code == 0
    held = c.g().members[first.member_id].current
    restarted = c.classic_join(instance="static-1")
    assert restarted.error_code == 0 and restarted.member_id != first.member_id
    group = c.g()
    assert first.member_id not in group.members and group.members[restarted.member_id].current == held
    assert group.epoch == 2  # no rebalance
    assert c.heartbeat(first.member_id, held.member_epoch) == Error.UNKNOWN_MEMBER_ID
    assert c.heartbeat(first.member_id, held.member_epoch, instance="static-1") == Error.FENCED_INSTANCE_ID
    assert c.heartbeat(restarted.member_id, held.member_epoch, instance="static-1") in (
        Error.NONE, Error.REBALANCE_IN_PROGRESS)
    c.assert_replay_rebuilds()
