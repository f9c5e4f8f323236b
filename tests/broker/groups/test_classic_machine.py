"""The classic group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup)
in the pure GroupMachine: deferred join answers, the leader's assignment,
timeouts as inputs, static members, offsets checks, the GroupMetadataValue
record and its reload, and the rules for mixing with KIP-848 groups.
Member ids come from a counter: every run is the same."""
from __future__ import annotations

import dataclasses
import itertools
from typing import Optional

import pytest

from broker.errors import Error
from broker.groups.classic import ClassicConfig, ClassicState
from broker.groups.machine import GroupConfig, GroupMachine
from broker.groups.records import (ClassicGroupRecord, ClassicMemberRecord, Key, RecordType, decode_record,
                                   encode_record)
from kafka_protocol.schema_types import SchemaError, Writer
from kraftlog_api import groups_pb2 as gpb

from .sim import WALL_START

GROUP = "cg"
TOPICS = {"orders": 4}
DELAY = 100
SESSION = 10_000
REBALANCE = 20_000
CONFIG = GroupConfig(session_timeout_ms=SESSION, classic=ClassicConfig(initial_rebalance_delay_ms=DELAY))


class NoIds:
    def id_of(self, name: str) -> Optional[bytes]:
        return None

    def name_of(self, topic_id: bytes) -> Optional[str]:
        return None


class Coordinator:
    """The shell's part, in memory: tokens, answers, the records written, both clocks."""

    def __init__(self, config: GroupConfig = CONFIG) -> None:
        counter = itertools.count(1)
        self.machine = GroupMachine(config, new_member_id=lambda: f"id{next(counter)}")
        self.now = 1_000  # the monotonic clock
        self.skew = 0  # how far the wall clock was jumped
        self.tokens = itertools.count(1)
        self.answers: dict[int, object] = {}
        self.log: list = []

    @property
    def wall(self) -> int:
        return WALL_START + self.now + self.skew

    def _collect(self, records: list) -> None:
        self.log += records
        self.answers.update(self.machine.take_answers())

    def join(self, member_id: str = "", protocols=(("range", b"m"),), instance: Optional[str] = None,
             known: bool = True, group: str = GROUP, protocol_type: str = "consumer",
             session: int = SESSION) -> int:
        req = gpb.JoinGroupRequest(group_id=group, session_timeout_ms=session, rebalance_timeout_ms=REBALANCE,
                                   member_id=member_id, protocol_type=protocol_type, require_known_member_id=known,
                                   protocols=[gpb.ClassicProtocol(name=n, metadata=m) for n, m in protocols])
        if instance is not None:
            req.group_instance_id = instance
        token = next(self.tokens)
        self._collect(self.machine.join_group(req, token, self.now, "client", "host", TOPICS, wall_ms=self.wall))
        return token

    def new_member(self, **kw) -> int:
        """A v4+ join: MEMBER_ID_REQUIRED, then the join with that id (its token)."""
        first = self.answers.pop(self.join(**kw))
        assert first.error_code == Error.MEMBER_ID_REQUIRED and first.member_id
        return self.join(member_id=first.member_id, **kw)

    def sync(self, member_id: str, generation: int, assignments: Optional[dict[str, bytes]] = None,
             instance: Optional[str] = None) -> int:
        req = gpb.SyncGroupRequest(group_id=GROUP, member_id=member_id, generation_id=generation,
                                   assignments=[gpb.SyncGroupRequest.Assignment(member_id=m, assignment=a)
                                                for m, a in (assignments or {}).items()])
        if instance is not None:
            req.group_instance_id = instance
        token = next(self.tokens)
        self._collect(self.machine.sync_group(req, token, self.now, wall_ms=self.wall))
        return token

    def heartbeat(self, member_id: str, generation: int, instance: Optional[str] = None) -> int:
        req = gpb.HeartbeatRequest(group_id=GROUP, member_id=member_id, generation_id=generation)
        if instance is not None:
            req.group_instance_id = instance
        return self.machine.heartbeat_classic(req, self.now).error_code

    def leave(self, *member_ids: str) -> gpb.LeaveGroupResponse:
        response, records = self.machine.leave_group(gpb.LeaveGroupRequest(
            group_id=GROUP, members=[gpb.LeaveGroupRequest.Member(member_id=m) for m in member_ids]), self.now,
            TOPICS, wall_ms=self.wall)
        self._collect(records)
        return response

    def advance(self, ms: int) -> None:
        self.now += ms
        self._collect(self.machine.expire(self.now, TOPICS, wall_ms=self.wall))

    def commit(self, member_id: str, generation: int, offset: int = 5) -> int:
        response, records = self.machine.commit(gpb.OffsetCommitRequest(
            group_id=GROUP, member_id=member_id, member_epoch=generation, topics=[gpb.OffsetCommitRequest.Topic(
                name="orders", partitions=[gpb.OffsetCommitRequest.Partition(partition_index=0,
                                                                             committed_offset=offset)])]),
            self.wall, TOPICS)
        self.log += records
        return response.topics[0].partitions[0].error_code

    @property
    def group(self):
        return self.machine.state.groups[GROUP].classic

    def stable_pair(self) -> tuple[str, str, int]:
        """Two members through their first rebalance: (leader, follower, generation)."""
        ta, tb = self.new_member(), self.new_member()
        assert ta not in self.answers and tb not in self.answers  # the initial delay holds both joins
        self.advance(DELAY)
        assert ta not in self.answers  # members joined during the delay: it runs once more (Kafka's)
        self.advance(DELAY)
        a, b = self.answers.pop(ta), self.answers.pop(tb)
        assert a.error_code == b.error_code == 0 and a.generation_id == b.generation_id == 1
        leader, follower = (a, b) if a.member_id == a.leader else (b, a)
        assert {m.member_id for m in leader.members} == {a.member_id, b.member_id} and not follower.members
        assert leader.protocol_name == "range"
        s_follower = self.sync(follower.member_id, 1)
        assert s_follower not in self.answers  # waits for the leader's assignment
        s_leader = self.sync(leader.member_id, 1, {leader.member_id: b"L", follower.member_id: b"F"})
        assert self.answers.pop(s_leader).assignment == b"L" and self.answers.pop(s_follower).assignment == b"F"
        assert self.group.state == ClassicState.STABLE
        return leader.member_id, follower.member_id, 1


def test_first_rebalance_defers_joins_and_the_leaders_sync_hands_out_assignments() -> None:
    c = Coordinator()
    leader, follower, generation = c.stable_pair()
    assert c.heartbeat(follower, generation) == Error.NONE
    assert c.machine.list_groups((), 1)[0].group_type == "classic"
    assert c.log and c.log[-1][0] == Key(RecordType.CLASSIC_GROUP, GROUP)
    described = c.machine.describe_groups(GROUP)
    assert described.group_state == "Stable" and described.protocol_data == "range"
    assert {m.member_id: m.member_assignment for m in described.members} == {leader: b"L", follower: b"F"}


def test_a_new_member_rebalances_and_answers_wait_for_every_member() -> None:
    c = Coordinator()
    leader, follower, generation = c.stable_pair()
    t_new = c.new_member()
    assert c.group.state == ClassicState.PREPARING_REBALANCE
    assert c.heartbeat(follower, generation) == Error.REBALANCE_IN_PROGRESS
    t_leader = c.join(member_id=leader)
    assert t_new not in c.answers and t_leader not in c.answers  # the follower has not rejoined
    t_follower = c.join(member_id=follower)
    answers = [c.answers.pop(t) for t in (t_new, t_leader, t_follower)]
    assert {a.generation_id for a in answers} == {generation + 1} and all(a.error_code == 0 for a in answers)
    assert answers[1].leader == leader and len(answers[1].members) == 3


def test_a_member_that_does_not_rejoin_in_the_rebalance_timeout_is_removed() -> None:
    c = Coordinator()
    leader, follower, generation = c.stable_pair()
    t_leader = c.join(member_id=leader, protocols=(("range", b"changed"),))  # new metadata: a rebalance
    for _ in range(3):  # the follower's session stays alive, but it does not rejoin
        c.advance(REBALANCE // 4)
        assert c.heartbeat(follower, generation) == Error.REBALANCE_IN_PROGRESS
    c.advance(REBALANCE // 4 - 1)
    assert t_leader not in c.answers
    c.advance(1)
    answer = c.answers.pop(t_leader)
    assert answer.generation_id == generation + 1 and [m.member_id for m in answer.members] == [leader]
    assert c.heartbeat(follower, generation) == Error.UNKNOWN_MEMBER_ID


def test_an_expired_session_removes_the_member_and_rebalances() -> None:
    c = Coordinator()
    leader, follower, generation = c.stable_pair()
    c.advance(SESSION // 2)
    assert c.heartbeat(leader, generation) == Error.NONE
    c.advance(SESSION // 2)  # the follower sent nothing for a whole session
    assert follower not in c.group.members and c.group.state == ClassicState.PREPARING_REBALANCE
    assert c.heartbeat(leader, generation) == Error.REBALANCE_IN_PROGRESS
    t = c.join(member_id=leader)
    assert c.answers.pop(t).generation_id == generation + 1  # alone now: answered at once


def test_stale_and_unknown_members_get_kafkas_errors() -> None:
    c = Coordinator()
    leader, follower, generation = c.stable_pair()
    assert c.heartbeat(follower, generation - 1) == Error.ILLEGAL_GENERATION
    assert c.heartbeat("nobody", generation) == Error.UNKNOWN_MEMBER_ID
    assert c.answers.pop(c.sync(follower, generation + 1)).error_code == Error.ILLEGAL_GENERATION
    assert c.answers.pop(c.join(member_id="nobody")).error_code == Error.UNKNOWN_MEMBER_ID
    assert c.commit(follower, generation) == Error.NONE
    assert c.commit(follower, generation - 1) == Error.ILLEGAL_GENERATION
    assert c.commit("nobody", generation) == Error.UNKNOWN_MEMBER_ID
    assert c.commit("", -1) == Error.UNKNOWN_MEMBER_ID  # a non-empty group takes no anonymous commits


def test_commits_and_syncs_in_the_wrong_state() -> None:
    c = Coordinator()
    leader, follower, generation = c.stable_pair()
    t_leader, t_follower = c.join(member_id=leader, protocols=(("range", b"x"),)), c.join(member_id=follower)
    c.answers.pop(t_leader), c.answers.pop(t_follower)  # CompletingRebalance at generation 2
    assert c.group.state == ClassicState.COMPLETING_REBALANCE
    assert c.commit(follower, generation + 1) == Error.REBALANCE_IN_PROGRESS
    t_sync = c.sync(follower, generation + 1)
    c.new_member()  # a newcomer: the waiting sync is answered REBALANCE_IN_PROGRESS
    assert c.answers.pop(t_sync).error_code == Error.REBALANCE_IN_PROGRESS
    assert c.answers.pop(c.sync(follower, generation + 1)).error_code == Error.REBALANCE_IN_PROGRESS


def test_a_leader_that_never_syncs_loses_its_place() -> None:
    c = Coordinator()
    leader, follower, generation = c.stable_pair()
    t_leader, t_follower = c.join(member_id=leader, protocols=(("range", b"x"),)), c.join(member_id=follower)
    c.answers.pop(t_leader), c.answers.pop(t_follower)
    t_sync = c.sync(follower, generation + 1)
    c.advance(REBALANCE)
    assert leader not in c.group.members and follower in c.group.members
    assert c.answers.pop(t_sync).error_code == Error.REBALANCE_IN_PROGRESS


def test_leaving_rebalances_and_the_last_one_out_empties_the_group() -> None:
    c = Coordinator()
    leader, follower, generation = c.stable_pair()
    answer = c.leave(follower, "nobody")
    assert [m.error_code for m in answer.members] == [Error.NONE, Error.UNKNOWN_MEMBER_ID]
    assert c.group.state == ClassicState.PREPARING_REBALANCE
    c.leave(leader)
    assert c.group.state == ClassicState.EMPTY and c.group.generation == generation + 1
    key, value = c.log[-1]
    assert key.type == RecordType.CLASSIC_GROUP and value.members == () and value.generation == generation + 1
    assert c.commit("", -1) == Error.NONE  # an empty group takes an admin's commit


def test_static_members_are_replaced_and_the_old_id_fenced() -> None:
    c = Coordinator()
    ta, tb = c.join(instance="i-a"), c.join(instance="i-b")  # static members need no known member id
    c.advance(DELAY), c.advance(DELAY)
    a, b = c.answers.pop(ta), c.answers.pop(tb)
    leader, follower = (a, b) if a.member_id == a.leader else (b, a)
    instance = "i-a" if follower is a else "i-b"
    t_sync = c.sync(follower.member_id, 1, instance=instance)
    c.sync(leader.member_id, 1, {follower.member_id: b"F", leader.member_id: b"L"})
    assert c.answers.pop(t_sync).assignment == b"F"
    t = c.join(instance=instance)  # the follower restarted: a new member id for the same instance
    restarted = c.answers.pop(t)
    assert restarted.error_code == 0 and restarted.member_id != follower.member_id
    assert restarted.generation_id == 1 and c.group.state == ClassicState.STABLE  # no rebalance
    assert c.heartbeat(follower.member_id, 1, instance=instance) == Error.FENCED_INSTANCE_ID
    assert c.answers.pop(c.sync(restarted.member_id, 1, instance=instance)).assignment == b"F"


def test_protocol_checks() -> None:
    c = Coordinator()
    assert c.answers.pop(c.join(session=10)).error_code == Error.INVALID_SESSION_TIMEOUT
    assert c.answers.pop(c.join(protocols=())).error_code == Error.INCONSISTENT_GROUP_PROTOCOL
    assert c.answers.pop(c.join(group="")).error_code == Error.INVALID_GROUP_ID
    c.new_member(protocols=(("range", b""), ("roundrobin", b"")))
    assert c.answers.pop(c.join(protocol_type="connect")).error_code == Error.INCONSISTENT_GROUP_PROTOCOL
    assert c.answers.pop(c.join(protocols=(("sticky", b""),))).error_code == Error.INCONSISTENT_GROUP_PROTOCOL
    # roundrobin is the one both support; the second member prefers it but the first prefers range: a tie
    t2 = c.new_member(protocols=(("roundrobin", b""), ("range", b"")))
    c.advance(DELAY), c.advance(DELAY)
    assert c.answers.pop(t2).protocol_name == "range"  # ties go to the leader's preference


def test_the_record_reloads_the_group_with_its_assignments() -> None:
    c = Coordinator()
    leader, follower, generation = c.stable_pair()
    c.commit(leader, generation)
    fresh = GroupMachine(CONFIG)
    for record in c.log:
        key, value = encode_record(record, NoIds())
        fresh.replay(decode_record(key, value, NoIds()))
    fresh.arm_timers(c.now)
    group = fresh.state.groups[GROUP]
    assert group.classic.state == ClassicState.STABLE and group.classic.leader == leader
    assert {m.member_id: m.assignment for m in group.classic.members.values()} == {leader: b"L", follower: b"F"}
    assert group.offsets[("orders", 0)].offset == 5
    assert fresh.heartbeat_classic(gpb.HeartbeatRequest(group_id=GROUP, member_id=follower,
                                                        generation_id=generation), c.now).error_code == 0
    assert fresh.state.position == c.machine.state.position  # snapshots are counted like replayed records


def test_classic_record_versions_decode() -> None:
    member = ClassicMemberRecord("m", "i", "c", "h", 300, 45, b"sub", b"asg")
    record = (Key(RecordType.CLASSIC_GROUP, "g"), ClassicGroupRecord("consumer", 3, "range", "m", 7, (member,)))
    key, value = encode_record(record, NoIds())
    assert value[:2] == b"\x00\x03"
    assert decode_record(key, value, NoIds()) == record
    flexible = (Writer().int16(4).compact_string("consumer").int32(3).compact_string("range").compact_string("m")
                .int64(7).uvarint(2).compact_string("m").compact_string("i").compact_string("c").compact_string("h")
                .int32(300).int32(45).uvarint(4).raw(b"sub").uvarint(4).raw(b"asg").no_tagged_fields()
                .no_tagged_fields().bytes())
    assert decode_record(key, flexible, NoIds()) == record
    with pytest.raises(SchemaError):
        decode_record(key, b"\x00\x09" + value[2:], NoIds())
    with pytest.raises(SchemaError):
        decode_record(key, value[:-3], NoIds())


def _consumer_join(machine: GroupMachine, now: int) -> gpb.ConsumerGroupHeartbeatResponse:
    response, _ = machine.heartbeat(gpb.ConsumerGroupHeartbeatRequest(
        group_id=GROUP, member_epoch=0, rebalance_timeout_ms=1000,
        subscribed_topic_names=gpb.SubscribedTopics(names=["orders"])), now, TOPICS, wall_ms=WALL_START + now)
    return response


def test_mixing_refuses_non_empty_groups_of_the_other_kind_and_converts_empty_ones() -> None:
    c = Coordinator(dataclasses.replace(CONFIG, migration_policy="disabled"))  # migration: test_migration.py
    leader, follower, generation = c.stable_pair()
    c.commit(leader, generation, offset=9)
    refused = _consumer_join(c.machine, c.now)
    assert refused.error_code == Error.GROUP_ID_NOT_FOUND and "not a consumer group" in refused.error_message
    c.leave(leader, follower)
    joined = _consumer_join(c.machine, c.now)  # the empty classic group becomes a consumer group
    assert joined.error_code == 0 and c.machine.state.groups[GROUP].classic is None
    assert c.machine.state.groups[GROUP].offsets[("orders", 0)].offset == 9  # the offsets stay
    refused_join = c.answers.pop(c.join())
    assert refused_join.error_code == Error.GROUP_ID_NOT_FOUND and "not a classic group" in refused_join.error_message
    c.machine.heartbeat(gpb.ConsumerGroupHeartbeatRequest(group_id=GROUP, member_id=joined.member_id,
                                                          member_epoch=-1), c.now, TOPICS, wall_ms=c.wall)
    c.new_member()  # the consumer group is empty again: a classic member may take it over
    assert c.machine.state.groups[GROUP].type == "classic"
    assert c.machine.describe(GROUP).error_code == Error.GROUP_ID_NOT_FOUND


def test_deleting_a_classic_group_needs_it_empty() -> None:
    c = Coordinator()
    leader, follower, generation = c.stable_pair()
    response, _ = c.machine.delete([GROUP])
    assert response.results[0].error_code == Error.NON_EMPTY_GROUP
    c.leave(leader, follower)
    response, records = c.machine.delete([GROUP])
    assert response.results[0].error_code == 0 and GROUP not in c.machine.state.groups
    assert (Key(RecordType.CLASSIC_GROUP, GROUP), None) in records


def test_an_assignment_too_large_to_store_fails_the_syncs_and_rebalances() -> None:
    c = Coordinator()
    limit = c.machine.classic.config.max_record_bytes
    leader, follower, generation = c.stable_pair()
    t_leader, t_follower = c.join(member_id=leader, protocols=(("range", b"x"),)), c.join(member_id=follower)
    c.answers.pop(t_leader), c.answers.pop(t_follower)
    t_sync = c.sync(follower, generation + 1)
    written = len(c.log)
    t_lead = c.sync(leader, generation + 1, {leader: b"L" * limit, follower: b"F"})
    assert c.answers.pop(t_lead).error_code == c.answers.pop(t_sync).error_code == Error.UNKNOWN_SERVER_ERROR
    assert len(c.log) == written and c.group.state == ClassicState.PREPARING_REBALANCE  # nothing written


def test_a_restarted_static_leader_keeps_the_generation_and_skips_the_assignment() -> None:
    c = Coordinator()
    ta, tb = c.join(instance="i-a"), c.join(instance="i-b")
    c.advance(DELAY), c.advance(DELAY)
    a, b = c.answers.pop(ta), c.answers.pop(tb)
    leader = a if a.member_id == a.leader else b
    instance = "i-a" if leader is a else "i-b"
    c.sync(leader.member_id, 1, {a.member_id: b"A", b.member_id: b"B"})
    restarted = c.answers.pop(c.join(instance=instance))
    assert restarted.generation_id == 1 and restarted.skip_assignment and restarted.leader == restarted.member_id
    assert len(restarted.members) == 2 and c.group.state == ClassicState.STABLE
    mine = b"A" if leader is a else b"B"
    assert c.answers.pop(c.sync(restarted.member_id, 1, instance=instance)).assignment == mine
    # A restart with a protocol the other member lacks is refused; the group keeps its place.
    t = c.join(instance=instance, protocols=(("roundrobin", b""),))
    assert c.answers.pop(t).error_code == Error.INCONSISTENT_GROUP_PROTOCOL and c.group.generation == 1


@pytest.mark.parametrize("seed", range(12))
def test_random_members_every_request_answered_once_and_the_record_reloads(seed) -> None:
    """Members doing anything, in any order, with time passing: each request
    gets one answer (now or later), the group's state holds together, and
    once everyone falls silent every held request is answered and the group
    ends empty; the records written reload the group as it was written."""
    import random
    rng = random.Random(seed)
    c = Coordinator()
    issued: list[int] = []
    answered: dict[int, object] = {}
    known: list[str] = []  # member ids handed out

    def collect() -> None:
        for token, answer in list(c.answers.items()):
            assert token not in answered, f"token {token} answered twice"
            answered[token] = answer
            if isinstance(answer, gpb.JoinGroupResponse) and answer.member_id and answer.member_id not in known:
                known.append(answer.member_id)
        c.answers.clear()

    for _ in range(300):
        op = rng.choices(range(5), weights=(30, 25, 15, 5, 25))[0]
        group = c.machine.state.groups.get(GROUP)
        classic = group.classic if group is not None else None
        current = sorted(classic.members) if classic is not None else []
        pick = rng.random()
        member = (rng.choice(current) if current and pick < 0.6 else rng.choice(known) if known and pick < 0.8
                  else "")
        generation = (classic.generation if classic is not None else 0) + rng.choice((0, 0, 0, -1, 1))
        if op == 0:
            issued.append(c.join(member_id=member, known=rng.random() < 0.7,
                                 protocols=rng.choice(((("range", b"a"),), (("range", b"b"), ("rr", b""))))))
        elif op == 1:
            issued.append(c.sync(member, generation, {m: b"x" for m in current if rng.random() < 0.9}))
        elif op == 2:
            c.heartbeat(member, generation)
        elif op == 3:
            c.leave(member or "nobody")
        else:
            c.advance(rng.choice((1, DELAY, DELAY, SESSION // 4, SESSION // 4, REBALANCE)))
        collect()
        group = c.machine.state.groups.get(GROUP)
        if group is not None and group.classic is not None and group.classic.members:
            assert group.classic.leader in group.classic.members
            waiting = [m for m in group.classic.members.values() if m.join_token is not None]
            assert all(m.sync_token is None for m in waiting), "a member waits to join and to sync at once"
    for _ in range(10):
        c.advance(REBALANCE + SESSION)
        collect()
    assert set(answered) == set(issued), "a request never answered"
    group = c.machine.state.groups.get(GROUP)
    assert group is None or group.classic is None or not group.classic.members
    snapshots = [value for key, value in c.log if key.type == RecordType.CLASSIC_GROUP]
    if snapshots:
        fresh = GroupMachine(CONFIG)
        for record in c.log:
            key, value = encode_record(record, NoIds())
            fresh.replay(decode_record(key, value, NoIds()))
        reloaded = fresh.state.groups[GROUP].classic
        assert reloaded is not None and reloaded.record() == snapshots[-1]


# -- two clocks: deadlines on the monotonic one, what is written on the wall one ---------------

HOUR = 3_600_000


@pytest.mark.parametrize("jump", [HOUR, -HOUR])
def test_a_wall_clock_jump_neither_expires_a_member_nor_keeps_an_expired_one(jump: int) -> None:
    c = Coordinator()
    leader, follower, generation = c.stable_pair()
    c.skew = jump  # between two calls the coordinator's wall clock jumps an hour
    c.advance(SESSION // 2)
    assert set(c.group.members) == {leader, follower} and c.group.state == ClassicState.STABLE
    assert c.heartbeat(leader, generation) == Error.NONE
    c.advance(SESSION // 2 - 1)
    assert follower in c.group.members  # a whole session has not passed on the monotonic clock
    c.advance(1)  # now it has, whatever the wall clock says
    assert follower not in c.group.members and c.group.state == ClassicState.PREPARING_REBALANCE


def test_the_group_records_state_timestamp_is_the_wall_clock() -> None:
    c = Coordinator()
    c.skew = HOUR
    leader, follower, generation = c.stable_pair()
    [record] = [v for k, v in c.log if k.type == RecordType.CLASSIC_GROUP]
    assert record.state_timestamp_ms == c.wall  # written when the leader's sync made it Stable
    assert c.group.deadline_ms is None
    assert all(m.session_deadline_ms == c.now + SESSION for m in c.group.members.values())
