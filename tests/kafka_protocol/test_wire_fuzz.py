"""The request decoder on hostile bytes: whatever a client sends, decoding
ends in the request or a WireError (the listener closes that connection),
never another exception. And KIP-482's unknown tagged fields: a request of
any flexible version read with them as without them."""
from __future__ import annotations

import dataclasses
import struct

from hypothesis import HealthCheck, given, settings, strategies as st
from kio.static.primitive import Records
from kio.schema.fetch.v11.request import FetchRequest
from kio.schema.produce.v8.request import ProduceRequest

from kafka_protocol.wire import codec, framing, versions
from kafka_protocol.wire.entities import build
from kafka_protocol.wire.errors import WireError
from kafka_protocol.wire.tagged_fields import drop_unknown_tags
from kafka_protocol.varint import unsigned_varint_bytes as uvarint

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FUZZ_MESSAGES = settings(FUZZ, max_examples=100)  # whole messages: each example costs more

SAMPLES = [
    codec.encode_request(build(ProduceRequest, {
        "transactional_id": None, "acks": -1, "timeout": 1000, "topic_data": [
            {"name": "t", "partition_data": [{"index": 0, "records": b"\x00" * 70}]}]}), 1, "c")[4:],
    codec.encode_request(build(FetchRequest, {
        "replica_id": -1, "max_wait": 500, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [], "topics": [
            {"topic": "t", "partitions": [{"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                                           "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]}), 2)[4:],
    codec.encode_request(build(codec.request_type(versions.PRODUCE, 9), {  # flexible: compact strings, tags
        "transactional_id": "txn", "acks": 1, "timeout": 1000, "topic_data": [
            {"name": "topic", "partition_data": [{"index": 3, "records": b"\x01" * 40}]}]}), 4, "c")[4:],
    codec.encode_request(build(codec.request_type(versions.API_VERSIONS, 3), {
        "client_software_name": "x", "client_software_version": "1"}), 3)[4:],
    # unknown tagged fields in the header and the body (the codec's second walk)
    struct.pack(">hhih", versions.API_VERSIONS, 3, 5, 1) + b"c" + bytes([1, 9, 1, 0])
    + bytes([2]) + b"x" + bytes([2]) + b"1" + bytes([2, 4, 2]) + b"ab" + bytes([0x80, 0x01, 0]),
]


def decodes_or_wire_error(frame: bytes) -> None:
    try:
        codec.decode_request(frame)
    except WireError:
        pass


@FUZZ
@given(st.binary(max_size=200))
def test_arbitrary_bytes(frame):
    decodes_or_wire_error(frame)


@FUZZ
@given(st.sampled_from([key for key in versions.ADVERTISED]), st.integers(-1, 12), st.integers(-2**31, 2**31 - 1),
       st.binary(max_size=120))
def test_a_served_api_with_garbage_after_its_header(api_key, api_version, correlation_id, rest):
    decodes_or_wire_error(struct.pack(">hhi", api_key, api_version, correlation_id) + rest)


@FUZZ
@given(st.sampled_from(SAMPLES), st.data())
def test_damaged_real_requests(sample, data):
    frame = bytearray(sample)
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(frame) - 1))
        frame[position] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(frame)))
    decodes_or_wire_error(bytes(frame[:cut]))


@FUZZ
@given(st.binary(min_size=4, max_size=4), st.integers(1, 2**31 - 1))
def test_frame_sizes(prefix, limit):
    try:
        size = framing.frame_size(prefix, limit)
    except WireError:
        return
    assert 0 < size <= limit


# kio's types bring their own strategies (their __hypothesis_hook__); record sets are bytes to us
st.register_type_strategy(Records, st.binary(max_size=80).map(Records))

# Every flexible version of every served API, and of a few APIs with nested
# and array fields the served ones lack (JoinGroup, SyncGroup,
# DescribeConfigs, CreateTopics).
FLEXIBLE_KINDS = [kind for kind in (
    [codec.request_type(key, v) for key, r in versions.ADVERTISED.items() for v in range(r.min_version, r.max_version + 1)]
    + [codec.request_type(key, v) for key, v in ((11, 7), (14, 5), (32, 4), (19, 7))]) if kind.__flexible__]
HEADER_V2_TAGS = 11  # api key, version, correlation id, the client id "c": then the header's tagged fields


def frame_of(message) -> bytes:
    return codec.encode_request(message, 1, "c")[4:]


def unknown_tags(known: set[int]) -> st.SearchStrategy[bytes]:
    """A tagged-field section of tags `known` lacks, in ascending order."""
    entries = st.dictionaries(st.integers(0, 2**31 - 1).filter(lambda t: t not in known), st.binary(max_size=12),
                              min_size=1, max_size=4)
    return entries.map(lambda d: uvarint(len(d)) + b"".join(
        uvarint(tag) + uvarint(len(d[tag])) + d[tag] for tag in sorted(d)))


def declared_tags(kind: type) -> set[int]:
    return {int(f.metadata["tag"]) for f in dataclasses.fields(kind) if "tag" in f.metadata}


@FUZZ_MESSAGES
@given(st.sampled_from(FLEXIBLE_KINDS).flatmap(st.from_type))
def test_without_unknown_tags_the_walk_changes_nothing(message):
    frame = frame_of(message)
    assert drop_unknown_tags(type(message), frame, HEADER_V2_TAGS + 1) == frame[HEADER_V2_TAGS + 1:]


@FUZZ_MESSAGES
@given(st.sampled_from([k for k in FLEXIBLE_KINDS if versions.is_served(k.__api_key__, k.__version__)])
       .flatmap(st.from_type), st.data())
def test_unknown_tags_in_header_and_body_read_as_without_them(message, data):
    # its own top-level tagged fields left at their defaults, so none is written: the
    # message ends in an empty tagged section, the one byte 0 that ours replace
    message = dataclasses.replace(message, **{f.name: f.default for f in dataclasses.fields(message)
                                              if "tag" in f.metadata})
    frame = frame_of(message)
    assert frame[-1] == 0
    header_tags = data.draw(unknown_tags(set()))
    body_tags = data.draw(unknown_tags(declared_tags(type(message))))
    tagged = frame[:HEADER_V2_TAGS] + header_tags + frame[HEADER_V2_TAGS + 1:-1] + body_tags
    assert codec.decode_request(tagged) == codec.decode_request(frame)


@FUZZ
@given(st.sampled_from(FLEXIBLE_KINDS), st.binary(max_size=120))
def test_the_walk_on_garbage_is_a_wire_error_or_bytes(kind, rest):
    try:
        assert isinstance(drop_unknown_tags(kind, rest, 0), bytes)
    except WireError:
        pass


# -- arrays that say more entries than their frame could hold --------------------------------
# kio's native readers make room for an array's entries before reading one,
# and a failed allocation aborts the process (a broker ended by one frame):
# the codec refuses such lengths first. These fail by crashing the test
# process if that check is lost.

def request_frame(api_key: int, api_version: int, body: bytes) -> bytes:
    kind = codec.request_type(api_key, api_version)
    header = struct.pack(">hhih", api_key, api_version, 9, -1)
    return header + (b"\x00" if kind.__header_schema__.__version__ >= 2 else b"") + body


HUGE_ARRAYS = [
    (versions.LIST_GROUPS, 4, uvarint(2**32 + 1) + b"\x00" * 8),          # compact array of strings
    (versions.LIST_TRANSACTIONS, 0, b"\x01" + uvarint(5 * 10**9) + b"\x00" * 8),  # of int64, after an empty one
    (versions.METADATA, 9, uvarint(5 * 10**9) + b"\x00" * 8),             # of entities
    (versions.METADATA, 4, struct.pack(">i", 2**31 - 1) + b"\x00" * 8),   # a legacy int32 length
]


def test_an_array_longer_than_its_frame_is_refused_before_kio_reads_it():
    for api_key, api_version, body in HUGE_ARRAYS:
        try:
            codec.decode_request(request_frame(api_key, api_version, body))
        except WireError as exc:
            assert "entries in" in str(exc), exc
        else:
            raise AssertionError(f"api {api_key} v{api_version} decoded a {len(body)}-byte body")


LENGTHY = st.lists(st.sampled_from([0x00, 0x01, 0x02, 0x7f, 0x80, 0xff, 0x0f, 0x10]), max_size=40).map(bytes)


@FUZZ
@given(st.sampled_from([(key, version) for key, r in versions.ADVERTISED.items()
                        for version in range(r.min_version, r.max_version + 1)]), LENGTHY)
def test_bodies_of_long_varints_and_lengths(api, body):
    decodes_or_wire_error(request_frame(*api, body))
