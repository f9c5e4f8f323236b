"""The group coordinator of one __consumer_offsets partition as a pure state
machine: requests (with the time and the broker's topics as inputs) come in,
responses and the records to append come out. No sockets, clocks or files.

Time comes in on both of the node's clocks (partition_log/clock.py):
`now_ms` on the monotonic clock for every deadline (sessions, revocations,
classic join and sync phases; `next_deadline` is on that clock too), and
`wall_ms` on the wall clock for what is written (offset commit timestamps,
a classic group's state timestamp). So a wall clock that jumps neither
expires a member nor keeps an expired one. The deadlines live in memory
only: a coordinator that loads the log gives every member a full session
from its own now (arm_timers), as Kafka's does.

Every change is made by replaying a record (GroupsState.replay), so the
records returned are exactly what rebuilds this state from the log.

Consumer group protocol (KIP-848):
- The group epoch is bumped when a member joins or leaves, changes its
  subscription or assignor, or a subscribed topic changes its partition
  count; the target assignment is recomputed at once by the assignor the
  most members asked for (uniform by default).
- Each member moves towards its target on its own heartbeats
  (reconcile.next_assignment): revocations first, new partitions once
  released. Members whose target did not change only see a new epoch.
- Members are removed when they leave (epoch -1, or -2 for a static member),
  when their session expires (no heartbeat for group.consumer.session.timeout.ms)
  or when a revocation takes longer than their rebalance timeout.

Classic groups (JoinGroup, SyncGroup, Heartbeat, LeaveGroup; classic.py has
the protocol): the same group-id namespace and committed offsets. A classic
group's answers may come out of another request or a timer: each waiting
request is the shell's token, and take_answers() gives the answers made.
Mixing the two kinds follows group.consumer.migration.policy (Kafka 4's
online migration, migration.py and mixed.py): with "upgrade" or
"bidirectional" a ConsumerGroupHeartbeat join converts a classic group of
consumers into a consumer group whose classic members stay, and a
classic JoinGroup joins a consumer group as a classic member; with
"downgrade" or "bidirectional" a consumer group whose last
ConsumerGroupHeartbeat member left becomes a classic group again. Where the
policy (or the group's state) does not allow it: a classic JoinGroup
against a consumer group with members is GROUP_ID_NOT_FOUND ("not a
classic group"), a ConsumerGroupHeartbeat against a classic group with
members (or not joining) is GROUP_ID_NOT_FOUND ("not a consumer group").
An empty group of either kind becomes the other kind when a member of that
kind joins (an empty classic group's record is tombstoned first, as Kafka
does).

Offsets: committed only for partitions that exist (UNKNOWN_TOPIC_OR_PARTITION
otherwise, as Kafka's broker answers), and removed from every group when
their topic is deleted (delete_offsets, driven by the shell).

Transactional offsets (TxnOffsetCommit): written as records of the producer's
transactional batch, pending until its marker (complete_txn; state.py has
the order rules). OffsetFetch with require_stable answers
UNSTABLE_OFFSET_COMMIT for a partition with pending ones. Deleting a group
or a topic tombstones pending offsets too, as Kafka's OffsetMetadataManager
does: pending offsets never block a deletion.
"""
from __future__ import annotations

import re
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Collection, Iterable, Mapping, Optional

from kraftlog_api import groups_pb2 as gpb
from kafka_protocol.batch import MAX_PRODUCER_EPOCH

from ..errors import Error
from .assignors import ASSIGNORS, DEFAULT_ASSIGNOR
from .classic import Answer, ClassicConfig, ClassicGroup, ClassicRules, GroupError, Now, Token
from .migration import (DEFAULT_MIGRATION_POLICY, downgrade_candidates, downgrades, member_metadata, to_classic,
                        upgrade_plan, upgrades)
from .mixed import MixedMembers
from .reconcile import next_assignment
from kafka_protocol.consumer_protocol import encode_assignment

from .records import (Assignment, CurrentMemberAssignment, GroupMetadata, Key, MemberMetadata, MemberState,
                      OffsetCommit, PartitionMetadata, Record, RecordType, TargetAssignmentMember,
                      TargetAssignmentMetadata, Value)
from .state import NO_PRODUCER_ID, ConsumerGroup, GroupsState, Member

LEAVE_EPOCHS = (-1, -2)  # -2: a static member leaving for now (handled as a leave)
ADMIN_EPOCH = -1
UNKNOWN_GENERATION = -1  # TxnOffsetCommit's generation_id when the producer is not a group member
Topics = Mapping[str, int]  # topics and their partition counts (subscriptions see the non-internal ones)


@dataclass(frozen=True)
class GroupConfig:
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 5000
    offset_metadata_max_bytes: int = 4096
    classic: ClassicConfig = ClassicConfig()
    migration_policy: str = DEFAULT_MIGRATION_POLICY  # group.consumer.migration.policy


__all__ = ["GroupConfig", "GroupError", "GroupMachine", "Topics"]


def _partitions(assignment: Iterable[tuple[str, int]]) -> list[gpb.TopicPartitions]:
    by_topic: dict[str, list[int]] = {}
    for topic, index in assignment:
        by_topic.setdefault(topic, []).append(index)
    return [gpb.TopicPartitions(topic=t, partitions=sorted(p)) for t, p in sorted(by_topic.items())]


def _assignment(topics: Iterable[gpb.TopicPartitions]) -> Assignment:
    return frozenset((t.topic, p) for t in topics for p in t.partitions)


def _new_member_id() -> str:
    return uuid.uuid4().hex


class GroupMachine(MixedMembers):
    def __init__(self, config: GroupConfig = GroupConfig(), new_member_id: Callable[[], str] = _new_member_id) -> None:
        self.config = config
        self.new_member_id = new_member_id
        self.state = GroupsState()
        self.classic = ClassicRules(config.classic, new_member_id)
        self._records: list[Record] = []
        self._txn_records: list[Record] = []

    # -- records ---------------------------------------------------------------------------------
    def replay(self, record: Record, producer_id: int = NO_PRODUCER_ID) -> None:
        """Loading: a record of the log (`producer_id` for a transactional batch's)."""
        self.state.replay(record, producer_id)

    def complete_txn(self, producer_id: int, committed: bool) -> None:
        """A COMMIT/ABORT marker of `producer_id`, live or read when loading."""
        self.state.complete_txn(producer_id, committed)

    def _emit(self, key: Key, value: Optional[Value], producer_id: int = NO_PRODUCER_ID) -> None:
        self.state.replay((key, value), producer_id)
        (self._records if producer_id == NO_PRODUCER_ID else self._txn_records).append((key, value))

    def _take(self) -> list[Record]:
        assert not self._txn_records, "transactional records are taken with txn_offset_commit's answer"
        records, self._records = self._records, []
        return records

    def _snapshot(self, group: ConsumerGroup) -> None:
        """A classic group's record: the live group is what it says (not replayed)."""
        assert group.classic is not None
        self.state.skip()
        self._records.append((Key(RecordType.CLASSIC_GROUP, group.group_id), group.classic.record()))

    def take_answers(self) -> list[Answer]:
        """The classic requests answered since last asked: (token, answer)."""
        return self.classic.take_answers()

    # -- timers ----------------------------------------------------------------------------------
    def arm_timers(self, now_ms: int) -> None:
        """After loading: every member gets a full session (and revocation)
        timeout from now (monotonic: no wall timestamp of the log is used)."""
        for group in self.state.groups.values():
            for member in group.members.values():
                member.session_deadline_ms = now_ms + self._session_timeout(member)
                if member.current.state == MemberState.UNREVOKED_PARTITIONS:
                    member.revocation_deadline_ms = now_ms + self._rebalance_timeout(member)
            if group.classic is not None:
                for classic in group.classic.members.values():
                    classic.session_deadline_ms = now_ms + classic.session_timeout_ms

    def next_deadline(self) -> Optional[int]:
        """The earliest deadline, on the monotonic clock `now_ms` is read from."""
        deadlines = [d for g in self.state.groups.values() for m in g.members.values()
                     for d in (m.session_deadline_ms, m.revocation_deadline_ms) if d is not None]
        deadlines += [d for g in self.state.groups.values() if g.classic is not None for d in g.classic.deadlines()]
        return min(deadlines, default=None)

    def expire(self, now_ms: int, topics: Topics, *, wall_ms: int) -> list[Record]:
        """Remove every member whose session expired or whose revocation took
        longer than its rebalance timeout; end classic join and sync phases
        whose time is up (their answers: take_answers)."""
        now = Now(now_ms, wall_ms)
        for group in list(self.state.groups.values()):
            expired = [m.member_id for m in group.members.values()
                       if any(d is not None and d <= now_ms for d in (m.session_deadline_ms, m.revocation_deadline_ms))]
            for member_id in sorted(expired):
                if member_id in group.members:  # (a downgrade may have made the rest classic group members)
                    self._remove_member(group, member_id, topics, now)
            if group.classic is not None and self.classic.expire(group.classic, now):
                self._snapshot(group)
        return self._take()

    # -- the classic protocol --------------------------------------------------------------------
    def join_group(self, req: gpb.JoinGroupRequest, token: Token, now_ms: int, client_id: str = "",
                   client_host: str = "", topics: Topics = {}, *, wall_ms: int) -> list[Record]:
        """A JoinGroup: its answer (now or later) comes out of take_answers
        under `token`. `topics` as for heartbeat (a classic member of a
        consumer group gets its assignment from the group's assignor)."""
        group: Optional[ConsumerGroup] = None
        try:
            _check_group_id(req.group_id)
            self.classic.check_join(req)
            group = self.state.groups.get(req.group_id)
            if group is not None and group.classic is None and group.members:
                if not upgrades(self.config.migration_policy):
                    raise GroupError(Error.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a classic group.")
                self._mixed_join(group, req, token, now_ms, client_id, client_host, topics)
                return self._take()
            if group is None and req.member_id:
                raise GroupError(Error.UNKNOWN_MEMBER_ID, f"Classic group {req.group_id} not found.")
            if group is None:
                group = self.state.groups[req.group_id] = ConsumerGroup(req.group_id)
            if group.classic is None:
                group.classic = ClassicGroup(req.group_id)  # an empty consumer group becomes a classic one
            write = self.classic.join(group.classic, req, token, Now(now_ms, wall_ms), client_id, client_host)
        except GroupError as exc:
            self.classic.answers.append((token, gpb.JoinGroupResponse(
                error_code=exc.code, error_message=exc.message, member_id=req.member_id, generation_id=-1)))
            write = False
        if write:
            assert group is not None
            self._snapshot(group)
        return self._take()

    def sync_group(self, req: gpb.SyncGroupRequest, token: Token, now_ms: int, *, wall_ms: int) -> list[Record]:
        """A SyncGroup: answered under `token`, the followers' once the leader's came."""
        try:
            group = self._classic_group(req.group_id)
            if group.classic is None:
                self._mixed_sync(group, req, token, now_ms)
                return self._take()
            write = self.classic.sync(group.classic, req, token, Now(now_ms, wall_ms))
        except GroupError as exc:
            self.classic.answers.append((token, gpb.SyncGroupResponse(error_code=exc.code)))
            write = False
        if write:
            self._snapshot(group)
        return self._take()

    def heartbeat_classic(self, req: gpb.HeartbeatRequest, now_ms: int) -> gpb.HeartbeatResponse:
        try:
            group = self._classic_group(req.group_id)
            if group.classic is None:
                return gpb.HeartbeatResponse(error_code=self._mixed_heartbeat(group, req, now_ms))
            return gpb.HeartbeatResponse(error_code=self.classic.heartbeat(group.classic, req, now_ms))
        except GroupError as exc:
            return gpb.HeartbeatResponse(error_code=exc.code)

    def leave_group(self, req: gpb.LeaveGroupRequest, now_ms: int, topics: Topics = {}, *,
                    wall_ms: int) -> tuple[gpb.LeaveGroupResponse, list[Record]]:
        response = gpb.LeaveGroupResponse()
        now = Now(now_ms, wall_ms)
        try:
            group = self._classic_group(req.group_id)
        except GroupError as exc:
            response.error_code = exc.code
            return response, []
        if group.classic is None:
            self._mixed_leave(group, req, now, topics, response)
            return response, self._take()
        if self.classic.leave(group.classic, req, now, response):
            self._snapshot(group)
        return response, self._take()

    def _classic_group(self, group_id: str) -> ConsumerGroup:
        """Kafka 4's lookup for SyncGroup, Heartbeat and LeaveGroup: a group
        that is not there (or a consumer group without members: none is a
        classic member) does not know the member. A consumer group with
        members is returned: its classic members are served (mixed.py)."""
        _check_group_id(group_id)
        group = self.state.groups.get(group_id)
        if group is None or (group.classic is None and not group.members):
            raise GroupError(Error.UNKNOWN_MEMBER_ID, f"Classic group {group_id} not found.")
        return group

    def describe_groups(self, group_id: str) -> gpb.DescribeGroupsResponse.Group:
        """DescribeGroups, the classic describe: as Kafka 4 below v6, a group
        that is not classic is Dead (an empty one made by commits is Empty)."""
        out = gpb.DescribeGroupsResponse.Group(group_id=group_id)
        try:
            _check_group_id(group_id)
        except GroupError as exc:
            out.error_code = exc.code
            return out
        group = self.state.groups.get(group_id)
        if group is not None and group.classic is not None:
            self.classic.describe(group.classic, out)
        else:
            out.group_state = "Empty" if group is not None and group.is_empty else "Dead"
        return out

    # -- ConsumerGroupHeartbeat ------------------------------------------------------------------
    def heartbeat(self, request: gpb.ConsumerGroupHeartbeatRequest, now_ms: int, topics: Topics,
                  client_id: str = "", client_host: str = "", *,
                  wall_ms: int) -> tuple[gpb.ConsumerGroupHeartbeatResponse, list[Record]]:
        try:
            response = self._heartbeat(request, Now(now_ms, wall_ms), topics, client_id, client_host)
        except GroupError as exc:
            assert not self._records, "a refused heartbeat changes nothing"
            response = gpb.ConsumerGroupHeartbeatResponse(error_code=exc.code, error_message=exc.message)
        return response, self._take()

    def _heartbeat(self, req: gpb.ConsumerGroupHeartbeatRequest, now: Now, topics: Topics,
                   client_id: str, client_host: str) -> gpb.ConsumerGroupHeartbeatResponse:
        _check_group_id(req.group_id)
        if req.HasField("server_assignor") and req.server_assignor and req.server_assignor not in ASSIGNORS:
            raise GroupError(Error.UNSUPPORTED_ASSIGNOR,
                             f"{req.server_assignor!r}: the assignors are {', '.join(ASSIGNORS)}")
        if req.HasField("subscribed_topic_regex") and req.subscribed_topic_regex:
            try:
                re.compile(req.subscribed_topic_regex)
            except re.error as exc:
                raise GroupError(Error.INVALID_REQUEST, f"subscribed_topic_regex: {exc}") from None
        group = self.state.groups.get(req.group_id)
        if group is not None and group.classic is not None and (req.member_epoch != 0 or group.classic.members):
            if req.member_epoch != 0 or not self._upgrade(group, req, now.ms):
                raise GroupError(Error.GROUP_ID_NOT_FOUND, f"Group {req.group_id} is not a consumer group")
        if req.member_epoch in LEAVE_EPOCHS:
            if group is None or _consumer_member(group, req.member_id) is None:
                raise GroupError(Error.UNKNOWN_MEMBER_ID, f"{req.member_id!r} is not a member of {req.group_id!r}")
            self._remove_member(group, req.member_id, topics, now)
            return gpb.ConsumerGroupHeartbeatResponse(member_id=req.member_id, member_epoch=req.member_epoch)
        if req.member_epoch == 0:
            group, member = self._join(req, group)
        else:
            member = self._existing_member(req, group)
            assert group is not None
        before = member.current
        metadata = _member_metadata(req, member.metadata, client_id, client_host)
        bump = member.metadata is None or _assignment_inputs(metadata) != _assignment_inputs(member.metadata)
        if metadata != member.metadata:
            self._emit(Key(RecordType.MEMBER_METADATA, group.group_id, member.member_id), metadata)
        self._maybe_bump(group, topics, bump)
        member.session_deadline_ms = now.ms + self.config.session_timeout_ms
        owned = _assignment(req.owned_partitions.topic_partitions) if req.HasField("owned_partitions") else None
        after = next_assignment(member.member_id, before, group.assignment_epoch, member.target, owned,
                                group.owners.get)
        if after != member.current:
            self._emit(Key(RecordType.CURRENT_MEMBER_ASSIGNMENT, group.group_id, member.member_id), after)
        if after.state != MemberState.UNREVOKED_PARTITIONS:
            member.revocation_deadline_ms = None
        elif before.state != MemberState.UNREVOKED_PARTITIONS or member.revocation_deadline_ms is None:
            member.revocation_deadline_ms = now.ms + self._rebalance_timeout(member)
        response = gpb.ConsumerGroupHeartbeatResponse(member_id=member.member_id, member_epoch=after.member_epoch,
                                                      heartbeat_interval_ms=self.config.heartbeat_interval_ms)
        if (after.assigned != before.assigned or req.member_epoch != after.member_epoch
                or (owned is not None and owned != after.assigned)):
            response.assignment.topic_partitions.extend(_partitions(after.assigned))
        return response

    def _join(self, req: gpb.ConsumerGroupHeartbeatRequest,
              group: Optional[ConsumerGroup]) -> tuple[ConsumerGroup, Member]:
        _check_join(req)
        member_id = req.member_id or self.new_member_id()
        if group is not None and member_id in group.members and _consumer_member(group, member_id) is None:
            raise GroupError(Error.UNKNOWN_MEMBER_ID, f"{member_id!r} is a classic member of {req.group_id!r}")
        if group is not None and req.instance_id:
            for other in group.members.values():
                if other.member_id != member_id and other.metadata and other.metadata.instance_id == req.instance_id:
                    raise GroupError(Error.UNRELEASED_INSTANCE_ID,
                                     f"instance {req.instance_id!r} is member {other.member_id} of {req.group_id!r}")
        if group is not None and group.classic is not None:
            # An empty classic group gives way to the consumer group, as Kafka's does (its offsets stay).
            self._emit(Key(RecordType.CLASSIC_GROUP, group.group_id), None)
        if group is None:
            self._emit(Key(RecordType.GROUP_METADATA, req.group_id), GroupMetadata(0))
            group = self.state.groups[req.group_id]
        elif member_id in group.members:
            # A member rejoining (it was fenced) starts from nothing: it gave up all it held.
            self._member_tombstones(group, member_id)
        return group, group.members.setdefault(member_id, Member(member_id))

    def _existing_member(self, req: gpb.ConsumerGroupHeartbeatRequest, group: Optional[ConsumerGroup]) -> Member:
        member = _consumer_member(group, req.member_id) if group is not None else None
        if member is None:
            raise GroupError(Error.UNKNOWN_MEMBER_ID, f"{req.member_id!r} is not a member of {req.group_id!r}")
        current = member.current
        if req.member_epoch == current.member_epoch:
            return member
        # The answer that gave the member its current epoch may have been
        # lost: its previous epoch is fine if it holds nothing it should not.
        if (req.member_epoch == current.previous_member_epoch and req.HasField("owned_partitions")
                and _assignment(req.owned_partitions.topic_partitions) <= current.assigned):
            return member
        raise GroupError(Error.FENCED_MEMBER_EPOCH,
                         f"epoch {req.member_epoch}, the member's epoch is {current.member_epoch}: rejoin")

    def _upgrade(self, group: ConsumerGroup, req: gpb.ConsumerGroupHeartbeatRequest, now_ms: int) -> bool:
        """A consumer-protocol member joining a classic group with members:
        convert it (migration.py) if the policy and the group allow; the
        join itself then goes on as into any consumer group."""
        classic = group.classic
        assert classic is not None
        plan = upgrade_plan(classic) if upgrades(self.config.migration_policy) else None
        if (plan is None or req.member_id in classic.members
                or (req.instance_id and classic.static_member(req.instance_id) is not None)):
            return False
        _check_join(req)  # nothing is written for a join refused anyway
        self.classic.abandon(classic, Error.REBALANCE_IN_PROGRESS)
        self._emit(Key(RecordType.CLASSIC_GROUP, group.group_id), None)
        self._emit(Key(RecordType.GROUP_METADATA, group.group_id), GroupMetadata(classic.generation))
        for member_id, member in classic.members.items():
            subscription, assigned = plan[member_id]
            self._emit(Key(RecordType.MEMBER_METADATA, group.group_id, member_id),
                       member_metadata(member, subscription))
            self._emit(Key(RecordType.TARGET_ASSIGNMENT_MEMBER, group.group_id, member_id),
                       TargetAssignmentMember(assigned))
            self._emit(Key(RecordType.CURRENT_MEMBER_ASSIGNMENT, group.group_id, member_id),
                       CurrentMemberAssignment(classic.generation, classic.generation - 1, MemberState.STABLE,
                                               assigned, frozenset()))
            group.members[member_id].session_deadline_ms = (
                member.session_deadline_ms or now_ms + member.session_timeout_ms)
        self._emit(Key(RecordType.TARGET_ASSIGNMENT_METADATA, group.group_id),
                   TargetAssignmentMetadata(classic.generation))
        return True

    def _downgrade(self, group: ConsumerGroup, now: Now) -> bool:
        """The last consumer-protocol member left a group of classic
        members: a classic group again (members keep their assignment), then
        a rebalance, as Kafka's convertToClassicGroup. False when the
        members share no protocol (it stays a consumer group)."""
        classic = to_classic(group, now.wall_ms, encode_assignment)
        if classic is None:
            return False
        for member_id in sorted(group.members):
            self._member_tombstones(group, member_id)
        for kind in (RecordType.TARGET_ASSIGNMENT_METADATA, RecordType.PARTITION_METADATA):
            self._emit(Key(kind, group.group_id), None)
        group.classic = classic
        self._snapshot(group)
        if self.classic.rebalance(classic, now):
            self._snapshot(group)
        return True

    def _session_timeout(self, member: Member) -> int:
        meta = member.metadata
        return meta.classic.session_timeout_ms if meta is not None and meta.classic is not None \
            else self.config.session_timeout_ms

    def _rebalance_timeout(self, member: Member) -> int:
        timeout = member.metadata.rebalance_timeout_ms if member.metadata else -1
        return timeout if timeout > 0 else self.config.session_timeout_ms

    # -- membership changes ----------------------------------------------------------------------
    def _member_tombstones(self, group: ConsumerGroup, member_id: str) -> None:
        for kind in (RecordType.CURRENT_MEMBER_ASSIGNMENT, RecordType.TARGET_ASSIGNMENT_MEMBER,
                     RecordType.MEMBER_METADATA):
            self._emit(Key(kind, group.group_id, member_id), None)

    def _remove_member(self, group: ConsumerGroup, member_id: str, topics: Topics, now: Now) -> None:
        consumer = _consumer_member(group, member_id) is not None
        self._member_tombstones(group, member_id)
        if (consumer and downgrades(self.config.migration_policy)
                and downgrade_candidates(group, self.config.classic.max_size)):
            if self._downgrade(group, now):
                return  # no new epoch: the classic generation is the epoch the members reconciled to
        self._maybe_bump(group, topics, True)

    def _maybe_bump(self, group: ConsumerGroup, topics: Topics, bump: bool) -> None:
        """A new group epoch and target assignment when membership,
        subscriptions or the subscribed topics' partition counts changed."""
        subscribed: set[str] = set()
        resolved: dict[str, frozenset[str]] = {}
        for member in group.members.values():
            resolved[member.member_id] = _resolve(member.metadata, topics)
            subscribed |= resolved[member.member_id]
        subscription = tuple(sorted((t, topics[t]) for t in subscribed))
        if not bump and subscription == group.subscription:
            return
        epoch = group.epoch + 1
        if subscription != group.subscription:
            self._emit(Key(RecordType.PARTITION_METADATA, group.group_id), PartitionMetadata(epoch, subscription))
        self._emit(Key(RecordType.GROUP_METADATA, group.group_id), GroupMetadata(epoch))
        assignor = ASSIGNORS[_group_assignor(group)]
        target = assignor(resolved, dict(subscription), {m.member_id: m.target for m in group.members.values()})
        for member_id in sorted(target):
            if target[member_id] != group.members[member_id].target:
                self._emit(Key(RecordType.TARGET_ASSIGNMENT_MEMBER, group.group_id, member_id),
                           TargetAssignmentMember(target[member_id]))
        self._emit(Key(RecordType.TARGET_ASSIGNMENT_METADATA, group.group_id), TargetAssignmentMetadata(epoch))

    # -- offsets ---------------------------------------------------------------------------------
    def commit(self, req: gpb.OffsetCommitRequest, wall_ms: int,
               existing: Topics) -> tuple[gpb.OffsetCommitResponse, list[Record]]:
        """`wall_ms`: the wall clock's time, the offsets' commit timestamp
        (a calendar fact, no deadline). `existing`: every topic of the
        cluster (internal ones too) and its partition count. An offset for a
        partition that does not exist is refused with
        UNKNOWN_TOPIC_OR_PARTITION, as Kafka's broker does: so a commit
        racing a topic's deletion cannot bring its offsets back."""
        response = gpb.OffsetCommitResponse()
        try:
            _check_group_id(req.group_id)
            group = self._committing_group(req)
        except GroupError as exc:
            response.error_code = exc.code
            _refuse_all(req.topics, response.topics, exc.code)
            return response, []
        self._commit_offsets(req.group_id, group, req.topics, response.topics, wall_ms, existing, NO_PRODUCER_ID)
        return response, self._take()

    def _commit_offsets(self, group_id: str, group: Optional[ConsumerGroup], topics, answers, wall_ms: int,
                        existing: Topics, producer_id: int) -> None:
        """OffsetCommit's and TxnOffsetCommit's per-partition part: `topics`
        the request's, `answers` the response's (their fields are alike)."""
        for topic in topics:
            out = answers.add(name=topic.name)
            for p in topic.partitions:
                code = Error.NONE
                if len(p.committed_metadata.encode()) > self.config.offset_metadata_max_bytes:
                    code = Error.OFFSET_METADATA_TOO_LARGE
                elif not 0 <= p.partition_index < existing.get(topic.name, 0):
                    code = Error.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    if group is None:  # an admin's or a lone producer's commit makes the group (empty)
                        self._emit(Key(RecordType.GROUP_METADATA, group_id), GroupMetadata(0))
                        group = self.state.groups[group_id]
                    self._emit(Key(RecordType.OFFSET_COMMIT, group_id, topic=topic.name, partition=p.partition_index),
                               OffsetCommit(p.committed_offset, p.committed_leader_epoch, p.committed_metadata,
                                            wall_ms), producer_id)
                out.partitions.add(partition_index=p.partition_index, error_code=code)

    def _committing_group(self, req: gpb.OffsetCommitRequest) -> Optional[ConsumerGroup]:
        group = self.state.groups.get(req.group_id)
        admin = req.member_epoch == ADMIN_EPOCH and not req.member_id
        if group is not None and group.classic is not None:
            self.classic.check_commit(group.classic, req.member_id, req.group_instance_id or None, req.member_epoch,
                                      transactional=False)
            return group
        if group is None:
            if admin:
                return None
            raise GroupError(Error.GROUP_ID_NOT_FOUND, f"group {req.group_id!r} does not exist")
        if admin and not group.members:
            return group
        _check_member_epoch(group, req.member_id, req.member_epoch, classic_generation=True)
        return group

    def txn_offset_commit(self, req: gpb.TxnOffsetCommitRequest, wall_ms: int, existing: Topics,
                          ) -> tuple[gpb.TxnOffsetCommitResponse, list[Record], list[Record]]:
        """Kafka's TxnOffsetCommit: the answer, the plain records to append
        first (a new group's), then the records of the producer's
        transactional batch (its offsets, pending until its marker).
        `wall_ms` and `existing` as for commit."""
        response = gpb.TxnOffsetCommitResponse()
        try:
            _check_group_id(req.group_id)
            if not req.transactional_id:
                raise GroupError(Error.INVALID_REQUEST, "the transactional id is empty")
            if req.producer_id < 0 or not 0 <= req.producer_epoch <= MAX_PRODUCER_EPOCH:
                raise GroupError(Error.INVALID_REQUEST,
                                 f"producer {req.producer_id} epoch {req.producer_epoch}: not a transactional producer")
            group = self._txn_committing_group(req)
        except GroupError as exc:
            _refuse_all(req.topics, response.topics, exc.code)
            return response, [], []
        self._commit_offsets(req.group_id, group, req.topics, response.topics, wall_ms, existing, req.producer_id)
        txn_records, self._txn_records = self._txn_records, []
        return response, self._take(), txn_records

    def _txn_committing_group(self, req: gpb.TxnOffsetCommitRequest) -> Optional[ConsumerGroup]:
        """Kafka's validateTransactionalOffsetCommit: member id, generation
        and instance id are checked only when one of them is given; the
        generation is the member epoch, an older one answering
        ILLEGAL_GENERATION (Kafka maps STALE_MEMBER_EPOCH so)."""
        group = self.state.groups.get(req.group_id)
        if group is not None and group.classic is not None:
            self.classic.check_commit(group.classic, req.member_id, req.group_instance_id or None, req.generation_id,
                                      transactional=True)
            return group
        if group is None:
            if req.generation_id >= 0:
                raise GroupError(Error.ILLEGAL_GENERATION, f"group {req.group_id!r} does not exist")
            return None
        if req.generation_id < 0 and not group.members:
            return group
        if req.generation_id == UNKNOWN_GENERATION and not req.member_id and not req.group_instance_id:
            return group
        try:
            _check_member_epoch(group, req.member_id, req.generation_id)
        except GroupError as exc:
            if exc.code == Error.STALE_MEMBER_EPOCH:
                raise GroupError(Error.ILLEGAL_GENERATION, exc.message) from None
            raise
        return group

    def fetch(self, req: gpb.OffsetFetchRequest) -> gpb.OffsetFetchResponse:
        response = gpb.OffsetFetchResponse()
        try:
            _check_group_id(req.group_id)
            group = self.state.groups.get(req.group_id)
            if req.member_id and req.member_epoch >= 0 and (group is None or group.classic is None):
                if group is None:
                    raise GroupError(Error.UNKNOWN_MEMBER_ID, f"group {req.group_id!r} has no members")
                _check_member_epoch(group, req.member_id, req.member_epoch)
        except GroupError as exc:
            response.error_code = exc.code
            return response
        offsets = group.offsets if group is not None else {}
        wanted = ([(t.topic, list(t.partitions)) for t in req.topics] if req.topics else
                  [(t, [p for (tt, p) in sorted(offsets) if tt == t]) for t in sorted({t for t, _ in offsets})])
        for topic, indexes in wanted:
            out = response.topics.add(name=topic)
            for index in indexes:
                found = offsets.get((topic, index))
                if req.require_stable and self.state.has_pending(req.group_id, (topic, index)):
                    out.partitions.add(partition_index=index, committed_offset=-1, committed_leader_epoch=-1,
                                       error_code=Error.UNSTABLE_OFFSET_COMMIT)
                elif found is None:
                    out.partitions.add(partition_index=index, committed_offset=-1, committed_leader_epoch=-1)
                else:
                    out.partitions.add(partition_index=index, committed_offset=found.offset,
                                       committed_leader_epoch=found.leader_epoch, metadata=found.metadata)
        return response

    # -- deleted topics --------------------------------------------------------------------------
    def offset_topics(self) -> set[str]:
        """The topics some group has committed (or pending transactional) offsets for."""
        return ({topic for group in self.state.groups.values() for topic, _ in group.offsets}
                | {topic for offsets in self.state.pending.values() for by_partition in offsets.values()
                   for topic, _ in by_partition})

    def delete_offsets(self, topics: Collection[str]) -> list[Record]:
        """Tombstones for every group's committed offsets of these (deleted)
        topics, as Kafka's coordinator writes when a topic is deleted: a topic
        created again under the same name starts with nothing committed.
        The groups themselves stay (their members' assignments follow the
        topics on their next heartbeat)."""
        for group_id, group in sorted(self.state.groups.items()):
            for topic, index in sorted(tp for tp in self._offset_partitions(group) if tp[0] in topics):
                self._emit(Key(RecordType.OFFSET_COMMIT, group_id, topic=topic, partition=index), None)
        return self._take()

    def _offset_partitions(self, group: ConsumerGroup) -> set[tuple[str, int]]:
        """Partitions with a committed or a pending transactional offset: a
        tombstone for each removes both (one tombstone, as Kafka writes)."""
        return set(group.offsets) | self.state.pending_partitions(group.group_id)

    # -- administration --------------------------------------------------------------------------
    def delete(self, group_ids: Iterable[str]) -> tuple[gpb.DeleteGroupsResponse, list[Record]]:
        response = gpb.DeleteGroupsResponse()
        for group_id in group_ids:
            group = self.state.groups.get(group_id)
            code = Error.NONE
            if group is None:
                code = Error.GROUP_ID_NOT_FOUND
            elif not group.is_empty:
                code = Error.NON_EMPTY_GROUP
            else:
                for topic, index in sorted(self._offset_partitions(group)):
                    self._emit(Key(RecordType.OFFSET_COMMIT, group_id, topic=topic, partition=index), None)
                for kind in ((RecordType.CLASSIC_GROUP,) if group.classic is not None else ()) + (
                        RecordType.TARGET_ASSIGNMENT_METADATA, RecordType.PARTITION_METADATA,
                        RecordType.GROUP_METADATA):
                    self._emit(Key(kind, group_id), None)
            response.results.add(group_id=group_id, error_code=code)
        return response, self._take()

    def list_groups(self, states: Iterable[str], coordinator_id: int) -> list[gpb.ListGroupsResponse.Group]:
        wanted = {s.lower() for s in states}
        return [gpb.ListGroupsResponse.Group(group_id=g.group_id, group_state=g.state, group_type=g.type,
                                             coordinator_id=coordinator_id, protocol_type=_protocol_type(g))
                for _, g in sorted(self.state.groups.items()) if not wanted or g.state.lower() in wanted]

    def describe(self, group_id: str) -> gpb.ConsumerGroupDescribeResponse.Group:
        group = self.state.groups.get(group_id)
        if group is None:
            return gpb.ConsumerGroupDescribeResponse.Group(
                group_id=group_id, error_code=Error.GROUP_ID_NOT_FOUND,
                error_message=f"group {group_id!r} does not exist")
        if group.classic is not None:
            return gpb.ConsumerGroupDescribeResponse.Group(
                group_id=group_id, error_code=Error.GROUP_ID_NOT_FOUND,
                error_message=f"Group {group_id} is not a consumer group.")
        out = gpb.ConsumerGroupDescribeResponse.Group(
            group_id=group_id, group_state=group.state, group_epoch=group.epoch,
            assignment_epoch=group.assignment_epoch, assignor_name=_group_assignor(group))
        for member_id, member in sorted(group.members.items()):
            meta = member.metadata
            out.members.add(
                member_id=member_id, member_epoch=member.current.member_epoch,
                instance_id=meta.instance_id or "" if meta else "", rack_id=meta.rack_id or "" if meta else "",
                client_id=meta.client_id if meta else "", client_host=meta.client_host if meta else "",
                subscribed_topic_names=list(meta.subscribed_topic_names) if meta else [],
                subscribed_topic_regex=meta.subscribed_topic_regex or "" if meta else "",
                assignment=_partitions(member.current.assigned | member.current.pending_revocation),
                target_assignment=_partitions(member.target), classic=meta is not None and meta.classic is not None)
        return out


def _protocol_type(group: ConsumerGroup) -> str:
    """ListGroups' protocol type: a consumer group's is "consumer", a classic group's its members'."""
    if group.classic is None:
        return "consumer"
    return group.classic.protocol_type or ""


def _refuse_all(topics, answers, code: int) -> None:
    for topic in topics:
        out = answers.add(name=topic.name)
        for p in topic.partitions:
            out.partitions.add(partition_index=p.partition_index, error_code=code)


def _check_group_id(group_id: str) -> None:
    if not group_id:
        raise GroupError(Error.INVALID_GROUP_ID, "the group id is empty")


def _check_member_epoch(group: ConsumerGroup, member_id: str, epoch: int, classic_generation: bool = False) -> None:
    """`classic_generation`: a classic member's epoch is its generation, and
    a wrong one ILLEGAL_GENERATION, as Kafka answers classic members."""
    member = group.members.get(member_id)
    if member is None:
        raise GroupError(Error.UNKNOWN_MEMBER_ID, f"{member_id!r} is not a member of {group.group_id!r}")
    current = member.current.member_epoch
    if classic_generation and epoch != current and member.metadata is not None and member.metadata.classic:
        raise GroupError(Error.ILLEGAL_GENERATION, f"generation {epoch}, the member's epoch is {current}")
    if epoch > current:
        raise GroupError(Error.FENCED_MEMBER_EPOCH, f"epoch {epoch} is newer than the member's {current}")
    if epoch < current:
        raise GroupError(Error.STALE_MEMBER_EPOCH, f"epoch {epoch} is older than the member's {current}")


def _check_join(req: gpb.ConsumerGroupHeartbeatRequest) -> None:
    if not req.HasField("subscribed_topic_names") and not req.subscribed_topic_regex:
        raise GroupError(Error.INVALID_REQUEST, "a joining member names its subscription (topics or a regex)")
    if req.rebalance_timeout_ms <= 0:
        raise GroupError(Error.INVALID_REQUEST, "a joining member gives its rebalance_timeout_ms")


def _consumer_member(group: ConsumerGroup, member_id: str) -> Optional[Member]:
    """A consumer-protocol (ConsumerGroupHeartbeat) member: a classic one is unknown to that protocol."""
    member = group.members.get(member_id)
    return member if member is not None and (member.metadata is None or member.metadata.classic is None) else None


def _member_metadata(req: gpb.ConsumerGroupHeartbeatRequest, old: Optional[MemberMetadata], client_id: str,
                     client_host: str) -> MemberMetadata:
    """The member's metadata after this heartbeat: what it sent, else what it had."""
    def sent(field: str, value: Optional[str], previous: Optional[str]) -> Optional[str]:
        return (value or None) if req.HasField(field) else previous

    return MemberMetadata(
        instance_id=(req.instance_id or None) if old is None else old.instance_id,
        rack_id=req.rack_id or (old.rack_id if old else None),
        client_id=client_id if old is None else old.client_id,
        client_host=client_host if old is None else old.client_host,
        subscribed_topic_names=(tuple(sorted(set(req.subscribed_topic_names.names)))
                                if req.HasField("subscribed_topic_names") or old is None
                                else old.subscribed_topic_names),
        subscribed_topic_regex=sent("subscribed_topic_regex", req.subscribed_topic_regex,
                                    old.subscribed_topic_regex if old else None),
        rebalance_timeout_ms=req.rebalance_timeout_ms if req.rebalance_timeout_ms > 0 or old is None
        else old.rebalance_timeout_ms,
        server_assignor=sent("server_assignor", req.server_assignor, old.server_assignor if old else None))


def _assignment_inputs(meta: MemberMetadata) -> tuple:
    return meta.subscribed_topic_names, meta.subscribed_topic_regex, meta.server_assignor


def _resolve(meta: Optional[MemberMetadata], topics: Topics) -> frozenset[str]:
    if meta is None:
        return frozenset()
    names = {t for t in meta.subscribed_topic_names if t in topics}
    if meta.subscribed_topic_regex:
        pattern = re.compile(meta.subscribed_topic_regex)
        names.update(t for t in topics if pattern.fullmatch(t))
    return frozenset(names)


def _group_assignor(group: ConsumerGroup) -> str:
    """The assignor most members asked for; the default on a tie or when none asked."""
    votes = Counter(m.metadata.server_assignor for m in group.members.values()
                    if m.metadata is not None and m.metadata.server_assignor)
    if not votes:
        return DEFAULT_ASSIGNOR
    best = max(votes.values())
    chosen = [name for name, count in votes.items() if count == best]
    return DEFAULT_ASSIGNOR if DEFAULT_ASSIGNOR in chosen or len(chosen) > 1 else chosen[0]
