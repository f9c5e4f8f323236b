"""Dynamic configs (those IncrementalAlterConfigs changes at runtime): their definitions,
and Kafka's IncrementalAlterConfigs as a controller decision.

Definitions: every topic config with the broker-wide setting it falls back
to and Kafka's default, so that DescribeConfigs can say where an effective
value comes from; and the broker settings that may change cluster-wide at
runtime - those something here reads from the image (the partition logs'
`log.*` settings, `min.insync.replicas` on brokers,
`unclean.leader.election.enable` on the controller, the KIP-73 replication
throttle rates on brokers).

IncrementalAlterConfigs: each resource's operations are all validated
before any record is made, so a resource with one bad operation changes
nothing; a good one becomes one ConfigRecord per operation (no value for
DELETE). SET and DELETE work on every config; APPEND and SUBTRACT only on
list-valued ones (`cleanup.policy`), starting from the value in effect.
Per-broker dynamic configs (resource name a broker id) hold only the two
replication throttle rates, the one per-broker setting brokers read; any
other is refused, as accepting it would be a silent no-op. As in Kafka, the
broker id need not be registered yet.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Mapping, Optional

from kraftlog_api import controller_pb2 as cpb
from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.image import MetadataImage
from partition_log.config import LogConfig, broker_key
from kafka_protocol.errors import InvalidConfigError
from kafka_protocol.replication_throttles import INT_MAX, RATES, REPLICA_LISTS, UNLIMITED, check_rate

from .controller_config import MIN_INSYNC_REPLICAS, TOPIC_CONFIGS, UNCLEAN_LEADER_ELECTION_ENABLE
from .errors import ControllerError, Error
from .result import ControllerResult

TOPIC, BROKER = mpb.TOPIC, mpb.BROKER  # Kafka's ConfigResource.Type ids, 2 and 4
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # Kafka's AlterConfigOp.OpType ids
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
LONG_MAX = str(2**63 - 1)


@dataclass(frozen=True)
class TopicConfigDef:
    name: str
    broker_key: Optional[str]  # the broker-wide setting a topic without an override uses (None: none)
    default: str     # Kafka's default of that setting


def config_text(value: object) -> str:
    """A setting's value as Kafka writes it (booleans in lower case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_OTHER_TOPIC_CONFIGS = (
    TopicConfigDef(MIN_INSYNC_REPLICAS, MIN_INSYNC_REPLICAS, "1"),
    TopicConfigDef(UNCLEAN_LEADER_ELECTION_ENABLE, UNCLEAN_LEADER_ELECTION_ENABLE, "false"),
    TopicConfigDef("compression.type", "compression.type", "producer"),
    TopicConfigDef("message.timestamp.type", "log.message.timestamp.type", "CreateTime"),
    TopicConfigDef("message.timestamp.difference.max.ms", "log.message.timestamp.difference.max.ms", LONG_MAX),
    TopicConfigDef("message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms", LONG_MAX),
    TopicConfigDef("message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms", LONG_MAX),
    TopicConfigDef("message.downconversion.enable", "log.message.downconversion.enable", "true"),
    TopicConfigDef("preallocate", "log.preallocate", "false"),
    TopicConfigDef("file.delete.delay.ms", "log.segment.delete.delay.ms", "60000"),
    *(TopicConfigDef(key, None, "") for key in REPLICA_LISTS),  # no broker-wide fallback in Kafka either
)

# Topic config name -> its definition; the same names CreateTopics accepts.
TOPIC_CONFIG_DEFS: dict[str, TopicConfigDef] = {
    **{key: TopicConfigDef(key, broker_key(key), config_text(default))
       for key, default in LogConfig().to_mapping().items()},
    **{d.name: d for d in _OTHER_TOPIC_CONFIGS},
}
assert set(TOPIC_CONFIG_DEFS) == set(TOPIC_CONFIGS), "every topic config needs a definition"

# Broker setting -> the topic config it is the default of, for the settings
# the cluster-wide dynamic default may hold.
DYNAMIC_CLUSTER_CONFIGS: dict[str, str] = {
    d.broker_key: d.name for d in TOPIC_CONFIG_DEFS.values()
    if d.name in LogConfig().to_mapping() or d.name in (MIN_INSYNC_REPLICAS, UNCLEAN_LEADER_ELECTION_ENABLE)
}

# Kafka's LIST-typed settings among ours: the only ones APPEND and SUBTRACT take.
LIST_CONFIGS = frozenset({"cleanup.policy", broker_key("cleanup.policy"), *REPLICA_LISTS})

# The broker settings a broker id may hold, and what each is without a setting.
PER_BROKER_CONFIGS: dict[str, str] = {key: str(UNLIMITED) for key in RATES}


def inherited_topic_value(image: MetadataImage, name: str) -> str:
    """What a topic without an override of `name` has: the cluster-wide dynamic default, else Kafka's.

    (A broker's own file may differ; the controller does not know it.)"""
    definition = TOPIC_CONFIG_DEFS[name]
    if definition.broker_key is None:
        return definition.default
    return image.cluster_config().get(definition.broker_key, definition.default)


def incremental_alter_configs(
    image: MetadataImage, request: cpb.IncrementalAlterConfigsRequest, node_id: int
) -> ControllerResult:
    response = cpb.IncrementalAlterConfigsResponse(controller_id=node_id)
    counts = Counter((r.resource_type, r.resource_name) for r in request.resources)
    records: list[mpb.MetadataRecord] = []
    for resource in request.resources:
        result = response.results.add(resource_type=resource.resource_type, resource_name=resource.resource_name)
        try:
            if counts[(resource.resource_type, resource.resource_name)] > 1:
                raise ControllerError(Error.INVALID_REQUEST, "the resource is listed more than once")
            changes = _changes(image, resource)
        except ControllerError as exc:
            result.error_code = exc.error
            result.error_message = exc.message
            continue
        if request.validate_only:
            continue
        for name, value in changes:
            config = mpb.ConfigRecord(resource_type=resource.resource_type,  # type: ignore[arg-type]
                                      resource_name=resource.resource_name, name=name)
            if value is not None:
                config.value = value
            records.append(mpb.MetadataRecord(config=config))
    return ControllerResult(records, response)


Check = Callable[[str, str], None]


@dataclass(frozen=True)
class _Scope:
    """What one resource may hold and has now."""

    current: Mapping[str, str]          # its overrides
    checks: Mapping[str, Check]         # config name -> check of a value
    inherited: Callable[[str], str]     # what it has without an override
    unknown: str                        # why a name not in `checks` is refused
    # Kafka refuses a config one broker cannot hold at runtime with INVALID_REQUEST
    # ("Cannot update these configs dynamically"), an unknown topic config with INVALID_CONFIG.
    unknown_error: Error = Error.INVALID_CONFIG


def _changes(image: MetadataImage, resource: cpb.IncrementalAlterConfigsRequest.Resource,
             ) -> list[tuple[str, Optional[str]]]:
    """(name, new value or None to delete) for each operation, once all of them are valid."""
    scope = _scope(image, resource)
    names = Counter(op.name for op in resource.configs)
    changes: list[tuple[str, Optional[str]]] = []
    for op in resource.configs:
        if names[op.name] > 1:
            raise ControllerError(Error.INVALID_REQUEST, f"config {op.name} is given more than once")
        if op.op not in OP_NAMES:
            raise ControllerError(Error.INVALID_REQUEST, f"config {op.name}: unknown operation {op.op}")
        check = scope.checks.get(op.name)
        if check is None:
            raise ControllerError(scope.unknown_error, f"{op.name}: {scope.unknown}")
        if op.op == DELETE:
            changes.append((op.name, None))
            continue
        if not op.HasField("value"):
            raise ControllerError(Error.INVALID_REQUEST, f"config {op.name}: {OP_NAMES[op.op]} needs a value")
        value = op.value
        if op.op in (APPEND, SUBTRACT):
            if op.name not in LIST_CONFIGS:
                raise ControllerError(
                    Error.INVALID_CONFIG, f"{op.name}: {OP_NAMES[op.op]} is only for list-valued configs; use SET")
            value = _list_op(op.op, scope.current.get(op.name, scope.inherited(op.name)), value)
        try:
            check(op.name, value)
        except InvalidConfigError as exc:
            raise ControllerError(Error.INVALID_CONFIG, str(exc).removeprefix("INVALID_CONFIG: ")) from None
        changes.append((op.name, value))
    return changes


def _scope(image: MetadataImage, resource: cpb.IncrementalAlterConfigsRequest.Resource) -> _Scope:
    name = resource.resource_name
    if resource.resource_type == TOPIC:
        if image.topic(name) is None:
            raise ControllerError(Error.UNKNOWN_TOPIC_OR_PARTITION, "no such topic")
        return _Scope(image.topic_config(name), TOPIC_CONFIGS, lambda key: inherited_topic_value(image, key),
                      "unknown topic config")
    if resource.resource_type == BROKER:
        cluster = image.cluster_config()
        rate_checks = {key: check_rate for key in PER_BROKER_CONFIGS}
        if name:
            if not name.isdigit() or int(name) > INT_MAX:
                raise ControllerError(
                    Error.INVALID_REQUEST, f"{name!r} is not a broker id (the cluster-wide default is named \"\")")
            return _Scope(
                image.broker_config(int(name)), rate_checks,
                lambda key: cluster.get(key, PER_BROKER_CONFIGS[key]),
                "not a config one broker can hold at runtime; per broker only "
                f"{', '.join(sorted(PER_BROKER_CONFIGS))} (others: the cluster-wide default, resource name \"\")",
                Error.INVALID_REQUEST)
        return _Scope(
            cluster,
            {**{key: TOPIC_CONFIGS[topic_key] for key, topic_key in DYNAMIC_CLUSTER_CONFIGS.items()}, **rate_checks},
            lambda key: PER_BROKER_CONFIGS.get(key) or TOPIC_CONFIG_DEFS[DYNAMIC_CLUSTER_CONFIGS[key]].default,
            "not a broker config that can change cluster-wide at runtime "
            f"(those are: {', '.join(sorted([*DYNAMIC_CLUSTER_CONFIGS, *PER_BROKER_CONFIGS]))})")
    raise ControllerError(
        Error.INVALID_REQUEST, f"resource type {resource.resource_type}: only topics (2) and brokers (4) have configs")


def _list_op(op: int, current: str, items: str) -> str:
    values = [v.strip() for v in current.split(",") if v.strip()]
    given = [v.strip() for v in items.split(",") if v.strip()]
    if op == APPEND:
        values += [v for v in given if v not in values]
    else:
        values = [v for v in values if v not in given]
    return ",".join(values)
