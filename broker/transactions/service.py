"""The TransactionCoordinator gRPC service of one broker listener, each RPC
handed to the broker's TransactionCoordinator after Kafka's ACL checks
(KafkaApis):

    AddPartitionsToTxn   Write on the TransactionalId, and Write on each topic
                         (TOPIC_AUTHORIZATION_FAILED for its partitions, the
                         others OPERATION_NOT_ATTEMPTED); with verify_only
                         ClusterAction on the cluster (nodes only)
    AddOffsetsToTxn      Write on the TransactionalId, Read on the group
    EndTxn               Write on the TransactionalId
    DescribeTransactions Describe on each TransactionalId; its topics only those
                         the caller may Describe
    ListTransactions     only the ids the caller may Describe

Until the broker has caught up with the metadata log at startup, every RPC
is refused with gRPC UNAVAILABLE, as KafkaBroker's data RPCs are.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import grpc

from kraftlog_api import transactions_pb2 as tpb
from kafka_protocol import grpc_serving
from security.acl import AclOperation, ResourceType
from security.authorization import NodeAuthorizer

from .. import access as acl
from ..errors import Error
from .coordinator import TransactionCoordinator, partition_results

SERVICE = tpb.DESCRIPTOR.services_by_name["TransactionCoordinator"]
SERVICE_NAMES = (SERVICE.full_name,)


class TransactionCoordinatorService:
    def __init__(self, coordinator: TransactionCoordinator, *, ready: Callable[[], bool],
                 access: Optional[NodeAuthorizer] = None) -> None:
        self.coordinator = coordinator
        self.access = access or NodeAuthorizer.allow_all()
        self.ready = ready

    async def _check_ready(self, context: grpc.aio.ServicerContext) -> None:
        if not self.ready():
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"broker {self.coordinator.broker_id} is starting: "
                                                             "not caught up with the metadata log")

    def _may_write(self, transactional_id: str) -> bool:
        return self.access.allows(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id)

    async def AddPartitionsToTxn(self, request: tpb.AddPartitionsToTxnRequest,
                                 context: grpc.aio.ServicerContext) -> tpb.AddPartitionsToTxnResponse:
        await self._check_ready(context)
        wanted = [(t.name, p) for t in request.topics for p in t.partitions]
        if request.verify_only:
            refusal = None if self.access.allows_cluster(AclOperation.CLUSTER_ACTION) \
                else Error.CLUSTER_AUTHORIZATION_FAILED
        else:
            refusal = None if self._may_write(request.transactional_id) \
                else Error.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        if refusal is not None:
            response = partition_results(wanted, lambda tp: refusal, "")
            response.error_code = refusal
            return response
        if not request.verify_only:
            denied = acl.denied_topics(self.access, AclOperation.WRITE, (t.name for t in request.topics))
            if denied:
                return partition_results(wanted, lambda tp: Error.TOPIC_AUTHORIZATION_FAILED if tp[0] in denied
                                          else Error.OPERATION_NOT_ATTEMPTED, "")
        return await self.coordinator.add_partitions(request)

    async def AddOffsetsToTxn(self, request: tpb.AddOffsetsToTxnRequest,
                              context: grpc.aio.ServicerContext) -> tpb.AddOffsetsToTxnResponse:
        await self._check_ready(context)
        if not self._may_write(request.transactional_id):
            return tpb.AddOffsetsToTxnResponse(error_code=Error.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        if not self.access.allows(AclOperation.READ, ResourceType.GROUP, request.group_id):
            return tpb.AddOffsetsToTxnResponse(error_code=Error.GROUP_AUTHORIZATION_FAILED)
        return await self.coordinator.add_offsets(request)

    async def EndTxn(self, request: tpb.EndTxnRequest, context: grpc.aio.ServicerContext) -> tpb.EndTxnResponse:
        await self._check_ready(context)
        if not self._may_write(request.transactional_id):
            return tpb.EndTxnResponse(error_code=Error.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producer_id=-1,
                                      producer_epoch=-1)
        return await self.coordinator.end_txn(request)

    async def DescribeTransactions(self, request: tpb.DescribeTransactionsRequest,
                                   context: grpc.aio.ServicerContext) -> tpb.DescribeTransactionsResponse:
        await self._check_ready(context)
        denied = self.access.denied(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, request.transactional_ids)
        allowed = [t for t in request.transactional_ids if t not in denied]
        found = self.coordinator.describe(tpb.DescribeTransactionsRequest(transactional_ids=allowed))
        if self.access.enabled:
            # As Kafka: a described transaction lists only the topics the caller may describe.
            for state in found.transaction_states:
                hidden = acl.denied_topics(self.access, AclOperation.DESCRIBE, (t.name for t in state.topics))
                if hidden:
                    kept = [t for t in state.topics if t.name not in hidden]
                    del state.topics[:]
                    state.topics.extend(kept)
        answers = {s.transactional_id: s for s in found.transaction_states}
        return tpb.DescribeTransactionsResponse(transaction_states=acl.in_request_order(
            request.transactional_ids, denied, answers, lambda tid: tpb.DescribeTransactionsResponse.TransactionState(
                transactional_id=tid, error_code=Error.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, producer_id=-1,
                producer_epoch=-1, transaction_start_time_ms=-1)))

    async def ListTransactions(self, request: tpb.ListTransactionsRequest,
                               context: grpc.aio.ServicerContext) -> tpb.ListTransactionsResponse:
        await self._check_ready(context)
        response = self.coordinator.list_transactions(request)
        if not self.access.enabled:
            return response
        denied = self.access.denied(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                                    (s.transactional_id for s in response.transaction_states))
        kept = [s for s in response.transaction_states if s.transactional_id not in denied]
        del response.transaction_states[:]
        response.transaction_states.extend(kept)
        return response


def add_to_server(server: grpc.aio.Server, service: Any) -> None:
    """Serve a TransactionCoordinatorService, or its methods as RequestQuota.metered wraps them."""
    grpc_serving.add_service(server, SERVICE, service)
