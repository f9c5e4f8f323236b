"""A transactional producer's requests to its transaction coordinator
(InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn) and to a
group's coordinator (TxnOffsetCommit), on the producer's event loop.

Each call retries what client/transactions.py judges retriable - the
coordinator loading, moving (looked up again with FindCoordinator key_type
1) or still writing the last transaction's markers (CONCURRENT_TRANSACTIONS)
- until its deadline, then raises a retriable timeout; any other error is
returned to the caller as a KafkaException flagged abortable or fatal,
which the caller records in the TransactionManager.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable, Mapping, Optional

import grpc

from kafka_protocol.errors import Errors, error_name
from kafka_protocol.fetch_framing import broker_stub
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import groups_pb2 as gpb
from kraftlog_api import transactions_pb2 as tpb
from kraftlog_api import transactions_pb2_grpc as tpb_grpc

from .consumer_types import ConsumerGroupMetadata, OffsetAndMetadata, TopicPartition
from .coordinator import TRANSACTION, Coordinator, CoordinatorUnavailable
from .errors import KafkaException, NetworkError
from .idempotence import IdempotenceState
from .metadata import Metadata
from .transactions import (ADD_PARTITIONS_RETRY_BACKOFF_S, Outcome, PreparedTxnState, Request, TransactionManager,
                           outcome, timed_out, txn_error)

log = logging.getLogger(__name__)


class TxnRequests:
    def __init__(self, metadata: Metadata, txn: TransactionManager, idempotence: IdempotenceState, *,
                 request_timeout_s: float, backoff_s: float) -> None:
        self._metadata = metadata
        self._txn = txn
        self._idem = idempotence
        self._timeout_s = request_timeout_s
        self._backoff_s = backoff_s
        self.coordinator = Coordinator(metadata, txn.transactional_id, request_timeout_s=request_timeout_s,
                                       backoff_s=backoff_s, key_type=TRANSACTION,
                                       stub_factory=tpb_grpc.TransactionCoordinatorStub)
        self._groups: dict[str, Coordinator] = {}

    async def _call(self, kind: Request, coordinator: Coordinator, make_request: Callable[[], Any],
                    code_of: Callable[[Any], int], deadline: float,
                    stub_factory: Optional[Callable[[Any], Any]] = None) -> Any:
        """The answer once its code is OK, ABORTABLE or FATAL (raised as a
        KafkaException for the latter two); retried otherwise until `deadline`."""
        last = ""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise timed_out(f"{kind.value} for transactional id {self._txn.transactional_id}: "
                                f"no answer in time ({last or 'no attempt'})")
            backoff = self._backoff_s
            try:
                response = await coordinator.call_once(kind.value, make_request(),
                                                       max(0.1, min(self._timeout_s, remaining)), stub_factory)
            except (CoordinatorUnavailable, NetworkError) as exc:
                last = str(exc)
            except grpc.aio.AioRpcError as exc:  # refused by the transport, not by Kafka's rules: no retry helps
                raise txn_error(Errors.UNKNOWN_SERVER_ERROR, f"{kind.value}: gRPC {exc.code().name}: "
                                f"{exc.details()}", Outcome.FATAL) from None
            else:
                code = code_of(response)
                result = outcome(kind, code)
                if result is Outcome.OK:
                    return response
                detail = getattr(response, "error_message", "") or ""
                if result in (Outcome.ABORTABLE, Outcome.FATAL):
                    raise txn_error(code, f"{kind.value}: {detail or error_name(code)}", result)
                if result is Outcome.FIND_COORDINATOR:
                    coordinator.invalidate()
                if code == Errors.CONCURRENT_TRANSACTIONS:
                    # The previous transaction's markers are usually out well within retry.backoff.ms.
                    backoff = ADD_PARTITIONS_RETRY_BACKOFF_S
                last = error_name(code)
            log.debug("%s: retrying (%s)", kind.value, last)
            await asyncio.sleep(min(backoff, max(0.0, deadline - time.monotonic())))

    # --- the transaction coordinator ------------------------------------------------

    async def init_producer_id(self, deadline: float, keep_prepared_txn: bool = False,
                               ) -> tuple[int, int, Optional[PreparedTxnState]]:
        """The producer id and epoch, and (KIP-939) the open transaction the
        coordinator kept for this producer to end (None: none was open, or not asked)."""
        t = self._txn
        request = bpb.InitProducerIdRequest(transactional_id=t.transactional_id,
                                            transaction_timeout_ms=t.transaction_timeout_ms,
                                            producer_id=-1, producer_epoch=-1, enable_2pc=t.two_phase_commit,
                                            keep_prepared_txn=keep_prepared_txn)
        response = await self._call(Request.INIT_PRODUCER_ID, self.coordinator, lambda: request,
                                    lambda r: r.error_code, deadline, stub_factory=broker_stub)
        kept = None
        if keep_prepared_txn and response.ongoing_txn_producer_id >= 0:
            kept = PreparedTxnState(response.ongoing_txn_producer_id, response.ongoing_txn_producer_epoch)
        return response.producer_id, response.producer_epoch, kept

    async def add_partitions(self, partitions: list[tuple[str, int]], deadline: float) -> dict[tuple[str, int], int]:
        """Each partition's error code (a request-level error applies to all)."""
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        request = tpb.AddPartitionsToTxnRequest(
            transactional_id=self._txn.transactional_id, producer_id=self._idem.producer_id,
            producer_epoch=self._idem.producer_epoch,
            topics=[tpb.TxnTopic(name=t, partitions=ps) for t, ps in sorted(by_topic.items())])
        response = await self._call(Request.ADD_PARTITIONS, self.coordinator, lambda: request,
                                    lambda r: r.error_code, deadline)
        codes = {(t.name, p.partition_index): p.error_code for t in response.results for p in t.results}
        return {tp: codes.get(tp, Errors.UNKNOWN_SERVER_ERROR) for tp in partitions}

    async def add_offsets(self, group_id: str, deadline: float) -> None:
        request = tpb.AddOffsetsToTxnRequest(transactional_id=self._txn.transactional_id,
                                             producer_id=self._idem.producer_id,
                                             producer_epoch=self._idem.producer_epoch, group_id=group_id)
        await self._call(Request.ADD_OFFSETS, self.coordinator, lambda: request, lambda r: r.error_code, deadline)

    async def end_txn(self, committed: bool, deadline: float) -> tuple[int, int]:
        """The producer id and epoch for the next transaction (KIP-890: the epoch is bumped)."""
        request = tpb.EndTxnRequest(transactional_id=self._txn.transactional_id, producer_id=self._idem.producer_id,
                                    producer_epoch=self._idem.producer_epoch, committed=committed)
        response = await self._call(Request.END_TXN, self.coordinator, lambda: request,
                                    lambda r: r.error_code, deadline)
        return response.producer_id, response.producer_epoch

    # --- the group coordinator ------------------------------------------------------

    async def txn_offset_commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                                group: ConsumerGroupMetadata, deadline: float) -> None:
        coordinator = self._groups.get(group.group_id)
        if coordinator is None:
            coordinator = self._groups[group.group_id] = Coordinator(
                self._metadata, group.group_id, request_timeout_s=self._timeout_s, backoff_s=self._backoff_s)
        by_topic: dict[str, list[gpb.TxnOffsetCommitRequest.Partition]] = {}
        for tp, om in sorted(offsets.items()):
            by_topic.setdefault(tp.topic, []).append(gpb.TxnOffsetCommitRequest.Partition(
                partition_index=tp.partition, committed_offset=om.offset,
                committed_leader_epoch=om.leader_epoch if om.leader_epoch is not None else -1,
                committed_metadata=om.metadata))
        request = gpb.TxnOffsetCommitRequest(
            transactional_id=self._txn.transactional_id, group_id=group.group_id,
            producer_id=self._idem.producer_id, producer_epoch=self._idem.producer_epoch,
            generation_id=group.member_epoch, member_id=group.member_id,
            group_instance_id=group.group_instance_id or "",
            topics=[gpb.TxnOffsetCommitRequest.Topic(name=t, partitions=ps) for t, ps in by_topic.items()])
        await self._call(Request.TXN_OFFSET_COMMIT, coordinator, lambda: request, _worst_partition_code, deadline)


def _worst_partition_code(response: gpb.TxnOffsetCommitResponse) -> int:
    """One code for the answer: a fatal one first, then an abortable one, then a retriable one."""
    codes = [p.error_code for t in response.topics for p in t.partitions if p.error_code]
    if not codes:
        return Errors.NONE
    rank = {Outcome.FATAL: 0, Outcome.ABORTABLE: 1, Outcome.FIND_COORDINATOR: 2, Outcome.RETRY: 3}
    return min(codes, key=lambda c: rank[outcome(Request.TXN_OFFSET_COMMIT, c)])


__all__ = ["KafkaException", "TxnRequests"]
