"""A bound on the `.log` descriptors the segments of a LogManager hold open.

A segment opens its file on its first append or read (segment.py) and, if
it shares a SegmentHandles, reports every use here. When more than `limit`
are open the least recently used one is closed; its next use opens it again.
Descriptors unused for `idle_ms` are closed too (`close_idle`, run by the
broker's log jobs). So a broker's open files follow the partitions in use,
not the partitions it holds: 10,000 idle partitions hold none.

The event loop is the only user: a descriptor is taken (`LogSegment.fd`)
and used in the same synchronous step, never kept across another segment's
use, so closing the least recently used one cannot pull a file from under
a caller.
"""
from __future__ import annotations

import resource
from collections import OrderedDict
from typing import Callable, Protocol

IDLE_MS = 600_000  # as Kafka's connections.max.idle.ms: ten minutes unused


class HasHandle(Protocol):
    def close_handle(self) -> None: ...


def default_limit() -> int:
    """Half the process's descriptor limit: the rest is for sockets, indexes being mapped, checkpoints."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return 1 << 16
    return max(16, soft // 2)


class SegmentHandles:
    def __init__(self, clock: Callable[[], int], limit: int | None = None, idle_ms: int = IDLE_MS) -> None:
        self.clock = clock
        self.limit = default_limit() if limit is None else max(1, limit)
        self.idle_ms = idle_ms
        self._open: OrderedDict[HasHandle, int] = OrderedDict()  # least recently used first -> last use (ms)

    def __len__(self) -> int:
        return len(self._open)

    def used(self, segment: HasHandle) -> None:
        """`segment` holds an open descriptor and is using it now."""
        self._open[segment] = self.clock()
        self._open.move_to_end(segment)
        while len(self._open) > self.limit:
            oldest, _ = self._open.popitem(last=False)
            oldest.close_handle()

    def closed(self, segment: HasHandle) -> None:
        """`segment` closed its descriptor itself (close, delete, rename)."""
        self._open.pop(segment, None)

    def close_idle(self) -> int:
        """Close the descriptors unused for idle_ms; how many were closed."""
        cutoff = self.clock() - self.idle_ms
        closed = 0
        while self._open:
            segment, last_used = next(iter(self._open.items()))
            if last_used > cutoff:
                break
            del self._open[segment]
            segment.close_handle()
            closed += 1
        return closed
