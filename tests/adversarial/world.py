"""The cluster the adversarial cases run against, and what "unharmed" means.

One deploy-like cluster (three controllers, three brokers - measured: 3.3 s
to start here, against 2.4 s for combined-3, not worth the difference) and
one single-voter records-only quorum (the only kind of node that serves
QuorumLog). At the start: records produced to every partition of DATA and
to PAIR (their bytes as first fetched kept), a consumer group with a live
member and committed offsets, a transactional producer (TXN_ID, initialized,
no transaction open: its epoch is what the stale-epoch cases stand on).
`snapshot` reads everything a refused request
must leave alone, after every broker has applied every metadata record the
quorum committed (so a side effect cannot hide behind propagation delay).
"""
from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, Optional

import grpc

from devcluster.local_cluster import CLUSTER_ID, LocalCluster
from devcluster.local_processes import wait_until
from devcluster.local_quorum import LocalQuorum
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import groups_pb2 as gpb
from kraftlog_api import quorum_pb2 as qpb

from . import batches
from .harness import K, call

PROPERTIES = {
    # Two cores shared with other jobs (make test runs two modules at once):
    # generous quorum timeouts and session, so that no controller election
    # and no broker fenced by a slow heartbeat moves a leader in the middle
    # of a comparison. No case here is about elections.
    "controller.quorum.election.timeout.ms": 3000,
    "controller.quorum.fetch.timeout.ms": 6000,
    "broker.session.timeout.ms": 12000,
    "broker.heartbeat.interval.ms": 500,
    "replica.fetch.wait.max.ms": 200,
    "replica.fetch.backoff.ms": 200,
    # The reference member must outlive the suite (stale-epoch cases use it).
    "group.consumer.session.timeout.ms": 600000,
    # __transaction_state: a few partitions, not Kafka's 50, on two shared cores.
    "transaction.state.log.num.partitions": 3,
}
DATA = "adv-data"      # 3 partitions, RF 3
PAIR = "adv-pair"      # one partition on A (leader) and B; C holds no replica of it
CLUSTER_ID_WRONG = "adv-another-cluster"
GROUP = "adv-group"    # the reference group: one live member, offsets committed
MIN_ISR = "adv-min-isr"  # one replica on A, min.insync.replicas=2: an ISR always too small for acks=all
DATA_PARTITIONS = 3
BATCHES = 3
SEED_OFFSETS = {0: 2, 1: 4, 2: 6}  # the group's committed offsets on DATA
TXN_ID = "adv-txn"     # the reference transactional producer: initialized, nothing open
TXN_TIMEOUT_MS = 60000
RETRY_TXN = (K.COORDINATOR_LOAD_IN_PROGRESS, K.COORDINATOR_NOT_AVAILABLE, K.NOT_COORDINATOR,
             K.CONCURRENT_TRANSACTIONS)


def next_offset(records: bytes) -> int:
    """The offset after the last batch, from the headers alone: a hostile
    batch a refused-too-late case left in the log must not stop the read."""
    pos, last = 0, -1
    while pos + 27 <= len(records):
        base_offset, length = struct.unpack_from(">qi", records, pos)
        (last_delta,) = struct.unpack_from(">i", records, pos + 23)
        last = base_offset + last_delta
        pos += 12 + max(length, 0)
        if length <= 0:
            break
    return last + 1


class World:
    def __init__(self, root: Path) -> None:
        self.cluster = LocalCluster(root / "cluster", controllers=3, brokers=3, properties=PROPERTIES)
        self.records_quorum = LocalQuorum(root / "records-quorum", voters=1)
        self.A, self.B, self.C = self.cluster.brokers
        self.cluster_id = CLUSTER_ID
        self.topic_ids: dict[str, bytes] = {}
        self.data_bytes: dict[tuple[str, int], bytes] = {}
        self.member_id = ""
        self.member_epoch = 0
        self.coordinator = -1
        self.txn_producer_id, self.txn_epoch = -1, -1
        self._controller: Optional[int] = None
        self.reference: Optional[dict[str, Any]] = None

    # --- start and stop ------------------------------------------------------

    def start(self) -> None:
        # The records quorum first: its port was chosen free when the world was made, and the longer
        # it waits unbound the likelier another process's connection takes it.
        self.records_quorum.start()
        self.cluster.start()
        self.cluster.wait_for_brokers(timeout=60)
        self.records_quorum.wait_for_leader(timeout=30)
        c = self.cluster
        c.create_topic(DATA, DATA_PARTITIONS, 3)
        self._create_on_a(PAIR, (self.A, self.B))
        self._create_on_a(MIN_ISR, (self.A,), {"min.insync.replicas": "2"})
        for topic in (DATA, PAIR, MIN_ISR):
            found = c.wait_for_leaders(topic)
            self.topic_ids[topic] = found.topic_id
        wait_until(lambda: self.leader(PAIR, 0) == self.A, 30, f"{PAIR} led by broker {self.A}")
        for topic, partitions in ((DATA, DATA_PARTITIONS), (PAIR, 1)):
            for p in range(partitions):
                for n in range(BATCHES):
                    values = tuple(f"{topic}-{p}-{n}-{i}".encode() for i in range(3))
                    answer = self.produce(topic, p, batches.good(values))
                    assert answer.error_code == K.NONE, answer
                self.data_bytes[(topic, p)] = self.read_all(topic, p)
        self._join_reference_member()
        self.txn_producer_id, self.txn_epoch = self.init_transactional(TXN_ID)
        self.reference = self.snapshot()

    def close(self) -> None:
        try:
            self.cluster.close()
        finally:
            self.records_quorum.close()

    def _create_on_a(self, name: str, replicas: tuple[int, ...], configs: Optional[dict[str, str]] = None) -> None:
        """A one-partition topic placed explicitly (A first: the leader), through broker C."""
        topic = cpb.CreateTopicsRequest.CreatableTopic(
            name=name, num_partitions=-1, replication_factor=-1,
            configs=[cpb.ConfigEntry(name=k, value=v) for k, v in (configs or {}).items()])
        topic.assignments.add(partition_index=0, broker_ids=list(replicas))

        def answered() -> Optional[cpb.CreateTopicsResponse]:
            answer = self.cluster.broker_stub(self.C).CreateTopics(cpb.CreateTopicsRequest(topics=[topic]), timeout=30)
            return None if answer.error_code in (K.NOT_CONTROLLER, K.REQUEST_TIMED_OUT) else answer

        assert wait_until(answered, 30, f"CreateTopics {name}", interval=0.2).topics[0].error_code == K.NONE

    def coordinator_of(self, group: str) -> int:
        def found() -> Optional[int]:
            response = call(self.broker_channel(self.A), "GroupCoordinator/FindCoordinator",
                            gpb.FindCoordinatorRequest(keys=[group]))
            if isinstance(response, grpc.RpcError) or response.coordinators[0].error_code:
                return None
            return response.coordinators[0].node_id

        return wait_until(found, 60, f"a coordinator for {group}", interval=0.2)

    def txn_coordinator_of(self, transactional_id: str) -> int:
        """The transaction coordinator of an id (the first asked creates __transaction_state)."""
        def found() -> Optional[int]:
            response = call(self.broker_channel(self.A), "GroupCoordinator/FindCoordinator",
                            gpb.FindCoordinatorRequest(key_type=1, keys=[transactional_id]))
            if isinstance(response, grpc.RpcError) or response.coordinators[0].error_code:
                return None
            return response.coordinators[0].node_id

        return wait_until(found, 60, f"the transaction coordinator of {transactional_id}", interval=0.2)

    def init_transactional(self, transactional_id: str, **fields: Any) -> tuple[int, int]:
        """InitProducerId of a transactional id at its coordinator, retried while
        that is loading or moving: (producer id, epoch)."""
        def initialized() -> Optional[bpb.InitProducerIdResponse]:
            answer = call(self.broker_channel(self.txn_coordinator_of(transactional_id)), "KafkaBroker/InitProducerId",
                          bpb.InitProducerIdRequest(transactional_id=transactional_id, producer_id=-1,
                                                    producer_epoch=-1, transaction_timeout_ms=TXN_TIMEOUT_MS,
                                                    **fields))
            if isinstance(answer, grpc.RpcError) or answer.error_code in RETRY_TXN:
                return None
            return answer

        answer = wait_until(initialized, 60, f"InitProducerId of {transactional_id}", interval=0.2)
        assert answer.error_code == K.NONE, answer
        return answer.producer_id, answer.producer_epoch

    def txn_call(self, transactional_id: str, rpc: str, request: Any) -> Any:
        """A TransactionCoordinator call at the id's coordinator, retried while it is loading or moving."""
        def answered() -> Optional[Any]:
            answer = call(self.broker_channel(self.txn_coordinator_of(transactional_id)), rpc, request)
            if isinstance(answer, grpc.RpcError) or answer.error_code in RETRY_TXN:
                return None
            return answer

        return wait_until(answered, 60, f"{rpc} of {transactional_id}", interval=0.2)

    def _join_reference_member(self) -> None:
        self.coordinator = self.coordinator_of(GROUP)

        def joined() -> Optional[gpb.ConsumerGroupHeartbeatResponse]:
            answer = call(self.channel_for("coordinator"), "GroupCoordinator/ConsumerGroupHeartbeat",
                          gpb.ConsumerGroupHeartbeatRequest(
                              group_id=GROUP, member_epoch=0, rebalance_timeout_ms=30000,
                              subscribed_topic_names=gpb.SubscribedTopics(names=[DATA])))
            return None if isinstance(answer, grpc.RpcError) or answer.error_code else answer

        answer = wait_until(joined, 60, f"a member of {GROUP}", interval=0.2)
        self.member_id, self.member_epoch = answer.member_id, answer.member_epoch
        commit = gpb.OffsetCommitRequest(group_id=GROUP, member_id=self.member_id, member_epoch=self.member_epoch,
                                         topics=[gpb.OffsetCommitRequest.Topic(name=DATA, partitions=[
                                             gpb.OffsetCommitRequest.Partition(partition_index=p, committed_offset=o,
                                                                               committed_leader_epoch=-1)
                                             for p, o in SEED_OFFSETS.items()])])
        answer = call(self.channel_for("coordinator"), "GroupCoordinator/OffsetCommit", commit)
        assert not isinstance(answer, grpc.RpcError), answer
        assert all(p.error_code == K.NONE for t in answer.topics for p in t.partitions), answer

    # --- targets ---------------------------------------------------------------

    def broker_channel(self, broker: int) -> grpc.Channel:
        return self.cluster.channel(self.cluster.broker_addresses[broker])

    def controller_channel(self, controller: int) -> grpc.Channel:
        return self.cluster.channel(self.cluster.controller_addresses[controller])

    def channel_for(self, to: str) -> grpc.Channel:
        if to in ("broker", "leader"):
            return self.broker_channel(self.leader(DATA, 0) if to == "leader" else self.B)
        if to in ("pair-leader", "pair-follower", "outsider"):
            return self.broker_channel({"pair-leader": self.A, "pair-follower": self.B, "outsider": self.C}[to])
        if to == "coordinator":
            return self.broker_channel(self.coordinator)
        if to == "non-coordinator":
            return self.broker_channel(next(b for b in self.cluster.brokers if b != self.coordinator))
        if to.startswith("coordinator-of:"):
            return self.broker_channel(self.coordinator_of(to.split(":", 1)[1]))
        if to.startswith("txn-coordinator-of:"):
            return self.broker_channel(self.txn_coordinator_of(to.split(":", 1)[1]))
        if to.startswith("txn-non-coordinator-of:"):
            coordinator = self.txn_coordinator_of(to.split(":", 1)[1])
            return self.broker_channel(next(b for b in self.cluster.brokers if b != coordinator))
        if to == "data-follower":  # a broker that holds DATA-0 and does not lead it
            leader = self.leader(DATA, 0)
            return self.broker_channel(next(b for b in self.cluster.brokers if b != leader))
        if to == "controller":
            return self.controller_channel(self.active_controller())
        if to == "quorum-leader":
            return self.controller_channel(self.active_controller())
        if to == "quorum-follower":
            leader = self.active_controller()
            return self.controller_channel(next(c for c in self.cluster.controllers if c != leader))
        if to == "records-quorum":
            return self.records_quorum.channel(1)
        raise ValueError(f"no target {to!r}")

    def active_controller(self) -> int:
        if self._controller is None:
            def leader() -> Optional[int]:
                for controller in self.cluster.controllers:
                    answer = call(self.controller_channel(controller), "KRaftQuorum/DescribeQuorum",
                                  qpb.DescribeQuorumRequest(), timeout=5)
                    if not isinstance(answer, grpc.RpcError) and answer.error_code == K.NONE:
                        return answer.leader_id
                return None
            self._controller = wait_until(leader, 30, "the quorum's leader", interval=0.1)
        return self._controller

    def forget_controller(self) -> None:
        self._controller = None

    def leader(self, topic: str, partition: int) -> Optional[int]:
        answer = self.cluster.metadata(self.A, [topic], timeout=5)
        if answer is None or answer.topics[0].error_code:
            return None
        return answer.topics[0].partitions[partition].leader_id

    # --- live state the cases build on -----------------------------------------

    def quorum(self) -> qpb.DescribeQuorumResponse:
        answer = call(self.controller_channel(self.active_controller()), "KRaftQuorum/DescribeQuorum",
                      qpb.DescribeQuorumRequest())
        if isinstance(answer, grpc.RpcError) or answer.error_code:
            self.forget_controller()
            answer = call(self.controller_channel(self.active_controller()), "KRaftQuorum/DescribeQuorum",
                          qpb.DescribeQuorumRequest())
        assert not isinstance(answer, grpc.RpcError) and answer.error_code == K.NONE, answer
        return answer

    def quorum_epoch(self) -> int:
        return self.quorum().leader_epoch

    def broker_epochs(self) -> dict[int, int]:
        answer = self.cluster.broker_stub(self.A).DescribeCluster(bpb.DescribeClusterRequest(), timeout=10)
        return {b.broker_id: b.broker_epoch for b in answer.brokers}

    def leader_epoch(self, topic: str, partition: int) -> int:
        answer = self.cluster.metadata(self.A, [topic], timeout=5)
        return answer.topics[0].partitions[partition].leader_epoch

    # --- data ------------------------------------------------------------------

    def produce(self, topic: str, partition: int, records: bytes) -> bpb.ProduceResponse.PartitionResponse:
        leader = self.leader(topic, partition)
        answer = self.cluster.broker_stub(leader).Produce(bpb.ProduceRequest(acks=-1, timeout_ms=10000, topics=[
            bpb.ProduceRequest.TopicData(name=topic, partitions=[
                bpb.ProduceRequest.PartitionData(index=partition, records=records)])]), timeout=30)
        return answer.responses[0].partitions[0]

    def fetch(self, topic: str, partition: int, offset: int) -> bpb.FetchResponse.PartitionData:
        request = bpb.FetchRequest(replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, topics=[
            bpb.FetchRequest.FetchTopic(topic=topic, partitions=[bpb.FetchRequest.FetchPartition(
                partition=partition, current_leader_epoch=-1, fetch_offset=offset, last_fetched_epoch=-1,
                partition_max_bytes=1 << 20)])])
        answer = call(self.broker_channel(self.leader(topic, partition)), "KafkaBroker/Fetch", request)
        assert not isinstance(answer, grpc.RpcError), answer
        return answer.responses[0].partitions[0]

    def read_all(self, topic: str, partition: int) -> bytes:
        """Every batch of the partition below its high watermark, as the leader serves them."""
        chunks: list[bytes] = []
        offset = 0
        for _ in range(1000):  # bounded: the suite writes a few batches per partition
            fetched = self.fetch(topic, partition, offset)
            assert fetched.error_code == K.NONE, fetched
            if offset >= fetched.high_watermark or not fetched.records:
                break
            chunks.append(fetched.records)
            offset = next_offset(fetched.records)
        return b"".join(chunks)

    # --- the reference state ---------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """Everything a refused request must leave as it was."""
        c = self.cluster
        quorum = self.quorum()  # its voters below: the case was answered before this
        high_watermark = quorum.high_watermark

        def caught_up() -> Optional[dict[int, bpb.DescribeClusterResponse]]:
            answers = {b: c.broker_stub(b).DescribeCluster(bpb.DescribeClusterRequest(), timeout=10)
                       for b in c.brokers}
            return answers if all(a.metadata_offset >= high_watermark - 1 for a in answers.values()) else None

        clusters = wait_until(caught_up, 30, f"every broker at metadata offset {high_watermark - 1}")
        views = {}
        for b in c.brokers:
            answer = c.metadata(b, timeout=10)
            assert answer is not None, f"broker {b} does not answer Metadata"
            views[b] = sorted((t.name, t.topic_id.hex(), tuple((p.partition_index, tuple(p.replica_nodes))
                                                               for p in t.partitions)) for t in answer.topics)
        assert len({repr(v) for v in views.values()}) == 1, views
        registered = {b: sorted((x.broker_id, x.host, x.port, x.rack) for x in a.brokers) for b, a in clusters.items()}
        assert len({repr(v) for v in registered.values()}) == 1, registered
        configs = c.broker_stub(self.A).DescribeConfigs(bpb.DescribeConfigsRequest(resources=[
            bpb.DescribeConfigsRequest.Resource(resource_type=2, resource_name=t) for t in (DATA, PAIR)]
            + [bpb.DescribeConfigsRequest.Resource(resource_type=4, resource_name=str(b)) for b in c.brokers]),
            timeout=10)
        return {
            "topics": views[self.A],
            "brokers": registered[self.A],
            "configs": sorted((r.resource_name, r.error_code, tuple(sorted((x.name, x.value, x.config_source)
                                                                            for x in r.configs)))
                              for r in configs.results),
            "log ends": self._log_ends(),
            "group offsets": self._group_offsets(),
            "voters": sorted(v.replica_id for v in quorum.current_voters),
        }

    def _log_ends(self) -> dict[tuple[str, int], int]:
        """Every data partition's log end, each asked of its leader: one
        ListOffsets per leader, the leaders from one Metadata of broker A."""
        wanted = {(t, p) for t, n in ((DATA, DATA_PARTITIONS), (PAIR, 1), (MIN_ISR, 1)) for p in range(n)}

        def answered() -> Optional[dict[tuple[str, int], int]]:
            metadata = self.cluster.metadata(self.A, [DATA, PAIR, MIN_ISR], timeout=5)
            if metadata is None or any(t.error_code for t in metadata.topics):
                return None
            by_leader: dict[int, list[tuple[str, int]]] = {}
            for t in metadata.topics:
                for p in t.partitions:
                    by_leader.setdefault(p.leader_id, []).append((t.name, p.partition_index))
            if any(leader < 0 for leader in by_leader) or {tp for tps in by_leader.values() for tp in tps} != wanted:
                return None
            ends = {}
            for leader, partitions in by_leader.items():
                topics: dict[str, list[int]] = {}
                for topic, partition in partitions:
                    topics.setdefault(topic, []).append(partition)
                answer = self.cluster.broker_stub(leader).ListOffsets(bpb.ListOffsetsRequest(
                    replica_id=-1, topics=[bpb.ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
                        bpb.ListOffsetsRequest.ListOffsetsPartition(partition_index=partition,
                                                                    current_leader_epoch=-1, timestamp=-1)
                        for partition in numbers]) for topic, numbers in topics.items()]), timeout=10)
                for t in answer.topics:
                    for found in t.partitions:
                        if found.error_code != K.NONE:
                            return None
                        ends[(t.name, found.partition_index)] = found.offset
            return ends if set(ends) == wanted else None

        return wait_until(answered, 30, "the log ends of the data topics", interval=0.1)

    def _group_offsets(self) -> list[tuple[str, int, int]]:
        def answered() -> Optional[gpb.OffsetFetchResponse]:
            answer = call(self.channel_for("coordinator"), "GroupCoordinator/OffsetFetch",
                          gpb.OffsetFetchRequest(group_id=GROUP, member_epoch=-1))
            if not isinstance(answer, grpc.RpcError) and answer.error_code == K.NOT_COORDINATOR:
                # The leader of the group's __consumer_offsets partition moved.
                self.coordinator = self.coordinator_of(GROUP)
                return None
            return answer

        answer = wait_until(answered, 30, f"the offsets of {GROUP}", interval=0.2)
        assert not isinstance(answer, grpc.RpcError) and answer.error_code == K.NONE, answer
        return sorted((t.name, p.partition_index, p.committed_offset) for t in answer.topics for p in t.partitions)

    def retake_reference(self) -> None:
        self.reference = self.snapshot()

    def assert_unchanged(self, what: str) -> None:
        now = self.snapshot()
        assert self.reference is not None
        changed = {k: (self.reference[k], now[k]) for k in now if now[k] != self.reference[k]}
        assert not changed, f"{what} changed {changed}"

    # --- every node still serving ----------------------------------------------

    def probe(self) -> None:
        """Every process runs; every broker answers Metadata; the controllers
        answer DescribeQuorum and agree on one leader; the records quorum too."""
        c = self.cluster
        dead = [n for n in (*c.controllers, *c.brokers) if not c.alive(n)]
        dead += [f"records-{n}" for n in self.records_quorum.pids if not self.records_quorum.alive(n)]
        assert not dead, f"nodes died: {dead}"
        for b in c.brokers:
            answer = call(self.broker_channel(b), "KafkaBroker/Metadata", bpb.MetadataRequest(topics=[DATA]))
            assert not isinstance(answer, grpc.RpcError), (b, answer)
            assert answer.topics[0].error_code == K.NONE and answer.cluster_id == CLUSTER_ID, (b, answer)
        seen: list[set[int]] = []

        def agreed() -> bool:
            leaders = set()
            for controller in c.controllers:
                answer = call(self.controller_channel(controller), "KRaftQuorum/DescribeQuorum",
                              qpb.DescribeQuorumRequest())
                assert not isinstance(answer, grpc.RpcError), (controller, answer)
                leaders.add(answer.leader_id)
            seen.append(leaders)
            return len(leaders) == 1 and leaders <= set(c.controllers)
        # An election under way (-1: no leader known yet) is given time to end; a quorum that
        # stays split or leaderless fails.
        try:
            wait_until(agreed, 30, "the controllers agree on one leader", interval=0.3)
        except TimeoutError:
            raise AssertionError(f"the controllers never agreed on one leader: {seen[-3:]}") from None
        assert self.records_quorum.describe(1, timeout=10) is not None
