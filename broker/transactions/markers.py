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

Test only: with the environment variable KRAFTLOG_TEST_MARKER_DELAY set to
"<max delay ms>,<fraction delayed>,<fraction re-sent>" (the chaos testbed's
transactions scenario sets it; unset, the default, nothing changes), a
random subset of sends waits up to the delay first, and a random subset of
acknowledged requests is sent again 0.1-1 s later, when the producer is
usually inside its next transaction: the delayed commit or abort of
Jepsen's Bufstream analysis, which the partitions must refuse (KIP-890).
"""
from __future__ import annotations

import asyncio
import logging
import os
import random
from collections import defaultdict
from dataclasses import dataclass
from typing import Awaitable, Callable, Optional

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
TEST_MARKER_DELAY = "KRAFTLOG_TEST_MARKER_DELAY"
REPLAY_AFTER_S = (0.1, 1.0)


@dataclass(frozen=True)
class MarkerChaos:
    """The test-only hook's settings (see the module's docstring)."""
    max_delay_s: float
    delay_fraction: float
    replay_fraction: float

    @classmethod
    def from_environment(cls) -> Optional["MarkerChaos"]:
        text = os.environ.get(TEST_MARKER_DELAY, "").strip()
        if not text:
            return None
        try:
            delay_ms, delayed, replayed = (float(part) for part in text.split(","))
        except ValueError:
            raise ValueError(f"{TEST_MARKER_DELAY} must be '<max delay ms>,<fraction>,<fraction>', "
                             f"not {text!r}") from None
        if delay_ms < 0 or not (0 <= delayed <= 1 and 0 <= replayed <= 1):
            raise ValueError(f"{TEST_MARKER_DELAY}: a delay >= 0 and fractions in [0, 1], not {text!r}")
        log.warning("test hook %s=%s: WriteTxnMarkers sends are delayed and re-sent on purpose",
                    TEST_MARKER_DELAY, text)
        return cls(delay_ms / 1000, delayed, replayed)


class MarkersFenced(Exception):
    """A leader refused the marker as from an older coordinator or producer epoch."""


def marker_request(job: MarkerJob, coordinator_epoch: int,
                   partitions: list[TopicPartition]) -> bpb.WriteTxnMarkersRequest:
    topics: dict[str, list[int]] = defaultdict(list)
    for topic, index in sorted(partitions):
        topics[topic].append(index)
    marker = bpb.WriteTxnMarkersRequest.Marker(
        producer_id=job.producer_id, producer_epoch=job.producer_epoch, transaction_result=job.committed,
        coordinator_epoch=coordinator_epoch, keep_epoch=job.keep_epoch,
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
        self.chaos = MarkerChaos.from_environment()
        self._replays: set[asyncio.Task] = set()

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
            if self.chaos is not None and random.random() < self.chaos.delay_fraction:
                await asyncio.sleep(random.uniform(0, self.chaos.max_delay_s))
            response = await self._deliver(leader, request)
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
        if done and self.chaos is not None and random.random() < self.chaos.replay_fraction:
            replay = asyncio.get_running_loop().create_task(self._replay_later(leader, request))
            self._replays.add(replay)
            replay.add_done_callback(self._replays.discard)
        return done

    async def _deliver(self, leader: int, request: bpb.WriteTxnMarkersRequest) -> bpb.WriteTxnMarkersResponse:
        if leader == self.broker_id:
            return await self.write_local(request)
        return await self.send_remote(leader, request)

    async def _replay_later(self, leader: int, request: bpb.WriteTxnMarkersRequest) -> None:
        """The test hook: an acknowledged marker request arrives again, late."""
        await asyncio.sleep(random.uniform(*REPLAY_AFTER_S))
        try:
            response = await self._deliver(leader, request)
        except Exception as exc:  # noqa: BLE001 - a late copy that got lost is just as good
            log.info("test hook: late marker copy to broker %d: %s", leader, exc)
            return
        marker = request.markers[0]
        codes = sorted({error_name(p.error_code) for m in response.markers for t in m.topics for p in t.partitions})
        log.info("test hook: late marker copy (producer %d epoch %d %s) to broker %d: %s", marker.producer_id,
                 marker.producer_epoch, "COMMIT" if marker.transaction_result else "ABORT", leader, ", ".join(codes))
