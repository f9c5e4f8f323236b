"""Every decoder of untrusted bytes, fed random and damaged input.

Bytes from producers, followers and disks are hostile until checked. Each
decoder must either decode or raise a `KafkaError` (which a broker turns into
an error response): never another exception, never a hang, never a huge
allocation. Inputs are: random bytes; valid batches with bit flips,
truncations and bad lengths; and valid batches whose contents were damaged and
then sealed with a correct CRC, so that the decompressors and the record
parser behind the CRC check are reached too.
"""
from __future__ import annotations

import pickle
import struct
import subprocess
import sys
from pathlib import Path
from typing import Callable

import cramjam
import crc32c
import lz4.frame
import pytest
import zstandard
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kafka_protocol import compression
from kafka_protocol.batch import HEADER_SIZE, batch_extent, iter_headers, parse_header, validate_batch
from kafka_protocol.compression import Codec, compress
from partition_log.dump import LogBatch, scan_log, scan_offset_index, scan_time_index
from kafka_protocol.errors import CorruptRecordError, KafkaError
from kafka_protocol.records import Record, decode_batch, encode_batch, iter_batches
from kafka_protocol.varint import read_zigzag, write_zigzag, zigzag_size

# A deadline catches a decoder that loops; generous, so a slow machine is no flake.
FUZZ = settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
CODECS = list(Codec)
INT64_MIN, INT64_MAX = -2**63, 2**63 - 1
_ATTRIBUTES = struct.Struct(">h")
_LENGTH = struct.Struct(">i")

DECODERS: dict[str, Callable[[bytes], object]] = {
    "parse_header": parse_header,
    "validate_batch": validate_batch,
    "iter_headers": lambda data: list(iter_headers(data)),
    "iter_headers unvalidated": lambda data: list(iter_headers(data, validate=False)),
    "batch_extent": batch_extent,
    "decode_batch": decode_batch,
    "decode_batch without CRC": lambda data: decode_batch(data, verify_crc=False),
    "iter_batches": lambda data: list(iter_batches(data)),
    "iter_batches without CRC": lambda data: list(iter_batches(data, verify_crc=False)),
}


def decodes_or_refuses(data: bytes) -> None:
    """Run every decoder; anything but success or a KafkaError fails the test."""
    for decode in DECODERS.values():
        try:
            decode(data)
        except KafkaError:
            pass


def reencodes_if_it_decodes(data: bytes) -> None:
    """Whatever decodes must encode again (the log cleaner rewrites decoded
    records), and the decoded batch must hold the records it claims."""
    try:
        decoded = decode_batch(data)
    except KafkaError:
        return
    h = decoded.header
    assert len(decoded.records) == h.records_count
    assert all(h.base_offset <= r.offset <= h.last_offset for r in decoded.records)
    if decoded.records:
        try:
            encode_batch(decoded.records, base_offset=h.base_offset)
        except KafkaError:
            pass


def seal(data: bytearray) -> bytes:
    """Make batchLength and the CRC-32C right for whatever `data` now holds."""
    _LENGTH.pack_into(data, 8, len(data) - 12)
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


def with_payload(header_of: bytes, payload: bytes, codec: int) -> bytes:
    """A batch with `header_of`'s header, `payload` as its (compressed) body."""
    data = bytearray(header_of[:HEADER_SIZE]) + payload
    (attributes,) = _ATTRIBUTES.unpack_from(data, 21)
    _ATTRIBUTES.pack_into(data, 21, (attributes & ~0x07) | codec)
    return seal(data)


payloads = st.none() | st.binary(max_size=24) | st.builds(
    lambda chunk, times: chunk * times, st.binary(min_size=1, max_size=4), st.integers(20, 200))
# offset=-1 ("next offset") is spelled out: builds() would draw every field of
# a named tuple, defaults included.
records = st.lists(
    st.builds(Record, payloads, payloads, st.integers(0, 2**41),
              st.lists(st.tuples(st.text(max_size=4), payloads), max_size=2).map(tuple), offset=st.just(-1)),
    min_size=1, max_size=6)


@st.composite
def valid_batches(draw: st.DrawFn, codecs: list[Codec] = CODECS) -> bytes:
    return encode_batch(
        draw(records), base_offset=draw(st.integers(0, 2**40)), codec=draw(st.sampled_from(codecs)),
        log_append_time=draw(st.booleans()), transactional=draw(st.booleans()),
        producer_id=draw(st.integers(-1, 2**40)), base_sequence=draw(st.integers(-1, 2**31 - 1)),
    )


@FUZZ
@given(st.lists(valid_batches(), min_size=1, max_size=4))
def test_batch_extent_walks_as_the_headers_say(batches: list[bytes]) -> None:
    data = b"".join(batches)
    headers = [h for _, h in iter_headers(data)]
    assert batch_extent(data) == batch_extent(memoryview(data)) == (
        sum(h.records_count for h in headers), headers[-1].next_offset)
    for cut in (1, HEADER_SIZE, len(batches[-1]) - 1):  # a last batch cut short is refused, not skipped
        with pytest.raises(CorruptRecordError):
            batch_extent(data[:len(data) - cut])
    with pytest.raises(CorruptRecordError):
        batch_extent(b"")


# --- (a) random bytes --------------------------------------------------------

@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes(data: bytes) -> None:
    decodes_or_refuses(data)


@FUZZ
@given(prefix=valid_batches(), tail=st.binary(max_size=200))
def test_random_bytes_after_a_valid_batch(prefix: bytes, tail: bytes) -> None:
    decodes_or_refuses(prefix + tail)


# --- (b) damaged batches, CRC not fixed --------------------------------------

@FUZZ
@given(batch=valid_batches(), flips=st.lists(st.tuples(st.integers(0, 2**20), st.integers(0, 7)),
                                             min_size=1, max_size=4))
def test_bit_flips(batch: bytes, flips: list[tuple[int, int]]) -> None:
    data = bytearray(batch)
    for pos, bit in flips:
        data[pos % len(data)] ^= 1 << bit
    decodes_or_refuses(bytes(data))
    decodes_or_refuses(batch + bytes(data))


@FUZZ
@given(batch=valid_batches(), cut=st.integers(0, 2**20))
def test_truncations(batch: bytes, cut: int) -> None:
    decodes_or_refuses(batch[:cut % len(batch)])
    decodes_or_refuses(batch + batch[:cut % len(batch)])


@FUZZ
@given(batch=valid_batches(), length=st.integers(-2**31, 2**31 - 1) | st.integers(-70, 70))
def test_corrupt_batch_length(batch: bytes, length: int) -> None:
    data = bytearray(batch)
    # Small values land near the true length: off-by-a-few is the usual damage.
    true_length = len(batch) - 12
    _LENGTH.pack_into(data, 8, length if abs(length) > 70 else true_length + length)
    decodes_or_refuses(bytes(data))
    decodes_or_refuses(bytes(data) + batch)


# --- (c) damaged contents behind a correct CRC ------------------------------

mutations = st.lists(st.tuples(st.integers(0, 2**20), st.integers(0, 255)), min_size=1, max_size=6)


def mutate(data: bytes, changes: list[tuple[int, int]], cut: int | None) -> bytes:
    out = bytearray(data)
    for pos, value in changes:
        if out:
            out[pos % len(out)] = value
    return bytes(out if cut is None else out[:cut])


@FUZZ
@given(batch=valid_batches(), changes=mutations, cut=st.none() | st.integers(0, 400))
def test_damaged_compressed_body_with_correct_crc(batch: bytes, changes: list[tuple[int, int]],
                                                  cut: int | None) -> None:
    codec = parse_header(batch).codec
    data = with_payload(batch, mutate(batch[HEADER_SIZE:], changes, cut), codec)
    decodes_or_refuses(data)
    reencodes_if_it_decodes(data)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.label)
@FUZZ
@given(batch=valid_batches(codecs=[Codec.NONE]), changes=mutations, cut=st.none() | st.integers(0, 400))
def test_damaged_records_recompressed_with_correct_crc(codec: Codec, batch: bytes,
                                                       changes: list[tuple[int, int]], cut: int | None) -> None:
    # Damage the records themselves, then compress: the decompressor is
    # happy and the record parser meets the damage, behind every codec.
    body = mutate(batch[HEADER_SIZE:], changes, cut)
    data = with_payload(batch, compress(codec, body), codec)
    decodes_or_refuses(data)
    reencodes_if_it_decodes(data)


@FUZZ
@given(batch=valid_batches(), attributes=st.integers(-2**15, 2**15 - 1),
       last_offset_delta=st.integers(-2**31, 2**31 - 1) | st.integers(-2, 8),
       records_count=st.integers(-2**31, 2**31 - 1) | st.integers(-2, 8),
       base_timestamp=st.integers(INT64_MIN, INT64_MAX))
def test_damaged_header_fields_with_correct_crc(batch: bytes, attributes: int, last_offset_delta: int,
                                                records_count: int, base_timestamp: int) -> None:
    data = bytearray(batch)
    struct.pack_into(">hiq", data, 21, attributes, last_offset_delta, base_timestamp)
    _LENGTH.pack_into(data, 57, records_count)
    data = seal(data)
    decodes_or_refuses(data)
    reencodes_if_it_decodes(data)


def test_record_timestamp_beyond_int64_is_refused_or_reencodes() -> None:
    # baseTimestamp + timestampDelta are each a valid int64 but their sum is
    # not; Java would wrap, Python grows the int and re-encoding then fails.
    batch = bytearray(encode_batch([Record(b"k", b"v", 0), Record(b"k", b"v", 2**62)]))
    struct.pack_into(">q", batch, 27, 2**62 + 2**61)
    reencodes_if_it_decodes(seal(batch))


# --- the dump tool's scanners: never even a KafkaError -----------------------

@FUZZ
@given(parts=st.lists(valid_batches() | st.binary(max_size=80), min_size=1, max_size=4),
       flips=st.lists(st.integers(0, 2**20), max_size=3))
def test_dump_scan_never_raises_and_chains_positions(parts: list[bytes], flips: list[int]) -> None:
    data = bytearray(b"".join(parts))
    for pos in flips:
        if data:
            data[pos % len(data)] ^= 0x40
    items = list(scan_log(bytes(data), with_records=True))
    expected_position = 0
    for item in items:
        assert item.position == expected_position
        expected_position = item.position + item.header.size if isinstance(item, LogBatch) else len(data)
    assert expected_position == len(data)


@FUZZ
@given(st.binary(max_size=200), st.integers(0, 2**40))
def test_index_scans_never_raise(data: bytes, base_offset: int) -> None:
    list(scan_offset_index(data, base_offset))
    list(scan_time_index(data, base_offset))


# --- round trips -------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(batch_records=records, codec=st.sampled_from(CODECS), base_offset=st.integers(0, 2**40),
       delete_horizon=st.none() | st.integers(0, 2**41))
def test_encode_decode_round_trip(batch_records: list[Record], codec: Codec, base_offset: int,
                                  delete_horizon: int | None) -> None:
    raw = encode_batch(batch_records, base_offset=base_offset, codec=codec, delete_horizon_ms=delete_horizon)
    decoded = decode_batch(raw)
    expected = [Record(r.key, r.value, r.timestamp, r.headers, base_offset + i) for i, r in enumerate(batch_records)]
    assert decoded.records == expected
    assert decoded.header.codec == codec
    assert decoded.header.delete_horizon_ms == (-1 if delete_horizon is None else delete_horizon)


@settings(max_examples=300, deadline=None)
@given(st.integers(INT64_MIN, INT64_MAX))
@example(INT64_MIN)
@example(INT64_MAX)
@example(0)
@example(-1)
def test_varint_round_trip(value: int) -> None:
    out = bytearray(b"\x07")
    write_zigzag(out, value)
    assert len(out) == 1 + zigzag_size(value) <= 11
    assert read_zigzag(bytes(out) + b"\xff", 1) == (value, len(out))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=12))
@example(b"\xff" * 9 + b"\x7f")
def test_varint_from_any_bytes_is_an_int64_or_refused(data: bytes) -> None:
    # Kafka's varlong is an int64: a tenth byte's high bits fall off, as in Java.
    try:
        value, pos = read_zigzag(data, 0)
    except CorruptRecordError:
        return
    assert INT64_MIN <= value <= INT64_MAX
    assert pos <= min(len(data), 10)


def test_varint_longer_than_ten_bytes_is_refused() -> None:
    with pytest.raises(CorruptRecordError):
        read_zigzag(b"\x80" * 10 + b"\x01", 0)


# --- zip bombs and claimed sizes ---------------------------------------------

BOMB_LIMIT = 1 << 20


def _zstd_streamed(data: bytes) -> bytes:
    # A streamed frame does not state its content size up front.
    stream = zstandard.ZstdCompressor().compressobj()
    return stream.compress(data) + stream.flush()


def _bomb_payloads() -> dict[str, tuple[Codec, Callable[[bytes], bytes]]]:
    return {
        "gzip": (Codec.GZIP, lambda body: compress(Codec.GZIP, body)),
        "snappy-xerial": (Codec.SNAPPY, lambda body: compress(Codec.SNAPPY, body)),
        "snappy-raw": (Codec.SNAPPY, lambda body: bytes(cramjam.snappy.compress_raw(body))),
        "lz4": (Codec.LZ4, lambda body: compress(Codec.LZ4, body)),
        "zstd": (Codec.ZSTD, lambda body: compress(Codec.ZSTD, body)),
        "zstd-streamed": (Codec.ZSTD, _zstd_streamed),
    }


@pytest.mark.parametrize("name", list(_bomb_payloads()))
def test_batch_decompressing_past_the_limit_is_refused(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The real limit is 256 MiB; a smaller one keeps the test cheap while
    # going through the same checks. The batch is otherwise perfectly valid,
    # so only the size limit can refuse it.
    monkeypatch.setattr(compression, "MAX_DECOMPRESSED_BYTES", BOMB_LIMIT)
    codec, pack = _bomb_payloads()[name]
    plain = encode_batch([Record(None, bytes(2 * BOMB_LIMIT), 0)])
    bomb = with_payload(plain, pack(plain[HEADER_SIZE:]), codec)
    assert len(bomb) < BOMB_LIMIT // 10
    with pytest.raises(CorruptRecordError):
        decode_batch(bomb)


def _zstd_claiming(size: int) -> bytes:
    frame = bytearray(zstandard.ZstdCompressor(write_checksum=False).compress(b"a" * 100_000))
    # Single-segment frame with a 4-byte content size right after the header byte.
    assert frame[4] == 0xA0
    struct.pack_into("<I", frame, 5, size)
    return bytes(frame)


def _lz4_claiming(size: int) -> bytes:
    context = lz4.frame.create_compression_context()
    header = lz4.frame.compress_begin(context, source_size=size)
    return header + lz4.frame.compress_chunk(context, b"a" * 1000) + bytes(4)  # end mark


# Frames that claim an enormous decompressed size in a few bytes.
_SNAPPY_4GIB = b"\xff\xff\xff\xff\x0f" + bytes(16)
CLAIMED_SIZES = {
    "snappy-raw-4GiB": (Codec.SNAPPY, _SNAPPY_4GIB),
    "snappy-xerial-block-4GiB": (Codec.SNAPPY, b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, len(_SNAPPY_4GIB))
                                 + _SNAPPY_4GIB),
    "zstd-4GiB": (Codec.ZSTD, _zstd_claiming(2**32 - 1)),
    "lz4-1TiB": (Codec.LZ4, _lz4_claiming(2**40)),
}

_UNDER_MEMORY_LIMIT = """
import pickle, resource, sys
from kafka_protocol.errors import KafkaError
from kafka_protocol.records import decode_batch
vm = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmSize:"))
limit = vm + 512 * 1024 * 1024
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
for name, batch in pickle.load(sys.stdin.buffer):
    print(name, flush=True)
    try:
        decode_batch(batch)
    except KafkaError:
        continue
    sys.exit(f"{name} decoded")
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc, sets RLIMIT_AS")
def test_claimed_sizes_are_refused_within_bounded_memory() -> None:
    # In a child with at most 512 MiB of address space to spare: a decoder
    # that believes a claimed size and allocates it either fails inside the
    # codec library (a Rust allocation failure aborts the process) or would
    # take that memory from a broker.
    template = encode_batch([Record(None, b"v", 0)])
    batches = [(name, with_payload(template, frame, codec)) for name, (codec, frame) in CLAIMED_SIZES.items()]
    child = subprocess.run(
        [sys.executable, "-c", _UNDER_MEMORY_LIMIT], input=pickle.dumps(batches), capture_output=True,
        timeout=60, cwd=Path(__file__).resolve().parents[2],
    )
    reached = child.stdout.decode().split()
    assert child.returncode == 0, (
        f"child exited {child.returncode} while decoding {reached[-1:]}: {child.stderr.decode()[-500:]}"
    )
    assert reached == list(CLAIMED_SIZES)


def test_claimed_size_frames_are_what_they_claim() -> None:
    # The hostile frames above must really carry the claims, or the test
    # proves nothing.
    assert zstandard.frame_content_size(CLAIMED_SIZES["zstd-4GiB"][1]) == 2**32 - 1
    assert lz4.frame.get_frame_info(CLAIMED_SIZES["lz4-1TiB"][1])["content_size"] == 2**40
    assert cramjam.snappy.decompress_raw_len(_SNAPPY_4GIB) == 2**32 - 1
