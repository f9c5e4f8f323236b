"""KIP-482: a request's tagged fields the broker does not know are skipped,
in the header and at every level of the body (kafka_protocol/wire/
tagged_fields.py, behind codec.decode_request), where kio alone refuses
them. Frames made by hand, byte by byte, as a newer client would send them."""
from __future__ import annotations

import struct

import pytest

from kafka_protocol.varint import unsigned_varint_bytes as uvarint
from kafka_protocol.wire import codec, versions
from kafka_protocol.wire.entities import build
from kafka_protocol.wire.errors import WireError
from kafka_protocol.wire.tagged_fields import drop_unknown_tags


def tags(*fields: tuple[int, bytes]) -> bytes:
    """A tagged-field section: the count, then tag, size and bytes each."""
    return uvarint(len(fields)) + b"".join(uvarint(tag) + uvarint(len(data)) + data for tag, data in fields)


def compact(data: bytes) -> bytes:
    return uvarint(len(data) + 1) + data


def header_v2(api_key: int, version: int, correlation_id: int, client_id: bytes, *tagged: tuple[int, bytes]) -> bytes:
    return struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id + tags(*tagged)


BATCH = bytes(range(70))
PRODUCE_V9 = {"transactional_id": None, "acks": -1, "timeout": 1500, "topic_data": [
    {"name": "orders", "partition_data": [{"index": 2, "records": BATCH}]}]}


def test_produce_with_unknown_tags_at_every_level_reads_as_without_them():
    frame = (header_v2(versions.PRODUCE, 9, 77, b"newer-client", (3, b"hi"))
             + b"\x00"                                   # transactional_id: null compact string
             + struct.pack(">hi", -1, 1500)              # acks, timeout
             + uvarint(2) + compact(b"orders")           # one topic
             + uvarint(2) + struct.pack(">i", 2) + compact(BATCH)  # one partition
             + tags((100, b"abc"))                       # the partition's tags
             + tags((0, b"\x01"), (200, b""))            # the topic's (200 takes a two-byte varint)
             + tags((5, b"zzzz"), (2**20, b"\xff" * 3)))  # the request's
    request = codec.decode_request(frame)
    plain = codec.decode_request(codec.encode_request(build(codec.request_type(versions.PRODUCE, 9), PRODUCE_V9),
                                                      77, "newer-client")[4:])
    assert request == plain
    assert bytes(request.body.topic_data[0].partition_data[0].records) == BATCH


def fetch_v12() -> object:
    return build(codec.request_type(versions.FETCH, 12), {
        "replica_id": -1, "max_wait": 500, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [], "cluster_id": None,
        "topics": [{"topic": "t", "partitions": [{"partition": 0, "current_leader_epoch": -1, "fetch_offset": 9,
                                                  "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]})


def test_a_known_tag_is_kept_beside_unknown_ones():
    fetch = fetch_v12()
    encoded = codec.encode_request(fetch, 5, "c")[4:]
    assert encoded[-1] == 0  # no tags: cluster_id (tag 0) is null
    frame = encoded[:-1] + tags((0, compact(b"the-cluster")), (1, b"?"), (7, b""))
    request = codec.decode_request(frame)
    assert request.body.cluster_id == "the-cluster" and request.body.topics == fetch.topics


def test_a_known_tag_that_is_not_the_size_it_says_is_a_wire_error():
    encoded = codec.encode_request(fetch_v12(), 5, "c")[4:]
    for cluster_id in (b"\x05ab", b"\x02abc"):  # a string past its tag's size; one short of it
        with pytest.raises(WireError):
            codec.decode_request(encoded[:-1] + tags((0, cluster_id), (3, b"")))


def test_api_versions_v3_with_an_unknown_tag_in_header_and_body():
    body = compact(b"future-client") + compact(b"9.9") + tags((42, b"whatever"))
    request = codec.decode_request(header_v2(versions.API_VERSIONS, 3, 1, b"x", (9, b"")) + body)
    assert (request.header.client_id, request.body.client_software_name) == ("x", "future-client")


@pytest.mark.parametrize("section", [
    tags((7, b"abc"))[:-1],                    # a tag shorter than it says
    uvarint(2) + uvarint(7) + uvarint(0),      # two tags announced, one there
    uvarint(1) + uvarint(7) + b"\x80",         # a size that never ends
])
def test_a_bad_tagged_section_is_a_wire_error(section):
    body = compact(b"c") + compact(b"1") + section
    with pytest.raises(WireError):
        codec.decode_request(header_v2(versions.API_VERSIONS, 3, 1, b"x") + body)


def test_without_unknown_tags_the_bytes_are_unchanged():
    encoded = codec.encode_request(build(codec.request_type(versions.PRODUCE, 9), PRODUCE_V9), 1, "c")[4:]
    offset = len(header_v2(versions.PRODUCE, 9, 1, b"c"))
    assert drop_unknown_tags(codec.request_type(versions.PRODUCE, 9), encoded, offset) == encoded[offset:]


def test_a_non_flexible_request_with_trailing_bytes_is_still_refused():
    frame = codec.encode_request(build(codec.request_type(versions.PRODUCE, 8), PRODUCE_V9), 1, "c")[4:]
    with pytest.raises(WireError, match="unread"):
        codec.decode_request(frame + tags((5, b"x")))
