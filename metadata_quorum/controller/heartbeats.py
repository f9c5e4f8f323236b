"""Broker sessions: when the active controller last heard from each broker.

Soft state, never in the log: a controller that becomes active starts every
registered broker's session afresh (as Kafka does), so a leader change
never fences a healthy broker.
"""

from __future__ import annotations

from typing import Iterable, Iterator


class BrokerHeartbeats:
    def __init__(self, session_timeout_ms: int, now_ms: int) -> None:
        self.session_timeout_ms = session_timeout_ms
        self.started_ms = now_ms
        self._last_contact: dict[int, int] = {}

    def touch(self, broker_id: int, now_ms: int) -> None:
        """A registration or a valid heartbeat from `broker_id` arrived at `now_ms`."""
        self._last_contact[broker_id] = max(now_ms, self._last_contact.get(broker_id, now_ms))

    def last_contact(self, broker_id: int) -> int:
        return self._last_contact.get(broker_id, self.started_ms)

    def session_expired(self, broker_id: int, now_ms: int) -> bool:
        return self.last_contact(broker_id) + self.session_timeout_ms < now_ms

    def expired(self, broker_ids: Iterable[int], now_ms: int) -> Iterator[int]:
        """Those of `broker_ids` whose session ran out, in id order."""
        return (b for b in sorted(broker_ids) if self.session_expired(b, now_ms))
