"""The follower's fetch loops, with the transport injected: one asyncio task
per leader this broker follows partitions of, each sending long-polled
Fetch requests for those partitions and applying the answers (follower_fetch.py).

The server shell passes the two RPCs (`fetch`, `list_offsets`: the leader's
id and a request in, the response out; any exception is a transport failure)
and calls `sync()` after every metadata delta so that a new leader gets a
loop. A loop ends by itself once no partition follows its leader.

A partition whose answer is an error backs off for replica.fetch.backoff.ms,
or until its leader epoch changes; a failed request backs off all of its
partitions.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Awaitable, Callable, Optional

from kraftlog_api import broker_pb2 as bpb

from .follower_fetch import Outcome, apply_fetch_response, fetch_request, reset_out_of_range
from .offsets import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP
from .partition import Partition
from .replica_manager import ReplicaManager, TopicPartition

log = logging.getLogger(__name__)

FetchRpc = Callable[[int, bpb.FetchRequest], Awaitable[bpb.FetchResponse]]
ListOffsetsRpc = Callable[[int, bpb.ListOffsetsRequest], Awaitable[bpb.ListOffsetsResponse]]


class ReplicaFetcher:
    def __init__(self, replicas: ReplicaManager, fetch: FetchRpc, list_offsets: ListOffsetsRpc) -> None:
        self.replicas = replicas
        self._fetch = fetch
        self._list_offsets = list_offsets
        self._loops: dict[int, asyncio.Task[None]] = {}
        self._backoff: dict[TopicPartition, tuple[int, float]] = {}  # -> (leader epoch, until loop time)

    @property
    def leaders(self) -> list[int]:
        """The leaders a loop is running for."""
        return sorted(leader for leader, task in self._loops.items() if not task.done())

    def sync(self) -> None:
        """Start a loop for every leader followed that has none. O(leaders):
        a running loop picks up its leader's new partitions by itself."""
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
            if not partitions:
                if wake is None:
                    return  # nothing follows this leader any more
                await asyncio.sleep(wake - loop.time())
                continue
            request = fetch_request(self.replicas, partitions)
            assert request is not None
            try:
                response = await self._fetch(leader_id, request)
            except Exception as exc:  # noqa: BLE001 - the leader is unreachable: back off and retry
                log.warning("broker %d: fetch from leader %d failed: %s", self.replicas.broker_id, leader_id, exc)
                self._back_off(partitions, loop.time())
                continue
            outcomes = apply_fetch_response(self.replicas, request, response)
            for tp, outcome in outcomes.items():
                partition = self.replicas.partitions.get(tp)
                if partition is None:
                    continue
                if outcome.outcome is Outcome.ERROR:
                    self._back_off([partition], loop.time())
                elif outcome.outcome is Outcome.OUT_OF_RANGE:
                    await self._reset(leader_id, partition, loop.time())

    def _ready(self, leader_id: int, now: float) -> tuple[list[Partition], Optional[float]]:
        """The partitions to fetch from `leader_id` now, and when the first
        one backing off is ready again (None if none is)."""
        ready, wake = [], None
        for partition in self.replicas.followed_by(leader_id):
            key = (partition.topic, partition.index)
            backoff = self._backoff.get(key)
            if backoff is not None:
                epoch, until = backoff
                if epoch == partition.leader_epoch and until > now:
                    wake = until if wake is None else min(wake, until)
                    continue
                del self._backoff[key]  # over, or the leader epoch moved on
            ready.append(partition)
        return ready, wake

    def _back_off(self, partitions: list[Partition], now: float) -> None:
        until = now + self.replicas.config.replica_fetch_backoff_ms / 1000
        for partition in partitions:
            self._backoff[(partition.topic, partition.index)] = (partition.leader_epoch, until)

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
