"""kafka_protocol/wire: framing, headers, the version table and the codec,
against kio's own encodings of Kafka's messages (no broker here)."""
from __future__ import annotations

import datetime
import io
import struct

import pytest
from kio.index import load_request_schema, load_response_schema
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.api_versions.v4.request import ApiVersionsRequest as ApiVersionsRequestV4
from kio.schema.errors import ErrorCode
from kio.schema.metadata.v1.request import MetadataRequest as MetadataRequestV1
from kio.schema.metadata.v8.response import MetadataResponse as MetadataResponseV8
from kio.schema.produce.v3.response import ProduceResponse as ProduceResponseV3
from kio.serial import entity_writer

from kafka_protocol.wire import codec, framing, headers, versions
from kafka_protocol.wire.entities import build, millis
from kafka_protocol.wire.errors import UnsupportedRequest, WireError


def unframed(frame: bytes) -> bytes:
    (size,) = struct.unpack_from(">i", frame)
    assert size == len(frame) - 4
    return frame[4:]


# -- framing -------------------------------------------------------------------------------

def test_frame_size_reads_the_prefix():
    assert framing.frame_size(struct.pack(">i", 12), 100) == 12
    assert framing.frame_size(framing.size_prefix(100), 100) == 100


@pytest.mark.parametrize("size", [0, -1, -2**31, 101])
def test_frame_size_refuses_empty_negative_and_oversized_frames(size):
    with pytest.raises(WireError):
        framing.frame_size(struct.pack(">i", size), 100)


def test_frame_size_wants_four_bytes():
    with pytest.raises(WireError):
        framing.frame_size(b"\x00\x00\x01", 100)


def test_the_default_limit_is_kafkas():
    assert framing.DEFAULT_MAX_REQUEST_BYTES == 100 * 1024 * 1024


# -- headers -------------------------------------------------------------------------------

def test_request_header_v1_reads_the_client_id_and_a_null_one():
    frame = struct.pack(">hhih", 3, 1, 77, 3) + b"abc"
    header, size = headers.decode_request_header(frame, 1)
    assert header == headers.RequestHeader(3, 1, 77, "abc", 1) and size == len(frame)
    header, size = headers.decode_request_header(struct.pack(">hhih", 3, 1, 78, -1), 1)
    assert header.client_id is None and size == 10


def test_request_header_v2_skips_unknown_tagged_fields():
    # client id stays an int16-length string in v2; then 1 tagged field: tag 5, 2 bytes
    frame = struct.pack(">hhih", 18, 3, 9, 2) + b"id" + bytes([1, 5, 2]) + b"zz"
    header, size = headers.decode_request_header(frame, 2)
    assert header == headers.RequestHeader(18, 3, 9, "id", 2) and size == len(frame)


@pytest.mark.parametrize("frame", [
    struct.pack(">hhih", 18, 3, 9, -1),                             # no tagged-field count
    struct.pack(">hhih", 18, 3, 9, -1) + bytes([1, 5, 9]) + b"zz",  # a tagged field past the frame
    struct.pack(">hhih", 18, 3, 9, -1) + bytes([0x80]),             # a varint that never ends
    struct.pack(">hhih", 18, 3, 9, 2) + b"\xff\xfe" + bytes([0]),    # a client id that is not UTF-8
    struct.pack(">hhih", 18, 3, 9, -2) + bytes([0]),                # a negative client id size
])
def test_a_bad_v2_header_is_a_wire_error(frame):
    with pytest.raises(WireError):
        headers.decode_request_header(frame, 2)


def test_request_header_v0_has_no_client_id():
    header, size = headers.decode_request_header(struct.pack(">hhi", 7, 0, 5) + b"body", 0)
    assert header == headers.RequestHeader(7, 0, 5, None, 0) and size == 8


@pytest.mark.parametrize("frame", [b"", b"\x00\x03\x00", struct.pack(">hhih", 3, 1, 1, 20) + b"short"])
def test_a_short_header_is_a_wire_error(frame):
    with pytest.raises(WireError):
        headers.decode_request_header(frame, 1)


def test_response_headers():
    buffer = io.BytesIO()
    headers.encode_response_header(buffer, 0x01020304, 0)
    assert buffer.getvalue() == b"\x01\x02\x03\x04"
    buffer = io.BytesIO()
    headers.encode_response_header(buffer, 7, 1)
    assert buffer.getvalue() == b"\x00\x00\x00\x07\x00"  # no tagged fields


# -- the version table ---------------------------------------------------------------------

# The first flexible version of each served API that has one (Kafka's message definitions).
FLEXIBLE_FROM = {versions.API_VERSIONS: 3, versions.METADATA: 9, versions.PRODUCE: 9, versions.FETCH: 12,
                 versions.LIST_OFFSETS: 6, versions.INIT_PRODUCER_ID: 2,
                 # admin (kafka-python 3's schemas agree)
                 versions.CREATE_TOPICS: 5, versions.DELETE_TOPICS: 4, versions.CREATE_PARTITIONS: 2,
                 versions.DESCRIBE_CONFIGS: 4, versions.INCREMENTAL_ALTER_CONFIGS: 1, versions.DESCRIBE_CLUSTER: 0,
                 versions.OFFSET_FOR_LEADER_EPOCH: 4, versions.ELECT_LEADERS: 2, versions.DELETE_RECORDS: 2,
                 # transactions
                 versions.ADD_PARTITIONS_TO_TXN: 3, versions.ADD_OFFSETS_TO_TXN: 3,
                 versions.END_TXN: 3, versions.DESCRIBE_TRANSACTIONS: 0, versions.LIST_TRANSACTIONS: 0,
                 versions.DESCRIBE_PRODUCERS: 0,
                 # security admin
                 versions.DESCRIBE_ACLS: 2, versions.CREATE_ACLS: 2, versions.DELETE_ACLS: 2,
                 versions.DESCRIBE_USER_SCRAM_CREDENTIALS: 0, versions.ALTER_USER_SCRAM_CREDENTIALS: 0,
                 versions.DESCRIBE_CLIENT_QUOTAS: 1, versions.ALTER_CLIENT_QUOTAS: 1,
                 # reassignments: flexible from their first version
                 versions.ALTER_PARTITION_REASSIGNMENTS: 0, versions.LIST_PARTITION_REASSIGNMENTS: 0,
                 }
FLEXIBLE_FROM[versions.SASL_AUTHENTICATE] = 2   # SaslHandshake has no flexible version
FLEXIBLE_FROM.update({  # the group APIs (Kafka's message definitions)
    versions.FIND_COORDINATOR: 3, versions.OFFSET_COMMIT: 8, versions.OFFSET_FETCH: 6, versions.JOIN_GROUP: 6,
    versions.HEARTBEAT: 4, versions.LEAVE_GROUP: 4, versions.SYNC_GROUP: 4, versions.DESCRIBE_GROUPS: 5,
    versions.LIST_GROUPS: 3, versions.TXN_OFFSET_COMMIT: 3, versions.DELETE_GROUPS: 2,
    versions.CONSUMER_GROUP_HEARTBEAT: 0, versions.CONSUMER_GROUP_DESCRIBE: 0})


def test_the_table_starts_where_record_batch_v2_does_and_kio_has_every_version():
    assert versions.ADVERTISED[versions.PRODUCE].min_version == 3
    assert versions.ADVERTISED[versions.FETCH].min_version == 4
    assert versions.ADVERTISED[versions.API_VERSIONS] == versions.ApiRange("ApiVersions", 0, 4)
    for key, served in versions.ADVERTISED.items():
        for version in range(served.min_version, served.max_version + 1):
            request, response = load_request_schema(key, version), load_response_schema(key, version)
            assert request.__api_key__ == key and response.__version__ == version
            assert request.__flexible__ == (version >= FLEXIBLE_FROM.get(key, 99)), (served.name, version)
            assert request.__header_schema__.__version__ == (2 if request.__flexible__ else 1)


def test_is_served():
    assert versions.is_served(versions.METADATA, 12) and not versions.is_served(versions.METADATA, 13)
    assert not versions.is_served(versions.METADATA, 0) and not versions.is_served(999, 0)


@pytest.mark.parametrize("version", range(5))
def test_api_versions_answers_in_a_v0_header_and_lists_every_served_api(version):
    response = versions.api_versions_response(version)
    assert response.__header_schema__.__version__ == 0
    assert {(k.api_key, k.min_version, k.max_version) for k in response.api_keys} == {
        (key, r.min_version, r.max_version) for key, r in versions.ADVERTISED.items()}
    frame = unframed(codec.encode_response(41, response))
    correlation_id, decoded = codec.decode_response(frame, type(response))
    assert correlation_id == 41 and decoded == response


def test_api_versions_from_v3_carries_the_feature_levels():
    features = {"supported_features": [{"name": "metadata.version", "min_version": 1, "max_version": 1}],
                "finalized_features_epoch": 42,
                "finalized_features": [{"name": "metadata.version", "max_version_level": 1, "min_version_level": 1}]}
    for version in (3, 4):
        response = versions.api_versions_response(version, features=features)
        _, decoded = codec.decode_response(unframed(codec.encode_response(7, response)), type(response))
        assert [(f.name, f.min_version, f.max_version) for f in decoded.supported_features] == [("metadata.version", 1, 1)]
        assert decoded.finalized_features_epoch == 42
        assert [(f.name, f.max_version_level) for f in decoded.finalized_features] == [("metadata.version", 1)]
    assert versions.api_versions_response(2, features=features) == versions.api_versions_response(2)


def test_an_unknown_api_versions_version_gets_unsupported_version_in_v0():
    correlation_id, answer = codec.decode_response(unframed(codec.unsupported_api_versions(5)),
                                                   ApiVersionsResponseV0)
    assert correlation_id == 5 and answer.error_code == ErrorCode.unsupported_version
    assert any(k.api_key == 18 and k.max_version == 4 for k in answer.api_keys)


# -- the codec -----------------------------------------------------------------------------

def test_a_request_decodes_with_its_header():
    frame = unframed(codec.encode_request(ApiVersionsRequestV4(client_software_name="kafka-python",
                                                               client_software_version="3.0.12"), 12, "me"))
    request = codec.decode_request(frame)
    assert request.header == headers.RequestHeader(18, 4, 12, "me", 2)
    assert request.body.client_software_name == "kafka-python"


def test_a_frame_in_a_writable_buffer_reads_as_in_bytes():
    # kio's native reader refuses writable buffers; the codec's contract is any bytes-like frame
    frame = unframed(codec.encode_request(MetadataRequestV1(topics=()), 7, "c"))
    for held in (bytearray(frame), memoryview(bytearray(frame)), memoryview(frame)):
        assert codec.decode_request(held) == codec.decode_request(frame)
    response = build(ProduceResponseV3, {"throttle_time": 0, "responses": []})
    answer = unframed(codec.encode_response(3, response))
    assert codec.decode_response(bytearray(answer), ProduceResponseV3) == (3, response)


def test_a_null_topic_list_survives_metadata_v1():
    request = codec.decode_request(unframed(codec.encode_request(MetadataRequestV1(topics=None), 1)))
    assert request.body.topics is None and request.header.client_id is None


def test_unserved_apis_and_versions_name_their_correlation_id():
    for key, version in ((versions.METADATA, 0), (versions.METADATA, 13), (99, 0), (-1, 0)):
        frame = struct.pack(">hhih", key, version, 1234, -1)
        with pytest.raises(UnsupportedRequest) as caught:
            codec.decode_request(frame)
        assert (caught.value.api_key, caught.value.api_version, caught.value.correlation_id) == (key, version, 1234)


def test_a_truncated_or_padded_body_is_a_wire_error():
    frame = unframed(codec.encode_request(MetadataRequestV1(topics=()), 1))
    with pytest.raises(WireError):
        codec.decode_request(frame[:-1])
    with pytest.raises(WireError, match="unread"):
        codec.decode_request(frame + b"\x00")


def test_librdkafkas_extra_tag_buffer_after_alter_user_scram_credentials_is_accepted_and_nothing_more():
    body = build(codec.request_type(versions.ALTER_USER_SCRAM_CREDENTIALS, 0), {"deletions": (), "upsertions": ()})
    frame = unframed(codec.encode_request(body, 1))
    assert codec.decode_request(frame + b"\x00").body == body
    for padding in (b"\x01", b"\x00\x00"):
        with pytest.raises(WireError, match="unread"):
            codec.decode_request(frame + padding)


def test_librdkafkas_all_topics_metadata_with_its_unfinalized_count_placeholder_reads_as_kafka_reads_it():
    # Bytes librdkafka 2.16's Producer.list_topics() sent (Metadata v12, header v2, client id rdkafka):
    # the topic array's 4-byte count placeholder (zeros), then allow_auto_topic_creation=1,
    # include_topic_authorized_operations=0 and an empty tag buffer.
    frame = bytes.fromhex("0003000c00000003000772646b61666b61" "00" "00000000" "01" "00" "00")
    request = codec.decode_request(frame)
    assert request.body.topics is None  # all topics, as Kafka reads the placeholder
    assert (request.body.allow_auto_topic_creation, request.body.include_topic_authorized_operations) == (False, False)
    for padding in (b"\x02\x00\x00", b"\x01\x00\x00\x00", b"\x01\x00"):
        with pytest.raises(WireError, match="unread"):
            codec.decode_request(frame[:-3] + padding)


def test_response_headers_follow_the_response_version():
    response = build(ProduceResponseV3, {"throttle_time": 0, "responses": []})
    assert unframed(codec.encode_response(3, response))[:4] == b"\x00\x00\x00\x03"


# -- building messages from plain values ---------------------------------------------------

def test_build_drops_fields_the_version_lacks_and_converts_kafka_types():
    values = {"throttle_time": 25, "cluster_id": "c", "controller_id": 1, "cluster_authorized_operations": 5,
              "brokers": [{"node_id": 1, "host": "h", "port": 9092, "rack": None, "no_such_field": 1}],
              "topics": [{"error_code": 3, "name": "t", "partitions": []}]}
    v8 = build(MetadataResponseV8, values)
    assert v8.throttle_time == datetime.timedelta(milliseconds=25)
    assert v8.topics[0].error_code is ErrorCode.unknown_topic_or_partition
    assert v8.cluster_authorized_operations == 5
    v1 = build(load_response_schema(versions.METADATA, 1), values)
    assert not hasattr(v1, "throttle_time") and v1.brokers[0].host == "h"
    buffer = io.BytesIO()
    entity_writer(type(v1))(buffer, v1)  # it encodes


def test_build_turns_minus_one_timestamps_into_kios_null():
    partition = {"index": 0, "error_code": 0, "base_offset": 5, "log_start_offset": 0, "record_errors": [],
                 "error_message": None}
    kind = load_response_schema(versions.PRODUCE, 8)
    none = build(kind, {"throttle_time": 0, "responses": [
        {"name": "t", "partition_responses": [{**partition, "log_append_time": -1}]}]})
    assert none.responses[0].partition_responses[0].log_append_time is None
    some = build(kind, {"throttle_time": 0, "responses": [
        {"name": "t", "partition_responses": [{**partition, "log_append_time": 1_700_000_000_123}]}]})
    assert millis(some.responses[0].partition_responses[0].log_append_time) == 1_700_000_000_123


def test_an_error_code_kio_does_not_know_becomes_unknown_server_error():
    response = build(ProduceResponseV3, {"throttle_time": 0, "responses": [{"name": "t", "partition_responses": [
        {"index": 0, "error_code": 32000, "base_offset": -1}]}]})
    assert response.responses[0].partition_responses[0].error_code is ErrorCode.unknown_server_error


def test_millis():
    assert millis(datetime.timedelta(seconds=1.5)) == 1500 and millis(7) == 7
    assert millis(datetime.timedelta(milliseconds=-1)) == -1
    big = 2**62 // 1000 + 1  # past 2**53: a float of seconds would round it
    assert millis(datetime.timedelta(milliseconds=big)) == big
    assert millis(datetime.datetime.fromtimestamp(1_700_000_000.123, datetime.timezone.utc)) == 1_700_000_000_123
    assert millis(datetime.datetime(1969, 12, 31, 23, 59, 59, 999000, datetime.timezone.utc)) == -1
