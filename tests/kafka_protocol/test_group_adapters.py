"""Every group API's adapter at every version the listener advertises,
without a broker: a request of that version (every field given a value)
goes through the adapter to stand-in services, and the answer must encode
as that version's response and decode back. This catches a field read
that a version lacks, or a value a version cannot carry."""
from __future__ import annotations

import asyncio
import dataclasses
import typing
import uuid
from types import NoneType, UnionType

import pytest

from broker.kafka_api.apis import ADAPTERS
from broker.kafka_api.context import KafkaCallContext
from kafka_protocol.wire import codec, versions
from kafka_protocol.wire.entities import build
from kraftlog_api import broker_pb2 as bpb
from kraftlog_api import groups_pb2 as gpb

TOPIC_ID = uuid.UUID(int=7)
GROUP_APIS = (versions.FIND_COORDINATOR, versions.OFFSET_COMMIT, versions.OFFSET_FETCH, versions.JOIN_GROUP,
              versions.HEARTBEAT, versions.LEAVE_GROUP, versions.SYNC_GROUP, versions.DESCRIBE_GROUPS,
              versions.LIST_GROUPS, versions.TXN_OFFSET_COMMIT, versions.DELETE_GROUPS,
              versions.CONSUMER_GROUP_HEARTBEAT, versions.CONSUMER_GROUP_DESCRIBE)
PRIMITIVES = {"string": "x", "bytes": b"b", "uuid": TOPIC_ID, "bool": True, "int8": 0, "int16": 1, "int32": 1,
              "int64": 1, "timedelta_i32": 6000, "timedelta_i64": 6000}


def example(kind: type) -> dict:
    """Values for every field of `kind`: one item per array, the nested entities filled too."""
    hints = typing.get_type_hints(kind)
    values = {}
    for f in dataclasses.fields(kind):
        annotation = hints[f.name]
        if typing.get_origin(annotation) is UnionType:
            annotation = next(a for a in typing.get_args(annotation) if a is not NoneType)
        many = typing.get_origin(annotation) is tuple
        item = typing.get_args(annotation)[0] if many else annotation
        value = example(item) if dataclasses.is_dataclass(item) else PRIMITIVES[f.metadata["kafka_type"]]
        if f.name == "topic" or f.name == "name":
            value = "orders"
        values[f.name] = (value,) if many else value
    return values


class Groups:
    """The GroupCoordinator service's methods, answering with something in every field the adapters read."""

    async def FindCoordinator(self, req, context):
        return gpb.FindCoordinatorResponse(coordinators=[gpb.FindCoordinatorResponse.Coordinator(
            key=k, node_id=1, host="h", port=9) for k in req.keys])

    async def OffsetCommit(self, req, context):
        return gpb.OffsetCommitResponse(topics=[gpb.OffsetCommitResponse.Topic(
            name=t.name, partitions=[gpb.OffsetCommitResponse.Partition(partition_index=p.partition_index)
                                     for p in t.partitions]) for t in req.topics])

    async def TxnOffsetCommit(self, req, context):
        return gpb.TxnOffsetCommitResponse(topics=[gpb.TxnOffsetCommitResponse.Topic(
            name=t.name, partitions=[gpb.TxnOffsetCommitResponse.Partition(partition_index=p.partition_index)
                                     for p in t.partitions]) for t in req.topics])

    async def OffsetFetch(self, req, context):
        return gpb.OffsetFetchResponse(topics=[gpb.OffsetFetchResponse.Topic(name="orders", partitions=[
            gpb.OffsetFetchResponse.Partition(partition_index=0, committed_offset=5, metadata="m")])])

    async def JoinGroup(self, req, context):
        return gpb.JoinGroupResponse(generation_id=1, protocol_type="consumer", protocol_name="range", leader="m",
                                     member_id="m", members=[gpb.JoinGroupResponse.Member(
                                         member_id="m", group_instance_id="i", metadata=b"x")])

    async def SyncGroup(self, req, context):
        return gpb.SyncGroupResponse(protocol_type="consumer", protocol_name="range", assignment=b"a")

    async def Heartbeat(self, req, context):
        return gpb.HeartbeatResponse()

    async def LeaveGroup(self, req, context):
        return gpb.LeaveGroupResponse(members=[gpb.LeaveGroupResponse.Member(member_id=m.member_id)
                                               for m in req.members])

    async def DescribeGroups(self, req, context):
        return gpb.DescribeGroupsResponse(groups=[gpb.DescribeGroupsResponse.Group(
            group_id=g, group_state="Stable", protocol_type="consumer", protocol_data="range",
            members=[gpb.DescribeGroupsResponse.Member(member_id="m", group_instance_id="i", client_id="c",
                                                       client_host="h", member_metadata=b"x")])
            for g in req.group_ids])

    async def ListGroups(self, req, context):
        return gpb.ListGroupsResponse(groups=[gpb.ListGroupsResponse.Group(
            group_id="g", group_state="Stable", group_type="classic", protocol_type="consumer")])

    async def DeleteGroups(self, req, context):
        return gpb.DeleteGroupsResponse(results=[gpb.DeleteGroupsResponse.Result(group_id=g) for g in req.group_ids])

    async def ConsumerGroupHeartbeat(self, req, context):
        assert [t.topic for t in req.owned_partitions.topic_partitions] in ([], ["orders"])
        return gpb.ConsumerGroupHeartbeatResponse(member_id="m", member_epoch=2, heartbeat_interval_ms=500,
                                                  assignment=gpb.OwnedPartitions(topic_partitions=[
                                                      gpb.TopicPartitions(topic="orders", partitions=[0, 1])]))

    async def ConsumerGroupDescribe(self, req, context):
        tps = [gpb.TopicPartitions(topic="orders", partitions=[0])]
        return gpb.ConsumerGroupDescribeResponse(groups=[gpb.ConsumerGroupDescribeResponse.Group(
            group_id=g, group_state="Stable", members=[gpb.ConsumerGroupDescribeResponse.Member(
                member_id="m", assignment=tps, target_assignment=tps)]) for g in req.group_ids])


class Broker:
    async def Metadata(self, req, context):
        return bpb.MetadataResponse(topics=[bpb.MetadataResponse.Topic(name="orders", topic_id=TOPIC_ID.bytes)])


class Services:
    groups = Groups()
    broker = Broker()


CASES = [(key, version) for key in GROUP_APIS
         for version in range(versions.ADVERTISED[key].min_version, versions.ADVERTISED[key].max_version + 1)]


@pytest.mark.parametrize("api_key,version", CASES, ids=[f"{versions.ADVERTISED[k].name}-v{v}" for k, v in CASES])
def test_every_version_goes_through_its_adapter_and_encodes(api_key, version):
    kind = codec.request_type(api_key, version)
    body = build(kind, example(kind))
    frame = codec.encode_request(body, 7, "adapter-test")
    decoded = codec.decode_request(frame[4:])
    answer = asyncio.run(ADAPTERS[api_key](Services(), decoded.body, KafkaCallContext("127.0.0.1:1", "c")))
    correlation_id, back = codec.decode_response(codec.encode_response(7, answer)[4:], codec.response_type(body))
    assert correlation_id == 7 and back == answer
