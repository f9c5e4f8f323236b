"""A controller over a real MetadataImage, with each result's records applied as the shell would.

Shared by the test_controller_* modules; it holds no tests of its own.
"""

from __future__ import annotations

import random
from typing import Iterable, Optional, Sequence

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.controller import Controller, ControllerConfig, ControllerResult
from metadata_quorum.features import supported_records
from metadata_quorum.image import MetadataImage, PartitionState

CLUSTER = "test-cluster"
CONTROLLER_ID = 3000


class Harness:
    def __init__(self, config: Optional[ControllerConfig] = None, now: int = 0, seed: int = 0) -> None:
        self.image = MetadataImage()
        self.config = config or ControllerConfig()
        self.now = now
        self.seed = seed
        self.controller = self._controller()
        self.epochs: dict[int, int] = {}
        self.last: Optional[ControllerResult] = None

    def _controller(self) -> Controller:
        return Controller(self.image, self.config, cluster_id=CLUSTER, node_id=CONTROLLER_ID,
                          now_ms=self.now, rng=random.Random(self.seed))

    def failover(self) -> None:
        """A new active controller over the same (committed) image: soft state starts afresh."""
        self.controller = self._controller()

    def apply(self, result: ControllerResult):  # type: ignore[no-untyped-def]
        self.last = result
        for record in result.records:
            self.image.apply(record, self.image.offset + 1)
        return result.response

    def record(self, **kwargs: object) -> None:
        """Append an operator's record directly (e.g. a cluster config)."""
        self.image.apply(mpb.MetadataRecord(**kwargs), self.image.offset + 1)  # type: ignore[arg-type]

    def cluster_config(self, key: str, value: str) -> None:
        self.record(config=mpb.ConfigRecord(resource_type=mpb.BROKER, resource_name="", name=key, value=value))

    # --- brokers ----------------------------------------------------------------------------

    def register(self, broker_id: int, rack: Optional[str] = None, incarnation: Optional[str] = None,
                 unfence: bool = True, cluster_id: str = CLUSTER,
                 previous_epoch: Optional[int] = None) -> cpb.BrokerRegistrationResponse:
        """`previous_epoch`: KIP-966's previous_broker_epoch (the clean-shutdown marker's), absent if None."""
        request = cpb.BrokerRegistrationRequest(
            broker_id=broker_id, cluster_id=cluster_id, incarnation_id=incarnation or f"inc-{broker_id}",
            listeners=[mpb.BrokerEndpoint(name="PLAINTEXT", host="localhost", port=9092 + broker_id)],
            features=supported_records())
        if rack is not None:
            request.rack = rack
        if previous_epoch is not None:
            request.previous_broker_epoch = previous_epoch
        response = self.apply(self.controller.handle_registration(request, self.now))
        if response.error_code == 0:
            self.epochs[broker_id] = response.broker_epoch
            if unfence:
                assert not self.heartbeat(broker_id).is_fenced
        return response

    def brokers(self, count: int, racks: Optional[Sequence[str]] = None) -> None:
        for b in range(count):
            self.register(b, rack=racks[b % len(racks)] if racks else None)

    def heartbeat(self, broker_id: int, offset: Optional[int] = None, epoch: Optional[int] = None,
                  **flags: bool) -> cpb.BrokerHeartbeatResponse:
        request = cpb.BrokerHeartbeatRequest(
            broker_id=broker_id, broker_epoch=self.epochs.get(broker_id, 0) if epoch is None else epoch,
            current_metadata_offset=self.image.offset if offset is None else offset, **flags)
        return self.apply(self.controller.handle_heartbeat(request, self.now))

    def heartbeat_all(self, except_: Iterable[int] = ()) -> None:
        for b in sorted(self.image.brokers):
            if b not in except_ and not self.image.brokers[b].in_controlled_shutdown:
                self.heartbeat(b)

    def tick(self, now: Optional[int] = None) -> ControllerResult:
        if now is not None:
            self.now = now
        result = self.controller.tick(self.now)
        self.apply(result)
        return result

    # --- topics and partitions ----------------------------------------------------------------

    def create(self, name: str, partitions: int = 1, rf: int = 1, configs: Optional[dict[str, str]] = None,
               assignments: Optional[Sequence[Sequence[int]]] = None,
               validate_only: bool = False) -> cpb.CreateTopicsResponse.Result:
        topic = cpb.CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions, replication_factor=rf)
        for key, value in (configs or {}).items():
            topic.configs.add(name=key, value=value)
        if assignments is not None:
            topic.num_partitions = topic.replication_factor = -1
            for p, brokers in enumerate(assignments):
                topic.assignments.add(partition_index=p, broker_ids=brokers)
        request = cpb.CreateTopicsRequest(topics=[topic], validate_only=validate_only)
        response = self.apply(self.controller.handle_create_topics(request))
        assert len(response.topics) == 1
        return response.topics[0]

    def topic_id(self, name: str) -> bytes:
        return self.image.topic_ids[name]

    def state(self, name: str, partition: int = 0) -> PartitionState:
        state = self.image.partition(self.topic_id(name), partition)
        assert state is not None
        return state

    def alter(self, name: str, partition: int, new_isr: Sequence[int], broker_id: Optional[int] = None,
              isr_epochs: Optional[dict[int, int]] = None, **overrides: int) -> cpb.AlterPartitionResponse:
        """`isr_epochs`: fill new_isr_with_epochs with these broker epochs (-1 for members not named)."""
        state = self.state(name, partition)
        broker_id = state.leader if broker_id is None else broker_id
        data = cpb.AlterPartitionRequest.PartitionData(
            partition_index=partition, leader_epoch=state.leader_epoch, new_isr=new_isr,
            partition_epoch=state.partition_epoch, leader_recovery_state=state.leader_recovery_state)
        for key, value in overrides.items():
            if key != "broker_epoch":
                setattr(data, key, value)
        if isr_epochs is not None:
            for b in new_isr:
                data.new_isr_with_epochs.add(broker_id=b, broker_epoch=isr_epochs.get(b, -1))
        request = cpb.AlterPartitionRequest(
            broker_id=broker_id, broker_epoch=overrides.get("broker_epoch", self.epochs.get(broker_id, -1)),
            topics=[cpb.AlterPartitionRequest.TopicData(topic_id=self.topic_id(name), partitions=[data])])
        return self.apply(self.controller.handle_alter_partition(request))

    def elect(self, election_type: int, targets: Optional[dict[str, list[int]]] = None) -> cpb.ElectLeadersResponse:
        request = cpb.ElectLeadersRequest(election_type=election_type)  # type: ignore[arg-type]
        for topic, partitions in (targets or {}).items():
            request.topic_partitions.add(topic=topic, partitions=partitions)
        return self.apply(self.controller.handle_elect_leaders(request))


def kinds(result: Optional[ControllerResult]) -> list[str]:
    """The record types of a result, in order."""
    assert result is not None
    return [r.WhichOneof("record") for r in result.records]
