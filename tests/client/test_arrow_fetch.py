"""poll_arrow's decode (client/arrow_fetch.py) against poll's
(client/fetcher.decode_fetched) on the same fetch answers: the same records,
the same next position and leader epochs, for plain, compressed and
transactional batches (markers, aborted transactions, read_committed), and
the same error for a batch that does not decode. Then the buffer's
drain_rows: slices, positions and a switch between the two kinds of poll."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from client.arrow_fetch import decode_fetched_arrow, join_rows
from client.consumer_types import TopicPartition
from client.fetcher import decode_fetched
from client.subscription_state import SubscriptionState
from kafka_protocol.compression import Codec
from kafka_protocol.control_records import encode_txn_marker
from kafka_protocol.errors import CorruptRecordError
from kafka_protocol.records import Record, encode_batch
from kraftlog_api import broker_pb2 as bpb

TP = TopicPartition("orders", 3)
CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]


def answer(raw: bytes, hw: int, lso: int = -1, aborted=()) -> bpb.FetchResponse.PartitionData:
    return bpb.FetchResponse.PartitionData(
        records=raw, high_watermark=hw, last_stable_offset=lso,
        aborted_transactions=[bpb.AbortedTransaction(producer_id=p, first_offset=f) for p, f in aborted])


@st.composite
def logs(draw):
    """A partition's log: plain and transactional batches of two producers,
    each transaction ended by a COMMIT or ABORT marker (some left open),
    any codec, some with headers, null keys and LogAppendTime; the
    transactions the broker would list as aborted."""
    raw, offset, aborted = b"", draw(st.integers(0, 50)), []
    open_txn: dict[int, int] = {}  # producer id -> first offset of its open transaction
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["plain", "txn", "end"]))
        pid = draw(st.sampled_from([1000, 2000]))
        if kind == "end" and pid in open_txn:
            committed = draw(st.booleans())
            if not committed:
                aborted.append((pid, open_txn[pid]))
            del open_txn[pid]
            raw += encode_txn_marker(pid, 1, committed, 0, 1, base_offset=offset,
                                     partition_leader_epoch=draw(st.integers(-1, 3)))
            offset += 1
            continue
        transactional = kind == "txn"
        if transactional:
            open_txn.setdefault(pid, offset)
        count = draw(st.integers(1, 6))
        records = [Record(draw(st.one_of(st.none(), st.binary(max_size=4))), draw(st.one_of(st.none(), st.binary(max_size=30))),
                          1_700_000_000_000 + i,
                          tuple((draw(st.text(max_size=3)), draw(st.one_of(st.none(), st.binary(max_size=3))))
                                for _ in range(draw(st.integers(0, 2)))))
                   for i in range(count)]
        raw += encode_batch(records, base_offset=offset, codec=draw(st.sampled_from(CODECS)),
                            log_append_time=draw(st.booleans()),
                            producer_id=pid if transactional else -1, producer_epoch=1 if transactional else -1,
                            base_sequence=0 if transactional else -1, transactional=transactional,
                            partition_leader_epoch=draw(st.integers(-1, 3)))
        offset += count
    return raw, offset, aborted


def rows_of_records(fetched, include_headers: bool) -> list[dict]:
    rows = []
    for r in fetched.records:
        row = {"key": r.key, "value": r.value, "topic": r.topic, "partition": r.partition, "offset": r.offset,
               "timestamp": r.timestamp, "timestampType": int(r.timestamp_type)}
        if include_headers:
            row["headers"] = [{"key": k, "value": v} for k, v in r.headers]
        rows.append(row)
    return rows


def rows_of_arrow(fetched) -> list[dict]:
    if fetched.rows is None:
        return []
    rows = fetched.rows.batch.to_pylist()
    for row in rows:  # microseconds since the epoch, UTC, as Spark has them
        row["timestamp"] = int(row["timestamp"].timestamp() * 1000)
    return rows


@settings(max_examples=10, deadline=None)  # make test time
@given(logs(), st.data())
def test_poll_arrow_decodes_what_poll_does(log, data) -> None:
    raw, end, aborted = log
    position = data.draw(st.integers(0, end))
    hw = data.draw(st.integers(0, end))
    lso = data.draw(st.integers(-1, hw))
    read_committed = data.draw(st.booleans())
    include_headers = data.draw(st.booleans())
    fetch = answer(raw, hw, lso, aborted)
    records = decode_fetched(TP, position, fetch, read_committed)
    arrow = decode_fetched_arrow(TP, position, fetch, read_committed, include_headers)
    assert rows_of_arrow(arrow) == rows_of_records(records, include_headers)
    assert arrow.next_offset == records.next_offset and arrow.position == records.position
    if records.records:
        assert arrow.rows.offsets.tolist() == [r.offset for r in records.records]
        assert [arrow.rows.epoch_at(r.offset) for r in records.records] == [r.leader_epoch for r in records.records]
        assert arrow.rows.batch.schema.names[-1] == ("headers" if include_headers else "timestampType")


def damaged(base_offset: int) -> bytes:
    batch = bytearray(encode_batch([Record(b"k", b"damaged", 1)], base_offset=base_offset))
    batch[-2] ^= 0x40
    return bytes(batch)


def test_a_damaged_batch_ends_the_rows_and_the_next_fetch_names_it() -> None:
    good = encode_batch([Record(b"k", b"a", 1), Record(b"k", b"b", 1)], base_offset=10)
    fetched = decode_fetched_arrow(TP, 10, answer(good + damaged(12), 13), False, False)
    assert fetched.rows.batch.column("value").to_pylist() == [b"a", b"b"] and fetched.next_offset == 12
    with pytest.raises(CorruptRecordError, match=r"orders-3 at offset 12: .*fails its CRC"):
        decode_fetched_arrow(TP, 12, answer(damaged(12), 13), False, False)


def buffered(state: SubscriptionState, fetched) -> None:
    with state.cond:
        state.assign([fetched.tp], awaiting_committed=False, reset_to=None)
        state.seek(fetched.tp, fetched.position)
        state.add_fetched(fetched)


def test_drain_rows_slices_and_moves_the_position() -> None:
    raw = (encode_batch([Record(None, b"v%d" % i, 5) for i in range(4)], base_offset=0, partition_leader_epoch=2)
           + encode_batch([Record(None, b"w%d" % i, 5) for i in range(3)], base_offset=4, partition_leader_epoch=3))
    state = SubscriptionState()
    buffered(state, decode_fetched_arrow(TP, 1, answer(raw, 7), False, False))
    first = state.drain_rows(4, False)
    assert [b.column("offset").to_pylist() for b in first] == [[1, 2, 3, 4]]
    assert state.assignment[TP].position == 5 and state.assignment[TP].leader_epoch == 3
    rest = join_rows(state.drain_rows(100, False), False)
    assert rest.column("value").to_pylist() == [b"w1", b"w2"] and state.assignment[TP].position == 7
    assert TP not in state.buffer and join_rows([], True).num_rows == 0


def test_a_chunk_of_the_other_kind_is_dropped_unreturned() -> None:
    """A switch between poll() and poll_arrow() refetches from the same position."""
    raw = encode_batch([Record(None, b"v", 5)], base_offset=0)
    state = SubscriptionState()
    buffered(state, decode_fetched_arrow(TP, 0, answer(raw, 1), False, True))
    assert state.drain(10) == [] and TP not in state.buffer and state.assignment[TP].position == 0
    buffered(state, decode_fetched(TP, 0, answer(raw, 1)))
    assert state.drain_rows(10, False) == [] and TP not in state.buffer and state.assignment[TP].position == 0
    buffered(state, decode_fetched_arrow(TP, 0, answer(raw, 1), False, True))
    assert state.drain_rows(10, False) == [] and state.assignment[TP].position == 0  # headers differ
