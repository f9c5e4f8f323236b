"""KIP-966 on the broker: the strict min ISR high watermark rule, and the clean-shutdown
marker holding the broker epoch the next registration sends as previous_broker_epoch."""
from __future__ import annotations

import pytest

from broker.errors import Error
from broker.produce import append
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.features import ELIGIBLE_LEADER_REPLICAS
from partition_log.log_manager import CLEAN_SHUTDOWN_FILE, LogManager

from .helpers import Cluster, batch_of, replicate, run


def feature(cluster: Cluster, level: int) -> None:
    cluster.apply(mpb.MetadataRecord(feature_level=mpb.FeatureLevelRecord(
        name=ELIGIBLE_LEADER_REPLICAS, feature_level=level)))


def below_min_isr(tmp_path, elr: bool) -> Cluster:
    """orders-0 on 1, 2, 3 led by 1 with min.insync.replicas=2, two records committed, then the ISR
    down to the leader alone; 2 still fetching."""
    cluster = Cluster(tmp_path)
    if elr:
        feature(cluster, 1)
    cluster.create_topic("orders", {0: [1, 2, 3]}, configs={"min.insync.replicas": "2"})
    assert run(append(cluster[1], "orders", 0, batch_of([b"a", b"b"]), 1, 1000)).error == Error.NONE
    for follower in (2, 3):
        run(replicate(cluster, follower, rounds=2))
    assert cluster[1].get("orders", 0).high_watermark == 2
    cluster.change("orders", 0, isr=[1])
    return cluster


@pytest.mark.parametrize("acks", [0, 1])
def test_below_min_isr_the_high_watermark_stays_with_the_feature_on(tmp_path, acks):
    cluster = below_min_isr(tmp_path, elr=True)
    assert run(append(cluster[1], "orders", 0, batch_of([b"c"]), acks, 1000)).error == Error.NONE
    run(replicate(cluster, 2, rounds=2))
    leader = cluster[1].get("orders", 0)
    assert leader.log.log_end_offset == 3 and leader.high_watermark == 2  # 3 has not got c: it may lead
    cluster.change("orders", 0, isr=[1, 2])  # back at min ISR
    assert leader.high_watermark == 3


def test_below_min_isr_the_high_watermark_moves_with_the_feature_off(tmp_path):
    cluster = below_min_isr(tmp_path, elr=False)
    assert run(append(cluster[1], "orders", 0, batch_of([b"c"]), 1, 1000)).error == Error.NONE
    assert cluster[1].get("orders", 0).high_watermark == 3  # the ISR alone holds it: the old rule


def test_turning_the_feature_off_lets_a_held_high_watermark_move(tmp_path):
    cluster = below_min_isr(tmp_path, elr=True)
    run(append(cluster[1], "orders", 0, batch_of([b"c"]), 1, 1000))
    assert cluster[1].get("orders", 0).high_watermark == 2
    feature(cluster, 0)
    assert cluster[1].get("orders", 0).high_watermark == 3


def test_acks_all_below_min_isr_is_refused_either_way(tmp_path):
    cluster = below_min_isr(tmp_path, elr=True)
    assert run(append(cluster[1], "orders", 0, batch_of([b"c"]), -1, 1000)).error == Error.NOT_ENOUGH_REPLICAS


# --- the clean-shutdown marker --------------------------------------------------------------------

def test_the_marker_holds_the_broker_epoch_a_clean_shutdown_stopped_with(tmp_path):
    logs = LogManager(tmp_path)
    assert logs.previous_broker_epoch == -1  # a new directory: no marker
    logs.close(42)
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).read_bytes() == b'{"version":0,"brokerEpoch":42}'  # Kafka's
    again = LogManager(tmp_path)
    assert again.clean_shutdown and again.previous_broker_epoch == 42
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()  # only while stopped
    again.close()  # never registered in this run: the registration it had still stands
    assert LogManager(tmp_path).previous_broker_epoch == 42


def test_a_crash_leaves_no_marker_and_no_previous_epoch(tmp_path):
    LogManager(tmp_path).close(7)
    LogManager(tmp_path)  # opened (the marker goes), then killed: nothing closes it
    crashed = LogManager(tmp_path)
    assert not crashed.clean_shutdown and crashed.previous_broker_epoch == -1


@pytest.mark.parametrize("content", [b"", b"garbage", b'{"version":0}', b'{"brokerEpoch":"7"}',
                                     b'{"brokerEpoch":-3}', b'{"brokerEpoch":true}', b"[1]"])
def test_a_marker_without_a_usable_epoch_is_a_clean_log_of_an_unknown_epoch(tmp_path, content):
    """An empty marker is what software before KIP-966 wrote: the logs need no recovery, but the
    controller cannot tell the shutdown was clean."""
    LogManager(tmp_path).close()
    (tmp_path / CLEAN_SHUTDOWN_FILE).write_bytes(content)
    opened = LogManager(tmp_path)
    assert opened.clean_shutdown and opened.previous_broker_epoch == -1
