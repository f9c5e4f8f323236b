"""`kraftlog dump-log`: what a segment file holds, like Kafka's kafka-dump-log.

Text output follows Kafka's DumpLogSegments line for line, so an operator's
eyes and greps carry over; `--json` prints one object per line for scripts.

Keys and values in text output are shown as they are when they are printable
UTF-8, else as `base64:<base64 of the bytes>` (a control character would
break the one-line-per-record layout); a null key or value shows as `null`.
In JSON they are a string when they decode as UTF-8, else `{"base64": ...}`,
and null stays null.
"""
from __future__ import annotations

import base64
import json
import mmap
import os
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Annotated, Any, Iterator

import typer

from partition_log.dump import (
    Buffer, LogBatch, OffsetIndexEntry, Stop, TimeIndexEntry, TxnIndexEntry, ZeroTail, codec_name,
    first_sequence, record_sequence, scan_log, scan_offset_index, scan_producer_snapshot, scan_time_index,
    scan_txn_index, segment_base_offset,
)
from partition_log.producer_snapshot import SnapshotEntry
from kafka_protocol.records import Record

Item = LogBatch | OffsetIndexEntry | TimeIndexEntry | TxnIndexEntry | SnapshotEntry | ZeroTail | Stop
SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")


def register(app: typer.Typer) -> None:
    app.command("dump-log")(dump_log)


def dump_log(
    files: Annotated[list[Path], typer.Argument(
        help="Segment files: .log, .index, .timeindex or .txnindex; producer .snapshot files.",
        metavar="FILE", show_default=False)],
    print_data_log: Annotated[bool, typer.Option(
        "--print-data-log", help="Also print every record of each batch. Keys and values show as "
        "text when they are printable UTF-8, else as base64:<bytes in base64>; null as null.")] = False,
    as_json: Annotated[bool, typer.Option(
        "--json", help="One JSON object per line instead of Kafka's text lines.")] = False,
) -> None:
    """Print the batches of .log segments, the entries of .index, .timeindex
    and .txnindex files and the producers of .snapshot files. Exits 1 if any
    file is corrupt or cannot be read."""
    all_sound = True
    for path in files:
        all_sound &= _dump_file(path, print_data_log, as_json)
    if not all_sound:
        raise typer.Exit(1)


def _dump_file(path: Path, print_data_log: bool, as_json: bool) -> bool:
    """Dump one file; False if it is corrupt or cannot be read. A bad file
    does not stop the others: one clear line on stderr, and on to the next."""
    if path.suffix not in SUFFIXES:
        typer.echo(f"kraftlog dump-log: {path}: not a segment file "
                   "(.log, .index, .timeindex, .txnindex or .snapshot)", err=True)
        return False
    base_offset = segment_base_offset(path.name)
    if path.suffix not in (".log", ".snapshot") and base_offset is None:
        typer.echo(f"kraftlog dump-log: {path}: an index is named by its segment's base offset, "
                   "e.g. 00000000000000000000.index", err=True)
        return False
    with ExitStack() as stack:
        # Only opening is guarded: an OSError while printing (a closed pipe)
        # is not this file's fault and belongs to `kraftlog.cli.main`.
        try:
            buf = stack.enter_context(_mapped(path))
        except OSError as exc:
            typer.echo(f"kraftlog dump-log: cannot read {path}: {exc.strerror or exc}", err=True)
            return False
        if not as_json:
            print(f"Dumping {path}")
        return _print_items(path, _scan(path, buf, base_offset or 0, print_data_log), as_json)


def _scan(path: Path, buf: Buffer, base_offset: int, print_data_log: bool) -> Iterator[Item]:
    if path.suffix == ".log":
        return scan_log(buf, with_records=print_data_log)
    if path.suffix == ".index":
        return scan_offset_index(buf, base_offset)
    if path.suffix == ".txnindex":
        return scan_txn_index(buf, base_offset)
    if path.suffix == ".snapshot":
        return scan_producer_snapshot(buf)
    return scan_time_index(buf, base_offset)


@contextmanager
def _mapped(path: Path) -> Iterator[Buffer]:
    """The file's bytes, mapped rather than read: segments run to a gigabyte."""
    with path.open("rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            yield b""  # an empty file cannot be mapped
            return
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            yield buf


def _print_items(path: Path, items: Iterator[Item], as_json: bool) -> bool:
    sound = True
    for item in items:
        # A zero tail is how a preallocated index ends; in a .log it means
        # batches that were never written.
        corrupt = _is_corrupt(item, path.suffix == ".log")
        sound &= not corrupt
        if as_json:
            print(json.dumps({"file": str(path), **_json_fields(item, corrupt)}))
        else:
            for line in _text_lines(item, corrupt):
                print(line)
    return sound


def _is_corrupt(item: Item, in_log: bool) -> bool:
    if isinstance(item, LogBatch):
        return not item.is_valid or item.records_problem is not None
    if isinstance(item, (OffsetIndexEntry, TimeIndexEntry, TxnIndexEntry)):
        return item.problem is not None
    if isinstance(item, SnapshotEntry):
        return False
    return in_log or isinstance(item, Stop)


def _text_lines(item: Item, corrupt: bool) -> Iterator[str]:
    if isinstance(item, LogBatch):
        yield _batch_line(item)
        yield from (_record_line(item, r) for r in item.records or ())
        if item.records_problem is not None:
            yield f"| records do not decode: {item.records_problem}"
    elif isinstance(item, OffsetIndexEntry):
        yield _with_problem(f"offset: {item.offset} position: {item.position}", item.problem)
    elif isinstance(item, TimeIndexEntry):
        yield _with_problem(f"timestamp: {item.timestamp} offset: {item.offset}", item.problem)
    elif isinstance(item, TxnIndexEntry):
        yield _with_problem(f"version: {item.version} producerId: {item.producer_id} "
                            f"firstOffset: {item.first_offset} lastOffset: {item.last_offset} "
                            f"lastStableOffset: {item.last_stable_offset}", item.problem)
    elif isinstance(item, SnapshotEntry):
        yield _snapshot_line(item)
    else:
        yield f"{'error' if corrupt else 'note'}: {item.reason}"


def _batch_line(entry: LogBatch) -> str:
    h = entry.header
    line = (
        f"baseOffset: {h.base_offset} lastOffset: {h.last_offset} count: {h.records_count} "
        f"baseSequence: {h.base_sequence} lastSequence: {h.last_sequence} "
        f"producerId: {h.producer_id} producerEpoch: {h.producer_epoch} "
        f"partitionLeaderEpoch: {h.partition_leader_epoch} "
        f"isTransactional: {_flag(h.is_transactional)} isControl: {_flag(h.is_control)} "
        f"position: {entry.position} {_timestamp_type(entry)}: {h.max_timestamp} size: {h.size} "
        f"magic: {h.magic} compresscodec: {codec_name(h.codec)} crc: {h.crc} isvalid: {_flag(entry.is_valid)}"
    )
    return _with_problem(line, entry.problem)


def _snapshot_line(e: SnapshotEntry) -> str:
    # Kafka's line; its last batch's metadata only when the producer has one.
    line = (f"producerId: {e.producer_id} producerEpoch: {e.epoch} coordinatorEpoch: {e.coordinator_epoch} "
            f"currentTxnFirstOffset: {e.current_txn_first_offset} lastTimestamp: {e.timestamp}")
    if e.last_offset >= 0:
        line += (f" firstSequence: {first_sequence(e)} lastSequence: {e.last_sequence} "
                 f"lastOffset: {e.last_offset} offsetDelta: {e.offset_delta} timestamp: {e.timestamp}")
    return line


def _record_line(entry: LogBatch, r: Record) -> str:
    header_keys = ",".join(key for key, _ in r.headers)
    return (
        f"| offset: {r.offset} {_timestamp_type(entry)}: {r.timestamp} "
        f"keySize: {_size(r.key)} valueSize: {_size(r.value)} "
        f"sequence: {record_sequence(entry.header, r.offset)} headerKeys: [{header_keys}] "
        f"key: {_shown(r.key)} payload: {_shown(r.value)}"
    )


def _json_fields(item: Item, corrupt: bool) -> dict[str, Any]:
    if isinstance(item, LogBatch):
        return _batch_json(item)
    if isinstance(item, OffsetIndexEntry):
        return _drop_none({"offset": item.offset, "position": item.position, "problem": item.problem})
    if isinstance(item, TimeIndexEntry):
        return _drop_none({"timestamp": item.timestamp, "offset": item.offset, "problem": item.problem})
    if isinstance(item, TxnIndexEntry):
        return _drop_none({"version": item.version, "producerId": item.producer_id,
                           "firstOffset": item.first_offset, "lastOffset": item.last_offset,
                           "lastStableOffset": item.last_stable_offset, "problem": item.problem})
    if isinstance(item, SnapshotEntry):
        return {"producerId": item.producer_id, "producerEpoch": item.epoch,
                "coordinatorEpoch": item.coordinator_epoch, "currentTxnFirstOffset": item.current_txn_first_offset,
                "lastSequence": item.last_sequence, "lastOffset": item.last_offset,
                "offsetDelta": item.offset_delta, "timestamp": item.timestamp}
    return {"error" if corrupt else "note": item.reason, "position": item.position}


def _batch_json(entry: LogBatch) -> dict[str, Any]:
    h = entry.header
    fields: dict[str, Any] = {
        "baseOffset": h.base_offset, "lastOffset": h.last_offset, "count": h.records_count,
        "position": entry.position, "compression": codec_name(h.codec), "crc": h.crc,
        "isValid": entry.is_valid, "problem": entry.problem, "size": h.size, "magic": h.magic,
        "timestampType": _timestamp_type(entry), "maxTimestamp": h.max_timestamp,
        "baseSequence": h.base_sequence, "lastSequence": h.last_sequence,
        "producerId": h.producer_id, "producerEpoch": h.producer_epoch,
        "partitionLeaderEpoch": h.partition_leader_epoch,
        "isTransactional": h.is_transactional, "isControl": h.is_control,
    }
    if entry.records is not None:
        fields["records"] = [_record_json(r) for r in entry.records]
        fields["recordsProblem"] = entry.records_problem
    return _drop_none(fields)


def _record_json(r: Record) -> dict[str, Any]:
    return {
        "offset": r.offset, "timestamp": r.timestamp, "key": _json_bytes(r.key),
        "value": _json_bytes(r.value),
        "headers": [{"key": key, "value": _json_bytes(value)} for key, value in r.headers],
    }


def _json_bytes(data: bytes | None) -> str | dict[str, str] | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def _shown(data: bytes | None) -> str:
    if data is None:
        return "null"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and text.isprintable():
        return text
    return "base64:" + base64.b64encode(data).decode("ascii")


def _size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


def _timestamp_type(entry: LogBatch) -> str:
    return "LogAppendTime" if entry.header.is_log_append_time else "CreateTime"


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _with_problem(line: str, problem: str | None) -> str:
    return line if problem is None else f"{line} problem: {problem}"


def _drop_none(fields: dict[str, Any]) -> dict[str, Any]:
    # Only the optional problem fields are ever None; keys that always hold
    # a value (even null keys of records) are built elsewhere.
    return {k: v for k, v in fields.items() if v is not None}
