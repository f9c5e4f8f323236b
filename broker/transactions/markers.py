"""The marker writer: after a Prepare* record is durable, a COMMIT or ABORT
marker (WriteTxnMarkers, producer epoch = the bumped epoch,
coordinator_epoch = the coordinator's leader epoch of its
__transaction_state partition) goes to the leader of every partition of
the transaction, retried with backoff until each partition acknowledged.

- A partition led here is written directly (broker/txn_markers.py, through
  `write_local`); the others over the inter-broker listener (`send_remote`,
  BrokerPeers.write_txn_markers).
- A partition whose topic (or the partition itself) is gone from the
  metadata image counts as done: there is nothing left to mark.
- TRANSACTION_COORDINATOR_FENCED or INVALID_PRODUCER_EPOCH from a leader
  means a newer coordinator or producer epoch wrote there already: this
  coordinator stops and writes no Complete* record (Kafka's handling).
- The writing stops too when the coordinator loses its partition
  (`still_current`): the next one resumes from its Prepare* record.
"""
from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from typing import Awaitable, Callable

from kraftlog_api import broker_pb2 as bpb
from metadata_quorum.image import MetadataImage

from ..errors import Error, error_name
from .machine import MarkerJob
from .records import TopicPartition

log = logging.getLogger(__name__)

SendMarkers = Callable[[int, bpb.WriteTxnMarkersRequest], Awaitable[bpb.WriteTxnMarkersResponse]]
WriteLocal = Callable[[bpb.WriteTxnMarkersRequest], Awaitable[bpb.WriteTxnMarkersResponse]]
FENCED = (Error.TRANSACTION_COORDINATOR_FENCED, Error.INVALID_PRODUCER_EPOCH)
BACKOFF_S, MAX_BACKOFF_S = 0.05, 2.0


class MarkersFenced(Exception):
    """A leader refused the marker as from an older coordinator or producer epoch."""


def marker_request(job: MarkerJob, coordinator_epoch: int,
                   partitions: list[TopicPartition]) -> bpb.WriteTxnMarkersRequest:
    topics: dict[str, list[int]] = defaultdict(list)
    for topic, index in sorted(partitions):
        topics[topic].append(index)
    marker = bpb.WriteTxnMarkersRequest.Marker(
        producer_id=job.producer_id, producer_epoch=job.producer_epoch, transaction_result=job.committed,
        coordinator_epoch=coordinator_epoch,
        topics=[bpb.WriteTxnMarkersRequest.Topic(name=t, partition_indexes=ix) for t, ix in topics.items()])
    return bpb.WriteTxnMarkersRequest(markers=[marker])


def gone(image: MetadataImage, tp: TopicPartition) -> bool:
    topic = image.topic(tp[0])
    return topic is None or tp[1] not in topic.partitions


class MarkerWriter:
    def __init__(self, broker_id: int, image: Callable[[], MetadataImage], send_remote: SendMarkers,
                 write_local: WriteLocal, *, backoff_s: float = BACKOFF_S, max_backoff_s: float = MAX_BACKOFF_S,
                 ) -> None:
        self.broker_id = broker_id
        self.image = image
        self.send_remote = send_remote
        self.write_local = write_local
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s

    async def write(self, job: MarkerJob, coordinator_epoch: int, still_current: Callable[[], bool]) -> bool:
        """True once every partition has its marker (or is gone); False when
        the coordinator moved on or a leader fenced it."""
        remaining = set(job.partitions)
        backoff = self.backoff_s
        while still_current():
            image = self.image()
            remaining = {tp for tp in remaining if not gone(image, tp)}
            if not remaining:
                return True
            by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
            for tp in remaining:
                leader = image.topic(tp[0]).partitions[tp[1]].leader
                if leader >= 0:
                    by_leader[leader].append(tp)
            try:
                results = await asyncio.gather(*(self._send(leader, job, coordinator_epoch, tps)
                                                 for leader, tps in by_leader.items()))
            except MarkersFenced as exc:
                log.warning("markers of %r stopped: %s", job.transactional_id, exc)
                return False
            for acknowledged in results:
                remaining -= acknowledged
            if remaining:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.max_backoff_s)
        return False

    async def _send(self, leader: int, job: MarkerJob, coordinator_epoch: int,
                    partitions: list[TopicPartition]) -> set[TopicPartition]:
        """The partitions this leader acknowledged (any failure: none, retried later)."""
        request = marker_request(job, coordinator_epoch, partitions)
        try:
            if leader == self.broker_id:
                response = await self.write_local(request)
            else:
                response = await self.send_remote(leader, request)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - transport failures are retried
            log.info("markers of %r to broker %d: %s", job.transactional_id, leader, exc)
            return set()
        done: set[TopicPartition] = set()
        for marker in response.markers:
            for topic in marker.topics:
                for p in topic.partitions:
                    tp = (topic.name, p.partition_index)
                    if p.error_code == Error.NONE:
                        done.add(tp)
                    elif p.error_code in FENCED:
                        raise MarkersFenced(f"{tp[0]}-{tp[1]} at broker {leader}: {error_name(p.error_code)}")
                    else:
                        log.debug("marker of %r at %s-%d: %s", job.transactional_id, tp[0], tp[1],
                                  error_name(p.error_code))
        return done
