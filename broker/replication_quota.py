"""KIP-73 replication throttles on one broker: Kafka's two
ReplicationQuotaManagers (leader and follower) as pure cores, kept in step
with the metadata image.

Each side has a byte rate measured as Kafka measures quotas
(client_quota_manager.SampledRate: `replication.quota.window.num` windows
of `replication.quota.window.size.seconds`), a bound (this broker's
`*.replication.throttled.rate`, else the cluster-wide default, else none)
and the partitions throttled here (the topics' `*.replication.throttled.replicas`
pairs naming this broker, or `*`).

How the two paths use them, as Kafka's ReplicaManager and fetcher do:
- a partition is held back (the leader answers it without records, the
  follower leaves it out of its Fetch) when it is throttled on that side,
  the follower is not in the partition's ISR, and the side's measured rate
  is over its bound; the check comes before the bytes, so one fetch's worth
  may pass the bound, never more;
- the bytes of every throttled partition are recorded after the fact
  (in the ISR or not: they share the link), counted from the batches'
  lengths, never per record.
Nothing is delayed and no error is made: a held-back partition simply
moves no bytes in that round.

`now` is passed in (seconds, monotonic): tests drive a fake clock.
"""
from __future__ import annotations

import time
from typing import Callable, Iterable, Optional

from kafka_protocol.replication_throttles import (
    FOLLOWER_RATE, FOLLOWER_REPLICAS, LEADER_RATE, LEADER_REPLICAS, UNLIMITED, parse_rate, throttled_partitions,
)
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.image import MetadataImage

from .client_quota_manager import SampledRate

MIN_WAIT_S = 0.01  # a follower with everything held back re-checks no faster than this


class ReplicationQuota:
    """One side (leader or follower): Kafka's ReplicationQuotaManager."""

    def __init__(self, samples: int, window_s: float) -> None:
        self.rate = SampledRate(samples, window_s)
        self.bound = UNLIMITED
        self._throttled: dict[str, Optional[frozenset[int]]] = {}  # topic -> partitions, None: all
        self.throttled_bytes = 0  # bytes of throttled partitions moved (a counter)
        self.held_back = 0        # partitions held back because the rate was over the bound (a counter)

    @property
    def active(self) -> bool:
        """Some partition is throttled on this side (else nothing needs looking at)."""
        return bool(self._throttled)

    def is_throttled(self, topic: str, partition: int) -> bool:
        if topic not in self._throttled:
            return False
        partitions = self._throttled[topic]
        return partitions is None or partition in partitions

    def is_quota_exceeded(self, now: float) -> bool:
        return self.bound != UNLIMITED and self.rate.measure(now) > self.bound

    def record(self, nbytes: int, now: float) -> None:
        if nbytes > 0:
            self.rate.record(nbytes, now)
            self.throttled_bytes += nbytes

    def wait_s(self, now: float) -> float:
        """How long until the rate is back at the bound if nothing more is
        recorded (windows that age out only make it sooner), at most one
        window: when a held-back follower looks again."""
        if not self.is_quota_exceeded(now):
            return 0.0
        total = self.rate.measure(now) * self.rate.window_size_s(now)
        wait = total / self.bound - self.rate.window_size_s(now) if self.bound > 0 else self.rate.window_s
        return min(max(wait, MIN_WAIT_S), self.rate.window_s)

    def set_topic(self, topic: str, partitions: Optional[frozenset[int]]) -> None:
        if partitions is not None and not partitions:
            self._throttled.pop(topic, None)
        else:
            self._throttled[topic] = partitions

    def clear_topics(self) -> None:
        self._throttled.clear()


class ReplicationQuotas:
    """The leader and follower quotas of broker `broker_id`."""

    def __init__(self, broker_id: int, samples: int, window_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.broker_id = broker_id
        self.clock = clock
        self.leader = ReplicationQuota(samples, window_s)
        self.follower = ReplicationQuota(samples, window_s)
        self.follower_wait_s = 0.0  # time the fetcher slept with every partition held back (a counter)

    def apply_configs(self, image: MetadataImage, changed: Iterable[tuple[int, str]]) -> None:
        """Re-read what the changed config resources say; the cluster-wide one
        (also what a whole new image is announced with) re-reads everything."""
        changed = set(changed)
        if (mpb.BROKER, "") in changed:
            self.leader.clear_topics()
            self.follower.clear_topics()
            changed |= {(mpb.TOPIC, name) for kind, name in image.configs if kind == mpb.TOPIC}
        if (mpb.BROKER, "") in changed or (mpb.BROKER, str(self.broker_id)) in changed:
            own, cluster = image.broker_config(self.broker_id), image.cluster_config()
            self.leader.bound = parse_rate(own.get(LEADER_RATE, cluster.get(LEADER_RATE)))
            self.follower.bound = parse_rate(own.get(FOLLOWER_RATE, cluster.get(FOLLOWER_RATE)))
        for kind, name in changed:
            if kind == mpb.TOPIC:
                settings = image.topic_config(name)  # empty for a deleted topic
                self.leader.set_topic(name, throttled_partitions(settings.get(LEADER_REPLICAS), self.broker_id))
                self.follower.set_topic(name, throttled_partitions(settings.get(FOLLOWER_REPLICAS), self.broker_id))


def throttled_response_bytes(quota: ReplicationQuota, response: bpb.FetchResponse) -> int:
    """The bytes of a Fetch answer's throttled partitions (batch bytes as received)."""
    if not quota.active:
        return 0
    return sum(len(p.records) for t in response.responses for p in t.partitions
               if p.records and quota.is_throttled(t.topic, p.partition_index))
