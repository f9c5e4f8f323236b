"""Transactions in a real cluster (3 combined nodes), by the raw gRPC calls a
transactional producer makes: FindCoordinator(key_type 1) creating
__transaction_state, InitProducerId with the transactional id,
AddPartitionsToTxn, transactional Produce, EndTxn commit and abort; then
what read_committed and read_uncommitted fetches see once the markers are
written, and a batch for a partition outside the transaction refused
(KIP-890 verification)."""
from __future__ import annotations

import time
from typing import Callable, Optional, TypeVar

import grpc
import pytest

from broker.errors import Error
from devcluster.local_cluster import LocalCluster
from devcluster.local_processes import wait_until
from kafka_protocol.records import Record, encode_batch, iter_batches
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import groups_pb2 as gpb
from kraftlog_api import groups_pb2_grpc as gpb_grpc
from kraftlog_api import transactions_pb2 as tpb
from kraftlog_api import transactions_pb2_grpc as tpb_grpc

TOPIC = "txn-events"
TID = "txn-cluster-test"
PROPERTIES = {
    "broker.session.timeout.ms": 2000, "broker.heartbeat.interval.ms": 500,
    "transaction.state.log.num.partitions": 3, "transaction.state.log.replication.factor": 3,
    "transaction.state.log.min.isr": 2,
}
RETRY = (Error.NOT_COORDINATOR, Error.COORDINATOR_LOAD_IN_PROGRESS, Error.COORDINATOR_NOT_AVAILABLE,
         Error.CONCURRENT_TRANSACTIONS)
T = TypeVar("T")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with LocalCluster(tmp_path_factory.mktemp("transactions"), combined=3, properties=PROPERTIES).running() as c:
        c.create_topic(TOPIC, 2, 3)
        c.wait_for_leaders(TOPIC)
        yield c


def retried(call: Callable[[], T], what: str, timeout: float = 60.0,
            code: Callable[[T], int] = lambda answer: answer.error_code) -> T:
    """The answer once its error code is not a retriable coordinator error."""
    def answered() -> Optional[T]:
        try:
            answer = call()
        except grpc.RpcError:
            return None
        return None if code(answer) in RETRY else answer
    return wait_until(answered, timeout, what, interval=0.2)


def coordinator(c: LocalCluster) -> int:
    def found() -> Optional[int]:
        for b in c.live_brokers():
            stub = gpb_grpc.GroupCoordinatorStub(c.channel(c.broker_addresses[b]))
            try:
                [answer] = stub.FindCoordinator(gpb.FindCoordinatorRequest(key_type=1, keys=[TID]),
                                                timeout=15).coordinators
            except grpc.RpcError:
                continue
            if answer.error_code == Error.NONE:
                assert f"{answer.host}:{answer.port}" == c.broker_addresses[answer.node_id]
                return answer.node_id
        return None
    return wait_until(found, 60, "the transaction coordinator", interval=0.2)


def leader(c: LocalCluster, index: int) -> int:
    return c.wait_for_leaders(TOPIC).partitions[index].leader_id


def produce(c: LocalCluster, index: int, pid: int, epoch: int, sequence: int, values: list[bytes]) -> int:
    batch = encode_batch([Record(None, v, int(time.time() * 1000)) for v in values], producer_id=pid,
                         producer_epoch=epoch, base_sequence=sequence, transactional=True)
    response = c.broker_stub(leader(c, index)).Produce(bpb.ProduceRequest(
        acks=-1, timeout_ms=15000, transactional_id=TID, topics=[bpb.ProduceRequest.TopicData(
            name=TOPIC, partitions=[bpb.ProduceRequest.PartitionData(index=index, records=batch)])]), timeout=30)
    return response.responses[0].partitions[0].error_code


def fetch(c: LocalCluster, isolation: int):
    response = c.broker_stub(leader(c, 0)).Fetch(bpb.FetchRequest(
        replica_id=-1, max_wait_ms=0, min_bytes=1, max_bytes=1 << 20, isolation_level=isolation,
        topics=[bpb.FetchRequest.FetchTopic(topic=TOPIC, partitions=[bpb.FetchRequest.FetchPartition(
            partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
            partition_max_bytes=1 << 20)])]), timeout=30)
    return response.responses[0].partitions[0]


def test_commit_and_abort_as_consumers_see_them(cluster: LocalCluster) -> None:
    node = coordinator(cluster)
    txns = tpb_grpc.TransactionCoordinatorStub(cluster.channel(cluster.broker_addresses[node]))
    init = retried(lambda: cluster.broker_stub(node).InitProducerId(bpb.InitProducerIdRequest(
        transactional_id=TID, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1), timeout=20),
        "InitProducerId")
    assert init.error_code == Error.NONE, init
    pid, epoch = init.producer_id, init.producer_epoch

    def add(e: int) -> tpb.AddPartitionsToTxnResponse:
        return retried(lambda: txns.AddPartitionsToTxn(tpb.AddPartitionsToTxnRequest(
            transactional_id=TID, producer_id=pid, producer_epoch=e,
            topics=[tpb.TxnTopic(name=TOPIC, partitions=[0])]), timeout=20), "AddPartitionsToTxn",
            code=lambda answer: answer.results[0].results[0].error_code)

    def end(e: int, committed: bool) -> tpb.EndTxnResponse:
        return retried(lambda: txns.EndTxn(tpb.EndTxnRequest(transactional_id=TID, producer_id=pid,
                                                             producer_epoch=e, committed=committed), timeout=20),
                       "EndTxn")

    assert add(epoch).results[0].results[0].error_code == Error.NONE
    assert produce(cluster, 0, pid, epoch, 0, [b"committed-1", b"committed-2"]) == Error.NONE
    # Partition 1 is not in the transaction: its leader's verification refuses the batch.
    assert produce(cluster, 1, pid, epoch, 0, [b"never"]) == Error.INVALID_TXN_STATE
    committed = end(epoch, True)
    assert (committed.error_code, committed.producer_id, committed.producer_epoch) == (0, pid, epoch + 1)
    epoch += 1
    assert add(epoch).results[0].results[0].error_code == Error.NONE
    assert produce(cluster, 0, pid, epoch, 0, [b"aborted"]) == Error.NONE
    aborted = end(epoch, False)
    assert (aborted.error_code, aborted.producer_epoch) == (0, epoch + 1)

    # Once both markers are written, the last stable offset reaches the high watermark.
    settled = wait_until(lambda: (lambda p: p if p.last_stable_offset == p.high_watermark else None)(
        fetch(cluster, 1)), 60, "the markers written", interval=0.2)
    batches = list(iter_batches(bytes(settled.records)))
    data = [b for b in batches if not b.header.is_control]
    controls = [b for b in batches if b.header.is_control]
    assert [r.value for b in data for r in b.records] == [b"committed-1", b"committed-2", b"aborted"]
    assert len(controls) == 2 and settled.high_watermark == controls[-1].header.last_offset + 1
    aborted_offset = data[1].header.base_offset
    assert [(a.producer_id, a.first_offset) for a in settled.aborted_transactions] == [(pid, aborted_offset)]
    uncommitted = fetch(cluster, 0)
    assert list(uncommitted.aborted_transactions) == []
    assert len(list(iter_batches(bytes(uncommitted.records)))) == 4

    described = txns.DescribeTransactions(tpb.DescribeTransactionsRequest(transactional_ids=[TID]), timeout=20)
    state = described.transaction_states[0]
    assert (state.error_code, state.transaction_state, state.producer_epoch) == (0, "CompleteAbort", epoch + 1)
    # A zombie with the first epoch is fenced.
    zombie = txns.EndTxn(tpb.EndTxnRequest(transactional_id=TID, producer_id=pid, producer_epoch=epoch - 1,
                                           committed=True), timeout=20)
    assert zombie.error_code == Error.PRODUCER_FENCED
