"""RecordStore: the state machine of a records-only quorum (a test and benchmark mode).

In place of the metadata image, a node applies committed entries into this
store: every data record with its offset, in order. It backs the QuorumLog
RPCs (see records_only/__init__.py for who needs them) and exercises the
snapshot path end to end: its snapshot is all of its records.

Snapshot bytes: repeated (offset int64, length uint32, data), big-endian.
"""

from __future__ import annotations

import bisect
import struct
from typing import Iterable, Optional

_HEADER = struct.Struct(">qI")


class RecordStore:
    def __init__(self) -> None:
        self._offsets: list[int] = []
        self._data: list[bytes] = []

    def __len__(self) -> int:
        return len(self._offsets)

    def apply(self, records: Iterable[tuple[int, bytes]]) -> None:
        """Committed data records as (offset, data), in offset order."""
        for offset, data in records:
            if self._offsets and offset <= self._offsets[-1]:
                raise ValueError(f"record at {offset} applied after {self._offsets[-1]}")
            self._offsets.append(offset)
            self._data.append(data)

    def read(self, start_offset: int, max_records: int) -> list[tuple[int, bytes]]:
        i = bisect.bisect_left(self._offsets, start_offset)
        j = min(len(self._offsets), i + max(0, max_records))
        return list(zip(self._offsets[i:j], self._data[i:j]))

    def snapshot(self) -> bytes:
        out = bytearray()
        for offset, data in zip(self._offsets, self._data):
            out += _HEADER.pack(offset, len(data))
            out += data
        return bytes(out)

    def committed_through(self, offset: int) -> None:
        """Nothing to note: the store's own offsets are its records'."""

    def load_snapshot(self, data: Optional[bytes]) -> None:
        """Replace the state with a snapshot's (None: the empty state)."""
        offsets: list[int] = []
        values: list[bytes] = []
        view = memoryview(data or b"")
        pos = 0
        while pos < len(view):
            if pos + _HEADER.size > len(view):
                raise ValueError("record store snapshot ends inside a record header")
            offset, length = _HEADER.unpack_from(view, pos)
            pos += _HEADER.size
            if pos + length > len(view) or (offsets and offset <= offsets[-1]):
                raise ValueError("record store snapshot is inconsistent")
            offsets.append(offset)
            values.append(bytes(view[pos : pos + length]))
            pos += length
        self._offsets, self._data = offsets, values
