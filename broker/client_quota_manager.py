"""Kafka's ClientQuotaManager, as a pure core: byte rates measured over
sample windows, and how long a client over its quota is throttled.

Rates are Kafka's sampled Rate: `quota.window.num` (11) samples of
`quota.window.size.seconds` (1 s) each; a sample older than all of them
together is forgotten, and the rate is the bytes of the kept samples over
their elapsed time (never less than quota.window.num - 1 windows, so one
burst at start-up is spread as Kafka spreads it). After recording a
request's bytes, a rate above the quota throttles the client for
(rate - quota) / quota * window: the time after which the rate would be
back at the quota if it sent nothing more (Kafka's throttleTime), bounded
by the whole measured span.

Which quota applies is Kafka's precedence (security/client_quotas.py); the
rate is kept per matched entity with the client's own names filled in, so
each user under a default user quota, or each client id under a default
client quota, has its own rate, as Kafka's metric tags make it. Clients
that send nothing for the whole span are forgotten, so a stream of fresh
client ids cannot grow the table without bound.

No I/O and no clock of its own: `now` is passed in (seconds), tests use a
fake clock, the broker's service passes time.monotonic().
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from security.client_quotas import (CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, REQUEST_PERCENTAGE, QuotaEntity,
                                    applicable_quota)

QUOTA_WINDOW_NUM = 11          # Kafka's quota.window.num
QUOTA_WINDOW_SIZE_S = 1.0      # Kafka's quota.window.size.seconds


@dataclass
class _Sample:
    start: float
    total: float = 0.0


class SampledRate:
    """Kafka's Rate over a SampledStat of `samples` windows of `window_s` seconds."""

    def __init__(self, samples: int = QUOTA_WINDOW_NUM, window_s: float = QUOTA_WINDOW_SIZE_S) -> None:
        self.samples = samples
        self.window_s = window_s
        self._samples: list[_Sample] = []
        self.last_record = float("-inf")

    def _purge(self, now: float) -> None:
        span = self.samples * self.window_s
        self._samples = [s for s in self._samples if now - s.start < span]

    def record(self, value: float, now: float) -> None:
        self._purge(now)
        if not self._samples or now - self._samples[-1].start >= self.window_s:
            self._samples.append(_Sample(now))
            del self._samples[:-self.samples]
        self._samples[-1].total += value
        self.last_record = now

    def window_size_s(self, now: float) -> float:
        """The elapsed time the rate divides by (Kafka's Rate.windowSize)."""
        self._purge(now)
        elapsed = now - self._samples[0].start if self._samples else 0.0
        full_windows = int(elapsed // self.window_s)
        if full_windows < self.samples - 1:
            elapsed += (self.samples - 1 - full_windows) * self.window_s
        return max(elapsed, 0.001)

    def measure(self, now: float) -> float:
        """Per second."""
        size = self.window_size_s(now)
        return sum(s.total for s in self._samples) / size


def _rate_key(entity: QuotaEntity, user: Optional[str], client_id: str) -> QuotaEntity:
    """The matched entity with the client's own names in place of defaults."""
    actual = {"user": user, "client-id": client_id}
    return tuple((kind, actual[kind]) for kind, _ in entity)


class ClientQuotaManager:
    """One quota key's rates (producer_byte_rate for Produce, consumer_byte_rate
    for Fetch, request_percentage for every client request). A throttle is
    bounded by the whole measured span unless `max_throttle_ms` says less."""

    def __init__(self, quota_key: str, samples: int = QUOTA_WINDOW_NUM,
                 window_s: float = QUOTA_WINDOW_SIZE_S, max_throttle_ms: Optional[int] = None) -> None:
        self.quota_key = quota_key
        self.samples = samples
        self.window_s = window_s
        self.max_throttle_ms = int(samples * window_s * 1000) if max_throttle_ms is None else max_throttle_ms
        self._rates: dict[QuotaEntity, SampledRate] = {}
        self._next_expiry = 0.0

    def record_and_get_throttle_time_ms(self, quotas: Mapping[QuotaEntity, Mapping[str, float]],
                                        user: Optional[str], client_id: str, value: float, now: float) -> int:
        """Record `value` for the client and return how long to throttle it (0: within its quota, or none applies)."""
        self._expire(now)
        found = applicable_quota(quotas, self.quota_key, user, client_id)
        if found is None:
            return 0
        entity, bound = found
        key = _rate_key(entity, user, client_id)  # a changed quota applies to the rate measured so far
        rate = self._rates.get(key)
        if rate is None:
            rate = self._rates[key] = SampledRate(self.samples, self.window_s)
        rate.record(value, now)
        measured = rate.measure(now)
        if measured <= bound:
            return 0
        throttle_ms = (measured - bound) / bound * rate.window_size_s(now) * 1000
        return min(round(throttle_ms), self.max_throttle_ms)

    def _expire(self, now: float) -> None:
        """Forget rates no request fed for the whole measured span (at most once per window)."""
        if now < self._next_expiry:
            return
        self._next_expiry = now + self.window_s
        span = self.samples * self.window_s
        for key in [k for k, r in self._rates.items() if now - r.last_record >= span]:
            del self._rates[key]

    def __len__(self) -> int:
        return len(self._rates)


class ClientQuotas:
    """A broker's quota managers, shared by all its listeners: Produce is
    measured against producer_byte_rate, a consumer's Fetch against
    consumer_byte_rate, and every client request's time on the event loop
    against request_percentage (broker/request_quota.py). The amount of the
    request manager is percent-seconds (busy seconds x 100), so its rate is a
    percentage of one event loop, comparable with the quota; as Kafka's
    ClientRequestQuotaManager, its throttle is at most one window."""

    def __init__(self, samples: int = QUOTA_WINDOW_NUM, window_s: float = QUOTA_WINDOW_SIZE_S) -> None:
        self.produce = ClientQuotaManager(PRODUCER_BYTE_RATE, samples, window_s)
        self.fetch = ClientQuotaManager(CONSUMER_BYTE_RATE, samples, window_s)
        self.request = ClientQuotaManager(REQUEST_PERCENTAGE, samples, window_s,
                                          max_throttle_ms=int(window_s * 1000))
        # Connection (gRPC peer) -> monotonic time until which it is muted.
        self._muted_until: dict[str, float] = {}

    def mute(self, peer: str, throttle_ms: int, now: float) -> None:
        """KIP-219: the throttled answer goes out at once, and the connection
        is muted for the throttle time: its next request waits that long
        here. A client that honours throttle_time_ms sends nothing meanwhile,
        so it pays the delay once; one that ignores it is held back anyway."""
        if throttle_ms <= 0:
            return
        self._muted_until = {p: t for p, t in self._muted_until.items() if t > now}  # forget the ended ones
        self._muted_until[peer] = max(self._muted_until.get(peer, 0.0), now + throttle_ms / 1000)

    def unmuted_in(self, peer: str, now: float) -> float:
        """Seconds until `peer` may be served again (0: now)."""
        return max(0.0, self._muted_until.get(peer, 0.0) - now)
