"""The transaction coordinator's shell on real partition logs: loading on
leadership, acks=all appends to __transaction_state, markers written (and
retried) before the Complete* record, the timer's aborts, reloading from the
log, the verifier, and routing (NOT_COORDINATOR, FindCoordinator).

The partitions' side of WriteTxnMarkers (broker/txn_markers.py) belongs to
another part of the broker; here the marker writer's local and remote
deliveries are recording functions, so what the coordinator sends is what
is checked."""
from __future__ import annotations

import asyncio
import itertools
from typing import Callable, Optional

import pytest

from broker.errors import BrokerError, Error
from broker.config import BrokerConfig
from broker.transactions.coordinator import TXN_TOPIC, TransactionCoordinator
from broker.transactions.machine import TWO_PC_TIMEOUT_MS
from broker.transactions.markers import MarkerWriter
from broker.transactions.records import TxnState
from broker.transactions.verifier import CoordinatorVerifier
from kafka_protocol.coordinator_placement import partition_for
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import groups_pb2 as gpb
from kraftlog_api import transactions_pb2 as tpb

from ..helpers import Cluster, replicate

# Transactional ids on __transaction_state partition 0 (led by broker 1) and 1 (led by broker 2).
HERE = next(f"tx-{i}" for i in itertools.count() if partition_for(f"tx-{i}", 2) == 0)
HIDDEN = next(f"tx-{i}" for i in itertools.count() if partition_for(f"tx-{i}", 2) == 0 and f"tx-{i}" != HERE)
ELSEWHERE = next(f"tx-{i}" for i in itertools.count() if partition_for(f"tx-{i}", 2) == 1)


class Deliveries:
    """WriteTxnMarkers as the leaders would answer: each call recorded; the
    first `failures` calls fail in transport, then every partition is acknowledged."""

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.delay_s = 0.0  # each delivery takes this long
        self.requests: list[tuple[int, bpb.WriteTxnMarkersRequest]] = []

    def answer(self, broker_id: int, request: bpb.WriteTxnMarkersRequest) -> bpb.WriteTxnMarkersResponse:
        self.requests.append((broker_id, request))
        if self.failures > 0:
            self.failures -= 1
            raise ConnectionError("leader unreachable")
        response = bpb.WriteTxnMarkersResponse()
        for marker in request.markers:
            out = response.markers.add(producer_id=marker.producer_id)
            for topic in marker.topics:
                out.topics.add(name=topic.name, partitions=[bpb.WriteTxnMarkersResponse.Partition(
                    partition_index=i) for i in topic.partition_indexes])
        return response

    def partitions(self) -> set[tuple[int, str, int]]:
        return {(b, t.name, i) for b, r in self.requests for m in r.markers for t in m.topics
                for i in t.partition_indexes}


class World:
    def __init__(self, tmp_path, failures: int = 0, txn_replicas: tuple[int, ...] = (1,), **config) -> None:
        self.cluster = Cluster(tmp_path, (1, 2), separate_timer=True)  # the wall clock and the monotonic one
        self.cluster.create_topic("events", {0: [1], 1: [2]})
        self.cluster.create_topic(TXN_TOPIC, {0: list(txn_replicas), 1: [2]})
        self.leadership = self.cluster.last_changes[1]  # broker 1 leads __transaction_state-0
        self.ids = itertools.count(5000)
        self.deliveries = Deliveries(failures)
        self.config = BrokerConfig(transaction_state_log_num_partitions=2, **config)
        self.coordinator = self.new_coordinator()

    def new_coordinator(self) -> TransactionCoordinator:
        async def remote(broker_id, request):
            await asyncio.sleep(self.deliveries.delay_s)
            return self.deliveries.answer(broker_id, request)

        async def local(request):
            await asyncio.sleep(self.deliveries.delay_s)
            return self.deliveries.answer(1, request)

        async def new_id() -> int:
            return next(self.ids)

        writer = MarkerWriter(1, lambda: self.cluster[1].image, remote, local, backoff_s=0.001)
        return TransactionCoordinator(1, self.cluster[1], None, self.config, new_producer_id=new_id,
                                      markers=writer, clock=self.cluster.clock, timer=self.cluster.timer,
                                      append_timeout_ms=1000)

    async def lead(self) -> None:
        self.coordinator.on_replica_changes(self.leadership)
        await until(lambda: self.coordinator.shards[0].loaded)

    async def init(self, tid: str = HERE, timeout_ms: int = 60000, **kw) -> bpb.InitProducerIdResponse:
        return await self.coordinator.init_producer_id(bpb.InitProducerIdRequest(
            transactional_id=tid, transaction_timeout_ms=timeout_ms, producer_id=-1, producer_epoch=-1, **kw))

    async def add(self, pid: int, epoch: int, partitions=(0, 1), tid: str = HERE) -> tpb.AddPartitionsToTxnResponse:
        return await self.coordinator.add_partitions(tpb.AddPartitionsToTxnRequest(
            transactional_id=tid, producer_id=pid, producer_epoch=epoch,
            topics=[tpb.TxnTopic(name="events", partitions=list(partitions))]))

    async def end(self, pid: int, epoch: int, committed: bool, tid: str = HERE) -> tpb.EndTxnResponse:
        return await self.coordinator.end_txn(tpb.EndTxnRequest(transactional_id=tid, producer_id=pid,
                                                                producer_epoch=epoch, committed=committed))

    def state(self, tid: str = HERE) -> TxnState:
        return self.coordinator.shards[0].machine.describe(tid).state


async def until(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    async def wait() -> None:
        while not condition():
            await asyncio.sleep(0.005)
    await asyncio.wait_for(wait(), timeout_s)


class Follower:
    """Broker 2 fetching __transaction_state-0 from broker 1 every 5 ms while `replicating`."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.replicating = True
        self._task: Optional[asyncio.Task[None]] = None

    async def __aenter__(self) -> "Follower":
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._task is not None
        self._task.cancel()

    async def _run(self) -> None:
        while True:
            if self.replicating:
                await replicate(self.cluster, 2)
            await asyncio.sleep(0.005)


async def open_transaction(w: "World") -> int:
    """InitProducerId and both partitions added: the producer id (epoch 0)."""
    pid = (await w.init()).producer_id
    assert set(codes(await w.add(pid, 0)).values()) == {Error.NONE}
    return pid


async def end_unreplicated(w: "World", follower: Follower) -> tuple[int, asyncio.Task]:
    """A transaction opened, then its EndTxn(commit) sent with the follower
    stopped: (producer id, the EndTxn's task), once its append is in flight."""
    pid = await open_transaction(w)
    follower.replicating = False
    first = asyncio.create_task(w.end(pid, 0, True))
    await until(lambda: HERE in w.coordinator.shards[0].writing)
    return pid, first


async def assert_committed_once_replicated(w: "World", follower: Follower, pid: int) -> None:
    """With the follower fetching again, the shard reloads, the markers go out,
    the CompleteCommit record is replicated, and a retried EndTxn is told the commit."""
    follower.replicating = True
    await until(lambda: w.coordinator.shards[0].loaded and w.state() == TxnState.COMPLETE_COMMIT
                and not w.coordinator.shards[0].writing)
    retried = await w.end(pid, 0, True)
    assert (retried.error_code, retried.producer_epoch) == (Error.NONE, 1)


def codes(response: tpb.AddPartitionsToTxnResponse) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.error_code for t in response.results for p in t.results}


def run_world(tmp_path, body, **kw) -> None:
    async def main() -> None:
        world = World(tmp_path, **kw)
        try:
            await world.lead()
            await body(world)
        finally:
            await world.coordinator.stop()
            world.cluster[1].log_manager.close()
            world.cluster[2].log_manager.close()
    asyncio.run(main())


def test_a_transaction_is_written_marked_completed_and_reloaded(tmp_path) -> None:
    async def body(w: World) -> None:
        init = await w.init()
        assert (init.error_code, init.producer_id, init.producer_epoch) == (0, 5000, 0)
        added = await w.add(5000, 0)
        assert set(codes(added).values()) == {Error.NONE} and w.state() == TxnState.ONGOING
        ended = await w.end(5000, 0, True)
        assert (ended.error_code, ended.producer_id, ended.producer_epoch) == (0, 5000, 1)
        await until(lambda: w.state() == TxnState.COMPLETE_COMMIT)
        # One marker per partition, to its leader, with the bumped epoch and the coordinator's leader epoch.
        assert w.deliveries.partitions() == {(1, "events", 0), (2, "events", 1)}
        for _, request in w.deliveries.requests:
            [marker] = request.markers
            assert (marker.producer_id, marker.producer_epoch, marker.transaction_result,
                    marker.coordinator_epoch) == (5000, 1, True, 0)
        # Every change is in the log: a new coordinator on it has the same state.
        before = w.coordinator.shards[0].machine.describe(HERE)
        await w.coordinator.stop()
        w.coordinator = w.new_coordinator()
        await w.lead()
        assert w.coordinator.shards[0].machine.describe(HERE) == before
    run_world(tmp_path, body)


def test_an_end_the_isr_did_not_get_in_time_is_served_only_from_the_replicated_log(tmp_path) -> None:
    """__transaction_state-0 on brokers 1 and 2 (both in the ISR): EndTxn's
    PrepareCommit reaches broker 1's log but not broker 2 in time. The
    client is told COORDINATOR_NOT_AVAILABLE; the id is CONCURRENT_TRANSACTIONS
    while the append is in flight; then the shard reloads from its log and
    answers nothing (COORDINATOR_LOAD_IN_PROGRESS) until broker 2 has the
    record - never "committed" from a state the ISR might never get - and once
    it has, the markers go out and the retried EndTxn is told the commit."""
    async def body(w: World) -> None:
        async with Follower(w.cluster) as follower:
            pid, first = await end_unreplicated(w, follower)
            assert (await w.end(pid, 0, True)).error_code == Error.CONCURRENT_TRANSACTIONS
            assert (await first).error_code == Error.COORDINATOR_NOT_AVAILABLE  # append_timeout_ms 1000
            await asyncio.sleep(0.5)  # the reload has replayed the log, and waits for the ISR
            assert (await w.end(pid, 0, True)).error_code == Error.COORDINATOR_LOAD_IN_PROGRESS
            assert w.deliveries.requests == []
            await assert_committed_once_replicated(w, follower, pid)
            assert w.deliveries.partitions() == {(1, "events", 0), (2, "events", 1)}
    run_world(tmp_path, body, txn_replicas=(1, 2))


def test_an_end_whose_request_was_cancelled_is_still_decided_by_its_write(tmp_path) -> None:
    """gRPC cancels a handler at its client's deadline. EndTxn's PrepareCommit
    is in broker 1's log and the ISR (brokers 1 and 2) does not get it; the
    handler is cancelled while it waits. The write goes on: the id stays
    CONCURRENT_TRANSACTIONS until the append times out, then the shard
    reloads and waits for the ISR - a retried EndTxn is never told
    "committed" by a state only the machine holds (chaos seed 6, a
    coordinator isolated from its followers and reached by its client)."""
    async def body(w: World) -> None:
        async with Follower(w.cluster) as follower:
            pid, first = await end_unreplicated(w, follower)
            first.cancel()  # the client's deadline passed
            with pytest.raises(asyncio.CancelledError):
                await first
            retries = set()
            for _ in range(40):  # 2 s, past append_timeout_ms (1 s)
                retries.add((await w.end(pid, 0, True)).error_code)
                await asyncio.sleep(0.05)
            assert Error.NONE not in retries and Error.CONCURRENT_TRANSACTIONS in retries, retries
            assert Error.COORDINATOR_LOAD_IN_PROGRESS in retries, retries  # reloaded, waiting for the ISR
            assert w.deliveries.requests == []
            await assert_committed_once_replicated(w, follower, pid)
    run_world(tmp_path, body, txn_replicas=(1, 2))


def test_the_next_transaction_waits_for_the_last_ones_markers_then_for_its_retry(tmp_path) -> None:
    """A producer's next AddPartitionsToTxn usually arrives while the last
    transaction's markers are still being written: the coordinator answers
    it once they are (SETTLE_WAIT_S at most), not CONCURRENT_TRANSACTIONS at
    once; markers slower than that still get CONCURRENT_TRANSACTIONS."""
    async def body(w: World) -> None:
        pid = await open_transaction(w)
        w.deliveries.delay_s = 0.2
        assert (await w.end(pid, 0, True)).error_code == Error.NONE
        assert w.state() == TxnState.PREPARE_COMMIT
        added = await w.add(pid, 1)
        assert set(codes(added).values()) == {Error.NONE} and w.state() == TxnState.ONGOING
        w.deliveries.delay_s = 2.0  # past SETTLE_WAIT_S
        assert (await w.end(pid, 1, False)).error_code == Error.NONE
        assert set(codes(await w.add(pid, 2)).values()) == {Error.CONCURRENT_TRANSACTIONS}
        assert (await w.coordinator.add_offsets(tpb.AddOffsetsToTxnRequest(
            transactional_id=HERE, producer_id=pid, producer_epoch=2, group_id="g"))).error_code \
            == Error.CONCURRENT_TRANSACTIONS
    run_world(tmp_path, body)


def test_markers_are_retried_until_acknowledged(tmp_path) -> None:
    async def body(w: World) -> None:
        init = await w.init()
        await w.add(init.producer_id, 0, partitions=[0])
        await w.end(init.producer_id, 0, False)
        assert w.state() == TxnState.PREPARE_ABORT
        await until(lambda: w.state() == TxnState.COMPLETE_ABORT)
        assert len(w.deliveries.requests) == 4  # three transport failures, then the answer
    run_world(tmp_path, body, failures=3)


def test_a_load_resumes_the_markers_of_a_prepared_transaction(tmp_path) -> None:
    async def body(w: World) -> None:
        init = await w.init()
        await w.add(init.producer_id, 0, partitions=[0])
        await w.end(init.producer_id, 0, True)
        await until(lambda: len(w.deliveries.requests) >= 2)
        machine = w.coordinator.shards[0].machine
        await w.coordinator.stop()  # the markers never got through
        assert machine.describe(HERE).state == TxnState.PREPARE_COMMIT
        w.deliveries.failures = 0
        w.coordinator = w.new_coordinator()
        await w.lead()
        await until(lambda: w.state() == TxnState.COMPLETE_COMMIT)
    run_world(tmp_path, body, failures=10 ** 6)


def test_a_deleted_topic_counts_as_marked(tmp_path) -> None:
    async def body(w: World) -> None:
        init = await w.init()
        await w.add(init.producer_id, 0, partitions=[0, 1])
        await w.end(init.producer_id, 0, True)
        w.cluster.remove_topic("events")
        await until(lambda: w.state() == TxnState.COMPLETE_COMMIT)
    run_world(tmp_path, body, failures=10 ** 6)


def test_the_timer_aborts_a_timed_out_transaction(tmp_path) -> None:
    async def body(w: World) -> None:
        init = await w.init(timeout_ms=1000)
        w.cluster.clock.advance(3_600_000)  # the wall clock jumps an hour: the start time written is its
        await w.add(init.producer_id, 0, partitions=[0])
        assert w.coordinator.shards[0].machine.describe(HERE).start_ms == w.cluster.clock()
        w.cluster.timer.advance(1000)  # the timeout passes on the monotonic clock
        w.coordinator.shards[0].wake.fire()
        await until(lambda: w.state() == TxnState.COMPLETE_ABORT)
        late = await w.add(init.producer_id, 0, partitions=[1])
        assert set(codes(late).values()) == {Error.TRANSACTION_ABORTABLE}
        assert (await w.end(init.producer_id, 0, True)).error_code == Error.TRANSACTION_ABORTABLE
        abort = await w.end(init.producer_id, 0, False)
        assert (abort.error_code, abort.producer_epoch) == (0, 1)
    run_world(tmp_path, body, transaction_abort_timed_out_transaction_cleanup_interval_ms=50)


def test_ids_expire(tmp_path) -> None:
    async def body(w: World) -> None:
        await w.init()
        w.cluster.clock.advance(5000)
        w.coordinator.shards[0].wake.fire()
        await until(lambda: w.coordinator.shards[0].machine.describe(HERE) is None)
        described = w.coordinator.describe(tpb.DescribeTransactionsRequest(transactional_ids=[HERE]))
        assert described.transaction_states[0].error_code == Error.TRANSACTIONAL_ID_NOT_FOUND
    run_world(tmp_path, body, transactional_id_expiration_ms=5000, transaction_abort_timed_out_transaction_cleanup_interval_ms=50)


def test_refusals(tmp_path) -> None:
    async def body(w: World) -> None:
        assert (await w.init(tid=ELSEWHERE)).error_code == Error.NOT_COORDINATOR
        assert (await w.init(tid="")).error_code == Error.INVALID_REQUEST
        assert (await w.init(timeout_ms=900_001)).error_code == Error.INVALID_TRANSACTION_TIMEOUT
        assert (await w.end(1, 0, True)).error_code == Error.INVALID_PRODUCER_ID_MAPPING  # unknown id
        init = await w.init()
        unknown = await w.coordinator.add_partitions(tpb.AddPartitionsToTxnRequest(
            transactional_id=HERE, producer_id=init.producer_id, producer_epoch=0,
            topics=[tpb.TxnTopic(name="events", partitions=[0, 9]), tpb.TxnTopic(name="nope", partitions=[0])]))
        assert codes(unknown) == {("events", 0): Error.OPERATION_NOT_ATTEMPTED,
                                  ("events", 9): Error.UNKNOWN_TOPIC_OR_PARTITION,
                                  ("nope", 0): Error.UNKNOWN_TOPIC_OR_PARTITION}
        assert w.state() == TxnState.EMPTY  # nothing was added
        fenced = await w.add(init.producer_id, 7)
        assert set(codes(fenced).values()) == {Error.PRODUCER_FENCED}
        offsets = await w.coordinator.add_offsets(tpb.AddOffsetsToTxnRequest(
            transactional_id=HERE, producer_id=init.producer_id, producer_epoch=0, group_id=""))
        assert offsets.error_code == Error.INVALID_GROUP_ID
        described = w.coordinator.describe(tpb.DescribeTransactionsRequest(transactional_ids=[HERE, ELSEWHERE]))
        assert [s.error_code for s in described.transaction_states] == [Error.NONE, Error.NOT_COORDINATOR]
        listed = w.coordinator.list_transactions(tpb.ListTransactionsRequest(state_filters=["Bogus"]))
        assert list(listed.unknown_state_filters) == ["Bogus"] and not listed.transaction_states
    run_world(tmp_path, body)


def test_offsets_join_the_transaction_and_2pc_is_never_timed_out(tmp_path) -> None:
    async def body(w: World) -> None:
        init = await w.init(enable_2pc=True)
        assert w.coordinator.shards[0].machine.describe(HERE).timeout_ms == TWO_PC_TIMEOUT_MS
        offsets = await w.coordinator.add_offsets(tpb.AddOffsetsToTxnRequest(
            transactional_id=HERE, producer_id=init.producer_id, producer_epoch=0, group_id="g"))
        assert offsets.error_code == Error.NONE
        value = w.coordinator.shards[0].machine.describe(HERE)
        assert value.partitions == {("__consumer_offsets", partition_for("g", 50))}  # no offsets topic yet: 50
        described = w.coordinator.describe(tpb.DescribeTransactionsRequest(transactional_ids=[HERE]))
        assert described.transaction_states[0].transaction_state == "Ongoing"
        listed = w.coordinator.list_transactions(tpb.ListTransactionsRequest(state_filters=["Ongoing"]))
        assert [s.transactional_id for s in listed.transaction_states] == [HERE]
    run_world(tmp_path, body)


def test_the_verifier_asks_the_coordinator(tmp_path) -> None:
    async def body(w: World) -> None:
        asked = []

        async def ask_peer(broker_id, request):
            asked.append((broker_id, request))
            return tpb.AddPartitionsToTxnResponse(results=[tpb.AddPartitionsToTxnResponse.TopicResult(
                name="events", results=[tpb.AddPartitionsToTxnResponse.PartitionResult(
                    partition_index=1, error_code=Error.NONE)])])

        verifier = CoordinatorVerifier(w.coordinator, ask_peer)
        init = await w.init()
        await w.add(init.producer_id, 0, partitions=[0])
        assert await verifier.verify(HERE, init.producer_id, 0, "events", 0) == Error.NONE
        assert await verifier.verify(HERE, init.producer_id, 0, "events", 1) == Error.INVALID_TXN_STATE
        assert await verifier.verify(HERE, init.producer_id, 3, "events", 0) == Error.PRODUCER_FENCED
        assert await verifier.verify("", 1, 0, "events", 0) == Error.INVALID_TXN_STATE
        assert asked == []
        # An id coordinated by broker 2: asked over the inter-broker listener.
        assert await verifier.verify(ELSEWHERE, 9, 0, "events", 1) == Error.NONE
        [(broker_id, request)] = asked
        assert broker_id == 2 and request.verify_only and request.transactional_id == ELSEWHERE
    run_world(tmp_path, body)


def test_find_coordinator_names_the_leader(tmp_path) -> None:
    async def body(w: World) -> None:
        answer = await w.coordinator.find_coordinator(gpb.FindCoordinatorRequest(
            key_type=1, keys=[HERE, ELSEWHERE, ""]), "PLAINTEXT")
        assert [(c.node_id, c.port, c.error_code) for c in answer.coordinators] == [
            (1, 9091, 0), (2, 9092, 0), (-1, 0, Error.INVALID_REQUEST)]
    run_world(tmp_path, body)


@pytest.mark.parametrize("timeout_ms", [0, -5, 2**31 - 1])
def test_hostile_timeouts(tmp_path, timeout_ms: int) -> None:
    async def body(w: World) -> None:
        assert (await w.init(timeout_ms=timeout_ms)).error_code == Error.INVALID_TRANSACTION_TIMEOUT
    run_world(tmp_path, body)


def test_no_producer_id_block_yet_is_retriable(tmp_path) -> None:
    async def body(w: World) -> None:
        async def none_yet() -> int:
            raise BrokerError(Error.COORDINATOR_LOAD_IN_PROGRESS, "no block from the controller yet")

        w.coordinator.new_producer_id = none_yet
        answer = await w.init()
        assert (answer.error_code, answer.producer_id) == (Error.COORDINATOR_LOAD_IN_PROGRESS, -1)
        assert w.coordinator.shards[0].machine.describe(HERE) is None
    run_world(tmp_path, body)


def test_the_service_checks_acls_as_kafka(tmp_path) -> None:
    from security.acl import AclBinding, AclIndex, AclOperation, AclPermissionType, PatternType, ResourceType
    from security.authorization import STANDARD_AUTHORIZER, AuthorizerSettings, NodeAuthorizer
    from security.principal import KafkaPrincipal
    from security.request_context import RequestSession, reset_session, set_session
    from broker.transactions.service import TransactionCoordinatorService

    def allow(resource: ResourceType, name: str, operation: AclOperation) -> AclBinding:
        return AclBinding(resource, name, PatternType.LITERAL, "User:alice", "*", operation, AclPermissionType.ALLOW)

    access = NodeAuthorizer(AuthorizerSettings.from_properties({"authorizer.class.name": STANDARD_AUTHORIZER}))
    access.load_acls(AclIndex([allow(ResourceType.TRANSACTIONAL_ID, HERE, AclOperation.WRITE),
                               allow(ResourceType.TOPIC, "events", AclOperation.WRITE),
                               allow(ResourceType.GROUP, "g", AclOperation.READ)]))

    async def body(w: World) -> None:
        service = TransactionCoordinatorService(w.coordinator, ready=lambda: True, access=access)
        init = await w.init()  # the coordinator itself, as InitProducerId reaches it from KafkaBroker
        pid = init.producer_id
        token = set_session(RequestSession(KafkaPrincipal.user("alice"), "10.0.0.1", "SASL_SSL"))
        try:
            def add(tid: str, topics: dict[str, list[int]], verify_only: bool = False):
                return service.AddPartitionsToTxn(tpb.AddPartitionsToTxnRequest(
                    transactional_id=tid, producer_id=pid, producer_epoch=0, verify_only=verify_only,
                    topics=[tpb.TxnTopic(name=t, partitions=p) for t, p in topics.items()]), None)

            refused = await add("someone-else", {"events": [0]})
            assert refused.error_code == Error.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            assert codes(await add(HERE, {"events": [0], "secret": [0]})) == {
                ("events", 0): Error.OPERATION_NOT_ATTEMPTED, ("secret", 0): Error.TOPIC_AUTHORIZATION_FAILED}
            assert w.state() == TxnState.EMPTY  # nothing was added
            # verify_only is for nodes (ClusterAction), not for a client.
            assert (await add(HERE, {"events": [0]}, verify_only=True)).error_code == \
                Error.CLUSTER_AUTHORIZATION_FAILED
            assert codes(await add(HERE, {"events": [0]})) == {("events", 0): Error.NONE}
            offsets = await service.AddOffsetsToTxn(tpb.AddOffsetsToTxnRequest(
                transactional_id=HERE, producer_id=pid, producer_epoch=0, group_id="not-mine"), None)
            assert offsets.error_code == Error.GROUP_AUTHORIZATION_FAILED
            ended = await service.EndTxn(tpb.EndTxnRequest(transactional_id="someone-else", producer_id=pid,
                                                           producer_epoch=0, committed=True), None)
            assert ended.error_code == Error.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            described = await service.DescribeTransactions(tpb.DescribeTransactionsRequest(
                transactional_ids=["someone-else", HERE]), None)
            assert [(s.transactional_id, s.error_code) for s in described.transaction_states] == [
                ("someone-else", Error.TRANSACTIONAL_ID_AUTHORIZATION_FAILED), (HERE, Error.NONE)]
            # A partition of a topic alice may not describe, added by the coordinator itself:
            # listed to the coordinator, left out of alice's answer (as Kafka's KafkaApis does).
            assert codes(await w.coordinator.add_partitions(tpb.AddPartitionsToTxnRequest(
                transactional_id=HERE, producer_id=pid, producer_epoch=0,
                topics=[tpb.TxnTopic(name=TXN_TOPIC, partitions=[0])]))) == {(TXN_TOPIC, 0): Error.NONE}
            whole = w.coordinator.describe(tpb.DescribeTransactionsRequest(transactional_ids=[HERE]))
            assert {t.name for t in whole.transaction_states[0].topics} == {"events", TXN_TOPIC}
            described = await service.DescribeTransactions(tpb.DescribeTransactionsRequest(
                transactional_ids=[HERE]), None)
            assert [t.name for t in described.transaction_states[0].topics] == ["events"]
            assert (await w.init(tid=HIDDEN)).error_code == Error.NONE  # an id alice may not describe
            listed = await service.ListTransactions(tpb.ListTransactionsRequest(), None)
            assert [s.transactional_id for s in listed.transaction_states] == [HERE]
        finally:
            reset_session(token)
    run_world(tmp_path, body)
