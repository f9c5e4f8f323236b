"""The two ways a request waits on a partition, both plain asyncio futures
completed by whoever changes the partition (no polling):

    Signal         "something changed" (an append, a high watermark move, a
                   role change): long-polled fetches wait on it
    OffsetWaiters  "the high watermark reached offset N": acks=all produces
                   wait on it
"""
from __future__ import annotations

import asyncio
import heapq
import itertools
from typing import Callable


class Signal:
    """A condition variable for one event loop: `wait()` gives a future that
    the next `fire()` completes. Needs no lock: the loop is single-threaded
    and fire() is called from synchronous code."""

    __slots__ = ("_future", "_listeners")  # one per partition replica

    def __init__(self) -> None:
        self._future: asyncio.Future[None] | None = None
        # Standing listeners (fetch sessions, broker/fetch_session.py): called
        # on every fire() until removed, so a parked session learns which of
        # its partitions changed without a future per partition per wait. A
        # tuple (a led partition has a listener per follower's session): the
        # smallest container, and fire() iterates it as it stands.
        self._listeners: tuple[Callable[[], None], ...] = ()

    def listen(self, listener: Callable[[], None]) -> None:
        if listener not in self._listeners:
            self._listeners += (listener,)

    def unlisten(self, listener: Callable[[], None]) -> None:
        if listener in self._listeners:
            self._listeners = tuple(x for x in self._listeners if x is not listener)

    def wait(self) -> asyncio.Future[None]:
        if self._future is None or self._future.done():
            self._future = asyncio.get_running_loop().create_future()
        return self._future

    def fire(self) -> None:
        future, self._future = self._future, None
        if future is not None and not future.done():
            future.set_result(None)
        for listener in self._listeners:
            listener()


class OffsetWaiters:
    """Futures keyed by the offset that completes them, cheapest first. One
    per partition led here: the heap (a list) is made by the first waiter,
    and the tie-breaking sequence is shared by all."""

    __slots__ = ("_heap",)
    _seq = itertools.count()

    def __init__(self) -> None:
        self._heap: list[tuple[int, int, asyncio.Future[int]]] | tuple[()] = ()

    def __len__(self) -> int:
        return len(self._heap)

    def add(self, offset: int) -> asyncio.Future[int]:
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        if not self._heap:
            self._heap = []
        heapq.heappush(self._heap, (offset, next(self._seq), future))
        return future

    def complete_up_to(self, offset: int, result: int) -> None:
        """Complete (with `result`) every waiter for an offset <= `offset`."""
        while self._heap and self._heap[0][0] <= offset:
            _, _, future = heapq.heappop(self._heap)
            if not future.done():
                future.set_result(result)

    def complete_all(self, result: int) -> None:
        heap, self._heap = self._heap, ()
        for _, _, future in heap:
            if not future.done():
                future.set_result(result)

    def discard(self, future: asyncio.Future[int]) -> None:
        """Forget a waiter that gave up (a timed-out produce)."""
        self._heap = [entry for entry in self._heap if entry[2] is not future]
        heapq.heapify(self._heap)
