"""KIP-890 part 1, the coordinator's side: before a partition leader appends
a producer's first transactional batch of a transaction, it asks the
transactional id's coordinator whether the partition is in that producer's
ongoing transaction (`ReplicaManager.txn_verifier`, set by broker/server.py).

The coordinator is the leader of the id's __transaction_state partition in
this broker's metadata image: this broker itself (a direct call), or another
one, asked with AddPartitionsToTxn(verify_only=true) over the inter-broker
listener. When the coordinator cannot be reached or is moving, the answer is
NOT_ENOUGH_REPLICAS, as Kafka's AddPartitionsToTxnManager maps it: a
retriable error for every producer, and nothing appended.
"""
from __future__ import annotations

from typing import Awaitable, Callable, Protocol

from kraftlog_api import transactions_pb2 as tpb

from ..errors import Error
from .coordinator import TXN_TOPIC, TransactionCoordinator
from .machine import TxnError

AskPeer = Callable[[int, tpb.AddPartitionsToTxnRequest], Awaitable[tpb.AddPartitionsToTxnResponse]]
UNREACHABLE = (Error.NOT_COORDINATOR, Error.COORDINATOR_NOT_AVAILABLE, Error.COORDINATOR_LOAD_IN_PROGRESS)


class TxnVerifier(Protocol):
    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     topic: str, partition: int) -> int: ...


class CoordinatorVerifier:
    def __init__(self, coordinator: TransactionCoordinator, ask_peer: AskPeer) -> None:
        self.coordinator = coordinator
        self.ask_peer = ask_peer

    async def verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                     topic: str, partition: int) -> int:
        """An error code; NONE when the partition is in the producer's ongoing transaction."""
        if not transactional_id:
            return Error.INVALID_TXN_STATE
        image = self.coordinator.replicas.image
        txn_topic = image.topic(TXN_TOPIC)
        state = txn_topic.partitions.get(self.coordinator.coordinator_partition(transactional_id)) \
            if txn_topic is not None else None
        if state is None or state.leader < 0:
            return Error.NOT_ENOUGH_REPLICAS
        try:
            if state.leader == self.coordinator.broker_id:
                code = await self.coordinator.verify(transactional_id, producer_id, producer_epoch, topic, partition)
            else:
                response = await self.ask_peer(state.leader, tpb.AddPartitionsToTxnRequest(
                    transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
                    topics=[tpb.TxnTopic(name=topic, partitions=[partition])], verify_only=True))
                code = response.error_code or _partition_code(response, topic, partition)
        except TxnError as exc:
            code = exc.code
        except Exception:  # noqa: BLE001 - the coordinator could not be asked: the producer retries
            return Error.NOT_ENOUGH_REPLICAS
        return Error.NOT_ENOUGH_REPLICAS if code in UNREACHABLE else code


def _partition_code(response: tpb.AddPartitionsToTxnResponse, topic: str, partition: int) -> int:
    for t in response.results:
        if t.name == topic:
            for p in t.results:
                if p.partition_index == partition:
                    return p.error_code
    return Error.INVALID_TXN_STATE  # the coordinator did not answer for it
