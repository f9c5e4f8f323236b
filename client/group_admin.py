"""Consumer group administration, like Kafka's kafka-consumer-groups: list,
describe (members, assignments, committed offsets, log ends, lag), reset
offsets of a group without members, delete. `security` is the client's
security.protocol, ssl.* and sasl.* settings (None: plaintext).

The client's own asyncio pieces do the work - Metadata, the Coordinator
(found with FindCoordinator, asked again when the group moves), ListOffsets
and OffsetCommit - each call here running them once with asyncio.run.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Callable, Iterable, Optional, TypeVar

import grpc

from kraftlog_api import groups_pb2 as gpb
from kraftlog_api import groups_pb2_grpc as gpb_grpc
from kafka_protocol.errors import Errors
from kafka_protocol.wording import counted, listed
from security.client_security import ClientSecurity

from .consumer_types import OffsetAndMetadata, TopicPartition
from .coordinator import Coordinator
from .errors import NetworkError, error_for_code, error_name
from .metadata import Metadata
from .offsets import list_offsets, offset_commit

T = TypeVar("T")
CALL_TIMEOUT_S = 5.0
RETRY_BACKOFF_S = 0.2

GROUP_CALL_TIMEOUT_S = 15.0
# Retriable as Kafka says, and only these of Kafka's retriable errors: they say the group moved or is loading.
COORDINATOR_RETRIABLE = frozenset({Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.COORDINATOR_NOT_AVAILABLE,
                                   Errors.NOT_COORDINATOR})
EARLIEST_TIMESTAMP, LATEST_TIMESTAMP = -2, -1


def list_groups(bootstrap: str, *, security: Optional[ClientSecurity] = None) -> list[dict[str, Any]]:
    """Every group of every live broker's coordinators: [{"group", "state", "coordinator"}, ...]."""
    return asyncio.run(_with_metadata(bootstrap, security, _list_groups))


def describe_group(bootstrap: str, group: str, *, security: Optional[ClientSecurity] = None) -> dict[str, Any]:
    """The group's state and members, and per partition (committed or assigned) the committed
    offset, the log end offset, the lag and the member that owns it."""
    return asyncio.run(_with_metadata(bootstrap, security, lambda metadata: _describe_group(metadata, group)))


def reset_offsets(bootstrap: str, group: str, topics: Optional[dict[str, Optional[list[int]]]],
                  strategy: tuple[str, Any], execute: bool, *,
                  security: Optional[ClientSecurity] = None) -> list[dict[str, Any]]:
    """The offsets `strategy` gives each partition - ("earliest"|"latest", None), ("offset", n),
    ("datetime", ms), ("shift", n) - committed when `execute`. `topics`: topic -> partitions (None:
    all); None: every partition the group has committed. Refused with NON_EMPTY_GROUP while the
    group has members, as Kafka's kafka-consumer-groups --reset-offsets is."""
    return asyncio.run(_with_metadata(
        bootstrap, security, lambda metadata: _reset_offsets(metadata, group, topics, strategy, execute)))


def delete_groups(bootstrap: str, groups: list[str], *, security: Optional[ClientSecurity] = None) -> None:
    """Delete groups and their committed offsets; GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP raise."""
    asyncio.run(_with_metadata(bootstrap, security, lambda metadata: _delete_groups(metadata, groups)))


async def _with_metadata(bootstrap: str, security: Optional[ClientSecurity],
                         work: Callable[[Metadata], Awaitable[T]]) -> T:
    metadata = Metadata(bootstrap, security=security)
    try:
        await metadata.update()
        return await work(metadata)
    finally:
        await metadata.close()


async def _list_groups(metadata: Metadata) -> list[dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    problems = []
    for broker_id, address in sorted(metadata.brokers.items()):
        stub = gpb_grpc.GroupCoordinatorStub(metadata.channel(address))
        try:
            response = await stub.ListGroups(gpb.ListGroupsRequest(), timeout=CALL_TIMEOUT_S * 3)
        except grpc.aio.AioRpcError as exc:
            problems.append(f"broker {broker_id}: {exc.code().name}")
            continue
        for g in response.groups:
            found[g.group_id] = {"group": g.group_id, "state": g.group_state, "coordinator": g.coordinator_id}
    if problems and not found and len(problems) == len(metadata.brokers):
        raise NetworkError(f"no broker answered ListGroups ({'; '.join(problems)})")
    return [found[g] for g in sorted(found)]


def _coordinator(metadata: Metadata, group: str) -> Coordinator:
    return Coordinator(metadata, group, request_timeout_s=CALL_TIMEOUT_S * 3, backoff_s=RETRY_BACKOFF_S)


async def _group_call(coordinator: Coordinator, method: str, request: Any, errors: Callable[[Any], list[int]]) -> Any:
    """The coordinator's answer, asked again while it says the group moved or is loading."""
    deadline = time.monotonic() + GROUP_CALL_TIMEOUT_S
    while True:
        response = await coordinator.call(method, lambda: request, deadline)
        if not COORDINATOR_RETRIABLE & set(errors(response)) or time.monotonic() >= deadline:
            return response
        coordinator.invalidate()
        await asyncio.sleep(RETRY_BACKOFF_S)


async def _describe_group(metadata: Metadata, group: str) -> dict[str, Any]:
    coordinator = _coordinator(metadata, group)
    described = await _group_call(coordinator, "ConsumerGroupDescribe",
                                  gpb.ConsumerGroupDescribeRequest(group_ids=[group]),
                                  lambda r: [g.error_code for g in r.groups])
    [g] = described.groups
    if g.error_code:
        raise error_for_code(g.error_code, f"group {group}: {g.error_message or error_name(g.error_code)}")
    committed = await _committed(coordinator, group)
    owners: dict[TopicPartition, dict[str, Any]] = {}
    members = []
    for m in g.members:
        member = {"member_id": m.member_id, "instance_id": m.instance_id or None, "client_id": m.client_id,
                  "host": m.client_host, "member_epoch": m.member_epoch,
                  "subscribed_topics": list(m.subscribed_topic_names),
                  "assignment": _assigned(m.assignment), "target_assignment": _assigned(m.target_assignment)}
        members.append(member)
        for t in m.assignment:
            owners.update({TopicPartition(t.topic, p): member for p in t.partitions})
    partitions = sorted(set(committed) | set(owners))
    ends = await _offsets_at(metadata, {tp: LATEST_TIMESTAMP for tp in partitions})
    return {
        "group": group, "state": g.group_state, "group_epoch": g.group_epoch, "assignor": g.assignor_name,
        "coordinator": coordinator.node_id, "members": members,
        "offsets": [{
            "topic": tp.topic, "partition": tp.partition, "committed": committed.get(tp),
            "log_end": ends.get(tp), "lag": (None if committed.get(tp) is None or ends.get(tp) is None
                                             else max(0, ends[tp] - committed[tp])),
            "member_id": owners[tp]["member_id"] if tp in owners else None,
            "client_id": owners[tp]["client_id"] if tp in owners else None,
            "host": owners[tp]["host"] if tp in owners else None,
        } for tp in partitions],
    }


def _assigned(topics: Iterable[gpb.TopicPartitions]) -> dict[str, list[int]]:
    return {t.topic: sorted(t.partitions) for t in topics}


async def _committed(coordinator: Coordinator, group: str) -> dict[TopicPartition, int]:
    """Every committed offset of the group."""
    response = await _group_call(coordinator, "OffsetFetch", gpb.OffsetFetchRequest(group_id=group, member_epoch=-1),
                                 lambda r: [r.error_code])
    if response.error_code:
        raise error_for_code(response.error_code, f"OffsetFetch for group {group}")
    return {TopicPartition(t.name, p.partition_index): p.committed_offset
            for t in response.topics for p in t.partitions if p.committed_offset >= 0}


async def _offsets_at(metadata: Metadata, wanted: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
    """ListOffsets from the leaders: the offset for each timestamp (-2 earliest, -1 latest). A time
    after the last record gives the log end, as Kafka's --to-datetime does."""
    if not wanted:
        return {}
    found = await list_offsets(metadata, wanted, isolation_level=0, deadline=time.monotonic() + GROUP_CALL_TIMEOUT_S,
                               backoff_s=RETRY_BACKOFF_S, timeout_s=CALL_TIMEOUT_S * 3)
    offsets = {tp: at.offset for tp, at in found.items() if at is not None}
    after_the_end = {tp: LATEST_TIMESTAMP for tp in wanted if tp not in offsets and wanted[tp] >= 0}
    offsets.update(await _offsets_at(metadata, after_the_end))
    return offsets


async def _reset_offsets(metadata: Metadata, group: str, topics: Optional[dict[str, Optional[list[int]]]],
                         strategy: tuple[str, Any], execute: bool) -> list[dict[str, Any]]:
    coordinator = _coordinator(metadata, group)
    described = await _group_call(coordinator, "ConsumerGroupDescribe",
                                  gpb.ConsumerGroupDescribeRequest(group_ids=[group]),
                                  lambda r: [g.error_code for g in r.groups])
    [g] = described.groups
    if g.error_code not in (Errors.NONE, Errors.GROUP_ID_NOT_FOUND):
        raise error_for_code(g.error_code, f"group {group}: {g.error_message or error_name(g.error_code)}")
    if g.members:
        raise error_for_code(Errors.NON_EMPTY_GROUP, f"group {group} has {counted(len(g.members), 'active member')} "
                                              f"(state {g.group_state}): offsets can only be reset while it "
                                              "has none")
    committed = await _committed(coordinator, group) if g.error_code == Errors.NONE else {}
    partitions = await _target_partitions(metadata, topics, committed, group)
    kind, value = strategy
    first = await _offsets_at(metadata, {tp: EARLIEST_TIMESTAMP for tp in partitions})
    end = await _offsets_at(metadata, {tp: LATEST_TIMESTAMP for tp in partitions})
    if kind == "earliest":
        new = first
    elif kind == "latest":
        new = end
    elif kind == "offset":
        new = {tp: value for tp in partitions}
    elif kind == "datetime":
        new = await _offsets_at(metadata, {tp: value for tp in partitions})
    else:  # shift
        without = [str(tp) for tp in partitions if tp not in committed]
        if without:
            raise error_for_code(Errors.INVALID_REQUEST, f"--shift-by moves a committed offset; "
                                                  f"{listed(without, 'has', 'have')} none")
        new = {tp: committed[tp] + value for tp in partitions}
    plan = [{"group": group, "topic": tp.topic, "partition": tp.partition, "current": committed.get(tp),
             "new": min(max(new[tp], first[tp]), end[tp])}  # Kafka clamps into the log's range
            for tp in partitions]
    if execute and plan:
        await offset_commit(coordinator, {TopicPartition(p["topic"], p["partition"]): OffsetAndMetadata(p["new"])
                                          for p in plan},
                            member=lambda: ("", -1), deadline=time.monotonic() + GROUP_CALL_TIMEOUT_S)
    return plan


async def _target_partitions(metadata: Metadata, topics: Optional[dict[str, Optional[list[int]]]],
                             committed: dict[TopicPartition, int], group: str) -> list[TopicPartition]:
    if topics is None:
        if not committed:
            raise error_for_code(Errors.GROUP_ID_NOT_FOUND, f"group {group} has no committed offsets: name --topic")
        return sorted(committed)
    chosen = []
    for topic, wanted in topics.items():
        existing = [p.partition for p in await metadata.partitions_for(topic, max_block_ms=int(CALL_TIMEOUT_S * 1000))]
        unknown = sorted(set(wanted or ()) - set(existing))
        if unknown:
            raise error_for_code(Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                 f"{topic} has no partition {', '.join(map(str, unknown))}")
        chosen += [TopicPartition(topic, p) for p in (wanted if wanted is not None else existing)]
    return sorted(set(chosen))


async def _delete_groups(metadata: Metadata, groups: list[str]) -> None:
    for group in groups:
        response = await _group_call(_coordinator(metadata, group), "DeleteGroups",
                                     gpb.DeleteGroupsRequest(group_ids=[group]),
                                     lambda r: [x.error_code for x in r.results])
        [result] = response.results
        if result.error_code == Errors.NON_EMPTY_GROUP:
            raise error_for_code(Errors.NON_EMPTY_GROUP, f"group {group} still has members: stop them first")
        if result.error_code:
            raise error_for_code(result.error_code, f"group {group}: {error_name(result.error_code)}")
