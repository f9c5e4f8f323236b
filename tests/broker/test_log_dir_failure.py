"""KIP-112 on a broker: an I/O error in its log directory (injected by the
testbed's disk fault layer) is never acknowledged, takes the directory
offline (every partition answers KAFKA_STORAGE_ERROR, followers included),
and is reported once to the listener the broker server stops on; with
flush.messages=1 on every replica, acks=all answers only what every ISR
member fsynced."""
from __future__ import annotations

import asyncio

import pytest

from broker.errors import Error
from broker.produce import append
from partition_log import disk_faults as df

from .helpers import Cluster, batch_of, fetch_request, fetched, replicate, run


@pytest.fixture
def cluster(tmp_path):
    control = tmp_path / "control"
    df.install(control, [tmp_path / "broker-1"])  # faults on broker 1's disk only
    try:
        c = Cluster(tmp_path)
        c.create_topic("orders", {0: [1, 2, 3]})
        c.set_config("orders", "flush.messages", "1")
        c.control = control
        yield c
    finally:
        df.uninstall()


def test_eio_on_fsync_is_never_acknowledged_and_takes_the_directory_offline(cluster):
    heard = []
    cluster[1].log_manager.failure.add_listener(heard.append)
    first = run(append(cluster[1], "orders", 0, batch_of([b"a"]), 1, 1000))
    assert first.error == Error.NONE
    df.write_rules(cluster.control, [df.Rule("fsync", "EIO", path="orders-0", times=1)])
    failed = run(append(cluster[1], "orders", 0, batch_of([b"b"]), 1, 1000))
    assert failed.error == Error.KAFKA_STORAGE_ERROR
    assert len(heard) == 1 and "Input/output error" in heard[0]
    # The rule is spent, yet nothing is retried: the directory stays offline.
    again = run(append(cluster[1], "orders", 0, batch_of([b"c"]), 1, 1000))
    assert again.error == Error.KAFKA_STORAGE_ERROR
    response = run(fetched(cluster[1], fetch_request("orders", 0, 0, replica_id=2, replica_epoch=102)))
    assert response.responses[0].partitions[0].error_code == Error.KAFKA_STORAGE_ERROR
    assert len(heard) == 1


def test_enospc_mid_append_leaves_no_partial_batch_for_followers(cluster):
    run(append(cluster[1], "orders", 0, batch_of([b"a"]), 1, 1000))
    df.write_rules(cluster.control, [df.Rule("write", "ENOSPC", path="orders-0", times=1, mode="short")])
    assert run(append(cluster[1], "orders", 0, batch_of([b"b" * 1000]), 1, 1000)).error == Error.KAFKA_STORAGE_ERROR
    log = cluster[1].get("orders", 0).log
    assert log.log_end_offset == 1 and log.active_segment.size == log.active_segment.log_path.stat().st_size
    restarted = cluster.restart(1, clean=True)  # close writes nothing: the directory is offline
    assert not (restarted.log_manager.log_dir / ".kafka_cleanshutdown").exists()
    assert restarted.get("orders", 0).log.log_end_offset == 1


def test_acks_all_with_flush_on_every_replica_answers_only_what_all_fsynced(cluster):
    async def go():
        produced = asyncio.ensure_future(append(cluster[1], "orders", 0, batch_of([b"a"]), -1, 5000))
        await asyncio.sleep(0)
        for _ in range(2):
            await replicate(cluster, 2)
            await replicate(cluster, 3)
        return await asyncio.wait_for(produced, 1)
    assert run(go()).error == Error.NONE
    for broker_id in (1, 2, 3):  # every ISR member's recovery point covers the acknowledged batch
        assert cluster[broker_id].get("orders", 0).log.recovery_point == 1
