"""The driver's questions to the cluster: which partitions a subscription
covers (Metadata) and where they start and end (ListOffsets).

Synchronous on purpose: Spark calls a data source's planning methods one at
a time from a plain Python worker, and `client.cluster.Cluster` already is
the blocking metadata view. Errors name the option that led to them.
"""
from __future__ import annotations

import logging
import time
from typing import Iterable, Mapping

import grpc

from client.cluster import CALL_TIMEOUT_S, Cluster
from client.metadata_cache import STALE_METADATA_ERRORS
from client.errors import InvalidConfigError, KafkaError, NetworkError, error_for_code
from kafka_protocol.errors import Errors
from kraftlog_api import broker_pb2 as bpb
from security.client_security import ClientSecurity

from .options import BOOTSTRAP, EARLIEST, LATEST, READ_UNCOMMITTED, OffsetSpec, Subscription, TopicPartition, option_error

log = logging.getLogger(__name__)

LIST_OFFSETS_TIMEOUT_S = 30.0
RETRY_BACKOFF_S = 0.1


def open_cluster(bootstrap: str, security: ClientSecurity) -> Cluster:
    """A Cluster that has answered Metadata for every topic."""
    try:
        cluster = Cluster(bootstrap, security)
    except InvalidConfigError as exc:
        raise option_error(BOOTSTRAP, str(exc).split(": ", 2)[-1]) from None
    try:
        cluster.refresh(None)
    except NetworkError as exc:
        cluster.close()
        raise NetworkError(f"option '{BOOTSTRAP}': no broker of {bootstrap} could be reached "
                           f"({str(exc).split(': ', 1)[-1]})") from None
    return cluster


def subscribed_partitions(cluster: Cluster, subscription: Subscription) -> list[TopicPartition]:
    """The partitions a subscription covers now, from the cluster's last Metadata."""
    if subscription.pattern is not None:
        # Kafka's consumers leave internal topics (__consumer_offsets, ...) out of patterns.
        return sorted((t, p.partition) for t, parts in cluster.topics.items()
                      if not t.startswith("__") and subscription.matches(t) for p in parts)
    for topic in subscription.topics:
        if not cluster.topics.get(topic):
            raise _unknown(subscription.option, f"topic {topic!r} does not exist")
    if subscription.assigned:
        for topic, partition in subscription.assigned:
            if partition >= len(cluster.topics[topic]):
                raise _unknown(subscription.option, f"{topic}-{partition} does not exist "
                                                    f"({topic} has {len(cluster.topics[topic])} partitions)")
        return list(subscription.assigned)
    return sorted((t, p.partition) for t in subscription.topics for p in cluster.topics[t])


def _unknown(option: str, detail: str) -> KafkaError:
    return error_for_code(Errors.UNKNOWN_TOPIC_OR_PARTITION, f"option '{option}': {detail}")


def list_offsets(cluster: Cluster, timestamps: Mapping[TopicPartition, int],
                 isolation_level: int = READ_UNCOMMITTED) -> dict[TopicPartition, int]:
    """ListOffsets at each partition's leader: EARLIEST (the log start),
    LATEST (the high watermark; with isolation_level 1 the last stable
    offset) or the first offset at or after a timestamp (-1 when there is
    none). Retried through leader changes for 30 s."""
    pending = dict(timestamps)
    found: dict[TopicPartition, int] = {}
    deadline = time.monotonic() + LIST_OFFSETS_TIMEOUT_S
    last_problem = ""
    while pending:
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in pending:
            info = cluster.leader_for(*tp)
            if info is not None:
                by_leader.setdefault(info.leader, []).append(tp)
        for leader, tps in by_leader.items():
            try:
                response = cluster.broker_stub(leader).ListOffsets(_request(tps, pending, isolation_level),
                                                                   timeout=CALL_TIMEOUT_S)
            except grpc.RpcError as exc:
                last_problem = f"broker {leader}: {exc.code().name}"  # type: ignore[attr-defined]
                continue
            for topic in response.topics:
                for p in topic.partitions:
                    tp = (topic.name, p.partition_index)
                    if p.error_code == 0:
                        found[tp] = p.offset
                        pending.pop(tp, None)
                    elif p.error_code in STALE_METADATA_ERRORS:
                        last_problem = str(error_for_code(p.error_code, f"{tp[0]}-{tp[1]}"))
                    else:
                        raise error_for_code(p.error_code, f"ListOffsets of {tp[0]}-{tp[1]}")
        if not pending:
            break
        if time.monotonic() >= deadline:
            raise NetworkError(f"no leader answered ListOffsets for {sorted(pending)[:5]} within "
                               f"{LIST_OFFSETS_TIMEOUT_S:.0f} s (last: {last_problem or 'no leader known'})")
        time.sleep(RETRY_BACKOFF_S)
        _refresh(cluster, {tp[0] for tp in pending})
    return found


def _request(tps: Iterable[TopicPartition], timestamps: Mapping[TopicPartition, int],
             isolation_level: int) -> bpb.ListOffsetsRequest:
    by_topic: dict[str, list[bpb.ListOffsetsRequest.ListOffsetsPartition]] = {}
    for topic, partition in tps:
        by_topic.setdefault(topic, []).append(bpb.ListOffsetsRequest.ListOffsetsPartition(
            partition_index=partition, current_leader_epoch=-1, timestamp=timestamps[(topic, partition)]))
    return bpb.ListOffsetsRequest(replica_id=-1, isolation_level=isolation_level, topics=[
        bpb.ListOffsetsRequest.ListOffsetsTopic(name=t, partitions=ps) for t, ps in by_topic.items()])


def _refresh(cluster: Cluster, topics: Iterable[str]) -> None:
    try:
        cluster.refresh(list(topics))
    except NetworkError as exc:
        log.info("metadata refresh failed: %s", exc)


def resolve(cluster: Cluster, spec: OffsetSpec, partitions: list[TopicPartition], *,
            earliest: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
            fail_on_data_loss: bool) -> dict[TopicPartition, int]:
    """Concrete offsets of `partitions` for a starting or ending spec, checked
    against each partition's [earliest, latest]."""
    if spec.timestamp is not None or spec.timestamps:
        stamps = dict(spec.timestamps)
        if spec.timestamps:
            _check_named(spec.option, stamps, partitions)
        found = list_offsets(cluster, {tp: spec.timestamp if spec.timestamp is not None else stamps[tp]
                                       for tp in partitions})
        out = {}
        for tp in partitions:
            if found[tp] >= 0:
                out[tp] = found[tp]
            elif spec.timestamp_strategy == "latest":
                out[tp] = latest[tp]
            else:
                raise error_for_code(Errors.OFFSET_OUT_OF_RANGE,
                                     f"option '{spec.option}': {tp[0]}-{tp[1]} has no record "
                                     "at or after the timestamp (set "
                                     "startingOffsetsByTimestampStrategy=latest to start at the end)")
        return out
    if spec.default is not None:
        source = earliest if spec.default == EARLIEST else latest
        return {tp: source[tp] for tp in partitions}
    given = dict(spec.offsets)
    _check_named(spec.option, given, partitions)
    out = {}
    for tp in partitions:
        offset = given[tp]
        if offset == EARLIEST:
            offset = earliest[tp]
        elif offset == LATEST:
            offset = latest[tp]
        elif offset > latest[tp]:
            raise error_for_code(Errors.OFFSET_OUT_OF_RANGE,
                                 f"option '{spec.option}': {tp[0]}-{tp[1]} offset {offset} is "
                                 f"past the end of the partition ({latest[tp]})")
        elif offset < earliest[tp]:
            if fail_on_data_loss:
                raise error_for_code(Errors.OFFSET_OUT_OF_RANGE,
                                     f"option '{spec.option}': {tp[0]}-{tp[1]} offset {offset} "
                                     f"was deleted (the log starts at {earliest[tp]}); set "
                                     "failOnDataLoss=false to start at the earliest offset")
            log.warning("%s-%s: offset %s was deleted, starting at %s", tp[0], tp[1], offset, earliest[tp])
            offset = earliest[tp]
        out[tp] = offset
    return out


def _check_named(option: str, given: Mapping[TopicPartition, int], partitions: list[TopicPartition]) -> None:
    """Like Spark's Kafka source, specific offsets must name every partition read, and only those."""
    missing = sorted(set(partitions) - set(given))
    extra = sorted(set(given) - set(partitions))
    if missing:
        raise option_error(option, "gives no offset for " + ", ".join(f"{t}-{p}" for t, p in missing[:10])
                           + " (name every partition of the subscribed topics)")
    if extra:
        raise _unknown(option, "names " + ", ".join(f"{t}-{p}" for t, p in extra[:10])
                       + ", not among the subscribed partitions")
