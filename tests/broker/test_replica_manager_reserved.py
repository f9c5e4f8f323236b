"""A metadata log written before the controller refused the name may hold a
topic called __cluster_metadata: a broker never opens it as a partition, so
the quorum's own directory (<metadata.log.dir>/__cluster_metadata-0) is
neither written as a partition log nor deleted with the topic."""
from __future__ import annotations

import logging

import pytest

from broker.errors import BrokerError, Error
from kafka_protocol.internal_topics import CLUSTER_METADATA_TOPIC

from .helpers import Cluster

QUORUM_FILES = {"quorum-state": b'{"leaderId": 1}', "00000000000000000000.log": b"\x00" * 64}


def test_a_topic_named_like_the_metadata_log_is_never_a_partition(tmp_path, caplog) -> None:
    cluster = Cluster(tmp_path, (1, 2))
    quorum_dir = cluster[1].log_manager.log_dir / f"{CLUSTER_METADATA_TOPIC}-0"
    quorum_dir.mkdir()
    for name, data in QUORUM_FILES.items():
        (quorum_dir / name).write_bytes(data)
    with caplog.at_level(logging.ERROR, logger="broker.replica_manager"):
        cluster.create_topic(CLUSTER_METADATA_TOPIC, {0: [1, 2]})
        cluster.create_topic("plain", {0: [1, 2]})  # the same delta path still serves real topics
    assert "reserved name" in caplog.text
    assert (CLUSTER_METADATA_TOPIC, 0) not in cluster[1].partitions
    assert (CLUSTER_METADATA_TOPIC, 0) not in cluster[1].log_manager.logs
    assert cluster[1].get("plain", 0).is_leader
    with pytest.raises(BrokerError) as refused:
        cluster[1].get(CLUSTER_METADATA_TOPIC, 0)
    assert refused.value.error == Error.UNKNOWN_TOPIC_OR_PARTITION
    cluster.remove_topic(CLUSTER_METADATA_TOPIC)
    assert {f.name: f.read_bytes() for f in quorum_dir.iterdir()} == QUORUM_FILES
