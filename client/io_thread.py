"""A client's background thread: one asyncio loop that does the client's
network work (fetches, heartbeats, commits) while the application thread
does its own, as the Java consumer's network thread does.

The application thread hands work over with `call` (wait for the answer) or
`spawn` (a concurrent future). gRPC aio channels belong to the loop that
made them: the client's `Metadata` is made and used on this loop only.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Callable, Coroutine, Optional, TypeVar

T = TypeVar("T")
STOP_TIMEOUT_S = 10.0


class IoThread:
    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def in_loop(self) -> bool:
        return threading.current_thread() is self._thread

    def spawn(self, coro: Coroutine[Any, Any, T]) -> "concurrent.futures.Future[T]":
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, coro: Coroutine[Any, Any, T], timeout: Optional[float] = None) -> T:
        """Run `coro` in the loop and wait for its result (from another thread)."""
        future = self.spawn(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        self.loop.call_soon_threadsafe(fn, *args)

    def stop(self) -> None:
        """Cancel what still runs, end the thread."""
        if not self._thread.is_alive():
            return
        try:
            self.call(self._shutdown(), timeout=STOP_TIMEOUT_S)
        except (concurrent.futures.TimeoutError, RuntimeError):
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(STOP_TIMEOUT_S)
        # The loop is stopped but not closed: grpc.aio's process-wide poller may
        # still hand it a completion, and a closed loop would log "Event loop is
        # closed" for each; a stopped one just never runs it.

    async def _shutdown(self) -> None:
        me = asyncio.current_task()
        tasks = [t for t in asyncio.all_tasks() if t is not me]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class LoopWorker:
    """A task on the background loop that works in turns and sleeps between
    them until a timeout or a wake(). wake() and close() are called on the loop."""

    def __init__(self) -> None:
        self._wake_event: Optional[asyncio.Event] = None
        self._closed = False

    def wake(self) -> None:
        if self._wake_event is not None:
            self._wake_event.set()

    def close(self) -> None:
        self._closed = True
        self.wake()

    def _next_turn(self) -> bool:
        """Start a turn (wake-ups from now on end the next sleep); False once closed."""
        if self._wake_event is None:
            self._wake_event = asyncio.Event()
        self._wake_event.clear()
        return not self._closed

    async def _sleep(self, seconds: float) -> None:
        assert self._wake_event is not None
        try:
            await asyncio.wait_for(self._wake_event.wait(), timeout=max(seconds, 0))
        except asyncio.TimeoutError:
            pass

