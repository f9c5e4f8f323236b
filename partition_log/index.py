"""Sparse segment indexes in Kafka's file formats.

`.index`: (relative offset int32, file position int32) big-endian.
`.timeindex`: (timestamp int64, relative offset int32) big-endian.

The active segment's index files are preallocated to `segment.index.bytes`
(sparse files cost nothing) and trimmed to their entries when the segment is
rolled or closed, as Kafka does. Entries also live in memory as two arrays for
binary search; they are loaded lazily, on first use, so a broker with many
partitions does not read every index at start-up.
"""
from __future__ import annotations

import abc
import bisect
import mmap
import os
import struct
from array import array
from pathlib import Path

from kafka_protocol.errors import KafkaStorageError


class StrPath:
    """A Path attribute kept as a str and made a Path on each use (opening,
    renaming, deleting - never per entry): a broker holds three index files
    per replica, often of 100,000 replicas, and a kept Path costs ~300 bytes
    more than its str."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.attribute = f"_{name}"

    def __get__(self, obj: object, owner: type | None = None) -> Path:
        return Path(getattr(obj, self.attribute))

    def __set__(self, obj: object, value: Path | str) -> None:
        setattr(obj, self.attribute, os.fspath(value))


class IndexCorruptError(Exception):
    """An index file does not hold what its segment says; it must be rebuilt."""


class _SparseIndex(abc.ABC):
    ENTRY: struct.Struct
    path = StrPath()

    def __init__(self, path: Path, base_offset: int, max_bytes: int) -> None:
        self.path = path  # kept as a str (see `path`)
        self.base_offset = base_offset
        self.max_entries = max(1, max_bytes // self.ENTRY.size)
        self._keys: array | None = None  # offsets (offset index) or timestamps (time index)
        self._values: array | None = None  # positions (offset index) or offsets (time index)
        self._map: mmap.mmap | None = None  # writable mapping of the preallocated file
        self._known_empty = False  # no entries and no file to read: _load makes empty arrays

    # -- loading -------------------------------------------------------------
    def _load(self) -> None:
        if self._keys is not None:
            return
        keys, values = array("q"), array("q")
        if self._known_empty:
            self._keys, self._values = keys, values
            return
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            data = b""
        except OSError as exc:
            raise KafkaStorageError(f"cannot read {self.path}: {exc.strerror}") from exc
        # A preallocated file that was never trimmed ends in zeros; no real entry
        # is all zeros, so the entries are the bytes before that zero tail.
        used = len(data.rstrip(b"\0"))
        used += -used % self.ENTRY.size
        for raw_key, raw_value in self.ENTRY.iter_unpack(data[:used]):
            key, value = self._decode(raw_key, raw_value)
            keys.append(key)
            values.append(value)
        self._keys, self._values = keys, values

    def start_empty(self) -> None:
        """A new segment's index: no entries, and no file to read for them
        (the arrays too are made on first use: an idle partition has none)."""
        self._keys = self._values = None
        self._known_empty = True

    @property
    def entries(self) -> int:
        self._load()
        assert self._keys is not None
        return len(self._keys)

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def last_entry(self) -> tuple[int, int] | None:
        self._load()
        assert self._keys is not None and self._values is not None
        if not self._keys:
            return None
        return self._keys[-1], self._values[-1]

    def lookup(self, target: int) -> tuple[int, int] | None:
        """The entry with the largest key <= target, or None."""
        self._load()
        assert self._keys is not None and self._values is not None
        i = bisect.bisect_right(self._keys, target) - 1
        if i < 0:
            return None
        return self._keys[i], self._values[i]

    # -- writing -------------------------------------------------------------
    # Like Kafka, appends go through a memory mapping of the preallocated file:
    # an entry is a memory store, not a system call, on the produce path.
    #
    # The mapping is made on the first write, not when the segment opens: a
    # broker with many idle partitions holds no descriptors for their indexes
    # (Kafka's indexes are lazy too). Our descriptor is closed once mapped;
    # the mmap object keeps its own.
    def _mapping(self) -> mmap.mmap:
        if self._map is None:
            size = self.max_entries * self.ENTRY.size
            try:
                fd = self._preallocate()
                try:
                    self._map = mmap.mmap(fd, size)
                finally:
                    os.close(fd)
            except OSError as exc:
                self.close()
                raise KafkaStorageError(f"cannot open {self.path}: {exc.strerror}") from exc
        return self._map

    def _preallocate(self) -> int:
        """Open (creating) the file at its full preallocated size; the open descriptor."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size != self.max_entries * self.ENTRY.size:
                os.ftruncate(fd, self.max_entries * self.ENTRY.size)
        except OSError:
            os.close(fd)
            raise
        return fd

    def _append(self, key: int, value: int) -> None:
        self._load()
        assert self._keys is not None and self._values is not None
        n = len(self._keys)
        if n >= self.max_entries:
            raise KafkaStorageError(f"{self.path} is full ({n} entries): the segment should have rolled")
        self.ENTRY.pack_into(self._mapping(), n * self.ENTRY.size, *self._encode(key, value))
        self._keys.append(key)
        self._values.append(value)

    def truncate_entries(self, keep: int) -> None:
        """Keep the first `keep` entries (in memory and on disk)."""
        self._load()
        assert self._keys is not None and self._values is not None
        removed = len(self._keys) - keep
        if removed <= 0:
            return
        del self._keys[keep:]
        del self._values[keep:]
        # Past the old last entry the file is zeros already: clear only what was removed.
        start = keep * self.ENTRY.size
        self._mapping()[start:start + removed * self.ENTRY.size] = bytes(removed * self.ENTRY.size)

    def reset(self) -> None:
        """Drop every entry; the caller rebuilds the index from the log."""
        self.close()
        self.path.unlink(missing_ok=True)
        self._keys, self._values = array("q"), array("q")
        try:
            os.close(self._preallocate())  # the file exists from the start; it is mapped on the first write
        except OSError as exc:
            raise KafkaStorageError(f"cannot create {self.path}: {exc.strerror}") from exc

    def trim(self) -> None:
        """Shrink the file to its entries: done when the segment stops being active."""
        n = self.entries
        self.close()
        try:
            with open(self.path, "r+b" if self.path.exists() else "w+b") as f:
                f.truncate(n * self.ENTRY.size)
        except OSError as exc:
            raise KafkaStorageError(f"cannot trim {self.path}: {exc.strerror}") from exc
        self.max_entries = max(n, 1)

    def flush(self) -> None:
        if self._map is not None:
            self._map.flush()

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

    def rename(self, path: Path) -> None:
        os.replace(self.path, path)
        self.path = path

    @abc.abstractmethod
    def _decode(self, raw_key: int, raw_value: int) -> tuple[int, int]:
        """File entry -> (key, value) with absolute offsets."""

    @abc.abstractmethod
    def _encode(self, key: int, value: int) -> tuple[int, int]:
        """(key, value) -> file entry with offsets relative to the segment."""


class OffsetIndex(_SparseIndex):
    """Offset -> file position of the batch chunk ending at that offset."""

    ENTRY = struct.Struct(">ii")

    def _decode(self, rel_offset: int, position: int) -> tuple[int, int]:
        return self.base_offset + rel_offset, position

    def _encode(self, offset: int, position: int) -> tuple[int, int]:
        return offset - self.base_offset, position

    def append(self, offset: int, position: int) -> None:
        last = self.last_entry()
        if last is not None and (offset <= last[0] or position <= last[1]):
            return  # entries must strictly increase; a duplicate adds nothing
        self._append(offset, position)

    def truncate_to(self, offset: int) -> None:
        """Remove entries for offsets >= `offset`."""
        self._load()
        assert self._keys is not None
        self.truncate_entries(bisect.bisect_left(self._keys, offset))

    def sanity_check(self, next_offset: int, log_size: int) -> None:
        self._load()
        assert self._keys is not None and self._values is not None
        for i in range(len(self._keys)):
            off, pos = self._keys[i], self._values[i]
            if off <= self.base_offset or off >= next_offset or pos <= 0 or pos >= log_size:
                raise IndexCorruptError(f"{self.path}: entry {i} ({off}, {pos}) lies outside the segment")
            if i and (off <= self._keys[i - 1] or pos <= self._values[i - 1]):
                raise IndexCorruptError(f"{self.path}: entry {i} is not after entry {i - 1}")


class TimeIndex(_SparseIndex):
    """Largest timestamp so far -> offset of the record that carried it."""

    ENTRY = struct.Struct(">qi")

    def _decode(self, timestamp: int, rel_offset: int) -> tuple[int, int]:
        return timestamp, self.base_offset + rel_offset

    def _encode(self, timestamp: int, offset: int) -> tuple[int, int]:
        return timestamp, offset - self.base_offset

    def maybe_append(self, timestamp: int, offset: int) -> None:
        last = self.last_entry()
        if last is not None and timestamp <= last[0]:
            return  # only a new maximum timestamp is worth an entry
        self._append(timestamp, offset)

    def truncate_to(self, offset: int) -> None:
        """Remove entries that point at offsets >= `offset`."""
        self._load()
        assert self._values is not None
        # offsets of successive maximum timestamps never decrease
        self.truncate_entries(bisect.bisect_left(self._values, offset))

    def sanity_check(self, next_offset: int) -> None:
        self._load()
        assert self._keys is not None and self._values is not None
        for i in range(len(self._keys)):
            ts, off = self._keys[i], self._values[i]
            if off < self.base_offset or off >= next_offset:
                raise IndexCorruptError(f"{self.path}: entry {i} points at offset {off} outside the segment")
            if i and ts <= self._keys[i - 1]:
                raise IndexCorruptError(f"{self.path}: entry {i} timestamp does not increase")
