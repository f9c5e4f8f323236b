"""What the group and transaction coordinators share about their internal
topics (__consumer_offsets, __transaction_state): creating the topic through
the active controller on first use, one request at a time, and
FindCoordinator's answer for a key (the leader of the key's partition, by
its endpoint on the asking listener).
"""
from __future__ import annotations

import asyncio
import logging
from typing import Optional

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import groups_pb2 as gpb
from kafka_protocol.coordinator_placement import partition_for
from metadata_quorum.image import MetadataImage

from .controller_client import ControllerClient, ControllerUnavailable
from .errors import Error
from .metadata import client_endpoint

log = logging.getLogger(__name__)


class InternalTopicCreator:
    """CreateTopics of one internal topic; concurrent callers share one request."""

    def __init__(self, broker_id: int, controllers: ControllerClient, timeout_s: float) -> None:
        self.broker_id = broker_id
        self.controllers = controllers
        self.timeout_s = timeout_s
        self._creating: Optional[asyncio.Future[None]] = None

    async def create(self, topic: cpb.CreateTopicsRequest.CreatableTopic) -> None:
        """Returns once created, failed (logged) or timed out: the caller looks at the image."""
        if self._creating is None or self._creating.done():
            self._creating = asyncio.ensure_future(self._create(topic))
        try:
            await asyncio.wait_for(asyncio.shield(self._creating), self.timeout_s)
        except asyncio.TimeoutError:
            pass

    async def _create(self, topic: cpb.CreateTopicsRequest.CreatableTopic) -> None:
        try:
            response = await self.controllers.call("CreateTopics", cpb.CreateTopicsRequest(topics=[topic]),
                                                   timeout_s=self.timeout_s)
        except ControllerUnavailable as exc:
            log.warning("broker %d: cannot create %s: %s", self.broker_id, topic.name, exc)
            return
        results = [(r.error_code, r.error_message) for r in response.topics]
        if response.error_code or any(code not in (Error.NONE, Error.TOPIC_ALREADY_EXISTS) for code, _ in results):
            log.warning("broker %d: creating %s failed: %s %s", self.broker_id, topic.name, response.error_code,
                        results)
        else:
            log.info("broker %d: created %s (%d partitions, replication factor %d)", self.broker_id, topic.name,
                     topic.num_partitions, topic.replication_factor)


def coordinator_of(image: MetadataImage, topic_name: str, key: str, listener: str,
                   out: gpb.FindCoordinatorResponse.Coordinator) -> None:
    """Fill `out` with the coordinator of `key`, or COORDINATOR_NOT_AVAILABLE."""
    topic = image.topic(topic_name)
    state = topic.partitions.get(partition_for(key, len(topic.partitions))) if topic else None
    broker = image.brokers.get(state.leader) if state is not None else None
    endpoint = client_endpoint(broker, listener) if broker is not None and not broker.fenced else None
    if endpoint is None:
        out.node_id = -1
        out.error_code = Error.COORDINATOR_NOT_AVAILABLE
        out.error_message = f"{topic_name} has no leader for this key yet"
        return
    out.node_id, out.host, out.port = broker.broker_id, endpoint.host, endpoint.port
