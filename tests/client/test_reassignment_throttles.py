"""client/reassignment_throttles.py: what a reassignment's throttles are
(pure), and on real processes a follower catching up from an empty log
under a throttle, then fully once the throttle is cleared."""
from __future__ import annotations

import math
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from client.admin import BROKER, TOPIC, describe_configs
from client.cluster import Cluster
from client.errors import InvalidConfigError
from client.reassignment_throttles import apply_throttles, clear_throttles, throttle_configs
from devcluster.local_cluster import LocalCluster
from devcluster.local_processes import wait_until
from kafka_protocol.replication_throttles import FOLLOWER_RATE, FOLLOWER_REPLICAS, LEADER_RATE, LEADER_REPLICAS

from .produce_consume import produce_values

# --- what kafka-reassign-partitions --throttle sets (no cluster) --------------------------


def test_leaders_are_the_current_replicas_followers_the_moving_in_ones() -> None:
    configs = throttle_configs({("t", 0): ([1, 2], [2, 3]), ("t", 1): ([3, 1], [4, 5]), ("u", 0): ([1], [1])},
                               1000)
    assert configs[(TOPIC, "t")] == {LEADER_REPLICAS: "0:1,0:2,1:1,1:3", FOLLOWER_REPLICAS: "0:3,1:4,1:5"}
    assert configs[(TOPIC, "u")] == {LEADER_REPLICAS: "0:1", FOLLOWER_REPLICAS: ""}  # nothing moves in
    brokers = {name for kind, name in configs if kind == BROKER}
    assert brokers == {"1", "2", "3", "4", "5"}  # every broker of the current and target replicas
    assert configs[(BROKER, "4")] == {LEADER_RATE: "1000", FOLLOWER_RATE: "1000"}


def test_a_negative_throttle_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(InvalidConfigError, match="at least 0"):
        throttle_configs({("t", 0): ([1], [2])}, -1)


# --- real processes -------------------------------------------------------------------------

RATE = 20_000                 # bytes/s, each side
FETCH_MAX_BYTES = 65536       # replica.fetch.max.bytes: what one follower fetch may bring (batches are smaller)
WINDOWS, WINDOW_S = 11, 1     # replication.quota.window.num / .size.seconds (Kafka's defaults)
DATA_BYTES = 1_000_000
VALUE = b"v" * 1000
SENT = "kraftlog_replication_throttled_bytes_total"
PROPERTIES = {
    "broker.session.timeout.ms": 30000,  # the paused follower stays registered and unfenced
    "replica.fetch.max.bytes": FETCH_MAX_BYTES,
    "replica.fetch.wait.max.ms": 200,
    "replica.fetch.backoff.ms": 200,
    "replica.lag.time.max.ms": 3000,
    "replication.quota.window.num": WINDOWS,
    "replication.quota.window.size.seconds": WINDOW_S,
    "offsets.topic.replication.factor": 1,
}


def throttled_bound(elapsed_s: float) -> float:
    """The most a follower throttled at RATE may have fetched in `elapsed_s`.
    A fetch is sent only while the bytes of the kept windows are at most
    RATE x the span they are divided by (< WINDOWS x WINDOW_S), and every
    byte of the last (WINDOWS - 1) windows is kept; one fetch at a time,
    each at most FETCH_MAX_BYTES. So any (WINDOWS - 1) x WINDOW_S seconds
    see at most RATE x WINDOWS x WINDOW_S + FETCH_MAX_BYTES."""
    spans = max(1, math.ceil(elapsed_s / ((WINDOWS - 1) * WINDOW_S)))
    return spans * (RATE * WINDOWS * WINDOW_S + FETCH_MAX_BYTES)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("throttle"), controllers=1, brokers=2,
                      properties=PROPERTIES).running() as c:
        yield c


def scraped(address: str, name: str, **labels: str) -> float:
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    raise AssertionError(f"{name} {labels} is not exposed")


def isr(c: LocalCluster, topic: str) -> tuple[int, list[int]]:
    answer = c.metadata(topics=[topic])
    assert answer is not None
    [partition] = answer.topics[0].partitions
    return partition.leader_id, sorted(partition.isr_nodes)


def test_a_throttled_follower_is_held_near_the_rate_then_catches_up_when_cleared(cluster) -> None:
    """The follower is paused (SIGSTOP) before any record, so its log stays
    empty and the leader drops it from the ISR once records come; it resumes under the
    throttle. What it was sent is the leader's count of throttled bytes
    (the leader's quota, set before the follower resumed, counts every byte
    of the throttled partition)."""
    c = cluster
    c.create_topic("moving", partitions=1, replication_factor=2)
    c.wait_for_leaders("moving")
    leader, follower = min(c.brokers), max(c.brokers)
    if isr(c, "moving")[0] != leader:
        leader, follower = follower, leader
    c.pause(follower)
    try:
        summary = produce_values(c.bootstrap, "moving", [VALUE] * (DATA_BYTES // len(VALUE)), acks=1,
                                 batch_records=200, partition=0)
        assert summary.failed == 0
        # Only a follower behind the log end can fall out of the ISR (replica.lag.time.max.ms).
        wait_until(lambda: isr(c, "moving") == (leader, [leader]), 30, "the paused broker out of the ISR")
        with Cluster(c.bootstrap) as admin:
            apply_throttles(admin, {("moving", 0): ([leader], [leader, follower])}, RATE)
            # The leader, the one broker answering, describes them once it has the records: it throttles from then on.
            wanted = {LEADER_REPLICAS: f"0:{leader}", FOLLOWER_REPLICAS: f"0:{follower}"}
            wait_until(lambda: {s["name"]: s["value"] for s in describe_configs(
                admin, TOPIC, ["moving"], list(wanted))["moving"]} == wanted, 10, "the throttles on the leader")
            rates = describe_configs(admin, BROKER, [str(leader)], [LEADER_RATE])[str(leader)]
            assert [(s["value"], s["source"]) for s in rates] == [(str(RATE), "DYNAMIC_BROKER_CONFIG")]
    finally:
        started = time.monotonic()
        c.resume(follower)
    metrics = c.metrics_addresses[leader]
    wait_until(lambda: scraped(metrics, SENT, side="leader") > 0, 30, "the follower fetching again")
    time.sleep(2)
    sent = scraped(metrics, SENT, side="leader")
    elapsed = time.monotonic() - started
    assert sent <= throttled_bound(elapsed) < DATA_BYTES, (sent, elapsed)
    assert isr(c, "moving")[1] == [leader]  # it has less than the log: not back in the ISR

    with Cluster(c.bootstrap) as admin:
        clear_throttles(admin, ["moving"], [leader, follower])
        wait_until(lambda: isr(c, "moving")[1] == sorted([leader, follower]), 30,
                   "the follower caught up and back in the ISR")
        wait_until(lambda: all(s["value"] == "" for s in describe_configs(
            admin, TOPIC, ["moving"], [LEADER_REPLICAS])["moving"]), 10, "the throttles cleared")
    assert scraped(c.metrics_addresses[follower], SENT, side="follower") >= 0  # exposed on every broker
    assert scraped(metrics, "kafka_server_leaderreplication_byte_rate") >= 0
