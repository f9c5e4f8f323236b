"""The AlterPartition loop: ISR changes of the partitions led here, sent to
the active controller one request at a time.

The ReplicaManager decides (isr.py's rules) and keeps each proposal in
flight until an answer comes; this loop only carries requests and answers.
It asks for a request every replica.lag.time.max.ms / 2 (Kafka's ISR
shrink check), and at once when a follower may join an ISR
(`isr_change_wanted`). A request the controller did not answer goes again
after a backoff: its outcome is unknown, so the maximal ISR holds meanwhile.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Optional

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
            try:
                response = await self.controllers.call("AlterPartition", request, timeout_s=self.request_timeout_s)
            except ControllerUnavailable as exc:
                log.warning("broker %d: AlterPartition not answered: %s", self.replicas.broker_id, exc)
                self.replicas.alter_partition_failed(request)
                await asyncio.sleep(RETRY_BACKOFF_S)
                continue
            self.replicas.alter_partition_answered(request, response)
            if response.error_code:
                log.info("broker %d: AlterPartition refused with error %d", self.replicas.broker_id,
                         response.error_code)
                await asyncio.sleep(RETRY_BACKOFF_S)
