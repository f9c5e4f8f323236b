"""Feature levels (KIP-584, KIP-778): what this software supports, and what
each `metadata.version` level lets the controller write.

A cluster being rolled runs two versions of the software at once. Kafka's
answer, followed here: the controller writes only the metadata records the
finalized `metadata.version` allows, and an operator raises the level
(`kraftlog features upgrade`) once every node runs software that supports
it; the controller refuses a level some registered broker does not support,
and refuses the registration of a broker that does not support the level in
force (UNSUPPORTED_VERSION). So an older node never meets a record it
cannot replay: replaying an unknown record kind stops a node
(MetadataReplayError).

`METADATA_LEVELS` is the table: each level, and the record kinds (the
`MetadataRecord` oneof names) first allowed at it. Level 1 is every kind
this software writes today. Nothing needs a level 2 yet: the records issue
20 adds so far are new fields of existing records (a RegisterBrokerRecord's
`features`, PartitionRecord's adding/removing replicas), which protobuf lets
older software skip. The first new record kind gets a level 2 here, listing
it, and `SUPPORTED[METADATA_VERSION]` rises to 2; tests/metadata_quorum/
test_features.py fails until every record kind has a level.

A log from before the feature existed holds no metadata.version record:
its level is 1 (MINIMUM_METADATA_LEVEL), as Kafka reads a log without one
at its lowest KRaft level. Feature names under `kraftlog.` are internal
markers kept among the finalized features (controller/bootstrap.py's
`kraftlog.bootstrap`), never set or shown as features.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Optional, Sequence

from kraftlog_api import metadata_pb2 as mpb

METADATA_VERSION = "metadata.version"
MINIMUM_METADATA_LEVEL = 1
# KIP-966, Kafka's name: level 1 tracks eligible leader replicas, the
# brokers hold the high watermark below min.insync.replicas and a broker
# back from an unclean shutdown loses its eligibility. Off (0) unless an
# operator upgrades it, as in Kafka 4.0 (controller/elections.py).
ELIGIBLE_LEADER_REPLICAS = "eligible.leader.replicas.version"
INTERNAL_PREFIX = "kraftlog."


@dataclass(frozen=True)
class MetadataLevel:
    level: int
    name: str  # as kafka-features prints a release's level, e.g. 3.7-IV4
    records: frozenset[str]  # the MetadataRecord kinds first allowed at this level


METADATA_LEVELS: tuple[MetadataLevel, ...] = (
    MetadataLevel(1, "1.0-IV0", frozenset({
        "register_broker", "unregister_broker", "broker_registration_change", "topic", "partition",
        "partition_change", "remove_topic", "config", "feature_level", "no_op", "producer_ids", "batch",
        "access_control_entry", "remove_access_control_entry", "user_scram_credential",
        "remove_user_scram_credential", "client_quota"})),
)


@dataclass(frozen=True)
class FeatureRange:
    """A feature's levels a node supports, both ends included."""

    name: str
    min_level: int
    max_level: int

    def supports(self, level: int) -> bool:
        return self.min_level <= level <= self.max_level

    def describe(self) -> str:
        return f"{self.min_level}-{self.max_level}"


# What this software supports: its end of every feature it knows.
SUPPORTED: dict[str, FeatureRange] = {
    METADATA_VERSION: FeatureRange(METADATA_VERSION, MINIMUM_METADATA_LEVEL, METADATA_LEVELS[-1].level),
    ELIGIBLE_LEADER_REPLICAS: FeatureRange(ELIGIBLE_LEADER_REPLICAS, 0, 1),
}
# What a broker that lists no features supports: software from before the
# feature existed wrote and read metadata.version 1 only.
UNLISTED: dict[str, FeatureRange] = {
    METADATA_VERSION: FeatureRange(METADATA_VERSION, MINIMUM_METADATA_LEVEL, MINIMUM_METADATA_LEVEL),
}


def is_internal(name: str) -> bool:
    return name.startswith(INTERNAL_PREFIX)


def finalized(features: Mapping[str, int]) -> dict[str, int]:
    """The finalized features of an image's `features`, internal markers left
    out and metadata.version at its effective level."""
    levels = {name: level for name, level in features.items() if not is_internal(name)}
    levels.setdefault(METADATA_VERSION, MINIMUM_METADATA_LEVEL)
    return levels


def metadata_level(features: Mapping[str, int]) -> int:
    return features.get(METADATA_VERSION, MINIMUM_METADATA_LEVEL)


def elr_enabled(features: Mapping[str, int]) -> bool:
    """Whether KIP-966's eligible leader replicas are on (finalized at level 1 or above)."""
    return features.get(ELIGIBLE_LEADER_REPLICAS, 0) >= 1


def level_name(level: int, levels: Sequence[MetadataLevel] = METADATA_LEVELS) -> str:
    return next((m.name for m in levels if m.level == level), str(level))


def allowed_records(level: int, levels: Sequence[MetadataLevel] = METADATA_LEVELS) -> frozenset[str]:
    """The record kinds a controller may write at metadata.version `level`."""
    kinds: set[str] = set()
    for entry in levels:
        if entry.level <= level:
            kinds |= entry.records
    return frozenset(kinds)


def refused_records(records: Iterable[mpb.MetadataRecord], level: int,
                    levels: Sequence[MetadataLevel] = METADATA_LEVELS) -> list[str]:
    """The kinds among `records` (batches opened) that `level` does not allow, in order, once each."""
    allowed = allowed_records(level, levels)
    refused: dict[str, None] = {}
    for record in records:
        kind = record.WhichOneof("record")
        inner = record.batch.records if kind == "batch" else ()
        for k in (kind, *(r.WhichOneof("record") for r in inner)):
            if k is not None and k not in allowed:
                refused[k] = None
    return list(refused)


def ranges_of(listed: Iterable[mpb.FeatureRange]) -> dict[str, FeatureRange]:
    """A registration's features by name, UNLISTED's ranges for what it does not list."""
    ranges = dict(UNLISTED)
    for item in listed:
        ranges[item.name] = FeatureRange(item.name, item.min_supported_version, item.max_supported_version)
    return ranges


def unsupported(ranges: Mapping[str, FeatureRange], levels: Mapping[str, int]) -> Optional[str]:
    """Why a node with `ranges` cannot join a cluster at finalized `levels`, or None.
    A feature the node does not list is supported at level 0 only (off)."""
    for name, level in sorted(levels.items()):
        found = ranges.get(name)
        if level > 0 and (found is None or not found.supports(level)):
            wants = f"a version between {found.min_level} and {found.max_level}" if found else "none"
            return f"finalized version {level} of {name} is not supported: it supports {wants}, inclusive"
    return None


def supported_records() -> list[mpb.FeatureRange]:
    """This software's features, as a registration carries them."""
    return [mpb.FeatureRange(name=r.name, min_supported_version=r.min_level, max_supported_version=r.max_level)
            for r in SUPPORTED.values()]
