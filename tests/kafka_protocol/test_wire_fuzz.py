"""The request decoder on hostile bytes: whatever a client sends, decoding
ends in the request or a WireError (the listener closes that connection),
never another exception."""
from __future__ import annotations

import struct

from hypothesis import HealthCheck, given, settings, strategies as st
from kio.schema.fetch.v11.request import FetchRequest
from kio.schema.produce.v8.request import ProduceRequest

from kafka_protocol.wire import codec, framing, versions
from kafka_protocol.wire.entities import build
from kafka_protocol.wire.errors import WireError

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

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
