"""The simulated operator: topics created, deleted and grown, elections asked for, producer ids,
partitions reassigned (KIP-455) and reassignments cancelled."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.controller import Error
from metadata_quorum.controller.elections import NO_LEADER

from .checker import fail

if TYPE_CHECKING:
    from .schedule import ControllerSim

TOPIC_NAMES = ("orders", "payments", "clicks", "audit.log", "audit_log", "events", "metrics")
BAD_TOPIC_NAMES = ("", ".", "..", "has space", "x" * 250, "ünïcode")


class Operator:
    def __init__(self, sim: "ControllerSim") -> None:
        self.sim = sim

    def act(self) -> None:
        sim = self.sim
        if sim.now < sim.chaos_ms:
            sim.call_at(sim.now + sim.rng.randint(300, 2500), self.act)
        action = sim.rng.choice((self.create, self.create, self.create, self.delete, self.add_partitions,
                                 self.preferred, self.unclean, self.producer_ids, self.reassign, self.min_isr))
        action()

    def create(self) -> None:
        sim, rng = self.sim, self.sim.rng
        name = rng.choice(TOPIC_NAMES) if rng.random() < 0.93 else rng.choice(BAD_TOPIC_NAMES)
        topic = cpb.CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=rng.choice((-1, 1, 2, 3, 4, 0)),
            replication_factor=rng.choice((-1, 1, 2, 3, 3, 7)))
        if rng.random() < 0.3:
            topic.configs.add(name="unclean.leader.election.enable", value=rng.choice(("true", "false")))
        if rng.random() < 0.05:
            topic.configs.add(name=rng.choice(("retention.ms", "no.such.config")), value="soon")
        if rng.random() < 0.1:
            registered = sorted(sim.image.brokers)
            topic.num_partitions = topic.replication_factor = -1
            factor = min(rng.randint(1, 3), len(registered))
            for p in range(rng.randint(1, 3)):
                topic.assignments.add(partition_index=p, broker_ids=rng.sample(registered, factor))
        usable = [b for b in sim.image.brokers.values() if not b.fenced and not b.in_controlled_shutdown]
        request = cpb.CreateTopicsRequest(topics=[topic], validate_only=rng.random() < 0.05)
        response = sim.submit(f"CreateTopics {name!r}", sim.controller.handle_create_topics(request))
        assert isinstance(response, cpb.CreateTopicsResponse)
        result = response.topics[0]
        sim.stats[f"CreateTopics {Error(result.error_code).name}"] += 1
        if result.error_code == Error.NONE and not request.validate_only and not topic.assignments:
            sim.checker.placement(sim.image, name, usable)

    def delete(self) -> None:
        sim = self.sim
        name = sim.rng.choice(sorted(sim.image.topic_ids) + ["no-such-topic"])
        response = sim.submit(f"DeleteTopics {name!r}",
                              sim.controller.handle_delete_topics(cpb.DeleteTopicsRequest(names=[name])))
        assert isinstance(response, cpb.DeleteTopicsResponse)
        sim.stats[f"DeleteTopics {Error(response.topics[0].error_code).name}"] += 1

    def add_partitions(self) -> None:
        sim = self.sim
        names = sorted(sim.image.topic_ids)
        if not names:
            return
        name = sim.rng.choice(names)
        topic = sim.image.topic(name)
        assert topic is not None
        count = len(topic.partitions) + sim.rng.choice((-1, 0, 1, 2))
        request = cpb.CreatePartitionsRequest(topics=[cpb.CreatePartitionsRequest.Topic(name=name, count=count)])
        response = sim.submit(f"CreatePartitions {name!r} to {count}",
                              sim.controller.handle_create_partitions(request))
        assert isinstance(response, cpb.CreatePartitionsResponse)
        sim.stats[f"CreatePartitions {Error(response.topics[0].error_code).name}"] += 1

    def preferred(self) -> None:
        sim = self.sim
        request = cpb.ElectLeadersRequest(election_type=cpb.PREFERRED)
        response = sim.submit("ElectLeaders PREFERRED (all)", sim.controller.handle_elect_leaders(request))
        assert isinstance(response, cpb.ElectLeadersResponse)
        for result in response.results:
            for p in result.partitions:
                sim.stats[f"ElectLeaders PREFERRED {Error(p.error_code).name}"] += 1

    def unclean(self) -> None:
        sim = self.sim
        offline = sorted((t.name, pid) for t in sim.image.topics.values()
                         for pid, s in t.partitions.items() if s.leader == NO_LEADER)
        if not offline:
            return
        name, pid = sim.rng.choice(offline)
        request = cpb.ElectLeadersRequest(election_type=cpb.UNCLEAN,
                                          topic_partitions=[cpb.TopicPartitions(topic=name, partitions=[pid])])
        response = sim.submit(f"ElectLeaders UNCLEAN {name}/{pid}", sim.controller.handle_elect_leaders(request),
                              unclean_requested=True)
        assert isinstance(response, cpb.ElectLeadersResponse)
        sim.stats[f"ElectLeaders UNCLEAN {Error(response.results[0].partitions[0].error_code).name}"] += 1

    def min_isr(self) -> None:
        """A topic's min.insync.replicas set anew (KIP-966: its partitions' ELRs are emptied)."""
        sim = self.sim
        names = sorted(sim.image.topic_ids)
        if not names:
            return
        name, value = sim.rng.choice(names), str(sim.rng.randint(1, 3))
        request = cpb.IncrementalAlterConfigsRequest(resources=[cpb.IncrementalAlterConfigsRequest.Resource(
            resource_type=mpb.TOPIC, resource_name=name,
            configs=[cpb.AlterableConfig(name="min.insync.replicas", op=0, value=value)])])
        response = sim.submit(f"IncrementalAlterConfigs {name} min.insync.replicas={value}",
                              sim.controller.handle_incremental_alter_configs(request))
        assert isinstance(response, cpb.IncrementalAlterConfigsResponse)
        sim.stats[f"IncrementalAlterConfigs {Error(response.results[0].error_code).name}"] += 1
        topic_id = sim.image.topic_ids[name]
        if any((s.elr or s.last_known_elr) and s.isr for s in sim.image.topics[topic_id].partitions.values()):
            fail(f"{name}: min.insync.replicas={value} set, the ELRs of partitions with an ISR stay")

    def producer_ids(self) -> None:
        sim = self.sim
        up = sim.fleet.up()
        if not up:
            return
        broker = sim.rng.choice(up)
        request = cpb.AllocateProducerIdsRequest(broker_id=broker.broker_id, broker_epoch=broker.epoch)
        response = sim.submit(f"AllocateProducerIds {broker.broker_id}",
                              sim.controller.handle_allocate_producer_ids(request))
        assert isinstance(response, cpb.AllocateProducerIdsResponse)
        sim.stats[f"AllocateProducerIds {Error(response.error_code).name}"] += 1

    def reassign(self) -> None:
        """Move a partition to random registered brokers, or cancel its move, or ask for a bad target."""
        sim, rng = self.sim, self.sim.rng
        partitions = sorted((t.name, pid) for t in sim.image.topics.values() for pid in t.partitions)
        if not partitions:
            return
        name, pid = rng.choice(partitions)
        registered = sorted(sim.image.brokers)
        item = cpb.AlterPartitionReassignmentsRequest.ReassignablePartition(partition_index=pid)
        roll = rng.random()
        if roll < 0.2:
            what = "cancel"
        else:
            if roll < 0.27 or not registered:
                target = rng.choice(([], [99], [-1], registered[:1] * 2))
            else:
                target = rng.sample(registered, rng.randint(1, min(3, len(registered))))
            item.replicas.CopyFrom(mpb.BrokerIdList(ids=target))
            what = f"-> {target}"
        request = cpb.AlterPartitionReassignmentsRequest(topics=[
            cpb.AlterPartitionReassignmentsRequest.ReassignableTopic(name=name, partitions=[item])])
        response = sim.submit(f"AlterPartitionReassignments {name}/{pid} {what}",
                              sim.controller.handle_alter_partition_reassignments(request))
        assert isinstance(response, cpb.AlterPartitionReassignmentsResponse)
        sim.stats[f"AlterPartitionReassignments {Error(response.responses[0].partitions[0].error_code).name}"] += 1
