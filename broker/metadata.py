"""The Metadata answer, from the metadata image alone: the unfenced brokers,
and for each topic asked for its partitions' leaders, replicas and ISRs.

A partition without a live leader answers LEADER_NOT_AVAILABLE (leader -1);
a topic the image does not hold, UNKNOWN_TOPIC_OR_PARTITION.
"""
from __future__ import annotations

from typing import Callable, Optional

from kraftlog_api import broker_pb2 as bpb
from metadata_quorum.image import BrokerRegistration, Endpoint, MetadataImage

from .errors import Error
from .partition import NO_LEADER


def client_endpoint(broker: BrokerRegistration, listener: Optional[str] = None) -> Optional[Endpoint]:
    """The endpoint clients use: the named listener's, else the first."""
    for endpoint in broker.endpoints:
        if listener is None or endpoint.name == listener:
            return endpoint
    return None


def metadata_response(image: MetadataImage, request: bpb.MetadataRequest, *, cluster_id: str,
                      controller_id: int = -1, listener: Optional[str] = None,
                      may_describe: Callable[[str], bool] = lambda name: True) -> bpb.MetadataResponse:
    """`may_describe(topic)`: whether the caller may see the topic. As Kafka:
    asked for every topic, the caller gets only those it may describe; a topic
    asked for by name and not allowed answers TOPIC_AUTHORIZATION_FAILED,
    whether or not it exists."""
    response = bpb.MetadataResponse(cluster_id=cluster_id, controller_id=controller_id)
    live = set()
    for broker_id in sorted(image.brokers):
        broker = image.brokers[broker_id]
        endpoint = client_endpoint(broker, listener)
        if broker.fenced or endpoint is None:
            continue
        live.add(broker_id)
        out = response.brokers.add(node_id=broker_id, host=endpoint.host, port=endpoint.port)
        if broker.rack is not None:
            out.rack = broker.rack
    every_topic = request.all_topics and not request.topics
    names = sorted(image.topic_ids) if every_topic else list(request.topics)
    for name in names:
        if not may_describe(name):
            if not every_topic:
                response.topics.add(name=name, error_code=Error.TOPIC_AUTHORIZATION_FAILED)
            continue
        topic = image.topic(name)
        if topic is None:
            response.topics.add(name=name, error_code=Error.UNKNOWN_TOPIC_OR_PARTITION)
            continue
        out_topic = response.topics.add(name=name, topic_id=topic.topic_id)
        for index in sorted(topic.partitions):
            state = topic.partitions[index]
            leader = state.leader if state.leader in live else NO_LEADER
            out_topic.partitions.add(
                error_code=Error.NONE if leader != NO_LEADER else Error.LEADER_NOT_AVAILABLE,
                partition_index=index, leader_id=leader, leader_epoch=state.leader_epoch,
                replica_nodes=state.replicas, isr_nodes=state.isr,
                offline_replicas=[b for b in state.replicas if b not in live],
                eligible_leader_replicas=state.elr, last_known_elr=state.last_known_elr)
    return response
