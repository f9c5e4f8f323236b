"""A partition must not leave sockets behind on the controllers.

The soak (chaos/soak.py) found a controller's open fds growing by about
four per partition-halves, never coming back: the controller's end of
connections whose clients (brokers, other controllers) had given up on them
during the partition (by keepalive, their FIN or RST dropped), ESTABLISHED
with no call on them and so nothing to send. Here three controllers and a
broker on the namespace testbed, the broker cut off from the controllers
long enough to give up on its connections (it tries every controller
meanwhile), then healed: within a bounded wait every connection a
controller's listener holds from the broker must have its other end alive
in the broker's namespace (kafka_protocol/grpc_keepalive.py: the
listeners ping).
"""
from __future__ import annotations

import subprocess
import time

import pytest

from chaos.testbed import NetworkTestbed, probe
from devcluster.local_cluster import CONTROLLER_PORT, LocalCluster
from kafka_protocol import grpc_keepalive

CAPABILITIES = probe()
pytestmark = pytest.mark.skipif(not (CAPABILITIES.namespaces and CAPABILITIES.iptables),
                                reason=f"no network testbed here: {CAPABILITIES.explain()}")

PROPERTIES = {"broker.session.timeout.ms": 3000, "broker.heartbeat.interval.ms": 500,
              "controller.quorum.election.timeout.ms": 1000, "controller.quorum.fetch.timeout.ms": 2000}
# Longer than a client's keepalive takes to give up on a connection (time + timeout).
PARTITION_S = 3 * (grpc_keepalive.KEEPALIVE_TIME_MS + grpc_keepalive.KEEPALIVE_TIMEOUT_MS) / 1000
# The bound on the wait for the controller to let go: its ping's interval and timeout, and margin.
SETTLE_S = (grpc_keepalive.SERVER_KEEPALIVE_TIME_MS + grpc_keepalive.SERVER_KEEPALIVE_TIMEOUT_MS) / 1000 + 30


CONTROLLERS, BROKER = (1, 2, 3), 4


def _established(bed: NetworkTestbed, host: int) -> set[tuple[str, str]]:
    """The host's established TCP connections as (local, peer) addresses."""
    done = subprocess.run([*bed.exec_prefix(host), "ss", "-Htn", "state", "established"],
                          capture_output=True, text=True, timeout=10, check=True)
    pairs = set()
    for line in done.stdout.splitlines():
        local, peer = line.split()[-2:]
        pairs.add((local.replace("[::ffff:", "").replace("]", ""), peer.replace("[::ffff:", "").replace("]", "")))
    return pairs


def _orphans(bed: NetworkTestbed) -> set[tuple[str, str]]:
    """Connections on the controllers' listeners from the broker whose other end the broker's host does not have."""
    broker_side = {local for local, _ in _established(bed, BROKER)}
    return {(local, peer) for controller in CONTROLLERS for local, peer in _established(bed, controller)
            if local == f"{bed.address(controller)}:{CONTROLLER_PORT}"
            and peer.startswith(bed.address(BROKER) + ":") and peer not in broker_side}


def test_a_partition_leaves_no_socket_behind_on_the_controllers(tmp_path) -> None:
    bed = NetworkTestbed([str(n) for n in (*CONTROLLERS, BROKER)])
    cluster = None
    try:
        bed.create()
        cluster = LocalCluster(tmp_path, controllers=len(CONTROLLERS), brokers=1, properties=PROPERTIES,
                               hosts={n: bed.address(n) for n in (*CONTROLLERS, BROKER)},
                               command_prefix=bed.exec_prefix)
        cluster.start()
        cluster.wait_for_brokers(timeout=60)
        assert not _orphans(bed)
        bed.partition([CONTROLLERS, [BROKER]])
        time.sleep(PARTITION_S)
        bed.heal()
        left_after_heal = _orphans(bed)
        deadline = time.monotonic() + SETTLE_S
        while (orphans := _orphans(bed)) and time.monotonic() < deadline:
            time.sleep(1)
        assert not orphans, (f"the controllers still hold connections the broker gave up on: {sorted(orphans)} "
                             f"(after the heal: {sorted(left_after_heal)})")
        cluster.wait_for_brokers(timeout=60)  # and the broker is back with the controller
    finally:
        if cluster is not None:
            cluster.close()
        bed.close()
