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

from typing import Any, NamedTuple

from kio.index import load_response_schema

from ..errors import Errors
from .entities import build


class ApiRange(NamedTuple):
    name: str
    min_version: int
    max_version: int


PRODUCE, FETCH, LIST_OFFSETS, METADATA, API_VERSIONS, INIT_PRODUCER_ID = 0, 1, 2, 3, 18, 22
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
    INIT_PRODUCER_ID: ApiRange("InitProducerId", 0, 1),
    # Groups. Minimums: the oldest version kio has (librdkafka starts its
    # negotiation from 0). Maximums: what the clients ask for, each version
    # served in full -
    # FindCoordinator 4: batched keys (KIP-699); 5-6 are share/KIP-932 keys.
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


def api_versions_response(version: int, error_code: int = 0) -> Any:
    """The ApiVersions answer of `version` listing every served API
    (UNSUPPORTED_VERSION answers in v0, whatever the client asked for)."""
    return build(load_response_schema(API_VERSIONS, version), {
        "error_code": error_code, "throttle_time": 0,
        "api_keys": [{"api_key": key, "min_version": r.min_version, "max_version": r.max_version}
                     for key, r in sorted(ADVERTISED.items())]})
