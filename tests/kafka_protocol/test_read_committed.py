"""A read_committed consumer's view of a fetch answer (kafka_protocol/read_committed.py
through client.fetcher.decode_fetched): aborted transactions' batches and
every control batch are dropped, the position moves past them, and nothing
at or past the last stable offset is returned."""
from __future__ import annotations

from client.consumer_types import TopicPartition
from client.fetcher import decode_fetched
from kafka_protocol.read_committed import AbortedTransactions
from kafka_protocol.control_records import encode_txn_marker
from kafka_protocol.records import Record, decode_batch, encode_batch
from kraftlog_api import broker_pb2 as bpb

TP = TopicPartition("out", 0)
A, B = 1000, 2000  # producer ids


def data(offset: int, value: bytes, pid: int = -1, count: int = 1) -> bytes:
    records = [Record(None, value + (b"%d" % i if count > 1 else b""), 1) for i in range(count)]
    return encode_batch(records, base_offset=offset, producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                        base_sequence=0 if pid >= 0 else -1, transactional=pid >= 0)


def marker(offset: int, pid: int, committed: bool) -> bytes:
    return encode_txn_marker(pid, 1, committed, 0, 1, base_offset=offset)


def answer(raw: bytes, hw: int, lso: int, aborted: list[tuple[int, int]] = ()) -> bpb.FetchResponse.PartitionData:
    return bpb.FetchResponse.PartitionData(
        records=raw, high_watermark=hw, last_stable_offset=lso,
        aborted_transactions=[bpb.AbortedTransaction(producer_id=p, first_offset=f) for p, f in aborted])


# offsets: 0 A data, 1 B data, 2 plain, 3 A data, 4 A ABORT, 5 B data, 6 B COMMIT, 7 A data (new txn), 8 A COMMIT
LOG = (data(0, b"a1", A) + data(1, b"b1", B) + data(2, b"plain") + data(3, b"a2", A) + marker(4, A, False)
       + data(5, b"b2", B) + marker(6, B, True) + data(7, b"a3", A) + marker(8, A, True))


def values(fetched) -> list[bytes]:
    return [r.value for r in fetched.records]


def test_read_committed_drops_the_aborted_transaction_and_every_marker() -> None:
    fetched = decode_fetched(TP, 0, answer(LOG, 9, 9, [(A, 0)]), read_committed=True)
    assert values(fetched) == [b"b1", b"plain", b"b2", b"a3"]
    assert fetched.next_offset == 9


def test_read_uncommitted_sees_both_transactions_but_no_marker() -> None:
    fetched = decode_fetched(TP, 0, answer(LOG, 9, 9, [(A, 0)]))
    assert values(fetched) == [b"a1", b"b1", b"plain", b"a2", b"b2", b"a3"]


def test_a_fetch_starting_inside_an_aborted_transaction() -> None:
    """The broker lists a transaction that began before the fetch offset; its later batches still go."""
    tail = data(3, b"a2", A) + marker(4, A, False) + data(5, b"b2", B) + marker(6, B, True)
    fetched = decode_fetched(TP, 3, answer(tail, 7, 7, [(A, 0)]), read_committed=True)
    assert values(fetched) == [b"b2"] and fetched.next_offset == 7


def test_nothing_at_or_past_the_last_stable_offset() -> None:
    """B's transaction is open at offset 1: the LSO stops everything from there, even the plain record."""
    raw = data(0, b"x") + data(1, b"b1", B) + data(2, b"plain")
    fetched = decode_fetched(TP, 0, answer(raw, 3, 1), read_committed=True)
    assert values(fetched) == [b"x"] and fetched.next_offset == 1
    assert values(decode_fetched(TP, 0, answer(raw, 3, 1))) == [b"x", b"b1", b"plain"]


def test_an_only_aborted_answer_still_moves_the_position() -> None:
    raw = data(10, b"a", A, count=3) + marker(13, A, False)
    fetched = decode_fetched(TP, 10, answer(raw, 14, 14, [(A, 10)]), read_committed=True)
    assert fetched.records == [] and fetched.next_offset == 14


def test_the_filter_waits_for_the_first_offset_and_ends_at_the_abort_marker() -> None:
    f = AbortedTransactions([(A, 5)])
    assert f.keep(decode_batch(data(2, b"early", A)))  # A's committed transaction before the aborted one
    assert not f.keep(decode_batch(data(5, b"aborted", A)))
    assert f.keep(decode_batch(data(6, b"other", B)))
    assert not f.keep(decode_batch(marker(7, A, False)))
    assert f.keep(decode_batch(data(8, b"next", A)))
    assert not f.keep(decode_batch(marker(9, A, True)))  # a COMMIT marker: dropped, as every control batch


def test_two_aborted_transactions_of_one_producer() -> None:
    raw = (data(0, b"x", A) + marker(1, A, False) + data(2, b"kept", A) + marker(3, A, True)
           + data(4, b"y", A) + marker(5, A, False))
    fetched = decode_fetched(TP, 0, answer(raw, 6, 6, [(A, 0), (A, 4)]), read_committed=True)
    assert values(fetched) == [b"kept"] and fetched.next_offset == 6
