"""KIP-73 replication throttles on a broker: the quota core with a fake
clock, what the image's configs make of it, the leader's held-back Fetch
answers and the follower's held-back partitions."""
from __future__ import annotations

import pytest

from broker.config import BrokerConfig
from broker.produce import append
from broker.replica_fetcher import ReplicaFetcher
from broker.replication_quota import ReplicationQuota, ReplicationQuotas
from kafka_protocol.replication_throttles import (
    FOLLOWER_RATE, FOLLOWER_REPLICAS, LEADER_RATE, LEADER_REPLICAS, UNLIMITED,
)
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.image import MetadataDelta, MetadataImage

from .helpers import Cluster, batch_of, fetch_request, fetched, run


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def config_record(kind: int, name: str, key: str, value: str | None) -> mpb.MetadataRecord:
    record = mpb.ConfigRecord(resource_type=kind, resource_name=name, name=key)  # type: ignore[arg-type]
    if value is not None:
        record.value = value
    return mpb.MetadataRecord(config=record)


def test_an_unbounded_quota_is_never_exceeded() -> None:
    quota = ReplicationQuota(samples=11, window_s=1.0)
    quota.record(10**12, 0.0)
    assert not quota.is_quota_exceeded(0.5) and quota.wait_s(0.5) == 0.0
    assert quota.throttled_bytes == 10**12


def test_the_rate_is_kafkas_over_at_least_n_minus_one_windows() -> None:
    quota = ReplicationQuota(samples=3, window_s=1.0)
    quota.bound = 1000
    quota.record(2000, 0.0)  # spread over 2 windows at start: 1000 B/s, not over the bound
    assert not quota.is_quota_exceeded(0.0)
    quota.record(200, 0.1)  # 2200 B over 2.1 s
    assert quota.is_quota_exceeded(0.1)
    wait = quota.wait_s(0.1)
    assert wait == pytest.approx(0.1)  # 2200 B over 2.2 s is the bound again
    assert not quota.is_quota_exceeded(0.1 + wait + 1e-6)
    assert not quota.is_quota_exceeded(5.0)  # the windows aged out


def test_a_zero_rate_lets_one_fetch_through_then_holds() -> None:
    quota = ReplicationQuota(samples=11, window_s=1.0)
    quota.bound = 0
    assert not quota.is_quota_exceeded(0.0)  # nothing measured yet: 0 is not over 0
    quota.record(1, 0.0)
    assert quota.is_quota_exceeded(0.0) and quota.wait_s(0.0) == 1.0


def test_configs_per_broker_over_the_cluster_default_and_pairs_naming_this_broker() -> None:
    image = MetadataImage()
    quotas = ReplicationQuotas(broker_id=2, samples=11, window_s=1.0)

    def apply(*records: mpb.MetadataRecord) -> None:
        delta = MetadataDelta()
        for record in records:
            image.apply(record, image.offset + 1, delta)
        quotas.apply_configs(image, delta.changed_configs)

    apply(mpb.MetadataRecord(topic=mpb.TopicRecord(name="t", topic_id=b"\x01" * 16)),
          config_record(mpb.BROKER, "", LEADER_RATE, "500"), config_record(mpb.BROKER, "", FOLLOWER_RATE, "700"),
          config_record(mpb.BROKER, "2", FOLLOWER_RATE, "100"), config_record(mpb.BROKER, "3", LEADER_RATE, "9"),
          config_record(mpb.TOPIC, "t", LEADER_REPLICAS, "0:2,1:3"), config_record(mpb.TOPIC, "t", FOLLOWER_REPLICAS, "*"))
    assert (quotas.leader.bound, quotas.follower.bound) == (500, 100)
    assert quotas.leader.is_throttled("t", 0) and not quotas.leader.is_throttled("t", 1)
    assert quotas.follower.is_throttled("t", 5) and not quotas.follower.is_throttled("other", 0)
    apply(config_record(mpb.BROKER, "2", FOLLOWER_RATE, None), config_record(mpb.TOPIC, "t", LEADER_REPLICAS, None))
    assert quotas.follower.bound == 700 and not quotas.leader.is_throttled("t", 0)
    apply(config_record(mpb.BROKER, "", LEADER_RATE, None), config_record(mpb.BROKER, "", FOLLOWER_RATE, None))
    assert (quotas.leader.bound, quotas.follower.bound) == (UNLIMITED, UNLIMITED)
    # A whole new image is announced through the cluster-wide key: every topic is read again.
    fresh = ReplicationQuotas(broker_id=2, samples=11, window_s=1.0)
    fresh.apply_configs(image, {(mpb.BROKER, "")})
    assert fresh.follower.is_throttled("t", 5)


@pytest.fixture
def throttled(tmp_path):
    """Broker 1 leads orders-0 with replicas 1,2,3 and ISR 1,2; its leader side is throttled at 1 B/s."""
    cluster = Cluster(tmp_path)
    cluster.create_topic("orders", {0: [1, 2, 3]}, isr={0: [1, 2]})
    cluster.apply(config_record(mpb.TOPIC, "orders", LEADER_REPLICAS, "0:1"),
                  config_record(mpb.BROKER, "1", LEADER_RATE, "1"))
    clock = cluster[1].replication_quotas.clock = Clock()

    async def produce() -> None:
        for i in range(3):
            await append(cluster[1], "orders", 0, batch_of([b"x" * 100, bytes([i])]), 1, 1000)
    run(produce())
    return cluster, clock


def test_the_leader_answers_an_out_of_sync_follower_without_records_once_over_its_rate(throttled) -> None:
    cluster, clock = throttled
    quota = cluster[1].replication_quotas.leader

    def follower_fetch(replica: int):
        [topic] = run(fetched(cluster[1], fetch_request("orders", 0, 0, replica_id=replica,
                                                        partition_max_bytes=1))).responses
        [answer] = topic.partitions
        return answer

    first = follower_fetch(3)
    assert first.error_code == 0 and len(first.records) > 0  # nothing measured yet: one fetch passes
    assert quota.throttled_bytes == len(first.records)
    held = follower_fetch(3)
    assert held.error_code == 0 and held.records == b"" and held.high_watermark >= 0  # no error, no data
    assert quota.held_back == 1
    in_sync = follower_fetch(2)
    assert len(in_sync.records) > 0  # broker 2 is in the ISR: never held back
    assert quota.throttled_bytes == len(first.records) + len(in_sync.records)  # but its bytes count
    [topic] = run(fetched(cluster[1], fetch_request("orders", 0, 0, partition_max_bytes=1))).responses
    assert topic.partitions[0].error_code == 0  # a consumer is not a follower: never throttled here
    clock.now += 3600  # the windows aged out
    assert len(follower_fetch(3).records) > 0


def test_the_follower_leaves_out_a_throttled_partition_while_over_its_rate(tmp_path) -> None:
    cluster = Cluster(tmp_path, config=BrokerConfig(replication_quota_window_num=2))
    cluster.create_topic("a", {0: [1, 3]}, isr={0: [1]})
    cluster.create_topic("b", {0: [1, 3]})
    cluster.apply(config_record(mpb.TOPIC, "a", FOLLOWER_REPLICAS, "0:3"),
                  config_record(mpb.TOPIC, "b", FOLLOWER_REPLICAS, "*"),
                  config_record(mpb.BROKER, "", FOLLOWER_RATE, "10"))
    follower = cluster[3]
    clock = follower.replication_quotas.clock = Clock()
    fetcher = ReplicaFetcher(follower, fetch=None, list_offsets=None)  # type: ignore[arg-type]
    partitions = follower.followed_by(1)
    assert fetcher._unthrottled(partitions) == (partitions, None)  # under the rate: all of them
    follower.replication_quotas.follower.record(1000, clock.now)
    allowed, wait = fetcher._unthrottled(partitions)
    # a-0 is throttled and broker 3 is out of its ISR; b-0 is throttled but broker 3 is in its ISR.
    assert [p.topic for p in allowed] == ["b"] and wait is not None and 0 < wait <= 1.0
    assert follower.replication_quotas.follower.held_back == 1


def test_a_fetcher_with_everything_held_back_sleeps_instead_of_fetching(tmp_path) -> None:
    """Rate 0: the first fetch (nothing measured yet) brings the data there
    is, then the partition stays out of every Fetch while the windows last."""
    import asyncio

    cluster = Cluster(tmp_path, config=BrokerConfig(replica_fetch_wait_max_ms=50))
    cluster.create_topic("a", {0: [1, 3]}, isr={0: [1]})
    cluster.apply(config_record(mpb.TOPIC, "a", FOLLOWER_REPLICAS, "*"),
                  config_record(mpb.BROKER, "3", FOLLOWER_RATE, "0"))
    asked: list[int] = []

    async def fetch(leader: int, request):
        asked.append(sum(len(t.partitions) for t in request.topics))
        return await fetched(cluster[leader], request)

    async def go() -> None:
        await append(cluster[1], "a", 0, batch_of([b"x" * 100]), 1, 1000)
        fetcher = ReplicaFetcher(cluster[3], fetch, list_offsets=None)  # type: ignore[arg-type]
        fetcher.sync()
        await asyncio.sleep(0.5)
        await fetcher.close()
    run(go())
    quotas = cluster[3].replication_quotas
    assert asked == [1]  # one Fetch, then none: the only partition is held back
    assert cluster[3].get("a", 0).log.log_end_offset == 1
    assert quotas.follower.throttled_bytes > 0 and quotas.follower.held_back >= 1 and quotas.follower_wait_s > 0
