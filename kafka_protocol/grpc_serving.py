"""Serving a protobuf service so that undecodable requests get INVALID_ARGUMENT.

gRPC decodes a request before the handler runs and reports a decode failure
as UNKNOWN with a Python exception name in it. Registering the methods with
raw bytes and decoding here gives the client INVALID_ARGUMENT and a message
naming the request type instead, the status gRPC defines for malformed input.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any, Awaitable, Callable, Optional

import grpc
from google.protobuf import message_factory
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import DecodeError

# Call metadata carrying Kafka's client.id (sent by the clients with every
# call; read for client quotas and shown by ConsumerGroupDescribe).
CLIENT_ID_METADATA = "client-id"

# The largest answer a server sends and a client takes. Requests stay under
# 8 MiB (each side's max_receive); an answer may be larger than its request
# (100,000 partitions named in 8 MiB get 100,000 errors, each with its topic's
# name; 100,000 group ids get 100,000 descriptions), and Kafka answers such a
# request in full, so answers get room of their own, bounded all the same.
MAX_ANSWER_BYTES = 64 << 20


# Runs before every handler served on a server: the listener's
# authentication (it sets who is calling, or aborts the call). Given the
# method's path (`/package.Service/Method`) and the call's context.
Guard = Callable[[str, grpc.aio.ServicerContext], Awaitable[None]]

_guards: "weakref.WeakKeyDictionary[grpc.aio.Server, Guard]" = weakref.WeakKeyDictionary()
_stream_idle_s: "weakref.WeakKeyDictionary[grpc.aio.Server, float]" = weakref.WeakKeyDictionary()

# How long an in-order stream may wait for its next request before the
# server ends it: Kafka's connections.max.idle.ms default. A unary call ends
# by itself; a stream would hold its handler forever, so an idle one is
# closed, as Kafka closes an idle connection (a follower sends a fetch at
# least every replica.fetch.wait.max.ms, far inside it).
DEFAULT_STREAM_IDLE_MS = 600_000
_served: "weakref.WeakKeyDictionary[grpc.aio.Server, list[str]]" = weakref.WeakKeyDictionary()


def guard_server(server: grpc.aio.Server, guard: Guard) -> None:
    """Put every service later added to `server` with add_service behind
    `guard`. A listener's server is guarded before anything is added to it, so
    no service can slip in unguarded; guarding late is a bug and raises."""
    if _served.get(server):
        raise RuntimeError(f"guard_server after services were added: {', '.join(_served[server])}")
    _guards[server] = guard


def limit_idle_streams(server: grpc.aio.Server, idle_ms: int) -> None:
    """In-order streams of services later added to `server` end UNAVAILABLE
    after `idle_ms` without a request (connections.max.idle.ms); unset:
    DEFAULT_STREAM_IDLE_MS. Like guard_server, set before services are added."""
    if _served.get(server):
        raise RuntimeError(f"limit_idle_streams after services were added: {', '.join(_served[server])}")
    _stream_idle_s[server] = idle_ms / 1000


def add_service(server: grpc.aio.Server, service: ServiceDescriptor, servicer: Any) -> None:
    """Serve `servicer`'s async methods, one per RPC of `service`, behind the
    server's guard if it has one. A unary RPC's method answers its request;
    a stream-stream RPC is served as unary calls in order on one stream (the
    servicer's method answers each request message, see _in_order_handler)."""
    guard = _guards.get(server)
    idle_s = _stream_idle_s.get(server, DEFAULT_STREAM_IDLE_MS / 1000)
    handlers = {}
    for m in service.methods:
        implementation = getattr(servicer, m.name, None) or _unimplemented(m)
        handlers[m.name] = (_in_order_handler(m, implementation, guard, idle_s) if m.client_streaming
                            else _unary_handler(m, implementation, guard))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(service.full_name, handlers),))
    _served.setdefault(server, []).append(service.full_name)


def _unimplemented(method: MethodDescriptor) -> Callable[..., Awaitable[Any]]:
    """A method the servicer lacks answers UNIMPLEMENTED, as gRPC does for an unknown method."""
    async def refuse(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{method.full_name} is not served by this node")
    return refuse


def _unary_handler(method: MethodDescriptor, implementation: Callable[..., Awaitable[Any]],
                   guard: Optional[Guard] = None) -> grpc.RpcMethodHandler:
    if method.client_streaming or method.server_streaming:
        raise ValueError(f"{method.full_name}: only unary RPCs are served this way")
    request_class = message_factory.GetMessageClass(method.input_type)
    path = f"/{method.containing_service.full_name}/{method.name}"

    async def handle(raw: bytes, context: grpc.aio.ServicerContext) -> Any:
        request = await _guarded_request(raw, context, request_class, path, guard)
        if isinstance(request, _Refusal):
            await context.abort(request.code, request.details)
        return await implementation(request, context)

    return grpc.unary_unary_rpc_method_handler(handle, request_deserializer=None, response_serializer=_serialized)


# How many requests of one in-order stream are worked on at once (read,
# guarded, decoded and being answered); the next is read when the oldest is
# answered, so a client writing more waits on HTTP/2 flow control. Kafka's
# producer keeps max.in.flight.requests.per.connection = 5 by default; a
# follower sends one fetch at a time.
IN_PROGRESS_PER_STREAM = 5


class _Refusal:
    """Where a stream ends: the status it ends with, sent after the answers to
    the requests before it (a malformed request, an idle stream)."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        self.code = code
        self.details = details


_END = object()  # the client closed its side: the stream ends after the last answer


def _in_order_handler(method: MethodDescriptor, implementation: Callable[..., Awaitable[Any]],
                      guard: Optional[Guard] = None,
                      idle_s: float = DEFAULT_STREAM_IDLE_MS / 1000) -> grpc.RpcMethodHandler:
    """A stream-stream RPC that carries unary calls: each request message is
    decoded and answered by `implementation` (as a unary call of the same
    request would be), up to IN_PROGRESS_PER_STREAM of them at once, and the
    answers are sent in the order of the requests, one each. Requests are
    started in the order they arrive.

    The guard runs for every message, as for every unary call: a SASL session
    that expires while its stream is open (connections.max.reauth.ms) ends
    the stream UNAUTHENTICATED at the next request, as Kafka closes a
    connection that did not re-authenticate in time. A malformed message ends
    the stream with INVALID_ARGUMENT after the answers to the requests
    before it; `idle_s` without a request ends it UNAVAILABLE (see
    DEFAULT_STREAM_IDLE_MS). The point is the cost: gRPC's per-call work (a
    new HTTP/2 stream, metadata, the server's handler lookup and
    interceptors) is paid once per stream instead of once per request, about
    a quarter of a unary round trip's CPU on this machine."""
    if not (method.client_streaming and method.server_streaming):
        raise ValueError(f"{method.full_name}: only stream-stream RPCs are served in order")
    request_class = message_factory.GetMessageClass(method.input_type)
    path = f"/{method.containing_service.full_name}/{method.name}"

    async def read(raws: Any, context: grpc.aio.ServicerContext, started: asyncio.Queue,
                   slots: asyncio.Semaphore) -> None:
        """Reads, guards and decodes each request and starts answering it,
        in arrival order, with a slot free; puts what the stream sends next
        on `started`: an answer's task, a _Refusal, _END or an exception."""
        requests = raws.__aiter__()
        try:
            while True:
                await slots.acquire()
                try:
                    async with asyncio.timeout(idle_s):
                        raw = await requests.__anext__()
                except StopAsyncIteration:
                    started.put_nowait(_END)
                    return
                except TimeoutError:
                    started.put_nowait(_Refusal(grpc.StatusCode.UNAVAILABLE, f"no request for {idle_s * 1000:.0f} "
                                                "ms (connections.max.idle.ms): the stream is closed"))
                    return
                request = await _guarded_request(raw, context, request_class, path, guard)
                if isinstance(request, _Refusal):  # sent after the answers to the requests before it
                    started.put_nowait(request)
                    return
                # The task copies this task's context: the session the guard set is the request's.
                started.put_nowait(asyncio.ensure_future(implementation(request, context)))
        except BaseException as exc:  # the guard's abort, the transport: the stream ends with it
            started.put_nowait(exc)

    async def handle(raws: Any, context: grpc.aio.ServicerContext) -> Any:
        started: asyncio.Queue = asyncio.Queue()
        slots = asyncio.Semaphore(IN_PROGRESS_PER_STREAM)
        reader = asyncio.ensure_future(read(raws, context, started, slots))
        try:
            while True:
                next_up = await started.get()
                if next_up is _END:
                    return
                if isinstance(next_up, _Refusal):
                    await context.abort(next_up.code, next_up.details)
                if isinstance(next_up, BaseException):
                    raise next_up
                answer = _serialized(await next_up)
                slots.release()
                yield answer
        finally:  # the stream ended (an error, the client gone): nothing more is read or answered
            reader.cancel()
            while not started.empty():
                left = started.get_nowait()
                if isinstance(left, asyncio.Future):
                    left.cancel()

    return grpc.stream_stream_rpc_method_handler(handle, request_deserializer=None, response_serializer=None)


async def _guarded_request(raw: bytes, context: grpc.aio.ServicerContext, request_class: Any, path: str,
                           guard: Optional[Guard]) -> Any:
    """One request of a unary call or of an in-order stream: the guard first
    (an unauthenticated caller gets nothing parsed), then decoded; bytes that
    are no request give the INVALID_ARGUMENT refusal naming the request type,
    which the call ends with."""
    if guard is not None:
        await guard(path, context)
    try:
        return request_class.FromString(raw)
    except DecodeError as exc:
        return _Refusal(grpc.StatusCode.INVALID_ARGUMENT, f"malformed {request_class.__name__}: {exc}")


def _serialized(response: Any) -> bytes:
    """A handler may answer with the message already encoded (the broker's
    Fetch splices record batches in without protobuf copying them)."""
    return response if isinstance(response, bytes) else response.SerializeToString()
