"""The records of __consumer_offsets, in Kafka's own binary schemas (the
group coordinator's record definitions), so that a Kafka tool reading the
topic would recognise them.

A key starts with an int16 record type, then the key's fields (non-flexible:
int16-length strings). A value starts with an int16 version, then its fields;
the consumer group values are flexible (compact strings and arrays, tagged
fields), the offset commit value is version 3 (non-flexible). A null value
is a tombstone: compaction removes the key.

    type  key                                  value (version)
    1     OffsetCommitKey(group,topic,part)    OffsetCommitValue (3)
    2     GroupMetadataKey(group)              a classic group: GroupMetadataValue (3;
                                               0-4 read), its members and their assignments
    3     ConsumerGroupMetadataKey(group)      group epoch (0)
    4     ConsumerGroupPartitionMetadataKey    subscribed topics' partition counts (0)
    5     ConsumerGroupMemberMetadataKey       a member's subscription (0)
    6     ConsumerGroupTargetAssignmentMetadataKey  assignment epoch (0)
    7     ConsumerGroupTargetAssignmentMemberKey    a member's target (0)
    8     ConsumerGroupCurrentMemberAssignmentKey   a member's epoch and assignment (0)

Inside this package a partition is (topic name, index); the assignment
values carry topic ids, mapped through `TopicIds` (the metadata image) when
encoding and decoding. A partition of a topic the image no longer knows is
dropped: the topic is gone, and so is any claim on it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from enum import IntEnum
from typing import Optional, Protocol, Union

from kafka_protocol.schema_types import Reader, SchemaError, Writer

TopicPartition = tuple[str, int]
Assignment = frozenset[TopicPartition]
NO_TOPIC_ID = bytes(16)


class RecordType(IntEnum):
    OFFSET_COMMIT = 1
    CLASSIC_GROUP = 2  # Kafka's GroupMetadataKey (key version 2)
    GROUP_METADATA = 3
    PARTITION_METADATA = 4
    MEMBER_METADATA = 5
    TARGET_ASSIGNMENT_METADATA = 6
    TARGET_ASSIGNMENT_MEMBER = 7
    CURRENT_MEMBER_ASSIGNMENT = 8


class MemberState(IntEnum):
    """Kafka's values for a member's reconciliation state."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1  # must give up partitions before its next epoch
    UNRELEASED_PARTITIONS = 2  # at the target epoch, waiting for others to release partitions


class TopicIds(Protocol):
    def id_of(self, name: str) -> Optional[bytes]: ...
    def name_of(self, topic_id: bytes) -> Optional[str]: ...


@dataclass(frozen=True, slots=True)
class Key:
    type: RecordType
    group_id: str
    member_id: str = ""  # member records
    topic: str = ""      # offset commits
    partition: int = -1


@dataclass(frozen=True, slots=True)
class GroupMetadata:
    epoch: int


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    """The partition count of every subscribed topic when the epoch was bumped."""

    epoch: int
    topics: tuple[tuple[str, int], ...]  # sorted (name, partitions)


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """A member of a consumer group that speaks the classic protocol
    (KIP-848's online migration): its session timeout and its JoinGroup
    protocols, Kafka's ClassicMemberMetadata (tag 0 of the member's value)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]  # (name, metadata), its preference first


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    instance_id: Optional[str]
    rack_id: Optional[str]
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: Optional[str]
    rebalance_timeout_ms: int
    server_assignor: Optional[str]
    classic: Optional[ClassicMemberMetadata] = None  # None: a KIP-848 (ConsumerGroupHeartbeat) member


@dataclass(frozen=True, slots=True)
class TargetAssignmentMetadata:
    assignment_epoch: int


@dataclass(frozen=True, slots=True)
class TargetAssignmentMember:
    partitions: Assignment


@dataclass(frozen=True, slots=True)
class CurrentMemberAssignment:
    member_epoch: int
    previous_member_epoch: int
    state: MemberState
    assigned: Assignment
    pending_revocation: Assignment


@dataclass(frozen=True, slots=True)
class OffsetCommit:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int


@dataclass(frozen=True, slots=True)
class ClassicMemberRecord:
    member_id: str
    instance_id: Optional[str]
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes  # its metadata for the group's protocol
    assignment: bytes


@dataclass(frozen=True, slots=True)
class ClassicGroupRecord:
    """A classic group as Kafka's GroupMetadataValue has it: written whole
    (a snapshot) whenever the group's generation or assignments change."""

    protocol_type: str
    generation: int
    protocol: Optional[str]
    leader: Optional[str]
    state_timestamp_ms: int
    members: tuple[ClassicMemberRecord, ...]


Value = Union[GroupMetadata, PartitionMetadata, MemberMetadata, TargetAssignmentMetadata,
              TargetAssignmentMember, CurrentMemberAssignment, OffsetCommit, ClassicGroupRecord]
Record = tuple[Key, Optional[Value]]  # a None value is a tombstone

VALUE_TYPES: dict[RecordType, type] = {
    RecordType.OFFSET_COMMIT: OffsetCommit,
    RecordType.GROUP_METADATA: GroupMetadata,
    RecordType.PARTITION_METADATA: PartitionMetadata,
    RecordType.MEMBER_METADATA: MemberMetadata,
    RecordType.TARGET_ASSIGNMENT_METADATA: TargetAssignmentMetadata,
    RecordType.TARGET_ASSIGNMENT_MEMBER: TargetAssignmentMember,
    RecordType.CURRENT_MEMBER_ASSIGNMENT: CurrentMemberAssignment,
    RecordType.CLASSIC_GROUP: ClassicGroupRecord,
}
_GROUP_KEYS = (RecordType.GROUP_METADATA, RecordType.PARTITION_METADATA, RecordType.TARGET_ASSIGNMENT_METADATA,
               RecordType.CLASSIC_GROUP)
_OFFSET_COMMIT_VALUE_VERSION = 3
_CLASSIC_GROUP_VALUE_VERSION = 3  # what Kafka writes: non-flexible, with group instance ids
_FLEXIBLE_CLASSIC_VERSION = 4
_CLASSIC_MEMBER_TAG = 0  # ConsumerGroupMemberMetadataValue's tagged ClassicMemberMetadata


# -- keys ----------------------------------------------------------------------------------------
def encode_key(key: Key) -> bytes:
    w = Writer().int16(key.type).string(key.group_id)
    if key.type == RecordType.OFFSET_COMMIT:
        w.string(key.topic).int32(key.partition)
    elif key.type not in _GROUP_KEYS:
        w.string(key.member_id)
    return w.bytes()


def decode_key(data: bytes) -> Optional[Key]:
    """The key, or None for a record type this coordinator does not use
    (share groups, streams groups, ...)."""
    r = Reader(data)
    kind = r.int16()
    if kind == 0:  # the legacy OffsetCommitKey version, same layout
        kind = RecordType.OFFSET_COMMIT
    try:
        kind = RecordType(kind)
    except ValueError:
        return None
    group = r.string()
    if kind == RecordType.OFFSET_COMMIT:
        return Key(kind, group, topic=r.string(), partition=r.int32())
    if kind in _GROUP_KEYS:
        return Key(kind, group)
    return Key(kind, group, member_id=r.string())


# -- values --------------------------------------------------------------------------------------
def _write_partitions(w: Writer, partitions: Assignment, ids: TopicIds) -> None:
    by_topic: dict[str, list[int]] = {}
    for topic, index in partitions:
        by_topic.setdefault(topic, []).append(index)
    entries = [(ids.id_of(t) or NO_TOPIC_ID, sorted(p)) for t, p in sorted(by_topic.items())]
    w.compact_array(entries, lambda w, e: w.uuid(e[0]).compact_array(e[1], Writer.int32).no_tagged_fields())


def _read_partitions(r: Reader, ids: TopicIds) -> Assignment:
    out: set[TopicPartition] = set()
    for topic_id, indexes in r.compact_array(_read_topic_partitions):
        name = ids.name_of(topic_id)
        if name is not None:
            out.update((name, i) for i in indexes)
    return frozenset(out)


def _read_topic_partitions(r: Reader) -> tuple[bytes, list[int]]:
    topic_id, indexes = r.uuid(), r.compact_array(Reader.int32)
    r.skip_tagged_fields()
    return topic_id, indexes


def encode_value(value: Optional[Value], ids: TopicIds) -> Optional[bytes]:
    if value is None:
        return None
    if isinstance(value, OffsetCommit):
        return (Writer().int16(_OFFSET_COMMIT_VALUE_VERSION).int64(value.offset).int32(value.leader_epoch)
                .string(value.metadata).int64(value.commit_timestamp).bytes())
    if isinstance(value, ClassicGroupRecord):
        return _encode_classic(value)
    w = Writer().int16(0)
    if isinstance(value, GroupMetadata):
        w.int32(value.epoch)
    elif isinstance(value, PartitionMetadata):
        w.int32(value.epoch).compact_array(value.topics, lambda w, t: (
            w.uuid(ids.id_of(t[0]) or NO_TOPIC_ID).compact_string(t[0]).int32(t[1])
            .compact_array((), Writer.int32).no_tagged_fields()))
    elif isinstance(value, MemberMetadata):
        (w.compact_string(value.instance_id).compact_string(value.rack_id).compact_string(value.client_id)
         .compact_string(value.client_host).compact_array(value.subscribed_topic_names, Writer.compact_string)
         .compact_string(value.subscribed_topic_regex).int32(value.rebalance_timeout_ms)
         .compact_string(value.server_assignor))
        if value.classic is not None:
            return w.tagged_fields({_CLASSIC_MEMBER_TAG: _encode_classic_member(value.classic)}).bytes()
    elif isinstance(value, TargetAssignmentMetadata):
        w.int32(value.assignment_epoch)
    elif isinstance(value, TargetAssignmentMember):
        _write_partitions(w, value.partitions, ids)
    elif isinstance(value, CurrentMemberAssignment):
        w.int32(value.member_epoch).int32(value.previous_member_epoch).int8(value.state)
        _write_partitions(w, value.assigned, ids)
        _write_partitions(w, value.pending_revocation, ids)
    else:
        raise TypeError(f"not a record value: {value!r}")
    return w.no_tagged_fields().bytes()


def decode_value(kind: RecordType, data: Optional[bytes], ids: TopicIds) -> Optional[Value]:
    if data is None:
        return None
    r = Reader(data)
    version = r.int16()
    if kind == RecordType.CLASSIC_GROUP:
        return _decode_classic(r, version)
    if kind == RecordType.OFFSET_COMMIT:
        offset = r.int64()
        leader_epoch = r.int32() if version >= 3 else -1
        metadata = r.string() if version < 4 else (r.compact_string() or "")
        return OffsetCommit(offset, leader_epoch, metadata, r.int64())
    value: Value
    if kind == RecordType.GROUP_METADATA:
        value = GroupMetadata(r.int32())
    elif kind == RecordType.PARTITION_METADATA:
        value = PartitionMetadata(r.int32(), tuple(r.compact_array(_read_topic_metadata)))
    elif kind == RecordType.MEMBER_METADATA:
        value = MemberMetadata(r.compact_string(), r.compact_string(), _required(r), _required(r),
                               tuple(r.compact_array(_required)), r.compact_string(), r.int32(), r.compact_string())
        tagged = r.tagged_fields()
        if _CLASSIC_MEMBER_TAG in tagged:
            value = replace(value, classic=_decode_classic_member(tagged[_CLASSIC_MEMBER_TAG]))
        return value
    elif kind == RecordType.TARGET_ASSIGNMENT_METADATA:
        value = TargetAssignmentMetadata(r.int32())
    elif kind == RecordType.TARGET_ASSIGNMENT_MEMBER:
        value = TargetAssignmentMember(_read_partitions(r, ids))
    else:
        epoch, previous, state = r.int32(), r.int32(), r.int8()
        try:
            state = MemberState(state)
        except ValueError:
            raise SchemaError(f"unknown member state {state}") from None
        value = CurrentMemberAssignment(epoch, previous, state, _read_partitions(r, ids), _read_partitions(r, ids))
    r.skip_tagged_fields()
    return value


def _encode_classic_member(meta: ClassicMemberMetadata) -> bytes:
    w = Writer().int32(meta.session_timeout_ms)
    w.compact_array(meta.protocols, lambda w, p: (
        w.compact_string(p[0]).uvarint(len(p[1]) + 1).raw(p[1]).no_tagged_fields()))
    return w.no_tagged_fields().bytes()


def _decode_classic_member(data: bytes) -> ClassicMemberMetadata:
    r = Reader(data)
    session_timeout = r.int32()
    protocols = tuple(r.compact_array(_read_classic_protocol))
    r.skip_tagged_fields()
    return ClassicMemberMetadata(session_timeout, protocols)


def _read_classic_protocol(r: Reader) -> tuple[str, bytes]:
    name, size = _required(r), r.uvarint() - 1
    if size < 0:
        raise SchemaError("null protocol metadata")
    metadata = bytes(r._take(size))
    r.skip_tagged_fields()
    return name, metadata


def _required(r: Reader) -> str:
    text = r.compact_string()
    if text is None:
        raise SchemaError("null where a string is required")
    return text


def _read_topic_metadata(r: Reader) -> tuple[str, int]:
    r.uuid()
    name, count = _required(r), r.int32()
    r.compact_array(_skip_partition_racks)
    r.skip_tagged_fields()
    return name, count


def _skip_partition_racks(r: Reader) -> None:
    r.int32()
    r.compact_array(Reader.compact_string)
    r.skip_tagged_fields()


# -- a classic group's GroupMetadataValue (non-flexible up to 3: int16 strings, int32 bytes and arrays)
def _nullable_string(w: Writer, v: Optional[str]) -> None:
    if v is None:
        w.int16(-1)
    else:
        w.string(v)


def _bytes(w: Writer, v: bytes) -> None:
    w.int32(len(v)).raw(v)


def _encode_classic(value: ClassicGroupRecord) -> bytes:
    w = Writer().int16(_CLASSIC_GROUP_VALUE_VERSION).string(value.protocol_type).int32(value.generation)
    _nullable_string(w, value.protocol)
    _nullable_string(w, value.leader)
    w.int64(value.state_timestamp_ms).int32(len(value.members))
    for m in value.members:
        w.string(m.member_id)
        _nullable_string(w, m.instance_id)
        w.string(m.client_id).string(m.client_host).int32(m.rebalance_timeout_ms).int32(m.session_timeout_ms)
        _bytes(w, m.subscription)
        _bytes(w, m.assignment)
    return w.bytes()


class _ClassicReader:
    """GroupMetadataValue's primitives at one version (4 is flexible)."""

    def __init__(self, r: Reader, version: int) -> None:
        if not 0 <= version <= _FLEXIBLE_CLASSIC_VERSION:
            raise SchemaError(f"GroupMetadataValue version {version}")
        self.r, self.version, self.flexible = r, version, version >= _FLEXIBLE_CLASSIC_VERSION

    def string(self) -> Optional[str]:
        if self.flexible:
            return self.r.compact_string()
        n = self.r.int16()
        return None if n < 0 else self.r._text(n)

    def required(self) -> str:
        text = self.string()
        if text is None:
            raise SchemaError("null where a string is required")
        return text

    def bytes(self) -> bytes:
        n = self.r.uvarint() - 1 if self.flexible else self.r.int32()
        if n < 0:
            raise SchemaError("null where bytes are required")
        return bytes(self.r._take(n))

    def count(self) -> int:
        n = self.r.uvarint() - 1 if self.flexible else self.r.int32()
        if n < 0 or n > len(self.r.data) - self.r.pos:
            raise SchemaError(f"array of {n} members in {len(self.r.data) - self.r.pos} bytes")
        return n

    def member(self) -> ClassicMemberRecord:
        member_id = self.required()
        instance_id = self.string() if self.version >= 3 else None
        client_id, client_host = self.required(), self.required()
        rebalance_timeout = self.r.int32() if self.version >= 1 else -1
        session_timeout = self.r.int32()
        subscription, assignment = self.bytes(), self.bytes()
        if self.flexible:
            self.r.skip_tagged_fields()
        return ClassicMemberRecord(member_id, instance_id, client_id, client_host,
                                   rebalance_timeout if rebalance_timeout > 0 else session_timeout,
                                   session_timeout, subscription, assignment)


def _decode_classic(r: Reader, version: int) -> ClassicGroupRecord:
    c = _ClassicReader(r, version)
    protocol_type, generation, protocol, leader = c.required(), r.int32(), c.string(), c.string()
    timestamp = r.int64() if version >= 2 else -1
    members = tuple(c.member() for _ in range(c.count()))
    if c.flexible:
        r.skip_tagged_fields()
    return ClassicGroupRecord(protocol_type, generation, protocol, leader, timestamp, members)


def encode_record(record: Record, ids: TopicIds) -> tuple[bytes, Optional[bytes]]:
    key, value = record
    return encode_key(key), encode_value(value, ids)


def decode_record(key: Optional[bytes], value: Optional[bytes], ids: TopicIds) -> Optional[Record]:
    """A record of the log, or None for one this coordinator ignores. Raises
    SchemaError for bytes that do not decode (a corrupt record)."""
    if key is None:
        return None
    decoded = decode_key(key)
    if decoded is None:
        return None
    return decoded, decode_value(decoded.type, value, ids)
