"""A tiny replicated state machine for the simulator: a count and a checksum chain of values.

Its snapshot is a few bytes, which the simulator sends in very small chunks
so that FetchSnapshot's chunking is exercised.
"""

from __future__ import annotations

import zlib

from metadata_quorum.raft import CommittedEntries, Snapshot


class ChecksumStateMachine:
    __slots__ = ("applied_end", "count", "checksum", "last_snapshot_end")

    def __init__(self) -> None:
        self.applied_end = 0
        self.count = 0
        self.checksum = 0
        self.last_snapshot_end = 0

    @staticmethod
    def step(count: int, checksum: int, data: bytes) -> tuple[int, int]:
        return count + 1, zlib.crc32(data, checksum)

    def apply(self, committed: CommittedEntries) -> None:
        assert committed.base_offset == self.applied_end, (committed.base_offset, self.applied_end)
        count, checksum = self.count, self.checksum
        for entry in committed.entries:
            if not entry.control:
                count, checksum = self.step(count, checksum, entry.data)
        self.count, self.checksum = count, checksum
        self.applied_end += len(committed.entries)

    def snapshot_bytes(self) -> bytes:
        return f"count={self.count};crc={self.checksum};end={self.applied_end}".encode()

    def load(self, snapshot: Snapshot) -> None:
        fields = dict(part.split("=") for part in snapshot.data.decode().split(";"))
        end = snapshot.snapshot_id.end_offset
        assert int(fields["end"]) == end, (fields, snapshot.snapshot_id)
        self.count = int(fields["count"])
        self.checksum = int(fields["crc"])
        self.applied_end = end
        self.last_snapshot_end = end

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]
