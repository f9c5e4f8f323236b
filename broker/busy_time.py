"""How long the event loop spent running a coroutine, not counting the time
it was suspended.

Kafka's request quota measures the time a client's requests occupy the
request-handler threads. Here a request is a coroutine on the one event
loop: it occupies the loop only while one of its steps runs (from a resume
to its next suspension); while it awaits a replication, a long poll or
another broker it costs nothing, and other requests run. `BusyTime` drives
a coroutine one step at a time, as the task awaiting it would, and adds up
the wall-clock time of each step (time.perf_counter) in `busy_s`.

It is transparent to the task: what the coroutine yields (futures) goes to
the task, what the task sends or throws back (results, CancelledError) goes
to the coroutine, the coroutine's value or exception comes out of the await.
It runs in the awaiting task, so context variables (the caller's session)
are the same.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Coroutine, Generator, Generic, TypeVar

T = TypeVar("T")


class BusyTime(Generic[T]):
    """`await BusyTime(coro)` is `await coro`; afterwards `busy_s` is the
    seconds the event loop spent in it (also when it raised)."""

    __slots__ = ("_coro", "_clock", "busy_s")

    def __init__(self, coro: Coroutine[Any, Any, T], clock: Callable[[], float] = time.perf_counter) -> None:
        self._coro = coro
        self._clock = clock
        self.busy_s = 0.0

    def __await__(self) -> Generator[Any, Any, T]:
        coro, clock = self._coro, self._clock
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            start = clock()
            try:
                yielded = coro.send(sent) if thrown is None else coro.throw(thrown)
            except StopIteration as done:
                return done.value
            finally:
                self.busy_s += clock() - start
            try:
                sent, thrown = (yield yielded), None
            except GeneratorExit:
                coro.close()  # the awaiting task is gone: close the coroutine with it
                raise
            except BaseException as exc:  # CancelledError above all: the coroutine decides what it means
                sent, thrown = None, exc
