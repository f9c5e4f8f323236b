"""The asyncio face of the metadata cache (`MetadataCache`): the producer's
and the consumer's view of brokers and partition leaders, when to refresh
it, and one gRPC channel per broker.

The producer and the consumer look leaders up here for every request they
send, so a lookup is a dictionary read. The view is refreshed from any broker
(the last one that answered first, then the others, then the bootstrap list):
- on demand (`request_update()`), which a client does when a broker answers
  NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, a
  leader-epoch error, or cannot be reached (`note_error` / `note_unreachable`);
- when it is older than `metadata.max.age.ms`;
- for a topic the client starts using (`partitions_for`).
Refreshes never run closer together than the backoff: `retry.backoff.ms`,
doubling after each failed or still-incomplete refresh up to
`retry.backoff.max.ms` (Kafka's exponential backoff, KIP-580), with jitter.
Each refresh asks for every topic the client has used, as Kafka's clients do.

Everything runs on one event loop: grpc.aio channels belong to the loop that
made them, so a client running on several loops needs one Metadata per loop.
"""
from __future__ import annotations

import asyncio
import logging
import random
import time
from typing import Any, Callable, Iterable, Optional, Sequence

import grpc

from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import broker_pb2_grpc as bpb_grpc
from kafka_protocol.errors import Errors
from kafka_protocol.fetch_framing import broker_stub
from kafka_protocol.grpc_serving import CLIENT_ID_METADATA
from kafka_protocol.in_order_calls import InOrderStreams

from security.client_security import ClientSecurity

from .channels import open_async_channel
from .errors import NetworkError, error_for_code
from .metadata_cache import STALE_METADATA_ERRORS, MetadataCache, PartitionInfo

log = logging.getLogger(__name__)

# gRPC statuses after which another broker may do better.
TRANSPORT_FAILURES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                                grpc.StatusCode.CANCELLED, grpc.StatusCode.UNKNOWN})
# A Metadata answer is small: a broker that has not given one in this long is
# paused or gone, and the next broker is asked instead of waiting out the
# whole request.timeout.ms.
METADATA_CALL_TIMEOUT_S = 5.0


class Metadata(MetadataCache):
    def __init__(self, bootstrap: str | Sequence[str], *, retry_backoff_ms: int = 100,
                 retry_backoff_max_ms: int = 1000, metadata_max_age_ms: int = 300_000,
                 request_timeout_ms: int = 30_000, security: Optional[ClientSecurity] = None,
                 client_id: str = "") -> None:
        super().__init__(bootstrap)
        self.security = security  # None: plaintext
        self.client_id = client_id  # sent with every call (client/channels.py)
        self._backoff_s = retry_backoff_ms / 1000
        self._backoff_max_s = max(retry_backoff_max_ms, retry_backoff_ms) / 1000
        self._max_age_s = metadata_max_age_ms / 1000
        self._call_timeout_s = min(request_timeout_ms / 1000, METADATA_CALL_TIMEOUT_S)
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._stubs: dict[str, tuple[grpc.aio.Channel, bpb_grpc.KafkaBrokerStub]] = {}  # by address, with its channel
        self._wanted: set[str] = set()           # every topic this client has used
        self._need_update = True
        self._updated_at = float("-inf")          # monotonic time of the last successful refresh
        self._next_attempt_at = float("-inf")     # backoff: no refresh before this
        self._failures = 0                       # consecutive refreshes that failed or left something unknown
        self._last_good: Optional[str] = None    # the address that answered last
        self._refresh_task: Optional[asyncio.Task[None]] = None
        self._changed: Optional[asyncio.Event] = None  # made on the loop, at first use
        self._closed = False
        self.last_error = ""                     # why the last refresh failed ("" when it did not)

    # --- lookups (cache only; the others are MetadataCache's) ------------

    def leader_address(self, broker_id: int) -> Optional[str]:
        return self.brokers.get(broker_id)

    @property
    def age_s(self) -> float:
        return time.monotonic() - self._updated_at

    # --- channels ----------------------------------------------------------

    def channel(self, address: str) -> grpc.aio.Channel:
        channel = self._channels.get(address)
        if channel is None:
            channel = self._channels[address] = open_async_channel(address, self.security, self.client_id)
        return channel

    def in_order_streams(self, open_method: Callable[[grpc.aio.Channel], Callable[..., grpc.aio.StreamStreamCall]],
                         max_in_flight: int = 1) -> InOrderStreams:
        """Calls kept on one in-order stream per broker (kafka_protocol/in_order_calls.py), each stream
        opened by `open_method` on the address's channel of the moment and carrying client.id; unary
        calls only with SASL, whose login interceptors are unary-only."""
        if self.security is not None and self.security.sasl is not None:
            return InOrderStreams(None)
        # The channel's client-id interceptor is unary-only (an intercepted stream is wrapped, a cost on
        # every message), so the stream carries client.id itself.
        metadata = ((CLIENT_ID_METADATA, self.client_id),) if self.client_id else None
        return InOrderStreams(lambda address: lambda: open_method(self.channel(address))(metadata=metadata),
                              max_in_flight=max_in_flight)

    def stub(self, broker_id: int) -> bpb_grpc.KafkaBrokerStub:
        """The stub of a known broker (KeyError when the metadata does not name it)."""
        return self.stub_at(self.brokers[broker_id])

    def stub_at(self, address: str) -> bpb_grpc.KafkaBrokerStub:
        """One stub per channel: building one makes a callable per method (a producer asks per request)."""
        channel = self.channel(address)
        known = self._stubs.get(address)
        if known is not None and known[0] is channel:
            return known[1]
        stub = broker_stub(channel)
        self._stubs[address] = (channel, stub)
        return stub

    def _addresses_to_ask(self) -> list[str]:
        known = list(self.brokers.values())
        random.shuffle(known)
        first = [self._last_good] if self._last_good else []
        return list(dict.fromkeys([*first, *known, *self.bootstrap]))

    async def any_broker(self, method: str, request: Any, timeout_s: Optional[float] = None) -> Any:
        """Send a request any broker can answer (Metadata, InitProducerId,
        FindCoordinator ...) to the first that does. NetworkError when none does."""
        problems = []
        for address in self._addresses_to_ask():
            try:
                response = await getattr(self.stub_at(address), method)(
                    request, timeout=timeout_s or self._call_timeout_s)
            except grpc.aio.AioRpcError as exc:
                if exc.code() == grpc.StatusCode.UNIMPLEMENTED:
                    raise error_for_code(Errors.UNSUPPORTED_VERSION, f"{address} does not offer {method}") from None
                if exc.code() not in TRANSPORT_FAILURES:
                    raise
                problems.append(f"{address} {exc.code().name}")
                continue
            self._last_good = address
            return response
        raise NetworkError(f"no broker answered {method} ({', '.join(problems) or 'none known'})")

    # --- refreshing --------------------------------------------------------

    def add_topics(self, topics: Iterable[str]) -> None:
        """Topics this client uses from now on; an unknown one makes the next refresh due."""
        for topic in topics:
            if topic not in self._wanted:
                self._wanted.add(topic)
                if topic not in self.topics:
                    self._need_update = True

    def request_update(self) -> None:
        """The view is stale: refresh at the next chance the backoff allows."""
        self._need_update = True

    def note_error(self, code: int) -> None:
        """A partition-level error from a broker: refresh if it says the leader moved."""
        if code in STALE_METADATA_ERRORS:
            self._need_update = True

    def note_unreachable(self, broker_id: int) -> None:
        """A broker could not be reached: its partitions may have moved."""
        self._need_update = True

    @property
    def update_due(self) -> bool:
        return self._need_update or self.age_s >= self._max_age_s

    def maybe_update(self) -> Optional[asyncio.Task[None]]:
        """Start a background refresh if one is due and the backoff allows; the
        running refresh, if any. Never waits: senders call this on every turn."""
        if self._refresh_task is not None and not self._refresh_task.done():
            return self._refresh_task
        if self._closed or not self.update_due:
            return None
        if time.monotonic() < self._next_attempt_at:
            return None
        self._refresh_task = asyncio.get_running_loop().create_task(self._refresh())
        return self._refresh_task

    def next_update_in(self) -> float:
        """Seconds until maybe_update() would start a refresh (for a sender's sleep)."""
        if not self.update_due:
            return max(0.0, self._max_age_s - self.age_s)
        return max(0.0, self._next_attempt_at - time.monotonic())

    async def update(self) -> None:
        """Refresh now (after the backoff) and wait for it; raises NetworkError
        when no broker answered."""
        self._need_update = True
        while True:
            task = self.maybe_update()
            if task is not None:
                started_before = self._updated_at
                await asyncio.shield(task)
                if self._updated_at == started_before:
                    raise NetworkError(f"no broker answered Metadata (bootstrap {','.join(self.bootstrap)})")
                return
            await asyncio.sleep(self.next_update_in())

    async def wait_for_change(self, timeout_s: float) -> bool:
        """Until the next successful refresh, at most `timeout_s`; whether one came."""
        changed = self._event()
        try:
            await asyncio.wait_for(changed.wait(), timeout_s)
            return True
        except asyncio.TimeoutError:
            return False

    async def partitions_for(self, topic: str, max_block_ms: int = 60_000) -> list[PartitionInfo]:
        """The topic's partitions, refreshing until the cluster knows the topic,
        for at most `max_block_ms` (Kafka's producer blocks in send() likewise)."""
        self.add_topics([topic])
        deadline = time.monotonic() + max_block_ms / 1000
        while True:
            parts = self.topics.get(topic)
            if parts:
                return parts
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                code = self.topic_error(topic) or Errors.UNKNOWN_TOPIC_OR_PARTITION
                # Kafka's TimeoutException message, word for word.
                raise error_for_code(code, f"Topic {topic} not present in metadata after {max_block_ms} ms."
                                     + (f" ({self.last_error})" if self.last_error else ""))
            self._need_update = True
            task = self.maybe_update()
            try:
                if task is not None:
                    await asyncio.wait_for(asyncio.shield(task), remaining)
                else:
                    await asyncio.sleep(min(remaining, max(self.next_update_in(), 0.001)))
            except asyncio.TimeoutError:
                continue

    async def _refresh(self) -> None:
        self._need_update = False
        topics = sorted(self._wanted)
        request = bpb.MetadataRequest(topics=topics, all_topics=False)
        try:
            response = await self.any_broker("Metadata", request)
        except NetworkError as exc:
            log.info("metadata refresh failed: %s", exc)
            self.last_error = str(exc)
            self._need_update = True
            self._back_off()
            return
        self.last_error = ""
        incomplete = self.learn(response)
        self._updated_at = time.monotonic()
        if incomplete:
            # An offline leader or a topic the cluster does not know (yet):
            # ask again, after a growing backoff rather than at once.
            self._need_update = True
            self._back_off()
        else:
            self._failures = 0
            self._next_attempt_at = time.monotonic() + self._backoff_s
        changed = self._event()
        changed.set()
        self._changed = asyncio.Event()

    def _back_off(self) -> None:
        delay = min(self._backoff_s * (2 ** self._failures), self._backoff_max_s)
        self._failures += 1
        self._next_attempt_at = time.monotonic() + delay * random.uniform(0.8, 1.2)

    def _event(self) -> asyncio.Event:
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed

    # --- closing -----------------------------------------------------------

    async def close(self) -> None:
        self._closed = True
        if self._refresh_task is not None and not self._refresh_task.done():
            self._refresh_task.cancel()
            try:
                await self._refresh_task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - closing anyway
                pass
        channels, self._channels, self._stubs = list(self._channels.values()), {}, {}
        for channel in channels:
            await channel.close()


__all__ = ["Metadata", "STALE_METADATA_ERRORS"]
