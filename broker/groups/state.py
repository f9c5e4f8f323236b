"""The coordinator's in-memory state of the groups of one __consumer_offsets
partition, changed only by replaying records: the live path replays the
records it writes, loading replays the log, and both end in the same state.

Timers (session and revocation deadlines) are not records: they are armed
by heartbeats, and for every member when a coordinator loads.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .records import (Assignment, CurrentMemberAssignment, GroupMetadata, Key, MemberMetadata, MemberState,
                      OffsetCommit, PartitionMetadata, Record, RecordType, TargetAssignmentMember,
                      TargetAssignmentMetadata, TopicPartition)

EMPTY: Assignment = frozenset()
NO_ASSIGNMENT = CurrentMemberAssignment(0, 0, MemberState.STABLE, EMPTY, EMPTY)


@dataclass(slots=True)
class Member:
    member_id: str
    metadata: Optional[MemberMetadata] = None
    current: CurrentMemberAssignment = NO_ASSIGNMENT
    target: Assignment = EMPTY
    session_deadline_ms: Optional[int] = None
    revocation_deadline_ms: Optional[int] = None

    @property
    def owns(self) -> Assignment:
        return self.current.assigned | self.current.pending_revocation


@dataclass(slots=True)
class ConsumerGroup:
    group_id: str
    epoch: int = 0
    subscription: tuple[tuple[str, int], ...] = ()  # the subscribed topics' partition counts at `epoch`
    assignment_epoch: int = 0
    members: dict[str, Member] = field(default_factory=dict)
    owners: dict[TopicPartition, str] = field(default_factory=dict)  # who holds a partition (or revokes it)
    offsets: dict[TopicPartition, OffsetCommit] = field(default_factory=dict)

    @property
    def state(self) -> str:
        """Kafka's consumer group states."""
        if not self.members:
            return "Empty"
        if self.assignment_epoch < self.epoch:
            return "Assigning"
        if any(m.current.member_epoch != self.assignment_epoch or m.current.state != MemberState.STABLE
               for m in self.members.values()):
            return "Reconciling"
        return "Stable"


class GroupsState:
    def __init__(self) -> None:
        self.groups: dict[str, ConsumerGroup] = {}

    def replay(self, record: Record) -> None:
        key, value = record
        group = self.groups.get(key.group_id)
        if key.type == RecordType.GROUP_METADATA:
            if value is None:
                self.groups.pop(key.group_id, None)
            else:
                assert isinstance(value, GroupMetadata)
                self._group(key).epoch = value.epoch
            return
        if group is None and value is None:
            return  # a tombstone of a group already gone
        group = self._group(key)
        if key.type == RecordType.OFFSET_COMMIT:
            tp = (key.topic, key.partition)
            if value is None:
                group.offsets.pop(tp, None)
            else:
                assert isinstance(value, OffsetCommit)
                group.offsets[tp] = value
        elif key.type == RecordType.PARTITION_METADATA:
            group.subscription = value.topics if isinstance(value, PartitionMetadata) else ()
        elif key.type == RecordType.TARGET_ASSIGNMENT_METADATA:
            group.assignment_epoch = value.assignment_epoch if isinstance(value, TargetAssignmentMetadata) else 0
        else:
            self._replay_member(group, key, value)

    def _group(self, key: Key) -> ConsumerGroup:
        group = self.groups.get(key.group_id)
        if group is None:
            group = self.groups[key.group_id] = ConsumerGroup(key.group_id)
        return group

    @staticmethod
    def _replay_member(group: ConsumerGroup, key: Key, value: object) -> None:
        member = group.members.get(key.member_id)
        if member is None:
            if value is None:
                return
            member = group.members[key.member_id] = Member(key.member_id)
        if key.type == RecordType.MEMBER_METADATA:
            if value is None:
                _release(group, member)
                del group.members[key.member_id]
            else:
                assert isinstance(value, MemberMetadata)
                member.metadata = value
        elif key.type == RecordType.TARGET_ASSIGNMENT_MEMBER:
            member.target = value.partitions if isinstance(value, TargetAssignmentMember) else EMPTY
        elif key.type == RecordType.CURRENT_MEMBER_ASSIGNMENT:
            _release(group, member)
            member.current = value if isinstance(value, CurrentMemberAssignment) else NO_ASSIGNMENT
            for tp in member.owns:
                holder = group.owners.setdefault(tp, member.member_id)
                assert holder == member.member_id, f"{tp} given to {member.member_id} while {holder} holds it"


def _release(group: ConsumerGroup, member: Member) -> None:
    for tp in member.owns:
        if group.owners.get(tp) == member.member_id:
            del group.owners[tp]
