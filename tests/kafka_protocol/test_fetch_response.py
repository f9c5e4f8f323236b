"""The hand-framed Fetch response (kafka_protocol/wire/fetch_response.py)
against kio's encoder (broker/kafka_api/fetch.py's kio_answer): for
arbitrary answers, every served version's frame is the same bytes kio
writes for the same answer, and kio's own reader reads it back to the
values put in (records byte for byte)."""
from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings, strategies as st
from kio.index import load_response_schema

from broker.kafka_api.fetch import kio_answer
from kafka_protocol.wire import codec, fetch_response, versions
from kafka_protocol.wire.fetch_response import FetchedPartitionAnswer, encode_fetch_body

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SERVED = range(versions.ADVERTISED[versions.FETCH].min_version, versions.ADVERTISED[versions.FETCH].max_version + 1)

I32 = st.integers(-2**31, 2**31 - 1)
I64 = st.integers(-2**63, 2**63 - 1)
# Known codes, and some no client could name (both sides send UNKNOWN_SERVER_ERROR for those).
ERROR_CODES = st.one_of(st.sampled_from([0, 1, 3, 6, 74, 75, 76]), st.integers(-2**15, 2**15 - 1))
PARTITIONS = st.builds(
    FetchedPartitionAnswer, I32, ERROR_CODES, I64, I64, I64,
    st.one_of(st.none(), st.lists(st.tuples(I64, I64), max_size=3)), st.just(-1),
    st.one_of(st.none(), st.binary(max_size=300)),
    st.one_of(st.none(), st.just((-1, -1)), st.tuples(I32, I32)))
TOPICS = st.lists(st.tuples(st.text(max_size=20), st.lists(PARTITIONS, max_size=4)), max_size=3)


def kio_frame(version: int, throttle: int, error_code: int, topics) -> bytes:
    """The same answer through kio's writer (the adapter's answer for a version not framed by hand)."""
    return codec.encode_response(7, kio_answer(load_response_schema(versions.FETCH, version), throttle, error_code,
                                               topics))


def fast_frame(version: int, throttle: int, error_code: int, topics) -> bytes:
    kind = load_response_schema(versions.FETCH, version)
    return codec.encode_response(7, codec.EncodedResponse(kind, encode_fetch_body(version, throttle, error_code, 0,
                                                                                  topics)))


@FUZZ
@given(st.sampled_from(SERVED), st.integers(0, 2**31 - 1), ERROR_CODES, TOPICS)
@example(12, 0, 0, [("t", [FetchedPartitionAnswer(0, 6, 10, 10, 0, None, -1, b"", (5, 3))])])
@example(12, 0, 0, [("t", [FetchedPartitionAnswer(0, 6, 10, 10, 0, None, -1, None, (-1, -1))])])
@example(4, 0, 0, [("ü", [FetchedPartitionAnswer(1, 0, 10, 10, 0, [(7, 3)], -1, b"\x00" * 61, None)])])
def test_same_bytes_as_kio(version, throttle, error_code, topics):
    fast = fast_frame(version, throttle, error_code, topics)
    assert fast == kio_frame(version, throttle, error_code, topics)
    # ...and kio reads it back: records and every partition where they were put.
    correlation_id, decoded = codec.decode_response(fast[4:], load_response_schema(versions.FETCH, version))
    assert correlation_id == 7
    read = [(t.topic, [(p.partition_index, p.records) for p in t.partitions]) for t in decoded.responses]
    assert read == [(name, [(p.partition_index, None if p.records is None else bytes(p.records)) for p in partitions])
                    for name, partitions in topics]


def test_records_are_passed_on_as_given_not_copied():
    records = memoryview(bytes(range(256)) * 4)
    parts = encode_fetch_body(12, 0, 0, 0, [("t", [FetchedPartitionAnswer(0, 0, 1, 1, 0, None, -1, records)])])
    assert any(part is records for part in parts)


def test_a_version_not_framed_here_is_our_bug():
    for version in (fetch_response.FIRST_VERSION - 1, fetch_response.LAST_VERSION + 1):
        try:
            encode_fetch_body(version, 0, 0, 0, [])
        except ValueError:
            continue
        raise AssertionError(f"v{version} was framed")
