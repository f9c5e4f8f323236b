"""The follower's fetch loops, with the transport injected: one asyncio task
per leader this broker follows partitions of, each sending long-polled
Fetch requests for those partitions and applying the answers (follower_fetch.py).
Each loop keeps a KIP-227 fetch session with its leader
(kafka_protocol/fetch_session_handler.py): after the first, full, fetch it
sends only the partitions whose fetch state changed, and the leader parks
the fetch until one of the session's partitions has something new, so an
idle follower costs one small request per replica.fetch.wait.max.ms.

The server shell passes the two RPCs (`fetch`, `list_offsets`: the leader's
id and a request in, the response out; any exception is a transport failure)
and calls `sync()` after every metadata delta so that a new leader gets a
loop. A loop ends by itself once no partition follows its leader.

A partition whose answer is an error backs off for replica.fetch.backoff.ms,
or until its leader epoch changes; a failed request backs off all of its
partitions.

KIP-73 follower throttle (replication_quota.py): a partition throttled on
this broker is left out of the Fetch while the follower rate is over its
bound and this broker is not in the partition's ISR; the bytes received for
throttled partitions are recorded. When every partition is held back the
loop sleeps until the rate is back at the bound (at most one window).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable, Optional

from kraftlog_api import broker_pb2 as bpb

from kafka_protocol.fetch_session_handler import FetchSessionHandler

from .errors import Error
from .follower_fetch import Outcome, apply_fetch_response, fetch_state, reset_out_of_range, session_request
from .replication_quota import throttled_response_bytes
from .offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from .partition import Partition
from .replica_manager import ReplicaChanges, ReplicaManager, TopicPartition

log = logging.getLogger(__name__)

FULL_REFRESH_S = 10.0  # how often an idle loop computes every fetch state anew

FetchRpc = Callable[[int, bpb.FetchRequest], Awaitable[bpb.FetchResponse]]
ListOffsetsRpc = Callable[[int, bpb.ListOffsetsRequest], Awaitable[bpb.ListOffsetsResponse]]


class ReplicaFetcher:
    def __init__(self, replicas: ReplicaManager, fetch: FetchRpc, list_offsets: ListOffsetsRpc) -> None:
        self.replicas = replicas
        self._fetch = fetch
        self._list_offsets = list_offsets
        self._loops: dict[int, asyncio.Task[None]] = {}
        self._backoff: dict[TopicPartition, tuple[int, float]] = {}  # -> (leader epoch, until loop time)
        self._sessions: dict[int, FetchSessionHandler] = {}  # leader id -> its fetch session (KIP-227)
        self._wanted: dict[int, dict[TopicPartition, tuple]] = {}  # leader id -> fetch states last planned
        self._touched: dict[int, set[TopicPartition]] = {}  # leader id -> partitions answered since
        self._refresh_at: dict[int, float] = {}  # leader id -> when its states are next computed anew

    @property
    def leaders(self) -> list[int]:
        """The leaders a loop is running for."""
        return sorted(leader for leader, task in self._loops.items() if not task.done())

    def sync(self, changes: Optional[ReplicaChanges] = None) -> None:
        """Start a loop for every leader followed that has none. O(leaders):
        a running loop picks up its leader's new partitions by itself.
        `changes` (None: unknown) are the metadata's replica changes: any
        makes every loop compute its fetch states anew."""
        if changes is None or changes.leaders or changes.followers or changes.stopped or changes.failed:
            self._wanted.clear()
        loop = asyncio.get_running_loop()
        for leader_id in self.replicas.followed_leaders():
            task = self._loops.get(leader_id)
            if task is None or task.done():
                self._loops[leader_id] = loop.create_task(self._run(leader_id), name=f"replica-fetcher-{leader_id}")

    async def close(self) -> None:
        tasks = list(self._loops.values())
        self._loops.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _run(self, leader_id: int) -> None:
        loop = asyncio.get_running_loop()
        while True:
            partitions, wake = self._ready(leader_id, loop.time())
            partitions, throttle_wait = self._unthrottled(partitions)
            if not partitions:
                if wake is None and throttle_wait is None:
                    return  # nothing follows this leader any more
                pause = min(t for t in (None if wake is None else wake - loop.time(), throttle_wait) if t is not None)
                slept_from = loop.time()
                try:
                    await asyncio.sleep(pause)
                finally:
                    if throttle_wait is not None:
                        self.replicas.replication_quotas.follower_wait_s += loop.time() - slept_from
                continue
            session = self._sessions.setdefault(leader_id, FetchSessionHandler())
            wanted, changed = self._wanted_now(leader_id, partitions, loop.time())
            plan = session.plan(wanted, changed)
            request = session_request(self.replicas, plan)
            try:
                response = await self._fetch(leader_id, request)
            except Exception as exc:  # noqa: BLE001 - the leader is unreachable: back off and retry
                log.warning("broker %d: fetch from leader %d failed: %s", self.replicas.broker_id, leader_id, exc)
                session.failed()
                self._back_off(partitions, loop.time())
                continue
            if not session.answered(plan, response.error_code, response.session_id):
                log.info("broker %d: fetch session %d on leader %d: %s, starting a new one", self.replicas.broker_id,
                         plan.session_id, leader_id, Error(response.error_code).name)
                continue
            quotas = self.replicas.replication_quotas
            quotas.follower.record(throttled_response_bytes(quotas.follower, response), quotas.clock())
            outcomes = apply_fetch_response(self.replicas, wanted, response)
            self._touched.setdefault(leader_id, set()).update(outcomes)
            for tp, outcome in outcomes.items():
                if outcome.outcome in (Outcome.ERROR, Outcome.OUT_OF_RANGE, Outcome.STALE):
                    session.resend(tp)  # not answered again by the leader until it changes
                partition = self.replicas.partitions.get(tp)
                if partition is None:
                    continue
                if outcome.outcome is Outcome.ERROR:
                    self._back_off([partition], loop.time())
                elif outcome.outcome is Outcome.OUT_OF_RANGE:
                    await self._reset(leader_id, partition, loop.time())

    def _wanted_now(self, leader_id: int, partitions: list[Partition], now: float,
                    ) -> tuple[dict[TopicPartition, tuple], Optional[set[TopicPartition]]]:
        """Each partition's fetch state, and which may have changed since the
        last round (None: any). An idle round costs O(partitions answered
        last time), not O(partitions followed): the states are computed anew
        only after a metadata change moved partitions (sync), while some back
        off or are throttled, and every FULL_REFRESH_S (a log start moved by
        retention)."""
        max_bytes = self.replicas.config.replica_fetch_max_bytes
        cached = self._wanted.get(leader_id)
        touched = self._touched.pop(leader_id, set())
        if (cached is None or len(cached) != len(partitions) or now >= self._refresh_at.get(leader_id, 0.0)
                or self._backoff):
            # Keyed by each Partition's own tuple; a state equal to the one held is kept, not
            # replaced: the fetch session holds the same tuple, not a copy of it.
            old = cached or {}
            wanted = self._wanted[leader_id] = {p.tp: _same(old.get(p.tp), fetch_state(p, max_bytes))
                                                for p in partitions}
            self._refresh_at[leader_id] = now + FULL_REFRESH_S
            return wanted, None
        for tp in touched:
            partition = self.replicas.partitions.get(tp)
            if tp in cached and partition is not None:
                cached[tp] = _same(cached[tp], fetch_state(partition, max_bytes))
        return cached, touched

    def _ready(self, leader_id: int, now: float) -> tuple[list[Partition], Optional[float]]:
        """The partitions to fetch from `leader_id` now, and when the first
        one backing off is ready again (None if none is)."""
        if not self._backoff:
            return self.replicas.followed_by(leader_id), None
        ready, wake = [], None
        for partition in self.replicas.followed_by(leader_id):
            key = partition.tp
            backoff = self._backoff.get(key)
            if backoff is not None:
                epoch, until = backoff
                if epoch == partition.leader_epoch and until > now:
                    wake = until if wake is None else min(wake, until)
                    continue
                del self._backoff[key]  # over, or the leader epoch moved on
            ready.append(partition)
        return ready, wake

    def _unthrottled(self, partitions: list[Partition]) -> tuple[list[Partition], Optional[float]]:
        """The partitions the follower throttle lets through now, and, if it
        held any back, how long until the rate is back at its bound."""
        quotas = self.replicas.replication_quotas
        quota, now = quotas.follower, quotas.clock()
        if not partitions or not quota.active or not quota.is_quota_exceeded(now):
            return partitions, None
        me = self.replicas.broker_id
        allowed = [p for p in partitions if not quota.is_throttled(p.topic, p.index) or me in p.isr]
        if len(allowed) == len(partitions):
            return partitions, None
        quota.held_back += len(partitions) - len(allowed)
        return allowed, quota.wait_s(now)

    def _back_off(self, partitions: list[Partition], now: float) -> None:
        until = now + self.replicas.config.replica_fetch_backoff_ms / 1000
        for partition in partitions:
            self._backoff[partition.tp] = (partition.leader_epoch, until)

    async def _reset(self, leader_id: int, partition: Partition, now: float) -> None:
        """OFFSET_OUT_OF_RANGE: ask the leader for its log start and end, then
        truncate or start over (follower_fetch.reset_out_of_range)."""
        request = bpb.ListOffsetsRequest(replica_id=self.replicas.broker_id, topics=[
            bpb.ListOffsetsRequest.ListOffsetsTopic(name=partition.topic, partitions=[
                bpb.ListOffsetsRequest.ListOffsetsPartition(
                    partition_index=partition.index, current_leader_epoch=partition.leader_epoch, timestamp=ts)
                for ts in (EARLIEST_TIMESTAMP, LATEST_TIMESTAMP)])])
        epoch = partition.leader_epoch
        try:
            response = await self._list_offsets(leader_id, request)
            [start, end] = [p for t in response.topics for p in t.partitions]
        except Exception as exc:  # noqa: BLE001 - unreachable or a malformed answer: retry later
            log.warning("broker %d: ListOffsets from leader %d failed: %s", self.replicas.broker_id, leader_id, exc)
            self._back_off([partition], now)
            return
        if start.error_code or end.error_code:
            self._back_off([partition], now)
        elif partition.leader_epoch == epoch and not partition.is_leader and not partition.stopped:
            offset = reset_out_of_range(partition, start.offset, end.offset)
            log.info("%s-%d: out of range on leader %d (log %d..%d): fetching from %d", partition.topic,
                     partition.index, leader_id, start.offset, end.offset, offset)


def _same(held: Optional[tuple], state: tuple) -> tuple:
    """`held` if it equals `state`: one tuple per partition however often it is computed."""
    return held if held == state else state
