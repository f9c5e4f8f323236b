"""A metadata log written by hand, and brokers whose ReplicaManagers follow it."""
from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Iterable, Optional

from broker.config import BrokerConfig
from broker.replica_manager import ReplicaChanges, ReplicaManager
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.image import MetadataDelta, MetadataImage
from partition_log.log_manager import LogManager

from ..partition_log.conftest import FakeClock, batch_of

__all__ = ["Cluster", "FakeClock", "batch_of", "run", "fetch_request", "replicate"]


def run(coro):
    return asyncio.run(coro)


class Cluster:
    """One metadata image, written record by record, and a broker per id
    (each with its own log directory) applying every delta."""

    def __init__(self, tmp_path: Path, broker_ids: Iterable[int] = (1, 2, 3), *,
                 config: Optional[BrokerConfig] = None, separate_timer: bool = False) -> None:
        self.image = MetadataImage()
        self.offset = 0
        self.clock = FakeClock()
        # the monotonic clock for durations (replica lag); the wall clock's twin unless a test skews them apart
        self.timer = FakeClock() if separate_timer else self.clock
        self.brokers: dict[int, ReplicaManager] = {}
        self.last_changes: dict[int, ReplicaChanges] = {}
        for broker_id in broker_ids:
            logs = LogManager(tmp_path / f"broker-{broker_id}", clock=self.clock)
            self.brokers[broker_id] = ReplicaManager(broker_id, logs, self.clock, config, timer=self.timer)
            self.apply(mpb.MetadataRecord(register_broker=mpb.RegisterBrokerRecord(
                broker_id=broker_id, incarnation_id=f"inc-{broker_id}", broker_epoch=100 + broker_id,
                endpoints=[mpb.BrokerEndpoint(name="PLAINTEXT", host="127.0.0.1", port=9090 + broker_id)])))

    def __getitem__(self, broker_id: int) -> ReplicaManager:
        return self.brokers[broker_id]

    def restart(self, broker_id: int, *, clean: bool = True) -> ReplicaManager:
        """The broker's process again on the same log directory: closed cleanly
        (LogManager.close) or as kill -9 leaves it, then the whole image applied."""
        from broker.server import full_delta

        old = self.brokers[broker_id]
        if clean:
            old.log_manager.close()
        else:
            for lg in old.log_manager.logs.values():
                for seg in lg.segments:
                    seg.close()
        logs = LogManager(old.log_manager.log_dir, clock=self.clock)
        replicas = self.brokers[broker_id] = ReplicaManager(broker_id, logs, self.clock, old.config, timer=self.timer)
        self.last_changes[broker_id] = replicas.apply_metadata(self.image, full_delta(self.image))
        return replicas

    def apply(self, *records: mpb.MetadataRecord) -> MetadataDelta:
        delta = MetadataDelta()
        for record in records:
            self.offset += 1
            self.image.apply(record, self.offset, delta)
        for broker_id, replicas in self.brokers.items():
            self.last_changes[broker_id] = replicas.apply_metadata(self.image, delta)
        return delta

    def create_topic(self, name: str, assignment: dict[int, list[int]], *, isr: Optional[dict[int, list[int]]] = None,
                     configs: Optional[dict[str, str]] = None) -> bytes:
        """Partitions led by the first replica listed, ISR = replicas unless given."""
        topic_id = uuid.uuid4().bytes
        records = [mpb.MetadataRecord(topic=mpb.TopicRecord(name=name, topic_id=topic_id))]
        for key, value in (configs or {}).items():
            records.append(mpb.MetadataRecord(config=mpb.ConfigRecord(
                resource_type=mpb.TOPIC, resource_name=name, name=key, value=value)))
        for index, replicas in assignment.items():
            records.append(mpb.MetadataRecord(partition=mpb.PartitionRecord(
                partition_id=index, topic_id=topic_id, replicas=replicas,
                isr=(isr or {}).get(index, replicas), leader=replicas[0], leader_epoch=0, partition_epoch=0)))
        self.apply(*records)
        return topic_id

    def change(self, name: str, index: int, *, leader: Optional[int] = None, isr: Optional[list[int]] = None,
               replicas: Optional[list[int]] = None, recovering: bool = False) -> MetadataDelta:
        record = mpb.PartitionChangeRecord(partition_id=index, topic_id=self.image.topic_ids[name])
        if leader is not None:
            record.leader = leader
        if isr is not None:
            record.isr.ids.extend(isr)
        if replicas is not None:
            record.replicas.ids.extend(replicas)
        if recovering:
            record.leader_recovery_state = mpb.RECOVERING
        return self.apply(mpb.MetadataRecord(partition_change=record))

    def remove_topic(self, name: str) -> MetadataDelta:
        return self.apply(mpb.MetadataRecord(remove_topic=mpb.RemoveTopicRecord(topic_id=self.image.topic_ids[name])))

    def fence(self, broker_id: int) -> MetadataDelta:
        return self.apply(mpb.MetadataRecord(broker_registration_change=mpb.BrokerRegistrationChangeRecord(
            broker_id=broker_id, broker_epoch=self.image.brokers[broker_id].broker_epoch, fenced=mpb.FENCE)))

    def set_config(self, name: str, key: str, value: str, *, topic: bool = True) -> MetadataDelta:
        return self.apply(mpb.MetadataRecord(config=mpb.ConfigRecord(
            resource_type=mpb.TOPIC if topic else mpb.BROKER, resource_name=name if topic else "",
            name=key, value=value)))


def fetch_request(topic: str, index: int, offset: int, *, replica_id: int = -1, current_leader_epoch: int = -1,
                  last_fetched_epoch: int = -1, max_wait_ms: int = 0, min_bytes: int = 1,
                  max_bytes: int = 0, partition_max_bytes: int = 0, replica_epoch: int = -1) -> bpb.FetchRequest:
    return bpb.FetchRequest(
        replica_id=replica_id, replica_epoch=replica_epoch, max_wait_ms=max_wait_ms, min_bytes=min_bytes,
        max_bytes=max_bytes,
        topics=[bpb.FetchRequest.FetchTopic(topic=topic, partitions=[bpb.FetchRequest.FetchPartition(
            partition=index, current_leader_epoch=current_leader_epoch, fetch_offset=offset,
            last_fetched_epoch=last_fetched_epoch, partition_max_bytes=partition_max_bytes)])])


async def fetched(replicas, request: bpb.FetchRequest) -> bpb.FetchResponse:
    """handle_fetch's answer as the client parses it off the wire."""
    from broker.fetch import handle_fetch

    return bpb.FetchResponse.FromString(await handle_fetch(replicas, request))


async def replicate(cluster: Cluster, follower_id: int, rounds: int = 1) -> None:
    """`rounds` fetches of every partition `follower_id` follows, straight into
    the leaders' handle_fetch (no long poll), applied as the fetcher would."""
    from broker import follower_fetch

    follower = cluster[follower_id]
    for _ in range(rounds):
        for leader_id, request in follower_fetch.fetch_requests(follower, max_wait_ms=0).items():
            response = await fetched(cluster[leader_id], request)
            follower_fetch.apply_fetch_response(follower, follower_fetch.sent_states(request), response)
