"""The APIs and versions a Kafka listener serves, as ApiVersions tells them.

A client uses, per API, the highest version both sides know. Up to the last
version before flexible versions (compact strings, tagged fields) is what
librdkafka 2.x, kafka-python 2.x and aiokafka settle on; kafka-python 3.x
goes further, and each API is served up to the first flexible version(s)
it asks for: ApiVersions 4, Metadata 12 (flexible from 9, topic ids from
10), Produce 9, Fetch 12, ListOffsets 6. The minimums are the first version each client still sends (a
record batch v2 needs Produce >= 3 and Fetch >= 4; librdkafka uses the v2
format only when those are advertised), and a minimum is never raised later:
a client that sees its version dropped gives up.

Fetch stops at 12: from 13 on a fetch names topics by id. ListOffsets
stops at 6: 7 brings the max-timestamp query (-3) the broker does not answer.
"""
from __future__ import annotations

from typing import Any, Mapping, NamedTuple, Optional

from kio.index import load_response_schema

from ..errors import Errors
from .entities import build


class ApiRange(NamedTuple):
    name: str
    min_version: int
    max_version: int


PRODUCE, FETCH, LIST_OFFSETS, METADATA, API_VERSIONS, INIT_PRODUCER_ID = 0, 1, 2, 3, 18, 22
SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
# Admin APIs (broker/kafka_api/topics_admin.py, configs.py, cluster.py).
CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37
DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS = 32, 44
DESCRIBE_CLUSTER, OFFSET_FOR_LEADER_EPOCH, ELECT_LEADERS = 60, 23, 43
DELETE_RECORDS = 21
# Reassignments (broker/kafka_api/reassignments.py).
ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS = 45, 46
# Transactions (broker/kafka_api/transactions.py; FindCoordinator is with the groups).
ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN = 24, 25, 26
DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS, DESCRIBE_PRODUCERS = 65, 66, 61
# Security admin (broker/kafka_api/acls.py, user_admin.py).
DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
DESCRIBE_USER_SCRAM_CREDENTIALS, ALTER_USER_SCRAM_CREDENTIALS = 50, 51
DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS = 48, 49
# Groups (broker/kafka_api/: find_coordinator, offset_commit, offset_fetch, classic_group, group_admin, consumer_group)
OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP = 8, 9, 10, 11, 12, 13
SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS, TXN_OFFSET_COMMIT, DELETE_GROUPS = 14, 15, 16, 28, 42
CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE = 68, 69

# api key -> what is served; an API not here is not advertised and a request
# of it closes the connection.
ADVERTISED: dict[int, ApiRange] = {
    PRODUCE: ApiRange("Produce", 3, 9),
    FETCH: ApiRange("Fetch", 4, 12),
    LIST_OFFSETS: ApiRange("ListOffsets", 1, 6),
    METADATA: ApiRange("Metadata", 1, 12),
    API_VERSIONS: ApiRange("ApiVersions", 0, 4),
    # InitProducerId 3 lets a producer name its id and epoch to have the epoch
    # bumped (KIP-360: librdkafka's recovery from an abortable error), 4 knows
    # PRODUCER_FENCED; 5 brings transaction version 2's TRANSACTION_ABORTABLE.
    INIT_PRODUCER_ID: ApiRange("InitProducerId", 0, 4),
    # SASL (broker/kafka_api/sasl.py), listed on every listener as Kafka does.
    # Handshake v0 is followed by raw length-prefixed tokens (kafka-python
    # against brokers older than 1.0), v1 by SaslAuthenticate frames
    # (librdkafka, kafka-python 3, aiokafka). SaslAuthenticate: librdkafka
    # sends v0; v1 adds KIP-368's session lifetime; v2, its flexible form,
    # is what kafka-python 3 negotiates.
    SASL_HANDSHAKE: ApiRange("SaslHandshake", 0, 1),
    SASL_AUTHENTICATE: ApiRange("SaslAuthenticate", 0, 2),
    # Admin: the minimums are Kafka 4's (KIP-896), which every client here
    # still reaches (librdkafka 2.x asks up to CreateTopics 4, DeleteTopics 4,
    # CreatePartitions 2, DescribeConfigs 1, IncrementalAlterConfigs 1,
    # ElectLeaders 2, OffsetForLeaderEpoch 2; kafka-python 3 sends from
    # CreateTopics 2, DeleteTopics 1, DescribeConfigs 1, OffsetForLeaderEpoch 2);
    # the maximums are the newest each message has (kafka-python 3 asks for them).
    # DeleteTopics 6 names topics by id (resolved from the broker's metadata);
    # DescribeConfigs 4 adds only flexible encoding to 3's types and documentation.
    CREATE_TOPICS: ApiRange("CreateTopics", 2, 7),
    DELETE_TOPICS: ApiRange("DeleteTopics", 1, 6),
    CREATE_PARTITIONS: ApiRange("CreatePartitions", 0, 3),
    DESCRIBE_CONFIGS: ApiRange("DescribeConfigs", 1, 4),
    INCREMENTAL_ALTER_CONFIGS: ApiRange("IncrementalAlterConfigs", 0, 1),
    # DescribeCluster 1 adds the endpoint type, 2 fenced brokers (KIP-1073).
    DESCRIBE_CLUSTER: ApiRange("DescribeCluster", 0, 2),
    OFFSET_FOR_LEADER_EPOCH: ApiRange("OffsetForLeaderEpoch", 2, 4),
    ELECT_LEADERS: ApiRange("ElectLeaders", 0, 2),
    # DeleteRecords: librdkafka asks 0-2, kafka-python 3 0-2 (Kafka 4 serves 0-2 too).
    DELETE_RECORDS: ApiRange("DeleteRecords", 0, 2),
    # Reassignments (KIP-455): every version there is (kafka-python 3 asks for
    # them all). AlterPartitionReassignments 1 adds KIP-860's allow_replication_factor_change.
    ALTER_PARTITION_REASSIGNMENTS: ApiRange("AlterPartitionReassignments", 0, 1),
    LIST_PARTITION_REASSIGNMENTS: ApiRange("ListPartitionReassignments", 0, 0),
    # Transactions as Kafka clients run them (transaction version 1):
    # librdkafka sends AddPartitionsToTxn 0, AddOffsetsToTxn 0, EndTxn 0-1;
    # kafka-python 3 caps all three at 3. AddPartitionsToTxn 4+ is the
    # brokers' batched verification, 4/5 of the others bring KIP-890's
    # TRANSACTION_ABORTABLE and transaction version 2: not served.
    ADD_PARTITIONS_TO_TXN: ApiRange("AddPartitionsToTxn", 0, 3),
    ADD_OFFSETS_TO_TXN: ApiRange("AddOffsetsToTxn", 0, 3),
    END_TXN: ApiRange("EndTxn", 0, 3),
    DESCRIBE_TRANSACTIONS: ApiRange("DescribeTransactions", 0, 0),
    # ListTransactions 2 filters by a transactional id pattern, which the coordinator has not.
    LIST_TRANSACTIONS: ApiRange("ListTransactions", 0, 1),
    DESCRIBE_PRODUCERS: ApiRange("DescribeProducers", 0, 0),
    # ACLs from 1 (pattern types, KIP-290; Kafka 4's minimum): librdkafka
    # asks 0-2, kafka-python 3 1-3. SCRAM credentials and client quotas: every version there is.
    DESCRIBE_ACLS: ApiRange("DescribeAcls", 1, 3),
    CREATE_ACLS: ApiRange("CreateAcls", 1, 3),
    DELETE_ACLS: ApiRange("DeleteAcls", 1, 3),
    DESCRIBE_USER_SCRAM_CREDENTIALS: ApiRange("DescribeUserScramCredentials", 0, 0),
    ALTER_USER_SCRAM_CREDENTIALS: ApiRange("AlterUserScramCredentials", 0, 0),
    DESCRIBE_CLIENT_QUOTAS: ApiRange("DescribeClientQuotas", 0, 1),
    ALTER_CLIENT_QUOTAS: ApiRange("AlterClientQuotas", 0, 1),
    # Groups. Minimums: the oldest version kio has (librdkafka starts its
    # negotiation from 0). Maximums: what the clients ask for, each version
    # served in full -
    # FindCoordinator 4: batched keys (KIP-699) - librdkafka asks 0-2, kafka-python 3
    # up to 6; 5 only adds TRANSACTION_ABORTABLE, 6 share-group keys (KIP-932).
    FIND_COORDINATOR: ApiRange("FindCoordinator", 0, 4),
    # OffsetCommit/OffsetFetch 9: the member epoch of a KIP-848 member, which
    # librdkafka's group.protocol=consumer requires (>= 9); 10 names topics by id.
    OFFSET_COMMIT: ApiRange("OffsetCommit", 2, 9),
    OFFSET_FETCH: ApiRange("OffsetFetch", 1, 9),
    # The classic protocol up to its newest: JoinGroup 9 (a restarted static
    # leader of a Stable group is told to skip the assignment, KIP-814).
    JOIN_GROUP: ApiRange("JoinGroup", 0, 9),
    SYNC_GROUP: ApiRange("SyncGroup", 0, 5),
    HEARTBEAT: ApiRange("Heartbeat", 0, 4),
    LEAVE_GROUP: ApiRange("LeaveGroup", 0, 5),
    # DescribeGroups 6 adds an error message for a non-classic group (answered Dead below it).
    DESCRIBE_GROUPS: ApiRange("DescribeGroups", 0, 5),
    LIST_GROUPS: ApiRange("ListGroups", 0, 5),
    DELETE_GROUPS: ApiRange("DeleteGroups", 0, 2),
    # TxnOffsetCommit 3: librdkafka's max (KIP-447's member fields); 4-5 are KIP-890's.
    TXN_OFFSET_COMMIT: ApiRange("TxnOffsetCommit", 0, 3),
    CONSUMER_GROUP_HEARTBEAT: ApiRange("ConsumerGroupHeartbeat", 0, 1),
    CONSUMER_GROUP_DESCRIBE: ApiRange("ConsumerGroupDescribe", 0, 1),
}

UNSUPPORTED_VERSION = Errors.UNSUPPORTED_VERSION


def is_served(api_key: int, api_version: int) -> bool:
    served = ADVERTISED.get(api_key)
    return served is not None and served.min_version <= api_version <= served.max_version


FEATURES_FROM = 3  # ApiVersions carries the feature levels (KIP-584) from v3, as tagged fields


def api_versions_response(version: int, error_code: int = 0, features: Optional[Mapping[str, Any]] = None) -> Any:
    """The ApiVersions answer of `version` listing every served API
    (UNSUPPORTED_VERSION answers in v0, whatever the client asked for).
    `features` (v3+): supported_features [{name, min_version, max_version}],
    finalized_features [{name, max_version_level, min_version_level}] and
    finalized_features_epoch, as kafka-features.sh describe reads them."""
    extra = dict(features) if features is not None and version >= FEATURES_FROM else {}
    return build(load_response_schema(API_VERSIONS, version), {
        "error_code": error_code, "throttle_time": 0,
        "api_keys": [{"api_key": key, "min_version": r.min_version, "max_version": r.max_version}
                     for key, r in sorted(ADVERTISED.items())], **extra})
