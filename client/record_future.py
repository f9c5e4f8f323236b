"""What produce() returns: one small future per record, settled by its batch.

A batch has one outcome - acknowledged at a base offset (and maybe a
log-append time), or failed with one error - and each of its records'
outcomes follows from it: offset = base offset + the record's index in the
batch, the batch's error for each of its records. So a record's future is a
few slots pointing at its batch: produce() allocates it (no asyncio.Future,
no threading.Condition, no closure), and completing a batch visits only the
records that have a done-callback or an on_delivery, in record order
(Kafka's callback order per partition), after the batch's outcome is set.

Two flavours with the interface their callers know:
- AsyncRecordFuture (AsyncProducer): an asyncio future - awaitable, works
  with gather/wait/wait_for; done-callbacks run on the loop (call_soon);
  result() of a pending future raises InvalidStateError.
- SyncRecordFuture (Producer): as a concurrent.futures.Future - result()
  and exception() block (with a timeout); done-callbacks run on the thread
  that settles the record (the producer's I/O thread), or at once when
  added to a settled future.
cancel() settles the future as cancelled at once; the record is still sent
(Kafka cannot take a record back) and its on_delivery still called.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from operator import attrgetter
from typing import Any, Callable, Generator, Optional

log = logging.getLogger(__name__)

DeliveryCallback = Callable[[Optional[BaseException], Any], Any]  # on_delivery(error, RecordMetadata)


class Settlement:
    """What one producer's record futures share: the lock that orders adding a
    callback against the batch's completion (the sync producer's futures are
    read on the caller's threads while its I/O thread settles them), the
    condition a blocking result() waits on, and the loop of the producer."""

    __slots__ = ("lock", "changed", "waiters", "loop")

    def __init__(self, loop: Optional[asyncio.AbstractEventLoop] = None) -> None:
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.waiters = 0  # threads in result()/exception() now
        self.loop = loop

    def settled(self) -> None:
        """With the lock held: some futures are done now."""
        if self.waiters:
            self.changed.notify_all()


class Unsent:
    """The outcome of a record that failed before it joined a batch (too
    large, unknown topic, producer closed): no metadata, just the error."""

    __slots__ = ("error",)
    finished = True

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def metadata(self, index: int) -> None:
        return None


class RecordFuture:
    """The common part: state, settling and reading. `_batch` is the record's
    ProducerBatch once appended (or an Unsent), `_index` its place in it; the
    batch lists the future among its listeners only when it has an
    on_delivery or done-callbacks."""

    __slots__ = ("_batch", "_index", "_on_delivery", "_callbacks", "_cancelled", "_settlement")
    _cancelled_error: type[BaseException] = concurrent.futures.CancelledError
    _batch: Any
    _index: int
    _on_delivery: Optional[DeliveryCallback]
    _callbacks: Optional[list[tuple[Callable[[Any], Any], Any]]]
    _cancelled: bool
    _settlement: Settlement

    # No __init__: calling the class runs none (object's own, in C), a third of the cost of
    # object.__new__(cls) plus a Python __init__. client/producer.py's produce() does what
    # new() does, inlined, once per record.

    @classmethod
    def new(cls, settlement: Settlement, on_delivery: Optional[DeliveryCallback] = None) -> Any:
        """A pending future of a record not yet in a batch."""
        future = cls()
        future._settlement = settlement
        future._on_delivery = on_delivery
        future._callbacks = None
        future._cancelled = False
        future._batch = None
        future._index = 0
        return future

    # --- state ---------------------------------------------------------------

    def done(self) -> bool:
        if self._cancelled:
            return True
        batch = self._batch
        return batch is not None and batch.finished

    def cancelled(self) -> bool:
        return self._cancelled

    def running(self) -> bool:
        return False

    def cancel(self, msg: Any = None) -> bool:
        """Done at once as cancelled, unless already done; the record itself is still sent."""
        with self._settlement.lock:
            if self.done():
                return False
            self._cancelled = True
            callbacks, self._callbacks = self._callbacks, None
            self._settlement.settled()
        if callbacks:
            self._run_callbacks(callbacks)
        return True

    def add_done_callback(self, fn: Callable[[Any], Any], *, context: Any = None) -> None:
        """fn(future) once done (at once, or scheduled on the loop for an asyncio future, when already done)."""
        with self._settlement.lock:
            if not self.done():
                callbacks = self._callbacks
                if callbacks is None:
                    callbacks = self._callbacks = []
                    batch = self._batch
                    if batch is not None and self._on_delivery is None:
                        batch.listeners.append(self)  # it was not a listener yet
                callbacks.append((fn, context))
                return
        self._run_callbacks([(fn, context)])

    def remove_done_callback(self, fn: Callable[[Any], Any]) -> int:
        with self._settlement.lock:
            callbacks = self._callbacks or []
            kept = [entry for entry in callbacks if entry[0] != fn]
            if self._callbacks is not None:
                self._callbacks[:] = kept
            return len(callbacks) - len(kept)

    # --- reading -------------------------------------------------------------

    def result(self, timeout: Optional[float] = None) -> Any:
        """The record's RecordMetadata, or its error raised."""
        self._wait(timeout)
        if self._cancelled:
            raise self._cancelled_error()
        batch = self._batch
        error = batch.error
        if error is not None:
            raise error.with_traceback(None)  # one error object for the batch: no traceback piling up
        return batch.metadata(self._index)

    def exception(self, timeout: Optional[float] = None) -> Optional[BaseException]:
        self._wait(timeout)
        if self._cancelled:
            raise self._cancelled_error()
        return self._batch.error  # type: ignore[no-any-return]

    def _wait(self, timeout: Optional[float]) -> None:
        raise NotImplementedError

    # --- settling (the producer's side) --------------------------------------

    def fail_unsent(self, error: BaseException) -> None:
        """Failed before joining a batch; callbacks run on the producer's loop, soon."""
        with self._settlement.lock:
            self._batch = Unsent(error)
            self._settlement.settled()
        if self._on_delivery is not None or self._callbacks is not None:
            loop = self._settlement.loop
            if loop is None:
                self._settled()
            else:
                loop.call_soon(self._settled)

    def _settled(self) -> None:
        """Its batch (or Unsent) finished: run the done-callbacks, then on_delivery."""
        callbacks, self._callbacks = self._callbacks, None  # nobody else adds once done
        if callbacks and not self._cancelled:
            self._run_callbacks(callbacks)
        on_delivery = self._on_delivery
        if on_delivery is not None:
            batch = self._batch
            try:
                on_delivery(batch.error, batch.metadata(self._index))
            except Exception:  # noqa: BLE001 - a user's callback must not stop the producer
                log.exception("delivery callback raised")

    def _run_callbacks(self, callbacks: list[tuple[Callable[[Any], Any], Any]]) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        if not self.done():
            state = "pending"
        elif self._cancelled:
            state = "cancelled"
        elif self._batch.error is not None:
            state = f"error={self._batch.error!r}"
        else:
            state = f"result={self._batch.metadata(self._index)!r}"
        return f"<{type(self).__name__} {state}>"


_INDEX = attrgetter("_index")


def settle(listeners: list[RecordFuture]) -> None:
    """Tell the listening futures of a finished batch, in record order."""
    if len(listeners) > 1:
        listeners.sort(key=_INDEX)
    for future in listeners:
        future._settled()


class SyncRecordFuture(RecordFuture):
    """The sync Producer's future: blocking result()/exception(), callbacks on the settling thread."""

    __slots__ = ()

    def _wait(self, timeout: Optional[float]) -> None:
        if self.done():
            return
        settlement = self._settlement
        with settlement.lock:
            settlement.waiters += 1
            try:
                if not settlement.changed.wait_for(self.done, timeout):
                    raise TimeoutError(f"record not delivered within {timeout} s")
            finally:
                settlement.waiters -= 1

    def _run_callbacks(self, callbacks: list[tuple[Callable[[Any], Any], Any]]) -> None:
        for fn, _ in callbacks:
            try:
                fn(self)
            except Exception:  # noqa: BLE001 - as concurrent.futures: logged, the others still run
                log.exception("exception calling callback for %r", self)


class AsyncRecordFuture(RecordFuture):
    """AsyncProducer's future: an asyncio future by duck typing (asyncio.isfuture is true)."""

    __slots__ = ()
    _cancelled_error = asyncio.CancelledError
    _cancel_message = None  # read by asyncio.gather() for a cancelled child

    def _make_cancelled_error(self) -> asyncio.CancelledError:  # asyncio.gather() calls it too
        return asyncio.CancelledError()

    @property
    def _asyncio_future_blocking(self) -> bool:
        # A Task that awaits us reads this to know it must wait: true while pending.
        return not self.done()

    @_asyncio_future_blocking.setter
    def _asyncio_future_blocking(self, value: bool) -> None:
        pass  # the Task resets it after reading; nothing to keep

    def get_loop(self) -> asyncio.AbstractEventLoop:
        loop = self._settlement.loop
        if loop is None:
            raise RuntimeError("the producer has not started: no event loop yet")
        return loop

    def _wait(self, timeout: Optional[float]) -> None:
        if not self.done():
            raise asyncio.InvalidStateError("Result is not ready.")

    def _run_callbacks(self, callbacks: list[tuple[Callable[[Any], Any], Any]]) -> None:
        loop = self.get_loop()
        for fn, context in callbacks:
            loop.call_soon(fn, self, context=context)

    def __await__(self) -> Generator[Any, None, Any]:
        if not self.done():
            yield self  # the Task adds a done-callback to wake up
            if not self.done():
                raise RuntimeError("await wasn't used with future")
        return self.result()

    __iter__ = __await__
