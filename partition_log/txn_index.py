"""A segment's `.txnindex`: the aborted transactions whose ABORT marker it holds.

Kafka's TransactionIndex, byte for byte. Each entry is 34 bytes, big-endian:
`version int16 (0), producer_id int64, first_offset int64, last_offset int64,
last_stable_offset int64`. `last_offset` is the ABORT marker's offset and
entries are appended in its order; `last_stable_offset` is the partition's
LSO once the transaction had ended, which lets a fetch stop searching early
(Kafka's `isComplete`).

The file exists only once an entry was appended (most segments have none):
appends open, write and close it, so an index costs no descriptor between
aborts, which are rare next to data batches. Entries are read lazily and
kept in memory.
"""
from __future__ import annotations

import bisect
import os
import struct
from dataclasses import dataclass
from pathlib import Path

from kafka_protocol.errors import KafkaStorageError

from .index import IndexCorruptError, StrPath

ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = ENTRY.size  # 34
VERSION = 0

# The spec's name for the error; one class, so callers may catch either.
CorruptIndexError = IndexCorruptError


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker's offset
    last_stable_offset: int

    def encode(self) -> bytes:
        return ENTRY.pack(VERSION, self.producer_id, self.first_offset, self.last_offset,
                          self.last_stable_offset)


def decode_entries(data: bytes, source: object = "txnindex") -> list[AbortedTxn]:
    """The entries of a .txnindex file's bytes; IndexCorruptError if the file
    is torn (not a whole number of entries) or holds an unknown version."""
    if len(data) % ENTRY_SIZE:
        raise IndexCorruptError(f"{source}: {len(data)} bytes is not a whole number of {ENTRY_SIZE}-byte entries")
    out = []
    for i, (version, pid, first, last, lso) in enumerate(ENTRY.iter_unpack(data)):
        if version != VERSION:
            raise IndexCorruptError(f"{source}: entry {i} has unknown version {version}")
        out.append(AbortedTxn(pid, first, last, lso))
    return out


def collect(entries: list[AbortedTxn], fetch_offset: int,
            upper_bound: int) -> tuple[list[AbortedTxn], bool]:
    """Kafka's collectAbortedTxns over one index: the aborted transactions that
    overlap [fetch_offset, upper_bound), and whether the search is complete
    (an entry's LSO reached `upper_bound`: no later index can add one)."""
    found = []
    for e in entries:
        if e.last_offset >= fetch_offset and e.first_offset < upper_bound:
            found.append(e)
        if e.last_stable_offset >= upper_bound:
            return found, True
    return found, False


class TxnIndex:
    path = StrPath()
    def __init__(self, path: Path, base_offset: int = 0) -> None:
        self.path = path  # kept as a str (StrPath)
        self.base_offset = base_offset
        self._entries: list[AbortedTxn] | None = None  # loaded on first use
        self._unflushed = False

    # -- reading -------------------------------------------------------------
    def entries(self) -> list[AbortedTxn]:
        """Every entry, in file order. Raises IndexCorruptError on a torn file
        or an unknown version (sanity_check also checks the order)."""
        if self._entries is None:
            try:
                data = self.path.read_bytes()
            except FileNotFoundError:
                data = b""
            except OSError as exc:
                raise KafkaStorageError(f"cannot read {self.path}: {exc.strerror}") from exc
            self._entries = decode_entries(data, self.path)
        return list(self._entries)

    def collect(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        return collect(self.entries(), fetch_offset, upper_bound)[0]

    def search(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """collect() with Kafka's isComplete flag, for the search across segments."""
        return collect(self.entries(), fetch_offset, upper_bound)

    @property
    def last_offset(self) -> int | None:
        entries = self._loaded()
        return entries[-1].last_offset if entries else None

    def sanity_check(self) -> None:
        """Kafka's check (no entry ends below the segment's base offset) plus
        ours: the entries' last offsets strictly increase, as appends keep them."""
        entries = self._loaded()
        for i, e in enumerate(entries):
            if e.last_offset < self.base_offset:
                raise IndexCorruptError(f"{self.path}: last offset of aborted transaction {e} is less "
                                        f"than the start offset {self.base_offset}")
            if e.first_offset > e.last_offset:
                raise IndexCorruptError(f"{self.path}: entry {i} starts after it ends: {e}")
            if i and e.last_offset <= entries[i - 1].last_offset:
                raise IndexCorruptError(f"{self.path}: entry {i} does not follow entry {i - 1} in offset order")

    def _loaded(self) -> list[AbortedTxn]:
        if self._entries is None:
            self.entries()
        assert self._entries is not None
        return self._entries

    # -- writing -------------------------------------------------------------
    def append(self, entry: AbortedTxn) -> None:
        """Add an entry after the last one; its last offset must be greater
        (a ValueError otherwise, as Kafka's IllegalArgumentException)."""
        entries = self._loaded()
        if entries and entry.last_offset <= entries[-1].last_offset:
            raise ValueError(f"the last offset of appended transactions must increase: {entry.last_offset} is "
                             f"not greater than {entries[-1].last_offset} in {self.path}")
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                if os.write(fd, entry.encode()) != ENTRY_SIZE:
                    raise OSError(28, "short write")
            finally:
                os.close(fd)
        except OSError as exc:
            raise KafkaStorageError(f"cannot write {self.path}: {exc.strerror}") from exc
        entries.append(entry)
        self._unflushed = True

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or after `offset` (Kafka's truncateTo)."""
        entries = self._loaded()
        keep = bisect.bisect_left([e.last_offset for e in entries], offset)
        if keep == len(entries):
            return
        del entries[keep:]
        self._rewrite(entries)

    def reset(self) -> None:
        """No entries, and no file (the lazy state of a new segment)."""
        self.delete()
        self._entries = []

    def _rewrite(self, entries: list[AbortedTxn]) -> None:
        try:
            if not entries:
                self.path.unlink(missing_ok=True)
            else:
                with open(self.path, "r+b") as f:
                    f.truncate(len(entries) * ENTRY_SIZE)
                    os.fsync(f.fileno())
        except OSError as exc:
            raise KafkaStorageError(f"cannot truncate {self.path}: {exc.strerror}") from exc

    def flush(self) -> None:
        if not self._unflushed:
            return
        try:
            fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise KafkaStorageError(f"cannot flush {self.path}: {exc.strerror}") from exc
        self._unflushed = False

    def close(self) -> None:
        """Nothing stays open between appends; the in-memory entries are dropped."""
        self._entries = None

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)
        self._entries = None
        self._unflushed = False

    def rename(self, path: Path) -> None:
        """Follow the segment's files to a new name (a missing file stays missing)."""
        path = Path(path)
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path
