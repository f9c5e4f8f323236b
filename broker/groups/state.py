"""The coordinator's in-memory state of the groups of one __consumer_offsets
partition, changed only by replaying records: the live path replays the
records it writes, loading replays the log, and both end in the same state.

Timers (session and revocation deadlines) are not records: they are armed
by heartbeats, and for every member when a coordinator loads.

Transactional offsets (KIP-98's TxnOffsetCommit): an offset record of a
transactional batch is pending under its producer id until that producer's
COMMIT marker makes it committed or its ABORT marker drops it. As Kafka's
coordinator, every offset keeps the position of the record that wrote it,
and a committed transaction's offset replaces the committed one only when
its record is the later of the two: a plain commit written after the
transactional record (even before the marker) stands. Positions count the
records replayed, so they order records exactly as their log offsets do,
on the live path and when loading (compaction only removes records).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from .classic import ClassicGroup
from .records import (Assignment, ClassicGroupRecord, CurrentMemberAssignment, GroupMetadata, Key, MemberMetadata,
                      MemberState, OffsetCommit, PartitionMetadata, Record, RecordType, TargetAssignmentMember,
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
    offset_positions: dict[TopicPartition, int] = field(default_factory=dict)  # where each offset was written
    # A classic group (JoinGroup/SyncGroup) in this group id, instead of KIP-848 members: one
    # namespace, one set of committed offsets. Its record is a snapshot, not replayed on the live path.
    classic: Optional[ClassicGroup] = None

    @property
    def type(self) -> str:
        """Kafka's group types, as ListGroups v5 tells them."""
        return "consumer" if self.classic is None else "classic"

    @property
    def is_empty(self) -> bool:
        return not self.members and (self.classic is None or not self.classic.members)

    @property
    def state(self) -> str:
        """Kafka's consumer (or classic) group states."""
        if self.classic is not None:
            return self.classic.state.value
        if not self.members:
            return "Empty"
        if self.assignment_epoch < self.epoch:
            return "Assigning"
        if any(m.current.member_epoch != self.assignment_epoch or m.current.state != MemberState.STABLE
               for m in self.members.values()):
            return "Reconciling"
        return "Stable"


NO_PRODUCER_ID = -1
PendingOffsets = dict[str, dict[TopicPartition, tuple[int, OffsetCommit]]]  # group -> partition -> (position, offset)


class GroupsState:
    def __init__(self) -> None:
        self.groups: dict[str, ConsumerGroup] = {}
        self.position = 0  # records replayed so far
        self.pending: dict[int, PendingOffsets] = {}  # producer id -> its transaction's offsets

    def skip(self) -> None:
        """A record the live path applied itself (a classic group's snapshot):
        counted, so that positions still follow the log."""
        self.position += 1

    def replay(self, record: Record, producer_id: int = NO_PRODUCER_ID) -> None:
        """`producer_id`: the producer of the transactional batch holding the
        record (only offset commits wait for the marker; Kafka applies the
        batch's other records at once)."""
        self.position += 1
        key, value = record
        group = self.groups.get(key.group_id)
        if key.type == RecordType.GROUP_METADATA:
            if value is None:
                self.groups.pop(key.group_id, None)
                self._drop_pending(key.group_id, None)
            else:
                assert isinstance(value, GroupMetadata)
                self._group(key).epoch = value.epoch
            return
        if key.type == RecordType.OFFSET_COMMIT and value is None:
            self._drop_pending(key.group_id, (key.topic, key.partition))
        if group is None and value is None:
            return  # a tombstone of a group already gone
        group = self._group(key)
        if key.type == RecordType.OFFSET_COMMIT:
            tp = (key.topic, key.partition)
            if value is None:
                group.offsets.pop(tp, None)
                group.offset_positions.pop(tp, None)
            elif producer_id != NO_PRODUCER_ID:
                assert isinstance(value, OffsetCommit)
                self.pending.setdefault(producer_id, {}).setdefault(key.group_id, {})[tp] = (self.position, value)
            else:
                assert isinstance(value, OffsetCommit)
                group.offsets[tp] = value
                group.offset_positions[tp] = self.position
        elif key.type == RecordType.PARTITION_METADATA:
            group.subscription = value.topics if isinstance(value, PartitionMetadata) else ()
        elif key.type == RecordType.CLASSIC_GROUP:
            group.classic = (ClassicGroup.from_record(key.group_id, value) if isinstance(value, ClassicGroupRecord)
                             else None)
        elif key.type == RecordType.TARGET_ASSIGNMENT_METADATA:
            group.assignment_epoch = value.assignment_epoch if isinstance(value, TargetAssignmentMetadata) else 0
        else:
            self._replay_member(group, key, value)

    def complete_txn(self, producer_id: int, committed: bool) -> None:
        """A COMMIT or ABORT marker of `producer_id` (Kafka's
        replayEndTransactionMarker)."""
        self.position += 1
        offsets = self.pending.pop(producer_id, None)
        if not committed or not offsets:
            return
        for group_id, by_partition in offsets.items():
            group = self.groups.get(group_id)
            if group is None:
                continue  # deleted since: its tombstones dropped these offsets already
            for tp, (position, value) in by_partition.items():
                if position > group.offset_positions.get(tp, 0):
                    group.offsets[tp] = value
                    group.offset_positions[tp] = position

    def has_pending(self, group_id: str, tp: TopicPartition) -> bool:
        return any(tp in offsets.get(group_id, ()) for offsets in self.pending.values())

    def pending_partitions(self, group_id: str) -> set[TopicPartition]:
        return {tp for offsets in self.pending.values() for tp in offsets.get(group_id, ())}

    def _drop_pending(self, group_id: str, tp: Optional[TopicPartition]) -> None:
        """A tombstone of a group's offset (tp) or of the group (None) drops
        its pending transactional offsets too, as Kafka's does."""
        for producer_id in list(self.pending):
            offsets = self.pending[producer_id]
            by_partition = offsets.get(group_id)
            if by_partition is None:
                continue
            if tp is None:
                by_partition.clear()
            else:
                by_partition.pop(tp, None)
            if not by_partition:
                del offsets[group_id]
            if not offsets:
                del self.pending[producer_id]

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
