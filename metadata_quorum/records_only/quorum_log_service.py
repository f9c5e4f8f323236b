"""The QuorumLog service: raw appends to and committed reads from the replicated log.

Served by a records-only quorum (state machine: RecordStore), a test and
benchmark mode (records_only/__init__.py): tests and the quorum benchmark
write through the leader and read what each node has applied. Errors are
Kafka's codes in the response.
"""

from __future__ import annotations

import grpc

from kraftlog_api import quorum_pb2 as pb
from kraftlog_api import quorum_pb2_grpc as pb_grpc
from kafka_protocol.errors import MessageTooLargeError, OffsetOutOfRangeError

from kafka_protocol import grpc_serving
from ..node import AppendLostError, QuorumNode, StorageFailure
from ..raft import Errors, NotLeaderError
from .record_store import RecordStore

# One metadata record may not exceed this; Kafka bounds metadata batches similarly.
MAX_RECORD_BYTES = 1 << 20
MAX_RECORDS_PER_APPEND = 10_000
MAX_RECORDS_PER_READ = 10_000


class QuorumLogService(pb_grpc.QuorumLogServicer):
    def __init__(self, node: QuorumNode, store: RecordStore) -> None:
        self.node = node
        self.store = store

    def _not_leader(self, message: str) -> pb.AppendResponse:
        node = self.node
        leader = node.leader()
        return pb.AppendResponse(
            error_code=Errors.NOT_LEADER_OR_FOLLOWER.code,
            error_message=message,
            leader_id=-1 if leader is None else leader,
            leader_epoch=node.epoch(),
        )

    async def Append(self, request: pb.AppendRequest, context: grpc.aio.ServicerContext) -> pb.AppendResponse:
        records = list(request.records)
        if not records or len(records) > MAX_RECORDS_PER_APPEND:
            return pb.AppendResponse(
                error_code=Errors.INVALID_REQUEST.code,
                error_message=f"an append carries 1 to {MAX_RECORDS_PER_APPEND} records, got {len(records)}",
            )
        too_big = max(len(r) for r in records)
        if too_big > MAX_RECORD_BYTES:
            return pb.AppendResponse(
                error_code=MessageTooLargeError.code,
                error_message=f"a record of {too_big} bytes exceeds the {MAX_RECORD_BYTES}-byte limit",
            )
        node = self.node
        try:
            base, last = await node.append(records)
        except NotLeaderError as exc:
            return self._not_leader(str(exc))
        except AppendLostError as exc:
            return self._not_leader(f"leader changed before commit, retry: {exc}")
        except StorageFailure as exc:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        return pb.AppendResponse(
            leader_id=node.node_id, leader_epoch=node.epoch(), base_offset=base, last_offset=last
        )

    async def ReadCommitted(
        self, request: pb.ReadCommittedRequest, context: grpc.aio.ServicerContext
    ) -> pb.ReadCommittedResponse:
        hw = self.node.high_watermark()
        start = request.start_offset
        if start < 0 or start > hw:
            return pb.ReadCommittedResponse(
                error_code=OffsetOutOfRangeError.code,
                error_message=f"start offset {start} is outside [0, {hw}]",
                high_watermark=hw,
                next_offset=start,
            )
        limit = request.max_records if 0 < request.max_records <= MAX_RECORDS_PER_READ else MAX_RECORDS_PER_READ
        records = self.store.read(start, limit)
        next_offset = records[-1][0] + 1 if len(records) == limit else hw
        return pb.ReadCommittedResponse(
            records=[pb.CommittedRecord(offset=o, data=d) for o, d in records],
            high_watermark=hw,
            next_offset=next_offset,
        )


def add_to_server(server: grpc.aio.Server, node: QuorumNode, store: RecordStore) -> None:
    grpc_serving.add_service(server, pb.DESCRIPTOR.services_by_name["QuorumLog"], QuorumLogService(node, store))


SERVICE_NAMES = (pb.DESCRIPTOR.services_by_name["QuorumLog"].full_name,)
