"""The active controller pipelines its appends: a real one-voter quorum (its
metadata log in a temporary directory, the leader's linger and fsyncs as in
production) under an ActiveController, driven by many requests at once.

Each test checks what the pipeline promises: several decisions in flight
at once; every decision saw the earlier ones (one of two same-named topics
is refused); the working image the Controller decides on equals the
committed image once everything has committed; an answer without records
comes only after every decision before it committed.
"""
from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Sequence

from kraftlog_api import controller_pb2 as cpb
from metadata_quorum.controller import ControllerConfig, Error
from metadata_quorum.controller_service import ActiveController
from metadata_quorum.metadata_state import MetadataStateMachine
from metadata_quorum.node import QuorumNode
from metadata_quorum.raft.config import QuorumConfig
from metadata_quorum.storage import open_metadata_storage

CLUSTER_ID = "cGlwZWxpbmVkLWFwcGVuZHM"
NODE_ID = 1
BOUND_S = 60.0


class CountingNode(QuorumNode):
    """A QuorumNode that notes, at each submit, how many earlier submits had not committed yet."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.pending: list[asyncio.Future[None]] = []
        self.most_in_flight = 0
        self.submits = 0

    def submit(self, records: Sequence[bytes]) -> tuple[int, int, asyncio.Future[None]]:
        self.pending = [f for f in self.pending if not f.done()]
        self.most_in_flight = max(self.most_in_flight, len(self.pending))
        base, last, committed = super().submit(records)
        self.pending.append(committed)
        self.submits += 1
        return base, last, committed


def create(*names: str, partitions: int = 3) -> cpb.CreateTopicsRequest:
    return cpb.CreateTopicsRequest(topics=[
        cpb.CreateTopicsRequest.CreatableTopic(name=n, num_partitions=partitions, replication_factor=1)
        for n in names])


async def one_controller(directory: Path, scenario) -> None:
    storage = open_metadata_storage(directory, cluster_id=CLUSTER_ID, node_id=NODE_ID, voters=[NODE_ID])
    metadata = MetadataStateMachine()
    node = CountingNode(NODE_ID, [NODE_ID], CLUSTER_ID, storage, metadata, config=QuorumConfig(),
                        max_bytes_between_snapshots=1 << 30, send=lambda message: None,
                        rng=random.Random(0))
    active = ActiveController(node, metadata, ControllerConfig())
    node.start()
    try:
        async def ready() -> None:
            while not node.leader_ready():
                await asyncio.sleep(0.01)

        await asyncio.wait_for(ready(), BOUND_S)
        # A broker to place replicas on: registered, then unfenced by a caught-up heartbeat.
        registered = await active.handle("BrokerRegistration", cpb.BrokerRegistrationRequest(
            broker_id=7, cluster_id=CLUSTER_ID, incarnation_id="i7"))
        assert registered.error_code == Error.NONE, registered
        beat = await active.handle("BrokerHeartbeat", cpb.BrokerHeartbeatRequest(
            broker_id=7, broker_epoch=registered.broker_epoch, current_metadata_offset=1 << 40))
        assert beat.error_code == Error.NONE and not beat.is_fenced, beat
        await asyncio.wait_for(scenario(node, metadata, active), BOUND_S)
    finally:
        await active.stop()
        await node.stop()


def test_many_requests_are_in_flight_at_once_and_each_decision_sees_the_earlier_ones(tmp_path):
    async def scenario(node: CountingNode, metadata: MetadataStateMachine, active: ActiveController) -> None:
        names = [f"t{i}" for i in range(40)] + ["t0"]  # the last one again: exactly one of the two is refused
        answers = await asyncio.gather(*(active.handle("CreateTopics", create(n)) for n in names))
        errors = sorted(a.topics[0].error_code for a in answers)
        assert errors == [Error.NONE] * 40 + [Error.TOPIC_ALREADY_EXISTS], errors
        assert node.most_in_flight > 1, "decisions went to the quorum one at a time"
        assert sorted(metadata.image.topic_ids) == sorted(set(names))
        # The Controller's working image is the committed one once nothing is in flight.
        assert active._controller is not None and active._controller.image == metadata.image
        assert active._controller.image is not metadata.image
        metadata.image.check_index()

    asyncio.run(one_controller(tmp_path, scenario))


def test_an_answer_without_records_waits_for_the_decisions_before_it(tmp_path):
    async def scenario(node: CountingNode, metadata: MetadataStateMachine, active: ActiveController) -> None:
        creates = [asyncio.ensure_future(active.handle("CreateTopics", create(f"a{i}"))) for i in range(10)]
        await asyncio.sleep(0)  # the creates are decided first, in order
        # Validation only (no records): it must not answer before the creates commit.
        check = cpb.CreateTopicsRequest(validate_only=True, topics=[
            cpb.CreateTopicsRequest.CreatableTopic(name="b", num_partitions=1, replication_factor=1)])
        answer = await active.handle("CreateTopics", check)
        assert answer.topics[0].error_code == Error.NONE, answer
        assert all(c.done() for c in creates), "answered before earlier decisions committed"
        assert {n for n in metadata.image.topic_ids} >= {f"a{i}" for i in range(10)}
        await asyncio.gather(*creates)

    asyncio.run(one_controller(tmp_path, scenario))
