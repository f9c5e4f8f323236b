"""Which adapter answers which API of a Kafka listener: one per API that
kafka_protocol/wire/versions.py advertises (ApiVersions is answered from the
table itself, without the broker)."""
from __future__ import annotations

from typing import Any, Awaitable, Callable, Optional

from kafka_protocol.wire import versions
from kafka_protocol.wire.codec import Request

from . import fetch, init_producer_id, list_offsets, metadata, produce
from . import cluster, configs, topics_admin
from . import transactions
from . import acls, user_admin
from . import delete_records
from . import classic_group, consumer_group, find_coordinator, group_admin, offset_commit, offset_fetch
from .context import KafkaCallContext

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


class KafkaApis:
    """The APIs of one Kafka listener, over `services`: the listener's
    ClientServices (broker/server.py) - KafkaBroker, GroupCoordinator and
    TransactionCoordinator, as the broker meters them for gRPC (quotas included)."""

    def __init__(self, services: Any) -> None:
        self.services = services

    async def handle(self, request: Request, context: KafkaCallContext) -> Optional[Any]:
        """The kio answer to `request`, or None when none is due (acks=0)."""
        api_key = request.header.api_key
        if api_key == versions.API_VERSIONS:
            return versions.api_versions_response(request.header.api_version)
        return await ADAPTERS[api_key](self.services, request.body, context)
