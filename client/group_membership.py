"""A consumer's membership in its group, by KIP-848's protocol: the member
heartbeats its subscription and the partitions it owns; the coordinator
answers with the member's epoch and, when it changes, its target
assignment.

This part runs on the background loop and only talks to the coordinator.
The reconciliation itself (stop fetching, commit, on_revoke, on_assign)
needs the application thread, as Kafka runs rebalance callbacks inside
poll(): a new target is left in `target` and poll() works it off, then
sets `owned` (`reconciled()`), which the next heartbeat - sent at once -
reports. The coordinator gives a moved partition to its new owner only
after the old owner stopped reporting it, so two members never own one.

- UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH: the member's partitions are lost
  (`lost`: poll() drops them without committing and calls on_lost), then it
  joins again with epoch 0.
- NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, an unreachable coordinator:
  FindCoordinator again (coordinator.py), with the full state in the next
  heartbeat.
- max.poll.interval.ms without a poll(): the member leaves the group, as
  Kafka's does; the next poll() releases its partitions and joins again.
Every field the application thread reads is read and written under the
subscription state's lock (`cond`).
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Optional

from kafka_protocol.errors import Errors
from kraftlog_api import groups_pb2 as gpb

from .consumer_config import ConsumerConfig
from .consumer_types import TopicPartition
from .coordinator import Coordinator, CoordinatorUnavailable
from .errors import KafkaError, NetworkError, error_for_code
from .io_thread import LoopWorker
from .subscription_state import SubscriptionState

log = logging.getLogger(__name__)

LOST_MEMBERSHIP = frozenset({Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_MEMBER_EPOCH, Errors.STALE_MEMBER_EPOCH})
JOIN_EPOCH, LEAVE_EPOCH = 0, -1
IDLE_WAKE_S = 1.0
LEAVE_TIMEOUT_S = 5.0


def topic_partitions(partitions: frozenset[TopicPartition]) -> list[gpb.TopicPartitions]:
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return [gpb.TopicPartitions(topic=t, partitions=ps) for t, ps in by_topic.items()]


def from_topic_partitions(items: list[gpb.TopicPartitions]) -> frozenset[TopicPartition]:
    return frozenset(TopicPartition(t.topic, p) for t in items for p in t.partitions)


class GroupMembership(LoopWorker):
    def __init__(self, config: ConsumerConfig, coordinator: Coordinator, state: SubscriptionState) -> None:
        super().__init__()
        self._config = config
        self._coordinator = coordinator
        self._state = state
        self._interval_s = config.heartbeat_interval_ms / 1000
        self._backoff_s = config.retry_backoff_ms / 1000
        # Under state.cond:
        self.member_id = ""
        self.member_epoch = JOIN_EPOCH
        self.topics: Optional[tuple[str, ...]] = None
        self.pattern: Optional[str] = None
        self.owned: frozenset[TopicPartition] = frozenset()
        self.target: Optional[frozenset[TopicPartition]] = None  # for poll() to reconcile to
        self.lost = False                                        # for poll() to release everything
        self.fatal: Optional[KafkaError] = None                  # for poll() to raise
        self.last_poll = time.monotonic()
        self._send_full = True            # subscription and owned in the next heartbeat
        self._acked_owned: Optional[frozenset[TopicPartition]] = None

    # --- from the application thread (holding state.cond) --------------------

    @property
    def subscribed(self) -> bool:
        return self.topics is not None or self.pattern is not None

    def subscribe(self, topics: Optional[tuple[str, ...]], pattern: Optional[str]) -> None:
        self.topics, self.pattern = topics, pattern
        self._send_full = True

    def reconciled(self, owned: frozenset[TopicPartition]) -> None:
        """poll() has released and taken partitions: `owned` is what it holds now."""
        self.owned = owned

    def released_all(self) -> None:
        """poll() dropped every partition after `lost`: join again."""
        self.owned = frozenset()
        self.lost = False
        self.target = None
        self.member_epoch = JOIN_EPOCH
        self._send_full = True

    def member(self) -> tuple[str, int]:
        """(member id, epoch) for an OffsetCommit/OffsetFetch."""
        return self.member_id, self.member_epoch

    # --- on the loop ---------------------------------------------------------

    async def run(self) -> None:
        while self._next_turn():
            request = self._next_request()
            if request is None:
                await self._sleep(IDLE_WAKE_S)
                continue
            try:
                response = await self._coordinator.call_once("ConsumerGroupHeartbeat", request)
            except (CoordinatorUnavailable, NetworkError) as exc:
                log.info("group %s: heartbeat: %s", self._config.group_id, exc)
                with self._state.cond:
                    self._send_full = True
                await self._sleep(self._backoff_s)
                continue
            except KafkaError as exc:  # e.g. UNSUPPORTED_VERSION: no coordinator on the brokers
                self._fail(exc)
                continue
            self._handle(request, response)
            if self._must_send_now():
                continue
            await self._sleep(self._interval_s)

    def _next_request(self) -> Optional[gpb.ConsumerGroupHeartbeatRequest]:
        c = self._config
        with self._state.cond:
            if not self.subscribed or self.lost or self.fatal is not None:
                return None
            if (self.member_epoch > JOIN_EPOCH
                    and time.monotonic() - self.last_poll > c.max_poll_interval_ms / 1000):
                log.warning("group %s: no poll() in max.poll.interval.ms=%d: leaving the group",
                            c.group_id, c.max_poll_interval_ms)
                asyncio.get_running_loop().create_task(self.leave())
                self.lost = True
                self._state.cond.notify_all()
                return None
            request = gpb.ConsumerGroupHeartbeatRequest(
                group_id=c.group_id, member_id=self.member_id, member_epoch=self.member_epoch,
                instance_id=c.group_instance_id or "", rack_id=c.client_rack,
                rebalance_timeout_ms=c.max_poll_interval_ms)
            if self._send_full or self.member_epoch == JOIN_EPOCH:
                if self.pattern is not None:
                    request.subscribed_topic_regex = self.pattern
                else:
                    request.subscribed_topic_names.SetInParent()  # present even when empty
                    request.subscribed_topic_names.names.extend(self.topics or ())
                request.server_assignor = c.group_remote_assignor
            if self._send_full or self.member_epoch == JOIN_EPOCH or self.owned != self._acked_owned:
                request.owned_partitions.SetInParent()  # present even when empty: "I hold nothing"
                request.owned_partitions.topic_partitions.extend(topic_partitions(self.owned))
            return request

    def _must_send_now(self) -> bool:
        with self._state.cond:
            return self.subscribed and not self.lost and self.owned != self._acked_owned

    def _handle(self, request: gpb.ConsumerGroupHeartbeatRequest,
                response: gpb.ConsumerGroupHeartbeatResponse) -> None:
        code = response.error_code
        with self._state.cond:
            if request.member_epoch != self.member_epoch and code == Errors.NONE:
                return  # released or left meanwhile: this answer is for an older epoch
            if code == Errors.NONE:
                self.member_id, self.member_epoch = response.member_id, response.member_epoch
                if response.heartbeat_interval_ms > 0:
                    self._interval_s = response.heartbeat_interval_ms / 1000
                self._send_full = False
                if request.HasField("owned_partitions"):
                    self._acked_owned = from_topic_partitions(list(request.owned_partitions.topic_partitions))
                if response.HasField("assignment"):
                    target = from_topic_partitions(list(response.assignment.topic_partitions))
                    if target != self.owned or self.target is not None:
                        self.target = target
                        self._state.cond.notify_all()
            elif code in LOST_MEMBERSHIP:
                log.warning("group %s: member %s epoch %d: %s: partitions lost, joining again",
                            self._config.group_id, self.member_id, self.member_epoch,
                            error_for_code(code, response.error_message))
                if code == Errors.UNKNOWN_MEMBER_ID:
                    self.member_id = ""
                self.member_epoch = JOIN_EPOCH
                self.lost = bool(self.owned) or self.target is not None
                self._acked_owned = None
                self._send_full = True
                self._state.cond.notify_all()
            else:
                self.fatal = error_for_code(code, f"ConsumerGroupHeartbeat for group {self._config.group_id}: "
                                                  f"{response.error_message}")
                self._state.cond.notify_all()

    def _fail(self, exc: KafkaError) -> None:
        with self._state.cond:
            self.fatal = exc
            self._state.cond.notify_all()

    async def leave(self) -> None:
        """Leave the group (epoch -1), one attempt, bounded: a member that does
        not get through is removed when its session expires."""
        with self._state.cond:
            if self.member_epoch <= JOIN_EPOCH or not self.member_id:
                return
            request = gpb.ConsumerGroupHeartbeatRequest(
                group_id=self._config.group_id, member_id=self.member_id, member_epoch=LEAVE_EPOCH,
                instance_id=self._config.group_instance_id or "")
            self.member_id, self.member_epoch = "", JOIN_EPOCH  # a later join is a new member
            self._acked_owned = None
            self._send_full = True
        try:
            await self._coordinator.call_once("ConsumerGroupHeartbeat", request, LEAVE_TIMEOUT_S)
        except (CoordinatorUnavailable, KafkaError) as exc:
            log.info("group %s: leaving: %s", self._config.group_id, exc)
