"""`kraftlog dump-log` run as a user runs it: the installed console script,
on segment files written byte by byte (our batches and kafka-python's)."""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from kraftlog import cli
from kraftlog.commands import dump_log
from kafka_protocol.batch import BatchHeader, iter_headers, parse_header, stamp
from kafka_protocol.compression import Codec
from kafka_protocol.errors import CorruptRecordError
from kafka_protocol.records import Record, encode_batch
from partition_log.producer_snapshot import SnapshotEntry, encode_snapshot

KRAFTLOG = shutil.which("kraftlog", path=str(Path(sys.executable).parent))
SEGMENT = "00000000000000000000.log"
T0 = 1_700_000_000_000
BINARY = b"\xff\xfe\x00binary"
BINARY_B64 = base64.b64encode(BINARY).decode()
LINE_BREAK_B64 = base64.b64encode(b"line\nbreak").decode()


@dataclass
class Segment:
    """A .log file's bytes and, per batch, what went into it."""

    data: bytes
    batches: list[tuple[int, BatchHeader, list[Record]]]  # position, header, records


def kafka_python_batch(records: list[Record], codec: Codec, base_offset: int) -> bytes:
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=int(codec), is_transactional=False,
                                        producer_id=4242, producer_epoch=3, base_sequence=2**31 - 2,
                                        batch_size=1 << 20)
    for i, r in enumerate(records):
        builder.append(i, r.timestamp, r.key, r.value, list(r.headers))
    raw = bytearray(builder.build())
    stamp(raw, 0, base_offset, 7)  # what a broker does on append; the CRC stays valid
    return bytes(raw)


def build_segment() -> Segment:
    """Five batches, five codecs, two writers: null, empty, binary and text
    keys and values, headers, producer state, LogAppendTime."""
    text = [Record(b"user-%d" % i, b"clicked %d " % i * 20, T0 + i, (("trace", b"t%d" % i),)) for i in range(10)]
    odd = [Record(None, BINARY, T0 + 20, (("bin", b"\x80"), ("none", None))),
           Record(b"", None, T0 + 15), Record("ключ".encode(), "значение".encode(), T0 + 30)]
    theirs = [Record(b"k%d" % i, b"payload %d" % i * 30, T0 + 40 + i) for i in range(4)]
    chunks = [
        ("ours", Codec.ZSTD, text, {}),
        ("ours", Codec.GZIP, odd, {}),
        ("kafka-python", Codec.SNAPPY, theirs, {}),
        ("kafka-python", Codec.LZ4, theirs[:2], {}),
        ("ours", Codec.NONE, [Record(b"late", b"line\nbreak", T0 + 99)], {"log_append_time": True}),
    ]
    data, batches, offset = b"", [], 0
    for writer, codec, records, options in chunks:
        placed = [Record(r.key, r.value, r.timestamp, r.headers, offset + i) for i, r in enumerate(records)]
        if writer == "ours":
            raw = encode_batch(placed, base_offset=offset, codec=codec, partition_leader_epoch=7, **options)
        else:
            raw = kafka_python_batch(records, codec, offset)
        if options.get("log_append_time"):
            placed = [Record(r.key, r.value, T0 + 99, r.headers, r.offset) for r in placed]
        batches.append((len(data), parse_header(raw), placed))
        data += raw
        offset += len(records)
    return Segment(data, batches)


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    assert KRAFTLOG, f"the kraftlog console script is not installed next to {sys.executable}"
    return subprocess.run([KRAFTLOG, "dump-log", *map(str, args)], capture_output=True, text=True, timeout=60)


def fields(line: str) -> dict[str, str]:
    """`name: value` pairs of one batch line (values have no spaces)."""
    return dict(re.findall(r"(\w+): (\S+)", line))


def json_lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def as_json(data: bytes | None) -> str | dict[str, str] | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode()}


@pytest.fixture(scope="module")
def segment() -> Segment:
    return build_segment()


@pytest.fixture
def write(tmp_path: Path):
    def write_file(data: bytes, name: str = SEGMENT) -> Path:
        path = tmp_path / "orders-0" / name
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        return path
    return write_file


def test_text_lists_every_batch_as_kafka_does(segment: Segment, write) -> None:
    path = write(segment.data)
    result = run(path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"Dumping {path}"
    assert len(lines) == 1 + len(segment.batches)
    for line, (position, h, _) in zip(lines[1:], segment.batches):
        got = fields(line)
        time_type = "LogAppendTime" if h.is_log_append_time else "CreateTime"
        assert got == {
            "baseOffset": str(h.base_offset), "lastOffset": str(h.last_offset), "count": str(h.records_count),
            "baseSequence": str(h.base_sequence), "lastSequence": str(h.last_sequence),
            "producerId": str(h.producer_id), "producerEpoch": str(h.producer_epoch),
            "partitionLeaderEpoch": "7", "isTransactional": "false", "isControl": "false",
            "position": str(position), time_type: str(h.max_timestamp), "size": str(h.size), "magic": "2",
            "compresscodec": Codec(h.codec).label, "crc": str(h.crc), "isvalid": "true",
        }
    assert [fields(line)["compresscodec"] for line in lines[1:]] == ["zstd", "gzip", "snappy", "lz4", "none"]


def test_text_with_data_log_prints_each_record(segment: Segment, write) -> None:
    result = run(write(segment.data), "--print-data-log")
    assert result.returncode == 0, result.stderr
    record_lines = [line for line in result.stdout.splitlines() if line.startswith("| ")]
    records = [r for _, _, batch in segment.batches for r in batch]
    assert len(record_lines) == len(records)
    by_offset = {int(fields(line)["offset"]): line for line in record_lines}

    assert by_offset[0] == (f"| offset: 0 CreateTime: {T0} keySize: 6 valueSize: 200 sequence: -1 "
                            f"headerKeys: [trace] key: user-0 payload: {'clicked 0 ' * 20}")
    # Null shows as null, bytes that are not UTF-8 as base64.
    assert by_offset[10].endswith(f"headerKeys: [bin,none] key: null payload: base64:{BINARY_B64}")
    assert f"keySize: -1 valueSize: {len(BINARY)} " in by_offset[10]
    assert by_offset[11].endswith("keySize: 0 valueSize: -1 sequence: -1 headerKeys: [] key:  payload: null")
    assert by_offset[12].endswith("key: ключ payload: значение")
    # kafka-python's batch carries producer state; sequences wrap past int32 max.
    assert [fields(by_offset[o])["sequence"] for o in (13, 14, 15, 16)] == [str(2**31 - 2), str(2**31 - 1), "0", "1"]
    # A newline would break the one-line-per-record layout, so it is base64 too.
    assert by_offset[19] == (f"| offset: 19 LogAppendTime: {T0 + 99} keySize: 4 valueSize: 10 sequence: -1 "
                             f"headerKeys: [] key: late payload: base64:{LINE_BREAK_B64}")


def test_json_batches_and_records(segment: Segment, write) -> None:
    path = write(segment.data)
    result = run(path, "--json", "--print-data-log")
    assert result.returncode == 0, result.stderr
    objects = json_lines(result.stdout)
    assert len(objects) == len(segment.batches)
    for obj, (position, h, records) in zip(objects, segment.batches):
        assert obj["file"] == str(path)
        assert {k: obj[k] for k in ("baseOffset", "lastOffset", "count", "position", "compression", "crc",
                                    "isValid")} == {
            "baseOffset": h.base_offset, "lastOffset": h.last_offset, "count": h.records_count,
            "position": position, "compression": Codec(h.codec).label, "crc": h.crc, "isValid": True,
        }
        assert obj["records"] == [
            {"offset": r.offset, "timestamp": r.timestamp, "key": as_json(r.key), "value": as_json(r.value),
             "headers": [{"key": k, "value": as_json(v)} for k, v in r.headers]}
            for r in records
        ]
    odd = objects[1]["records"]
    assert odd[0]["key"] is None and odd[0]["value"] == {"base64": BINARY_B64}
    assert odd[0]["headers"] == [{"key": "bin", "value": {"base64": "gA=="}}, {"key": "none", "value": None}]
    assert odd[1]["key"] == "" and odd[1]["value"] is None


def test_json_without_data_log_has_no_records(segment: Segment, write) -> None:
    objects = json_lines(run(write(segment.data), "--json").stdout)
    assert all("records" not in obj for obj in objects)
    assert [obj["position"] for obj in objects] == [pos for pos, _ in iter_headers(segment.data)]


def test_a_flipped_byte_marks_that_batch_invalid_and_the_rest_are_listed(segment: Segment, write) -> None:
    damaged = bytearray(segment.data)
    middle_position, middle, _ = segment.batches[2]
    damaged[middle_position + middle.size // 2] ^= 0x01
    path = write(bytes(damaged))

    text = run(path)
    assert text.returncode == 1
    lines = text.stdout.splitlines()[1:]
    assert [fields(line)["isvalid"] for line in lines] == ["true", "true", "false", "true", "true"]
    assert "fails its CRC" in lines[2]

    as_json_lines = run(path, "--json", "--print-data-log")
    assert (as_json_lines.returncode, as_json_lines.stderr) == (1, "")
    objects = json_lines(as_json_lines.stdout)
    assert [obj["isValid"] for obj in objects] == [True, True, False, True, True]
    assert [obj["baseOffset"] for obj in objects] == [h.base_offset for _, h, _ in segment.batches]
    assert "problem" in objects[2] and all("problem" not in obj for i, obj in enumerate(objects) if i != 2)


def test_a_truncated_tail_says_where_and_why(segment: Segment, write) -> None:
    last_position, last, _ = segment.batches[-1]
    path = write(segment.data[:-5])
    present = last.size - 5

    text = run(path)
    assert text.returncode == 1
    assert text.stdout.splitlines()[-1] == (
        f"error: truncated batch at position {last_position}: batchLength says {last.size} bytes, {present} present"
    )
    assert len(text.stdout.splitlines()) == 1 + len(segment.batches)  # header line, 4 batches, the error

    objects = json_lines(run(path, "--json").stdout)
    assert len(objects) == len(segment.batches)
    assert objects[-1]["position"] == last_position and "truncated batch" in objects[-1]["error"]


def test_a_tail_too_short_for_a_length_is_truncation_too(segment: Segment, write) -> None:
    result = run(write(segment.data + b"\x00\x00\x00\x01\x02"))
    assert result.returncode == 1
    assert result.stdout.splitlines()[-1].startswith(f"error: truncated batch at position {len(segment.data)}: 5 bytes")


def test_an_impossible_length_stops_the_scan(segment: Segment, write) -> None:
    damaged = bytearray(segment.data)
    position = segment.batches[1][0]
    struct.pack_into(">i", damaged, position + 8, 3)
    result = run(write(bytes(damaged)))
    assert result.returncode == 1
    assert len(result.stdout.splitlines()) == 3
    assert result.stdout.splitlines()[-1] == (
        f"error: bad batch length at position {position}: batchLength 3 is below the 49 bytes of a v2 batch header"
    )


def test_a_zero_filled_tail_is_reported_as_such(segment: Segment, write) -> None:
    path = write(segment.data + bytes(4096))
    text = run(path)
    assert text.returncode == 1
    assert text.stdout.splitlines()[-1] == f"error: zero-filled tail at position {len(segment.data)}: 4096 bytes of zeros"
    assert json_lines(run(path, "--json").stdout)[-1] == {
        "file": str(path), "error": f"zero-filled tail at position {len(segment.data)}: 4096 bytes of zeros",
        "position": len(segment.data),
    }


def test_an_empty_segment_is_fine(write) -> None:
    path = write(b"")
    result = run(path)
    assert (result.returncode, result.stdout, result.stderr) == (0, f"Dumping {path}\n", "")


def test_unreadable_files_get_one_line_each_and_the_rest_is_still_dumped(segment: Segment, write,
                                                                        tmp_path: Path) -> None:
    good = write(segment.data)
    missing = tmp_path / "orders-0" / "00000000000000000999.log"
    directory = tmp_path / "dir.log"
    directory.mkdir()
    result = run(missing, good, directory)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"kraftlog dump-log: cannot read {missing}: No such file or directory",
        f"kraftlog dump-log: cannot read {directory}: Is a directory",
    ]
    assert "Traceback" not in result.stderr
    assert len(result.stdout.splitlines()) == 1 + len(segment.batches)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_permission_denied_is_one_line(segment: Segment, write) -> None:
    path = write(segment.data)
    path.chmod(0)
    result = run(path)
    assert result.returncode == 1
    assert result.stderr == f"kraftlog dump-log: cannot read {path}: Permission denied\n"


def test_not_a_segment_file(write) -> None:
    result = run(write(b"x", "leader-epoch-checkpoint"))
    assert result.returncode == 1
    assert "not a segment file" in result.stderr and "Traceback" not in result.stderr


def offset_index(entries: list[tuple[int, int]], preallocated: int) -> bytes:
    return b"".join(struct.pack(">ii", rel, pos) for rel, pos in entries) + bytes(preallocated)


def time_index(entries: list[tuple[int, int]], preallocated: int) -> bytes:
    return b"".join(struct.pack(">qi", ts, rel) for ts, rel in entries) + bytes(preallocated)


def test_offset_index_entries_stop_at_the_preallocated_tail(write) -> None:
    path = write(offset_index([(3, 4169), (17, 8420), (40, 12700)], preallocated=8 * 500),
                 "00000000000000001000.index")
    result = run(path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"Dumping {path}",
        "offset: 1003 position: 4169",
        "offset: 1017 position: 8420",
        "offset: 1040 position: 12700",
        "note: zero-filled tail at position 24: 4000 bytes of zeros",
    ]
    assert json_lines(run(path, "--json").stdout)[:3] == [
        {"file": str(path), "offset": 1003, "position": 4169},
        {"file": str(path), "offset": 1017, "position": 8420},
        {"file": str(path), "offset": 1040, "position": 12700},
    ]


def test_time_index_entries_stop_at_the_preallocated_tail(write) -> None:
    path = write(time_index([(T0 + 5, 3), (T0 + 90, 17)], preallocated=12 * 100), "00000000000000001000.timeindex")
    result = run(path, "--json")
    assert result.returncode == 0, result.stderr
    assert json_lines(result.stdout) == [
        {"file": str(path), "timestamp": T0 + 5, "offset": 1003},
        {"file": str(path), "timestamp": T0 + 90, "offset": 1017},
        {"file": str(path), "note": "zero-filled tail at position 24: 1200 bytes of zeros", "position": 24},
    ]


def test_index_entries_out_of_order_are_reported(write) -> None:
    index = write(offset_index([(3, 4169), (2, 8420), (5, 8000)], preallocated=16), "00000000000000000000.index")
    times = write(time_index([(T0 + 5, 3), (T0 + 5, 4)], preallocated=0), "00000000000000000000.timeindex")
    result = run(index, times)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"Dumping {index}",
        "offset: 3 position: 4169",
        "offset: 2 position: 8420 problem: offset 2 does not follow the previous entry's 3",
        "offset: 5 position: 8000 problem: position 8000 does not follow the previous entry's 8420",
        "note: zero-filled tail at position 24: 16 bytes of zeros",
        f"Dumping {times}",
        f"timestamp: {T0 + 5} offset: 3",
        f"timestamp: {T0 + 5} offset: 4 problem: timestamp {T0 + 5} does not follow the previous entry's {T0 + 5}",
    ]


def test_an_index_torn_mid_entry(write) -> None:
    path = write(offset_index([(3, 4169)], preallocated=0) + b"\x00\x00\x00\x07\x00", "00000000000000000000.index")
    result = run(path, "--json")
    assert result.returncode == 1
    assert json_lines(result.stdout)[-1] == {"file": str(path), "error": "truncated entry at position 8: 5 of 8 bytes",
                                             "position": 8}


def test_python_dash_m_runs_the_same_cli(segment: Segment, write) -> None:
    path = write(segment.data)
    result = subprocess.run([sys.executable, "-m", "kraftlog", "dump-log", "--json", str(path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == run(path, "--json").stdout


@pytest.mark.parametrize("error, line", [
    (CorruptRecordError("batch at byte 0 fails its CRC"), "kraftlog: error: CORRUPT_MESSAGE: batch at byte 0 fails its CRC"),
    (PermissionError(13, "Permission denied", "/data/orders-0"), "kraftlog: error: /data/orders-0: Permission denied"),
])
def test_main_turns_an_escaping_user_error_into_one_line(error: Exception, line: str, write, monkeypatch,
                                                         capsys) -> None:
    # Any command's KafkaError or OSError reaches `main`; dump-log stands in
    # for them here, made to fail where it scans.
    def failing_scan(*args, **kwargs):
        raise error
    monkeypatch.setattr(dump_log, "scan_log", failing_scan)
    monkeypatch.setattr(sys, "argv", ["kraftlog", "dump-log", str(write(b""))])
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    assert exit_info.value.code == 1
    assert capsys.readouterr().err == line + "\n"


def txn_entries(*entries: tuple[int, int, int, int, int]) -> bytes:
    return b"".join(struct.pack(">hqqqq", *e) for e in entries)


def test_txn_index_entries_as_kafka_prints_them(write) -> None:
    path = write(txn_entries((0, 7, 1000, 1006, 1001), (0, 9, 1002, 1010, 1011), (0, 3, 1012, 1008, 1013))
                 + b"\x00\x01", "00000000000000001000.txnindex")
    result = run(path)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"Dumping {path}",
        "version: 0 producerId: 7 firstOffset: 1000 lastOffset: 1006 lastStableOffset: 1001",
        "version: 0 producerId: 9 firstOffset: 1002 lastOffset: 1010 lastStableOffset: 1011",
        "version: 0 producerId: 3 firstOffset: 1012 lastOffset: 1008 lastStableOffset: 1013 problem: "
        "first offset 1012 is after the last offset 1008",
        "error: truncated entry at position 102: 2 of 34 bytes",
    ]
    assert json_lines(run(path, "--json").stdout)[0] == {
        "file": str(path), "version": 0, "producerId": 7, "firstOffset": 1000, "lastOffset": 1006,
        "lastStableOffset": 1001}


def test_producer_snapshot_as_kafka_prints_it(write) -> None:
    data = encode_snapshot([SnapshotEntry(1000, 3, 41, 77, 9, T0, 6, 70), SnapshotEntry(5, 0, 2, 80, 4, T0 + 1),
                            SnapshotEntry(6, 1, -1, -1, 0, T0 + 2)])
    path = write(data, "00000000000000000081.snapshot")
    result = run(path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"Dumping {path}",
        f"producerId: 1000 producerEpoch: 3 coordinatorEpoch: 6 currentTxnFirstOffset: 70 lastTimestamp: {T0} "
        f"firstSequence: 32 lastSequence: 41 lastOffset: 77 offsetDelta: 9 timestamp: {T0}",
        f"producerId: 5 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: -1 lastTimestamp: {T0 + 1} "
        f"firstSequence: {2**31 - 2} lastSequence: 2 lastOffset: 80 offsetDelta: 4 timestamp: {T0 + 1}",
        f"producerId: 6 producerEpoch: 1 coordinatorEpoch: -1 currentTxnFirstOffset: -1 lastTimestamp: {T0 + 2}",
    ]
    damaged = write(data[:-1] + bytes([data[-1] ^ 1]), "00000000000000000082.snapshot")
    result = run(damaged, "--json")
    assert result.returncode == 1
    line, = json_lines(result.stdout)
    assert line["position"] == 0 and "CRC-32C" in line["error"]
