"""The calling side of an in-order stream (grpc_serving's stream-stream RPCs
that carry unary calls): one request written, its answer read, then the
next, on one HTTP/2 stream kept between calls. gRPC's per-call work is paid
once per stream instead of once per request.

The stream's position is known only after a clean exchange: when a call
fails in any way (a transport error, the server ending the stream, the
caller's timeout, the caller being cancelled while its answer is on the way)
the stream is cancelled and the next call opens a new one, so an answer can
never be taken for the next request's.
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable, Optional

import grpc


class StreamEnded(Exception):
    """The server ended the stream (with `code`) instead of answering."""

    def __init__(self, code: Optional[grpc.StatusCode], details: str) -> None:
        super().__init__(f"{code.name if code else 'UNKNOWN'}: {details}")
        self.code = code
        self.details = details


class _NotSent(StreamEnded):
    """The stream had ended before the request could be written."""


class InOrderCalls:
    """Calls on one kept stream, one at a time (callers queue on a lock)."""

    def __init__(self, open_stream: Callable[[], grpc.aio.StreamStreamCall]) -> None:
        self._open = open_stream
        self._stream: Optional[grpc.aio.StreamStreamCall] = None
        self._lock = asyncio.Lock()

    async def call(self, request: Any, timeout: float) -> Any:
        """The answer to `request`, within `timeout` seconds; raises
        grpc.aio.AioRpcError or StreamEnded for a failed stream and
        TimeoutError (asyncio's) when no answer came in time. A kept stream the
        server ended between calls (its idle bound, a restart) is found when
        the request cannot be written: nothing was sent, so the request goes
        on a new stream."""
        async with self._lock:
            kept = self._stream is not None
            while True:
                if self._stream is None:
                    self._stream = self._open()
                stream = self._stream
                try:
                    async with asyncio.timeout(timeout):
                        return await self._exchange(stream, request)
                except _NotSent:
                    self.end()
                    if not kept:
                        raise
                    kept = False  # once, on a new stream
                except BaseException:
                    self.end()
                    raise

    @staticmethod
    async def _exchange(stream: grpc.aio.StreamStreamCall, request: Any) -> Any:
        try:
            await stream.write(request)
        except asyncio.InvalidStateError:  # the server ended the stream between two calls (idle, stopping)
            raise _NotSent(await stream.code(), await stream.details() or "the stream ended") from None
        answer = await stream.read()
        if answer is grpc.aio.EOF:
            raise StreamEnded(await stream.code(), await stream.details() or "the stream ended")
        return answer

    def end(self) -> None:
        """Cancel the stream, if one is open; the next call opens another."""
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.cancel()
