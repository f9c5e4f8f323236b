"""Hostile connections to a Kafka-protocol listener (one combined node, its
CLIENTS listener speaking Kafka's protocol; one cluster for the module):
a frame over socket.request.max.bytes, a negative size, a garbage header, an
API or version not served, a truncated body, an array saying 2**32
entries (which would have aborted the broker in kio's reader), half a frame, a slowloris and
an idle connection. Each closes its own connection and leaves the broker
serving everyone else; a request carrying tagged fields the broker does not
know (KIP-482) is answered, not closed. Fetch sessions (KIP-227): hostile
ids and epochs are refused, and a client whose incremental fetches never
advance (the same records answered each time) is held to its
consumer_byte_rate."""
from __future__ import annotations

import shutil
import struct
import time

import pytest
from kio.schema.errors import ErrorCode

from devcluster.local_cluster import LocalCluster
from devcluster.local_processes import wait_until
from kafka_protocol.varint import unsigned_varint_bytes as uvarint
from kafka_protocol.wire import codec, versions
from kraftlog_server.server_config import (CONNECTIONS_MAX_IDLE_MS, KAFKA_PROTOCOL_LISTENERS,
                                           SOCKET_REQUEST_MAX_BYTES)

from ..client.produce_consume import produce_values
from .kafka_wire import RawKafka, api_versions, kafka_address, request

MAX_REQUEST_BYTES = 1 << 20
IDLE_MS = 3000  # connections.max.idle.ms, short enough for a test to see it close an idle connection


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile-kafka")
    try:
        with LocalCluster(root, combined=1, client_listener="PLAINTEXT",
                          properties={KAFKA_PROTOCOL_LISTENERS: "CLIENTS",
                                      SOCKET_REQUEST_MAX_BYTES: MAX_REQUEST_BYTES,
                                      CONNECTIONS_MAX_IDLE_MS: IDLE_MS}).running() as c:
            yield c
    finally:
        shutil.rmtree(root, ignore_errors=True)


def framed(frame: bytes) -> bytes:
    return struct.pack(">i", len(frame)) + frame


# ApiVersions v3 whose body's tagged field says it is 2^31 bytes long
TAG_PAST_ITS_FRAME = (struct.pack(">hhih", versions.API_VERSIONS, 3, 1, -1) + bytes([0, 2]) + b"c"
                      + bytes([2]) + b"1" + bytes([1, 9]) + uvarint(2**31))


# ListGroups v4 whose states filter says 2^32 strings: kio would make room for
# them before reading one, and a failed allocation aborts the process
ARRAY_OF_2_POW_32 = struct.pack(">hhih", versions.LIST_GROUPS, 4, 1, -1) + b"\x00" + uvarint(2**32 + 1) + b"\x00" * 8


def still_serving(cluster: LocalCluster) -> None:
    with RawKafka(kafka_address(cluster)) as raw:
        assert raw.call(api_versions(), correlation_id=7).error_code == ErrorCode.none


@pytest.mark.parametrize("data", [
    struct.pack(">i", MAX_REQUEST_BYTES + 1) + b"\x00" * 64,        # over socket.request.max.bytes
    struct.pack(">i", -5),                                             # a negative size
    struct.pack(">i", 12) + b"\xff" * 12,                              # a garbage header
    struct.pack(">i", 10) + struct.pack(">hhih", 999, 0, 1, -1),       # an API nobody has
    struct.pack(">i", 10) + struct.pack(">hhih", versions.METADATA, 0, 1, -1),  # a version not served
    struct.pack(">i", 12) + struct.pack(">hhih", versions.METADATA, 1, 1, -1) + b"\x00\x00",  # a truncated body
    framed(TAG_PAST_ITS_FRAME),
    framed(ARRAY_OF_2_POW_32),
], ids=["oversized", "negative-size", "garbage-header", "unknown-api", "unserved-version", "truncated-body",
        "tagged-field-past-its-frame", "array-of-2**32-entries"])
def test_a_bad_frame_closes_only_its_connection(cluster, data):
    with RawKafka(kafka_address(cluster)) as bystander, RawKafka(kafka_address(cluster)) as raw:
        assert bystander.call(api_versions(), correlation_id=1).error_code == ErrorCode.none
        raw.send(data)
        assert raw.closed_by_broker()
        assert bystander.call(api_versions(), correlation_id=2).error_code == ErrorCode.none
    still_serving(cluster)


@pytest.mark.parametrize("sent", [b"\x00\x00", struct.pack(">i", 100) + b"\x00\x12\x00"])
def test_half_a_frame_then_close(cluster, sent):
    for _ in range(3):
        with RawKafka(kafka_address(cluster)) as raw:
            raw.send(sent)
    time.sleep(0.1)  # let the broker notice; the check below does not depend on it
    still_serving(cluster)


def test_a_slowloris_and_an_idle_connection_are_closed(cluster):
    with RawKafka(kafka_address(cluster)) as idle, RawKafka(kafka_address(cluster)) as slow:
        slow.send(struct.pack(">i", 100) + b"\x00")  # and never the rest
        # (a read that outlasts IO_TIMEOUT_S raises instead: the broker must be the one closing)
        assert slow.closed_by_broker() and idle.closed_by_broker()
    still_serving(cluster)


def test_tagged_fields_the_broker_does_not_know_are_skipped(cluster):
    """What a newer client may send (KIP-482): the request is answered and
    the connection stays open."""
    header = struct.pack(">hhih", versions.API_VERSIONS, 3, 31, 1) + b"c" + bytes([1, 6, 2]) + b"hd"
    body = bytes([4]) + b"new" + bytes([2]) + b"9" + bytes([2, 3, 0, 77, 1]) + b"x"  # tags 3 (empty) and 77
    with RawKafka(kafka_address(cluster)) as raw:
        raw.send(framed(header + body))
        correlation_id, answer = raw.answer(codec.response_type(api_versions(3)))
        assert correlation_id == 31 and answer.error_code == ErrorCode.none
        assert {k.api_key for k in answer.api_keys} == set(versions.ADVERTISED)
        assert raw.call(api_versions(), correlation_id=32).error_code == ErrorCode.none


def session_fetch(session_id: int, epoch: int, partitions: tuple[int, ...] = (0,),
                  forgotten: tuple[int, ...] = (), topic: str = "sessions") -> object:
    return request(versions.FETCH, 12, {
        "replica_id": -1, "max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": session_id, "session_epoch": epoch, "rack_id": "",
        "forgotten_topics_data": [{"topic": topic, "partitions": list(forgotten)}] if forgotten else [],
        "topics": [{"topic": topic, "partitions": [
            {"partition": p, "current_leader_epoch": -1, "fetch_offset": 0, "log_start_offset": -1,
             "partition_max_bytes": 1 << 20} for p in partitions]}] if partitions else []})


def test_hostile_fetch_session_ids_and_epochs_are_refused_and_keep_the_connection(cluster):
    """KIP-227 on the Kafka listener: ids never given, stale and future epochs,
    a replayed request, an enormous forgotten list; each answered with Kafka's code."""
    cluster.create_topic("sessions", 1, 1)
    cluster.wait_for_leaders("sessions")
    with RawKafka(kafka_address(cluster)) as raw:
        for sid, epoch in ((42, 3), (2**31 - 1, 2**31 - 1), (-2**31, 1), (0, 5)):
            assert raw.call(session_fetch(sid, epoch, ())).error_code == ErrorCode.fetch_session_id_not_found
        made = raw.call(session_fetch(0, 0))
        assert made.error_code == ErrorCode.none and made.session_id != 0
        sid = made.session_id
        for epoch in (2, 0x7FFFFFFF, -2):
            answer = raw.call(session_fetch(sid, epoch, ()))
            assert answer.error_code in (ErrorCode.invalid_fetch_session_epoch, ErrorCode.fetch_session_id_not_found)
        first = raw.call(session_fetch(sid, 1, ()))
        assert (first.error_code, first.session_id, first.responses) == (ErrorCode.none, sid, ())
        assert raw.call(session_fetch(sid, 1, ())).error_code == ErrorCode.invalid_fetch_session_epoch  # replayed
        forgot = raw.call(session_fetch(sid, 2, (), forgotten=tuple(range(50_000))))
        assert (forgot.error_code, forgot.session_id) == (ErrorCode.none, sid)
        closed = raw.call(session_fetch(sid, -1))
        assert (closed.error_code, closed.session_id) == (ErrorCode.none, 0)
        assert raw.call(session_fetch(sid, 3, ())).error_code == ErrorCode.fetch_session_id_not_found
    still_serving(cluster)


def client_quota(entity_name: str, rate: float | None) -> object:
    """AlterClientQuotas v1: consumer_byte_rate of one client id set, or removed (None)."""
    return request(versions.ALTER_CLIENT_QUOTAS, 1, {"validate_only": False, "entries": [{
        "entity": [{"entity_type": "client-id", "entity_name": entity_name}],
        "ops": [{"key": "consumer_byte_rate", "value": rate or 0.0, "remove": rate is None}]}]})


def quota_of(raw: RawKafka, entity_name: str) -> float | None:
    """DescribeClientQuotas v1 of one client id: its consumer_byte_rate, as the broker sees it."""
    answer = raw.call(request(versions.DESCRIBE_CLIENT_QUOTAS, 1, {"strict": True, "components": [
        {"entity_type": "client-id", "match_type": 0, "match": entity_name}]}))
    assert answer.error_code == ErrorCode.none
    rates = [v.value for e in answer.entries for v in e.values if v.key == "consumer_byte_rate"]
    return rates[0] if rates else None


def test_incremental_fetches_that_never_advance_are_held_to_the_consumer_quota(cluster):
    """An incremental fetch naming nothing after an answer with records gets
    those records again (as Kafka's leader does), so a client that never
    advances re-reads the same bytes on every fetch: its consumer_byte_rate
    holds it like any other reader (an answer says throttle_time_ms once it
    is over), and the broker goes on serving everyone else."""
    cluster.create_topic("flood", 1, 1)
    cluster.wait_for_leaders("flood")
    produce_values(cluster.bootstrap, "flood", [bytes(900)] * 2, acks=1, batch_records=2, partition=0)
    # 1,000 B/s: over Kafka's 10 s minimum window the 10 KB allowance is crossed after a few
    # ~2 KB answers, so the first held answer waits about a second (far below the socket's bound).
    with RawKafka(kafka_address(cluster), client_id="flooder") as raw:
        assert raw.call(client_quota("flooder", 1000.0)).entries[0].error_code == ErrorCode.none
        try:
            wait_until(lambda: quota_of(raw, "flooder") == 1000.0, 30, "the quota in the broker's metadata")
            made = raw.call(session_fetch(0, 0, topic="flood"))
            assert made.error_code == ErrorCode.none and made.session_id != 0
            [[first]] = [t.partitions for t in made.responses]
            assert first.records and len(first.records) > 1800
            held = None
            for epoch in range(1, 41):  # at most 40 x ~2 KB
                answer = raw.call(session_fetch(made.session_id, epoch, (), topic="flood"))
                assert answer.error_code == ErrorCode.none
                if answer.throttle_time.total_seconds() > 0:
                    held = epoch
                    break
                [[again]] = [t.partitions for t in answer.responses]  # the same records, named by the leader
                assert bytes(again.records) == bytes(first.records)
            assert held is not None, "40 incremental fetches of the same records were never throttled"
        finally:
            assert raw.call(client_quota("flooder", None)).entries[0].error_code == ErrorCode.none
    still_serving(cluster)
