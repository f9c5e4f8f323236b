"""The active controller's pipelining, before and after in one run.

A real one-voter metadata quorum (its log in a temporary directory, the
leader's append linger and fsyncs as configured in production) under an
ActiveController; many CreateTopics are sent at once, first with one
decision in flight at a time (how the controller worked before it
pipelined), then with MAX_IN_FLIGHT. Reports topics and partitions created
per second each way.

    python -m bench.controller_pipeline [--topics 200] [--partitions 50]
"""
from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from pathlib import Path

from kraftlog_api import controller_pb2 as cpb
from metadata_quorum.controller import ControllerConfig
from metadata_quorum.controller_service import MAX_IN_FLIGHT, ActiveController
from metadata_quorum.metadata_state import MetadataStateMachine
from metadata_quorum.node import QuorumNode
from metadata_quorum.raft.config import QuorumConfig
from metadata_quorum.storage import open_metadata_storage

CLUSTER_ID = "Y29udHJvbGxlci1waXBlbGluZQ"


async def create_all(directory: Path, topics: int, partitions: int, in_flight: int) -> float:
    """Seconds to create `topics` topics sent at once, `in_flight` decisions at a time."""
    storage = open_metadata_storage(directory, cluster_id=CLUSTER_ID, node_id=1, voters=[1])
    metadata = MetadataStateMachine()
    node = QuorumNode(1, [1], CLUSTER_ID, storage, metadata, config=QuorumConfig(),
                      max_bytes_between_snapshots=1 << 30, send=lambda message: None, rng=random.Random(0))
    active = ActiveController(node, metadata, ControllerConfig())
    active._in_flight = asyncio.Semaphore(in_flight)  # the one knob this bench turns
    node.start()
    try:
        while not node.leader_ready():
            await asyncio.sleep(0.01)
        registered = await active.handle("BrokerRegistration", cpb.BrokerRegistrationRequest(
            broker_id=1, cluster_id=CLUSTER_ID, incarnation_id="bench"))
        await active.handle("BrokerHeartbeat", cpb.BrokerHeartbeatRequest(
            broker_id=1, broker_epoch=registered.broker_epoch, current_metadata_offset=1 << 40))
        requests = [cpb.CreateTopicsRequest(topics=[cpb.CreateTopicsRequest.CreatableTopic(
            name=f"t{i:05d}", num_partitions=partitions, replication_factor=1)]) for i in range(topics)]
        started = time.perf_counter()
        answers = await asyncio.gather(*(active.handle("CreateTopics", r) for r in requests))
        took = time.perf_counter() - started
        bad = [a for a in answers if a.error_code or a.topics[0].error_code]
        assert not bad, bad[:2]
        return took
    finally:
        await active.stop()
        await node.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=200)
    parser.add_argument("--partitions", type=int, default=50)
    args = parser.parse_args()
    for in_flight in (1, MAX_IN_FLIGHT):
        with tempfile.TemporaryDirectory(prefix="controller-pipeline-") as directory:
            took = asyncio.run(create_all(Path(directory), args.topics, args.partitions, in_flight))
        print(f"{in_flight:3d} in flight: {args.topics} CreateTopics of {args.partitions} partitions in "
              f"{took:.2f} s = {args.topics / took:.0f} topics/s, {args.topics * args.partitions / took:,.0f} "
              f"partitions/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
