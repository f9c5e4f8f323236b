"""The AlterPartition loop: ISR changes of the partitions led here, sent to
the active controller one request at a time.

The ReplicaManager decides (isr.py's rules) and keeps each proposal in
flight until an answer comes; this loop only carries requests and answers.
It asks for a request every replica.lag.time.max.ms / 2 (Kafka's ISR
shrink check), and at once when a follower may join an ISR
(`isr_change_wanted`). A request the controller did not answer goes again
after a backoff: its outcome is unknown, so the maximal ISR holds meanwhile.

It also counts the ISR changes the controller accepted (Kafka's
IsrShrinksPerSec and IsrExpandsPerSec, which count only the leader's own
AlterPartition changes, not a fenced broker the controller removes): by the
ISR a proposal was made from and the one the controller answers with, since
the metadata log may bring the new ISR to the partition before the answer.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Optional

from kraftlog_api import controller_pb2 as cpb

from .controller_client import ControllerClient, ControllerUnavailable
from .replica_manager import ReplicaManager

log = logging.getLogger(__name__)

RETRY_BACKOFF_S = 0.1


class IsrUpdates:
    def __init__(self, replicas: ReplicaManager, controllers: ControllerClient, *, request_timeout_s: float) -> None:
        self.replicas = replicas
        self.controllers = controllers
        self.request_timeout_s = request_timeout_s
        self.check_interval_s = max(replicas.config.replica_lag_time_max_ms / 2000, 0.01)
        self._task: Optional[asyncio.Task[None]] = None
        self.shrinks = 0  # accepted changes that removed a replica from an ISR
        self.expands = 0  # ... that added one (a change may do both)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"alter-partition-{self.replicas.broker_id}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            wanted = self.replicas.isr_change_wanted.wait()
            request = self.replicas.alter_partition_request()
            if request is None:
                await asyncio.wait([wanted], timeout=self.check_interval_s)
                continue
            proposed_from = self._current_isrs(request)
            try:
                response = await self.controllers.call("AlterPartition", request, timeout_s=self.request_timeout_s)
            except ControllerUnavailable as exc:
                log.warning("broker %d: AlterPartition not answered: %s", self.replicas.broker_id, exc)
                self.replicas.alter_partition_failed(request)
                await asyncio.sleep(RETRY_BACKOFF_S)
                continue
            self.replicas.alter_partition_answered(request, response)
            self._count_changes(proposed_from, response)
            if response.error_code:
                log.info("broker %d: AlterPartition refused with error %d", self.replicas.broker_id,
                         response.error_code)
                await asyncio.sleep(RETRY_BACKOFF_S)

    def _current_isrs(self, request: cpb.AlterPartitionRequest) -> dict[tuple[bytes, int], tuple[int, ...]]:
        """The ISR of each partition in `request` now, keyed by (topic id, index)."""
        asked = {(topic.topic_id, item.partition_index) for topic in request.topics for item in topic.partitions}
        return {(p.topic_id, p.index): p.isr for p in self.replicas.partitions.values()
                if (p.topic_id, p.index) in asked}

    def _count_changes(self, proposed_from: dict[tuple[bytes, int], tuple[int, ...]],
                       response: cpb.AlterPartitionResponse) -> None:
        if response.error_code:
            return
        for topic in response.topics:
            for result in topic.partitions:
                before = proposed_from.get((topic.topic_id, result.partition_index))
                if result.error_code or before is None:
                    continue
                old, new = set(before), set(result.isr)
                self.shrinks += bool(old - new)
                self.expands += bool(new - old)
