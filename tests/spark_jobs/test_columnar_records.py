"""The column-wise decoder against partition_log.records' record-at-a-time one."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from partition_log.compression import Codec
from partition_log.records import Record, encode_batch, iter_batches
from spark_jobs.columnar_records import decode_columns

maybe_bytes = st.one_of(st.none(), st.binary(max_size=300))
records = st.builds(Record, maybe_bytes, maybe_bytes, st.integers(0, 2**41),
                    st.lists(st.tuples(st.text(max_size=5), maybe_bytes), max_size=2).map(tuple),
                    offset=st.just(-1))  # builds() draws a named tuple's defaulted fields too
batches = st.lists(st.tuples(st.lists(records, min_size=1, max_size=30),
                             st.sampled_from([Codec.NONE, Codec.LZ4, Codec.GZIP]), st.booleans(), st.booleans()),
                   min_size=1, max_size=4)


def encode(spec) -> bytes:
    out, base = [], 0
    for recs, codec, log_append_time, control in spec:
        out.append(encode_batch(recs, base_offset=base, codec=codec, log_append_time=log_append_time,
                                control=control))
        base += len(recs)
    return b"".join(out)


@settings(max_examples=300, deadline=None)
@given(batches, st.integers(0, 40), st.integers(0, 130), st.booleans())
def test_columns_equal_the_record_decoder(spec, lo, span, need_headers) -> None:
    data = encode(spec)
    hi = lo + span
    expected = [(r, d.header.is_log_append_time) for d in iter_batches(data) if not d.header.is_control
                for r in d.records if lo <= r.offset < hi]
    columns = decode_columns(data, lo, hi, need_headers=need_headers)
    if columns is None:  # only when headers are wanted and some record in range's batches has them
        assert need_headers
        return
    assert columns.offsets.tolist() == [r.offset for r, _ in expected]
    assert columns.keys.to_pylist() == [r.key for r, _ in expected]
    assert columns.values.to_pylist() == [r.value for r, _ in expected]
    assert columns.timestamps_ms.tolist() == [r.timestamp for r, _ in expected]
    assert columns.log_append_time.tolist() == [t for _, t in expected]
    if need_headers:
        assert all(r.headers == () for r, _ in expected)


def test_a_record_whose_fields_overrun_its_length_is_left_to_the_exact_decoder() -> None:
    good = encode_batch([Record(b"k", b"value", 5)])
    # the value length byte (zig-zag 5 -> 10) made 6 (zig-zag 12): the fields now overrun the record;
    # the batch's CRC is recomputed, so only the record structure is wrong
    from partition_log.batch import CRC_OFFSET, compute_crc
    broken = bytearray(good)
    at = broken.index(b"value") - 1
    assert broken[at] == 10
    broken[at] = 12
    broken[CRC_OFFSET:CRC_OFFSET + 4] = compute_crc(broken, 0, len(broken)).to_bytes(4, "big")
    assert decode_columns(bytes(broken), 0, 10, need_headers=False) is None
