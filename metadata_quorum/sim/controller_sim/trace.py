"""Short, readable renderings of metadata records and controller responses for traces."""

from __future__ import annotations

from typing import Iterable

from kraftlog_api import metadata_pb2 as mpb
from metadata_quorum.controller import Error
from metadata_quorum.image import MetadataImage


def hash_text(text: str) -> int:
    """A hash that does not change between processes (str hashes are salted)."""
    value = 0
    for byte in text.encode():
        value = (value * 131 + byte) % (1 << 61)
    return value


def _ids(ids: Iterable[int]) -> str:
    return "[" + ",".join(str(i) for i in ids) + "]"


def describe(record: mpb.MetadataRecord, image: MetadataImage) -> str:
    """One short phrase for a record, read against the image it applies to."""
    kind = record.WhichOneof("record")
    if kind == "register_broker":
        r = record.register_broker
        return f"register {r.incarnation_id} epoch {r.broker_epoch}"
    if kind == "broker_registration_change":
        c = record.broker_registration_change
        words = [{mpb.FENCE: "fence", mpb.UNFENCE: "unfence"}.get(c.fenced, "")]
        if c.in_controlled_shutdown == mpb.IN_CONTROLLED_SHUTDOWN:
            words.append("controlled-shutdown")
        return " ".join(w for w in words if w) + f" b{c.broker_id}"
    if kind == "topic":
        return f"topic {record.topic.name}"
    if kind == "partition":
        p = record.partition
        name = image.topics[p.topic_id].name if p.topic_id in image.topics else "?"
        return f"{name}/{p.partition_id} replicas {_ids(p.replicas)} leader {p.leader}"
    if kind == "partition_change":
        return _describe_change(record.partition_change, image)
    if kind == "remove_topic":
        topic = image.topics.get(record.remove_topic.topic_id)
        return f"remove topic {topic.name if topic else '?'}"
    if kind == "config":
        c = record.config
        return f"config {c.resource_name or '<cluster>'} {c.name}={c.value}"
    if kind == "feature_level":
        return f"feature {record.feature_level.name}={record.feature_level.feature_level}"
    if kind == "producer_ids":
        return f"producer ids to {record.producer_ids.next_producer_id}"
    return kind or "?"


def _describe_change(change: mpb.PartitionChangeRecord, image: MetadataImage) -> str:
    topic = image.topics.get(change.topic_id)
    state = topic.partitions.get(change.partition_id) if topic else None
    parts = [f"{topic.name if topic else '?'}/{change.partition_id}"]
    if change.HasField("leader"):
        election = mpb.ElectionKind.Name(change.election).removeprefix("ELECTION_")
        parts.append(f"leader {state.leader if state else '?'}->{change.leader} {election}")
    if change.HasField("isr"):
        parts.append(f"isr {_ids(state.isr) if state else '?'}->{_ids(change.isr.ids)}")
    if change.HasField("leader_recovery_state"):
        parts.append(mpb.LeaderRecoveryState.Name(change.leader_recovery_state))
    if change.HasField("eligible_leader_replicas"):
        parts.append(f"elr {_ids(state.elr) if state else '?'}->{_ids(change.eligible_leader_replicas.ids)}")
    if change.HasField("last_known_elr"):
        parts.append(f"last-known {_ids(state.last_known_elr) if state else '?'}->{_ids(change.last_known_elr.ids)}")
    return " ".join(parts)


def brief(response: object) -> str:
    """A response's errors, in a few words."""
    if response is None:
        return "nothing to do"
    codes = []
    if getattr(response, "error_code", 0):
        codes.append(Error(response.error_code).name)  # type: ignore[attr-defined]
    for group in ("topics", "results"):
        for item in getattr(response, group, ()):
            if getattr(item, "error_code", 0):
                codes.append(Error(item.error_code).name)
            codes += [Error(p.error_code).name for p in getattr(item, "partitions", ()) if p.error_code]
    return ", ".join(codes) if codes else "ok, no records"
