"""The calling side of an in-order stream (grpc_serving's stream-stream RPCs
that carry unary calls): requests written one after another on one HTTP/2
stream kept between calls, their answers read back in the same order, one
each. gRPC's per-call work is paid once per stream instead of once per
request.

Up to `max_in_flight` calls may be on the stream at once, as Kafka's clients
keep up to max.in.flight.requests.per.connection requests on a connection:
a request is written without waiting for the answers before it, and one
reader hands each answer to the oldest call waiting.

The stream's position is known only while every exchange is clean: when a
call fails in any way (a transport error, the server ending the stream, the
caller's timeout, the caller being cancelled) the stream is cancelled, the
calls still on it fail with StreamEnded, and the next call opens a new one,
so an answer can never be taken for another request's. Kafka closes a
connection on a request timeout the same way, failing what was in flight.
"""
from __future__ import annotations

import asyncio
from collections import deque
from typing import Any, Awaitable, Callable, Optional

import grpc


class StreamEnded(Exception):
    """The stream ended (with `code`) before the call's answer came."""

    def __init__(self, code: Optional[grpc.StatusCode], details: str) -> None:
        super().__init__(f"{code.name if code else 'UNKNOWN'}: {details}")
        self.code = code
        self.details = details


class _NotSent(StreamEnded):
    """The stream had ended before the request could be written."""


def failure_status(exc: BaseException) -> Optional[tuple[grpc.StatusCode, str]]:
    """The gRPC status of a failed call, whether unary or on an in-order
    stream (grpc.aio.AioRpcError, StreamEnded, or the caller's timeout); None
    for any other exception."""
    if isinstance(exc, grpc.aio.AioRpcError):
        return exc.code(), exc.details() or ""
    if isinstance(exc, StreamEnded):
        return exc.code or grpc.StatusCode.UNKNOWN, exc.details
    if isinstance(exc, TimeoutError):  # asyncio.TimeoutError is TimeoutError since Python 3.11
        return grpc.StatusCode.DEADLINE_EXCEEDED, "no answer in time on the stream"
    return None


class _Stream:
    """One opened stream: its calls awaiting answers, oldest first, and the
    task that reads the answers."""

    def __init__(self, call: grpc.aio.StreamStreamCall) -> None:
        self.call = call
        self.waiting: deque[asyncio.Future] = deque()
        self.writing = asyncio.Lock()  # gRPC takes one write at a time on a call
        self.reader = asyncio.ensure_future(self._read_answers())

    async def _read_answers(self) -> None:
        try:
            while True:
                answer = await self.call.read()
                if answer is grpc.aio.EOF:
                    raise StreamEnded(await self.call.code(), await self.call.details() or "the stream ended")
                if not self.waiting:
                    raise StreamEnded(grpc.StatusCode.INTERNAL, "the server answered a request never sent")
                waiter = self.waiting.popleft()
                if not waiter.done():  # a call given up on is done (cancelled): its answer is dropped
                    waiter.set_result(answer)
        except asyncio.CancelledError:
            self.end(StreamEnded(grpc.StatusCode.CANCELLED, "the stream was ended after a call on it failed"))
        except BaseException as exc:  # grpc.aio.AioRpcError (the status), StreamEnded
            self.end(exc)

    def end(self, failure: BaseException) -> None:
        """Cancel the stream; each call still waiting on it fails with `failure`."""
        self.call.cancel()
        if self.reader is not asyncio.current_task():
            self.reader.cancel()
        while self.waiting:
            waiter = self.waiting.popleft()
            if not waiter.done():
                waiter.set_exception(failure)


def _drop(answer: asyncio.Future) -> None:
    """A call's answer no one will await: cancelled if still open, its failure
    taken if it has one (asyncio would log it as never retrieved)."""
    if not answer.done():
        answer.cancel()
    elif not answer.cancelled():
        answer.exception()


class InOrderCalls:
    """Calls on one kept stream, up to `max_in_flight` at once (more callers
    queue for a slot)."""

    def __init__(self, open_stream: Callable[[], grpc.aio.StreamStreamCall], max_in_flight: int = 1) -> None:
        self._open = open_stream
        self._stream: Optional[_Stream] = None
        self._slots = asyncio.Semaphore(max_in_flight)

    async def call(self, request: Any, timeout: float) -> Any:
        """The answer to `request`, within `timeout` seconds of its being
        written; raises grpc.aio.AioRpcError or StreamEnded for a failed
        stream and TimeoutError when no answer came in time. A kept stream the
        server ended between calls (its idle bound, a restart) is found when
        the request cannot be written: nothing was sent, so the request goes
        on a new stream."""
        async with self._slots:
            kept = self._stream is not None
            while True:
                stream = self._stream
                if stream is None:
                    stream = self._stream = _Stream(self._open())
                answer: asyncio.Future = asyncio.get_running_loop().create_future()
                try:
                    async with asyncio.timeout(timeout):  # a deadline on this task: no task made per call
                        await self._write(stream, request, answer)
                        return await answer
                except _NotSent:
                    self._end(stream, StreamEnded(grpc.StatusCode.CANCELLED, "the stream had ended"))
                    _drop(answer)
                    if not kept:
                        raise
                    kept = False  # once, on a new stream
                except BaseException as exc:
                    self._end(stream, StreamEnded(grpc.StatusCode.CANCELLED,
                                                  f"the stream was ended: a call on it failed ({exc!r})"))
                    _drop(answer)
                    raise

    @staticmethod
    async def _write(stream: _Stream, request: Any, answer: asyncio.Future) -> None:
        async with stream.writing:
            if stream.call.done():
                raise _NotSent(None, "the stream had ended")
            stream.waiting.append(answer)  # before the write: the answer may come before write() returns
            try:
                await stream.call.write(request)
            except asyncio.InvalidStateError:  # the server ended the stream between two calls (idle, stopping)
                raise _NotSent(None, "the stream had ended") from None
            except grpc.aio.AioRpcError as exc:
                if exc.code() != grpc.StatusCode.INTERNAL:
                    raise
                # A write that meets a connection breaking under it (the node killed) fails in gRPC's core,
                # which says INTERNAL; it is the transport's failure, as UNAVAILABLE is for a unary call.
                raise StreamEnded(grpc.StatusCode.UNAVAILABLE,
                                  f"the stream broke during the write: {exc.details()}") from None
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise  # this caller was cancelled
                # grpc raises CancelledError to a write on a call cancelled meanwhile (another call failed)
                raise StreamEnded(grpc.StatusCode.CANCELLED, "the stream was ended during the write") from None

    def _end(self, stream: _Stream, failure: BaseException) -> None:
        if self._stream is stream:
            self._stream = None
        stream.end(failure)

    def end(self) -> None:
        """Cancel the stream, if one is open; the next call opens another."""
        if self._stream is not None:
            self._end(self._stream, StreamEnded(grpc.StatusCode.CANCELLED, "the stream was closed"))


# A node that does not serve a stream (an older version, in a rolling
# upgrade) gets unary calls; the stream is tried again after this long.
UNARY_RETRY_S = 60.0


class InOrderStreams:
    """Calls to one service at several nodes, each on the node's kept
    in-order stream, or as a unary call where the stream is not served: a
    node that answers UNIMPLEMENTED (an older version, in a rolling upgrade)
    gets unary calls for `unary_retry_s`, then the stream is tried again (it
    may have been upgraded meanwhile). UNIMPLEMENTED means the request was not
    handled, so it is sent again at once as a unary call. Without
    `open_stream` every call is unary (a caller that cannot use streams)."""

    def __init__(self, open_stream: Optional[Callable[[str], Callable[[], grpc.aio.StreamStreamCall]]], *,
                 max_in_flight: int = 1, unary_retry_s: float = UNARY_RETRY_S) -> None:
        self._open_stream = open_stream  # address -> a callable opening a stream there
        self._max_in_flight = max_in_flight
        self._unary_retry_s = unary_retry_s
        self._calls: dict[str, InOrderCalls] = {}
        self._unary_until: dict[str, float] = {}  # address -> loop time until which it gets unary calls

    async def call(self, address: str, request: Any, timeout: float,
                   unary: Callable[[], Awaitable[Any]]) -> Any:
        """The answer to `request` from the node at `address`; `unary` makes
        the same request as a unary call. Raises as InOrderCalls.call does."""
        loop = asyncio.get_running_loop()
        if self._open_stream is not None and loop.time() >= self._unary_until.get(address, 0.0):
            calls = self._calls.get(address)
            if calls is None:
                calls = self._calls[address] = InOrderCalls(self._open_stream(address), self._max_in_flight)
            try:
                return await calls.call(request, timeout)
            except (grpc.aio.AioRpcError, StreamEnded) as exc:
                status = failure_status(exc)
                if status is None or status[0] != grpc.StatusCode.UNIMPLEMENTED:
                    raise
            self._unary_until[address] = loop.time() + self._unary_retry_s
        return await unary()

    def close(self) -> None:
        """End every stream still open."""
        for calls in self._calls.values():
            calls.end()
        self._calls.clear()
