"""Which adapter answers which API of a Kafka listener: one per API that
kafka_protocol/wire/versions.py advertises (ApiVersions is answered from the
table itself, without the broker)."""
from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable, Optional, Protocol

from kafka_protocol.errors import error_name
from kafka_protocol.wire import versions
from kraftlog_api import broker_pb2 as bpb
from kafka_protocol.wire.codec import Request

from . import fetch, init_producer_id, list_offsets, metadata, produce
from . import cluster, configs, topics_admin
from . import transactions
from . import acls, user_admin
from . import delete_records
from . import reassignments
from . import classic_group, consumer_group, find_coordinator, group_admin, offset_commit, offset_fetch
from .context import CallAborted, KafkaCallContext

# (services, kio request body, context) -> kio response body, or None for none
Adapter = Callable[[Any, Any, KafkaCallContext], Awaitable[Optional[Any]]]

ADAPTERS: dict[int, Adapter] = {
    versions.PRODUCE: produce.serve,
    versions.FETCH: fetch.serve,
    versions.LIST_OFFSETS: list_offsets.serve,
    versions.METADATA: metadata.serve,
    versions.INIT_PRODUCER_ID: init_producer_id.serve,
    versions.CREATE_TOPICS: topics_admin.create_topics,
    versions.DELETE_TOPICS: topics_admin.delete_topics,
    versions.CREATE_PARTITIONS: topics_admin.create_partitions,
    versions.DESCRIBE_CONFIGS: configs.describe_configs,
    versions.INCREMENTAL_ALTER_CONFIGS: configs.incremental_alter_configs,
    versions.DESCRIBE_CLUSTER: cluster.describe_cluster,
    versions.OFFSET_FOR_LEADER_EPOCH: cluster.offset_for_leader_epoch,
    versions.ELECT_LEADERS: cluster.elect_leaders,
    versions.DELETE_RECORDS: delete_records.serve,
    versions.ALTER_PARTITION_REASSIGNMENTS: reassignments.alter_partition_reassignments,
    versions.LIST_PARTITION_REASSIGNMENTS: reassignments.list_partition_reassignments,
    versions.ADD_PARTITIONS_TO_TXN: transactions.add_partitions_to_txn,
    versions.ADD_OFFSETS_TO_TXN: transactions.add_offsets_to_txn,
    versions.END_TXN: transactions.end_txn,
    versions.DESCRIBE_TRANSACTIONS: transactions.describe_transactions,
    versions.LIST_TRANSACTIONS: transactions.list_transactions,
    versions.DESCRIBE_PRODUCERS: transactions.describe_producers,
    versions.DESCRIBE_ACLS: acls.describe_acls,
    versions.CREATE_ACLS: acls.create_acls,
    versions.DELETE_ACLS: acls.delete_acls,
    versions.DESCRIBE_USER_SCRAM_CREDENTIALS: user_admin.describe_user_scram_credentials,
    versions.ALTER_USER_SCRAM_CREDENTIALS: user_admin.alter_user_scram_credentials,
    versions.DESCRIBE_CLIENT_QUOTAS: user_admin.describe_client_quotas,
    versions.ALTER_CLIENT_QUOTAS: user_admin.alter_client_quotas,
    versions.FIND_COORDINATOR: find_coordinator.serve,
    versions.OFFSET_COMMIT: offset_commit.serve,
    versions.TXN_OFFSET_COMMIT: offset_commit.serve_txn,
    versions.OFFSET_FETCH: offset_fetch.serve,
    versions.JOIN_GROUP: classic_group.serve_join,
    versions.SYNC_GROUP: classic_group.serve_sync,
    versions.HEARTBEAT: classic_group.serve_heartbeat,
    versions.LEAVE_GROUP: classic_group.serve_leave,
    versions.LIST_GROUPS: group_admin.serve_list,
    versions.DESCRIBE_GROUPS: group_admin.serve_describe,
    versions.DELETE_GROUPS: group_admin.serve_delete,
    versions.CONSUMER_GROUP_HEARTBEAT: consumer_group.serve_heartbeat,
    versions.CONSUMER_GROUP_DESCRIBE: consumer_group.serve_describe,
}


class RequestTimer(Protocol):
    """One request kind's counters (the node's metrics: RequestStats)."""

    def finish(self, started: float, error: Optional[str]) -> None: ...


# A request name (Kafka's: Produce, Fetch, ...) -> its timer.
RequestTimers = Callable[[str], RequestTimer]


class KafkaApis:
    """The APIs of one Kafka listener, over `services`: the listener's
    ClientServices (broker/server.py) - KafkaBroker, GroupCoordinator and
    TransactionCoordinator, as the broker meters them for gRPC (quotas included).

    With `timers` (the node's request metrics), each request is counted and
    timed under its API's name, as a gRPC listener's are: the answer's
    request-level error_code is its error, a call the service aborted is
    counted under the abort's gRPC status. A client's Fetch is also a
    FetchConsumer, as in Kafka (only brokers fetch as followers, over gRPC)."""

    def __init__(self, services: Any, timers: Optional[RequestTimers] = None) -> None:
        self.services = services
        self.timers = timers

    async def handle(self, request: Request, context: KafkaCallContext) -> Optional[Any]:
        """The kio answer to `request`, or None when none is due (acks=0)."""
        if self.timers is None:
            return await self._answer(request, context)
        api_key = request.header.api_key
        timer = self.timers(versions.ADVERTISED[api_key].name)
        also = self.timers("FetchConsumer") if api_key == versions.FETCH else None
        started = time.perf_counter()
        try:
            answer = await self._answer(request, context)
        except BaseException as exc:
            timer.finish(started, _failure_name(exc))
            raise
        finally:
            if also is not None:
                also.finish(started, None)
        code = getattr(answer, "error_code", 0)
        timer.finish(started, error_name(int(code)) if code else None)
        return answer

    async def _answer(self, request: Request, context: KafkaCallContext) -> Optional[Any]:
        api_key = request.header.api_key
        if api_key == versions.API_VERSIONS:
            version = request.header.api_version
            features = await self._features(context) if version >= versions.FEATURES_FROM else None
            return versions.api_versions_response(version, features=features)
        return await ADAPTERS[api_key](self.services, request.body, context)

    async def _features(self, context: KafkaCallContext) -> Optional[dict[str, Any]]:
        """The broker's DescribeFeatures answer as ApiVersions' tagged fields (Kafka's
        finalized min level is the max); None if the broker cannot say (the fields left out)."""
        try:
            answer = await self.services.broker.DescribeFeatures(bpb.DescribeFeaturesRequest(), context)
        except CallAborted:
            return None
        return {"supported_features": [{"name": f.name, "min_version": f.min_version, "max_version": f.max_version}
                                       for f in answer.supported_features],
                "finalized_features_epoch": answer.finalized_features_epoch,
                "finalized_features": [{"name": f.name, "max_version_level": f.max_version_level,
                                        "min_version_level": f.max_version_level} for f in answer.finalized_features]}


def _failure_name(exc: BaseException) -> str:
    """What a request that raised is counted as, in gRPC's status names as
    a gRPC listener's failed calls are."""
    if isinstance(exc, CallAborted):
        return getattr(exc.code, "name", str(exc.code))
    return "CANCELLED" if isinstance(exc, asyncio.CancelledError) else "UNKNOWN"
