"""Request metrics: how many requests of each kind a node served, how many
failed and with which error, and how long they took - Kafka's
RequestMetrics (RequestsPerSec, ErrorsPerSec, TotalTimeMs), labelled by the
RPC method name (Produce, Fetch, CreateTopics, Vote, ...). As in Kafka, a
broker's Fetch is also counted as FetchConsumer or FetchFollower.

A gRPC server interceptor measures every application RPC of a listener
without any service knowing (health checking and reflection are not
requests in Kafka's sense and are left alone). The per-request work is a
few integer additions on plain Python objects: every handler runs on the
node's one event loop, so no lock is needed, and the Prometheus families
are built only when someone scrapes.
"""
from __future__ import annotations

import asyncio
import time
from bisect import bisect_left
from collections import deque
from typing import Any, Awaitable, Callable, Iterator, Optional

import grpc
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString

from kraftlog_api import broker_pb2
from kafka_protocol.errors import error_name

# Upper bounds of the latency buckets, in milliseconds: from an in-memory
# answer to a long-polled Fetch (fetch.max.wait.ms) and a slow acks=all.
LATENCY_BUCKETS_MS = (0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0,
                      1000.0, 2500.0, 5000.0, 10000.0, 30000.0)
BUCKET_LABELS = (*map(floatToGoString, LATENCY_BUCKETS_MS), "+Inf")
# From the descriptor, not broker.service: a controller-only node never loads the broker.
BROKER_FETCH = f"/{broker_pb2.DESCRIPTOR.services_by_name['KafkaBroker'].full_name}/Fetch"
# The same requests, carried one after another on a stream (kafka_protocol.grpc_serving):
# each message is measured as the unary call it stands for, under the same names.
STREAMED_FETCH = f"/{broker_pb2.DESCRIPTOR.services_by_name['FetchStream'].full_name}/Fetch"
FETCHES = (BROKER_FETCH, STREAMED_FETCH)
# Services that are not Kafka requests: grpc.health.v1, grpc.reflection.*.
UNMEASURED_PREFIX = "/grpc."


class RequestStats:
    """One request kind's counters; `finish` is the whole per-request cost."""

    __slots__ = ("count", "errors", "buckets", "sum_ms")

    def __init__(self) -> None:
        self.count = 0
        self.errors: dict[str, int] = {}
        self.buckets = [0] * (len(LATENCY_BUCKETS_MS) + 1)  # the last one is +Inf
        self.sum_ms = 0.0

    def finish(self, started: float, error: Optional[str]) -> None:
        ms = (time.perf_counter() - started) * 1000.0
        self.count += 1
        self.sum_ms += ms
        self.buckets[bisect_left(LATENCY_BUCKETS_MS, ms)] += 1
        if error is not None:
            self.errors[error] = self.errors.get(error, 0) + 1


class RequestMetrics:
    """The request counters of one node (every listener), and their collector."""

    def __init__(self) -> None:
        self.by_request: dict[str, RequestStats] = {}

    def stats(self, request: str) -> RequestStats:
        stats = self.by_request.get(request)
        if stats is None:
            stats = self.by_request[request] = RequestStats()
        return stats

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            "kafka_network_requestmetrics_requests", "Requests served, by request (Kafka: RequestsPerSec)",
            labels=("request",))
        errors = CounterMetricFamily(
            "kafka_network_requestmetrics_errors",
            "Requests answered with an error, by request and error name (Kafka: ErrorsPerSec; "
            "a request-level Kafka error code, or the gRPC status of a failed call)",
            labels=("request", "error"))
        latency = HistogramMetricFamily(
            "kafka_network_requestmetrics_totaltimems",
            "Time from a request's arrival to its answer, in milliseconds (Kafka: TotalTimeMs)",
            labels=("request",))
        for request, stats in sorted(self.by_request.items()):
            requests.add_metric((request,), stats.count)
            for error, count in sorted(stats.errors.items()):
                errors.add_metric((request, error), count)
            cumulative, buckets = 0, []
            for bound, count in zip(BUCKET_LABELS, stats.buckets):
                cumulative += count
                buckets.append((bound, cumulative))
            latency.add_metric((request,), buckets, stats.sum_ms)
        yield from (requests, errors, latency)


Behavior = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]


class RequestMetricsInterceptor(grpc.aio.ServerInterceptor):
    """Wraps each unary-response handler of a server to count and time it."""

    def __init__(self, metrics: RequestMetrics) -> None:
        self.metrics = metrics
        # method path -> (the handler the server gave, our wrapped copy):
        # services register one handler per method, so it is wrapped once.
        self._wrapped: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    async def intercept_service(self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
                                handler_call_details: grpc.HandlerCallDetails) -> Any:
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or method.startswith(UNMEASURED_PREFIX):
            return handler
        known = self._wrapped.get(method)
        if known is not None and known[0] is handler:
            return known[1]
        wrapped = self._wrap(handler, self.metrics.stats(method.rpartition("/")[2]),
                             self._fetch_kind if method in FETCHES else _no_kind)
        self._wrapped[method] = (handler, wrapped)
        return wrapped

    def _fetch_kind(self, request: Any) -> Optional[RequestStats]:
        return self.metrics.stats("FetchConsumer" if is_consumer_fetch(request) else "FetchFollower")

    @staticmethod
    def _wrap(handler: Any, stats: RequestStats, kind: Kind) -> Any:
        # A kraftlog RPC is unary-unary, or stream-stream carrying unary calls
        # in order (one answer per request); a stream-unary one has the unary
        # shape. Other streaming responses (health Watch, reflection) pass unmeasured.
        if handler.unary_unary is not None:
            return handler._replace(unary_unary=_measured(handler.unary_unary, stats, kind))
        if handler.stream_unary is not None:
            return handler._replace(stream_unary=_measured(handler.stream_unary, stats, kind))
        if handler.stream_stream is not None:
            return handler._replace(stream_stream=_measured_in_order(handler.stream_stream, stats, kind))
        return handler


def is_consumer_fetch(raw: Any) -> bool:
    """A KafkaBroker Fetch from a consumer, told from the request's bytes
    without decoding them: replica_id (field 1, written first) is -1 for a
    consumer, on the wire tag 0x08 and a negative int32's ten-byte varint
    (nine bytes with the high bit set, then 0x01). A follower's id is >= 0."""
    return (isinstance(raw, bytes) and raw[:1] == b"\x08" and raw[10:11] == b"\x01"
            and min(raw[1:10]) >= 0x80)


Kind = Callable[[Any], Optional[RequestStats]]


def _no_kind(request: Any) -> Optional[RequestStats]:
    return None


def _measured(behavior: Behavior, stats: RequestStats, kind: Kind) -> Behavior:
    async def measured(request: Any, context: grpc.aio.ServicerContext) -> Any:
        started = time.perf_counter()
        also = kind(request)  # FetchConsumer/FetchFollower: counted and timed, errors under Fetch only
        try:
            response = await behavior(request, context)
        except asyncio.CancelledError:
            stats.finish(started, grpc.StatusCode.CANCELLED.name)
            raise
        except BaseException:
            stats.finish(started, _status_name(context))
            raise
        finally:
            if also is not None:
                also.finish(started, None)
        code = getattr(response, "error_code", 0)
        stats.finish(started, error_name(code) if code else None)
        return response

    return measured


def _measured_in_order(behavior: Callable[[Any, grpc.aio.ServicerContext], Any], stats: RequestStats,
                       kind: Kind) -> Callable[[Any, grpc.aio.ServicerContext], Any]:
    """Each request of an in-order stream counted and timed as a unary call:
    from the message's arrival to its answer's (one answer per request, in
    order). A stream that ends in an error counts it against the request
    being answered, if any."""
    async def measured(requests: Any, context: grpc.aio.ServicerContext) -> Any:
        arrived: deque[tuple[float, Optional[RequestStats]]] = deque()

        async def noted() -> Any:
            async for request in requests:
                arrived.append((time.perf_counter(), kind(request)))
                yield request

        try:
            async for answer in behavior(noted(), context):
                _finish_next(arrived, stats, None)
                yield answer
        except asyncio.CancelledError:
            _finish_next(arrived, stats, grpc.StatusCode.CANCELLED.name)
            raise
        except BaseException:
            _finish_next(arrived, stats, _status_name(context))
            raise

    return measured


def _finish_next(arrived: deque[tuple[float, Optional[RequestStats]]], stats: RequestStats,
                 error: Optional[str]) -> None:
    """The oldest request not yet answered, counted (FetchConsumer/FetchFollower
    too, errors under the RPC's own name only, as _measured does)."""
    if arrived:
        started, also = arrived.popleft()
        if also is not None:
            also.finish(started, None)
        stats.finish(started, error)


def _status_name(context: grpc.aio.ServicerContext) -> str:
    """The gRPC status the call ends with: the aborted one, or UNKNOWN for
    an exception the handler did not turn into a status."""
    code = context.code()
    if isinstance(code, grpc.StatusCode):
        return code.name
    if isinstance(code, int):
        for status in grpc.StatusCode:
            if status.value[0] == code:
                return status.name
    return grpc.StatusCode.UNKNOWN.name
