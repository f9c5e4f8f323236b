"""Kafka's request quota (`request_percentage`) and KIP-219 muting, for every
client RPC of a broker's KafkaBroker and GroupCoordinator services, put
around each servicer method in one place (`RequestQuota.metered`).

Kafka measures the time a client's requests occupy its request-handler
threads, as a percentage of one thread over the quota window. A broker here
serves requests as coroutines on one event loop, so what a request occupies
is the loop, while one of its steps runs: `BusyTime` adds those up and
leaves out the time the request is suspended (waiting for replication, a
long poll, the controller). Each request records busy seconds x 100
(percent-seconds) under the request manager, whose windowed rate is then a
percentage of the loop, comparable with the quota. Decoding the request
(before the method) and encoding the answer (after it) run outside the
method and are not counted: Kafka's network-thread share has no equivalent
measured here.

Over its quota a client is throttled, not failed: the answer goes out, its
connection (gRPC peer) is muted for the throttle time, and the connection's
next request of any RPC waits that long before it is served. Produce and
Fetch answers carry throttle_time_ms, the larger of their byte-rate throttle
(recorded by the method through `record_and_mute` / `note_answer_throttle`)
and the request throttle. Kafka exempts inter-broker traffic from client
quotas: a request naming a replica (replica_id >= 0: a follower's Fetch,
ListOffsets or OffsetForLeaderEpoch) from a caller allowed ClusterAction is
neither measured nor held.
"""
from __future__ import annotations

import asyncio
import time
from contextvars import ContextVar
from types import SimpleNamespace
from typing import Any, Awaitable, Callable, Mapping, Optional

import grpc
from google.protobuf.descriptor import ServiceDescriptor

from kafka_protocol.fetch_framing import throttle_time_field
from kafka_protocol.grpc_serving import CLIENT_ID_METADATA
from security.acl import AclOperation
from security.authorization import NodeAuthorizer
from security.client_quotas import QuotaEntity
from security.request_context import current_session

from .busy_time import BusyTime
from .client_quota_manager import ClientQuotaManager, ClientQuotas

Method = Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]
ImageQuotas = Mapping[QuotaEntity, Mapping[str, float]]


class _AnswerThrottle:
    """The byte-rate throttle a method put in its answer (Fetch's answer is
    already encoded: the wrapper cannot read it back)."""
    __slots__ = ("ms",)

    def __init__(self) -> None:
        self.ms = 0


_answer_throttle: ContextVar[Optional[_AnswerThrottle]] = ContextVar("answer_throttle", default=None)


def note_answer_throttle(throttle_ms: int) -> None:
    """Tell the request quota around this call the throttle the answer already carries."""
    noted = _answer_throttle.get()
    if noted is not None:
        noted.ms = max(noted.ms, throttle_ms)


def client_of(context: grpc.aio.ServicerContext) -> tuple[Optional[str], str]:
    """The (user, client id) quotas apply to: the session principal's name
    (None outside a session) and the `client-id` call metadata."""
    session = current_session()
    metadata = dict(context.invocation_metadata() or ())
    return (session.principal.name if session is not None else None,
            str(metadata.get(CLIENT_ID_METADATA, "")))


def record_and_mute(quotas: ClientQuotas, manager: ClientQuotaManager, image_quotas: ImageQuotas,
                    context: grpc.aio.ServicerContext, amount: float) -> int:
    """Record `amount` for the calling client under `manager`; mute its
    connection for the throttle time its quota asks for, and return it."""
    user, client_id = client_of(context)
    now = time.monotonic()
    throttle_ms = manager.record_and_get_throttle_time_ms(image_quotas, user, client_id, amount, now)
    quotas.mute(context.peer() or "", throttle_ms, now)
    return throttle_ms


def with_throttle(answer: Any, throttle_ms: int) -> Any:
    """`answer` carrying throttle_time_ms = `throttle_ms`, when it has that
    field. An answer already encoded is Fetch's: the field appended to the
    encoding replaces the one in it (protobuf keeps the last)."""
    if isinstance(answer, bytes):
        return answer + throttle_time_field(throttle_ms)
    if "throttle_time_ms" in answer.DESCRIPTOR.fields_by_name:
        answer.throttle_time_ms = throttle_ms
    return answer


class RequestQuota:
    """The request quota of one broker, shared by all its listeners' services."""

    def __init__(self, quotas: ClientQuotas, image_quotas: Callable[[], ImageQuotas],
                 access: NodeAuthorizer) -> None:
        self.quotas = quotas
        self.image_quotas = image_quotas
        self.access = access

    def metered(self, servicer: Any, service: ServiceDescriptor) -> SimpleNamespace:
        """`servicer`'s methods for the RPCs of `service`, each measured and
        held by the request quota (one it lacks stays missing: UNIMPLEMENTED)."""
        return SimpleNamespace(**{m.name: self.wrap(getattr(servicer, m.name))
                                  for m in service.methods if hasattr(servicer, m.name)})

    def _exempt(self, request: Any) -> bool:
        return getattr(request, "replica_id", -1) >= 0 and self.access.allows_cluster(AclOperation.CLUSTER_ACTION)

    def wrap(self, method: Method) -> Method:
        async def serve(request: Any, context: grpc.aio.ServicerContext) -> Any:
            if self._exempt(request):
                return await method(request, context)
            wait_s = self.quotas.unmuted_in(context.peer() or "", time.monotonic())
            if wait_s > 0:  # KIP-219: a connection muted by an earlier throttled answer waits out the rest
                await asyncio.sleep(wait_s)
            image_quotas = self.image_quotas()
            if not image_quotas:
                return await method(request, context)  # no quota set anywhere: nothing to measure
            noted = _AnswerThrottle()
            token = _answer_throttle.set(noted)
            timed = BusyTime(method(request, context))
            try:
                answer = await timed
            finally:  # a failed or aborted request occupied the loop all the same
                _answer_throttle.reset(token)
                throttle_ms = record_and_mute(self.quotas, self.quotas.request, image_quotas, context,
                                              timed.busy_s * 100)
            return with_throttle(answer, throttle_ms) if throttle_ms > noted.ms else answer
        return serve
