"""The __consumer_offsets record codec (Kafka's schemas) and Kafka's group placement."""
from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from kafka_protocol.schema_types import SchemaError
from kafka_protocol.coordinator_placement import java_string_hash, partition_for
from broker.groups.records import (CurrentMemberAssignment, GroupMetadata, Key, MemberMetadata, MemberState,
                                   OffsetCommit, PartitionMetadata, RecordType, TargetAssignmentMember,
                                   TargetAssignmentMetadata, decode_record, encode_record)


class Ids:
    """Topic ids as a metadata image would give them."""

    def __init__(self, names):
        self.ids = {n: bytes([i + 1]) * 16 for i, n in enumerate(names)}

    def id_of(self, name):
        return self.ids.get(name)

    def name_of(self, topic_id):
        return next((n for n, i in self.ids.items() if i == topic_id), None)


IDS = Ids(["orders", "payments", "ü-topic"])
names = st.text(max_size=20)
topic_names = st.sampled_from(sorted(IDS.ids))
assignments = st.frozensets(st.tuples(topic_names, st.integers(0, 2 ** 31 - 1)), max_size=20)
int32 = st.integers(-2 ** 31, 2 ** 31 - 1)
optional_names = st.none() | names

values = st.one_of(
    st.builds(lambda g, v: (Key(RecordType.GROUP_METADATA, g), v), names, st.none() | st.builds(GroupMetadata, int32)),
    st.builds(lambda g, e, t: (Key(RecordType.PARTITION_METADATA, g), PartitionMetadata(e, t)), names, int32,
              st.lists(st.tuples(topic_names, int32), max_size=4).map(tuple)),
    st.builds(lambda g, m, v: (Key(RecordType.MEMBER_METADATA, g, m), v), names, names,
              st.builds(MemberMetadata, optional_names, optional_names, names, names,
                        st.lists(names, max_size=4).map(tuple), optional_names, int32, optional_names)),
    st.builds(lambda g, e: (Key(RecordType.TARGET_ASSIGNMENT_METADATA, g), TargetAssignmentMetadata(e)), names, int32),
    st.builds(lambda g, m, a: (Key(RecordType.TARGET_ASSIGNMENT_MEMBER, g, m), TargetAssignmentMember(a)),
              names, names, assignments),
    st.builds(lambda g, m, v: (Key(RecordType.CURRENT_MEMBER_ASSIGNMENT, g, m), v), names, names,
              st.none() | st.builds(CurrentMemberAssignment, int32, int32, st.sampled_from(MemberState),
                                    assignments, assignments)),
    st.builds(lambda g, t, p, v: (Key(RecordType.OFFSET_COMMIT, g, topic=t, partition=p), v), names, names, int32,
              st.none() | st.builds(OffsetCommit, st.integers(-1, 2 ** 63 - 1), int32, names,
                                    st.integers(0, 2 ** 62))),
)


@given(values)
def test_every_record_survives_a_round_trip(record) -> None:
    key, value = encode_record(record, IDS)
    assert decode_record(key, value, IDS) == record


def test_offset_commit_bytes_are_kafkas() -> None:
    key, value = encode_record((Key(RecordType.OFFSET_COMMIT, "g", topic="t", partition=3),
                                OffsetCommit(42, 5, "m", 1000)), IDS)
    # OffsetCommitKey: int16 type 1, then group, topic (int16-length strings), partition.
    assert key == struct.pack(">hh1sh1si", 1, 1, b"g", 1, b"t", 3)
    # OffsetCommitValue v3: offset, leader epoch, metadata, commit timestamp.
    assert value == struct.pack(">hqih1sq", 3, 42, 5, 1, b"m", 1000)
    # Version 1 of the value (written by old Kafka) carries an expire timestamp and no leader epoch.
    old = struct.pack(">hqh1sqq", 1, 7, 1, b"x", 1000, -1)
    assert decode_record(key, old, IDS)[1] == OffsetCommit(7, -1, "x", 1000)


def test_group_metadata_value_is_flexible_version_0() -> None:
    key, value = encode_record((Key(RecordType.GROUP_METADATA, "grp"), GroupMetadata(9)), IDS)
    assert key == struct.pack(">hh3s", 3, 3, b"grp")
    assert value == struct.pack(">hib", 0, 9, 0)  # version, epoch, no tagged fields


def test_partitions_of_unknown_topics_are_dropped_and_unknown_types_ignored() -> None:
    record = (Key(RecordType.TARGET_ASSIGNMENT_MEMBER, "g", "m"),
              TargetAssignmentMember(frozenset({("orders", 0), ("payments", 1)})))
    key, value = encode_record(record, IDS)
    decoded = decode_record(key, value, Ids(["orders"]))  # payments was deleted since
    assert decoded[1] == TargetAssignmentMember(frozenset({("orders", 0)}))
    share_group_key = struct.pack(">hh1s", 11, 1, b"g")  # a share group's: not this coordinator's
    assert decode_record(share_group_key, b"\x00\x03", IDS) is None


@given(st.binary(max_size=64), st.binary(max_size=64))
def test_garbage_raises_schema_error_only(key, value) -> None:
    try:
        decode_record(key, value, IDS)
    except SchemaError:
        pass


def test_placement_is_kafkas() -> None:
    # Java: "".hashCode() == 0, "a" == 97, "hello".hashCode() == 99162322,
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE (Kafka's abs maps it to 0).
    assert java_string_hash("") == 0 and java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -2 ** 31
    assert partition_for("polygenelubricants", 50) == 0
    assert java_string_hash("Aa") == java_string_hash("BB")  # Java's classic collision
    assert partition_for("hello", 50) == 99162322 % 50
    # Characters outside the BMP count as two UTF-16 code units.
    assert java_string_hash("\U0001F600") == (0xD83D * 31 + 0xDE00)
    negative = "my-consumer-group-7"
    assert 0 <= partition_for(negative, 50) < 50
