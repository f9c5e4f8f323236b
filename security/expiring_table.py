"""A table of entries that expire, capped per owner and in total, so that no
flood of requests can make it grow without bound.

The SASL server keeps two: exchanges in progress and live sessions. Both
give every entry the same lifetime on a monotonic clock, so insertion order
is expiry order and pruning only ever looks at the oldest entries.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Generic, Optional, TypeVar

V = TypeVar("V")


@dataclass(frozen=True)
class Entry(Generic[V]):
    owner: str
    expires_at: float
    value: V

    def expired(self, now: float) -> bool:
        return now >= self.expires_at


class ExpiringTable(Generic[V]):
    """`evict=False`: a full table (or a full owner) refuses new entries, so a
    flood hurts only new arrivals and never evicts work in progress.
    `evict=True`: the oldest entry (the owner's, or the table's) makes room."""

    def __init__(self, *, per_owner: int, total: int, evict: bool) -> None:
        if per_owner < 1 or total < 1:
            raise ValueError("an expiring table needs room for at least one entry")
        self._per_owner = per_owner
        self._total = total
        self._evict = evict
        self._entries: OrderedDict[bytes, Entry[V]] = OrderedDict()
        self._owned: dict[str, OrderedDict[bytes, None]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def owned(self, owner: str) -> int:
        return len(self._owned.get(owner, ()))

    def add(self, key: bytes, owner: str, value: V, expires_at: float, now: float) -> bool:
        """Insert; False when the table is full and does not evict."""
        self.prune(now)
        owned = self._owned.get(owner)
        if owned is not None and len(owned) >= self._per_owner:
            if not self._evict:
                return False
            self.pop(next(iter(owned)))
        if len(self._entries) >= self._total:
            if not self._evict:
                return False
            self.pop(next(iter(self._entries)))
        self._entries[key] = Entry(owner, expires_at, value)
        self._owned.setdefault(owner, OrderedDict())[key] = None
        return True

    def get(self, key: bytes) -> Optional[Entry[V]]:
        """The entry, expired or not (the caller tells them apart)."""
        return self._entries.get(key)

    def pop(self, key: bytes) -> Optional[Entry[V]]:
        entry = self._entries.pop(key, None)
        if entry is not None:
            owned = self._owned[entry.owner]
            del owned[key]
            if not owned:
                del self._owned[entry.owner]
        return entry

    def prune(self, now: float) -> None:
        while self._entries:
            key, entry = next(iter(self._entries.items()))
            if not entry.expired(now):
                return
            self.pop(key)
